//! The terminal-typing witness: a real tmux server (private socket, `-f /dev/null`) with one
//! pane running a real interactive bash (`--noprofile`, our own rc file, private `HOME`, empty
//! `PATH`). The harness's `send-keys` argv is run by the real tmux client, the keys reach the
//! real readline, history expansion and parser, and the witness records what the shell read,
//! from its own history entry. Nothing typed ever runs, by four layers:
//!
//! 1. **The kernel.** tmux does not start bash itself: the pane runs the jail helper
//!    ([`jail_helper`], `iec-jail __jail …` or `iec __jail …`), which opens the witness's output
//!    channel (fd 9, append-only) and its rc file (fd 8), then becomes bash through
//!    [`crate::jail::exec_jailed`] with [`Kind::Expand`](crate::jail::Kind::Expand): whatever the
//!    shell or a process it forks does, starting a program, opening a file for writing, sockets,
//!    signals to others, `setsid`/`setpgid` fail, the process count is limited, and it has its
//!    own network and PID namespaces. Without a helper the witness refuses to start; it never
//!    runs bash unjailed.
//! 2. **Readline.** Every readline function but self-insert and accept-line (Enter) is taken from
//!    its keys, editing functions included: the list is made at start in the witness bash
//!    itself from `bind -l` and `bind -p` (see `RC`), and each key sequence bound to one of them
//!    is rebound to a recorder, so the witness knows that the harness's shell would have acted
//!    on the line while it was typed, and the line bash reads is the typed text itself.
//! 3. **The wrapper.** The witness types `__iec_r() {` first and `} # END<nonce>` last, so the
//!    shell reads the harness's lines as the body of a function that is never called. When the
//!    shell ends that definition early (a syntax error, an aborted line), the prompt hook sees
//!    the missing end line and swallows every further line at the readline level (`bind -x` on
//!    Enter) until the end line arrives. Callers pass only texts that parse on their own when
//!    they could close the function early (see [`crate::gate`]).
//! 4. **The DEBUG trap** (extdebug, functrace) skips every command that is not the witness's own
//!    (the trap returns non-zero) and counts it; a witness whose trap tripped, whose keys were
//!    refused, or whose shell ended a definition early is not used again.
//!
//! Keys are only sent while readline reads the line (the terminal in raw mode): before the
//! harness's keys and before the end line, the witness sends a probe key bound with `bind -x`
//! and waits for its mark. Keys that arrive while bash is between two readline calls go through
//! the pty's canonical line discipline instead (Linux cuts such a line at 4095 bytes, and the
//! erase, kill and word-erase characters edit it), which would make the reading depend on timing.
//!
//! Lifetime: dropping a [`TmuxWitness`] kills its tmux server and the pane's process group and
//! waits for both. The helper also leaves a watchdog (not jailed, it never sees the text) in the
//! pane's process group that kills the server and the group as soon as the process that started
//! the witness ends, however it ends (a pool in a static is never dropped). The shell itself
//! logs out after 20 idle seconds (`TMOUT`, read-only).

use crate::WitnessError;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The rc file of the witness bash. `NONCE`, `HISTEXPAND` are replaced before it is written.
/// It runs in the jail: it writes only to fd 9 (records of five NUL-terminated fields: kind and
/// four values), never opens a file for writing (`>/dev/null` would fail), never signals.
const RC: &str = r#"exec 8<&- 2>&1
set +o posix
shopt -s extdebug lithist cmdhist
set -o functrace
HISTCONTROL= HISTIGNORE= HISTFILE= HISTSIZE=100000 HISTTIMEFORMAT=
PATH=
TMOUT=20
PS1='$ '
PS2='$(__iec_ps2_NONCE)> '
HISTEXPAND
__iec_trip_NONCE=0
__iec_hist_NONCE() {
  local h
  h=$(builtin history 1)
  [[ $h =~ ^\ *[0-9]+\*?\ \ (.*)$ ]] && h=${BASH_REMATCH[1]}
  __iec_h=$h
}
__iec_rec_NONCE() {
  builtin local __iec_h= st=complete d= f=
  __iec_hist_NONCE
  builtin history -c
  if [[ -z $__iec_h ]]; then
    builtin printf 'status\0ready\0\0\0%s\0' "$__iec_trip_NONCE" >&9
    __iec_trip_NONCE=0
    return
  fi
  # The definition read, then (after the last `\1`) the functions there would be without it:
  # in one subshell.
  d=$(builtin declare -f __iec_r; builtin unset -f __iec_r; builtin printf '\1'; builtin declare -F)
  f=${d##*$'\1'}
  d=${d%$'\1'*}
  if [[ $__iec_h != *$'\n'"} # END_NONCE" || -z $d ]]; then
    st=early
    if [[ $__iec_h != *"} # END_NONCE"* ]]; then
      st=drain
      builtin bind -x '"\C-m": __iec_drain_NONCE'
      builtin bind -x '"\C-j": __iec_drain_NONCE'
    fi
  fi
  builtin unset -f __iec_r
  # A text that ended the definition and defined functions of its own (definitions are not
  # commands: the DEBUG trap does not see them) leaves a shell that is not used again (`!`).
  [[ $f == "$__iec_fns_NONCE" ]] || st+=!
  builtin printf 'status\0%s\0%s\0%s\0%s\0' "$st" "$__iec_h" "$d" "$__iec_trip_NONCE" >&9
  __iec_trip_NONCE=0
}
__iec_drain_NONCE() {
  if [[ $READLINE_LINE == "} # END_NONCE" ]]; then
    builtin bind '"\C-m": accept-line'
    builtin bind '"\C-j": accept-line'
    builtin printf 'status\0drained\0\0\0%s\0' "$__iec_trip_NONCE" >&9
    __iec_trip_NONCE=0
  fi
  READLINE_LINE=
  READLINE_POINT=0
}
__iec_ps2_NONCE() {
  builtin local __iec_h=
  __iec_hist_NONCE
  if [[ $__iec_h == *$'\n'"} # END_NONCE" ]]; then
    builtin printf 'status\0pending\0%s\0\0%s\0' "$__iec_h" "$__iec_trip_NONCE" >&9
  fi
}
__iec_probe_NONCE() {
  builtin printf 'probe\0\0\0\0\0' >&9
}
# A refused key is recorded and the line it was pressed in is dropped, and so is every line
# after it (Enter swallows them at the readline level) until the end line: the shell never reads
# a line that a refused key would have changed (ESC-\ deleting a backslash turned an escaped
# quote into a real one and let a quoted `}` end the wrapper).
__iec_key_NONCE() {
  builtin printf 'key\0%s\0\0\0\0' "$1" >&9
  READLINE_LINE=
  READLINE_POINT=0
  builtin bind -x '"\C-m": __iec_refused_NONCE'
  builtin bind -x '"\C-j": __iec_refused_NONCE'
}
__iec_refused_NONCE() {
  if [[ $READLINE_LINE == "} # END_NONCE" ]]; then
    builtin printf 'status\0refused\0\0\0%s\0' "$__iec_trip_NONCE" >&9
  fi
  READLINE_LINE=
  READLINE_POINT=0
}
# Every readline function but the two that type a character or end a line (self-insert and
# accept-line), chosen by name from this readline's own `bind -l`: those that expand the line or
# a word (shell-expand-line performs command substitution and arithmetic while editing),
# complete, run or accept the line otherwise (edit-and-execute-command, operate-and-get-next),
# take words from history, re-read the init file or switch to vi mode, and every editing
# function too (a deleted or moved character makes the line bash reads other than the typed
# text: `x`, DEL, `}` reads as `}`, which could end the witness's wrapper where the typed text
# could not). A text that presses any of them is not the text the harness's shell runs.
# Each key sequence bound to one of them in the emacs keymap is rebound to a recorder that
# leaves the line alone; then the keymap is listed again and any that is still bound (or any
# `bind -x` command not the witness's) ends the shell with an error record.
# Readline binds the terminal's erase, kill, word-erase and literal-next characters to its
# editing functions again each time it prepares the terminal unless told not to (the helper
# also disables them in the terminal).
builtin bind 'set bind-tty-special-chars off'
declare -A __iec_deny=()
for __iec_f in $(builtin bind -l); do
  case $__iec_f in
    self-insert|accept-line) continue ;;
  esac
  __iec_deny[$__iec_f]=1
done
__iec_bad=
# Only the emacs keymap (with its ESC and C-x prefixes) is scrubbed: the vi keymaps are reached
# only through vi-editing-mode (refused here) or `set -o vi` (a command, which the DEBUG trap
# skips), and scrubbing them too would triple the cost of this loop, most of a witness's start.
# (Lines are split on newlines without globbing and names cut by parameter expansion, in one
# subshell: a regular expression or a subshell per line costs more than tmux's own start.)
__iec_lines() {
  local IFS=$'\n'
  set -f
  __iec_lines=($(for __iec_km in emacs-standard; do
    builtin printf '%s\n' "keymap $__iec_km"
    builtin bind -m "$__iec_km" -p
    builtin bind -m "$__iec_km" -X
  done))
  set +f
}
for __iec_pass in bind check; do
  __iec_lines
  for __iec_l in "${__iec_lines[@]}"; do
    if [[ $__iec_l == "keymap "* ]]; then
      __iec_km=${__iec_l#keymap }
      continue
    fi
    [[ $__iec_l == \"* ]] || continue
    if [[ $__iec_l == *\":\ \"* ]]; then
      # A `bind -x` command: none but the witness's own may stay.
      [[ $__iec_l == *\":\ \"__iec_*_NONCE\ * && $__iec_pass == check ]] && continue
      __iec_s=${__iec_l%%\":\ \"*}
      __iec_s=${__iec_s#\"}
      if [[ $__iec_pass == bind ]]; then
        builtin bind -m "$__iec_km" -r "$__iec_s"
      else
        __iec_bad+=" $__iec_km:$__iec_s:bind-x"
      fi
      continue
    fi
    __iec_f=${__iec_l##*\": }
    [[ -n ${__iec_deny[$__iec_f]-} ]] || continue
    __iec_s=${__iec_l%\": *}
    __iec_s=${__iec_s#\"}
    if [[ $__iec_pass == bind ]]; then
      # `\000` last is the prefix's "any other key" slot, which a binding of the prefix sets.
      builtin bind -m "$__iec_km" -x "\"${__iec_s%\\000}\": __iec_key_NONCE $__iec_f"
    else
      __iec_bad+=" $__iec_km:$__iec_s:$__iec_f"
    fi
  done
done
if [[ -n $__iec_bad ]]; then
  builtin printf 'error\0readline functions still bound:%s\0\0\0\0' "$__iec_bad" >&9
  builtin exit 1
fi
builtin bind -x '"\e[9999~": __iec_probe_NONCE'
# The terminal's interrupt, quit and suspend characters (the helper disabled their signals):
# the harness's shell would abort the command being read or stop.
builtin bind -x '"\C-c": __iec_key_NONCE tty-interrupt'
builtin bind -x '"\C-\\": __iec_key_NONCE tty-quit'
builtin bind -x '"\C-z": __iec_key_NONCE tty-suspend'
builtin unset __iec_deny __iec_bad __iec_pass __iec_km __iec_lines __iec_l __iec_f __iec_s
builtin unset -f __iec_lines
PROMPT_COMMAND=__iec_rec_NONCE
builtin readonly -f __iec_hist_NONCE __iec_rec_NONCE __iec_drain_NONCE __iec_ps2_NONCE __iec_probe_NONCE __iec_key_NONCE
__iec_fns_NONCE=$(builtin declare -F)
builtin readonly TMOUT PS1 PS2 PROMPT_COMMAND PATH HISTCONTROL HISTIGNORE HISTFILE HISTSIZE HISTTIMEFORMAT __iec_fns_NONCE
trap '[[ ${FUNCNAME[0]-} == __iec_*_NONCE || $BASH_COMMAND == __iec_rec_NONCE || $BASH_COMMAND == __iec_probe_NONCE || $BASH_COMMAND == __iec_drain_NONCE || $BASH_COMMAND == __iec_refused_NONCE || $BASH_COMMAND == __iec_ps2_NONCE || ( $BASH_COMMAND == "__iec_key_NONCE "* && $BASH_COMMAND != *[!a-z0-9_\ -]* ) ]] || (( ++__iec_trip_NONCE, 0 ))' DEBUG
"#;

/// The probe key (`ESC [ 9 9 9 9 ~`, no terminal sends it), as `send-keys -H` hex bytes.
const PROBE_HEX: [&str; 7] = ["1b", "5b", "39", "39", "39", "39", "7e"];

/// `send-keys -t w -H` with the probe key's bytes.
fn probe_keys() -> impl Iterator<Item = &'static str> {
    ["send-keys", "-t", "w", "-H"].into_iter().chain(PROBE_HEX)
}

/// How the harness types: the parts of a launch's `[terminal]` table the witness needs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Typist {
    /// `send-keys -l` (literal) instead of key-name lookup.
    pub literal: bool,
    /// Text sent as its own argument after the command (empty: none).
    pub suffix: String,
    /// `Enter` as the last argument of the same call (else a second `send-keys Enter`).
    pub enter_same_call: bool,
    /// History expansion on in the harness's interactive shell. The witness itself always reads
    /// with it off (see [`crate::spawn::history_expand`] for the expansion); the field keeps
    /// witnesses of the two kinds apart.
    pub history_expansion: bool,
    /// Pane width.
    pub width: u32,
    /// Pane height.
    pub height: u32,
}

impl Typist {
    /// The `send-keys` calls the harness makes for `text` (each an argv after `tmux`; the
    /// target is the pane named `TARGET`).
    pub fn send_keys_calls(&self, text: &str) -> Vec<Vec<String>> {
        let mut first: Vec<String> = vec!["send-keys".into(), "-t".into(), "w".into()];
        if self.literal {
            first.push("-l".into());
        }
        first.push(text.into());
        if !self.suffix.is_empty() {
            first.push(self.suffix.clone());
        }
        if self.enter_same_call {
            first.push("Enter".into());
            vec![first]
        } else {
            vec![
                first,
                vec!["send-keys".into(), "-t".into(), "w".into(), "Enter".into()],
            ]
        }
    }
}

/// How the interactive shell ended reading the typed lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It read every line into one command and waits for the next.
    Complete,
    /// It ended the command before the last typed line (a syntax error, an aborted or rejected
    /// line); the lines after it would be read as new commands.
    Early,
    /// It still waits for more input (a continuation prompt) after every typed line.
    Pending,
    /// The DEBUG trap skipped a command that would have run (the typed text ended the
    /// witness's wrapper).
    Stopped,
    /// The shell died (it read end of file, or the text ended it).
    Died,
    /// No answer within the deadline.
    Timeout,
}

/// What one typing delivered.
#[derive(Debug, Clone)]
pub struct Typed {
    /// The `send-keys` calls as run, with the tmux client's exit status and stderr.
    pub calls: Vec<(Vec<String>, i32, String)>,
    /// The text the interactive shell read (its history entry, our lines removed).
    pub read: String,
    /// How it ended.
    pub ending: Ending,
    /// bash's own printing of what it read (`declare -f` body, as [`crate::Parse::Ok`] has it),
    /// when it read every line into one command.
    pub canonical: Option<String>,
    /// The pane's visible lines after typing (the shell's diagnostics), trailing blanks removed.
    pub screen: String,
    /// The readline functions the typed keys invoked that act on the line while it is typed
    /// (expansion, completion, running or accepting it; see the module documentation), in
    /// order. The witness does not let them act; the harness's shell would.
    pub refused_keys: Vec<String>,
}

/// One record of the witness bash: kind and four values.
#[derive(Debug, Clone, Default)]
struct Record {
    kind: String,
    a: String,
    b: String,
    c: String,
    d: String,
}

/// The witness bash's output channel (fd 9 of the shell, a file it appends to), read as it
/// grows.
struct Log {
    file: std::fs::File,
    buf: Vec<u8>,
}

impl Log {
    /// Reads what was appended and returns the complete records in it.
    fn records(&mut self) -> Vec<Record> {
        let mut chunk = [0u8; 65536];
        loop {
            match std::io::Read::read(&mut self.file, &mut chunk) {
                Ok(0) | Err(_) => break,
                // The witness writes a few kilobytes per text; more is a text writing to the
                // channel, read no further (the records it breaks are refused).
                Ok(_) if self.buf.len() > MAX_LOG => break,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
        let mut out = vec![];
        loop {
            let mut ends = self
                .buf
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == 0)
                .map(|(i, _)| i);
            let Some(fifth) = ends.nth(4) else { break };
            let rec: Vec<u8> = self.buf.drain(..=fifth).collect();
            let mut f = rec
                .split(|&b| b == 0)
                .map(|x| String::from_utf8_lossy(x).into_owned());
            out.push(Record {
                kind: f.next().unwrap_or_default(),
                a: f.next().unwrap_or_default(),
                b: f.next().unwrap_or_default(),
                c: f.next().unwrap_or_default(),
                d: f.next().unwrap_or_default(),
            });
        }
        out
    }
}

/// Most bytes of the witness's channel read for one text.
const MAX_LOG: usize = 4 << 20;

/// One tmux server with one interactive bash.
pub struct TmuxWitness {
    dir: tempfile::TempDir,
    tmux: PathBuf,
    nonce: String,
    typist: Typist,
    log: Log,
    /// Keys refused since the last typing started.
    keys: Vec<String>,
    /// Set once a text has been typed: records after that may come from it.
    typed_once: bool,
    /// The last status record seen.
    status: Option<Record>,
    probe: bool,
    /// The end line arrived after the shell ended the definition early (Enter is its own again).
    drained: bool,
    /// pidfds (or plain pids, `-1` fds) of the tmux server and of the pane's first process.
    server: Proc,
    pane: Proc,
    /// False once the witness saw anything that must not carry over to another text.
    reusable: bool,
}

/// A process this witness started (through tmux), held by a pidfd where the kernel has them.
struct Proc {
    pid: i32,
    fd: Option<std::os::fd::OwnedFd>,
}

impl Proc {
    fn new(pid: i32) -> Proc {
        let fd = rustix::process::Pid::from_raw(pid)
            .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
        Proc { pid, fd }
    }

    /// The pidfd's number, or -1 without one.
    fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.fd.as_ref().map_or(-1, |f| f.as_raw_fd())
    }

    fn alive(&self) -> bool {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        if let Some(fd) = &self.fd {
            // Readable once the process has ended.
            let now = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            return matches!(poll(&mut [PollFd::new(fd, PollFlags::IN)], Some(&now)), Ok(0));
        }
        // Signal 0 only checks that the process exists.
        self.pid > 1
            && self
                .pid_t()
                .is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
    }

    fn pid_t(&self) -> Option<rustix::process::Pid> {
        rustix::process::Pid::from_raw(self.pid)
    }

    fn kill(&self) {
        use rustix::process::Signal;
        if let Some(fd) = &self.fd {
            let _ = rustix::process::pidfd_send_signal(fd, Signal::KILL);
        } else if self.alive() {
            // A process this witness started.
            if let Some(p) = self.pid_t() {
                let _ = rustix::process::kill_process(p, Signal::KILL);
            }
        }
    }

    /// Waits up to `limit` for the process to end.
    fn wait(&self, limit: Duration) -> bool {
        let t0 = Instant::now();
        while self.alive() {
            if t0.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }
}

/// The tmux program: `IEC_TMUX` or `tmux` from the usual places.
pub fn tmux_path() -> PathBuf {
    if let Some(p) = iec_core::config::current().tmux {
        return p;
    }
    for p in ["/usr/bin/tmux", "/bin/tmux", "/usr/local/bin/tmux"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    PathBuf::from("tmux")
}

/// True when a tmux client can be started here.
pub fn available() -> bool {
    Command::new(tmux_path())
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The first argument of the jail helper: `iec-jail __jail …` and `iec __jail …` both run
/// [`jail_helper_main`].
pub const HELPER_ARG: &str = "__jail";

/// Names of the programs that can act as the jail helper, in order of preference.
const HELPER_NAMES: [&str; 2] = ["iec-jail", "iec"];

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The jail helper the pane runs: `IEC_JAIL_HELPER`, else `iec-jail` or `iec` next to this
/// program or in its parent directory (test programs live in `target/<profile>/deps`), else on
/// `PATH`. `None`: the terminal witness cannot run (it never runs bash unjailed).
pub fn jail_helper() -> Option<PathBuf> {
    if let Some(p) = iec_core::config::current().jail_helper {
        return executable(&p).then_some(p);
    }
    let mut dirs = vec![];
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        if let Some(up) = dir.parent() {
            dirs.push(dir.clone());
            dirs.push(up.to_path_buf());
        } else {
            dirs.push(dir);
        }
    }
    for name in HELPER_NAMES {
        for d in &dirs {
            let p = d.join(name);
            if executable(&p) {
                return Some(p);
            }
        }
    }
    let path = std::env::var_os("PATH")?;
    for name in HELPER_NAMES {
        for d in std::env::split_paths(&path) {
            let p = d.join(name);
            if d.is_absolute() && executable(&p) {
                return Some(p);
            }
        }
    }
    None
}

/// The jail helper's entry point (`args` are its arguments after the program name):
/// `__jail OWNER-PID LOG RC PROGRAM [ARG…]`. It must be called first thing in `main`, while the
/// process has one thread. It opens `LOG` for appending as fd 9 and `RC` for reading as fd 8,
/// ignores the terminal's job-control signals (C-c, C-\ and C-z typed in the text reach the
/// pane's whole process group, the jail's waiting process included), leaves a watchdog that
/// ends the tmux server (its parent) and the pane's process group when `OWNER-PID` ends, and
/// runs `PROGRAM` in the jail with this process's environment. Returns an exit status only on
/// failure.
pub fn jail_helper_main(args: &[OsString]) -> i32 {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        let msg = format!("iec-jail: {what}: {e}");
        eprintln!("{msg}");
        let mut rec = b"error\0".to_vec();
        rec.extend_from_slice(msg.as_bytes());
        rec.extend_from_slice(b"\0\0\0\0");
        // SAFETY: a write of our own buffer to fd 9, when it is open.
        unsafe { libc::write(9, rec.as_ptr().cast(), rec.len()) };
        125
    };
    if args.len() < 5 || args[0] != HELPER_ARG {
        eprintln!("usage: iec-jail {HELPER_ARG} OWNER-PID LOG RC PROGRAM [ARG...]");
        return 2;
    }
    let Some(owner) = args[1]
        .to_str()
        .and_then(|s| s.parse::<i32>().ok())
        .filter(|&p| p > 1)
    else {
        eprintln!("iec-jail: not a process id: {:?}", args[1]);
        return 2;
    };
    let open = |path: &OsStr, flags: i32, fd: i32| -> std::io::Result<()> {
        let c = std::ffi::CString::new(path.as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: plain file-descriptor calls on a path we own.
        unsafe {
            let f = libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o600);
            if f < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if f != fd {
                // dup2 leaves the new descriptor without close-on-exec.
                let r = libc::dup2(f, fd);
                libc::close(f);
                if r < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
        }
        Ok(())
    };
    if let Err(e) = open(&args[2], libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT, 9) {
        return fail("cannot open the log", &e);
    }
    if let Err(e) = open(&args[3], libc::O_RDONLY, 8) {
        return fail("cannot open the rc file", &e);
    }
    // bash's startup note that it runs without job control (the jail refuses it) is no evidence
    // about any text: its standard error goes nowhere until the rc file points it at the
    // terminal again (`exec 2>&1`; the rc reports its own failures through fd 9).
    if let Err(e) = open(OsStr::new("/dev/null"), libc::O_WRONLY, 2) {
        return fail("cannot open /dev/null", &e);
    }
    let mut program = PathBuf::from(&args[4]);
    if !args[4].as_bytes().contains(&b'/') {
        // The jail's exec does not search PATH.
        let found = std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(&args[4]))
                .find(|p| p.is_absolute() && executable(p))
        });
        match found {
            Some(p) => program = p,
            None => return fail("program not found", &program.display()),
        }
    }
    // SAFETY: signal dispositions, terminal modes and process ids of this single-threaded
    // process.
    let (server, pgrp) = unsafe {
        for s in [
            libc::SIGINT,
            libc::SIGQUIT,
            libc::SIGTSTP,
            libc::SIGTTIN,
            libc::SIGTTOU,
        ] {
            libc::signal(s, libc::SIG_IGN);
        }
        // The terminal's interrupt, quit and suspend characters reach readline as keys (which the
        // rc file records as refused) instead of signals: in the jail readline cannot re-raise
        // the signal it catches (`kill` is refused), so C-c would discard only the line being
        // edited where the harness's shell aborts the whole command. (Readline turns ISIG back
        // on, so the characters themselves are disabled.)
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(0, &mut t) == 0 {
            for c in [
                libc::VINTR,
                libc::VQUIT,
                libc::VSUSP,
                libc::VERASE,
                libc::VKILL,
                libc::VWERASE,
                libc::VLNEXT,
                libc::VREPRINT,
            ] {
                t.c_cc[c] = 0; // _POSIX_VDISABLE
            }
            libc::tcsetattr(0, libc::TCSANOW, &t);
        }
        (libc::getppid(), libc::getpgrp())
    };
    // The log lies in the witness's own directory (see `TmuxWitness::start`).
    let witness_dir = Path::new(&args[2])
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    // The watchdog: opened before the fork, so that neither id can be reused in between.
    let owner_p = Proc::new(owner);
    let server_p = Proc::new(server);
    if owner_p.fd.is_none() && !owner_p.alive() {
        return fail("the owner is gone", &owner);
    }
    // SAFETY: fork in a single-threaded process; the child only polls and signals.
    match unsafe { libc::fork() } {
        -1 => return fail("fork", &std::io::Error::last_os_error()),
        0 => unsafe { watchdog(&owner_p, &server_p, pgrp, &witness_dir) },
        _ => {}
    }
    drop((owner_p, server_p));
    // (The loader files are for the jail, not the shell.)
    let env: Vec<(String, OsString)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .filter(|(k, _)| k != crate::jail::LIBS_ENV)
        .collect();
    let env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (k.as_str(), v.as_os_str())).collect();
    let rest: Vec<&OsStr> = args[5..].iter().map(OsString::as_os_str).collect();
    // It reads its rc file, its home and working directories, its program and libraries,
    // nothing else (not the log of texts next to them).
    let home = env
        .iter()
        .find(|(k, _)| *k == "HOME")
        .map(|(_, v)| PathBuf::from(v));
    let cwd = std::env::current_dir().ok();
    let rc = PathBuf::from(&args[3]);
    let mut readable: Vec<&std::path::Path> = [home.as_deref(), cwd.as_deref(), Some(rc.as_path())]
        .into_iter()
        .flatten()
        .collect();
    // Readline's keys as the harness's shell has them, and terminal descriptions.
    for p in [
        "/etc/inputrc",
        "/usr/share/terminfo",
        "/lib/terminfo",
        "/etc/terminfo",
    ] {
        readable.push(std::path::Path::new(p));
    }
    let e = crate::jail::exec_jailed(
        crate::jail::Kind::Expand,
        program.as_os_str(),
        &rest,
        &env,
        &readable,
    );
    fail("cannot start the jailed shell", &e)
}

/// Waits until the owner or the tmux server ends, then kills the server and the pane's
/// process group (itself included). Holds no file but the two pidfds.
unsafe fn watchdog(owner: &Proc, server: &Proc, pgrp: i32, dir: &Path) -> ! {
    // Killing the server hangs up the pane's terminal, and the kernel sends SIGHUP (and
    // SIGCONT) to the pane's session: a watchdog still in it died before removing the
    // directory (red team round 6: 9 of 20 checks left their `iec-tmux-*` with the log of
    // typed texts). It leaves the session and ignores the terminal's signals.
    libc::setsid();
    for sig in [
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGPIPE,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
    ] {
        libc::signal(sig, libc::SIG_IGN);
    }
    let keep = [owner.raw_fd(), server.raw_fd()];
    for fd in 0..1024 {
        if !keep.contains(&fd) {
            libc::close(fd);
        }
    }
    if owner.fd.is_some() && server.fd.is_some() {
        let mut p = [
            libc::pollfd {
                fd: owner.raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: server.raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        while libc::poll(p.as_mut_ptr(), 2, -1) <= 0 {}
    } else {
        while owner.alive() && server.alive() {
            libc::sleep(1);
        }
    }
    server.kill();
    // The witness's directory (socket, rc file, the log of typed texts) goes with it, also when
    // its owner never dropped it (a pool in a static) or was killed.
    let _ = std::fs::remove_dir_all(dir);
    libc::killpg(pgrp, libc::SIGKILL);
    libc::_exit(0)
}

fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

impl TmuxWitness {
    /// Starts a tmux server whose pane runs the jailed interactive bash, and waits for its first
    /// prompt. Fails (and nothing runs) when no jail helper is found.
    pub fn start(typist: &Typist) -> Result<TmuxWitness, WitnessError> {
        let helper = jail_helper().ok_or_else(|| WitnessError::Start {
            program: "iec-jail".into(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the terminal witness runs its bash only under the jail helper, and none was found (set IEC_JAIL_HELPER, or install `iec-jail` or `iec` next to this program or on PATH)",
            ),
        })?;
        let dir = tempfile::Builder::new().prefix("iec-tmux-").tempdir()?;
        std::fs::create_dir(dir.path().join("home"))?;
        std::fs::create_dir(dir.path().join("cwd"))?;
        let nonce = nonce();
        // History expansion is off whatever the harness's shell does: a text could build a
        // `}` with it that ends the wrapper (`!#:1:s/{x/}/`); callers judge the expansion of
        // the lines read with `spawn::history_expand`.
        let rc = RC.replace("NONCE", &nonce).replace("HISTEXPAND", "set +H");
        let rc_path = dir.path().join("rc.bash");
        std::fs::write(&rc_path, rc)?;
        // The shell may run as a user of its own (the jail drops root): it opens the rc file
        // through fd 8 (`/dev/fd/8`), which checks only the file's own mode; the directory
        // stays private.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&rc_path, std::fs::Permissions::from_mode(0o644))?;
        }
        let log_path = dir.path().join("log");
        let log = std::os::unix::fs::OpenOptionsExt::mode(&mut std::fs::OpenOptions::new(), 0o600)
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&log_path)?;
        let tmux = tmux_path();
        // The pane's environment has no PATH: name bash by its path.
        let mut bash = crate::bash_path();
        if !bash.is_absolute() {
            if let Some(p) = std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(&bash))
                    .find(|p| p.is_absolute() && executable(p))
            }) {
                bash = p;
            }
        }
        let mut cmd = Command::new(&tmux);
        cmd.arg("-S")
            .arg(dir.path().join("sock"))
            // `-P -F`: the server's and the pane's first process's ids, to end them whatever
            // happens later.
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "w"])
            .args(["-P", "-F", "#{pid} #{pane_pid}"])
            .args(["-x", &typist.width.to_string(), "-y", &typist.height.to_string()])
            .arg("--")
            .arg(&helper)
            .arg(HELPER_ARG)
            .arg(std::process::id().to_string())
            .arg(&log_path)
            .arg(&rc_path)
            .arg(&bash)
            .args(["--noprofile", "--rcfile", "/dev/fd/8", "-i"])
            .env_clear()
            .env("HOME", dir.path().join("home"))
            .env("LANG", "C.UTF-8")
            .env("TERM", "screen")
            .envs(crate::jail::loader_files_env(&bash).map(|v| (crate::jail::LIBS_ENV, v)))
            .current_dir(dir.path().join("cwd"))
            .stdin(Stdio::null());
        let o = cmd.output().map_err(|source| WitnessError::Start {
            program: tmux.display().to_string(),
            source,
        })?;
        if !o.status.success() {
            return Err(WitnessError::Protocol(format!(
                "tmux new-session failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )));
        }
        let mut w = TmuxWitness {
            dir,
            tmux,
            nonce,
            typist: typist.clone(),
            log: Log {
                file: log,
                buf: vec![],
            },
            keys: vec![],
            typed_once: false,
            status: None,
            probe: false,
            drained: false,
            server: Proc { pid: -1, fd: None },
            pane: Proc { pid: -1, fd: None },
            reusable: true,
        };
        {
            let s = String::from_utf8_lossy(&o.stdout);
            let mut it = s.split_whitespace().map(|x| x.parse::<i32>().unwrap_or(-1));
            if let (Some(a), Some(b)) = (it.next(), it.next()) {
                if a > 1 {
                    w.server = Proc::new(a);
                }
                if b > 1 {
                    w.pane = Proc::new(b);
                }
            }
        }
        match w.wait_status(Duration::from_secs(5))? {
            Some(_) => Ok(w),
            None => {
                let screen = w.screen();
                Err(WitnessError::Protocol(format!(
                    "the jailed interactive bash in tmux did not start (helper {}){}",
                    helper.display(),
                    screen
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(|l| format!(": {l}"))
                        .unwrap_or_default()
                )))
            }
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// Runs the tmux client with `args`; (exit status, stderr).
    fn client(&self, args: &[String]) -> Result<(i32, String), WitnessError> {
        let o = Command::new(&self.tmux)
            .arg("-S")
            .arg(self.socket())
            .args(args)
            .env_clear()
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .output()
            .map_err(|source| WitnessError::Start {
                program: self.tmux.display().to_string(),
                source,
            })?;
        Ok((
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ))
    }

    fn alive(&self) -> bool {
        if self.pane.pid > 1 {
            return self.pane.alive() && self.server.alive();
        }
        self.client(&["has-session".into(), "-t".into(), "w".into()])
            .is_ok_and(|(s, _)| s == 0)
    }

    /// Reads the records the shell wrote since the last call.
    fn pump(&mut self) -> Result<(), WitnessError> {
        for r in self.log.records() {
            match r.kind.as_str() {
                "probe" => self.probe = true,
                "key" => self.keys.push(r.a),
                // The first one counts: after `drain` (the end of the function came early) comes
                // `drained` (the end line arrived), which has no history.
                "status" => {
                    if r.a == "drained" {
                        self.drained = true;
                    }
                    if self.status.is_none() {
                        self.status = Some(r);
                    }
                }
                // The rc file's own errors (while the shell starts); later ones are not shown.
                "error" if !self.typed_once => {
                    return Err(WitnessError::Protocol(format!("terminal witness: {}", r.a)))
                }
                // Its bytes are not shown: a record the witness did not write came from a text
                // (error messages written to the channel), and may hold what it read.
                _ => {
                    self.reusable = false;
                    return Err(WitnessError::Protocol(format!(
                        "terminal witness: a record the witness did not write ({} bytes): the text wrote to the witness's channel",
                        r.kind.len()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Waits for a final status record; `None` when the shell died or the deadline passed.
    fn wait_status(&mut self, limit: Duration) -> Result<Option<Record>, WitnessError> {
        let t0 = Instant::now();
        let mut checks = 0u32;
        loop {
            self.pump()?;
            if let Some(s) = self.status.take() {
                return Ok(Some(s));
            }
            if t0.elapsed() > limit {
                return Ok(None);
            }
            checks += 1;
            if checks.is_multiple_of(50) && !self.alive() {
                self.pump()?;
                return Ok(self.status.take());
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    /// Waits for the probe key's mark: readline has read every key sent before it and reads on.
    fn wait_probe(&mut self) -> Result<bool, WitnessError> {
        let t0 = Instant::now();
        let mut checks = 0u32;
        loop {
            self.pump()?;
            if std::mem::take(&mut self.probe) {
                return Ok(true);
            }
            if t0.elapsed() > Duration::from_secs(5) {
                return Ok(false);
            }
            checks += 1;
            if checks.is_multiple_of(50) && !self.alive() {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    /// Waits briefly for the end line to reach the drain (Enter accepts lines again).
    fn wait_drained(&mut self) -> bool {
        let t0 = Instant::now();
        while !self.drained && t0.elapsed() < Duration::from_secs(1) {
            if self.pump().is_err() {
                return false;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        self.drained
    }

    /// True when the witness may type another text: nothing of this one could carry over.
    pub fn reusable(&self) -> bool {
        self.reusable
    }

    /// Types `text` the way the typist does and records what the shell read.
    pub fn type_text(&mut self, text: &str) -> Result<Typed, WitnessError> {
        if let Some(i) = text.bytes().position(|b| b == 0) {
            return Err(WitnessError::Nul(i));
        }
        if !self.reusable {
            return Err(WitnessError::Protocol(
                "terminal witness used after a text that may have changed it".into(),
            ));
        }
        // Whatever a text does from here on, this shell serves no other text unless it ends
        // cleanly (see below).
        self.reusable = false;
        self.pump()?;
        self.typed_once = true;
        self.keys.clear();
        self.status = None;
        self.probe = false;
        self.drained = false;
        let s = |x: &str| x.to_string();
        let first: Vec<String> = [
            "send-keys",
            "-t",
            "w",
            "-l",
            "__iec_r() {",
            ";",
            "send-keys",
            "-t",
            "w",
            "Enter",
            ";",
        ]
        .into_iter()
        .chain(probe_keys())
        .map(str::to_string)
        .collect();
        let (st, err) = self.client(&first)?;
        if st != 0 {
            return Err(WitnessError::Protocol(format!("tmux send-keys failed: {err}")));
        }
        if !self.wait_probe()? {
            let screen = self.screen();
            return Err(WitnessError::Protocol(format!(
                "the interactive bash in tmux did not read its first line{}",
                screen
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(|l| format!(": {l}"))
                    .unwrap_or_default()
            )));
        }
        let mut calls = vec![];
        for argv in self.typist.send_keys_calls(text) {
            let (st, err) = self.client(&argv)?;
            calls.push((argv, st, err));
        }
        let end = format!("}} # END_{}", self.nonce);
        // The end line, too, is only typed once readline reads (a dead shell answers no probe).
        let probe: Vec<String> = probe_keys().map(str::to_string).collect();
        self.client(&probe)?;
        let _ = self.wait_probe()?;
        self.client(&[
            s("send-keys"),
            s("-t"),
            s("w"),
            s("-l"),
            end.clone(),
            s(";"),
            s("send-keys"),
            s("-t"),
            s("w"),
            s("Enter"),
        ])?;
        let status = self.wait_status(Duration::from_secs(5))?;
        let screen = self.screen();
        let trips_of = |r: &Record| r.d.parse::<u64>().unwrap_or(1);
        let trips = status.as_ref().map_or(0, trips_of);
        let (hist, def) = match &status {
            Some(r) => (r.b.clone(), r.c.clone()),
            None => (String::new(), String::new()),
        };
        let canonical = def
            .strip_prefix("__iec_r () \n{ \n")
            .and_then(|d| d.strip_suffix("\n}\n"))
            .map(str::to_string);
        let mut ending = match status.as_ref().map(|r| r.a.as_str()) {
            Some(a) if a.starts_with("complete") => Ending::Complete,
            Some(a) if a.starts_with("early") || a.starts_with("drain") || a == "refused" => Ending::Early,
            // The shell still reads the command: it is not used again (nothing may abort the
            // command but a signal, which the jail keeps from readline).
            Some("pending") => Ending::Pending,
            Some(_) => Ending::Timeout,
            None if !self.alive() => Ending::Died,
            None => Ending::Timeout,
        };
        self.pump()?;
        if trips > 0 && ending != Ending::Died {
            ending = Ending::Stopped;
        }
        let end_line = format!("\n{end}");
        let mut read = hist.strip_prefix("__iec_r() {").unwrap_or(&hist).to_string();
        if let Some(r) = read.strip_suffix(&end_line) {
            read = r.to_string();
        } else if read.ends_with(&end) && read.len() == end.len() {
            read.clear();
        }
        let read = read.strip_prefix('\n').unwrap_or(&read).to_string();
        let refused_keys = std::mem::take(&mut self.keys);
        // A shell that read the text as one function body, or ended the definition early on a
        // syntax error, and defined nothing is as it was (nothing ran: a trip of the DEBUG trap
        // makes the ending `Stopped`; a refused key only recorded its name); any other is
        // retired.
        let unchanged = status.as_ref().is_some_and(|r| !r.a.ends_with('!'));
        let clean_early = ending == Ending::Early
            && (status.as_ref().is_some_and(|r| r.a != "drain") || self.wait_drained());
        // A refused key leaves the shell inside the wrapper, its lines swallowed: not used again.
        self.reusable = (ending == Ending::Complete || clean_early)
            && unchanged
            && refused_keys.is_empty()
            && self.alive();
        if self.reusable {
            // The pane is cleared for the next typing (the screen is only evidence).
            self.clear_screen();
        }
        Ok(Typed {
            calls,
            read,
            canonical: canonical.filter(|_| ending == Ending::Complete),
            ending,
            screen,
            refused_keys,
        })
    }

    fn clear_screen(&self) {
        let _ =
            self.client(&["send-keys", "-R", "-t", "w", ";", "clear-history", "-t", "w"].map(str::to_string));
    }

    fn screen(&self) -> String {
        let o = Command::new(&self.tmux)
            .arg("-S")
            .arg(self.socket())
            .args(["capture-pane", "-p", "-t", "w"])
            .env_clear()
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        match o {
            Ok(o) => String::from_utf8_lossy(&o.stdout).trim_end().to_string(),
            Err(_) => String::new(),
        }
    }
}

impl Drop for TmuxWitness {
    /// Ends the server, the pane's process group (the jail's waiting process, the watchdog;
    /// bash and whatever it forked die with the jail's PID namespace) and waits for them.
    fn drop(&mut self) {
        let _ = self.client(&["kill-server".into()]);
        if self.pane.pid > 1 && self.pane.alive() {
            // The pane's process group (its first process is a session leader), alive.
            if let Some(p) = self.pane.pid_t() {
                let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
            }
        }
        self.pane.kill();
        self.server.kill();
        self.pane.wait(Duration::from_secs(2));
        self.server.wait(Duration::from_secs(2));
    }
}

/// Warm tmux witnesses, one list per typist.
#[derive(Default)]
pub struct TmuxPool {
    idle: Mutex<Vec<(TmuxWitness, Instant)>>,
    /// Texts being typed now, at most [`TmuxPool::max_busy`]: each typing runs a tmux server and
    /// an interactive bash against fixed deadlines, so more of them than CPUs make a loaded
    /// machine miss those deadlines (a CI run with eight test threads typing at once did).
    busy: Mutex<usize>,
    freed: std::sync::Condvar,
}

/// A witness idle longer than this is not used again: its shell logs out after 20 idle seconds
/// (`TMOUT`), which must not happen while a text is typed.
const MAX_IDLE: Duration = Duration::from_secs(15);

impl TmuxPool {
    /// Types `text` on a warm witness for `typist` (started on first use; a witness that saw
    /// anything but a clean reading is dropped, see [`TmuxWitness::reusable`]).
    pub fn type_text(&self, typist: &Typist, text: &str) -> Result<Typed, WitnessError> {
        let _slot = self.slot();
        let (w, stale) = {
            let mut idle = self.idle.lock().unwrap();
            let stale: Vec<_> = {
                let (old, keep) = std::mem::take(&mut *idle)
                    .into_iter()
                    .partition(|(_, t)| t.elapsed() > MAX_IDLE);
                *idle = keep;
                old
            };
            let i = idle.iter().position(|(w, _)| &w.typist == typist);
            (i.map(|i| idle.swap_remove(i).0), stale)
        };
        drop(stale);
        let mut w = match w {
            Some(w) if w.alive() => w,
            _ => TmuxWitness::start(typist)?,
        };
        let t = w.type_text(text)?;
        if w.reusable() {
            self.idle.lock().unwrap().push((w, Instant::now()));
        }
        Ok(t)
    }

    /// How many texts are typed at once: one per CPU this process may run on.
    fn max_busy() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    /// Waits for a free typing slot; the slot is given back when the guard is dropped.
    fn slot(&self) -> BusySlot<'_> {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        while *busy >= Self::max_busy() {
            busy = self.freed.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        *busy += 1;
        BusySlot(self)
    }

    /// Ends every idle witness now.
    pub fn clear(&self) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap());
        drop(idle);
    }
}

/// A typing slot of a [`TmuxPool`], given back on drop (also when the typing panics).
struct BusySlot<'a>(&'a TmuxPool);

impl Drop for BusySlot<'_> {
    fn drop(&mut self) {
        let mut busy = self.0.busy.lock().unwrap_or_else(|e| e.into_inner());
        *busy -= 1;
        self.0.freed.notify_one();
    }
}

/// The process-wide tmux pool.
pub fn global() -> &'static TmuxPool {
    static P: std::sync::OnceLock<TmuxPool> = std::sync::OnceLock::new();
    P.get_or_init(TmuxPool::default)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn no_more_typings_at_once_than_cpus() {
        let pool = TmuxPool::default();
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..TmuxPool::max_busy() * 3 + 2 {
                s.spawn(|| {
                    let _slot = pool.slot();
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(50));
                    now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        let most = most.load(Ordering::SeqCst);
        assert!((1..=TmuxPool::max_busy()).contains(&most), "{most} at once");
        assert_eq!(*pool.busy.lock().unwrap(), 0);
    }
}
