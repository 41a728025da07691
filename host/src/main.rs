fn main() -> std::process::ExitCode {
    clat_host::cli::main()
}
