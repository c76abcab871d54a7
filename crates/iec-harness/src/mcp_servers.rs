//! Command-running MCP servers, measured with a real MCP client (the official Python `mcp` SDK).
//!
//! Each server is installed at a pinned version into `~/.cache/iec/mcp-servers/<name>-<version>`
//! (npm packages with `--ignore-scripts`; the PyPI package into a venv there) and started over
//! stdio by the client, in a private sandbox (HOME, TMPDIR, cwd) with the argv probe first on
//! `PATH`. The client reads `tools/list`, finds the command tool and sends each payload in the
//! form the tool's schema asks for: the text itself when `command` is a string, the argv the
//! direct `bash -c` run built when it is an array (the intended action as an argv, with a
//! discrete `|` for a pipe). What the probe received is compared with the direct `bash -c` run of
//! the same text: `corresponds` when the argv records are equal, `diverges` otherwise; a call
//! the server rejects (an error result without any probe run) is a loud `tool-input` divergence
//! and counted as refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;
use serde_json::{json, Value};

use iec_core::Hop;

use crate::agree::{Observed, ObservedDivergence, Payload};
use crate::launch::{cache_dir, kill_marked, probe_or_find, split_bash_log, DirectRun, Sandbox};
use crate::npm;
use crate::probe::{self, ProbeRecord, PROBE_LOG_ENV};

/// The servers this module knows how to install and drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// npm `@wonderwhy-er/desktop-commander`, tool `start_process`.
    DesktopCommander,
    /// npm `mcp-server-commands`, tool `run_command`.
    ServerCommands,
    /// PyPI `mcp-shell-server` (tumf), tool `shell_execute` (argv array).
    ShellServer,
}

/// Pinned versions the measurements in docs/findings/mcp-servers.md were made with.
pub const DESKTOP_COMMANDER_VERSION: &str = "0.2.52";
pub const SERVER_COMMANDS_VERSION: &str = "0.5.0";
pub const SHELL_SERVER_VERSION: &str = "1.1.14";

/// A server at a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerSpec {
    pub kind: ServerKind,
    pub version: String,
}

impl ServerKind {
    /// The harness name used by `iec harness run --harness NAME@VERSION`.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::DesktopCommander => "desktop-commander",
            ServerKind::ServerCommands => "mcp-server-commands",
            ServerKind::ShellServer => "mcp-shell-server",
        }
    }
    /// The package as its registry names it.
    pub fn package(self) -> &'static str {
        match self {
            ServerKind::DesktopCommander => "@wonderwhy-er/desktop-commander",
            ServerKind::ServerCommands => "mcp-server-commands",
            ServerKind::ShellServer => "mcp-shell-server",
        }
    }
    /// The hop a silent change is attributed to: the text servers hand the text to a shell
    /// (desktop-commander: `$SHELL -l -c`, mcp-server-commands: Node `exec`, i.e. `/bin/sh -c`);
    /// mcp-shell-server execs the argv itself.
    pub fn change_hop(self) -> Hop {
        match self {
            ServerKind::DesktopCommander | ServerKind::ServerCommands => Hop::Shell,
            ServerKind::ShellServer => Hop::Spawn,
        }
    }
    pub fn all() -> [ServerKind; 3] {
        [
            ServerKind::DesktopCommander,
            ServerKind::ServerCommands,
            ServerKind::ShellServer,
        ]
    }
}

impl ServerSpec {
    pub fn pinned(kind: ServerKind) -> ServerSpec {
        let version = match kind {
            ServerKind::DesktopCommander => DESKTOP_COMMANDER_VERSION,
            ServerKind::ServerCommands => SERVER_COMMANDS_VERSION,
            ServerKind::ShellServer => SHELL_SERVER_VERSION,
        };
        ServerSpec {
            kind,
            version: version.into(),
        }
    }
}

/// Parses `desktop-commander@VER`, `mcp-server-commands@VER`, `mcp-shell-server@VER` (also the
/// npm name `@wonderwhy-er/desktop-commander@VER`). `None` when `spec` names no MCP server.
pub fn parse_server(spec: &str) -> Option<anyhow::Result<ServerSpec>> {
    let (name, version) = spec.rsplit_once('@')?;
    let kind = ServerKind::all()
        .into_iter()
        .find(|k| name == k.name() || name == k.package())?;
    Some(npm::check_version(kind.name(), version).map(|()| ServerSpec {
        kind,
        version: version.into(),
    }))
}

/// How to start an installed server.
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub dir: PathBuf,
}

fn run_ok(cmd: &mut Command) -> anyhow::Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{:?} failed ({}): {}",
            cmd,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn installed_at(kind: ServerKind, dir: &Path) -> Option<Installed> {
    let (program, args) = match kind {
        ServerKind::DesktopCommander => (
            PathBuf::from("node"),
            vec![dir
                .join("node_modules/@wonderwhy-er/desktop-commander/dist/index.js")
                .display()
                .to_string()],
        ),
        ServerKind::ServerCommands => (
            PathBuf::from("node"),
            vec![dir
                .join("node_modules/mcp-server-commands/build/index.js")
                .display()
                .to_string()],
        ),
        ServerKind::ShellServer => (dir.join("bin/mcp-shell-server"), vec![]),
    };
    let entry = args.first().map(PathBuf::from).unwrap_or(program.clone());
    // A venv is complete only once pip finished (the marker is written last).
    let complete =
        entry.is_file() && (kind != ServerKind::ShellServer || dir.join(".iec-complete").is_file());
    complete.then(|| Installed {
        program,
        args,
        dir: dir.to_path_buf(),
    })
}

/// Installs the pinned server into `~/.cache/iec/mcp-servers/<name>-<version>` (reused when
/// present). npm packages: `npm install --ignore-scripts` into a temporary directory, then
/// renamed (desktop-commander's postinstall only sends an install event). PyPI: a venv at that
/// path with `pip install mcp-shell-server==VER`.
pub fn install(spec: &ServerSpec) -> anyhow::Result<Installed> {
    let root = cache_dir()?.join("mcp-servers");
    let dir = root.join(format!("{}-{}", spec.kind.name(), spec.version));
    if let Some(i) = installed_at(spec.kind, &dir) {
        return Ok(i);
    }
    std::fs::create_dir_all(&root)?;
    let pkg = format!("{}@{}", spec.kind.package(), spec.version);
    match spec.kind {
        ServerKind::DesktopCommander | ServerKind::ServerCommands => {
            npm::install_cached(
                &dir,
                &pkg,
                &[&[]],
                |d| installed_at(spec.kind, d),
                "its entry point is missing",
            )?;
        }
        ServerKind::ShellServer => {
            // A venv is not relocatable (its scripts name its path), so it is built in place
            // and marked complete at the end.
            let _ = std::fs::remove_dir_all(&dir);
            run_ok(Command::new("python3").args(["-m", "venv"]).arg(&dir))
                .context("python3 -m venv (is python3-venv installed?)")?;
            run_ok(
                Command::new(dir.join("bin/pip"))
                    .args(["install", "-q", "--disable-pip-version-check"])
                    .arg(format!("{}=={}", spec.kind.package(), spec.version)),
            )
            .with_context(|| format!("pip install {pkg}"))?;
            std::fs::write(dir.join(".iec-complete"), b"")?;
        }
    }
    installed_at(spec.kind, &dir).with_context(|| format!("{pkg} is not complete in {}", dir.display()))
}

/// The Python with the `mcp` SDK (the client): the venv `~/.cache/iec/venv-mcp`, created and
/// filled from PyPI on first use (the same venv the iec-mcp tests use).
pub fn client_python() -> anyhow::Result<PathBuf> {
    let dir = cache_dir()?.join("venv-mcp");
    let py = dir.join("bin/python");
    let has_mcp = |py: &Path| {
        Command::new(py)
            .args(["-c", "import mcp, mcp.client.stdio"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if has_mcp(&py) {
        return Ok(py);
    }
    if !py.exists() {
        std::fs::create_dir_all(dir.parent().unwrap())?;
        run_ok(Command::new("python3").args(["-m", "venv"]).arg(&dir))
            .context("python3 -m venv (is python3-venv installed?)")?;
    }
    run_ok(Command::new(dir.join("bin/pip")).args(["install", "-q", "--disable-pip-version-check", "mcp"]))
        .context("pip install mcp (the MCP client)")?;
    if !has_mcp(&py) {
        bail!(
            "pip installed mcp but `import mcp` still fails in {}",
            dir.display()
        );
    }
    Ok(py)
}

/// The client: starts the server over stdio, lists its tools, makes the calls one after another
/// and records, around each call, the lengths of the witness logs (so each call's probe records
/// are known). It only transports and records; the comparisons are made in Rust.
pub const CLIENT_PY: &str = r#"import asyncio, json, os, sys, time
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

def size(p):
    try:
        return os.path.getsize(p)
    except OSError:
        return 0

def dump(x):
    return x.model_dump(mode="json", by_alias=True, exclude_none=True)

async def main(spec, out):
    s = spec["server"]
    params = StdioServerParameters(command=s["command"], args=s["args"], env=s["env"], cwd=s["cwd"])
    with open(spec["stderr"], "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (r, w):
            async with ClientSession(r, w) as session:
                init = await asyncio.wait_for(session.initialize(), spec["call_timeout"])
                out["server_info"] = dump(init.serverInfo) if getattr(init, "serverInfo", None) else None
                out["tools"] = [dump(t) for t in (await session.list_tools()).tools]
                for c in spec["calls"]:
                    before = [size(p) for p in spec["logs"]]
                    t0 = time.monotonic()
                    try:
                        res = await asyncio.wait_for(session.call_tool(c["tool"], c["arguments"]), spec["call_timeout"])
                        rec = {"ok": True, "result": dump(res)}
                    except Exception as e:
                        rec = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                    rec["elapsed_ms"] = int((time.monotonic() - t0) * 1000)
                    rec["marks"] = [[b, size(p)] for b, p in zip(before, spec["logs"])]
                    out["calls"].append(rec)
                    with open(sys.argv[2], "w") as f:
                        json.dump(out, f)

spec = json.load(open(sys.argv[1]))
out = {"calls": [], "tools": None}
try:
    asyncio.run(main(spec, out))
except BaseException as e:
    out["client_error"] = f"{type(e).__name__}: {e}"
with open(sys.argv[2], "w") as f:
    json.dump(out, f)
"#;

/// Program names linked to the probe: `argvprobe`, and `ssh` (desktop-commander rewrites a
/// command that starts with `ssh `, so the probe stands in for ssh to show that rewrite).
pub const PROBE_NAMES: &[&str] = &["argvprobe", "ssh"];

/// The private workspace of one run: a harness's ([`Sandbox`]) with the probe also standing in
/// for ssh. A login bash (desktop-commander runs `$SHELL -l -c`) reads /etc/profile, which on
/// Debian sets PATH anew, and then ~/.bash_profile: the private profile runs the witness and puts
/// the probe first on PATH again, as a user's own profile would.
fn sandbox(probe_bin: &Path) -> anyhow::Result<Sandbox> {
    let sb = Sandbox::with_links("iec-mcp-servers-", probe_bin, PROBE_NAMES)?;
    sb.probe_first_in_login_profile()?;
    Ok(sb)
}

/// The environment of the server and the direct runs: the sandbox's witnesses only (neither
/// `SHLVL` nor the bash argv witness of a harness launch).
fn sandbox_env(sb: &Sandbox) -> Vec<(String, String)> {
    sb.witness_env()
        .into_iter()
        .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
        .collect()
}

/// Runs `bash -c PAYLOAD` in the sandbox with the witnesses: the reference.
fn direct_run(sb: &Sandbox, payload: &str, timeout: Duration) -> anyhow::Result<DirectRun> {
    if payload.contains('\0') {
        return Ok(crate::launch::unrunnable(payload));
    }
    sb.truncate_logs()?;
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(payload)
        .current_dir(&sb.cwd)
        .env_clear()
        .envs(sandbox_env(sb))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("spawning bash")?;
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            let _ = child.kill();
            kill_marked(&sb.marker());
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output()?;
    let direct = DirectRun {
        bash_strings: split_bash_log(&std::fs::read(&sb.bash_log)?),
        probe: probe::parse_log(&std::fs::read(&sb.probe_log)?),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        exit_code: if timed_out { None } else { out.status.code() },
        timed_out,
    };
    sb.truncate_logs()?;
    Ok(direct)
}

/// The tool result as the client received it.
#[derive(Debug, Clone, Serialize)]
pub struct McpToolResult {
    pub is_error: bool,
    /// The text contents, joined with newlines.
    pub text: String,
}

/// One payload through the server, and directly.
#[derive(Debug, Clone, Serialize)]
pub struct McpPayloadResult {
    pub payload: String,
    /// The tool's arguments as sent (`None` when the payload has no form the schema accepts,
    /// e.g. an argv tool and a text whose direct run started no probe).
    pub arguments: Option<Value>,
    /// The probe's argv records during the call.
    pub probe: Vec<ProbeRecord>,
    /// The `$BASH_EXECUTION_STRING`s logged during the call (bash only; dash logs nothing).
    pub bash_strings: Vec<String>,
    /// The result, or `None` for a JSON-RPC error / transport failure (see `error`).
    pub tool_result: Option<McpToolResult>,
    pub error: Option<String>,
    pub elapsed_ms: u64,
    pub direct: DirectRun,
}

/// One server launch with all payloads.
#[derive(Debug, Clone, Serialize)]
pub struct McpRun {
    pub server: ServerSpec,
    pub installed: Installed,
    pub tool: String,
    /// The `tools/list` answer.
    pub tools: Value,
    pub server_info: Value,
    pub results: Vec<McpPayloadResult>,
    /// The server's stderr.
    pub stderr: String,
    pub client_error: Option<String>,
    pub elapsed_ms: u128,
}

/// Options of [`run_server`].
#[derive(Debug, Clone)]
pub struct McpRunOptions {
    pub probe: Option<PathBuf>,
    /// Per tool call (and per direct run).
    pub call_timeout: Duration,
    /// The whole client run.
    pub timeout: Duration,
}

impl Default for McpRunOptions {
    fn default() -> Self {
        McpRunOptions {
            probe: None,
            call_timeout: Duration::from_secs(30),
            timeout: Duration::from_secs(900),
        }
    }
}

/// The command tool of a `tools/list` answer and whether its `command` is an argv array.
fn command_tool(kind: ServerKind, tools: &Value) -> anyhow::Result<(String, bool)> {
    let want = match kind {
        ServerKind::DesktopCommander => "start_process",
        ServerKind::ServerCommands => "run_command",
        ServerKind::ShellServer => "shell_execute",
    };
    let t = tools
        .as_array()
        .and_then(|a| a.iter().find(|t| t["name"] == want))
        .with_context(|| format!("{} lists no tool {want:?}: {tools}", kind.name()))?;
    let ty = &t["inputSchema"]["properties"]["command"]["type"];
    match ty.as_str() {
        Some("string") => Ok((want.into(), false)),
        Some("array") => Ok((want.into(), true)),
        _ => bail!("{want}'s `command` is neither a string nor an array: {t}"),
    }
}

/// The tool arguments for `payload` in the schema's form. An argv tool gets the argv the direct
/// run built (program name = the payload's first word), with `|`, `cat` for a trailing `| cat`.
fn arguments(kind: ServerKind, argv_form: bool, payload: &str, direct: &DirectRun) -> Option<Value> {
    let command = if argv_form {
        let [rec] = direct.probe.as_slice() else {
            return None;
        };
        let prog = payload.split_whitespace().next()?;
        let mut argv = vec![prog.to_string()];
        argv.extend(rec.argv.iter().cloned());
        if payload.trim_end().ends_with("| cat") {
            argv.extend(["|".to_string(), "cat".to_string()]);
        }
        json!(argv)
    } else {
        json!(payload)
    };
    Some(match kind {
        // timeout_ms is required; the probe exits at once, so the call returns at its exit.
        ServerKind::DesktopCommander => json!({"command": command, "timeout_ms": 10000}),
        ServerKind::ServerCommands => json!({"command": command}),
        ServerKind::ShellServer => json!({"command": command, "timeout": 30}),
    })
}

/// Environment the server itself needs (beyond the sandbox's).
fn server_env(kind: ServerKind, sb: &Sandbox) -> Vec<(String, String)> {
    match kind {
        // The documented analytics kill switch.
        ServerKind::DesktopCommander => vec![("DESKTOP_COMMANDER_DISABLE_TELEMETRY".into(), "1".into())],
        ServerKind::ServerCommands => vec![],
        // Its allow-list and child environment: children get only PATH (MCP_SHELL_SAFE_PATH) and
        // the allow-listed variables.
        ServerKind::ShellServer => vec![
            ("ALLOW_COMMANDS".into(), "argvprobe,cat,ssh".into()),
            (
                "MCP_SHELL_SAFE_PATH".into(),
                format!("{}:/usr/local/bin:/usr/bin:/bin", sb.bin.display()),
            ),
            ("MCP_SHELL_CHILD_ENV_ALLOWLIST".into(), PROBE_LOG_ENV.into()),
        ],
    }
}

/// desktop-commander writes its default config into the private HOME on first start; seeding it
/// from the server's own `getDefaultConfig()` with telemetry off keeps its defaults (blocked
/// commands, `defaultShell` = `$SHELL`) and sends nothing.
fn seed_desktop_commander_config(inst: &Installed, sb: &Sandbox) -> anyhow::Result<()> {
    let module = inst
        .dir
        .join("node_modules/@wonderwhy-er/desktop-commander/dist/config-manager.js");
    let script = "import(process.argv[1]).then(m => { const c = m.configManager.getDefaultConfig(); \
                  c.telemetryEnabled = false; process.stdout.write(JSON.stringify(c)); process.exit(0); })";
    let out = Command::new("node")
        .args(["-e", script])
        .arg(&module)
        .env_clear()
        .envs(sandbox_env(sb))
        .env("DESKTOP_COMMANDER_DISABLE_TELEMETRY", "1")
        .stdin(Stdio::null())
        .output()
        .context("node")?;
    let cfg: Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "desktop-commander's getDefaultConfig(): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    let dir = sb.home.join(".claude-server-commander");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("config.json"), serde_json::to_vec_pretty(&cfg)?)?;
    Ok(())
}

/// Installs (if needed) and runs `spec` on `payloads` with the real MCP client, one server
/// launch, one tool call per payload; each payload also runs directly (first, since an argv
/// tool needs the direct run's argv).
pub fn run_server(spec: &ServerSpec, payloads: &[String], opts: &McpRunOptions) -> anyhow::Result<McpRun> {
    let inst = install(spec)?;
    let py = client_python()?;
    let sb = sandbox(&probe_or_find(&opts.probe)?)?;
    let directs: Vec<DirectRun> = payloads
        .iter()
        .map(|p| direct_run(&sb, p, opts.call_timeout))
        .collect::<anyhow::Result<_>>()?;
    if spec.kind == ServerKind::DesktopCommander {
        seed_desktop_commander_config(&inst, &sb)?;
    }

    // Phase 1: tools/list (the form of the command argument comes from the schema).
    let list = client_run(&py, &sb, &inst, spec.kind, &[], opts)?;
    let tools = list.get("tools").cloned().unwrap_or(Value::Null);
    if tools.is_null() {
        bail!(
            "{}@{}: the MCP client got no tools/list answer ({}); server stderr:\n{}",
            spec.kind.name(),
            spec.version,
            list["client_error"],
            std::fs::read_to_string(sb.root.join("server.stderr")).unwrap_or_default()
        );
    }
    let (tool, argv_form) = command_tool(spec.kind, &tools)?;

    // Phase 2: the calls.
    let args: Vec<Option<Value>> = payloads
        .iter()
        .zip(&directs)
        .map(|(p, d)| arguments(spec.kind, argv_form, p, d))
        .collect();
    let calls: Vec<Value> = args
        .iter()
        .flatten()
        .map(|a| json!({"tool": tool, "arguments": a}))
        .collect();
    let started = Instant::now();
    let out = client_run(&py, &sb, &inst, spec.kind, &calls, opts)?;
    let elapsed_ms = started.elapsed().as_millis();
    let bash_bytes = std::fs::read(&sb.bash_log).unwrap_or_default();
    let probe_bytes = std::fs::read(&sb.probe_log).unwrap_or_default();
    let recs = out["calls"].as_array().cloned().unwrap_or_default();
    let mut it = recs.into_iter();
    let mut results = Vec::new();
    for ((payload, direct), a) in payloads.iter().zip(directs).zip(args) {
        let rec = if a.is_some() { it.next() } else { None };
        let slice = |bytes: &[u8], i: usize| -> Vec<u8> {
            let m = rec.as_ref().map(|r| &r["marks"][i]);
            match m.and_then(|m| Some((m[0].as_u64()? as usize, m[1].as_u64()? as usize))) {
                Some((s, e)) => {
                    bytes[s.min(bytes.len())..e.min(bytes.len()).max(s.min(bytes.len()))].to_vec()
                }
                None => vec![],
            }
        };
        let (tool_result, error) = match &rec {
            Some(r) if r["ok"] == true => {
                let res = &r["result"];
                let text = res["content"]
                    .as_array()
                    .map(|c| {
                        c.iter()
                            .filter_map(|x| x["text"].as_str())
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                (
                    Some(McpToolResult {
                        is_error: res["isError"] == true,
                        text,
                    }),
                    None,
                )
            }
            Some(r) => (None, r["error"].as_str().map(String::from)),
            None if a.is_none() => (
                None,
                Some("no argv form: the direct run started no single probe".into()),
            ),
            None => (
                None,
                Some(format!(
                    "the client made no such call ({})",
                    out["client_error"].as_str().unwrap_or("no error reported")
                )),
            ),
        };
        results.push(McpPayloadResult {
            payload: payload.clone(),
            probe: probe::parse_log(&slice(&probe_bytes, 1)),
            bash_strings: split_bash_log(&slice(&bash_bytes, 0)),
            elapsed_ms: rec.as_ref().and_then(|r| r["elapsed_ms"].as_u64()).unwrap_or(0),
            arguments: a,
            tool_result,
            error,
            direct,
        });
    }
    Ok(McpRun {
        server: spec.clone(),
        installed: inst,
        tool,
        tools,
        server_info: out["server_info"].clone(),
        results,
        stderr: std::fs::read_to_string(sb.root.join("server.stderr")).unwrap_or_default(),
        client_error: out["client_error"].as_str().map(String::from),
        elapsed_ms,
    })
}

/// Runs the client script once; returns its output document.
fn client_run(
    py: &Path,
    sb: &Sandbox,
    inst: &Installed,
    kind: ServerKind,
    calls: &[Value],
    opts: &McpRunOptions,
) -> anyhow::Result<Value> {
    let script = sb.root.join("client.py");
    std::fs::write(&script, CLIENT_PY)?;
    let mut env: BTreeMap<String, String> = sandbox_env(sb).into_iter().collect();
    env.extend(server_env(kind, sb));
    let spec = json!({
        "server": {
            "command": inst.program,
            "args": inst.args,
            "env": env,
            "cwd": sb.cwd,
        },
        "calls": calls,
        "logs": [sb.bash_log, sb.probe_log],
        "stderr": sb.root.join("server.stderr"),
        "call_timeout": opts.call_timeout.as_secs_f64(),
    });
    let inp = sb.root.join("client-in.json");
    let outp = sb.root.join("client-out.json");
    std::fs::write(&inp, serde_json::to_vec(&spec)?)?;
    let _ = std::fs::remove_file(&outp);
    let mut child = Command::new(py)
        .arg(&script)
        .arg(&inp)
        .arg(&outp)
        .env_clear()
        .envs(sandbox_env(sb))
        .current_dir(&sb.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(sb.root.join("client.stderr"))?)
        .spawn()
        .context("starting the Python MCP client")?;
    let deadline = Instant::now() + opts.timeout;
    while child.try_wait()?.is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.wait();
    // The server and anything it left running carry the sandbox's marker.
    kill_marked(&sb.marker());
    let bytes = std::fs::read(&outp).with_context(|| {
        format!(
            "the MCP client wrote no result; its stderr:\n{}",
            std::fs::read_to_string(sb.root.join("client.stderr")).unwrap_or_default()
        )
    })?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// How two argv lists differ: a different count is an arity change, else the first differing
/// element pair is classified like a text.
pub fn argv_mechanism(intended: &[Vec<String>], received: &[Vec<String>]) -> &'static str {
    if intended.len() != received.len() {
        return "other";
    }
    for (a, b) in intended.iter().zip(received) {
        if a.len() != b.len() {
            return "arity-change";
        }
        if let Some((x, y)) = a.iter().zip(b).find(|(x, y)| x != y) {
            return iec_check::classify::mechanism(x, y).as_str();
        }
    }
    "other"
}

fn joined(recs: &[Vec<String>]) -> String {
    recs.iter()
        .map(|r| format!("{r:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether an error result is the server's own refusal (its validation), as opposed to a
/// shell or program failure after the launch. mcp-server-commands validates nothing.
pub fn is_refusal(kind: ServerKind, text: &str) -> bool {
    match kind {
        ServerKind::DesktopCommander => {
            text.starts_with("Error: Command not allowed") || text.starts_with("Error: Invalid arguments")
        }
        ServerKind::ServerCommands => false,
        // Everything but a failed exec or a failed program is a validation message.
        ServerKind::ShellServer => {
            !(text.contains("Failed to create process") || text.contains("Command failed with exit status"))
        }
    }
}

/// The observed verdict of one payload (the same document shape as Claude Code runs).
pub fn observe(kind: ServerKind, id: &str, r: &McpPayloadResult) -> Observed {
    let argvs = |recs: &[ProbeRecord]| -> Vec<Vec<String>> { recs.iter().map(|p| p.argv.clone()).collect() };
    let got = argvs(&r.probe);
    let want = argvs(&r.direct.probe);
    let rejected = r.error.is_some() || r.tool_result.as_ref().is_some_and(|t| t.is_error);
    let result_text = match (&r.tool_result, &r.error) {
        (Some(t), _) => t.text.clone(),
        (None, Some(e)) => e.clone(),
        _ => String::new(),
    };
    let (verdict, fd) = if want.is_empty() && got.is_empty() && !rejected {
        ("unknown", None)
    } else if got == want && !got.is_empty() {
        ("corresponds", None)
    } else if got.is_empty() && rejected && is_refusal(kind, &result_text) {
        // The server's own validation refused the call: nothing ran, loud.
        let fd = ObservedDivergence::refused(joined(&want), result_text);
        ("diverges", Some(fd))
    } else {
        let mechanism = argv_mechanism(&want, &got);
        let fd = ObservedDivergence::new(
            kind.change_hop(),
            mechanism,
            !rejected,
            joined(&want),
            joined(&got),
        );
        ("diverges", Some(fd))
    };
    Observed {
        id: id.to_string(),
        command: r.payload.clone(),
        verdict: verdict.into(),
        first_divergence: fd,
        received: json!({
            "arguments": r.arguments,
            "bash_strings": r.bash_strings,
            "probe": got,
            "hex": r.probe.iter().map(|p| p.hex.clone()).collect::<Vec<_>>(),
        }),
        direct: json!({
            "probe": want,
            "stdout": r.direct.stdout,
            "exit_code": r.direct.exit_code,
        }),
        tool_result: match (&r.tool_result, &r.error) {
            (Some(t), _) => json!({"is_error": t.is_error, "content": t.text}),
            (None, Some(e)) => json!({"is_error": true, "error": e}),
            _ => Value::Null,
        },
    }
}

/// Runs `payloads` through the server (one launch) and observes each.
pub fn run_observed(
    spec: &ServerSpec,
    payloads: &[Payload],
    opts: &McpRunOptions,
) -> anyhow::Result<Vec<Observed>> {
    let cmds: Vec<String> = payloads.iter().map(|p| p.command.clone()).collect();
    let run = run_server(spec, &cmds, opts)?;
    if let Some(e) = &run.client_error {
        bail!(
            "{}@{}: the MCP client failed: {e}; server stderr:\n{}",
            spec.kind.name(),
            spec.version,
            run.stderr
        );
    }
    Ok(payloads
        .iter()
        .zip(&run.results)
        .map(|(p, r)| observe(spec.kind, &p.id, r))
        .collect())
}

/// Totals: payloads, changed (diverges), refused (the server's own loud `tool-input` refusal),
/// silent changes, unknown, and the count per mechanism of the changes that are not refusals.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub payloads: usize,
    pub changed: usize,
    pub refused: usize,
    pub silent: usize,
    pub unknown: usize,
    pub mechanisms: BTreeMap<String, usize>,
}

pub fn summarize(observed: &[Observed]) -> Summary {
    let mut s = Summary {
        payloads: observed.len(),
        changed: 0,
        refused: 0,
        silent: 0,
        unknown: 0,
        mechanisms: BTreeMap::new(),
    };
    for o in observed {
        match (o.verdict.as_str(), &o.first_divergence) {
            ("diverges", Some(f)) => {
                s.changed += 1;
                if f.silent {
                    s.silent += 1;
                }
                if f.hop_name == Hop::ToolInput.name() {
                    s.refused += 1;
                } else {
                    *s.mechanisms.entry(f.mechanism.clone()).or_default() += 1;
                }
            }
            ("unknown", _) => s.unknown += 1,
            _ => {}
        }
    }
    s
}

/// The `iec harness run --format json` document for an MCP server.
pub fn run_document(spec: &ServerSpec, observed: &[Observed]) -> Value {
    json!({
        "harness": spec.kind.name(),
        "version": spec.version,
        "payloads": observed,
        "summary": summarize(observed),
    })
}

/// A one-line summary: `server@version: changed of total (refused, silent, mechanisms)`.
pub fn summary_line(spec: &ServerSpec, s: &Summary) -> String {
    let mech: Vec<String> = s.mechanisms.iter().map(|(k, v)| format!("{k} {v}")).collect();
    format!(
        "{}@{}: {} of {} changed ({} refused by the server, {} silent; mechanisms: {}), {} unknown",
        spec.kind.name(),
        spec.version,
        s.changed,
        s.payloads,
        s.refused,
        s.silent,
        if mech.is_empty() {
            "-".into()
        } else {
            mech.join(", ")
        },
        s.unknown
    )
}
