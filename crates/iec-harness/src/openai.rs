//! The OpenAI side of the replay server: the Responses API (`POST /v1/responses`, as Codex
//! speaks it) and Chat Completions (`POST /v1/chat/completions`, for OpenAI-compatible agents),
//! streaming (SSE) and non-streaming, answering from the same [`Script`](crate::Script).
//!
//! **Shell tool.** Taken from the request's own tool list ([`shell_tool`]): the first of
//! `exec_command`, `shell_command`, `shell`, `bash` that is offered, else the first function
//! whose name contains `shell`, `bash` or `exec`. Its arguments are built from its schema: a
//! string property `cmd` (Codex 0.171.0's `exec_command`) or `command` gets the text; an array
//! property `command` (Codex's older `shell`) gets `["bash", "-lc", text]`.
//!
//! **Turns.** A request with a shell tool is a main-loop request; its turn is the number of tool
//! outputs it carries (`function_call_output` items, or `role: "tool"` messages), so a retried
//! request gets the same answer. Turn `k < n` answers one function call with call id
//! `call_iec_<k>`; turn `n` answers the final text. Requests without a shell tool get the side
//! text.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, Uri};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::server::{
    content_text, json_response, main_requests, model_of, read_request, sse_response, wants_stream, Inner,
    RecordedRequest, ToolResult,
};

/// Adds the Responses and Chat Completions endpoints.
pub(crate) fn routes(router: Router<Arc<Inner>>) -> Router<Arc<Inner>> {
    router
        .route("/v1/responses", post(responses))
        .route("/v1/chat/completions", post(chat_completions))
}

/// The call id the server gives the function call of script call `k`.
pub fn call_id(k: usize) -> String {
    format!("call_iec_{k:04}")
}

/// How the command text goes into the shell tool's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellArg {
    /// A string property (named) that takes the text.
    Text(String),
    /// An array property (named) that takes `["bash", "-lc", text]`.
    Argv(String),
}

/// The shell tool of an OpenAI request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellTool {
    pub name: String,
    pub arg: ShellArg,
    /// The string property that takes the call's working directory, when the tool declares one
    /// (`workdir`: Codex's `exec_command`, `shell_command` and `shell`).
    pub workdir: Option<String>,
}

impl ShellTool {
    /// The arguments object for `command`.
    pub fn arguments(&self, command: &str) -> Value {
        match &self.arg {
            ShellArg::Text(p) => json!({ p.as_str(): command }),
            ShellArg::Argv(p) => json!({ p.as_str(): ["bash", "-lc", command] }),
        }
    }

    /// The arguments object for `command` run in `dir`: [`ShellTool::arguments`] with the
    /// working-directory property when the tool declares one (else `dir` is not sent).
    pub fn arguments_in(&self, command: &str, dir: Option<&str>) -> Value {
        let mut args = self.arguments(command);
        if let (Some(p), Some(d)) = (&self.workdir, dir) {
            args[p.as_str()] = json!(d);
        }
        args
    }
}

/// `(name, parameters)` of every function tool: Responses (`{type, name, parameters}`) and
/// Chat Completions (`{type, function: {name, parameters}}`) shapes.
fn function_tools(body: &Value) -> Vec<(String, Value)> {
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return vec![];
    };
    tools
        .iter()
        .filter(|t| t.get("type").and_then(Value::as_str).unwrap_or("function") == "function")
        .filter_map(|t| {
            let f = t.get("function").unwrap_or(t);
            let name = f.get("name")?.as_str()?.to_string();
            Some((name, f.get("parameters").cloned().unwrap_or(Value::Null)))
        })
        .collect()
}

/// The shell tool in a request's tool list, if any.
pub fn shell_tool(body: &Value) -> Option<ShellTool> {
    let tools = function_tools(body);
    let preferred = ["exec_command", "shell_command", "shell", "bash"];
    let (name, params) = preferred
        .iter()
        .find_map(|p| tools.iter().find(|(n, _)| n == p))
        .or_else(|| {
            tools.iter().find(|(n, _)| {
                let n = n.to_ascii_lowercase();
                n.contains("shell") || n.contains("bash") || n.contains("exec")
            })
        })?;
    let props = params.get("properties");
    let ty = |p: &str| props?.get(p)?.get("type")?.as_str().map(String::from);
    let arg = if ty("cmd").as_deref() == Some("string") {
        ShellArg::Text("cmd".into())
    } else if ty("command").as_deref() == Some("array") {
        ShellArg::Argv("command".into())
    } else {
        ShellArg::Text("command".into())
    };
    let workdir = (ty("workdir").as_deref() == Some("string")).then(|| "workdir".to_string());
    Some(ShellTool {
        name: name.clone(),
        arg,
        workdir,
    })
}

/// The tool outputs a request carries, as `(call_id, output text)`: Responses
/// `function_call_output` items and Chat Completions `role: "tool"` messages.
fn tool_outputs(body: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for item in body.get("input").and_then(Value::as_array).into_iter().flatten() {
        if item.get("type").and_then(Value::as_str) == Some("function_call_output") {
            let id = item.get("call_id").and_then(Value::as_str).unwrap_or_default();
            out.push((id.to_string(), content_text(item.get("output"))));
        }
    }
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if m.get("role").and_then(Value::as_str) == Some("tool") {
            let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
            out.push((id.to_string(), content_text(m.get("content"))));
        }
    }
    out
}

/// The exit code a tool output reports (`Process exited with code N`, Codex's unified exec;
/// `Exit code: N`, its freeform shell output).
pub fn reported_exit_code(output: &str) -> Option<i32> {
    output.lines().find_map(|l| {
        let l = l.trim();
        l.strip_prefix("Process exited with code ")
            .or_else(|| l.strip_prefix("Exit code: "))
            .and_then(|n| n.trim().parse().ok())
    })
}

/// The output the harness sent back for script call `k` (first request carrying it). An OpenAI
/// tool output has no error flag: `is_error` is set when the text reports a nonzero exit code.
pub fn tool_result(requests: &[RecordedRequest], k: usize) -> Option<ToolResult> {
    let id = call_id(k);
    main_requests(requests)
        .find_map(|r| tool_outputs(&r.body).into_iter().find(|(c, _)| *c == id))
        .map(|(c, content)| ToolResult {
            tool_use_id: c,
            is_error: reported_exit_code(&content).is_some_and(|n| n != 0),
            content,
        })
}

/// The arguments of script call `k` as the harness echoed them back in a later request
/// (Responses `function_call` item, or Chat Completions assistant `tool_calls`), parsed.
pub fn echoed_arguments(requests: &[RecordedRequest], k: usize) -> Option<Value> {
    let id = call_id(k);
    let parse = |a: &Value| match a {
        Value::String(s) => serde_json::from_str(s).ok(),
        v => Some(v.clone()),
    };
    requests.iter().find_map(|r| {
        let body = &r.body;
        let from_input = body
            .get("input")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|i| {
                i.get("type").and_then(Value::as_str) == Some("function_call")
                    && i.get("call_id").and_then(Value::as_str) == Some(id.as_str())
            })
            .and_then(|i| parse(i.get("arguments")?));
        from_input.or_else(|| {
            body.get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|m| m.get("tool_calls")?.as_array())
                .flatten()
                .find(|c| c.get("id").and_then(Value::as_str) == Some(id.as_str()))
                .and_then(|c| parse(c.get("function")?.get("arguments")?))
        })
    })
}

enum Reply {
    Call {
        id: String,
        name: String,
        arguments: String,
    },
    Text(String),
}

/// A request to either endpoint, recorded and answered from the script.
struct Answer {
    body: Value,
    reply: Reply,
    /// The number of requests so far (for the answer's ids).
    n: usize,
    model: String,
}

/// Records and reads the request, decides the reply, and thinks before a call.
async fn answer(inner: &Inner, method: &Method, uri: &Uri, body: &Bytes) -> Answer {
    let (value, main) = read_request((inner, method, uri, body), shell_tool, |b| tool_outputs(b).len());
    let turn = main.as_ref().map_or(0, |m| m.turn);
    let reply = match main {
        Some(main) => match main.command {
            Some(cmd) => Reply::Call {
                id: call_id(main.turn),
                arguments: main
                    .tool
                    .arguments_in(&cmd, inner.workdir(main.turn).as_deref())
                    .to_string(),
                name: main.tool.name,
            },
            None => Reply::Text(inner.script.final_text.clone()),
        },
        None => Reply::Text(inner.script.side_text.clone()),
    };
    if matches!(reply, Reply::Call { .. }) {
        inner.think_before(turn).await;
    }
    Answer {
        n: inner.requests.lock().unwrap().len(),
        model: model_of(&value, "replay"),
        body: value,
        reply,
    }
}

/// SSE events: each an optional event name and its data.
fn sse(events: Vec<(Option<&str>, String)>) -> Response {
    let mut out = String::new();
    for (name, data) in events {
        if let Some(n) = name {
            out.push_str("event: ");
            out.push_str(n);
            out.push('\n');
        }
        out.push_str("data: ");
        out.push_str(&data);
        out.push_str("\n\n");
    }
    sse_response(out)
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `POST /v1/responses`.
async fn responses(State(inner): State<Arc<Inner>>, method: Method, uri: Uri, body: Bytes) -> Response {
    answer(&inner, &method, &uri, &body).await.as_response()
}

/// `POST /v1/chat/completions`.
async fn chat_completions(
    State(inner): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    answer(&inner, &method, &uri, &body).await.as_chat_completion()
}

impl Answer {
    /// The answer as a Responses API response (streamed as its four events when asked).
    fn as_response(&self) -> Response {
        let n = self.n;
        let item = match &self.reply {
            Reply::Call { id, name, arguments } => json!({
                "type": "function_call", "id": format!("fc_iec_{n:06}"), "status": "completed",
                "call_id": id, "name": name, "arguments": arguments}),
            Reply::Text(t) => json!({
                "type": "message", "id": format!("msg_iec_{n:06}"), "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": t, "annotations": []}]}),
        };
        let usage = json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110});
        let response = |status: &str, output: Value| {
            json!({"id": format!("resp_iec_{n:06}"), "object": "response", "created_at": unix_now(),
                   "status": status, "model": self.model, "output": output, "usage": usage})
        };
        if !wants_stream(&self.body) {
            return json_response(&response("completed", json!([item])));
        }
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        let events = vec![
            (
                Some("response.created"),
                json!({"type": "response.created", "sequence_number": 0,
                       "response": response("in_progress", json!([]))}),
            ),
            (
                Some("response.output_item.added"),
                json!({"type": "response.output_item.added", "sequence_number": 1,
                       "output_index": 0, "item": added}),
            ),
            (
                Some("response.output_item.done"),
                json!({"type": "response.output_item.done", "sequence_number": 2,
                       "output_index": 0, "item": item}),
            ),
            (
                Some("response.completed"),
                json!({"type": "response.completed", "sequence_number": 3,
                       "response": response("completed", json!([item]))}),
            ),
        ];
        sse(events.into_iter().map(|(n, d)| (n, d.to_string())).collect())
    }

    /// The answer as a Chat Completions completion (streamed as one chunk, the finish and
    /// `[DONE]` when asked).
    fn as_chat_completion(&self) -> Response {
        let id = format!("chatcmpl-iec-{:06}", self.n);
        let (model, created) = (&self.model, unix_now());
        let usage = json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110});
        let (message, finish) = match &self.reply {
            Reply::Call { id, name, arguments } => (
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"index": 0, "id": id, "type": "function",
                     "function": {"name": name, "arguments": arguments}}]}),
                "tool_calls",
            ),
            Reply::Text(t) => (json!({"role": "assistant", "content": t}), "stop"),
        };
        if !wants_stream(&self.body) {
            return json_response(&json!({
                "id": id, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage}));
        }
        let chunk = |delta: Value, finish: Value| {
            json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string()
        };
        let mut last = json!({"id": id, "object": "chat.completion.chunk", "created": created,
            "model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
        let wants_usage = self
            .body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if wants_usage {
            last["usage"] = usage;
        }
        sse(vec![
            (None, chunk(message, Value::Null)),
            (None, last.to_string()),
            (None, "[DONE]".to_string()),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_codex_exec_command_and_legacy_shell() {
        let b = json!({"tools": [
            {"type": "function", "name": "write_stdin", "parameters": {}},
            {"type": "function", "name": "exec_command",
             "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
            {"type": "web_search"}]});
        let t = shell_tool(&b).unwrap();
        assert_eq!(t.name, "exec_command");
        assert_eq!(t.arguments("ls"), json!({"cmd": "ls"}));
        // No working-directory property declared: the directory is not sent.
        assert_eq!(t.arguments_in("ls", Some("/w")), json!({"cmd": "ls"}));
        let b = json!({"tools": [{"type": "function", "function": {"name": "shell",
            "parameters": {"properties": {"command": {"type": "array"}}}}}]});
        let t = shell_tool(&b).unwrap();
        assert_eq!(t.arguments("ls"), json!({"command": ["bash", "-lc", "ls"]}));
        assert!(shell_tool(&json!({"tools": [{"type": "function", "name": "view_image"}]})).is_none());
    }

    #[test]
    fn a_declared_workdir_carries_the_calls_directory() {
        let b = json!({"tools": [{"type": "function", "name": "exec_command",
            "parameters": {"type": "object", "properties": {
                "cmd": {"type": "string"}, "workdir": {"type": "string"}}}}]});
        let t = shell_tool(&b).unwrap();
        assert_eq!(t.workdir.as_deref(), Some("workdir"));
        assert_eq!(
            t.arguments_in("ls 'a b'", Some("/w/x y")),
            json!({"cmd": "ls 'a b'", "workdir": "/w/x y"})
        );
        assert_eq!(t.arguments_in("ls", None), json!({"cmd": "ls"}));
    }

    #[test]
    fn exit_codes() {
        assert_eq!(
            reported_exit_code("Chunk ID: x\nProcess exited with code 127\nOutput:\n"),
            Some(127)
        );
        assert_eq!(reported_exit_code("Exit code: 0\nWall time: 0 seconds"), Some(0));
        assert_eq!(reported_exit_code("hello"), None);
    }
}
