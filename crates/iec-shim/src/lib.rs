//! `iec-bash`, the shell shim: a program a harness launches instead of bash (Claude Code takes
//! `CLAUDE_CODE_SHELL` when the path contains `bash` and is executable). The iec hook records
//! the intended command in the intent store ([`intent`]); the shim finds the wrapper the harness
//! built for that command ([`wrapper`]), keeps the harness's parts (snapshot `source`, extglob
//! line, `< /dev/null`, `pwd -P >| cwd file`) and hands real bash the command itself through a
//! file descriptor instead of the quoted text the harness changed.
//!
//! Decisions:
//! * not a `-c` wrapper, no store, or no pending intent for this harness process: real bash
//!   with the argv unchanged (argv0 included), byte for byte — [`Action::PassThrough`];
//! * an intent whose rendering is the wrapper: real bash with the rebuilt wrapper, the intent
//!   consumed — [`Action::Deliver`];
//! * intents pending but none renders to this wrapper: nothing runs, a message on stderr
//!   naming the hop, exit [`EXIT_REFUSED`] — [`Action::Refuse`].
//!
//! Real bash is `$IEC_REAL_BASH` (an absolute path), else the first of `/bin/bash`,
//! `/usr/bin/bash`, `/usr/local/bin/bash`, `/opt/homebrew/bin/bash` that is not this program;
//! never a `PATH` lookup, which could find the shim itself.

pub mod intent;
pub mod wrapper;

use std::ffi::{OsStr, OsString};
use std::io::{Seek, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// Exit status of a refused call ("found but not executable" in POSIX shells: nothing ran).
pub const EXIT_REFUSED: i32 = 126;
/// Exit status when no real bash can be found or started.
pub const EXIT_NO_BASH: i32 = 127;
/// Names the real bash.
pub const REAL_BASH_ENV: &str = "IEC_REAL_BASH";
/// A pending intent this old that matches no wrapper is dropped by the refusal that saw it: a
/// call that never reached the shell (denied at the permission prompt) must not make every later
/// unhooked shell call (and a repeat) refuse until it expires. Younger ones may belong to a
/// call being spawned right now and are kept.
pub const STALE_AFTER_MS: u64 = 10_000;

/// The lowest descriptor the command is passed on (above those scripts use by hand, 3-9, and
/// bash's own saved descriptors start at 10 and look for free ones).
pub const MIN_FD: i32 = 20;

const CANDIDATES: &[&str] = &[
    "/bin/bash",
    "/usr/bin/bash",
    "/usr/local/bin/bash",
    "/opt/homebrew/bin/bash",
];

/// What the shim does with one invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    PassThrough,
    Deliver {
        /// Index in argv of the `-c` string.
        index: usize,
        /// The recorded (intended) command.
        command: String,
        m: wrapper::Match,
        /// The intent file that was claimed.
        intent: PathBuf,
    },
    Refuse {
        message: String,
    },
}

/// Where the `-c` string is in `args` (argv0 first), if bash would run one: option clusters
/// up to the first operand, `-c` among them. Anything unusual gives `None` (pass-through).
pub fn command_index(args: &[OsString]) -> Option<usize> {
    let mut c_mode = false;
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_bytes();
        if a == b"--" || a == b"-" {
            i += 1;
            break;
        }
        if a.starts_with(b"--") {
            // Long options; these two take an argument.
            if a == b"--rcfile" || a == b"--init-file" {
                i += 1;
            }
            i += 1;
            continue;
        }
        if (a.starts_with(b"-") || a.starts_with(b"+")) && a.len() > 1 {
            let flags = &a[1..];
            if a[0] == b'-' && flags.contains(&b'c') {
                c_mode = true;
            }
            if flags.contains(&b'o') || flags.contains(&b'O') {
                i += 1;
            }
            i += 1;
            continue;
        }
        break;
    }
    (c_mode && i < args.len()).then_some(i)
}

/// Decides what to do with `args` given the intent store at `store_dir`, for a shim whose
/// parent is `parent`. Claims the matching intent.
pub fn decide(args: &[OsString], store_dir: &Path, parent: u32) -> Action {
    let Some(index) = command_index(args) else {
        return Action::PassThrough;
    };
    let Some(w) = args[index].to_str() else {
        return Action::PassThrough;
    };
    if !wrapper::looks_like_wrapper(w) {
        return Action::PassThrough;
    }
    let store = match intent::Store::open_existing(store_dir) {
        Ok(Some(s)) => s,
        Ok(None) => return Action::PassThrough,
        Err(e) => {
            // Not ours or not private: its contents cannot be trusted to be complete; the hook
            // refuses to record there as well (and repairs instead).
            eprintln!("iec-bash: not using the intent store: {e}");
            return Action::PassThrough;
        }
    };
    let pending = store.pending(parent);
    if pending.is_empty() {
        return Action::PassThrough;
    }
    for p in &pending {
        if let Some(m) = wrapper::match_wrapper(w, &p.intent.command) {
            if store.claim(p) {
                return Action::Deliver {
                    index,
                    command: p.intent.command.clone(),
                    m,
                    intent: p.path.clone(),
                };
            }
        }
    }
    let now = intent::now_ms();
    let mut dropped = 0;
    for p in &pending {
        if now.saturating_sub(p.intent.created_ms) > STALE_AFTER_MS && store.claim(p) {
            dropped += 1;
        }
    }
    Action::Refuse {
        message: format!(
            "iec-bash: refused at hop `wrapper`: the text this harness built for bash does not carry the command \
             the iec hook recorded ({} pending intent(s) in {}), so the command would not arrive as it was written; \
             nothing was run. Something changed the call between the hook and the shell (a later hook's \
             updatedInput, CLAUDE_CODE_SHELL_PREFIX, or a wrapper form this shim does not know). Issue the \
             call again; if this repeats, run without the shim (unset CLAUDE_CODE_SHELL).{}",
            pending.len(),
            store.dir().display(),
            if dropped > 0 {
                format!(" {dropped} of the intents were older than {} s and are dropped.", STALE_AFTER_MS / 1000)
            } else {
                String::new()
            }
        ),
    }
}

/// The real bash (see the crate docs). An environment with a bad value (see
/// `iec_core::config`) is an error here, before anything runs.
pub fn real_bash() -> Result<PathBuf, String> {
    let config = iec_core::config::Config::from_env().map_err(|e| e.to_string())?;
    let me = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok());
    let is_me = |p: &Path| me.is_some() && std::fs::canonicalize(p).ok() == me;
    if let Some(p) = config.real_bash {
        if !p.is_absolute() {
            return Err(format!("{REAL_BASH_ENV}={} is not an absolute path", p.display()));
        }
        if is_me(&p) {
            return Err(format!("{REAL_BASH_ENV}={} is this shim", p.display()));
        }
        return Ok(p);
    }
    CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file() && !is_me(p))
        .ok_or_else(|| format!("no bash found at {} (set {REAL_BASH_ENV})", CANDIDATES.join(", ")))
}

/// A descriptor (≥ [`MIN_FD`], inherited across exec) holding `command`, on an unlinked file
/// in `dir`: nothing stays on disk and no other process can open it by name.
pub fn command_fd(dir: &Path, command: &str) -> std::io::Result<OwnedFd> {
    let path = dir.join(format!(".cmd-{}-{}", std::process::id(), intent::key(command)));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    let _ = std::fs::remove_file(&path);
    f.write_all(command.as_bytes())?;
    f.rewind()?;
    // A duplicate at MIN_FD or above, then without FD_CLOEXEC, so bash inherits it.
    let fd = rustix::io::fcntl_dupfd_cloexec(&f, MIN_FD)?;
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::empty())?;
    Ok(fd)
}

fn exec_bash(bash: &Path, argv0: &OsStr, rest: &[OsString]) -> i32 {
    let e = std::process::Command::new(bash).arg0(argv0).args(rest).exec();
    eprintln!("iec-bash: cannot run {}: {e}", bash.display());
    EXIT_NO_BASH
}

/// The shim's `main`: returns only when it cannot exec bash or refuses.
pub fn run(args: Vec<OsString>) -> i32 {
    let bash = match real_bash() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("iec-bash: {e}");
            return EXIT_NO_BASH;
        }
    };
    let argv0 = args.first().cloned().unwrap_or_else(|| "bash".into());
    let rest = args.get(1..).unwrap_or_default().to_vec();
    let parent = std::os::unix::process::parent_id();
    let dir = intent::default_dir();
    match decide(&args, &dir, parent) {
        Action::PassThrough => exec_bash(&bash, &argv0, &rest),
        Action::Refuse { message } => {
            eprintln!("{message}");
            EXIT_REFUSED
        }
        Action::Deliver {
            index, command, m, ..
        } => {
            let fd = match command_fd(&dir, &command) {
                Ok(fd) => fd,
                Err(e) => {
                    eprintln!(
                        "iec-bash: refused at hop `wrapper`: cannot hand the recorded command to bash ({e}); nothing was run"
                    );
                    return EXIT_REFUSED;
                }
            };
            let mut rest = rest;
            rest[index - 1] = wrapper::rebuild(&m, &command, fd.as_raw_fd()).into();
            let code = exec_bash(&bash, &argv0, &rest);
            drop(fd);
            code
        }
    }
}
