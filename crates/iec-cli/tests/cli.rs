//! The `iec` binary: exit codes, JSON shapes and inputs, as a user sees them.

mod support;

use serde_json::Value;
use std::process::{Command, Stdio};

fn iec(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    iec_env(args, stdin, &[])
}

fn iec_env(args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> (i32, String, String) {
    support::run_env(env!("CARGO_BIN_EXE_iec"), args, stdin, env)
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not one JSON document ({e}): {s}"))
}

#[test]
fn check_exit_codes_and_json() {
    let (code, out, _) = iec(
        &[
            "check",
            "--launch",
            "claude-code-2.1.72-linux",
            "--command",
            "printf '%s' 'a != b'",
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 1);
    let v = json(&out);
    assert_eq!(v["launch"], "claude-code-2.1.72-linux");
    assert_eq!(v["verdict"], "diverges");
    assert_eq!(v["exposed"], true);
    assert_eq!(v["exposure"], serde_json::json!(["escape-sequences"]));
    let fd = &v["first_divergence"];
    assert_eq!(fd["hop_name"], "eval");
    assert_eq!(fd["kind"], "eval-parse");
    assert_eq!(fd["mechanism"], "re-expansion");
    assert_eq!(fd["silent"], true);
    assert_eq!(fd["intended"], "printf '%s' 'a != b' < /dev/null");
    assert_eq!(fd["received"], "printf '%s' 'a \\!= b' < /dev/null");
    assert!(fd["diff"].as_str().unwrap().contains("[-\"\" +\"\\\\\"]!= b"));
    for h in v["hops"].as_array().unwrap() {
        for k in ["name", "kind", "witness", "corresponds", "receipt"] {
            assert!(h.get(k).is_some(), "hop lacks {k}: {h}");
        }
    }

    let (code, out, _) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--command",
            "echo hi",
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 0);
    assert_eq!(json(&out)["first_divergence"], Value::Null);

    let (code, out, _) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--command",
            "echo 'x",
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 3);
    let v = json(&out);
    assert_eq!(v["verdict"], "unknown");
    assert!(v["reason"].as_str().unwrap().starts_with("generation:"));
    // bash 5.2 abandons a malformed `[[ … ]]` with status 0 (`bash -n` too): not a text that
    // parses. It was `corresponds` on every launch before.
    for launch in ["bash-c", "claude-code-2.1.332-linux", "mcp-shell-server"] {
        for text in ["[[|a", "echo a\n[[ ]]\necho b"] {
            let (code, out, _) = iec(
                &["check", "--launch", launch, "--command", text, "--format", "json"],
                b"",
            );
            let v = json(&out);
            assert_eq!(
                (code, v["verdict"].as_str(), v["attribution"].as_str()),
                (3, Some("unknown"), Some("generation")),
                "{launch} {text:?}"
            );
        }
    }

    let (code, _, err) = iec(&["check", "--launch", "no-such-launch", "--command", "x"], b"");
    assert_eq!(code, 2);
    assert!(err.contains("no launch \"no-such-launch\""), "{err}");
    let (code, _, _) = iec(&["check", "--launch", "bash-c"], b"");
    assert_eq!(code, 2, "a call source is required");
}

#[test]
fn check_all_launches_prints_one_verdict_each() {
    let (code, out, _) = iec(
        &[
            "check",
            "--launch",
            "all",
            "--command",
            "printf '%s' 'a != b'",
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 1);
    let v = json(&out);
    let (_, list, _) = iec(&["launches", "--format", "json"], b"");
    let ids: Vec<String> = json(&list)
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_string())
        .collect();
    let got: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["launch"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, ids);
}

#[test]
fn launches_lists_the_required_ids_with_hops() {
    let (code, out, _) = iec(&["launches", "--format", "json"], b"");
    assert_eq!(code, 0);
    let v = json(&out);
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    for id in [
        "bash-c",
        "bash-lc",
        "sh-c",
        "claude-code-2.1.332-linux",
        "claude-code-2.1.72-linux",
        "codex-shell-linux",
        "codex-shell-command-linux",
        "gemini-cli-linux",
        "goose-linux",
        "opencode-linux",
        "mcp-shell-server",
    ] {
        assert!(ids.contains(&id), "{id} missing");
    }
    for l in v.as_array().unwrap() {
        for k in ["id", "harness", "version", "os", "hops"] {
            assert!(l.get(k).is_some(), "{k}");
        }
        assert_eq!(
            l["hops"][0],
            serde_json::json!({"name": "tool-input", "kind": "structured-decode"})
        );
    }
}

#[test]
fn inputs_call_json_command_file_and_launch_file() {
    let dir = tempfile::tempdir().unwrap();
    let call = dir.path().join("call.json");
    std::fs::write(&call, r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"printf '%s' 'a != b'","description":"d"}}"#).unwrap();
    let (code, _, _) = iec(
        &[
            "check",
            "--launch",
            "claude-code-2.1.72-linux",
            "--call-json",
            call.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(code, 1);
    std::fs::write(&call, "{\"command\": \"echo hi\"").unwrap();
    let (code, _, err) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--call-json",
            call.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(code, 2);
    assert!(err.contains("not valid JSON"), "{err}");

    let f = dir.path().join("cmd.txt");
    std::fs::write(&f, b"printf a\r\nprintf b").unwrap();
    let (code, out, _) = iec(
        &[
            "check",
            "--launch",
            "claude-code-2.1.332-linux",
            "--command-file",
            f.to_str().unwrap(),
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 1);
    assert_eq!(json(&out)["first_divergence"]["kind"], "structured-decode");
    std::fs::write(&f, b"echo \xff").unwrap();
    let (code, _, err) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--command-file",
            f.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(code, 2);
    assert!(err.contains("not UTF-8") && err.contains("offset 5"), "{err}");
    std::fs::write(&f, b"echo a\0b").unwrap();
    let (code, out, _) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--command-file",
            f.to_str().unwrap(),
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 3);
    assert!(json(&out)["reason"]
        .as_str()
        .unwrap()
        .contains("NUL byte at offset 6"));

    let lf = dir.path().join("mine.toml");
    std::fs::write(&lf, "id = \"my-sh\"\nharness = \"me\"\nversion = \"1\"\nos = \"linux\"\nsource = \"test\"\n[spawn]\nargv = [\"/bin/sh\", \"-c\", \"{{wrapper}}\"]\nshell = \"dash\"\n").unwrap();
    let (code, out, _) = iec(
        &[
            "check",
            "--launch",
            "my-sh",
            "--launch-file",
            lf.to_str().unwrap(),
            "--command",
            "echo {a,b}",
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 1);
    assert_eq!(json(&out)["first_divergence"]["mechanism"], "arity-change");
    std::fs::write(&lf, "id = \"bad\"\nnope = 1\n").unwrap();
    let (code, _, err) = iec(&["launches", "--launch-file", lf.to_str().unwrap()], b"");
    assert_eq!(code, 2);
    assert!(err.contains("launch file"), "{err}");
}

#[test]
fn receive_and_render_windows() {
    let (code, out, _) = iec(&["receive", "msvcrt"], br#"a.exe "a b" c\\"d"#);
    assert_eq!(code, 0);
    assert_eq!(json(&out)["argv"], serde_json::json!(["a.exe", "a b", "c\\d"]));
    let (code, out, _) = iec(&["render", "rust-std"], br#"["a b", "c\"d", "e\\"]"#);
    assert_eq!(code, 0);
    assert_eq!(json(&out)["command_line"], "\"a b\" c\\\"d e\\");
    let (code, out, _) = iec(
        &["receive", "cmd", "--env", "X=hi"],
        b"cmd /d /s /c \"echo %X% & echo two\"\necho three",
    );
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["stdout"], "hi \ntwo\n");
    let (code, _, err) = iec(&["receive", "nope"], b"");
    assert_eq!(code, 2);
    assert!(err.contains("receivers: msvcrt"), "{err}");
}

#[test]
fn argvprobe_records_argv() {
    let (code, out, _) = iec(&["argvprobe", "a b", "-x", "é"], b"");
    assert_eq!(code, 0);
    assert_eq!(json(&out)["argv"], serde_json::json!(["a b", "-x", "é"]));
}

#[test]
fn demo_runs_on_defaults() {
    let (code, out, _) = iec(&["demo", "--format", "json"], b"");
    assert_eq!(code, 0);
    let v = json(&out);
    let bang = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["call"] == "bang-in-quotes")
        .unwrap();
    let on = |id: &str| {
        bang["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["launch"] == id)
            .unwrap()["verdict"]
            .clone()
    };
    assert_eq!(on("claude-code-2.1.72-linux"), "diverges");
    assert_eq!(on("claude-code-2.1.332-linux"), "corresponds");
    assert_eq!(on("bash-c"), "corresponds");
}

/// The demo matrix, whole: `tests/golden/demo.txt` (`IEC_UPDATE_GOLDEN=1` writes it), and the
/// README shows exactly that output.
#[test]
fn demo_matrix_is_the_golden_file_and_the_readme_shows_it() {
    let (code, out, _) = iec(&["demo"], b"");
    assert_eq!(code, 0);
    let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/demo.txt");
    if std::env::var_os("IEC_UPDATE_GOLDEN").is_some() {
        std::fs::write(golden, &out).unwrap();
    }
    let want = std::fs::read_to_string(golden).unwrap();
    assert_eq!(
        out, want,
        "iec demo changed (IEC_UPDATE_GOLDEN=1 rewrites tests/golden/demo.txt)"
    );
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    assert!(
        readme.contains(&format!("```\n{want}```")),
        "the README's demo output is not tests/golden/demo.txt"
    );
}

#[test]
fn repair_exit_codes_and_json() {
    let (code, out, _) = iec(
        &[
            "repair",
            "--launch",
            "claude-code-2.1.72-linux",
            "--command",
            "printf '%s' 'a != b'",
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(
        (v["action"].as_str(), v["repaired"].as_bool(), v["hop"].as_str()),
        (Some("deliver"), Some(true), Some("eval"))
    );
    assert_eq!(v["check"]["verdict"], "corresponds");
    // The delivered call checks as corresponding on the same launch.
    let cmd = v["call"]["command"].as_str().unwrap();
    let (code, out, _) = iec(
        &[
            "check",
            "--launch",
            "claude-code-2.1.72-linux",
            "--command",
            cmd,
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 0, "{out}");

    let (code, out, _) = iec(
        &[
            "repair",
            "--launch",
            "bash-c",
            "--command",
            "ls",
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 0);
    assert_eq!(
        json(&out),
        serde_json::json!({"launch": "bash-c", "action": "deliver", "repaired": false, "call": {"command": "ls"}})
    );

    let (code, out, _) = iec(
        &[
            "repair",
            "--launch",
            "gemini-cli-linux",
            "--command",
            "echo $(date)",
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 4);
    let v = json(&out);
    assert_eq!(v["action"], "refuse");
    assert_eq!(v["hop"], "tool-input");
    assert!(v["reason"].as_str().unwrap().contains("command substitution"));
}

#[test]
fn claude_code_hook_answers_per_the_hooks_api() {
    let pre = |cmd: &str| {
        serde_json::json!({
            "session_id": "abc", "transcript_path": "/x.jsonl", "cwd": "/", "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": cmd, "description": "d", "timeout": 120000}, "tool_use_id": "toolu_1"
        })
        .to_string()
    };
    // Corresponds: nothing, exit 0.
    let (code, out, _) = iec(
        &["hook", "claude-code", "--launch", "claude-code-2.1.72-linux"],
        pre("ls -la").as_bytes(),
    );
    assert_eq!((code, out.as_str()), (0, ""));
    // Repaired: allow + updatedInput with the other fields kept.
    let (code, out, _) = iec(
        &["hook", "claude-code", "--launch", "claude-code-2.1.72-linux"],
        pre("printf '%s' 'a != b'").as_bytes(),
    );
    assert_eq!(code, 0);
    let h = &json(&out)["hookSpecificOutput"];
    assert_eq!(h["hookEventName"], "PreToolUse");
    assert_eq!(h["permissionDecision"], "allow");
    assert_eq!(h["updatedInput"]["description"], "d");
    assert_eq!(h["updatedInput"]["timeout"], 120000);
    assert_eq!(
        h["updatedInput"]["command"],
        "eval $'printf \\x27\\x25s\\x27 \\x27a \\x21= b\\x27'"
    );
    // Refused: deny with a reason.
    let (code, out, _) = iec(
        &["hook", "claude-code", "--launch", "claude-code-2.1.332-linux"],
        pre("grep -r x .").as_bytes(),
    );
    assert_eq!(code, 0);
    let h = &json(&out)["hookSpecificOutput"];
    assert_eq!(h["permissionDecision"], "deny");
    assert!(h["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("command grep"));
    // Other tools and bad input: no decision, the turn goes on.
    let (code, out, _) = iec(
        &["hook", "claude-code"],
        br#"{"tool_name":"Write","tool_input":{"file_path":"x"}}"#,
    );
    assert_eq!((code, out.as_str()), (0, ""));
    let (code, out, err) = iec(&["hook", "claude-code"], b"{truncated");
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(err.contains("left to your permission settings"), "{err}");
}

#[test]
fn install_claude_code_is_idempotent_and_keeps_other_settings() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("settings.json");
    let before = r#"{"model":"x","hooks":{"PreToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"other"}]}]}}"#;
    std::fs::write(&s, before).unwrap();
    let p = s.to_str().unwrap();
    let (code, out, _) = iec(&["install", "claude-code", "--settings", p, "--dry-run"], b"");
    assert_eq!(code, 0);
    assert_eq!(
        std::fs::read_to_string(&s).unwrap(),
        before,
        "dry run writes nothing"
    );
    assert!(json(&out)["hooks"]["PreToolUse"][1]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .ends_with(" hook claude-code"));
    for _ in 0..2 {
        let (code, _, _) = iec(
            &[
                "install",
                "claude-code",
                "--settings",
                p,
                "--launch",
                "claude-code-2.1.72-linux",
            ],
            b"",
        );
        assert_eq!(code, 0);
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&s).unwrap()).unwrap();
    assert_eq!(v["model"], "x");
    let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "one iec entry after two installs: {pre:?}");
    assert_eq!(pre[0]["hooks"][0]["command"], "other");
    assert_eq!(pre[1]["matcher"], "Bash");
    std::fs::write(&s, "{broken").unwrap();
    let (code, _, err) = iec(&["install", "claude-code", "--settings", p], b"");
    assert_eq!(code, 2);
    assert!(err.contains("not JSON"), "{err}");
    assert_eq!(std::fs::read_to_string(&s).unwrap(), "{broken");
}

#[test]
fn mcp_subcommand_serves_run() {
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run","arguments":{"argv":["printf","%s","a != b $HOME"]}}}"#,
        "\n",
    );
    let (code, out, _) = iec(&["mcp"], input.as_bytes());
    assert_eq!(code, 0);
    let reply: Value = out
        .lines()
        .map(json)
        .find(|v| v["id"] == 2)
        .expect("a reply to the call");
    assert_eq!(
        reply["result"]["structuredContent"]["argv"],
        serde_json::json!(["printf", "%s", "a != b $HOME"])
    );
    assert_eq!(
        reply["result"]["structuredContent"]["stdout"]["text"],
        "a != b $HOME"
    );
}

/// `iec … | head`: a reader that has gone away ends `iec` by SIGPIPE, with nothing on stderr (a
/// panic in `println!` before), for the table, JSON and demo outputs alike. The read end of the
/// pipe is closed before `iec` starts, so its first write fails with EPIPE.
#[test]
fn a_closed_stdout_ends_iec_by_sigpipe_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    for args in [
        &["launches"][..],
        &["launches", "--format", "json"],
        &["check", "--launch", "all", "--command", "echo 'a != b'"],
        &["demo"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(env!("CARGO_BIN_EXE_iec"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{args:?}: {:?}", o.status);
        assert_eq!(String::from_utf8_lossy(&o.stderr), "", "{args:?}");
    }
}

/// Any other write error is a runtime error (exit 2) with a message, not a panic.
#[test]
fn an_unwritable_stdout_is_a_runtime_error() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_iec"))
        .args(["launches", "--format", "json"])
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("iec: cannot write to stdout: No space left on device"),
        "{err}"
    );
}

/// An environment variable with a bad value (`iec_core::config`) is an error naming it: `iec`
/// exits 2 before doing anything; the hook asks the user with it (it never fails the turn, and
/// never lets the call through unjudged).
#[test]
fn a_bad_environment_value_is_an_error_naming_the_variable() {
    let (code, out, err) = iec_env(&["launches"], b"", &[("IEC_WITNESS_TIMEOUT_SECS", "abc")]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (
            2,
            "",
            "iec: environment variable IEC_WITNESS_TIMEOUT_SECS=\"abc\": expected a number of seconds above 0 (decimals allowed); fix or unset it\n"
        )
    );
    // Empty is unset: the default.
    let (code, _, err) = iec_env(&["launches"], b"", &[("IEC_WITNESS_TIMEOUT_SECS", "")]);
    assert_eq!((code, err.as_str()), (0, ""));
    let doc = |tool: &str| {
        serde_json::json!({"hook_event_name": "PreToolUse", "tool_name": tool,
                           "tool_input": {"command": "printf '%s' 'a != b'"}})
        .to_string()
    };
    let bad = [("IEC_DAEMON", "0"), ("IEC_INTENT_TTL_SECS", "1h")];
    let (code, out, _) = iec_env(&["hook", "claude-code"], doc("Bash").as_bytes(), &bad);
    assert_eq!(code, 0);
    let h = &json(&out)["hookSpecificOutput"];
    assert_eq!(h["permissionDecision"], "ask");
    assert!(
        h["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .ends_with("environment variable IEC_INTENT_TTL_SECS=\"1h\": expected a whole number of seconds; fix or unset it"),
        "{h}"
    );
    // Not a Bash call: not the hook's to judge, nothing said.
    let (code, out, _) = iec_env(&["hook", "claude-code"], doc("Read").as_bytes(), &bad);
    assert_eq!((code, out.as_str()), (0, ""));
}
