//! The `clat` binary: everything is in the library's `cli` module. Its
//! allocator is mimalloc: under `clat serve` with calls in flight, glibc's
//! malloc took a sixth of the server's CPU (docs/benchmarks.md).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    clat_host::cli::main()
}
