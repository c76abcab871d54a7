//! The Claude Code driver: installs a pinned `@anthropic-ai/claude-code` from npm and runs it
//! headless (`claude -p go --dangerously-skip-permissions`) against the replay server's Messages
//! API, with a PreToolUse hook that records what the harness hands a hook (and, optionally, a
//! hook of the caller's that may decide). The launch itself is [`crate::launch`]'s.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agree::RunSpec;
pub use crate::launch::{
    find_probe, harness_cache_dir, kill_marked, parse_argv_log, DirectRun, HarnessRun, LaunchOptions,
    Launcher, PayloadResult, BASH_ARGV_LOG_ENV, BASH_ENV_SCRIPT, BASH_LOG_ENV,
};
use crate::launch::{launch, Driver, Invocation, Sandbox};
use crate::npm;
use crate::probe;

/// Options for [`run_claude_code_with`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Version, binary, payloads (one Bash tool call each, all in one launch), timeout (60 s by
    /// default), probe and thinking time.
    pub launch: LaunchOptions,
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
}

impl RunOptions {
    pub fn new(version: &str, bin: Option<PathBuf>, payloads: &[&str]) -> Self {
        let mut launch = LaunchOptions::new(version, bin, payloads);
        launch.timeout = Duration::from_secs(60);
        RunOptions {
            launch,
            hook_witness: true,
            hook_command: None,
        }
    }

    /// One launch of `commands` as `spec` says (see [`LaunchOptions::for_spec`]), with the
    /// recording hook.
    pub fn for_spec(spec: &RunSpec, commands: &[&str]) -> Self {
        RunOptions {
            launch: LaunchOptions::for_spec(spec, commands),
            hook_witness: true,
            hook_command: None,
        }
    }
}

/// Runs Claude Code `version` (installed from npm unless `bin` is given) on `payloads`.
pub fn run_claude_code(
    version: &str,
    bin: Option<PathBuf>,
    payloads: &[&str],
) -> anyhow::Result<Vec<PayloadResult>> {
    Ok(run_claude_code_with(&RunOptions::new(version, bin, payloads))?.results)
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
    // First without optional dependencies (a pure-JS release needs none); a native release keeps
    // its binary in an optional platform package, so a second pass installs those.
    let (dir, spec) = npm::pinned_harness("Claude Code", "@anthropic-ai/claude-code", version)?;
    npm::install_cached(
        &dir,
        &spec,
        &[&["--omit=optional"], &[]],
        installed_launcher,
        "neither cli.js nor a platform binary exists",
    )
}

/// Claude Code's part of a launch: its hooks, its flags and its API's environment.
struct ClaudeCode<'a> {
    hook_witness: bool,
    hook_command: Option<&'a str>,
    permissions: Permissions,
}

/// How the launch lets the Bash tool run without asking (headless, nobody answers a prompt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Permissions {
    /// `--dangerously-skip-permissions` (as root with `IS_SANDBOX=1`, which the versions from
    /// 1.0.44 on honour).
    Bypass,
    /// `--allowedTools Bash`: an allow rule for the whole tool, what a root user of a version
    /// that refuses the bypass flag as root whatever the environment (1.0.0 to 1.0.43) has.
    AllowBash,
}

/// What Claude Code prints when it refuses the bypass flag as root.
const ROOT_REFUSAL: &str = "--dangerously-skip-permissions cannot be used with root/sudo privileges";

impl Driver for ClaudeCode<'_> {
    fn prepare(&self, sb: &Sandbox, base_url: &str) -> anyhow::Result<Invocation> {
        install_hooks(sb, self.hook_witness, self.hook_command)?;
        // Releases before the shell snapshot (1.0.44 to 1.0.6x) run `bash -c -l`: a login
        // shell, whose `/etc/profile` sets PATH anew and loses the probe.
        sb.probe_first_in_login_profile()?;
        Ok(Invocation {
            args: ["-p", "go"]
                .iter()
                .chain(match self.permissions {
                    Permissions::Bypass => &["--dangerously-skip-permissions"][..],
                    Permissions::AllowBash => &["--allowedTools", "Bash"][..],
                })
                .chain(&["--output-format", "stream-json", "--verbose"])
                .map(OsString::from)
                .collect(),
            env: vec![
                ("ANTHROPIC_BASE_URL", base_url.into()),
                ("ANTHROPIC_API_KEY", "sk-test".into()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
                ("DISABLE_AUTOUPDATER", "1".into()),
                ("IS_SANDBOX", "1".into()),
                // 2.1.69 defers every tool, Bash too, behind its ToolSearch tool (the model
                // would load Bash first); `false` is the user's setting that offers the tools
                // themselves, as every other version does by default.
                ("ENABLE_TOOL_SEARCH", "false".into()),
            ],
        })
    }

    /// The wrapper evals the command.
    fn is_wrapper(&self, text: &str) -> bool {
        text.contains("eval")
    }
}

/// Writes `~/.claude/settings.json` with one PreToolUse hook for `Bash`: the recorder of its
/// stdin (when `witness`), then `extra` (a hook that may decide) in the same command.
fn install_hooks(sb: &Sandbox, witness: bool, extra: Option<&str>) -> anyhow::Result<()> {
    let dir = sb.home.join(".claude");
    std::fs::create_dir_all(&dir)?;
    let mut hooks = Vec::new();
    // The sandbox path is a tempdir name (alphanumeric), so plain single quotes suffice.
    let recorder = format!(
        "'{}' '{}'",
        sb.bin.join(probe::HOOK_RECORDER_NAME).display(),
        sb.hook_log.display()
    );
    match (witness, extra) {
        (true, None) => {
            hooks.push(serde_json::json!({"type": "command", "command": recorder, "timeout": 30}));
        }
        (witness, Some(extra)) => {
            // A group keeps the hook's own exit status and stdout (its decision) and records
            // what it says on stderr (a hook that fails open says why there).
            let decide = format!("{{ {extra}\n}} 2>>'{}'", sb.hook_stderr.display());
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

/// Runs one harness launch with all payloads, then each payload directly. With
/// `--dangerously-skip-permissions`, unless this version refused it as root before; a version
/// that refuses it (it asked the model nothing) is launched again with `--allowedTools Bash`.
pub fn run_claude_code_with(opts: &RunOptions) -> anyhow::Result<HarnessRun> {
    static REFUSES_BYPASS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let key = format!("{}|{:?}", opts.launch.version, opts.launch.bin);
    let known = REFUSES_BYPASS.lock().unwrap().contains(&key);
    let mut driver = ClaudeCode {
        hook_witness: opts.hook_witness,
        hook_command: opts.hook_command.as_deref(),
        permissions: if known {
            Permissions::AllowBash
        } else {
            Permissions::Bypass
        },
    };
    let run = launch(&opts.launch, install_claude_code, &driver)?;
    if known || !refused_bypass_as_root(&run) {
        return Ok(run);
    }
    REFUSES_BYPASS.lock().unwrap().push(key);
    driver.permissions = Permissions::AllowBash;
    launch(&opts.launch, install_claude_code, &driver)
}

/// The launch ended on the root refusal of the bypass flag before any request.
fn refused_bypass_as_root(run: &HarnessRun) -> bool {
    run.requests.is_empty() && run.stderr.contains(ROOT_REFUSAL)
}
