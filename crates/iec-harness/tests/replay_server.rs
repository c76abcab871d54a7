//! The replay server on its own: streaming and non-streaming turns, tool_result capture,
//! count_tokens, unknown paths. Plain HTTP/1.1 over a TcpStream (no client library).

mod support;

use std::sync::{Arc, Mutex};

use iec_harness::{ReplayServer, Script};
use serde_json::{json, Value};

/// A POST (see `support::post`) with chunked encoding undone.
fn post(addr: std::net::SocketAddr, path: &str, body: &Value) -> (u16, String) {
    let (status, body) = support::post(addr, path, body);
    (status, dechunk(&body))
}

/// Undoes `Transfer-Encoding: chunked` if the body looks chunked.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    loop {
        let Some((size, tail)) = rest.split_once("\r\n") else {
            return body.to_string();
        };
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            return body.to_string();
        };
        if n == 0 {
            return out;
        }
        if tail.len() < n {
            return body.to_string();
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
}

fn request(tools: bool, stream: bool, results: &[(&str, bool, &str)]) -> Value {
    let mut messages = vec![json!({"role": "user", "content": "go"})];
    for (id, is_error, text) in results {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "x"}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "is_error": is_error,
             "content": [{"type": "text", "text": text}]}]}));
    }
    let mut v = json!({"model": "claude-test", "max_tokens": 100, "stream": stream, "messages": messages});
    if tools {
        v["tools"] = json!([{"name": "Read", "input_schema": {}}, {"name": "Bash", "input_schema": {}}]);
    }
    v
}

fn sse_events(body: &str) -> Vec<Value> {
    support::sse_data(body)
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn streams_a_tool_use_then_ends_and_records_the_tool_result() {
    let turns = Arc::new(Mutex::new(Vec::new()));
    let mut script = Script::commands(["argvprobe 'a != b'", "echo two"]);
    let t = turns.clone();
    script.on_turn = Some(Arc::new(move |k| t.lock().unwrap().push(k)));
    let (addr, handle) = ReplayServer::start(script).unwrap();
    assert!(addr.ip().is_loopback());

    // Turn 0, streaming: one tool_use block with the payload as `command`.
    let (status, body) = post(addr, "/v1/messages?beta=true", &request(true, true, &[]));
    assert_eq!(status, 200);
    let ev = sse_events(&body);
    let kinds: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(ev[1]["content_block"]["type"], "tool_use");
    assert_eq!(ev[1]["content_block"]["name"], "Bash");
    let input: Value = serde_json::from_str(ev[2]["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!({"command": "argvprobe 'a != b'"}));
    assert_eq!(ev[4]["delta"]["stop_reason"], "tool_use");

    // Turn 1, non-streaming, after the first result.
    let id0 = ev[1]["content_block"]["id"].as_str().unwrap().to_string();
    let (status, body) = post(
        addr,
        "/v1/messages",
        &request(true, false, &[(&id0, true, "boom")]),
    );
    assert_eq!(status, 200);
    let msg: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(msg["stop_reason"], "tool_use");
    assert_eq!(msg["content"][0]["input"]["command"], "echo two");

    // Turn 2: the final text with end_turn.
    let id1 = msg["content"][0]["id"].as_str().unwrap().to_string();
    let (_, body) = post(
        addr,
        "/v1/messages",
        &request(true, true, &[(&id0, true, "boom"), (&id1, false, "two")]),
    );
    let ev = sse_events(&body);
    assert_eq!(ev[1]["content_block"]["type"], "text");
    assert_eq!(ev[4]["delta"]["stop_reason"], "end_turn");

    // A side request (no Bash tool) gets text and does not advance the script.
    let (_, body) = post(addr, "/v1/messages", &request(false, false, &[]));
    let msg: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(msg["content"][0]["type"], "text");
    assert_eq!(msg["stop_reason"], "end_turn");

    let (status, body) = post(addr, "/v1/messages/count_tokens", &json!({"messages": []}));
    assert_eq!(status, 200);
    assert!(body.contains("input_tokens"));
    let (status, _) = post(addr, "/api/hello", &json!({}));
    assert_eq!(status, 404);

    let t0 = handle.tool_result(0).unwrap();
    assert!(t0.is_error);
    assert_eq!(t0.content, "boom");
    let t1 = handle.tool_result(1).unwrap();
    assert!(!t1.is_error);
    assert_eq!(handle.echoed_input(0).unwrap()["command"], "x");
    assert_eq!(handle.unknown_paths(), ["POST /api/hello"]);
    let roles: Vec<String> = handle.requests().into_iter().map(|r| r.role).collect();
    assert_eq!(
        roles,
        ["main:0", "main:1", "main:2", "side", "count_tokens", "unknown"]
    );
    assert_eq!(*turns.lock().unwrap(), [0, 1, 2]);
    handle.shutdown();
}

/// Claude Code 2.0.77 to 2.1.2 warm each built-in subagent up at launch: a request whose first
/// message is `Warmup`, with Bash among its tools. It is a side request: it gets text, takes no
/// turn, and its conversation's tool results are not the main loop's.
#[test]
fn a_subagent_warm_up_is_a_side_request() {
    let turns = Arc::new(Mutex::new(Vec::new()));
    let mut script = Script::commands(["argvprobe one"]);
    let t = turns.clone();
    script.on_turn = Some(Arc::new(move |k| t.lock().unwrap().push(k)));
    let (addr, handle) = ReplayServer::start(script).unwrap();
    let warmup = |content: Value, results: &[(&str, bool, &str)]| {
        let mut v = request(true, false, results);
        v["messages"][0]["content"] = content;
        v
    };
    for content in [
        json!("Warmup"),
        json!([{"type": "text", "text": "<system-reminder>x</system-reminder>"}, {"type": "text", "text": "Warmup"}]),
    ] {
        let (status, body) = post(addr, "/v1/messages", &warmup(content.clone(), &[]));
        assert_eq!(status, 200);
        let msg: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(msg["content"][0]["type"], "text", "{content}");
        assert_eq!(msg["stop_reason"], "end_turn");
    }
    // A warm-up whose (denied) call came back does not stand for the main loop's call 0.
    let denied = warmup(json!("Warmup"), &[("toolu_iec_0000", true, "Warmup")]);
    let (_, body) = post(addr, "/v1/messages", &denied);
    let msg: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(msg["content"][0]["type"], "text");
    // The main loop then gets call 0; its result is the one recorded.
    let (_, body) = post(addr, "/v1/messages", &request(true, false, &[]));
    let msg: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(msg["content"][0]["input"]["command"], "argvprobe one");
    post(
        addr,
        "/v1/messages",
        &request(true, false, &[("toolu_iec_0000", false, "one")]),
    );
    assert_eq!(handle.tool_result(0).unwrap().content, "one");
    let roles: Vec<String> = handle.requests().into_iter().map(|r| r.role).collect();
    assert_eq!(roles, ["side", "side", "side", "main:0", "main:1"]);
    assert_eq!(*turns.lock().unwrap(), [0, 1]);
    handle.shutdown();
}
