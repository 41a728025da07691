//! The `clat` binary: everything is in the library's `cli` module.

fn main() -> std::process::ExitCode {
    clat_host::cli::main()
}
