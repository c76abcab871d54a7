//! The `iec` binary: exit codes, JSON shapes and inputs, as a user sees them.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

fn iec(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iec"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin).unwrap();
    let o = c.wait_with_output().unwrap();
    (
        o.status.code().unwrap(),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
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
