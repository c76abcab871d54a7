//! One launch of a real harness against the replay server: what every driver shares. A driver
//! ([`crate::driver`] for Claude Code, [`crate::codex`], [`crate::gemini`]) says how its harness is
//! installed, configured and started (`Driver`); `launch()` does the rest. It makes a private
//! sandbox (HOME, TMPDIR, cwd, the argv probe first on `PATH`, the `BASH_ENV` witness), starts
//! the replay server on the payloads, runs the harness once bounded by the timeout, splits the
//! witness logs into one window per payload, and runs each payload directly as `bash -c` with the
//! same witnesses as the reference.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use rustix::process::{kill_process, kill_process_group, Pid, Signal};
use serde_json::Value;

use crate::agree::RunSpec;
use crate::probe::{self, ProbeRecord, PROBE_LOG_ENV};
use crate::server::{
    echoed_input_in, tool_result_in, RecordedRequest, ReplayHandle, ReplayServer, Script, ToolResult,
};

/// Environment variable naming the bash witness log (the `BASH_ENV` file appends to it).
pub const BASH_LOG_ENV: &str = "IEC_BASH_ENV_LOG";

/// Environment variable naming the bash argv log: the `BASH_ENV` witness appends each bash's
/// own argv (`/proc/$$/cmdline`) there as one record (the number of elements, then each
/// element, all NUL-terminated).
pub const BASH_ARGV_LOG_ENV: &str = "IEC_BASH_ARGV_LOG";

/// The `BASH_ENV` witness in observe mode: it appends `$BASH_EXECUTION_STRING` (NUL-terminated)
/// to the log and returns; the command still runs.
pub const BASH_ENV_SCRIPT: &str = r#"# iec-harness BASH_ENV witness (observe mode: records, does not exit)
if builtin test -n "${IEC_BASH_ENV_LOG-}" && builtin test -n "${BASH_EXECUTION_STRING+set}"; then
  builtin printf '%s\0' "$BASH_EXECUTION_STRING" >> "$IEC_BASH_ENV_LOG"
fi
if builtin test -n "${IEC_BASH_ARGV_LOG-}" && builtin test -r "/proc/$$/cmdline"; then
  builtin mapfile -d '' __iec_argv < "/proc/$$/cmdline" 2>/dev/null &&
    builtin printf '%s\0' "${#__iec_argv[@]}" "${__iec_argv[@]}" >> "$IEC_BASH_ARGV_LOG"
  builtin unset __iec_argv
fi
"#;

/// How to start a harness: a program and the arguments before the harness's own.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Launcher {
    pub program: PathBuf,
    pub prefix_args: Vec<OsString>,
}

impl Launcher {
    /// A launcher for `bin`: `node bin` for a `.js`/`.cjs`/`.mjs` file, else `bin` itself.
    pub fn for_bin(bin: &Path) -> Launcher {
        let is_js = bin
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "js" | "cjs" | "mjs"));
        if is_js {
            Launcher {
                program: PathBuf::from("node"),
                prefix_args: vec![bin.as_os_str().to_owned()],
            }
        } else {
            Launcher {
                program: bin.to_path_buf(),
                prefix_args: vec![],
            }
        }
    }
}

/// What every harness launch takes (each driver's options hold these, or are these).
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The harness version (for the install directory and the report).
    pub version: String,
    /// A prebuilt harness (a `.js` file runs under `node`); `None` installs the pinned npm
    /// package.
    pub bin: Option<PathBuf>,
    /// The payloads, one shell tool call each, all in one harness launch.
    pub payloads: Vec<String>,
    /// The working directory of each payload's call (missing or `None`: the harness's own), sent
    /// in the call's arguments where the shell tool declares a parameter for it (see
    /// [`crate::Script::workdirs`]; Claude Code's Bash has none). The direct reference runs
    /// stay in the sandbox's `work/`.
    pub workdirs: Vec<Option<PathBuf>>,
    /// Bound for the harness process (and, separately, each direct run).
    pub timeout: Duration,
    /// The argv probe program (linked as `argvprobe` first on `PATH`); `None` finds it as
    /// [`find_probe`] does.
    pub probe: Option<PathBuf>,
    /// The replay model's thinking time before each tool call (see [`Script::think`]).
    pub think: Duration,
    /// The harness's working directory, the caller's (kept after the run): e.g. a folder whose
    /// subfolders the calls `cd` into and whose final state the caller observes. `None`: the
    /// sandbox's private `work/`. The direct reference runs stay in `work/` either way.
    pub work_dir: Option<PathBuf>,
    /// Programs put on the harness's `PATH` under their file names (linked into the sandbox's
    /// `bin`, beside the probe): e.g. the lookup-table tools of a bench chain.
    pub tools: Vec<PathBuf>,
    /// Extra environment of the harness process (and so of the shells it starts): e.g. a fixed
    /// git identity for a bench task's commits.
    pub env: Vec<(String, String)>,
    /// Decides each call when its turn comes (see [`crate::server::NextCommand`]); the
    /// reference runs and [`PayloadResult::emitted`] stay `payloads` as written.
    pub next_command: Option<crate::server::NextCommand>,
    /// At most this many calls in one harness session (`None`: all): the rest run in further
    /// sessions in the same sandbox, so every call sees the same paths (Gemini CLI ends a
    /// prompt after 100 model turns).
    pub session_calls: Option<usize>,
}

impl LaunchOptions {
    /// `payloads` through `version` (installed unless `bin` is given), bounded by two minutes.
    pub fn new(version: &str, bin: Option<PathBuf>, payloads: &[&str]) -> Self {
        LaunchOptions {
            version: version.to_string(),
            bin,
            payloads: payloads.iter().map(|s| s.to_string()).collect(),
            workdirs: vec![],
            timeout: Duration::from_secs(120),
            probe: None,
            think: Duration::ZERO,
            work_dir: None,
            tools: vec![],
            env: vec![],
            next_command: None,
            session_calls: None,
        }
    }

    /// One launch of `commands` as `spec` says: its harness binary, probe and thinking time,
    /// bounded by its timeout plus the thinking time of every call.
    pub fn for_spec(spec: &RunSpec, commands: &[&str]) -> Self {
        LaunchOptions {
            timeout: spec.timeout
                + spec.think * commands.len() as u32
                + if spec.think.is_zero() {
                    Duration::ZERO
                } else {
                    crate::server::FIRST_TURN_THINK
                },
            probe: spec.probe.clone(),
            think: spec.think,
            ..LaunchOptions::new(&spec.version, spec.bin.clone(), commands)
        }
    }
}

/// What one direct `bash -c PAYLOAD` run showed.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DirectRun {
    /// What bash received as `$BASH_EXECUTION_STRING` (each bash started, in order).
    pub bash_strings: Vec<String>,
    /// The argv of each probe invocation.
    pub probe: Vec<ProbeRecord>,
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
}

/// What one payload showed through the harness, and directly.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PayloadResult {
    pub payload: String,
    /// The `command` the replay server emitted in the tool call.
    pub emitted: String,
    /// The command of that call as the harness echoed it back in its next request.
    pub echoed: Option<String>,
    /// The outer text the harness's bash received (the `$BASH_EXECUTION_STRING` that carries
    /// the wrapper, else the first that mentions the payload's first word).
    pub outer: Option<String>,
    /// Every `$BASH_EXECUTION_STRING` logged while this payload's turn was active.
    pub bash_strings: Vec<String>,
    /// The argv of each probe invocation during this payload's turn.
    pub probe: Vec<ProbeRecord>,
    /// The `tool_input` the PreToolUse hook received for this call (matched by `tool_use_id`;
    /// Claude Code only).
    pub hook_input: Option<serde_json::Value>,
    /// The tool result the harness sent back (from the recorded next request).
    pub tool_result: Option<ToolResult>,
    /// The same payload run as `bash -c PAYLOAD` with the same witnesses.
    pub direct: DirectRun,
}

/// The whole run of one harness launch.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HarnessRun {
    pub version: String,
    pub launcher: Launcher,
    pub results: Vec<PayloadResult>,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub elapsed_ms: u128,
    /// The harness's stdout (Claude Code: stream-json lines) and stderr.
    pub stdout: String,
    pub stderr: String,
    pub requests: Vec<RecordedRequest>,
    pub unknown_paths: Vec<String>,
    /// The whole bash witness log of the harness launch (all turns, start-up included).
    pub bash_log: Vec<String>,
    /// The whole probe log of the harness launch.
    pub probe_log: Vec<ProbeRecord>,
    /// The argv of every bash the harness started (the argv witness), in order.
    pub bash_argvs: Vec<Vec<String>>,
    /// Every PreToolUse hook stdin document, in order (Claude Code only).
    pub hook_log: Vec<serde_json::Value>,
    /// What the extra hook ([`crate::RunOptions::hook_command`]) wrote on stderr, all calls
    /// together.
    pub hook_stderr: String,
    /// The session logs the harness wrote in its private home (see [`SESSION_LOG_DIRS`]), read
    /// before the sandbox was removed: `iec scan`'s fixtures.
    pub session_logs: Vec<SessionLog>,
    /// The sandbox's root directory as it was during the run (removed since): the prefix of
    /// every path in `session_logs`' contents.
    pub sandbox_root: PathBuf,
}

/// One session log file a harness wrote during a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SessionLog {
    /// The path relative to the sandbox root (`home/.claude/projects/-…-work/<uuid>.jsonl`).
    pub path: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// Where the driven harnesses write their session logs, relative to the sandbox root: Claude
/// Code's `~/.claude/projects`, Codex's `$CODEX_HOME/sessions`, Gemini CLI's `~/.gemini/tmp`.
pub const SESSION_LOG_DIRS: &[&str] = &["home/.claude/projects", "codex-home/sessions", "home/.gemini/tmp"];

/// Every regular file under the [`SESSION_LOG_DIRS`] of `root`, sorted by path.
fn session_logs(root: &Path) -> Vec<SessionLog> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<SessionLog>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(root, &p, out),
                Ok(t) if t.is_file() => {
                    if let (Ok(rel), Ok(bytes)) = (p.strip_prefix(root), std::fs::read(&p)) {
                        out.push(SessionLog {
                            path: rel.to_string_lossy().into_owned(),
                            bytes,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for d in SESSION_LOG_DIRS {
        walk(root, &root.join(d), &mut out);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The project's cache directory: `~/.cache/iec`.
pub fn cache_dir() -> anyhow::Result<PathBuf> {
    let home = iec_core::config::Config::from_env()?
        .home
        .context("HOME is not set")?;
    Ok(home.join(".cache/iec"))
}

/// The cache directory for installed harnesses: `~/.cache/iec/harnesses`.
pub fn harness_cache_dir() -> anyhow::Result<PathBuf> {
    Ok(cache_dir()?.join("harnesses"))
}

/// Finds the argv probe program.
pub fn find_probe() -> anyhow::Result<PathBuf> {
    if let Some(p) = iec_core::config::Config::from_env()?.argvprobe {
        return Ok(p);
    }
    let exe = std::env::current_exe()?;
    let mut dir = exe.parent();
    for _ in 0..2 {
        let Some(d) = dir else { break };
        let p = d.join("iec-argvprobe");
        if p.is_file() {
            return Ok(p);
        }
        dir = d.parent();
    }
    // The development command `iec-lab` (crate iec-lab) is the probe too when linked under the
    // probe's names.
    if exe
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "iec-lab")
    {
        return Ok(exe);
    }
    bail!("cannot find the iec-argvprobe program (build it with `cargo build -p iec-harness`, or set IEC_ARGVPROBE)")
}

/// `probe`, or the one [`find_probe`] finds.
pub(crate) fn probe_or_find(probe: &Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match probe {
        Some(p) => Ok(p.clone()),
        None => find_probe(),
    }
}

/// A private workspace for one run: HOME, TMPDIR, the scratch cwd, PATH's probe directory and
/// the witness files.
pub(crate) struct Sandbox {
    _root: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) tmp: PathBuf,
    pub(crate) cwd: PathBuf,
    /// The harness's working directory: [`LaunchOptions::work_dir`] when given, else `cwd`.
    pub(crate) run_dir: PathBuf,
    pub(crate) bin: PathBuf,
    pub(crate) bash_env: PathBuf,
    pub(crate) bash_log: PathBuf,
    pub(crate) probe_log: PathBuf,
    argv_log: PathBuf,
    pub(crate) hook_log: PathBuf,
    pub(crate) hook_stderr: PathBuf,
}

impl Sandbox {
    /// A harness's sandbox: the probe linked as `argvprobe` and as the hook recorder.
    pub(crate) fn new(probe: &Path) -> anyhow::Result<Sandbox> {
        Sandbox::with_links("iec-harness-", probe, &["argvprobe", probe::HOOK_RECORDER_NAME])
    }

    /// A sandbox in a temporary directory named `prefix…`, with `probe` linked into its `bin`
    /// under each of `links`.
    pub(crate) fn with_links(prefix: &str, probe: &Path, links: &[&str]) -> anyhow::Result<Sandbox> {
        let root = tempfile::Builder::new().prefix(prefix).tempdir()?;
        let r = root.path().to_path_buf();
        let s = Sandbox {
            home: r.join("home"),
            tmp: r.join("tmp"),
            cwd: r.join("work"),
            run_dir: r.join("work"),
            bin: r.join("bin"),
            bash_env: r.join("bash_env.sh"),
            bash_log: r.join("bash.log"),
            argv_log: r.join("bash-argv.log"),
            probe_log: r.join("probe.log"),
            hook_log: r.join("hook.log"),
            hook_stderr: r.join("hook.stderr"),
            root: r.clone(),
            _root: root,
        };
        for d in [&s.home, &s.tmp, &s.cwd, &s.bin] {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(&s.bash_env, BASH_ENV_SCRIPT)?;
        // A login bash (`bash -l -c`, as the harness may start it) reads ~/.bash_profile instead
        // of BASH_ENV; the private HOME's profile runs the same witness.
        std::fs::write(
            s.home.join(".bash_profile"),
            format!("# iec-harness login witness\n. '{}'\n", s.bash_env.display()),
        )?;
        for name in links {
            std::os::unix::fs::symlink(probe, s.bin.join(name))
                .with_context(|| format!("linking the probe as {name}"))?;
        }
        s.truncate_logs()?;
        Ok(s)
    }

    /// Makes the login profile put the probe first on `PATH` again before the witness: a login
    /// bash's `/etc/profile` may set `PATH` anew (Debian's does), as a user's own profile would
    /// undo.
    pub(crate) fn probe_first_in_login_profile(&self) -> anyhow::Result<()> {
        std::fs::write(
            self.home.join(".bash_profile"),
            format!(
                "# iec-harness login witness\nPATH='{}':\"$PATH\"; export PATH\n. '{}'\n",
                self.bin.display(),
                self.bash_env.display()
            ),
        )?;
        Ok(())
    }

    /// The environment of everything started in the sandbox: the private directories, the
    /// probe first on `PATH`, and the bash and probe witnesses.
    pub(crate) fn witness_env(&self) -> Vec<(OsString, OsString)> {
        let mut path = OsString::from(&self.bin);
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()));
        let mut v: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), path),
            ("HOME".into(), self.home.clone().into()),
            ("TMPDIR".into(), self.tmp.clone().into()),
            ("SHELL".into(), "/bin/bash".into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("TERM".into(), "dumb".into()),
            ("BASH_ENV".into(), self.bash_env.clone().into()),
            (BASH_LOG_ENV.into(), self.bash_log.clone().into()),
            (PROBE_LOG_ENV.into(), self.probe_log.clone().into()),
        ];
        for k in ["USER", "LOGNAME"] {
            if let Some(val) = std::env::var_os(k) {
                v.push((k.into(), val));
            }
        }
        v
    }

    /// A harness's environment: [`Sandbox::witness_env`], the bash argv witness, and `SHLVL`.
    pub(crate) fn env(&self) -> Vec<(OsString, OsString)> {
        let mut v = self.witness_env();
        // bash skips BASH_ENV (and sources ~/.bashrc instead) when its stdin is a socket
        // and SHLVL < 2 ("run by rshd"); Node's "pipe" stdin is a socketpair. As if started
        // from a login shell, SHLVL=1 makes the harness's bash level 2.
        v.push(("SHLVL".into(), "1".into()));
        v.push((BASH_ARGV_LOG_ENV.into(), self.argv_log.clone().into()));
        v
    }

    /// The hook inputs recorded so far.
    fn hook_inputs(&self) -> Vec<serde_json::Value> {
        String::from_utf8_lossy(&std::fs::read(&self.hook_log).unwrap_or_default())
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The environment entry that marks this sandbox's processes.
    pub(crate) fn marker(&self) -> String {
        format!("{PROBE_LOG_ENV}={}", self.probe_log.display())
    }

    pub(crate) fn log_lens(&self) -> (u64, u64) {
        let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        (len(&self.bash_log), len(&self.probe_log))
    }

    pub(crate) fn read_logs(&self) -> (Vec<u8>, Vec<u8>) {
        (
            std::fs::read(&self.bash_log).unwrap_or_default(),
            std::fs::read(&self.probe_log).unwrap_or_default(),
        )
    }

    /// The argv records the bash argv witness logged so far.
    pub(crate) fn bash_argvs(&self) -> Vec<Vec<String>> {
        parse_argv_log(&std::fs::read(&self.argv_log).unwrap_or_default())
    }

    pub(crate) fn truncate_logs(&self) -> anyhow::Result<()> {
        std::fs::write(&self.bash_log, b"")?;
        std::fs::write(&self.probe_log, b"")?;
        Ok(())
    }
}

/// Lengths of the bash and probe logs at a point in the run.
pub(crate) type LogMark = (u64, u64);

/// Each turn's [`LogMark`], taken when the turn's first request arrives (payload k starts after
/// it); index `payloads.len()` is the final turn.
pub(crate) type TurnMarks = Arc<Mutex<Vec<Option<LogMark>>>>;

/// Starts the replay server on `payloads`, with the sandbox's log lengths marked at each turn.
fn replay_with_marks(sb: &Arc<Sandbox>, opts: &LaunchOptions) -> anyhow::Result<(TurnMarks, ReplayHandle)> {
    let payloads = &opts.payloads;
    let marks: TurnMarks = Arc::new(Mutex::new(vec![None; payloads.len() + 1]));
    let mut script = Script::commands(payloads.iter().cloned());
    script.think = opts.think;
    script.next_command = opts.next_command.clone();
    script.workdirs = opts
        .workdirs
        .iter()
        .map(|d| d.as_ref().map(|d| d.to_string_lossy().into_owned()))
        .collect();
    let (m, sb) = (marks.clone(), sb.clone());
    script.on_turn = Some(Arc::new(move |k| {
        let mut m = m.lock().unwrap();
        if k < m.len() && m[k].is_none() {
            m[k] = Some(sb.log_lens());
        }
    }));
    let (_addr, server) = ReplayServer::start(script)?;
    Ok((marks, server))
}

/// The records of a bash argv log (see [`BASH_ARGV_LOG_ENV`]); a torn last record is dropped.
pub fn parse_argv_log(bytes: &[u8]) -> Vec<Vec<String>> {
    let mut fields = bytes
        .split(|b| *b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned());
    let mut out = Vec::new();
    while let Some(n) = fields.next() {
        let Ok(n) = n.parse::<usize>() else { break };
        let rec: Vec<String> = fields.by_ref().take(n).collect();
        if rec.len() < n {
            break;
        }
        out.push(rec);
    }
    out
}

/// The NUL-terminated strings of a bash witness log.
pub(crate) fn split_bash_log(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

struct Finished {
    exit_code: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

/// SIGKILLs every process whose environment carries `marker` (a `NAME=value` entry unique to one
/// sandbox): descendants that left the process group (a harness may spawn its shells detached)
/// still inherit the witness variables. Only processes of this user are readable.
pub fn kill_marked(marker: &str) -> usize {
    let me = std::process::id();
    let mut killed = 0;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
            // A reused pid would have to carry the sandbox's unique marker too.
            if let Some(pid) = Pid::from_raw(pid as i32) {
                let _ = kill_process(pid, Signal::KILL);
            }
            killed += 1;
        }
    }
    killed
}

/// Runs `cmd` in its own process group with stdout/stderr to files, bounded by `timeout`; the
/// whole group, and every process carrying `marker`, is killed at the end either way.
fn run_bounded(
    mut cmd: Command,
    out_dir: &Path,
    tag: &str,
    timeout: Duration,
    marker: &str,
) -> anyhow::Result<Finished> {
    let out_path = out_dir.join(format!("{tag}.stdout"));
    let err_path = out_dir.join(format!("{tag}.stderr"));
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .process_group(0);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("spawning {:?}", cmd.get_program()))?;
    let pgid = Pid::from_child(&child);
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if Instant::now() >= deadline {
            timed_out = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    // The group we created; ESRCH when it is already gone is fine.
    let _ = kill_process_group(pgid, Signal::KILL);
    kill_marked(marker);
    let status = match status {
        Some(s) => Some(s),
        None => child.wait().ok(),
    };
    Ok(Finished {
        exit_code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        timed_out,
        stdout: String::from_utf8_lossy(&std::fs::read(&out_path).unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned(),
    })
}

/// Splits the witness logs into one window per payload: payload `k`'s strings and probe records
/// are those logged between turn `k`'s first request (`marks[k]`) and turn `k + 1`'s.
fn turn_windows(
    marks: &[Option<LogMark>],
    bash_bytes: &[u8],
    probe_bytes: &[u8],
    n: usize,
) -> Vec<(Vec<String>, Vec<ProbeRecord>)> {
    let end = (bash_bytes.len() as u64, probe_bytes.len() as u64);
    (0..n)
        .map(|k| match marks.get(k).copied().flatten() {
            None => (vec![], vec![]),
            Some(start) => {
                let stop = marks.get(k + 1).copied().flatten().unwrap_or(end);
                let b = &bash_bytes[start.0 as usize..(stop.0.max(start.0) as usize).min(bash_bytes.len())];
                let p = &probe_bytes[start.1 as usize..(stop.1.max(start.1) as usize).min(probe_bytes.len())];
                (split_bash_log(b), probe::parse_log(p))
            }
        })
        .collect()
}

/// Runs `payload` directly as `bash -c PAYLOAD` in the sandbox, with the same witnesses (the
/// logs are truncated first).
fn direct_run(sb: &Sandbox, payload: &str, k: usize, timeout: Duration) -> anyhow::Result<DirectRun> {
    if payload.contains('\0') {
        // No process can receive it (an execve argument ends at a NUL): the reference run is
        // this payload's result, not the batch's end (red team round 7).
        return Ok(unrunnable(payload));
    }
    sb.truncate_logs()?;
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(payload)
        .current_dir(&sb.cwd)
        .env_clear()
        .envs(sb.env());
    let d = run_bounded(cmd, &sb.tmp, &format!("direct-{k}"), timeout, &sb.marker())?;
    let (b, p) = sb.read_logs();
    Ok(DirectRun {
        bash_strings: split_bash_log(&b),
        probe: probe::parse_log(&p),
        stdout: d.stdout,
        stderr: d.stderr,
        exit_code: d.exit_code,
        timed_out: d.timed_out,
    })
}

/// The reference run of a payload that `bash -c` cannot be given: a NUL byte.
pub(crate) fn unrunnable(payload: &str) -> DirectRun {
    let at = payload.find('\0').unwrap_or(0);
    DirectRun {
        bash_strings: vec![],
        probe: vec![],
        stdout: String::new(),
        stderr: format!(
            "not run: the text holds a NUL byte (at byte {at}), which no execve argument can carry, so `bash -c` cannot receive it"
        ),
        exit_code: None,
        timed_out: false,
    }
}

/// The `command` string of a call's arguments (Claude Code's and Gemini CLI's shell tools).
pub(crate) fn command_field(args: &Value) -> Option<String> {
    args.get("command").and_then(Value::as_str).map(String::from)
}

/// How a driver starts its harness in a prepared sandbox.
pub(crate) struct Invocation {
    /// The arguments after the launcher's own.
    pub(crate) args: Vec<OsString>,
    /// The environment beyond the sandbox's.
    pub(crate) env: Vec<(&'static str, OsString)>,
}

/// What one harness adds to a [`launch`].
pub(crate) trait Driver {
    /// Writes the harness's own files into the sandbox (settings, hooks, its login profile)
    /// once the replay server listens at `base_url`, and says how to start the harness.
    fn prepare(&self, sb: &Sandbox, base_url: &str) -> anyhow::Result<Invocation>;
    /// The command text in a call's arguments as the harness echoed them (by default their
    /// `command` string).
    fn command_of(&self, args: &Value) -> Option<String> {
        command_field(args)
    }
    /// Whether a logged `$BASH_EXECUTION_STRING` is the harness's wrapper around the command.
    fn is_wrapper(&self, text: &str) -> bool;
    /// The message of a call the harness ended its session on, read from its stderr, when it
    /// does that (exiting non-zero instead of answering the call): [`launch`] then records the
    /// message as that call's (error) result and runs the payloads after it in a new launch in
    /// the same sandbox, as a user would start a new session.
    fn ended_on_call(&self, _stderr: &str) -> Option<String> {
        None
    }
}

/// What one harness launch of a stretch of the payloads left: per payload its tool result,
/// echoed command and turn window of the witness logs.
struct Segment {
    fin: Finished,
    requests: Vec<RecordedRequest>,
    unknown_paths: Vec<String>,
    elapsed_ms: u128,
    tool_results: Vec<Option<ToolResult>>,
    echoed: Vec<Option<String>>,
    windows: Vec<(Vec<String>, Vec<ProbeRecord>)>,
}

/// Runs the harness once on `opts.payloads[from..to]` in sandbox `sb`.
fn run_segment(
    opts: &LaunchOptions,
    (from, to): (usize, usize),
    launcher: &Launcher,
    sb: &Arc<Sandbox>,
    driver: &dyn Driver,
) -> anyhow::Result<Segment> {
    let mut seg_opts = opts.clone();
    seg_opts.payloads = opts.payloads[from..to].to_vec();
    seg_opts.workdirs = opts
        .workdirs
        .get(from..to.min(opts.workdirs.len()))
        .unwrap_or_default()
        .to_vec();
    let (marks, server) = replay_with_marks(sb, &seg_opts)?;
    let how = driver.prepare(sb, &server.base_url())?;
    let mut cmd = Command::new(&launcher.program);
    cmd.args(&launcher.prefix_args)
        .args(&how.args)
        .current_dir(&sb.run_dir)
        .env_clear()
        .envs(sb.env())
        .envs(opts.env.iter().map(|(k, v)| (k, v)))
        .envs(how.env);
    let started = Instant::now();
    let fin = run_bounded(cmd, &sb.tmp, "harness", opts.timeout, &sb.marker())?;
    let elapsed_ms = started.elapsed().as_millis();
    let requests = server.requests();
    let unknown_paths = server.unknown_paths();
    let n = seg_opts.payloads.len();
    let tool_results = (0..n).map(|k| tool_result_in(&requests, k)).collect();
    let echoed = (0..n)
        .map(|k| echoed_input_in(&requests, k).and_then(|v| driver.command_of(&v)))
        .collect();
    server.shutdown();
    // The logs only grow until the direct runs: this launch's windows start at its own marks.
    let (bash_bytes, probe_bytes) = sb.read_logs();
    let marks = marks.lock().unwrap().clone();
    let windows = turn_windows(&marks, &bash_bytes, &probe_bytes, n);
    Ok(Segment {
        fin,
        requests,
        unknown_paths,
        elapsed_ms,
        tool_results,
        echoed,
        windows,
    })
}

/// The call a launch ended on ([`Driver::ended_on_call`]): the first payload of the segment
/// that got no answer, when no later one got any, nothing of it ran, and the harness exited
/// non-zero (not timed out) saying why; with the message.
fn ended_on_call(seg: &Segment, driver: &dyn Driver) -> Option<(usize, String)> {
    if seg.fin.timed_out || seg.fin.exit_code.is_none_or(|c| c == 0) {
        return None;
    }
    let message = driver.ended_on_call(&seg.fin.stderr)?;
    let k = seg.tool_results.iter().position(Option::is_none)?;
    let quiet = seg.tool_results[k..].iter().all(Option::is_none)
        && seg.windows[k].0.is_empty()
        && seg.windows[k].1.is_empty();
    quiet.then_some((k, message))
}

/// The text the harness's bash received for a call: the wrapper, else the first string that
/// mentions the payload's first word.
fn pick_outer(strings: &[String], payload: &str, driver: &dyn Driver) -> Option<String> {
    if let Some(s) = strings.iter().find(|s| driver.is_wrapper(s)) {
        return Some(s.clone());
    }
    let first_word = payload.split_whitespace().next().unwrap_or("");
    strings
        .iter()
        .find(|s| !first_word.is_empty() && s.contains(first_word))
        .cloned()
}

/// Runs one harness launch with all of `opts.payloads` (the harness installed by `install`
/// unless `opts.bin` names it), then each payload directly, and assembles the [`HarnessRun`]:
/// each payload's turn window of the witness logs, the tool result and echoed command the
/// server recorded, the hook document of its call, and the direct `bash -c` reference run.
pub(crate) fn launch(
    opts: &LaunchOptions,
    install: fn(&str) -> anyhow::Result<Launcher>,
    driver: &dyn Driver,
) -> anyhow::Result<HarnessRun> {
    let launcher = match &opts.bin {
        Some(b) => Launcher::for_bin(b),
        None => install(&opts.version)?,
    };
    let mut sb = Sandbox::new(&probe_or_find(&opts.probe)?)?;
    if let Some(w) = &opts.work_dir {
        sb.run_dir = w.clone();
    }
    for t in &opts.tools {
        let name = t
            .file_name()
            .with_context(|| format!("tool {} has no file name", t.display()))?;
        std::os::unix::fs::symlink(t, sb.bin.join(name))
            .with_context(|| format!("linking tool {}", t.display()))?;
    }
    let sb = Arc::new(sb);
    let n = opts.payloads.len();
    let mut from = 0;
    let mut segs = Vec::new();
    let mut tool_results: Vec<Option<ToolResult>> = Vec::with_capacity(n);
    let mut echoed: Vec<Option<String>> = Vec::with_capacity(n);
    let mut parts: Vec<(Vec<String>, Vec<ProbeRecord>)> = Vec::with_capacity(n);
    let cap = opts.session_calls.unwrap_or(n).max(1);
    loop {
        let to = n.min(from + cap);
        let mut seg = run_segment(opts, (from, to), &launcher, &sb, driver)?;
        let ended = ended_on_call(&seg, driver);
        if let Some((k, message)) = &ended {
            seg.tool_results[*k] = Some(ToolResult {
                tool_use_id: format!("ended-session-{}", from + k),
                is_error: true,
                content: message.clone(),
            });
        }
        let seg_n = seg.tool_results.len();
        // Resumed after a call the harness ended its session on, or where the session's share
        // of the calls ends (not after a session that timed out: the run reports that).
        let resume = match ended {
            Some((k, _)) if k + 1 < seg_n => opts.next_command.is_none().then_some(k + 1),
            _ => (to < n && !seg.fin.timed_out).then_some(seg_n),
        };
        let keep = resume.unwrap_or(seg_n);
        tool_results.extend(seg.tool_results.drain(..keep));
        echoed.extend(seg.echoed.drain(..keep));
        parts.extend(seg.windows.drain(..keep));
        segs.push(seg);
        match resume {
            Some(k) => from += k,
            None => break,
        }
    }
    let last = segs.last().expect("one launch at least");
    let (exit_code, timed_out) = (last.fin.exit_code, last.fin.timed_out);
    let elapsed_ms = segs.iter().map(|s| s.elapsed_ms).sum();
    let stdout: String = segs.iter().map(|s| s.fin.stdout.as_str()).collect();
    let stderr: String = segs.iter().map(|s| s.fin.stderr.as_str()).collect();
    let requests: Vec<RecordedRequest> = segs.iter_mut().flat_map(|s| s.requests.drain(..)).collect();
    let unknown_paths: Vec<String> = segs.iter_mut().flat_map(|s| s.unknown_paths.drain(..)).collect();
    let (bash_bytes, probe_bytes) = sb.read_logs();
    let bash_argvs = sb.bash_argvs();
    let hooks = sb.hook_inputs();
    // The reference: each payload directly as `bash -c PAYLOAD`, same witnesses.
    let mut results = Vec::new();
    for (k, ((strings, probes), tool_result)) in parts.into_iter().zip(tool_results).enumerate() {
        let payload = opts.payloads[k].clone();
        let direct = direct_run(&sb, &payload, k, opts.timeout)?;
        let id = crate::anthropic::tool_use_id(k);
        results.push(PayloadResult {
            outer: pick_outer(&strings, &payload, driver),
            emitted: payload.clone(),
            echoed: echoed[k].clone(),
            hook_input: hooks
                .iter()
                .find(|h| h.get("tool_use_id").and_then(Value::as_str) == Some(id.as_str()))
                .and_then(|h| h.get("tool_input").cloned()),
            payload,
            bash_strings: strings,
            probe: probes,
            tool_result,
            direct,
        });
    }
    Ok(HarnessRun {
        version: opts.version.clone(),
        launcher,
        results,
        exit_code,
        timed_out,
        elapsed_ms,
        stdout,
        stderr,
        requests,
        unknown_paths,
        bash_log: split_bash_log(&bash_bytes),
        probe_log: probe::parse_log(&probe_bytes),
        bash_argvs,
        hook_log: hooks,
        hook_stderr: String::from_utf8_lossy(&std::fs::read(&sb.hook_stderr).unwrap_or_default())
            .into_owned(),
        session_logs: session_logs(&sb.root),
        sandbox_root: sb.root.clone(),
    })
}
