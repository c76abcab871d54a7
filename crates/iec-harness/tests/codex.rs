//! Real Codex runs against the replay server's Responses API, and the OpenAI endpoints on their
//! own. Installs `@openai/codex@0.171.0` into ~/.cache/iec/harnesses/codex-0.171.0 (reused).
//! When the install fails, the test fails with the npm error, unless `IEC_SKIP_CODEX=1` (or the
//! project-wide `IEC_SKIP_HARNESS=1` / `IEC_SKIP_NPM=1`) is set: then it prints `SKIPPED: …`.

mod support;

use iec_harness::codex::{observe_codex, CODEX_VERSION};
use iec_harness::harness::CODEX;
use iec_harness::{install_codex, HarnessRun, ReplayServer, Script};
use serde_json::{json, Value};
use support::{argvs, direct_argvs, is_pid_arg, sse_data, v, BANG, CRLF, PID, PRINTF, QUOTES};

const HEREDOC: &str = "argvprobe \"$(cat <<'EOF'\nhello $USER 'q' \"d\"\nEOF\n)\"";

/// Installs Codex (reused when present); `false` when the install failed and a skip variable
/// is set.
fn install_or_skip() -> bool {
    support::installed(
        &format!("@openai/codex@{CODEX_VERSION}"),
        &["IEC_SKIP_CODEX", "IEC_SKIP_HARNESS", "IEC_SKIP_NPM"],
        || install_codex(CODEX_VERSION),
    )
    .is_some()
}

/// One `codex exec` of `payloads`, checked (see `support::check_launch`); `None` when skipped.
fn run(payloads: &[&str]) -> Option<HarnessRun> {
    support::harness_launch(&CODEX, CODEX_VERSION, install_or_skip, payloads)
}

/// The text Codex's snapshot wrapper hands the second bash: `exec '/bin/bash' -c '<cmd>'` with
/// `'` written as `'"'"'`.
fn wrapped(cmd: &str) -> String {
    format!("exec '/bin/bash' -c '{}'", cmd.replace('\'', r#"'"'"'"#))
}

#[test]
fn codex_0_171_0_delivers_exec_command_intact() {
    let payloads = [BANG, PID, QUOTES, HEREDOC, CRLF, PRINTF];
    let Some(run) = run(&payloads) else {
        return;
    };
    // The shell tool Codex 0.171.0 offers: `exec_command` with a string `cmd`.
    let main = run
        .requests
        .iter()
        .find(|r| r.role == "main:0")
        .expect("a main-loop request");
    let tool = iec_harness::openai::shell_tool(&main.body).expect("a shell tool");
    assert_eq!(tool.name, "exec_command");
    assert_eq!(tool.arg, iec_harness::openai::ShellArg::Text("cmd".into()));

    let [bang, pid, quotes, heredoc, crlf, printf] = &run.results[..] else {
        unreachable!()
    };
    assert_eq!(argvs(bang), v(&["a != b"]));
    assert_eq!(argvs(quotes), support::quotes_argv());
    assert_eq!(argvs(heredoc), v(&["hello $USER 'q' \"d\""]));
    assert_eq!(argvs(crlf), vec![vec!["a\r".to_string()], vec!["b".to_string()]]);
    let a = argvs(pid);
    assert!(a.len() == 1 && a[0].len() == 1 && is_pid_arg(&a[0][0]), "{a:?}");
    for r in [bang, quotes, heredoc, crlf] {
        assert_eq!(argvs(r), direct_argvs(r), "{:?}", r.payload);
    }
    assert!(
        printf
            .tool_result
            .as_ref()
            .unwrap()
            .content
            .ends_with("Output:\nx != y\nit's\n"),
        "{:?}",
        printf.tool_result
    );

    // Hops: the first bash gets the snapshot wrapper, ending in `exec '/bin/bash' -c '<cmd>'`;
    // the second bash gets the text exactly as emitted.
    for r in &run.results {
        let outer = r.outer.as_deref().expect("the wrapper seen by BASH_ENV");
        assert!(outer.contains("__CODEX_SNAPSHOT"), "{outer}");
        assert!(outer.trim_end().ends_with(&wrapped(&r.payload)), "{outer}");
        assert_eq!(r.bash_strings.last(), Some(&r.payload), "{:?}", r.bash_strings);
        assert!(!r.tool_result.as_ref().unwrap().is_error);
        let o = observe_codex("x", r);
        assert_eq!(o.verdict, "corresponds", "{o:?}");
    }
}

/// A POST the server answers with 200: the body.
fn post(addr: std::net::SocketAddr, path: &str, body: &Value) -> String {
    let (status, body) = support::post(addr, path, body);
    assert_eq!(status, 200, "{body}");
    body
}

#[test]
fn responses_and_chat_completions_answer_from_the_script() {
    let (addr, server) = ReplayServer::start(Script::commands(["argvprobe 'a != b'"])).unwrap();
    let tools_r = json!([{"type": "function", "name": "exec_command",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]);

    // Responses, streaming, turn 0: one function_call item.
    let body = post(
        addr,
        "/v1/responses",
        &json!({"model": "m", "stream": true, "tools": tools_r,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]}),
    );
    let events: Vec<Value> = sse_data(&body)
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "response.created",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let item = &events[2]["item"];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "exec_command");
    assert_eq!(item["call_id"], "call_iec_0000");
    assert_eq!(
        item["arguments"],
        json!({"cmd": "argvprobe 'a != b'"}).to_string()
    );

    // Turn 1 (non-streaming) carries the output: the final text.
    let input = json!([
        {"type": "function_call", "call_id": "call_iec_0000", "name": "exec_command",
         "arguments": item["arguments"]},
        {"type": "function_call_output", "call_id": "call_iec_0000",
         "output": "Process exited with code 3\nOutput:\nboom\n"}]);
    let body = post(
        addr,
        "/v1/responses",
        &json!({"model": "m", "stream": false, "tools": tools_r, "input": input}),
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["output"][0]["content"][0]["text"], "Done.");
    let tr = server.tool_result(0).unwrap();
    assert_eq!(tr.tool_use_id, "call_iec_0000");
    assert!(tr.is_error);
    assert_eq!(tr.content, "Process exited with code 3\nOutput:\nboom\n");
    assert_eq!(server.echoed_input(0), Some(json!({"cmd": "argvprobe 'a != b'"})));

    // Chat Completions, streaming: a tool_calls delta, then [DONE].
    let tools_c = json!([{"type": "function", "function": {"name": "bash",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]);
    let body = post(
        addr,
        "/v1/chat/completions",
        &json!({"model": "m", "stream": true, "tools": tools_c,
        "messages": [{"role": "user", "content": "go"}]}),
    );
    let data = sse_data(&body);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let first: Value = serde_json::from_str(&data[0]).unwrap();
    let call = &first["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(call["id"], "call_iec_0000");
    assert_eq!(call["function"]["name"], "bash");
    assert_eq!(
        call["function"]["arguments"],
        json!({"command": "argvprobe 'a != b'"}).to_string()
    );
    let second: Value = serde_json::from_str(&data[1]).unwrap();
    assert_eq!(second["choices"][0]["finish_reason"], "tool_calls");

    // Chat Completions, non-streaming, after the tool message: the final text.
    let body = post(
        addr,
        "/v1/chat/completions",
        &json!({"model": "m", "tools": tools_c, "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_iec_0000", "content": "ok"}]}),
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "Done.");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");

    // Without a shell tool: the side text.
    let body = post(addr, "/v1/responses", &json!({"model": "m", "input": []}));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["output"][0]["content"][0]["text"], "OK");
    let roles: Vec<String> = server.requests().iter().map(|r| r.role.clone()).collect();
    assert_eq!(roles, ["main:0", "main:1", "main:0", "main:1", "side"]);
}

/// `iec check`'s predictions for the launches `codex-exec-command-linux` (observed) and
/// `codex-shell-command-linux` (older model) against real Codex runs
/// on the 300 hazard payloads the Claude Code agreement test uses (same seed).
#[test]
fn codex_0_171_0_agrees_with_iec_check_on_300_hazard_payloads() {
    // The observed `exec_command` launch and the older `shell_command` model give the same
    // verdicts on these payloads; both must agree with the real runs.
    let Some(observed) = support::agrees_on_300_hazards(
        "codex",
        CODEX_VERSION,
        install_or_skip(),
        iec_harness::codex::run_observed,
        &["codex-exec-command-linux", "codex-shell-command-linux"],
    ) else {
        return;
    };
    // Every payload arrived as emitted.
    assert!(observed.iter().all(|o| o.verdict == "corresponds"));
}
