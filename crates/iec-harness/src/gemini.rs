//! The Gemini CLI driver: installs a pinned `@google/gemini-cli` from npm, runs it headless
//! (`gemini -p go --yolo`) against the replay server's Gemini API with witnesses, and runs each
//! payload directly with `bash -c` as the reference.
//!
//! **Redirection.** The bundled `@google/genai` client takes its base URL from
//! `GOOGLE_GEMINI_BASE_URL` (`createContentGenerator` in the bundle's core chunk: when the
//! content-generator config has no `baseUrl`, the env variable is validated with `new URL` and
//! passed as `httpOptions.baseUrl`). Requests then go to
//! `<base>/v1beta/models/<model>:streamGenerateContent?alt=sse` with `x-goog-api-key`.
//! `GOOGLE_GEMINI_BASE_URL` alone makes the auth type `gateway`, which the CLI's own
//! `validateAuthMethod` refuses in headless mode ("Invalid auth method selected."), so the
//! private `~/.gemini/settings.json` selects `security.auth.selectedType = "gemini-api-key"` and
//! `GEMINI_API_KEY` is a dummy. `GEMINI_CLI_TRUST_WORKSPACE=true` trusts the scratch directory
//! (an untrusted folder overrides `--yolo` to the default approval mode, and headless runs then
//! cannot run shell commands). An explicit model (`-m`) skips the routing classifier request.
//!
//! What Gemini CLI 0.61.0 runs (BASH_ENV witness and `strace -f -e execve`): per call,
//! `["<bash on PATH, absolute>", "-c", "shopt -u promptvars nullglob extglob nocaseglob dotglob;
//! _bgpids_file=<TMPDIR>/gemini-shell-XXXXXX/bgpids.tmp\n(\n  trap 'jobs -p >
//! \"$_bgpids_file\"' EXIT\n<cmd>\n)\n__code=$?\nexit $__code"]` through `child_process`
//! (no PTY in headless mode). `<cmd>` is the call's `command` after `stripShellWrapper` and
//! `trim()` (a trailing `\` gets a space). A command with `$(`, a backtick, `<(` or `>(` outside
//! single quotes is not run: the tool answers "Command injection detected: …".

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use iec_core::Hop;
use serde_json::{json, Value};

use crate::agree::{join_argvs, observe, Observed, ObservedDivergence, Payload, RunSpec};
use crate::gemini_api::shell_output;
use crate::launch::{
    command_field, launch, Driver, HarnessRun, Invocation, LaunchOptions, Launcher, PayloadResult, Sandbox,
};
use crate::npm;

/// The Gemini CLI version the tests and the launch file are about.
pub const GEMINI_CLI_VERSION: &str = "0.61.0";

/// The model named on the command line (any name works against the replay server; naming one
/// skips the `auto` router's classifier request).
pub const DEFAULT_MODEL: &str = "gemini-2.5-flash";

/// The start of the text Gemini CLI's shell tool answers instead of running a command that
/// contains command substitution.
pub const SUBSTITUTION_REFUSAL: &str = "Command injection detected";

/// Options for [`run_gemini_with`].
#[derive(Debug, Clone)]
pub struct GeminiOptions {
    /// Version, binary (a prebuilt `gemini.js`, the package's `bundle/gemini.js`), payloads
    /// (all in one `gemini -p` run: Gemini CLI stops a prompt after 100 model turns), timeout
    /// (two minutes by default), probe and thinking time.
    pub launch: LaunchOptions,
    /// `-m MODEL`; `None` leaves the CLI's default (`auto`, which first asks a classifier).
    pub model: Option<String>,
}

impl GeminiOptions {
    pub fn new(version: &str, bin: Option<PathBuf>, payloads: &[&str]) -> Self {
        GeminiOptions {
            launch: LaunchOptions::new(version, bin, payloads),
            model: Some(DEFAULT_MODEL.to_string()),
        }
    }

    /// One launch of `commands` as `spec` says (see [`LaunchOptions::for_spec`]), on
    /// [`DEFAULT_MODEL`].
    pub fn for_spec(spec: &RunSpec, commands: &[&str]) -> Self {
        GeminiOptions {
            launch: LaunchOptions::for_spec(spec, commands),
            model: Some(DEFAULT_MODEL.to_string()),
        }
    }
}

/// The launcher inside an installed `gemini-cli-<ver>` directory, if complete: the script the
/// package's `bin.gemini` names (`bundle/gemini.js`; `dist/index.js` in the 0.1.x releases,
/// which are not bundled), run by node.
pub fn installed_gemini_cli(dir: &Path) -> Option<Launcher> {
    let pkg = dir.join("node_modules/@google/gemini-cli");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(pkg.join("package.json")).ok()?).ok()?;
    let bin = match &manifest["bin"] {
        Value::String(s) => s.clone(),
        b => b["gemini"].as_str()?.to_string(),
    };
    let js = pkg.join(bin);
    js.is_file().then(|| Launcher::for_bin(&js))
}

/// Installs `@google/gemini-cli@<version>` into `~/.cache/iec/harnesses/gemini-cli-<ver>`
/// (reused when present), scripts not run (its optional `node-pty` packages are only used for
/// interactive shells), and returns how to launch it.
pub fn install_gemini_cli(version: &str) -> anyhow::Result<Launcher> {
    let (dir, spec) = npm::pinned_harness("Gemini CLI", "@google/gemini-cli", version)?;
    npm::install_cached(
        &dir,
        &spec,
        &[&[]],
        installed_gemini_cli,
        "it has no script at its package.json's `bin.gemini`",
    )
}

/// The private `~/.gemini/settings.json`: API-key auth (the key is a dummy, the base URL is the
/// replay server's), no usage statistics, telemetry or update checks. Versions before 0.3.0
/// read the first, flat settings schema (`selectedAuthType`, `usageStatisticsEnabled` at the
/// top); 0.3.0 and later the nested one, and migrate a file with flat keys on disk. Usage
/// statistics must be off: 0.1.1 sends them to `play.googleapis.com` at start and dies of the
/// unhandled rejection when that name does not resolve (offline).
pub fn settings_json(version: &str) -> Value {
    let flat = iec_launches::resolve::Version::parse(version)
        .zip(iec_launches::resolve::Version::parse("0.3.0"))
        .is_some_and(|(v, nested)| v < nested);
    if flat {
        return json!({
            "selectedAuthType": "gemini-api-key",
            "usageStatisticsEnabled": false,
            "telemetry": {"enabled": false},
            "disableAutoUpdate": true,
        });
    }
    json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
    })
}

/// The command text of a call's echoed arguments.
pub fn command_of(args: &Value) -> Option<String> {
    command_field(args)
}

/// Gemini CLI's part of a launch: its settings, `gemini -p go --yolo`, its API's environment.
struct GeminiCli<'a> {
    model: Option<&'a str>,
    /// The version driven (which settings schema it reads).
    version: &'a str,
}

impl Driver for GeminiCli<'_> {
    fn prepare(&self, sb: &Sandbox, base_url: &str) -> anyhow::Result<Invocation> {
        let gemini_dir = sb.home.join(".gemini");
        std::fs::create_dir_all(&gemini_dir)?;
        std::fs::write(
            gemini_dir.join("settings.json"),
            serde_json::to_string_pretty(&settings_json(self.version))?,
        )?;
        let mut args: Vec<OsString> = ["-p", "go", "--yolo"].map(OsString::from).to_vec();
        if let Some(m) = self.model {
            args.extend(["-m".into(), m.into()]);
        }
        Ok(Invocation {
            args,
            env: vec![
                ("GOOGLE_GEMINI_BASE_URL", base_url.into()),
                ("GEMINI_API_KEY", "replay-key".into()),
                ("GEMINI_CLI_TRUST_WORKSPACE", "true".into()),
            ],
        })
    }

    /// Gemini CLI's wrapper sets `_bgpids_file`.
    fn is_wrapper(&self, text: &str) -> bool {
        text.contains("_bgpids_file=")
    }

    /// Gemini CLI 0.1.19–0.1.21 end a headless session (status 1) when a tool call throws, as
    /// a command refused for command substitution does: the call is never answered, and the
    /// harness writes `Error executing tool run_shell_command: MESSAGE` on stderr.
    fn ended_on_call(&self, stderr: &str) -> Option<String> {
        const SAID: &str = "Error executing tool ";
        let said = &stderr[stderr.rfind(SAID)? + SAID.len()..];
        Some(said.split_once(": ")?.1.trim_end().to_string())
    }
}

/// Runs one `gemini -p` with all payloads, then each payload directly (a new `gemini -p` in the
/// same sandbox after a call the harness ended its session on: [`Driver::ended_on_call`]).
pub fn run_gemini_with(opts: &GeminiOptions) -> anyhow::Result<HarnessRun> {
    let driver = GeminiCli {
        model: opts.model.as_deref(),
        version: &opts.launch.version,
    };
    launch(&opts.launch, install_gemini_cli, &driver)
}

/// The command text inside Gemini CLI's wrapper (between the `trap … EXIT` line and the closing
/// `)`): what the harness made of the emitted command.
pub fn wrapped_command(outer: &str) -> Option<&str> {
    const OPEN: &str = "  trap 'jobs -p > \"$_bgpids_file\"' EXIT\n";
    const CLOSE: &str = "\n)\n__code=$?\nexit $__code";
    let start = outer.find(OPEN)? + OPEN.len();
    let end = outer.rfind(CLOSE)?;
    outer.get(start..end)
}

/// The observed verdict of one Gemini CLI result: a call the shell tool refused for command
/// substitution diverges at `tool-input` (other, loud); otherwise as [`observe`], with the
/// command's output (inside `Output: …`, before the trailer lines) compared for payloads that
/// are not probe calls, and a change attributed to `harness-rewrite` when the command inside the
/// wrapper is not the emitted text (stripShellWrapper, trim).
pub fn observe_gemini(id: &str, r: &PayloadResult) -> Observed {
    let mut trimmed = r.clone();
    if let Some(t) = &mut trimmed.tool_result {
        t.content = shell_output(&t.content).output;
    }
    let mut o = observe(id, &trimmed);
    let rewritten = r
        .outer
        .as_deref()
        .and_then(wrapped_command)
        .is_some_and(|c| c != r.payload);
    if let Some(fd) = &mut o.first_divergence {
        if rewritten {
            fd.hop_name = Hop::HarnessRewrite.name().into();
        }
    }
    if let Some(t) = &r.tool_result {
        let so = shell_output(&t.content);
        o.tool_result = json!({"is_error": t.is_error, "content": t.content, "output": so.output,
                               "exit_code": so.exit_code});
        if !so.recognized && t.content.contains(SUBSTITUTION_REFUSAL) && r.probe.is_empty() {
            o.verdict = "diverges".into();
            o.first_divergence = Some(ObservedDivergence::refused(
                join_argvs(&r.direct.probe),
                t.content.clone(),
            ));
        }
    }
    o
}

/// Runs `payloads` through real Gemini CLI in batches (one `gemini -p` per batch; one batch must
/// fit in one prompt, see [`crate::harness::GEMINI_CLI`]) and observes each; a call without a tool
/// result is an error.
pub fn run_observed(spec: &RunSpec, payloads: &[Payload]) -> anyhow::Result<Vec<Observed>> {
    crate::harness::run_observed_checked(&crate::harness::GEMINI_CLI, spec, payloads, |p, r, run| {
        anyhow::ensure!(
            r.tool_result.is_some(),
            "Gemini CLI {} sent no tool result for {:?}; stderr:\n{}",
            spec.version,
            p.command,
            run.stderr
        );
        Ok(())
    })
}

/// The `iec harness run` document for Gemini CLI.
pub fn run_document(version: &str, observed: &[Observed]) -> Value {
    json!({"harness": "gemini-cli", "version": version, "payloads": observed})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launcher_is_the_script_package_json_names() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("node_modules/@google/gemini-cli");
        std::fs::create_dir_all(pkg.join("dist")).unwrap();
        // 0.1.x: not bundled, `bin` points into `dist/`.
        std::fs::write(
            pkg.join("package.json"),
            r#"{"bin": {"gemini": "dist/index.js"}}"#,
        )
        .unwrap();
        assert!(
            installed_gemini_cli(dir.path()).is_none(),
            "the script is not there yet"
        );
        std::fs::write(pkg.join("dist/index.js"), "").unwrap();
        assert!(installed_gemini_cli(dir.path()).is_some());
        // A `bin` string, and a manifest that is not JSON.
        std::fs::write(pkg.join("package.json"), r#"{"bin": "bundle/gemini.js"}"#).unwrap();
        assert!(installed_gemini_cli(dir.path()).is_none());
        std::fs::write(pkg.join("package.json"), "{").unwrap();
        assert!(installed_gemini_cli(dir.path()).is_none());
    }
}
