//! Each reader on records in its format's shape (the spec's real sample records, trimmed:
//! `docs`-free copies of the field maps in the session-log notes), and the detection of the
//! format by content whatever the file is called.

use iec_scan::readers::{read_file, Bounds, Format, Shared};
use iec_scan::{LoggedCall, Skips};
use serde_json::json;

/// Reads `files` (name, content) in one folder as a scan does; the calls, the formats, the skips.
fn read(files: &[(&str, String)]) -> (Vec<LoggedCall>, Vec<Option<Format>>, Skips) {
    let dir = tempfile::tempdir().unwrap();
    let mut skips = Skips::new(false);
    let mut shared = Shared::default();
    let mut calls = Vec::new();
    let mut formats = Vec::new();
    for (name, text) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        let mut emit = |c: LoggedCall| calls.push(c);
        formats.push(read_file(&p, name, Bounds::default(), &mut shared, &mut skips, &mut emit).unwrap());
    }
    let mut emit = |c: LoggedCall| calls.push(c);
    shared.finish(&mut skips, &mut emit).unwrap();
    (calls, formats, skips)
}

fn lines(v: &[serde_json::Value]) -> String {
    v.iter().map(|x| x.to_string() + "\n").collect()
}

#[test]
fn claude_code_sidechains_results_and_dedup() {
    let a = |id: &str, cmd: &str, side: bool| {
        json!({"type":"assistant","uuid":"u","isSidechain":side,"cwd":"/Users/me/p","sessionId":"s1","version":"2.0.14","timestamp":"t",
               "message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":id,"name":"Bash","input":{"command":cmd,"description":"d"}}]}})
    };
    let text = lines(&[
        json!({"type":"summary","summary":"x","leafUuid":"l"}),
        a("toolu_1", "ls /no/such/dir", false),
        a("toolu_1", "ls /no/such/dir", false),
        json!({"type":"user","sessionId":"s1","message":{"role":"user","content":[{"type":"tool_result","content":"Exit code 2\nls: cannot access '/no/such/dir'","is_error":true,"tool_use_id":"toolu_1"}]},"toolUseResult":"Error: Exit code 2\nls: …","version":"2.0.14"}),
        a("toolu_2", "echo hi", true),
        json!({"type":"user","sessionId":"s1","message":{"role":"user","content":[{"tool_use_id":"toolu_2","type":"tool_result","content":"hi","is_error":false}]},"toolUseResult":{"stdout":"hi","stderr":"","interrupted":false,"isImage":false}}),
        a("toolu_3", "sleep 100", false),
        json!({"type":"brand-new-type","sessionId":"s1"}),
    ]);
    // The file's name says nothing; its content does.
    let (calls, formats, skips) = read(&[("whatever.log", text)]);
    assert_eq!(formats, vec![Some(Format::ClaudeCode)]);
    assert_eq!(calls.len(), 3, "the repeated block is one call");
    let c = &calls[0];
    assert_eq!(
        (
            c.command.as_str(),
            c.version.as_deref(),
            c.os.as_deref(),
            c.session.as_str()
        ),
        ("ls /no/such/dir", Some("2.0.14"), Some("macos"), "s1")
    );
    assert_eq!((c.outcome.error, c.outcome.exit_code), (Some(true), Some(2)));
    assert!(calls[1].sidechain);
    assert_eq!(
        (calls[1].outcome.error, calls[1].outcome.exit_code),
        (Some(false), Some(0))
    );
    assert!(!calls[2].outcome.seen, "a call without a result is kept");
    assert_eq!(skips.counts().get("unknown-record-type"), Some(&1));
}

#[test]
fn codex_current_and_legacy() {
    let current = lines(&[
        json!({"timestamp":"t","type":"session_meta","payload":{"id":"sess","cwd":"/home/u/p","cli_version":"0.89.0","originator":"codex_cli_rs"}}),
        json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cat <<'EOF' > J.md\\nx\\nEOF\"}","call_id":"c1"}}),
        json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Chunk ID: dd\nWall time: 0.05 seconds\nProcess exited with code 0\nOutput:\n"}}),
        json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"false\"]}","call_id":"c2"}}),
        json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"{\"output\":\"\",\"metadata\":{\"exit_code\":1,\"duration_seconds\":0.1}}"}}),
        json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell_command","arguments":"{not json","call_id":"c3"}}),
    ]);
    let legacy = lines(&[
        json!({"id":"old","timestamp":"t","instructions":null,"git":null}),
        json!({"record_type":"state"}),
        json!({"type":"local_shell_call","call_id":"l1","status":"completed","action":{"type":"exec","command":["ls","-la"],"working_directory":"/w"}}),
        json!({"type":"function_call_output","call_id":"l1","output":"Exit code: 0\nWall time: 0 seconds\nOutput:\n"}),
    ]);
    let (calls, formats, skips) = read(&[("a.jsonl", current), ("b.jsonl", legacy)]);
    assert_eq!(formats, vec![Some(Format::Codex), Some(Format::Codex)]);
    assert_eq!(calls.len(), 3);
    assert_eq!(
        (calls[0].tool.as_str(), calls[0].command.as_str()),
        ("exec_command", "cat <<'EOF' > J.md\nx\nEOF")
    );
    assert_eq!(
        (
            calls[0].version.as_deref(),
            calls[0].session.as_str(),
            calls[0].outcome.exit_code
        ),
        (Some("0.89.0"), "sess", Some(0))
    );
    assert_eq!(
        (
            calls[1].command.as_str(),
            calls[1].outcome.exit_code,
            calls[1].outcome.error
        ),
        ("bash -lc false", Some(1), Some(true))
    );
    assert_eq!(calls[1].input["command"], json!(["bash", "-lc", "false"]));
    assert_eq!(
        (
            calls[2].tool.as_str(),
            calls[2].command.as_str(),
            calls[2].session.as_str()
        ),
        ("shell", "ls -la", "old")
    );
    assert_eq!(skips.counts().get("malformed-arguments"), Some(&1));
}

#[test]
fn gemini_document_form() {
    let doc = json!({"sessionId":"g1","projectHash":"h","startTime":"t","messages":[
        {"id":"m1","timestamp":"t","type":"user","content":[{"text":"My operating system is: win32\nI'm currently working in the directory: C:\\p"}]},
        {"id":"m2","timestamp":"t","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command_1","name":"run_shell_command",
          "args":{"command":".\\\\venv\\\\Scripts\\\\python.exe -m pip list"},"status":"error",
          "result":[{"functionResponse":{"name":"run_shell_command","response":{"output":"Output: (empty)\nExit Code: 1\nProcess Group PGID: 4500"}}}]}]}
    ]});
    let (calls, formats, _) = read(&[("session.json", serde_json::to_string_pretty(&doc).unwrap())]);
    assert_eq!(formats, vec![Some(Format::GeminiDocument)]);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (
            calls[0].os.as_deref(),
            calls[0].outcome.exit_code,
            calls[0].outcome.error
        ),
        (Some("windows"), Some(1), Some(true))
    );
}

#[test]
fn openhands_v0_files_v0_trajectory_and_v1() {
    // V0, one event per file, observation file before its action file in name order.
    let action = json!({"id":7,"timestamp":"t","source":"agent","action":"run","args":{"command":"mkdir -p /workspace/todo-app","is_input":false}});
    let obs = json!({"id":8,"timestamp":"t","source":"agent","cause":7,"observation":"run","content":"","extras":{"command":"mkdir -p /workspace/todo-app","metadata":{"exit_code":0,"working_dir":"/workspace"}},"success":true});
    let traj = json!([
        {"id":1,"source":"agent","action":"run","args":{"command":"python3 -c 'print(1'"}},
        {"id":2,"cause":1,"observation":"run","content":"SyntaxError: '(' was never closed","extras":{"metadata":{"exit_code":1}}},
        {"id":3,"source":"agent","action":"run","args":{"command":"C-c","is_input":true}}
    ]);
    let v1 = json!([
        {"kind":"ActionEvent","id":"a1","tool_name":"terminal","tool_call_id":"t1","action":{"kind":"TerminalAction","command":"ls","is_input":false}},
        {"kind":"ObservationEvent","action_id":"a1","observation":{"kind":"TerminalObservation","content":[{"type":"text","text":"x"}],"is_error":false,"exit_code":0}},
        {"kind":"MysteryEvent"}
    ]);
    let (calls, formats, skips) = read(&[
        ("s/events/10.json", obs.to_string()),
        ("s/events/9.json", action.to_string()),
        ("traj.json", traj.to_string()),
        ("v1.json", v1.to_string()),
    ]);
    assert_eq!(formats, vec![Some(Format::OpenHands); 4]);
    let cmds: Vec<(&str, Option<i64>)> = calls
        .iter()
        .map(|c| (c.command.as_str(), c.outcome.exit_code))
        .collect();
    assert_eq!(
        cmds,
        vec![
            ("mkdir -p /workspace/todo-app", Some(0)),
            ("python3 -c 'print(1'", Some(1)),
            ("ls", Some(0))
        ]
    );
    assert!(calls[1]
        .outcome
        .error_text
        .as_deref()
        .unwrap()
        .contains("SyntaxError"));
    assert_eq!(
        skips.counts().get("unknown-record-type"),
        Some(&1),
        "the MysteryEvent"
    );
}

#[test]
fn cline_native_legacy_and_sdk() {
    let native = json!([
        {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"execute_command","input":{"command":"cp a b","requires_approval":true}}]},
        {"role":"user","content":[{"type":"text","text":"[execute_command for 'cp a b'] Result:\nCommand failed with exit code 1.\nOutput:\ncp: a: No such file or directory"}]},
        {"role":"assistant","content":"Run it: <execute_command>\n<command>npm test</command>\n</execute_command>"},
        {"role":"user","content":[{"type":"text","text":"[execute_command for 'npm test'] Result:\nCommand executed successfully (exit code 0).\nOutput:\nok"}]}
    ]);
    let ui = json!([{"ts":1,"type":"ask","ask":"command","text":"cp a b"}]);
    let sdk = json!({"version":1,"sessionId":"c9","messages":[
        {"role":"assistant","content":[{"type":"tool_use","id":"u1","name":"run_commands","input":{"commands":["ls","pwd"]}}]},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"u1","content":"done","is_error":false}]}
    ]});
    let (calls, formats, _) = read(&[
        ("t/api_conversation_history.json", native.to_string()),
        ("t/ui_messages.json", ui.to_string()),
        ("c9.messages.json", sdk.to_string()),
    ]);
    assert_eq!(
        formats,
        vec![Some(Format::Cline), Some(Format::ClineUi), Some(Format::Cline)]
    );
    let got: Vec<(&str, Option<i64>, Option<bool>)> = calls
        .iter()
        .map(|c| (c.command.as_str(), c.outcome.exit_code, c.outcome.error))
        .collect();
    assert_eq!(
        got,
        vec![
            ("cp a b", Some(1), Some(true)),
            ("npm test", Some(0), Some(false)),
            ("ls", None, Some(false)),
            ("pwd", None, Some(false))
        ]
    );
}

#[test]
fn atif_trajectory() {
    let t = json!({"schema_version":"ATIF-v1.7","session_id":"h1","agent":{"name":"codex","version":"0.171.0","extra":{"cwds":["/app"]}},
        "steps":[{"step_id":5,"timestamp":"t","source":"agent","tool_calls":[{"tool_call_id":"c","function_name":"exec_command","arguments":{"cmd":"printf '%s' 'a != b'"}}],
                  "observation":{"results":[{"source_call_id":"c","content":"Chunk ID: 1\nWall time: 0 seconds\nProcess exited with code 0\nOutput:\na != b"}]}},
                 {"step_id":6,"source":"agent","tool_calls":[{"tool_call_id":"d","function_name":"write_stdin","arguments":{}}]}]});
    let (calls, formats, _) = read(&[("agent/trajectory.json", serde_json::to_string_pretty(&t).unwrap())]);
    assert_eq!(formats, vec![Some(Format::Atif)]);
    assert_eq!(calls.len(), 1);
    let c = &calls[0];
    assert_eq!(
        (
            c.harness.as_str(),
            c.version.as_deref(),
            c.os.as_deref(),
            c.line,
            c.outcome.exit_code
        ),
        ("codex", Some("0.171.0"), Some("linux"), 5, Some(0))
    );
    assert_eq!(c.command, "printf '%s' 'a != b'");
}

#[test]
fn unknown_files_are_counted_not_read() {
    let (calls, formats, skips) = read(&[
        ("notes.json", json!({"hello": "world"}).to_string()),
        ("other.jsonl", lines(&[json!({"a":1}), json!({"b":2})])),
        ("plain.json", "just text\n".into()),
    ]);
    assert!(calls.is_empty());
    assert_eq!(formats, vec![None, None, None]);
    assert_eq!(skips.counts().get("unknown-format"), Some(&3));
}
