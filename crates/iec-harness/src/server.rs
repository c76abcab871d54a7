//! A replay model server: the Anthropic Messages API (`POST /v1/messages`, streaming SSE and
//! non-streaming; `POST /v1/messages/count_tokens`) on 127.0.0.1 with a random port, answering
//! from a [`Script`] and recording every request.
//!
//! **Turns.** A request is a *main-loop* request when its `tools` list has the shell tool (named
//! `Bash`, else the first tool whose name contains `bash`, case-insensitive). Its turn is the
//! number of `tool_result` blocks in its messages, so the answer depends only on the
//! conversation (a retried request gets the same answer): turn `k < n` answers one `tool_use`
//! block `{"command": script.commands[k]}` for that tool with id `toolu_iec_<k>` and
//! `stop_reason: "tool_use"`; turn `n` answers `script.final_text` with `end_turn`. Any other
//! `/v1/messages` request (quota checks, titles, summaries: no shell tool) gets a short text.
//! Unknown paths are logged and answered 404 with an Anthropic-style error body.
//!
//! The OpenAI Responses API (`POST /v1/responses`) and Chat Completions
//! (`POST /v1/chat/completions`) answer from the same script: see [`crate::openai`]. So does the
//! Gemini API (`POST /v1beta/models/<model>:generateContent` and `:streamGenerateContent`): see
//! [`crate::gemini_api`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

/// Called with the turn index the first time a main-loop request of that turn arrives, before
/// it is answered (the driver uses it to mark its witness logs).
pub type TurnHook = Arc<dyn Fn(usize) + Send + Sync>;

/// What the server answers.
#[derive(Clone)]
pub struct Script {
    /// One shell tool call per turn, in order.
    pub commands: Vec<String>,
    /// The final text (turn `commands.len()`), answered with `end_turn`.
    pub final_text: String,
    /// The text for requests that are not main-loop requests.
    pub side_text: String,
    /// Called on the first main-loop request of each turn.
    pub on_turn: Option<TurnHook>,
    /// How long the model "thinks" before each main-loop answer (a real model takes seconds;
    /// zero answers at once). Other requests are answered at once.
    pub think: std::time::Duration,
}

impl Script {
    /// A script that runs `commands` one per turn, then ends.
    pub fn commands<I, S>(commands: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Script {
            commands: commands.into_iter().map(Into::into).collect(),
            final_text: "Done.".into(),
            side_text: "OK".into(),
            on_turn: None,
            think: std::time::Duration::ZERO,
        }
    }
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("commands", &self.commands)
            .field("final_text", &self.final_text)
            .field("side_text", &self.side_text)
            .finish_non_exhaustive()
    }
}

/// One request as received.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RecordedRequest {
    /// Milliseconds since the server started.
    pub at_ms: u128,
    pub method: String,
    /// Path and query.
    pub uri: String,
    /// The body parsed as JSON (`Value::Null` if it is not JSON).
    pub body: Value,
    /// The body as text when it is not JSON.
    pub raw: Option<String>,
    /// What the server made of it: `main:<turn>`, `side`, `count_tokens`, `unknown`.
    pub role: String,
}

/// The tool result a main-loop request carried for one of the script's tool calls.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ToolResult {
    pub tool_use_id: String,
    pub is_error: bool,
    /// The text of the content (a string, or the `text` blocks joined by newlines).
    pub content: String,
}

pub(crate) struct Inner {
    pub(crate) script: Script,
    started: Instant,
    pub(crate) requests: Mutex<Vec<RecordedRequest>>,
    turns_seen: Mutex<Vec<usize>>,
}

impl Inner {
    /// Waits the script's thinking time (before a main-loop answer).
    pub(crate) async fn think(&self) {
        if !self.script.think.is_zero() {
            tokio::time::sleep(self.script.think).await;
        }
    }

    /// Runs the script's turn hook the first time a main-loop request of `turn` arrives.
    pub(crate) fn enter_turn(&self, turn: usize) {
        let first = {
            let mut seen = self.turns_seen.lock().unwrap();
            if seen.contains(&turn) {
                false
            } else {
                seen.push(turn);
                true
            }
        };
        if first {
            if let Some(hook) = &self.script.on_turn {
                hook(turn);
            }
        }
    }
}

/// A running server. Dropping it stops the server.
pub struct ReplayHandle {
    inner: Arc<Inner>,
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The replay server.
pub struct ReplayServer;

impl ReplayServer {
    /// Binds 127.0.0.1 on a random port and serves `script` on a background thread.
    pub fn start(script: Script) -> anyhow::Result<(SocketAddr, ReplayHandle)> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let inner = Arc::new(Inner {
            script,
            started: Instant::now(),
            requests: Mutex::new(Vec::new()),
            turns_seen: Mutex::new(Vec::new()),
        });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let state = inner.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<anyhow::Result<()>>();
        let thread = std::thread::Builder::new()
            .name("iec-replay-server".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.into()));
                        return;
                    }
                };
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(std_listener) {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e.into()));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    let app = Router::new()
                        .route("/v1/messages", post(messages))
                        .route("/v1/messages/count_tokens", post(count_tokens))
                        .route("/v1/responses", post(crate::openai::responses))
                        .route("/v1/chat/completions", post(crate::openai::chat_completions))
                        .route("/v1beta/models/{call}", post(crate::gemini_api::models))
                        .route("/v1/models/{call}", post(crate::gemini_api::models))
                        .route("/v1alpha/models/{call}", post(crate::gemini_api::models))
                        .fallback(fallback)
                        .with_state(state);
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = rx.await;
                        })
                        .await;
                });
            })?;
        ready_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("replay server thread died"))??;
        Ok((
            addr,
            ReplayHandle {
                inner,
                addr,
                stop: Some(tx),
                thread: Some(thread),
            },
        ))
    }
}

impl ReplayHandle {
    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.requests.lock().unwrap().clone()
    }

    /// Method and URI of every request to a path the server does not implement.
    pub fn unknown_paths(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|r| r.role == "unknown")
            .map(|r| format!("{} {}", r.method, r.uri))
            .collect()
    }

    /// The tool result the harness sent back for the script's call `k` (from the first recorded
    /// request that carries it).
    pub fn tool_result(&self, k: usize) -> Option<ToolResult> {
        let id = tool_use_id(k);
        let requests = self.requests();
        requests
            .iter()
            .filter(|r| r.role.starts_with("main:"))
            .find_map(|r| tool_results(&r.body).into_iter().find(|t| t.tool_use_id == id))
            .or_else(|| crate::openai::tool_result(&requests, k))
            .or_else(|| crate::gemini_api::tool_result(&requests, k))
    }

    /// The `input` of the script's tool call `k` as the harness echoed it back in the assistant
    /// turn of a later request (the harness's own record of what the model emitted).
    pub fn echoed_input(&self, k: usize) -> Option<Value> {
        let id = tool_use_id(k);
        let requests = self.requests();
        if let Some(v) = crate::openai::echoed_arguments(&requests, k) {
            return Some(v);
        }
        if let Some(v) = crate::gemini_api::echoed_arguments(&requests, k) {
            return Some(v);
        }
        requests.iter().find_map(|r| {
            r.body
                .get("messages")?
                .as_array()?
                .iter()
                .filter_map(|m| m.get("content")?.as_array())
                .flatten()
                .find(|b| {
                    b.get("type").and_then(Value::as_str) == Some("tool_use")
                        && b.get("id").and_then(Value::as_str) == Some(id.as_str())
                })
                .and_then(|b| b.get("input").cloned())
        })
    }

    /// Stops the server and waits for its thread.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ReplayHandle {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// The id the server gives the tool_use block of call `k`.
pub fn tool_use_id(k: usize) -> String {
    format!("toolu_iec_{k:04}")
}

/// The `tool_result` blocks of a Messages request body, in order.
pub fn tool_results(body: &Value) -> Vec<ToolResult> {
    let mut out = Vec::new();
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return out;
    };
    for m in messages {
        let Some(blocks) = m.get("content").and_then(Value::as_array) else {
            continue;
        };
        for b in blocks {
            if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let content = match b.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            out.push(ToolResult {
                tool_use_id: b
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                content,
            });
        }
    }
    out
}

/// The shell tool's name in a request's tool list.
pub fn shell_tool_name(body: &Value) -> Option<String> {
    let tools = body.get("tools")?.as_array()?;
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    names
        .iter()
        .find(|n| **n == "Bash")
        .or_else(|| names.iter().find(|n| n.to_ascii_lowercase().contains("bash")))
        .map(|s| s.to_string())
}

pub(crate) fn record(inner: &Inner, method: &Method, uri: &Uri, body: &Bytes, role: String) -> Value {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let raw = match parsed {
        Some(_) => None,
        None if body.is_empty() => None,
        None => Some(String::from_utf8_lossy(body).into_owned()),
    };
    let value = parsed.unwrap_or(Value::Null);
    inner.requests.lock().unwrap().push(RecordedRequest {
        at_ms: inner.started.elapsed().as_millis(),
        method: method.to_string(),
        uri: uri.to_string(),
        body: value.clone(),
        raw,
        role,
    });
    value
}

async fn messages(
    State(inner): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    _headers: HeaderMap,
    body: Bytes,
) -> Response {
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let tool = shell_tool_name(&value);
    let turn = tool_results(&value).len();
    let role = match &tool {
        Some(_) => format!("main:{turn}"),
        None => "side".to_string(),
    };
    record(&inner, &method, &uri, &body, role);
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("claude-replay")
        .to_string();
    let stream = value.get("stream").and_then(Value::as_bool).unwrap_or(false);

    let reply = match tool {
        Some(tool) => {
            inner.enter_turn(turn);
            inner.think().await;
            match inner.script.commands.get(turn) {
                Some(cmd) => Reply::ToolUse {
                    id: tool_use_id(turn),
                    name: tool,
                    input: json!({ "command": cmd }),
                },
                None => Reply::Text(inner.script.final_text.clone()),
            }
        }
        None => Reply::Text(inner.script.side_text.clone()),
    };
    let msg_id = format!("msg_iec_{:06}", inner.requests.lock().unwrap().len());
    if stream {
        (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            sse_body(&msg_id, &model, &reply),
        )
            .into_response()
    } else {
        (
            [(header::CONTENT_TYPE, "application/json")],
            message_json(&msg_id, &model, &reply).to_string(),
        )
            .into_response()
    }
}

async fn count_tokens(State(inner): State<Arc<Inner>>, method: Method, uri: Uri, body: Bytes) -> Response {
    record(&inner, &method, &uri, &body, "count_tokens".into());
    (
        [(header::CONTENT_TYPE, "application/json")],
        json!({ "input_tokens": 100 }).to_string(),
    )
        .into_response()
}

async fn fallback(State(inner): State<Arc<Inner>>, method: Method, uri: Uri, body: Bytes) -> Response {
    record(&inner, &method, &uri, &body, "unknown".into());
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "application/json")],
        json!({"type": "error", "error": {"type": "not_found_error", "message": format!("replay server: no {} {}", method, uri.path())}})
            .to_string(),
    )
        .into_response()
}

enum Reply {
    ToolUse { id: String, name: String, input: Value },
    Text(String),
}

impl Reply {
    fn stop_reason(&self) -> &'static str {
        match self {
            Reply::ToolUse { .. } => "tool_use",
            Reply::Text(_) => "end_turn",
        }
    }
}

fn usage() -> Value {
    json!({"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn message_json(id: &str, model: &str, reply: &Reply) -> Value {
    let content = match reply {
        Reply::ToolUse { id, name, input } => {
            json!([{"type": "tool_use", "id": id, "name": name, "input": input}])
        }
        Reply::Text(t) => json!([{"type": "text", "text": t}]),
    };
    json!({
        "id": id, "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": reply.stop_reason(), "stop_sequence": null,
        "usage": usage(),
    })
}

fn sse_body(id: &str, model: &str, reply: &Reply) -> String {
    let mut out = String::new();
    let mut ev = |name: &str, data: Value| {
        out.push_str("event: ");
        out.push_str(name);
        out.push_str("\ndata: ");
        out.push_str(&data.to_string());
        out.push_str("\n\n");
    };
    ev(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    );
    match reply {
        Reply::ToolUse { id, name, input } => {
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            );
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
            );
        }
        Reply::Text(t) => {
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}}),
            );
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "text_delta", "text": t}}),
            );
        }
    }
    ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": reply.stop_reason(), "stop_sequence": null},
               "usage": {"output_tokens": 10}}),
    );
    ev("message_stop", json!({"type": "message_stop"}));
    out
}
