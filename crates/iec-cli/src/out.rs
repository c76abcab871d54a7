//! Writing to stdout as a Unix filter does. `println!` panics when the reader has gone away
//! (`iec launches | head -1`); here a write that fails with EPIPE ends the process by SIGPIPE,
//! silently, like `cat` or `grep`. Rust ignores SIGPIPE for the whole process so that the
//! witnesses' pipes report a dead bash as an error; only a failed write to stdout restores the
//! default disposition, and only to raise it. Any other write error (a full disk) is reported on
//! stderr and ends with exit 2, the runtime-error status.

use std::io::{ErrorKind, Write};

pub fn write(args: std::fmt::Arguments) {
    let e = match std::io::stdout().lock().write_fmt(args) {
        Ok(()) => return,
        Err(e) => e,
    };
    if e.kind() == ErrorKind::BrokenPipe {
        // SAFETY: signal(2) and raise(3) with constant arguments; nothing else runs meanwhile
        // that depends on SIGPIPE being ignored, as the process ends here.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
    }
    eprintln!("iec: cannot write to stdout: {e}");
    std::process::exit(2);
}

/// `print!` for stdout, ending the process as above when it cannot be written.
macro_rules! out {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*)) };
}

/// `println!` for stdout, ending the process as above when it cannot be written.
macro_rules! outln {
    () => { $crate::out::write(format_args!("\n")) };
    ($($t:tt)*) => { $crate::out::write(format_args!("{}\n", format_args!($($t)*))) };
}

pub(crate) use {out, outln};
