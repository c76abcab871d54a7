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

use std::ffi::OsString;
use std::path::Path;

use serde_json::{json, Value};

use crate::agree::{observe, Observed, Payload, RunSpec};
use crate::launch::{
    launch, Driver, HarnessRun, Invocation, LaunchOptions, Launcher, PayloadResult, Sandbox,
};
use crate::npm;

/// The Codex version the tests and the launch files are about.
pub const CODEX_VERSION: &str = "0.171.0";

/// Options for [`run_codex_with`]: those of every launch (two minutes by default).
pub type CodexOptions = LaunchOptions;

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
    let scope = dir.join("node_modules/@openai");
    // The platform package (`@openai/codex-linux-x64`: `bin/codex` in 0.171, `codex/codex` in
    // 0.12x), else the binary vendored in the main package itself (up to 0.7x), else the one
    // beside its `bin/codex.js` (`bin/codex-<triple>`, 0.20 to 0.40).
    [
        scope.join(pkg).join("vendor").join(triple).join("bin/codex"),
        scope.join(pkg).join("vendor").join(triple).join("codex/codex"),
        scope.join("codex/vendor").join(triple).join("codex/codex"),
        scope.join("codex/bin").join(format!("codex-{triple}")),
    ]
    .into_iter()
    .find(|b| b.is_file())
    .map(|b| Launcher::for_bin(&b))
}

/// Installs `@openai/codex@<version>` (with its optional platform package, which holds the
/// native binary) into `~/.cache/iec/harnesses/codex-<ver>` (reused when present), scripts not
/// run, and returns how to launch the native binary.
pub fn install_codex(version: &str) -> anyhow::Result<Launcher> {
    let missing = format!(
        "neither its platform package @openai/{} nor its own vendor directory has a native binary (a release of the TypeScript CLI, which iec does not drive, or of another layout)",
        target_triple().0
    );
    let (dir, spec) = npm::pinned_harness("Codex", "@openai/codex", version)?;
    npm::install_cached(&dir, &spec, &[&[]], installed_codex, &missing)
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

/// The command output inside a Codex tool output: after its `Output:` line, or the `output` of
/// the JSON envelope older releases send (`{"output": "…", "metadata": {"exit_code": …}}`, read
/// from Codex 0.42.0's requests); the whole text otherwise.
pub fn output_text(content: &str) -> String {
    if let Some(i) = content.find("\nOutput:\n") {
        return content[i + "\nOutput:\n".len()..].to_string();
    }
    if let Some(rest) = content.strip_prefix("Output:\n") {
        return rest.to_string();
    }
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(content) {
        if let (Some(Value::String(out)), Some(Value::Object(_)), 2) =
            (o.get("output"), o.get("metadata"), o.len())
        {
            return out.clone();
        }
    }
    content.to_string()
}

/// Codex's part of a launch: its private `CODEX_HOME` and login profile, `codex exec`.
struct Codex<'a> {
    /// The version driven.
    version: &'a str,
}

/// Whether Codex `version` is the native CLI's 0.1.x pre-release (0.1.2505291658): its `codex
/// exec` has no `--json`, and it takes sandbox permissions instead of a sandbox mode.
fn pre_release_exec(version: &str) -> bool {
    version.starts_with("0.1.")
}

/// Whether Codex `version` sends only a turn's new items with the previous response's id
/// (`previous_response_id`, the Responses API's stored conversation), unless
/// `disable_response_storage = true` asks it to send the whole conversation each turn: 0.8.0
/// did (the replay server stores nothing, and its second turn never came). The native
/// releases from 0.20.0 on send the whole conversation.
fn stores_responses(version: &str) -> bool {
    use iec_launches::resolve::Version;
    Version::parse(version)
        .zip(Version::parse("0.20.0"))
        .is_some_and(|(v, whole)| v < whole)
}

impl Driver for Codex<'_> {
    fn prepare(&self, sb: &Sandbox, base_url: &str) -> anyhow::Result<Invocation> {
        // Codex snapshots a login bash, and a login bash's /etc/profile may reset PATH.
        sb.probe_first_in_login_profile()?;
        let codex_home = sb.root.join("codex-home");
        std::fs::create_dir_all(&codex_home)?;
        // Top-level keys go before the first table of the file.
        let mut config = config_toml(base_url);
        let mut args: Vec<OsString> = ["exec", "--skip-git-repo-check", "--json", "-C"]
            .map(OsString::from)
            .to_vec();
        if stores_responses(self.version) {
            config = config.replacen("\n[", "\ndisable_response_storage = true\n\n[", 1);
        }
        if pre_release_exec(self.version) {
            args.retain(|a| a != "--json");
            config = config.replacen(
                "\n[",
                "\nsandbox_permissions = [\"disk-full-read-access\", \"disk-full-write-access\", \"network-full-access\"]\n\n[",
                1,
            );
        }
        std::fs::write(codex_home.join("config.toml"), &config)?;
        args.extend([sb.run_dir.clone().into(), "go".into()]);
        Ok(Invocation {
            args,
            env: vec![
                ("CODEX_HOME", codex_home.into()),
                ("OPENAI_API_KEY", "sk-test".into()),
            ],
        })
    }

    fn command_of(&self, args: &Value) -> Option<String> {
        command_of(args)
    }

    /// Codex's snapshot wrapper: it ends in `exec '/bin/bash' -c '…'`.
    fn is_wrapper(&self, text: &str) -> bool {
        text.contains("__CODEX_SNAPSHOT") && text.contains("exec '")
    }
}

/// Runs one `codex exec` with all payloads, then each payload directly.
pub fn run_codex_with(opts: &CodexOptions) -> anyhow::Result<HarnessRun> {
    launch(
        opts,
        install_codex,
        &Codex {
            version: &opts.version,
        },
    )
}

/// The observed verdict of one Codex result: as [`observe`], with the tool result's command
/// output (after Codex's `Output:` header) compared for payloads that are not probe calls.
pub fn observe_codex(id: &str, r: &PayloadResult) -> Observed {
    let mut trimmed = r.clone();
    if let Some(t) = &mut trimmed.tool_result {
        t.content = output_text(&t.content);
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
    crate::harness::run_observed(&crate::harness::CODEX, spec, payloads)
}

/// The `iec harness run` document for Codex.
pub fn run_document(version: &str, observed: &[Observed]) -> Value {
    json!({"harness": "codex", "version": version, "payloads": observed})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_native_binary_is_found_in_either_layout() {
        let (pkg, triple) = target_triple();
        assert!(installed_codex(tempfile::tempdir().unwrap().path()).is_none());
        // Up to 0.7x vendored in the main package; the platform package's `codex/codex` in 0.12x
        // and `bin/codex` later.
        for (package, inner) in [("codex", "codex/codex"), (pkg, "codex/codex"), (pkg, "bin/codex")] {
            let dir = tempfile::tempdir().unwrap();
            let bin = dir
                .path()
                .join("node_modules/@openai")
                .join(package)
                .join("vendor")
                .join(triple)
                .join(inner);
            std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
            std::fs::write(&bin, "").unwrap();
            assert!(installed_codex(dir.path()).is_some(), "{}", bin.display());
        }
    }

    #[test]
    fn output_and_command() {
        let c = "Chunk ID: f95de3\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 12\nOutput:\nhi\n";
        assert_eq!(output_text(c), "hi\n");
        // Codex 0.42.0's envelope.
        let c = r#"{"output":"{\"argv\":[\"B1\"]}\n","metadata":{"exit_code":0,"duration_seconds":0.0}}"#;
        assert_eq!(output_text(c), "{\"argv\":[\"B1\"]}\n");
        // Any other JSON is the output itself.
        let c = r#"{"output":"x","other":1}"#;
        assert_eq!(output_text(c), c);
        assert_eq!(command_of(&json!({"cmd": "ls"})).as_deref(), Some("ls"));
        assert_eq!(
            command_of(&json!({"command": ["bash", "-lc", "ls -l"]})).as_deref(),
            Some("ls -l")
        );
    }
}
