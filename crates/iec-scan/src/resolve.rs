//! Which launch a logged call ran on: the harness, version, OS and tool the log records, handed
//! to the catalog's own resolution ([`iec_launches::resolve::resolve`], the one that
//! `iec check --harness HARNESS@VERSION` uses: a version inside a launch's `versions` range, or
//! between two ranges of the same launch). A call whose version (or OS, or tool) no launch
//! covers is reported as uncovered with the catalog's reason, never mapped to a neighbour;
//! `--launch ID` overrides.

use iec_launches::resolve::resolve as resolve_version;
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
pub fn harness_name(h: &str) -> &str {
    match h {
        "claude" | "claude-code" => "claude-code",
        "codex" | "codex-cli" => "codex",
        "gemini" | "gemini-cli" => "gemini-cli",
        "openhands" | "openhands-sdk" => "openhands",
        other => other,
    }
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
    match resolve_version(catalog, harness, os, version, Some(&call.tool)) {
        // The catalog picks by version; a launch of another tool (Claude Code's PowerShell
        // beside its Bash) does not run this call.
        Ok((l, _)) if l.tool != call.tool => Resolution::Uncovered(format!(
            "{harness}@{version} on {os} resolves to {}, a launch of tool {}, not {} (pass --launch ID to choose one)",
            l.id, l.tool, call.tool
        )),
        Ok((l, _)) => Resolution::Launch(l.id.clone()),
        Err(e) => Resolution::Uncovered(e.to_string()),
    }
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
        let cat = Catalog::hand_written();
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
    fn other_versions_are_uncovered_with_the_catalogs_reason() {
        // The hand-written launches only: the sweep's learned launches fill the gaps below.
        let cat = Catalog::hand_written();
        let uncovered = |c: &LoggedCall| match resolve(&cat, c, None) {
            Resolution::Uncovered(why) => why,
            r => panic!("{c:?}: {r:?}"),
        };
        // Between 2.0.76 and 2.1.72 (different launches), below the lowest range, not semver.
        for v in ["2.1.100", "2.0.14", "1.0.128"] {
            let why = uncovered(&call("claude-code", Some(v), Some("linux"), "Bash"));
            assert!(
                why.starts_with(&format!(
                    "claude-code@{v} on linux is in no learned version range"
                )),
                "{why}"
            );
            assert!(why.contains("2.1.72 (claude-code-2.1.72-linux)"), "{why}");
        }
        assert!(
            uncovered(&call("claude-code", Some("2.1"), Some("linux"), "Bash")).contains("is not a version")
        );
        assert!(
            uncovered(&call("claude-code", Some("2.1.72"), Some("macos"), "Bash"))
                .starts_with("no launch of claude-code on macos has version ranges")
        );
        assert!(
            uncovered(&call("codex", Some("0.89.0"), Some("linux"), "exec_command"))
                .starts_with("codex@0.89.0 on linux is in no learned version range")
        );
        assert!(
            uncovered(&call("gemini-cli", None, Some("linux"), "run_shell_command"))
                .contains("no gemini-cli version")
        );
        assert!(uncovered(&call("openhands", None, None, "terminal")).contains("no openhands version"));
        // Claude Code 2.1.263 on Windows is learned for Git Bash only: a PowerShell call of that
        // version is not run by the Bash launch.
        let why = uncovered(&call(
            "claude-code",
            Some("2.1.263"),
            Some("windows"),
            "PowerShell",
        ));
        assert!(
            why.contains("resolves to claude-code-git-bash-windows, a launch of tool Bash, not PowerShell"),
            "{why}"
        );
        assert_eq!(
            resolve(
                &cat,
                &call("claude-code", Some("2.1.263"), Some("windows"), "Bash"),
                None
            ),
            Resolution::Launch("claude-code-git-bash-windows".into())
        );
        let old = call("claude-code", Some("2.0.14"), Some("linux"), "Bash");
        assert_eq!(
            resolve(&cat, &old, Some("bash-c")),
            Resolution::Launch("bash-c".into())
        );
    }

    #[test]
    fn a_learned_launch_takes_the_versions_it_was_learned_on() {
        let cat = Catalog::builtin();
        let learned: Vec<_> = cat.iter().filter(|l| l.learned()).collect();
        assert!(!learned.is_empty(), "the built-in catalog holds learned launches");
        for l in learned {
            for v in &l.learned_on {
                let c = call(&l.harness, Some(v), Some(&l.os), &l.tool);
                assert_eq!(resolve(&cat, &c, None), Resolution::Launch(l.id.clone()), "{v}");
            }
        }
    }

    /// A catalog whose Claude Code 2.1.72 launch holds `versions` (a launch file replacing
    /// the built-in one, as `--launch-file` does).
    fn with_ranges(versions: &str) -> Catalog {
        let text = include_str!("../../iec-launches/launches/claude-code-2.1.72-linux.toml").replace(
            "versions = [[\"2.1.72\", \"2.1.72\"]]",
            &format!("versions = {versions}"),
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("l.toml");
        std::fs::write(&f, text).unwrap();
        let mut cat = Catalog::hand_written();
        cat.add_file(&f).unwrap();
        cat
    }

    #[test]
    fn a_version_inside_a_range_or_between_ranges_of_one_launch_takes_it() {
        let c = |v: &str| call("claude-code", Some(v), Some("linux"), "Bash");
        let cat = with_ranges(r#"[["2.1.60", "2.1.64"], ["2.1.70", "2.1.80"]]"#);
        for v in ["2.1.60", "2.1.62", "2.1.66", "2.1.75", "2.1.80"] {
            assert_eq!(
                resolve(&cat, &c(v), None),
                Resolution::Launch("claude-code-2.1.72-linux".into()),
                "{v}"
            );
        }
        // Past the last range, the next one is another launch's: not mapped.
        for v in ["2.1.81", "2.1.200", "2.1.59"] {
            assert!(
                matches!(resolve(&cat, &c(v), None), Resolution::Uncovered(_)),
                "{v}"
            );
        }
    }
}
