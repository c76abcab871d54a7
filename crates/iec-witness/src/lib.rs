/*!
Real witnesses: the receivers that run on this machine are run, and stopped before they act.

* [`BashPool`] keeps warm bash processes that parse a text as the body of a function that is
  never called and print bash's own canonical form (`declare -f`), or expand harness-rendered
  words the way the outer shell hands them to `eval`, under a DEBUG trap that skips every other
  command. Each server runs with an empty environment and `PATH`, effectful builtins disabled,
  `set -r`, a private empty working directory and, where the system allows, no network.
* [`gate::may_break_out`] decides when a text could close the wrapping function early; such texts
  are first checked by a separate `bash -n` so that nothing after a break-out can ever run.
* [`spawn`] holds the one-process-per-question witnesses: `bash -n`, `dash -n`, and the
  `BASH_ENV` witness that records `$BASH_EXECUTION_STRING` in a real `bash -c` and exits before
  the text runs. They are the naive baseline of the benchmarks and the judge in tests.
* [`argvprobe`] is the argv probe used where a call is really executed.
*/
#![deny(missing_docs)]

pub mod argvprobe;
pub mod gate;
pub mod jail;
mod pool;
mod server;
pub mod spawn;
pub mod tmux;

pub use pool::{global, BashPool, CpuPin};
pub use server::{bash_path, isolated_network, request_timeout, BashServer, Expansion, Parse};

/// Errors of the witnesses themselves (not of the text being checked).
#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    /// bash, dash or a helper program could not be started.
    #[error("cannot start {program}: {source}")]
    Start {
        /// Program name.
        program: String,
        /// OS error.
        source: std::io::Error,
    },
    /// The witness process failed mid-request.
    #[error("witness I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// The witness answered something this crate does not understand.
    #[error("witness protocol error: {0}")]
    Protocol(String),
    /// The witness could not answer within its limits (a reply over [`BashServer::MAX_REPLY`],
    /// or no reply within [`request_timeout`]): a property of the text, such as a brace
    /// range of millions of words, not a fault. A check reports it as `unknown`.
    #[error("witness limit: {0}")]
    Limit(String),
    /// The witness will not run this at all (an argv with which bash would run something before
    /// the witness could stop it); nothing was started. A check reports it as `unknown`.
    #[error("witness refused: {0}")]
    Refused(String),
    /// The text contains a NUL byte, which no shell can receive.
    #[error("text contains a NUL byte at offset {0}; a shell cannot receive it")]
    Nul(usize),
}
