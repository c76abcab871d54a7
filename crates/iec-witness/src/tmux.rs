//! The terminal-typing witness: a real tmux server (private socket, `-f /dev/null`) with one
//! pane running a real interactive bash (`--noprofile`, our own rc file, private `HOME`, empty
//! `PATH` and environment). The harness's `send-keys` argv is run by the real tmux client, the
//! keys reach the real readline, history expansion and parser, and the witness records what the
//! shell read, from its own history entry. Nothing typed ever runs:
//!
//! 1. the witness types `__iec_r() {` first and `} # END<nonce>` last, so the shell reads the
//!    harness's lines as the body of a function that is never called (what bash reads into a
//!    function is parsed, not executed);
//! 2. when the shell ends that definition early (a syntax error, an aborted line), the prompt
//!    hook sees the missing end line and swallows every further line at the readline level
//!    (`bind -x` on Enter) until the end line arrives;
//! 3. a DEBUG trap (extdebug, functrace) kills the shell with SIGKILL before any command that is
//!    not the witness's own (nonce-named functions) could run;
//! 4. callers pass only texts that parse on their own when they could close the function early
//!    (see [`crate::gate`]).
//!
//! Keys are only sent while readline reads the line (the terminal in raw mode): before the
//! harness's keys and before the end line, the witness sends a probe key bound with `bind -x`
//! and waits for its mark. Keys that arrive while bash is between two readline calls go through
//! the pty's canonical line discipline instead (Linux cuts such a line at 4095 bytes, and the
//! erase, kill and word-erase characters edit it), which would make the reading depend on timing.
//!
//! The interactive shell exits by itself after 20 idle seconds (`TMOUT`), taking the tmux server
//! with it, so no process outlives its user for long.

use crate::WitnessError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const RC: &str = r#"set +o posix
shopt -s extdebug lithist cmdhist
set -o functrace
HISTCONTROL= HISTIGNORE= HISTFILE= HISTSIZE=100000 HISTTIMEFORMAT=
PATH=
TMOUT=20
PS1='$ '
PS2='$(__iec_ps2_NONCE)> '
__IEC_OUT=OUTDIR
HISTEXPAND
__iec_hist_NONCE() {
  local h
  h=$(builtin history 1)
  [[ $h =~ ^\ *[0-9]+\*?\ \ (.*)$ ]] && h=${BASH_REMATCH[1]}
  __iec_h=$h
}
__iec_rec_NONCE() {
  builtin local __iec_h= st=complete
  __iec_hist_NONCE
  builtin history -c
  if [[ -z $__iec_h ]]; then
    builtin printf ready > "$__IEC_OUT/status"
    return
  fi
  if [[ $__iec_h != *$'\n'"} # END_NONCE" ]] || ! builtin declare -F __iec_r >/dev/null; then
    st=early
    if [[ $__iec_h != *"} # END_NONCE"* ]]; then
      st=drain
      builtin bind -x '"\C-m": __iec_drain_NONCE'
      builtin bind -x '"\C-j": __iec_drain_NONCE'
    fi
  fi
  builtin declare -f __iec_r > "$__IEC_OUT/def" 2>/dev/null
  builtin unset -f __iec_r
  builtin printf '%s' "$__iec_h" > "$__IEC_OUT/hist"
  builtin printf '%s' "$st" > "$__IEC_OUT/status"
}
__iec_drain_NONCE() {
  if [[ $READLINE_LINE == "} # END_NONCE" ]]; then
    builtin bind '"\C-m": accept-line'
    builtin bind '"\C-j": accept-line'
    builtin printf drained > "$__IEC_OUT/status"
  fi
  READLINE_LINE=
  READLINE_POINT=0
}
__iec_ps2_NONCE() {
  builtin local __iec_h=
  __iec_hist_NONCE
  if [[ $__iec_h == *$'\n'"} # END_NONCE" ]]; then
    builtin printf '%s' "$__iec_h" > "$__IEC_OUT/hist"
    builtin printf pending > "$__IEC_OUT/status"
  fi
}
__iec_probe_NONCE() {
  builtin printf ok > "$__IEC_OUT/probe"
}
builtin bind -x '"\e[9999~": __iec_probe_NONCE'
PROMPT_COMMAND=__iec_rec_NONCE
trap '[[ ${FUNCNAME[0]-} == __iec_*_NONCE || $BASH_COMMAND == __iec_*_NONCE* ]] || builtin kill -9 $$' DEBUG
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
    /// History expansion on in the interactive shell.
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
    /// The shell died (the DEBUG trap stopped a command from running, or it read end of file).
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
}

/// One tmux server with one interactive bash.
pub struct TmuxWitness {
    dir: tempfile::TempDir,
    tmux: PathBuf,
    nonce: String,
    typist: Typist,
}

/// The tmux program: `IEC_TMUX` or `tmux` from the usual places.
pub fn tmux_path() -> PathBuf {
    if let Some(p) = std::env::var_os("IEC_TMUX") {
        return PathBuf::from(p);
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

fn unshare_prefix() -> &'static Option<Vec<&'static str>> {
    static U: std::sync::OnceLock<Option<Vec<&'static str>>> = std::sync::OnceLock::new();
    U.get_or_init(|| {
        for args in [vec!["-n"], vec!["-rn"]] {
            let ok = Command::new("unshare")
                .args(&args)
                .arg("true")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return Some(args);
            }
        }
        None
    })
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
    /// Starts a tmux server whose pane runs the interactive bash, and waits for its first prompt.
    pub fn start(typist: &Typist) -> Result<TmuxWitness, WitnessError> {
        let dir = tempfile::Builder::new().prefix("iec-tmux-").tempdir()?;
        std::fs::create_dir(dir.path().join("home"))?;
        std::fs::create_dir(dir.path().join("out"))?;
        std::fs::create_dir(dir.path().join("cwd"))?;
        let nonce = nonce();
        let out = dir.path().join("out");
        let rc = RC
            .replace("NONCE", &nonce)
            .replace(
                "OUTDIR",
                &crate::spawn::shell_single_quote(out.as_os_str().as_encoded_bytes()),
            )
            .replace(
                "HISTEXPAND",
                if typist.history_expansion {
                    "set -H"
                } else {
                    "set +H"
                },
            );
        let rc_path = dir.path().join("rc.bash");
        std::fs::write(&rc_path, rc)?;
        let w = TmuxWitness {
            dir,
            tmux: tmux_path(),
            nonce,
            typist: typist.clone(),
        };
        let shell = format!(
            "exec {} --noprofile --rcfile {} -i",
            crate::spawn::shell_single_quote(crate::bash_path().as_os_str().as_encoded_bytes()),
            crate::spawn::shell_single_quote(rc_path.as_os_str().as_encoded_bytes())
        );
        let mut cmd = match unshare_prefix() {
            Some(a) => {
                let mut c = Command::new("unshare");
                c.args(a).arg("--").arg(&w.tmux);
                c
            }
            None => Command::new(&w.tmux),
        };
        cmd.arg("-S")
            .arg(w.socket())
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "w"])
            .args(["-x", &typist.width.to_string(), "-y", &typist.height.to_string()])
            .arg(shell)
            .env_clear()
            .env("HOME", w.dir.path().join("home"))
            .env("LANG", "C.UTF-8")
            .env("TERM", "screen")
            .current_dir(w.dir.path().join("cwd"))
            .stdin(Stdio::null());
        let o = cmd.output().map_err(|source| WitnessError::Start {
            program: w.tmux.display().to_string(),
            source,
        })?;
        if !o.status.success() {
            return Err(WitnessError::Protocol(format!(
                "tmux new-session failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )));
        }
        match w.wait_status(Duration::from_secs(5))? {
            Some(_) => Ok(w),
            None => Err(WitnessError::Protocol(
                "the interactive bash in tmux did not start".into(),
            )),
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    fn out(&self, name: &str) -> PathBuf {
        self.dir.path().join("out").join(name)
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
        self.client(&["has-session".into(), "-t".into(), "w".into()])
            .is_ok_and(|(s, _)| s == 0)
    }

    /// Waits for a final status; `None` when the shell died or the deadline passed.
    fn wait_status(&self, limit: Duration) -> Result<Option<String>, WitnessError> {
        let t0 = Instant::now();
        let mut checks = 0u32;
        loop {
            if let Ok(s) = std::fs::read_to_string(self.out("status")) {
                if matches!(s.as_str(), "complete" | "early" | "drained" | "pending" | "ready") {
                    return Ok(Some(s));
                }
            }
            if t0.elapsed() > limit {
                return Ok(None);
            }
            checks += 1;
            // A dead shell takes the session (and the server) with it.
            if checks.is_multiple_of(50) && !self.alive() {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    /// Waits for the probe key's mark: readline has read every key sent before it and reads on.
    fn wait_probe(&self) -> Result<bool, WitnessError> {
        let t0 = Instant::now();
        let mut checks = 0u32;
        loop {
            if self.out("probe").exists() {
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

    /// Types `text` the way the typist does and records what the shell read.
    pub fn type_text(&mut self, text: &str) -> Result<Typed, WitnessError> {
        if let Some(i) = text.bytes().position(|b| b == 0) {
            return Err(WitnessError::Nul(i));
        }
        let _ = std::fs::remove_file(self.out("status"));
        let _ = std::fs::remove_file(self.out("hist"));
        let _ = std::fs::remove_file(self.out("def"));
        let s = |x: &str| x.to_string();
        let _ = std::fs::remove_file(self.out("probe"));
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
            return Err(WitnessError::Protocol(
                "the interactive bash in tmux did not read its first line".into(),
            ));
        }
        let mut calls = vec![];
        for argv in self.typist.send_keys_calls(text) {
            let (st, err) = self.client(&argv)?;
            calls.push((argv, st, err));
        }
        let end = format!("}} # END_{}", self.nonce);
        // The end line, too, is only typed once readline reads (a dead shell answers no probe).
        let _ = std::fs::remove_file(self.out("probe"));
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
        let hist = std::fs::read_to_string(self.out("hist")).unwrap_or_default();
        let screen = self.screen();
        let canonical = std::fs::read_to_string(self.out("def")).ok().and_then(|d| {
            d.strip_prefix("__iec_r () \n{ \n")
                .and_then(|d| d.strip_suffix("\n}\n"))
                .map(str::to_string)
        });
        let ending = match status.as_deref() {
            Some("complete") => Ending::Complete,
            Some("early") | Some("drained") => Ending::Early,
            Some("pending") => {
                // Abort the waiting command; the prompt hook then reports (and nothing is pending).
                let _ = std::fs::remove_file(self.out("status"));
                self.client(&[s("send-keys"), s("-t"), s("w"), s("C-c")])?;
                let _ = self.wait_status(Duration::from_secs(5))?;
                Ending::Pending
            }
            _ if !self.alive() => Ending::Died,
            _ => Ending::Timeout,
        };
        let end_line = format!("\n{end}");
        let mut read = hist.strip_prefix("__iec_r() {").unwrap_or(&hist).to_string();
        if let Some(r) = read.strip_suffix(&end_line) {
            read = r.to_string();
        } else if read.ends_with(&end) && read.len() == end.len() {
            read.clear();
        }
        let read = read.strip_prefix('\n').unwrap_or(&read).to_string();
        // The pane is cleared for the next typing (the screen is only evidence).
        let _ = self.client(&[
            s("send-keys"),
            s("-R"),
            s("-t"),
            s("w"),
            s(";"),
            s("clear-history"),
            s("-t"),
            s("w"),
        ]);
        Ok(Typed {
            calls,
            read,
            canonical: canonical.filter(|_| ending == Ending::Complete),
            ending,
            screen,
        })
    }

    fn screen(&self) -> String {
        let o = Command::new(&self.tmux)
            .arg("-S")
            .arg(self.socket())
            .args(["capture-pane", "-p", "-t", "w"])
            .env_clear()
            .env("LANG", "C.UTF-8")
            .output();
        match o {
            Ok(o) => String::from_utf8_lossy(&o.stdout).trim_end().to_string(),
            Err(_) => String::new(),
        }
    }
}

impl Drop for TmuxWitness {
    fn drop(&mut self) {
        let _ = self.client(&["kill-server".into()]);
    }
}

/// Warm tmux witnesses, one list per typist.
#[derive(Default)]
pub struct TmuxPool {
    idle: Mutex<Vec<TmuxWitness>>,
}

impl TmuxPool {
    /// Types `text` on a warm witness for `typist` (started on first use; a witness whose shell
    /// died or timed out is dropped).
    pub fn type_text(&self, typist: &Typist, text: &str) -> Result<Typed, WitnessError> {
        let w = {
            let mut idle = self.idle.lock().unwrap();
            let i = idle.iter().position(|w| &w.typist == typist);
            i.map(|i| idle.swap_remove(i))
        };
        let mut w = match w {
            // An idle shell may have logged out (TMOUT); then start a new one.
            Some(w) if w.alive() => w,
            _ => TmuxWitness::start(typist)?,
        };
        let t = w.type_text(text)?;
        if matches!(t.ending, Ending::Complete | Ending::Early | Ending::Pending) {
            self.idle.lock().unwrap().push(w);
        }
        Ok(t)
    }
}

/// The process-wide tmux pool.
pub fn global() -> &'static TmuxPool {
    static P: std::sync::OnceLock<TmuxPool> = std::sync::OnceLock::new();
    P.get_or_init(TmuxPool::default)
}
