//! Choosing a launch by harness version (`--harness claude-code@VER`), the version ranges
//! `iec launches` lists, and the hook choosing its launch from the calling Claude Code's
//! transcript (issue 19).

mod support;

use serde_json::Value;

fn run(exe: &str, args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    support::run_env(exe, args, stdin, &[("IEC_DAEMON", "0")])
}

fn iec(args: &[&str]) -> (i32, String, String) {
    run(env!("CARGO_BIN_EXE_iec"), args, b"")
}

const BANG: &str = "printf '%s' 'a != b'";

#[test]
fn a_version_in_a_range_picks_its_launch() {
    for (spec, id, code) in [
        ("claude-code@2.1.72", "claude-code-2.1.72-linux", 1),
        ("claude-code@2.1.332", "claude-code-2.1.332-linux", 0),
        ("claude-code@2.0.76", "claude-code-2.0.76-linux", 1),
    ] {
        let (c, out, err) = iec(&["check", "--harness", spec, "--command", BANG, "--format", "json"]);
        assert_eq!((c, err.as_str()), (code, ""), "{spec}: {out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["launch"], id, "{spec}");
    }
    let (c, out, _) = iec(&["repair", "--harness", "claude-code@2.1.72", "--command", BANG]);
    assert_eq!(c, 0);
    assert_eq!(
        out,
        "claude-code-2.1.72-linux: deliver repaired (ansi-c-eval at hop eval)\n  eval $'printf \\x27\\x25s\\x27 \\x27a \\x21= b\\x27'\n"
    );
}

#[test]
fn a_version_outside_every_range_is_an_error_that_lists_them() {
    // 0.2.9 is published, below every range the catalog sweep learns (from 1.0.0 on).
    let (c, out, err) = iec(&["check", "--harness", "claude-code@0.2.9", "--command", BANG]);
    assert_eq!((c, out.as_str()), (2, ""));
    assert!(
        err.starts_with(
            "iec: claude-code@0.2.9 on linux is in no learned version range; the ranges there are: "
        ),
        "{err}"
    );
    assert!(
        err.contains(" 2.0.76 (claude-code-2.0.76-linux), ")
            && err.contains(", 2.1.332 (claude-code-2.1.332-linux)"),
        "{err}"
    );
    assert!(
        err.ends_with(
            ". Learn it with `iec harness learn --harness claude-code@0.2.9 --out FILE` and pass the file with --launch-file\n"
        ),
        "{err}"
    );
    let (c, _, err) = iec(&["repair", "--harness", "claude-code@2.1.400", "--command", BANG]);
    assert_eq!(c, 2);
    assert!(
        err.starts_with("iec: claude-code@2.1.400 on linux is in no learned version range"),
        "{err}"
    );
    let (c, _, err) = iec(&["check", "--harness", "claude-code", "--command", BANG]);
    assert_eq!(
        (c, err.as_str()),
        (2, "iec: --harness takes HARNESS@VERSION (claude-code@2.1.72, codex@0.171.0, gemini-cli@0.61.0), got \"claude-code\"\n")
    );
    let (c, _, err) = iec(&["check", "--harness", "claude-code@latest", "--command", BANG]);
    assert_eq!(
        (c, err.as_str()),
        (2, "iec: \"latest\" is not a version (MAJOR.MINOR.PATCH)\n")
    );
    let (c, _, err) = iec(&["check", "--harness", "nosuch@1.0.0", "--command", BANG]);
    assert_eq!(
        (c, err.as_str()),
        (2, "iec: no launch of nosuch on linux has version ranges; `iec launches` lists the launches (choose one with --launch)\n")
    );
}

#[test]
fn several_launches_for_one_version_are_told_apart_by_tool_or_refused() {
    let (c, _, err) = iec(&["check", "--harness", "codex@0.171.0", "--command", "ls"]);
    assert_eq!(
        (c, err.as_str()),
        (2, "iec: codex@0.171.0 on linux has 3 launches: codex-exec-command-linux, codex-shell-command-linux, codex-shell-linux; choose one with --launch\n")
    );
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("call.json");
    std::fs::write(&f, r#"{"tool":"exec_command","input":{"cmd":"ls"}}"#).unwrap();
    let (c, out, err) = iec(&[
        "check",
        "--harness",
        "codex@0.171.0",
        "--call-json",
        f.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!((c, err.as_str()), (0, ""));
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["launch"],
        "codex-exec-command-linux"
    );
    // Windows is chosen with --os; Claude Code there has one launch with a version range.
    let (c, out, _) = iec(&[
        "check",
        "--harness",
        "claude-code@2.1.263",
        "--os",
        "windows",
        "--command",
        "ls",
        "--format",
        "json",
    ]);
    assert_eq!(c, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["launch"],
        "claude-code-git-bash-windows"
    );
}

#[test]
fn between_two_ranges_of_one_launch_resolves_to_it_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("l.toml");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../iec-launches/launches/claude-code-2.1.72-linux.toml"
    ))
    .unwrap()
    .replace("id = \"claude-code-2.1.72-linux\"", "id = \"split\"")
    .replace(
        "versions = [[\"2.1.72\", \"2.1.72\"]]",
        "versions = [[\"0.2.10\", \"0.2.20\"], [\"0.2.30\", \"0.2.40\"]]",
    );
    std::fs::write(&f, text).unwrap();
    let file = f.to_str().unwrap();
    let (c, out, err) = iec(&[
        "check",
        "--harness",
        "claude-code@0.2.25",
        "--launch-file",
        file,
        "--command",
        BANG,
        "--format",
        "json",
    ]);
    assert_eq!(c, 1);
    assert_eq!(
        err,
        "iec: claude-code@0.2.25 is between 0.2.20 and 0.2.30, both learned as split; using it\n"
    );
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["launch"], "split");
    // Between ranges of two different launches: an error.
    let (c, _, err) = iec(&[
        "check",
        "--harness",
        "claude-code@0.2.50",
        "--launch-file",
        file,
        "--command",
        BANG,
    ]);
    assert_eq!(c, 2);
    assert!(
        err.contains("0.2.10..0.2.20 (split), 0.2.30..0.2.40 (split), "),
        "{err}"
    );
    // A range that ends before it starts is refused when the file is read.
    std::fs::write(
        &f,
        std::fs::read_to_string(&f)
            .unwrap()
            .replace("[\"0.2.10\", \"0.2.20\"]", "[\"0.2.20\", \"0.2.10\"]"),
    )
    .unwrap();
    let (c, _, err) = iec(&["launches", "--launch-file", file]);
    assert_eq!(
        (c, err.as_str()),
        (
            2,
            "iec: launch split: version range [\"0.2.20\", \"0.2.10\"] ends before it starts\n"
        )
    );
    // A version learned on lies inside a range.
    std::fs::write(
        &f,
        std::fs::read_to_string(&f)
            .unwrap()
            .replace("[\"0.2.20\", \"0.2.10\"]", "[\"0.2.10\", \"0.2.20\"]")
            .replace("\nos = ", "\nlearned_on = [\"0.2.10\", \"0.2.25\"]\nos = "),
    )
    .unwrap();
    let (c, _, err) = iec(&["launches", "--launch-file", file]);
    assert_eq!(
        (c, err.as_str()),
        (
            2,
            "iec: launch split: learned_on names \"0.2.25\", which no range of versions holds\n"
        )
    );
}

#[test]
fn launches_json_gives_harness_and_versions() {
    let (c, out, _) = iec(&["launches", "--format", "json"]);
    assert_eq!(c, 0);
    let v: Vec<Value> = serde_json::from_str(&out).unwrap();
    let get = |id: &str| v.iter().find(|l| l["id"] == id).unwrap().clone();
    let l = get("claude-code-2.1.72-linux");
    assert_eq!(
        (l["harness"].clone(), l["versions"].clone()),
        ("claude-code".into(), serde_json::json!([["2.1.72", "2.1.72"]]))
    );
    assert_eq!(l["version"], "2.1.72");
    assert_eq!(get("bash-c")["versions"], serde_json::json!([]));
}

/// The acceptance test of issue 19: the real hook binary, no `--launch`, a transcript shaped as
/// Claude Code writes it (JSONL records carrying `version`).
#[test]
fn the_hook_without_launch_follows_the_transcripts_version() {
    let d = tempfile::tempdir().unwrap();
    let doc = |transcript: &std::path::Path| {
        serde_json::json!({
            "session_id": "s1", "transcript_path": transcript, "cwd": "/", "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": BANG, "description": "d"}, "tool_use_id": "toolu_1"
        })
        .to_string()
    };
    let transcript = |version: &str| {
        let p = d.path().join(format!("{version}.jsonl"));
        let rec = |t: &str, extra: &str| {
            format!(
                r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/","sessionId":"s1","version":"{version}","gitBranch":"","type":"{t}","uuid":"u"{extra}}}"#
            )
        };
        let text = [
            rec("user", r#","message":{"role":"user","content":"print it"}"#),
            rec("assistant", r#","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"x"}}]}"#),
        ]
        .join("\n")
            + "\n";
        std::fs::write(&p, text).unwrap();
        p
    };
    for exe in [
        env!("CARGO_BIN_EXE_iec"),
        env!("CARGO_BIN_EXE_iec").replace("/iec", "/iec-hook").as_str(),
    ] {
        if !std::path::Path::new(exe).is_file() {
            // iec-hook is another package's binary; `cargo build -p iec-hook` puts it beside iec.
            assert!(exe.ends_with("iec"), "{exe} missing");
            continue;
        }
        let (c, out, err) = run(
            exe,
            &["hook", "claude-code"],
            doc(&transcript("2.1.72")).as_bytes(),
        );
        assert_eq!((c, err.as_str()), (0, ""), "{exe}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "allow");
        assert_eq!(
            v["hookSpecificOutput"]["updatedInput"]["command"],
            "eval $'printf \\x27\\x25s\\x27 \\x27a \\x21= b\\x27'"
        );
        let (c, out, err) = run(
            exe,
            &["hook", "claude-code"],
            doc(&transcript("2.1.332")).as_bytes(),
        );
        assert_eq!((c, out.as_str(), err.as_str()), (0, "", ""), "{exe}");
        // A version with no launch, and none on both sides alike: through, and why on stderr.
        let (c, out, err) = run(
            exe,
            &["hook", "claude-code"],
            doc(&transcript("0.2.9")).as_bytes(),
        );
        assert_eq!((c, out.as_str()), (0, ""));
        assert!(
            err.starts_with("iec hook: Claude Code 0.2.9 (from its transcript): claude-code@0.2.9 on linux is in no learned version range;")
                && err.ends_with("; the call is passed through unchanged (give --launch to choose one)\n"),
            "{err}"
        );
        // No transcript and no Claude Code among the processes: through, and why.
        let (c, out, err) = run(
            exe,
            &["hook", "claude-code"],
            doc(&d.path().join("none.jsonl")).as_bytes(),
        );
        assert_eq!((c, out.as_str()), (0, ""));
        assert!(
            err.starts_with("iec hook: no Claude Code version in the last 256 KiB of the transcript"),
            "{err}"
        );
    }
}

#[test]
fn docs_history_is_what_iec_launches_history_prints() {
    // docs/history.md: its 4 header lines, then the generated table; regenerate with
    // `{ head -4 docs/history.md; iec launches --history; } > docs/history.md`.
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/history.md")).unwrap();
    let generated: String = page.split_inclusive('\n').skip(4).collect();
    let (c, out, err) = iec(&["launches", "--history"]);
    assert_eq!((c, err.as_str()), (0, ""));
    assert!(
        out == generated,
        "docs/history.md is stale: regenerate it from `iec launches --history`"
    );
}
