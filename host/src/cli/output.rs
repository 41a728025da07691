//! What the command line prints on stdout, written through `outln!` / `out!`
//! instead of std's `println!` / `print!`, which panic when stdout is closed.
//! A reader that stops early (`clat mcp list | head -1`) ends the command
//! quietly: what it started is killed, as the second signal does, and the
//! process exits with 141 (128 + SIGPIPE), the status a shell reports for a
//! program killed by the closed pipe.

use std::io::Write;

/// The exit status of a command whose stdout was closed: 128 + SIGPIPE.
pub const CLOSED_STDOUT_STATUS: i32 = 128 + libc::SIGPIPE;

/// Print `$fmt` and a newline on stdout; a closed stdout ends the command.
macro_rules! outln {
    () => { $crate::cli::output::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::output::write(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Print `$fmt` on stdout; a closed stdout ends the command.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::output::write(format_args!($($arg)*)) };
}

/// Write `text` to stdout, ending the command when stdout is gone.
pub fn write(text: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(text) {
        closed(&e);
    }
}

/// The result of a write to stdout made otherwise (`write_all` of bytes): a failure ends the command.
pub fn checked(result: std::io::Result<()>) {
    if let Err(e) = result {
        closed(&e);
    }
}

/// Stdout cannot be written: nobody reads what follows, so the command ends
/// here. A pipe closed by its reader is the normal end of `| head`; any other
/// failure is said on stderr.
fn closed(error: &std::io::Error) -> ! {
    if error.kind() != std::io::ErrorKind::BrokenPipe {
        let _ = writeln!(std::io::stderr(), "clat: error: cannot write to stdout: {error}");
    }
    super::shutdown::kill_descendants();
    std::process::exit(CLOSED_STDOUT_STATUS)
}
