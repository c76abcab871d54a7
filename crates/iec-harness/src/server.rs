//! A replay model server: on 127.0.0.1 with a random port, it plays the model for a real harness,
//! answering from a [`Script`] and recording every request. It speaks three model APIs, one
//! module each (its routes, how it reads a body, tool results, echoed calls): Anthropic Messages ([`crate::anthropic`]), OpenAI Responses
//! and Chat Completions ([`crate::openai`]), Gemini ([`crate::gemini_api`]).
//!
//! **Turns.** A request is a *main-loop* request when it offers the shell tool (each API names
//! and declares it its own way). Its turn is the number of tool results its conversation
//! carries, so the answer depends only on the conversation (a retried request gets the same
//! answer): turn `k < n` answers one call of that tool with `script.commands[k]`, turn `n`
//! answers `script.final_text`. Any other request (quota checks, titles, summaries, routing
//! classifiers: no shell tool) gets a short text and does not advance the script. Unknown paths
//! are logged and answered 404.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

use crate::{anthropic, gemini_api, openai};

pub use crate::anthropic::{shell_tool_name, tool_results, tool_use_id};

/// Called with the turn index the first time a main-loop request of that turn arrives, before
/// it is answered (the driver uses it to mark its witness logs).
pub type TurnHook = Arc<dyn Fn(usize) + Send + Sync>;

/// Decides the command of a turn when its first main-loop request arrives, from the turn index
/// and the script's command for it: a model whose next call depends on what the previous calls
/// did (a chain of tool calls whose step takes the previous step's output). Called once per
/// turn (a retried request of the same turn gets the same command).
#[derive(Clone)]
pub struct NextCommand(pub Arc<NextCommandFn>);

/// The function of a [`NextCommand`]: (turn, the script's command) → the command.
pub type NextCommandFn = dyn Fn(usize, &str) -> String + Send + Sync;

impl std::fmt::Debug for NextCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NextCommand(..)")
    }
}

/// What the server answers.
#[derive(Clone)]
pub struct Script {
    /// One shell tool call per turn, in order.
    pub commands: Vec<String>,
    /// The working directory of each call, by turn (missing or `None`: the harness's own). It
    /// goes into the call's arguments when the shell tool declares a parameter for it (Codex's
    /// `workdir`, Gemini CLI's `dir_path`, older `directory`); Claude Code's Bash has none, so
    /// it is not sent there.
    pub workdirs: Vec<Option<String>>,
    /// The final text (turn `commands.len()`), answered with `end_turn`.
    pub final_text: String,
    /// The text for requests that are not main-loop requests.
    pub side_text: String,
    /// Called on the first main-loop request of each turn.
    pub on_turn: Option<TurnHook>,
    /// How long the model "thinks" before each main-loop answer (a real model takes seconds;
    /// zero answers at once). Other requests are answered at once.
    pub think: std::time::Duration,
    /// Decides each turn's command in place of `commands[turn]` (which it is given); `None`:
    /// `commands` as written.
    pub next_command: Option<NextCommand>,
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
            workdirs: vec![],
            final_text: "Done.".into(),
            side_text: "OK".into(),
            on_turn: None,
            think: std::time::Duration::ZERO,
            next_command: None,
        }
    }
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("commands", &self.commands)
            .field("workdirs", &self.workdirs)
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

/// The least thinking time before the first tool call of a launch whose script thinks at all.
pub const FIRST_TURN_THINK: std::time::Duration = std::time::Duration::from_millis(1500);

pub(crate) struct Inner {
    pub(crate) script: Script,
    started: Instant,
    pub(crate) requests: Mutex<Vec<RecordedRequest>>,
    turns_seen: Mutex<Vec<usize>>,
    /// The command decided for each turn so far (with [`Script::next_command`]).
    decided: Mutex<std::collections::BTreeMap<usize, String>>,
}

impl Inner {
    /// Waits the script's thinking time (before a main-loop answer).
    pub(crate) async fn think(&self) {
        if !self.script.think.is_zero() {
            tokio::time::sleep(self.script.think).await;
        }
    }

    /// Waits before the answer to turn `turn`: the thinking time, and for the first turn at
    /// least [`FIRST_TURN_THINK`] when the script thinks at all. A real model's first answer
    /// takes seconds; Gemini CLI 0.11–0.27 load their command parser after start-up and refuse
    /// every call that comes sooner ("could not be parsed safely"), which a user never meets.
    pub(crate) async fn think_before(&self, turn: usize) {
        if turn == 0 && !self.script.think.is_zero() {
            tokio::time::sleep(self.script.think.max(FIRST_TURN_THINK)).await;
        } else {
            self.think().await;
        }
    }

    /// What the script answers a request read as `main` (`None`: a side request): a main-loop
    /// request waits the thinking time, then gets its turn, the shell tool and the command, or,
    /// past the script's end, the final text; a side request gets `side()`.
    pub(crate) async fn answer<T>(
        &self,
        main: Option<MainTurn<T>>,
        side: impl FnOnce() -> String,
    ) -> Result<(usize, T, String), String> {
        let Some(main) = main else { return Err(side()) };
        self.think_before(main.turn).await;
        match main.command {
            Some(cmd) => Ok((main.turn, main.tool, cmd)),
            None => Err(self.script.final_text.clone()),
        }
    }

    /// The command of turn `turn` (`None` past the script's end): `commands[turn]`, or what
    /// [`Script::next_command`] decided for it the first time it was asked.
    pub(crate) fn command(&self, turn: usize) -> Option<String> {
        let scripted = self.script.commands.get(turn)?;
        let Some(next) = &self.script.next_command else {
            return Some(scripted.clone());
        };
        let mut decided = self.decided.lock().unwrap();
        Some(
            decided
                .entry(turn)
                .or_insert_with(|| (next.0)(turn, scripted))
                .clone(),
        )
    }

    /// The working directory of the script's call `turn`, if it has one.
    pub(crate) fn workdir(&self, turn: usize) -> Option<String> {
        self.script.workdirs.get(turn).cloned().flatten()
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
            decided: Mutex::new(Default::default()),
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
                    let app = gemini_api::routes(openai::routes(anthropic::routes(Router::new())))
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
        tool_result_in(&self.requests(), k)
    }

    /// The `input` of the script's tool call `k` as the harness echoed it back in the assistant
    /// turn of a later request (the harness's own record of what the model emitted).
    pub fn echoed_input(&self, k: usize) -> Option<Value> {
        echoed_input_in(&self.requests(), k)
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

/// [`ReplayHandle::tool_result`] over `requests` (taken once with [`ReplayHandle::requests`]:
/// every request carries the whole conversation, so a copy per call grows with the cube of the
/// calls).
pub fn tool_result_in(requests: &[RecordedRequest], k: usize) -> Option<ToolResult> {
    anthropic::tool_result(requests, k)
        .or_else(|| openai::tool_result(requests, k))
        .or_else(|| gemini_api::tool_result(requests, k))
}

/// [`ReplayHandle::echoed_input`] over `requests` (see [`tool_result_in`]).
pub fn echoed_input_in(requests: &[RecordedRequest], k: usize) -> Option<Value> {
    openai::echoed_arguments(requests, k)
        .or_else(|| gemini_api::echoed_arguments(requests, k))
        .or_else(|| anthropic::echoed_input(requests, k))
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

/// Any other path: logged, and answered 404 with an Anthropic-style error body.
async fn fallback(State(inner): State<Arc<Inner>>, method: Method, uri: Uri, body: Bytes) -> Response {
    record(&inner, &method, &uri, &body, "unknown".into());
    json_status(
        StatusCode::NOT_FOUND,
        &json!({"type": "error", "error": {"type": "not_found_error", "message": format!("replay server: no {} {}", method, uri.path())}}),
    )
}

/// A main-loop request as read: its turn, the shell tool it offers, and the script's command for
/// the turn (`None` past the script's end: the final text answers).
pub(crate) struct MainTurn<T> {
    pub(crate) turn: usize,
    pub(crate) tool: T,
    pub(crate) command: Option<String>,
}

/// Records a request as `main:<turn>` or `side` and reads it as its API does: `shell_tool`, the
/// shell tool the body offers (`None`: a side request), and `turn`, the number of tool results
/// its conversation carries. A main-loop request enters its turn (the script's turn hook runs
/// the first time) and gets its [`MainTurn`].
pub(crate) fn read_request<T>(
    (inner, method, uri, body): (&Inner, &Method, &Uri, &Bytes),
    shell_tool: fn(&Value) -> Option<T>,
    turn: fn(&Value) -> usize,
) -> (Value, Option<MainTurn<T>>) {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let tool = shell_tool(&value);
    let turn = turn(&value);
    let role = match &tool {
        Some(_) => format!("main:{turn}"),
        None => "side".to_string(),
    };
    record(inner, method, uri, body, role);
    let main = tool.map(|tool| {
        inner.enter_turn(turn);
        MainTurn {
            turn,
            tool,
            command: inner.command(turn),
        }
    });
    (value, main)
}

/// The requests of the main loop, in arrival order.
pub(crate) fn main_requests(requests: &[RecordedRequest]) -> impl Iterator<Item = &RecordedRequest> {
    requests.iter().filter(|r| r.role.starts_with("main:"))
}

/// The text of a tool result's content: a string, or its parts' `text` joined by newlines.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The model a request names, else `default`.
pub(crate) fn model_of(body: &Value, default: &str) -> String {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or(default)
        .to_string()
}

/// Whether a request asks for a streamed answer.
pub(crate) fn wants_stream(body: &Value) -> bool {
    body.get("stream").and_then(Value::as_bool).unwrap_or(false)
}

/// A JSON answer with `status`.
pub(crate) fn json_status(status: StatusCode, v: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

/// A JSON answer.
pub(crate) fn json_response(v: &Value) -> Response {
    json_status(StatusCode::OK, v)
}

/// A server-sent-events answer with the events already written out.
pub(crate) fn sse_response(events: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        events,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inner(script: Script) -> Inner {
        Inner {
            script,
            started: Instant::now(),
            requests: Mutex::new(vec![]),
            turns_seen: Mutex::new(vec![]),
            decided: Mutex::new(Default::default()),
        }
    }

    #[test]
    fn next_command_decides_each_turn_once() {
        // As written without it.
        let plain = inner(Script::commands(["a", "b"]));
        assert_eq!(plain.command(0).as_deref(), Some("a"));
        assert_eq!(plain.command(2), None);
        // Decided from the turn and the scripted command, once: a retried request of the same
        // turn gets the first decision, whatever the function would say now.
        let calls = Arc::new(Mutex::new(0));
        let seen = calls.clone();
        let mut script = Script::commands(["a", "b"]);
        script.next_command = Some(NextCommand(Arc::new(move |turn, scripted| {
            let mut n = seen.lock().unwrap();
            *n += 1;
            format!("{scripted}-{turn}-{n}")
        })));
        let i = inner(script);
        assert_eq!(i.command(1).as_deref(), Some("b-1-1"));
        assert_eq!(i.command(1).as_deref(), Some("b-1-1"));
        assert_eq!(i.command(0).as_deref(), Some("a-0-2"));
        // Past the script's end: the final text, and the function is not asked.
        assert_eq!(i.command(2), None);
        assert_eq!(*calls.lock().unwrap(), 2);
    }
}
