//! Which launch a logged call ran on: the harness, version, OS and tool the log records,
//! matched against the launch catalog. A call whose version (or OS) no launch covers is
//! reported as uncovered with the reason, never mapped to a neighbour; `--launch ID` overrides.
//!
//! This is the one place that maps a harness version to a launch; when the catalog resolves
//! `harness@version` itself, this function is what changes.

use iec_launches::Catalog;

use crate::call::LoggedCall;

/// The launch of a call, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The launch id.
    Launch(String),
    /// No launch covers the call: why.
    Uncovered(String),
}

/// The catalog's name of a harness as logs (and ATIF's `agent.name`) write it.
fn harness_name(h: &str) -> &str {
    match h {
        "claude" | "claude-code" => "claude-code",
        "codex" | "codex-cli" => "codex",
        "gemini" | "gemini-cli" => "gemini-cli",
        "openhands" | "openhands-sdk" => "openhands",
        other => other,
    }
}

/// Claude Code 1.0.x and 2.0.x render the command as 2.0.76 does (the `claude-code-2.0.76`
/// rendering); the launch of that version stands for them when the catalog has one.
fn version_family(harness: &str, version: &str) -> Option<&'static str> {
    (harness == "claude-code" && (version.starts_with("1.0.") || version.starts_with("2.0.")))
        .then_some("2.0.76")
}

/// Resolves the launch of `call` (`launch`: the `--launch` override).
pub fn resolve(catalog: &Catalog, call: &LoggedCall, launch: Option<&str>) -> Resolution {
    if let Some(id) = launch {
        return Resolution::Launch(id.to_string());
    }
    let harness = harness_name(&call.harness);
    let Some(version) = call.version.as_deref() else {
        return Resolution::Uncovered(format!(
            "the log records no {harness} version (pass --launch ID to choose one)"
        ));
    };
    let Some(os) = call.os.as_deref() else {
        return Resolution::Uncovered(format!(
            "the log records no OS for {harness} {version} (pass --launch ID to choose one)"
        ));
    };
    let family = version_family(harness, version);
    let matches = |l: &&iec_launches::Launch| {
        l.harness == harness
            && l.os == os
            && l.tool == call.tool
            && (l.version == version || Some(l.version.as_str()) == family)
    };
    if let Some(l) = catalog.iter().find(matches) {
        return Resolution::Launch(l.id.clone());
    }
    let known: Vec<String> = catalog
        .iter()
        .filter(|l| l.harness == harness)
        .map(|l| format!("{} ({} {} {})", l.id, l.version, l.os, l.tool))
        .collect();
    Resolution::Uncovered(if known.is_empty() {
        format!("no launch of {harness} in the catalog")
    } else {
        format!(
            "no launch covers {harness} {version} on {os} with tool {}; the catalog has {}",
            call.tool,
            known.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::Outcome;

    fn call(harness: &str, version: Option<&str>, os: Option<&str>, tool: &str) -> LoggedCall {
        LoggedCall {
            file: "f".into(),
            line: 1,
            session: "s".into(),
            harness: harness.into(),
            version: version.map(String::from),
            os: os.map(String::from),
            cwd: None,
            timestamp: None,
            sidechain: false,
            tool: tool.into(),
            input: serde_json::json!({"command": "ls"}),
            command: "ls".into(),
            outcome: Outcome::default(),
        }
    }

    #[test]
    fn known_versions_map_to_their_launch() {
        let cat = Catalog::builtin();
        let r = |c: &LoggedCall| resolve(&cat, c, None);
        assert_eq!(
            r(&call("claude-code", Some("2.1.72"), Some("linux"), "Bash")),
            Resolution::Launch("claude-code-2.1.72-linux".into())
        );
        assert_eq!(
            r(&call("claude-code", Some("2.1.332"), Some("linux"), "Bash")),
            Resolution::Launch("claude-code-2.1.332-linux".into())
        );
        assert_eq!(
            r(&call("codex", Some("0.171.0"), Some("linux"), "exec_command")),
            Resolution::Launch("codex-exec-command-linux".into())
        );
        assert_eq!(
            r(&call("codex", Some("0.171.0"), Some("linux"), "shell")),
            Resolution::Launch("codex-shell-linux".into())
        );
        assert_eq!(
            r(&call(
                "gemini",
                Some("0.61.0"),
                Some("linux"),
                "run_shell_command"
            )),
            Resolution::Launch("gemini-cli-linux".into())
        );
    }

    #[test]
    fn other_versions_are_uncovered_not_mapped() {
        let cat = Catalog::builtin();
        for c in [
            call("claude-code", Some("2.1.100"), Some("linux"), "Bash"),
            call("claude-code", Some("2.1.72"), Some("macos"), "Bash"),
            call("codex", Some("0.89.0"), Some("linux"), "exec_command"),
            call("gemini-cli", None, Some("linux"), "run_shell_command"),
            call("openhands", None, None, "terminal"),
        ] {
            assert!(
                matches!(resolve(&cat, &c, None), Resolution::Uncovered(_)),
                "{c:?}"
            );
        }
        let old = call("claude-code", Some("2.0.14"), Some("linux"), "Bash");
        let has_2076 = cat
            .iter()
            .any(|l| l.harness == "claude-code" && l.version == "2.0.76" && l.os == "linux");
        assert_eq!(
            matches!(resolve(&cat, &old, None), Resolution::Launch(_)),
            has_2076
        );
        assert_eq!(
            resolve(&cat, &old, Some("bash-c")),
            Resolution::Launch("bash-c".into())
        );
    }
}
