//! The Codex driver: installs a pinned `@openai/codex` from npm, runs its native binary headless
//! (`codex exec`) against the replay server's Responses API with witnesses, and runs each
//! payload directly with `bash -c` as the reference.
//!
//! What Codex 0.171.0 does with a shell call (seen with these witnesses and `strace -f`): the
//! model's tool is `exec_command` with a string `cmd`. At session start Codex runs
//! `/bin/bash -lc <snapshot script>` once (a login shell: `/etc/profile`, `~/.bash_profile`) and
//! saves its functions, options, aliases and exports. Each call is then
//! `["/bin/bash", "-c", WRAPPER]` (not a login shell), where WRAPPER sources the snapshot,
//! restores Codex's own variables and ends in `exec '/bin/bash' -c '<cmd>'` (the text in single
//! quotes, `'` as `'"'"'`); that second bash receives the text unchanged. Codex's own display
//! says `/bin/bash -lc "<cmd>"`, which is not the argv it runs.
//!
//! The private `CODEX_HOME/config.toml` selects a provider whose `base_url` is the replay
//! server, `approval_policy = "never"`, `sandbox_mode = "danger-full-access"` (commands run as
//! they would unsandboxed), `shell_environment_policy.inherit = "all"`, and switches off
//! what would reach the network (plugins and their `git ls-remote` of github.com, apps,
//! analytics, feedback, update checks, web search): `strace -e connect` then shows connections to
//! 127.0.0.1 only.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::agree::{observe, Observed, Payload, RunSpec};
use crate::driver::{
    direct_run, find_probe, harness_cache_dir, replay_with_marks, run_bounded, split_bash_log, turn_windows,
    HarnessRun, Launcher, LogMark, PayloadResult, Sandbox,
};
use crate::npm;
use crate::probe;
use crate::server::{ReplayHandle, ToolResult};

/// The Codex version the tests and the launch files are about.
pub const CODEX_VERSION: &str = "0.171.0";

/// Options for [`run_codex_with`].
#[derive(Debug, Clone)]
pub struct CodexOptions {
    pub version: String,
    /// A prebuilt native `codex` binary (or `codex.js`); `None` installs the pinned npm package.
    pub bin: Option<PathBuf>,
    /// The payloads, one shell tool call each, all in one `codex exec`.
    pub payloads: Vec<String>,
    /// Bound for the Codex process (and, separately, each direct run).
    pub timeout: Duration,
    /// The argv probe program; `None` finds it as [`find_probe`] does.
    pub probe: Option<PathBuf>,
    /// The replay model's thinking time before each tool call.
    pub think: Duration,
}

impl CodexOptions {
    pub fn new(version: &str, bin: Option<PathBuf>, payloads: &[&str]) -> Self {
        CodexOptions {
            version: version.to_string(),
            bin,
            payloads: payloads.iter().map(|s| s.to_string()).collect(),
            timeout: Duration::from_secs(120),
            probe: None,
            think: Duration::ZERO,
        }
    }
}

fn target_triple() -> (&'static str, &'static str) {
    match std::env::consts::ARCH {
        "aarch64" => ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
        _ => ("codex-linux-x64", "x86_64-unknown-linux-musl"),
    }
}

/// The native binary inside an installed `codex-<ver>` directory, if complete. The npm package's
/// `bin/codex.js` only finds this file and `execve`s it; running it directly needs no node.
pub fn installed_codex(dir: &Path) -> Option<Launcher> {
    let (pkg, triple) = target_triple();
    let bin = dir
        .join("node_modules/@openai")
        .join(pkg)
        .join("vendor")
        .join(triple)
        .join("bin/codex");
    bin.is_file().then(|| Launcher::for_bin(&bin))
}

/// Installs `@openai/codex@<version>` (with its optional platform package, which holds the
/// native binary) into `~/.cache/iec/harnesses/codex-<ver>` (reused when present), scripts not
/// run, and returns how to launch the native binary.
pub fn install_codex(version: &str) -> anyhow::Result<Launcher> {
    npm::check_version("Codex", version)?;
    let missing = format!(
        "its platform package @openai/{} has no native binary",
        target_triple().0
    );
    npm::install_cached(
        &harness_cache_dir()?.join(format!("codex-{version}")),
        &format!("@openai/codex@{version}"),
        &[&[]],
        installed_codex,
        &missing,
    )
}

/// The private `config.toml`: the replay server as the only provider, commands run without
/// approval or sandbox, nothing else on the network.
pub fn config_toml(base_url: &str) -> String {
    format!(
        r#"# iec-harness: Codex against the replay server
model = "replay"
model_provider = "replay"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
web_search = "disabled"

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
tool_suggest = false
skill_mcp_dependency_install = false
in_app_updates = false

[shell_environment_policy]
inherit = "all"

[model_providers.replay]
name = "replay"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
"#
    )
}

/// The command text of a call's arguments: `cmd` or `command` (a string, or the script of a
/// `["bash", "-lc", TEXT]` argv).
pub fn command_of(args: &Value) -> Option<String> {
    if let Some(s) = args.get("cmd").and_then(Value::as_str) {
        return Some(s.to_string());
    }
    match args.get("command")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => a.last()?.as_str().map(String::from),
        _ => None,
    }
}

/// The text the first bash of a call received: Codex's snapshot wrapper (it ends in
/// `exec '/bin/bash' -c '…'`), else the first string that mentions the payload's first word.
fn pick_outer(strings: &[String], payload: &str) -> Option<String> {
    if let Some(s) = strings
        .iter()
        .find(|s| s.contains("__CODEX_SNAPSHOT") && s.contains("exec '"))
    {
        return Some(s.clone());
    }
    let first_word = payload.split_whitespace().next().unwrap_or("");
    strings
        .iter()
        .find(|s| !first_word.is_empty() && s.contains(first_word))
        .cloned()
}

/// The command output inside a Codex tool output (after its `Output:` line); the whole text when
/// there is no such line.
pub fn output_text(content: &str) -> &str {
    if let Some(i) = content.find("\nOutput:\n") {
        return &content[i + "\nOutput:\n".len()..];
    }
    content.strip_prefix("Output:\n").unwrap_or(content)
}

/// Runs one `codex exec` with all payloads, then each payload directly.
pub fn run_codex_with(opts: &CodexOptions) -> anyhow::Result<HarnessRun> {
    let launcher = match &opts.bin {
        Some(b) => Launcher::for_bin(b),
        None => install_codex(&opts.version)?,
    };
    let probe = match &opts.probe {
        Some(p) => p.clone(),
        None => find_probe()?,
    };
    let sb = Arc::new(Sandbox::new(&probe)?);
    // Codex snapshots a login bash, and a login bash's /etc/profile may reset PATH (Debian's
    // does): the private profile puts the probe first again, as a user's profile would.
    std::fs::write(
        sb.home.join(".bash_profile"),
        format!(
            "# iec-harness login witness\nPATH='{}':\"$PATH\"; export PATH\n. '{}'\n",
            sb.bin.display(),
            sb.bash_env.display()
        ),
    )?;

    let (marks, server) = replay_with_marks(&sb, &opts.payloads, opts.think)?;
    let codex_home = sb.root.join("codex-home");
    std::fs::create_dir_all(&codex_home)?;
    std::fs::write(codex_home.join("config.toml"), config_toml(&server.base_url()))?;

    let mut cmd = Command::new(&launcher.program);
    cmd.args(&launcher.prefix_args)
        .args(["exec", "--skip-git-repo-check", "--json", "-C"])
        .arg(&sb.cwd)
        .arg("go")
        .current_dir(&sb.cwd)
        .env_clear()
        .envs(sb.env())
        .env("CODEX_HOME", &codex_home)
        .env("OPENAI_API_KEY", "sk-test");
    replayed_run(
        cmd,
        &sb,
        server,
        &marks,
        launcher,
        &opts.version,
        &opts.payloads,
        opts.timeout,
        command_of,
        pick_outer,
    )
}

/// Runs a harness command against the replay server and assembles its [`HarnessRun`]: each
/// payload's turn window of the witness logs, the tool result and echoed command the server
/// recorded, and the direct `bash -c` reference run. Shared by the Codex and Gemini CLI drivers,
/// which differ in how they start the harness, where its command sits in a call and which
/// logged string is its wrapper.
#[allow(clippy::too_many_arguments)]
pub(crate) fn replayed_run(
    cmd: Command,
    sb: &Sandbox,
    server: ReplayHandle,
    marks: &Mutex<Vec<Option<LogMark>>>,
    launcher: Launcher,
    version: &str,
    payloads: &[String],
    timeout: Duration,
    command_of: fn(&Value) -> Option<String>,
    pick_outer: fn(&[String], &str) -> Option<String>,
) -> anyhow::Result<HarnessRun> {
    let started = Instant::now();
    let fin = run_bounded(cmd, &sb.tmp, "harness", timeout, &sb.marker())?;
    let elapsed_ms = started.elapsed().as_millis();
    let requests = server.requests();
    let unknown_paths = server.unknown_paths();
    let n = payloads.len();
    let tool_results: Vec<Option<ToolResult>> = (0..n).map(|k| server.tool_result(k)).collect();
    let echoed: Vec<Option<String>> = (0..n)
        .map(|k| server.echoed_input(k).as_ref().and_then(command_of))
        .collect();
    server.shutdown();

    let (bash_bytes, probe_bytes) = sb.read_logs();
    let bash_argvs = sb.bash_argvs();
    let marks = marks.lock().unwrap().clone();
    let parts = turn_windows(&marks, &bash_bytes, &probe_bytes, n);
    let mut results = Vec::new();
    for (k, ((strings, probes), tool_result)) in parts.into_iter().zip(tool_results).enumerate() {
        let payload = payloads[k].clone();
        let direct = direct_run(sb, &payload, k, timeout)?;
        results.push(PayloadResult {
            outer: pick_outer(&strings, &payload),
            emitted: payload.clone(),
            echoed: echoed[k].clone(),
            hook_input: None,
            payload,
            bash_strings: strings,
            probe: probes,
            tool_result,
            direct,
        });
    }
    Ok(HarnessRun {
        version: version.to_string(),
        launcher,
        results,
        exit_code: fin.exit_code,
        timed_out: fin.timed_out,
        elapsed_ms,
        stdout: fin.stdout,
        stderr: fin.stderr,
        requests,
        unknown_paths,
        bash_log: split_bash_log(&bash_bytes),
        probe_log: probe::parse_log(&probe_bytes),
        bash_argvs,
        hook_log: vec![],
        hook_stderr: String::new(),
    })
}

/// The observed verdict of one Codex result: as [`observe`], with the tool result's command
/// output (after Codex's `Output:` header) compared for payloads that are not probe calls.
pub fn observe_codex(id: &str, r: &PayloadResult) -> Observed {
    let mut trimmed = r.clone();
    if let Some(t) = &mut trimmed.tool_result {
        t.content = output_text(&t.content).to_string();
    }
    let mut o = observe(id, &trimmed);
    if let Some(t) = &r.tool_result {
        o.tool_result = json!({"is_error": t.is_error, "content": t.content,
                               "output": output_text(&t.content)});
    }
    o
}

/// Runs `payloads` through real Codex in batches (one `codex exec` per batch) and observes each.
pub fn run_observed(spec: &RunSpec, payloads: &[Payload]) -> anyhow::Result<Vec<Observed>> {
    let mut out = Vec::new();
    for chunk in payloads.chunks(spec.batch.max(1)) {
        let cmds: Vec<&str> = chunk.iter().map(|p| p.command.as_str()).collect();
        let mut opts = CodexOptions::new(&spec.version, spec.bin.clone(), &cmds);
        opts.timeout = spec.timeout + spec.think * chunk.len() as u32;
        opts.probe = spec.probe.clone();
        opts.think = spec.think;
        let run = run_codex_with(&opts)?;
        anyhow::ensure!(
            !run.timed_out,
            "Codex {} timed out on a batch of {}; stderr:\n{}",
            spec.version,
            chunk.len(),
            run.stderr
        );
        for (p, r) in chunk.iter().zip(&run.results) {
            out.push(observe_codex(&p.id, r));
        }
    }
    Ok(out)
}

/// The `iec harness run` document for Codex.
pub fn run_document(version: &str, observed: &[Observed]) -> Value {
    json!({"harness": "codex", "version": version, "payloads": observed})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_and_command() {
        let c = "Chunk ID: f95de3\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 12\nOutput:\nhi\n";
        assert_eq!(output_text(c), "hi\n");
        assert_eq!(command_of(&json!({"cmd": "ls"})).as_deref(), Some("ls"));
        assert_eq!(
            command_of(&json!({"command": ["bash", "-lc", "ls -l"]})).as_deref(),
            Some("ls -l")
        );
    }
}
