//! Issue 16, item 7 (and the MCP side of item 6), over raw stdio: each test is named after the
//! bug it holds down.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_iec-mcp"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
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
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line the server writes, as written.
    fn recv_raw(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .expect("the server answered within 20 s")
    }

    fn ask_raw(&mut self, line: &str) -> String {
        self.send(line);
        self.recv_raw()
    }

    fn ask(&mut self, line: &str) -> Value {
        let l = self.ask_raw(line);
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("server wrote non-JSON {l:?}: {e}"))
    }

    fn initialize(&mut self) {
        let r = self.ask(
            &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2025-06-18","capabilities":{},
                "clientInfo":{"name":"raw","version":"0"}}})
            .to_string(),
        );
        assert_eq!(r["id"], 1, "{r}");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }

    /// Closes stdin; the exit code and everything written to stderr.
    fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = self.child.wait().unwrap();
        (status.code().expect("exit code"), err)
    }
}

/// The `"id":…` member of a raw response line, as written.
fn raw_id(line: &str) -> &str {
    let start = line.find("\"id\":").unwrap_or_else(|| panic!("no id in {line}")) + 5;
    let len = line[start..]
        .find([',', '}'])
        .unwrap_or_else(|| panic!("unterminated id in {line}"));
    &line[start..start + len]
}

#[test]
fn a_numeric_id_above_u64_got_a_reply_without_id() {
    let mut s = Server::start();
    // initialize itself with such an id.
    let init = r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let l = s.ask_raw(init);
    assert_eq!(raw_id(&l), "18446744073709551616", "{l}");
    assert!(l.contains("\"serverInfo\""), "{l}");
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    // Ids rmcp cannot keep as a 64-bit integer come back exactly as written.
    for id in [
        "99999999999999999999",
        "-9223372036854775809",
        "1.50",
        "2e3",
        "-0",
        "340282366920938463463374607431768211456",
    ] {
        let l = s.ask_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        assert_eq!(raw_id(&l), id, "{l}");
        assert!(l.contains("\"result\":{}"), "{l}");
        let l = s.ask_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#));
        assert_eq!(raw_id(&l), id, "{l}");
        assert!(l.contains("\"run_script\""), "{l}");
        // The guard's own errors too.
        let l = s.ask_raw(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{}}}}"#
        ));
        assert_eq!(raw_id(&l), id, "{l}");
    }
    // Ordinary ids, and a string id that looks like the stand-in, pass as they are.
    for id in ["7", "-3", "9223372036854775807", "\"iec-mcp-id-1-1-1\"", "\"x\""] {
        let l = s.ask_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        assert_eq!(raw_id(&l), id, "{l}");
    }
    // A tool call with a big id: its result under that id.
    let l = s.ask_raw(
        r#"{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/call","params":{"name":"run","arguments":{"argv":["printf","%s","big"]}}}"#,
    );
    assert_eq!(raw_id(&l), "18446744073709551617", "{l}");
    let v: Value = serde_json::from_str(&l).unwrap();
    assert_eq!(v["result"]["structuredContent"]["stdout"]["text"], "big", "{l}");
    assert_eq!(s.finish(), (0, String::new()));
}

#[test]
fn tools_call_without_name_answered_method_not_found() {
    let mut s = Server::start();
    s.initialize();
    for params in [
        "",
        r#","params":{}"#,
        r#","params":{"arguments":{"argv":["true"]}}"#,
        r#","params":{"name":null}"#,
    ] {
        let r = s.ask(&format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call"{params}}}"#
        ));
        assert_eq!(r["id"], 5, "{params}: {r}");
        assert_eq!(r["error"]["code"], -32602, "{params}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("`name`"), "{r}");
    }
    // An unknown name stays rmcp's own invalid-params answer; a known one runs.
    let r =
        s.ask(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}"#);
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(s.finish(), (0, String::new()));
}

#[test]
fn iec_mcp_wrote_to_stderr() {
    // A client that closes before initializing: nothing on either stream, exit 0.
    let s = Server::start();
    assert_eq!(s.finish(), (0, String::new()));
    // A session that starts with a notification: no reply (JSON-RPC), the session goes on
    // (red team F8: it used to get an error and exit 1), nothing on stderr.
    let mut s = Server::start();
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    s.initialize();
    assert_eq!(s.finish(), (0, String::new()));
    // A session with bad lines and calls: nothing on stderr.
    let mut s = Server::start();
    s.ask("not json");
    s.initialize();
    s.ask(r#"{"jsonrpc":"2.0","id":2,"method":"no/such"}"#);
    s.ask(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run","arguments":{"argv":["/no/such/program"]}}}"#);
    assert_eq!(s.finish(), (0, String::new()));
}

#[test]
fn mcp_tool_input_over_the_text_limit_was_taken_whole() {
    let mut s = Server::start();
    s.initialize();
    let script = format!("#{}", "a".repeat(1 << 20));
    let r = s.ask(
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
            "params":{"name":"run_script","arguments":{"interpreter":"bash","script":script}}})
        .to_string(),
    );
    assert_eq!(r["result"]["isError"], true, "{r:.300}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "run_script: the script is 1048577 bytes; iec judges texts of at most 1048576 bytes (1 MiB, its text limit), so it is not checked"
    );
    assert_eq!(r["result"]["structuredContent"]["started"], false);
    let argv: Vec<String> = vec!["true".into(), "b".repeat(600 << 10), "c".repeat(600 << 10)];
    let r = s.ask(
        &json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
            "params":{"name":"run","arguments":{"argv":argv}}})
        .to_string(),
    );
    assert_eq!(r["result"]["isError"], true, "{r:.300}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("run: the command text is 1228806 bytes; iec judges texts of at most 1048576 bytes"),
        "{text}"
    );
    // Just under the limit still runs.
    let r = s.ask(
        &json!({"jsonrpc":"2.0","id":4,"method":"tools/call",
            "params":{"name":"run_script","arguments":{"interpreter":"bash","script":format!("#{}\necho ok", "a".repeat(1000))}}})
        .to_string(),
    );
    assert_eq!(
        r["result"]["structuredContent"]["stdout"]["text"], "ok\n",
        "{r:.300}"
    );
    assert_eq!(s.finish(), (0, String::new()));
}
