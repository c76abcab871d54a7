//! The harness driver: installs a pinned Claude Code from npm, runs it headless against the
//! replay server with witnesses, and runs each payload directly with `bash -c` as the reference.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::npm;
use crate::probe::{self, ProbeRecord, PROBE_LOG_ENV};
use crate::server::{RecordedRequest, ReplayHandle, ReplayServer, Script, ToolResult};

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

/// How to start a harness: a program and the arguments before Claude Code's own.
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

/// Options for [`run_claude_code_with`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The Claude Code version (for the install directory and the report).
    pub version: String,
    /// A prebuilt `cli.js` or native binary; `None` installs the pinned npm package.
    pub bin: Option<PathBuf>,
    /// The payloads, one Bash tool call each, all in one harness launch.
    pub payloads: Vec<String>,
    /// Bound for the harness process (and, separately, each direct run).
    pub timeout: Duration,
    /// The argv probe program (linked as `argvprobe` first on `PATH`); `None` looks for
    /// `IEC_ARGVPROBE`, then `iec-argvprobe` next to the current executable and its parent, then
    /// the current executable if it is the `iec-harness` binary (which is also the probe).
    pub probe: Option<PathBuf>,
    /// Install a PreToolUse hook (matcher `Bash`) in the private HOME's
    /// `~/.claude/settings.json` that records its stdin: what the harness hands a hook.
    pub hook_witness: bool,
    /// An extra PreToolUse hook command (a shell command line, as in Claude Code's settings),
    /// installed for `Bash`; with the recording hook on, one hook command records the document
    /// and then pipes it to this one (parallel hooks would race for the decision). Claude
    /// Code applies its decision: `updatedInput` replaces the call's input, `deny` refuses it.
    /// The hook runs with the sandbox's environment (its `PATH`, `HOME`, witnesses); its stderr
    /// is appended to a sandbox file, returned as [`HarnessRun::hook_stderr`].
    pub hook_command: Option<String>,
    /// The replay model's thinking time before each tool call (see [`Script::think`]).
    pub think: Duration,
}

impl RunOptions {
    pub fn new(version: &str, bin: Option<PathBuf>, payloads: &[&str]) -> Self {
        RunOptions {
            version: version.to_string(),
            bin,
            payloads: payloads.iter().map(|s| s.to_string()).collect(),
            timeout: Duration::from_secs(60),
            probe: None,
            hook_witness: true,
            hook_command: None,
            think: Duration::ZERO,
        }
    }
}

/// What one direct `bash -c PAYLOAD` run showed.
#[derive(Debug, Clone, serde::Serialize)]
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
    /// The `command` the replay server emitted in the `tool_use` block.
    pub emitted: String,
    /// The `command` of that call as the harness echoed it back in its next request.
    pub echoed: Option<String>,
    /// The outer text the harness's bash received (the `$BASH_EXECUTION_STRING` that carries
    /// the wrapper: contains `eval`, else the first that mentions the payload's first word).
    pub outer: Option<String>,
    /// Every `$BASH_EXECUTION_STRING` logged while this payload's turn was active.
    pub bash_strings: Vec<String>,
    /// The argv of each probe invocation during this payload's turn.
    pub probe: Vec<ProbeRecord>,
    /// The `tool_input` the PreToolUse hook received for this call (matched by `tool_use_id`).
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
    /// The harness's stdout (stream-json lines) and stderr.
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
    /// Every PreToolUse hook stdin document, in order.
    pub hook_log: Vec<serde_json::Value>,
    /// What the extra hook ([`RunOptions::hook_command`]) wrote on stderr, all calls together.
    pub hook_stderr: String,
}

/// Runs Claude Code `version` (installed from npm unless `bin` is given) on `payloads`.
pub fn run_claude_code(
    version: &str,
    bin: Option<PathBuf>,
    payloads: &[&str],
) -> anyhow::Result<Vec<PayloadResult>> {
    Ok(run_claude_code_with(&RunOptions::new(version, bin, payloads))?.results)
}

/// The cache directory for installed harnesses: `~/.cache/iec/harnesses`.
pub fn harness_cache_dir() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").context("HOME is not set")?;
    Ok(PathBuf::from(home).join(".cache/iec/harnesses"))
}

/// The launcher inside an installed `claude-code-<ver>` directory, if complete.
pub fn installed_launcher(dir: &Path) -> Option<Launcher> {
    let pkg = dir.join("node_modules/@anthropic-ai/claude-code");
    let cli = pkg.join("cli.js");
    if cli.is_file() {
        return Some(Launcher::for_bin(&cli));
    }
    let platform = match std::env::consts::ARCH {
        "aarch64" => "claude-code-linux-arm64",
        _ => "claude-code-linux-x64",
    };
    let native = dir
        .join("node_modules/@anthropic-ai")
        .join(platform)
        .join("claude");
    if native.is_file() {
        return Some(Launcher::for_bin(&native));
    }
    None
}

/// Installs `@anthropic-ai/claude-code@<version>` into `~/.cache/iec/harnesses/claude-code-<ver>`
/// (reused when present) and returns how to launch it. Scripts are not run (`--ignore-scripts`):
/// a pure-JS release runs as `node cli.js`, a native release as its platform package's binary.
pub fn install_claude_code(version: &str) -> anyhow::Result<Launcher> {
    npm::check_version("Claude Code", version)?;
    // First without optional dependencies (a pure-JS release needs none); a native release keeps
    // its binary in an optional platform package, so a second pass installs those.
    npm::install_cached(
        &harness_cache_dir()?.join(format!("claude-code-{version}")),
        &format!("@anthropic-ai/claude-code@{version}"),
        &[&["--omit=optional"], &[]],
        installed_launcher,
        "neither cli.js nor a platform binary exists",
    )
}

/// Finds the argv probe program.
pub fn find_probe() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("IEC_ARGVPROBE") {
        return Ok(PathBuf::from(p));
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
    // The iec-harness binary is the probe too when linked under the probe's names.
    if exe
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "iec-harness")
    {
        return Ok(exe);
    }
    bail!("cannot find the iec-argvprobe program (build it with `cargo build -p iec-harness`, or set IEC_ARGVPROBE)")
}

/// A private workspace for one run: HOME, TMPDIR, the scratch cwd, PATH's probe directory and
/// the witness files.
pub(crate) struct Sandbox {
    _root: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) tmp: PathBuf,
    pub(crate) cwd: PathBuf,
    pub(crate) bin: PathBuf,
    pub(crate) bash_env: PathBuf,
    bash_log: PathBuf,
    argv_log: PathBuf,
    probe_log: PathBuf,
    hook_log: PathBuf,
    hook_stderr: PathBuf,
}

impl Sandbox {
    pub(crate) fn new(probe: &Path) -> anyhow::Result<Sandbox> {
        let root = tempfile::Builder::new().prefix("iec-harness-").tempdir()?;
        let r = root.path().to_path_buf();
        let s = Sandbox {
            home: r.join("home"),
            tmp: r.join("tmp"),
            cwd: r.join("work"),
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
        std::os::unix::fs::symlink(probe, s.bin.join("argvprobe")).context("linking argvprobe")?;
        std::os::unix::fs::symlink(probe, s.bin.join(probe::HOOK_RECORDER_NAME))
            .context("linking the hook recorder")?;
        std::fs::write(&s.bash_log, b"")?;
        std::fs::write(&s.probe_log, b"")?;
        Ok(s)
    }

    pub(crate) fn env(&self) -> Vec<(OsString, OsString)> {
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
            // bash skips BASH_ENV (and sources ~/.bashrc instead) when its stdin is a socket
            // and SHLVL < 2 ("run by rshd"); Node's "pipe" stdin is a socketpair. As if started
            // from a login shell, SHLVL=1 makes the harness's bash level 2.
            ("SHLVL".into(), "1".into()),
            ("BASH_ENV".into(), self.bash_env.clone().into()),
            (BASH_LOG_ENV.into(), self.bash_log.clone().into()),
            (BASH_ARGV_LOG_ENV.into(), self.argv_log.clone().into()),
            (PROBE_LOG_ENV.into(), self.probe_log.clone().into()),
        ];
        for k in ["USER", "LOGNAME"] {
            if let Some(val) = std::env::var_os(k) {
                v.push((k.into(), val));
            }
        }
        v
    }

    /// Writes `~/.claude/settings.json` with one PreToolUse hook for `Bash`: the recorder of its
    /// stdin (when `witness`), then `extra` (a hook that may decide) in the same command.
    fn install_hooks(&self, witness: bool, extra: Option<&str>) -> anyhow::Result<()> {
        let dir = self.home.join(".claude");
        std::fs::create_dir_all(&dir)?;
        let mut hooks = Vec::new();
        // The sandbox path is a tempdir name (alphanumeric), so plain single quotes suffice.
        let recorder = format!(
            "'{}' '{}'",
            self.bin.join(probe::HOOK_RECORDER_NAME).display(),
            self.hook_log.display()
        );
        match (witness, extra) {
            (true, None) => {
                hooks.push(serde_json::json!({"type": "command", "command": recorder, "timeout": 30}));
            }
            (witness, Some(extra)) => {
                // A group keeps the hook's own exit status and stdout (its decision) and records
                // what it says on stderr (a hook that fails open says why there).
                let decide = format!("{{ {extra}\n}} 2>>'{}'", self.hook_stderr.display());
                // Claude Code runs a call's PreToolUse hooks in parallel, and every result after
                // an `allow` yields the aggregated `allow` again with that later hook's own
                // (absent) `updatedInput` (2.1.72's cli.js): a recorder that finished after the
                // deciding hook would drop its rewrite. So one command records, then decides.
                let command = if witness {
                    format!("d=$(cat); printf '%s\\n' \"$d\" | {recorder}; printf '%s\\n' \"$d\" | {decide}")
                } else {
                    decide
                };
                hooks.push(serde_json::json!({"type": "command", "command": command, "timeout": 60}));
            }
            (false, None) => {}
        }
        if hooks.is_empty() {
            return Ok(());
        }
        let settings = serde_json::json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": hooks}]}});
        std::fs::write(
            dir.join("settings.json"),
            serde_json::to_string_pretty(&settings)?,
        )?;
        Ok(())
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

    fn truncate_logs(&self) -> anyhow::Result<()> {
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
pub(crate) fn replay_with_marks(
    sb: &Arc<Sandbox>,
    payloads: &[String],
    think: Duration,
) -> anyhow::Result<(TurnMarks, ReplayHandle)> {
    let marks: TurnMarks = Arc::new(Mutex::new(vec![None; payloads.len() + 1]));
    let mut script = Script::commands(payloads.iter().cloned());
    script.think = think;
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

pub(crate) struct Finished {
    pub(crate) exit_code: Option<i32>,
    pub(crate) timed_out: bool,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs `cmd` in its own process group with stdout/stderr to files, bounded by `timeout`; the
/// whole group is killed at the end either way.
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
            // SAFETY: plain kill(2) of a pid we just read; a reused pid would have to carry the
            // sandbox's unique marker too.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            killed += 1;
        }
    }
    killed
}

pub(crate) fn run_bounded(
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
    let pgid = child.id() as libc::pid_t;
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
    // SAFETY: killpg on the group we created; ESRCH when it is already gone is fine.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
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

/// Picks the wrapper's `$BASH_EXECUTION_STRING` from a turn's logged strings.
fn pick_outer(strings: &[String], payload: &str) -> Option<String> {
    if let Some(s) = strings.iter().find(|s| s.contains("eval")) {
        return Some(s.clone());
    }
    let first_word = payload.split_whitespace().next().unwrap_or("");
    strings
        .iter()
        .find(|s| !first_word.is_empty() && s.contains(first_word))
        .cloned()
}

/// Splits the witness logs into one window per payload: payload `k`'s strings and probe records
/// are those logged between turn `k`'s first request (`marks[k]`) and turn `k + 1`'s.
pub(crate) fn turn_windows(
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
pub(crate) fn direct_run(
    sb: &Sandbox,
    payload: &str,
    k: usize,
    timeout: Duration,
) -> anyhow::Result<DirectRun> {
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

/// Runs one harness launch with all payloads, then each payload directly.
pub fn run_claude_code_with(opts: &RunOptions) -> anyhow::Result<HarnessRun> {
    let launcher = match &opts.bin {
        Some(b) => Launcher::for_bin(b),
        None => install_claude_code(&opts.version)?,
    };
    let probe = match &opts.probe {
        Some(p) => p.clone(),
        None => find_probe()?,
    };
    let sb = Arc::new(Sandbox::new(&probe)?);
    sb.install_hooks(opts.hook_witness, opts.hook_command.as_deref())?;

    let (marks, server) = replay_with_marks(&sb, &opts.payloads, opts.think)?;

    let mut cmd = Command::new(&launcher.program);
    cmd.args(&launcher.prefix_args)
        .args([
            "-p",
            "go",
            "--dangerously-skip-permissions",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .current_dir(&sb.cwd)
        .env_clear()
        .envs(sb.env())
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("IS_SANDBOX", "1");
    let started = Instant::now();
    let fin = run_bounded(cmd, &sb.tmp, "harness", opts.timeout, &sb.marker())?;
    let elapsed_ms = started.elapsed().as_millis();
    let requests = server.requests();
    let unknown_paths = server.unknown_paths();
    let tool_results: Vec<Option<ToolResult>> =
        (0..opts.payloads.len()).map(|k| server.tool_result(k)).collect();
    let echoed: Vec<Option<String>> = (0..opts.payloads.len())
        .map(|k| {
            server
                .echoed_input(k)
                .and_then(|v| v.get("command")?.as_str().map(String::from))
        })
        .collect();
    server.shutdown();

    let (bash_bytes, probe_bytes) = sb.read_logs();
    let bash_argvs = sb.bash_argvs();
    let marks = marks.lock().unwrap().clone();
    let harness_parts = turn_windows(&marks, &bash_bytes, &probe_bytes, opts.payloads.len());

    // The reference: each payload directly as `bash -c PAYLOAD`, same witnesses.
    let hooks = sb.hook_inputs();
    let bash_bytes_all = bash_bytes.clone();
    let probe_bytes_all = probe_bytes.clone();
    let mut results = Vec::new();
    for (k, ((strings, probes), tool_result)) in harness_parts.into_iter().zip(tool_results).enumerate() {
        let payload = opts.payloads[k].clone();
        let direct = direct_run(&sb, &payload, k, opts.timeout)?;
        results.push(PayloadResult {
            outer: pick_outer(&strings, &payload),
            emitted: payload.clone(),
            echoed: echoed[k].clone(),
            hook_input: hooks
                .iter()
                .find(|h| {
                    h.get("tool_use_id").and_then(|v| v.as_str())
                        == Some(crate::server::tool_use_id(k).as_str())
                })
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
        exit_code: fin.exit_code,
        timed_out: fin.timed_out,
        elapsed_ms,
        stdout: fin.stdout,
        stderr: fin.stderr,
        requests,
        unknown_paths,
        bash_log: split_bash_log(&bash_bytes_all),
        probe_log: probe::parse_log(&probe_bytes_all),
        bash_argvs,
        hook_log: hooks,
        hook_stderr: String::from_utf8_lossy(&std::fs::read(&sb.hook_stderr).unwrap_or_default())
            .into_owned(),
    })
}
