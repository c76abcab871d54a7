//! Malformed JSON-RPC over raw stdio (no SDK): every bad line gets a JSON-RPC
//! error response and the server keeps answering valid calls afterwards.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Server {
    fn start(runtime: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_iec-mcp"))
            .env("IEC_MCP_RUNTIME", runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Server { child, stdin, lines }
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&self) -> Value {
        let l = self
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("the server answered within 10 s");
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("server wrote non-JSON {l:?}: {e}"))
    }

    /// Sends a line and returns the one response it must produce.
    fn ask(&mut self, line: &str) -> Value {
        self.send(line);
        self.recv()
    }

    fn initialize(&mut self) {
        let r = self.ask(
            &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2025-06-18","capabilities":{},
                "clientInfo":{"name":"raw","version":"0"}}})
            .to_string(),
        );
        assert_eq!(r["id"], 1, "{r}");
        assert_eq!(r["result"]["serverInfo"]["name"], "iec-mcp", "{r}");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }

    fn call_echo(&mut self, id: u64, word: &str) {
        let r = self.ask(
            &json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                "params":{"name":"run","arguments":{"argv":["printf","%s",word]}}})
            .to_string(),
        );
        assert_eq!(r["id"], id, "{r}");
        assert_eq!(r["result"]["isError"], false, "{r}");
        assert_eq!(r["result"]["structuredContent"]["stdout"]["text"], word, "{r}");
    }

    fn finish(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "server exit status {status}");
    }
}

fn error_code(r: &Value) -> i64 {
    r["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected a JSON-RPC error, got {r}"))
}

/// (line, expected id, expected error code) — each line must get exactly one error.
fn malformed() -> Vec<(String, Value, i64)> {
    vec![
        ("this is not json".into(), Value::Null, -32700),
        ("garbage{{".into(), Value::Null, -32700),
        ("{\"jsonrpc\":\"2.0\",\"id\":5,".into(), Value::Null, -32700),
        // A lone UTF-16 surrogate cannot become a Rust string: refused, not mangled; the
        // answer keeps the request's id (the rest of the line is valid).
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"run","arguments":{"argv":["echo","\ud800"]}}}"#.into(),
            json!(6),
            -32700,
        ),
        ("[1,2]".into(), Value::Null, -32600),
        ("[]".into(), Value::Null, -32600),
        ("42".into(), Value::Null, -32600),
        ("\"str\"".into(), Value::Null, -32600),
        (r#"{"id":7}"#.into(), json!(7), -32600),
        (r#"{"jsonrpc":"1.0","id":8,"method":"tools/list"}"#.into(), json!(8), -32600),
        (r#"{"jsonrpc":"2.0","id":9,"method":17}"#.into(), json!(9), -32600),
        (r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":"x"}"#.into(), json!(10), -32600),
        // An array is a JSON-RPC structured value but not MCP's params: invalid params (F8).
        (r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":[1]}"#.into(), json!(11), -32602),
        (r#"{"jsonrpc":"2.0","id":17,"method":"tools/list","params":[]}"#.into(), json!(17), -32602),
        // Duplicate members: an invalid request, with the id when the ids agree (F8).
        (r#"{"jsonrpc":"2.0","id":18,"id":18,"method":"tools/list"}"#.into(), json!(18), -32600),
        (r#"{"jsonrpc":"2.0","id":19,"id":20,"method":"tools/list"}"#.into(), Value::Null, -32600),
        (r#"{"jsonrpc":"2.0","id":21,"method":"tools/list","method":"ping"}"#.into(), json!(21), -32600),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#.into(), Value::Null, -32600),
        // Well-formed but wrong: rmcp's own errors.
        (r#"{"jsonrpc":"2.0","id":12,"method":"no/such/method"}"#.into(), json!(12), -32601),
        (r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"nope","arguments":{}}}"#.into(), json!(13), -32602),
        // tools/call without `name`: invalid params, not "method not found" (issue 16).
        (r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{}}"#.into(), json!(14), -32602),
        (r#"{"jsonrpc":"2.0","id":15,"method":"tools/call"}"#.into(), json!(15), -32602),
        (r#"{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":7}}"#.into(), json!(16), -32602),
    ]
}

#[test]
fn malformed_lines_get_errors_and_serving_continues() {
    for runtime in ["multi_thread", "block_on", "current_thread"] {
        let mut s = Server::start(runtime);
        // Garbage before initialize is answered too.
        let r = s.ask("not json before initialize");
        assert_eq!(error_code(&r), -32700, "{r}");
        assert_eq!(r["id"], Value::Null);
        s.initialize();
        s.call_echo(100, "first");
        for (i, (line, id, code)) in malformed().into_iter().enumerate() {
            let r = s.ask(&line);
            assert_eq!(error_code(&r), code, "[{runtime}] line {line:?} -> {r}");
            assert_eq!(r["id"], id, "[{runtime}] line {line:?} -> {r}");
            assert_eq!(r["jsonrpc"], "2.0");
            // Still serving after every bad line.
            s.call_echo(200 + i as u64, &format!("after-{i}"));
        }
        // Blank lines are ignored; CRLF line ends are accepted.
        s.send("");
        s.send("   ");
        let r = s.ask("{\"jsonrpc\":\"2.0\",\"id\":300,\"method\":\"tools/list\"}\r");
        assert_eq!(r["id"], 300);
        let names: Vec<&str> = r["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["run", "run_script"]);
        s.finish();
    }
}

#[test]
fn bad_tool_arguments_are_tool_errors() {
    let mut s = Server::start("multi_thread");
    s.initialize();
    for (id, args, needle) in [
        (1u64, json!({"argv":"echo hi"}), "expected a sequence"),
        (2, json!({}), "missing field `argv`"),
        (3, json!({"argv":["echo"],"bogus":1}), "unknown field `bogus`"),
        (4, json!({"argv":[1,2]}), "invalid type"),
    ] {
        let r = s.ask(
            &json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                "params":{"name":"run","arguments":args}})
            .to_string(),
        );
        assert_eq!(r["id"], id);
        assert_eq!(r["result"]["isError"], true, "{r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(needle), "{text}");
    }
    s.call_echo(50, "still here");
    s.finish();
}

/// Red team F8: JSON-RPC 2.0 / MCP deviations. Duplicate `id`s got an error without `id`; a
/// notification or a response as the first message got an error and the server exited 1; an
/// unknown method before `initialize` got -32602 about `_meta`; `"params":[]` got -32600; an id
/// of `1e400` got a parse error with id null.
#[test]
fn mcp_protocol_deviations_before_and_after_initialize() {
    for runtime in ["multi_thread", "current_thread"] {
        let mut s = Server::start(runtime);
        // A notification and a response first: no reply, the server goes on.
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
        s.send(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#);
        // Unknown method before initialize: method not found.
        let r = s.ask(r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#);
        assert_eq!((error_code(&r), &r["id"]), (-32601, &json!(2)), "[{runtime}] {r}");
        // The first reply is to that request: the three lines before got none.
        let r = s.ask(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[]}"#);
        assert_eq!((error_code(&r), &r["id"]), (-32602, &json!(3)), "[{runtime}] {r}");
        let r = s.ask(r#"{"jsonrpc":"2.0","id":4,"id":4,"method":"ping"}"#);
        assert_eq!((error_code(&r), &r["id"]), (-32600, &json!(4)), "[{runtime}] {r}");
        let r = s.ask(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#);
        assert_eq!(
            (&r["id"], &r["result"]),
            (&json!(5), &json!({})),
            "[{runtime}] {r}"
        );
        s.initialize();
        // An id of 1e400 is valid JSON: answered, with the id as written.
        s.send(r#"{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}"#);
        let l = s.lines.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(l.contains("\"id\":1e400"), "[{runtime}] {l}");
        assert!(l.contains("\"tools\""), "[{runtime}] {l}");
        // After initialize notifications still get no reply; an unknown method -32601.
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#);
        let r = s.ask(r#"{"jsonrpc":"2.0","id":6,"method":"no/such/method"}"#);
        assert_eq!((error_code(&r), &r["id"]), (-32601, &json!(6)), "[{runtime}] {r}");
        s.call_echo(7, "still here");
        s.finish();
    }
}

/// An `IEC_MCP_RUNTIME` the server does not know: exit 1 before serving, the variable named on
/// stderr, nothing on stdout.
#[test]
fn an_unknown_runtime_is_an_error_naming_the_variable() {
    let out = Command::new(env!("CARGO_BIN_EXE_iec-mcp"))
        .env("IEC_MCP_RUNTIME", "tokio")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "iec-mcp: environment variable IEC_MCP_RUNTIME=\"tokio\": expected multi_thread, block_on or current_thread; fix or unset it\n"
    );
}
