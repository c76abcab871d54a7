//! The Anthropic side of the replay server: the Messages API (`POST /v1/messages`, streaming SSE
//! and non-streaming; `POST /v1/messages/count_tokens`), as Claude Code speaks it.
//!
//! **Shell tool.** The request's tool named `Bash`, else the first tool whose name contains
//! `bash` (case-insensitive). **Turns.** A main-loop request's turn is the number of
//! `tool_result` blocks in its messages: turn `k < n` answers one `tool_use` block
//! `{"command": script.commands[k]}` for that tool with id `toolu_iec_<k>` and
//! `stop_reason: "tool_use"`; turn `n` answers `script.final_text` with `end_turn`; a side request
//! gets the side text. **Warm-up.** Claude Code 2.0.77 to 2.1.2 start each built-in subagent
//! once at launch with the prompt `Warmup` (its tools, Bash among them, offered; every tool call
//! denied with the message `Warmup`): such a request is a side request, else it would take the
//! script's turns and its denied calls would stand for the main loop's.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, Uri};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::server::{
    content_text, json_response, main_requests, model_of, read_request, record, sse_response, wants_stream,
    Inner, RecordedRequest, ToolResult,
};

/// Adds the Messages API's endpoints.
pub(crate) fn routes(router: Router<Arc<Inner>>) -> Router<Arc<Inner>> {
    router
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
}

/// The tool result the harness sent back for script call `k`.
pub(crate) fn tool_result(requests: &[RecordedRequest], k: usize) -> Option<ToolResult> {
    let id = tool_use_id(k);
    main_requests(requests).find_map(|r| tool_results(&r.body).into_iter().find(|t| t.tool_use_id == id))
}

/// The `input` of script call `k` as the harness echoed its `tool_use` block in a later request.
pub(crate) fn echoed_input(requests: &[RecordedRequest], k: usize) -> Option<Value> {
    let id = tool_use_id(k);
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
            out.push(ToolResult {
                tool_use_id: b
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                content: content_text(b.get("content")),
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

/// Whether a request is a subagent's warm-up: its first message is the user's `Warmup` (a text,
/// or a text block beside the harness's reminders; Claude Code 2.0.77's
/// `Ts.call({prompt:"Warmup",…})` for each built-in agent, started at launch).
pub fn is_warmup(body: &Value) -> bool {
    let Some(first) = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.first())
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    else {
        return false;
    };
    match first.get("content") {
        Some(Value::Array(parts)) => parts
            .iter()
            .any(|p| p.get("text").and_then(Value::as_str).map(str::trim) == Some("Warmup")),
        c => content_text(c).trim() == "Warmup",
    }
}

/// The shell tool of a main-loop request: [`shell_tool_name`], unless the request is a warm-up.
fn main_loop_shell_tool(body: &Value) -> Option<String> {
    if is_warmup(body) {
        return None;
    }
    shell_tool_name(body)
}

/// A main-loop request's turn: the number of distinct tool calls answered in its messages.
/// Claude Code 1.0.x before 1.0.65 repeats the exchange of a piped command in the history it
/// sends next (the `tool_use` and its `tool_result` twice, with the same id): counting blocks
/// would skip a script turn, and the skipped call would never run.
fn turn_of(body: &Value) -> usize {
    let mut ids: Vec<String> = tool_results(body).into_iter().map(|t| t.tool_use_id).collect();
    ids.sort();
    ids.dedup();
    ids.len()
}

/// `POST /v1/messages`.
async fn messages(State(inner): State<Arc<Inner>>, method: Method, uri: Uri, body: Bytes) -> Response {
    let (value, main) = read_request((&inner, &method, &uri, &body), main_loop_shell_tool, |b| {
        turn_of(b)
    });
    let reply = match inner.answer(main, || inner.script.side_text.clone()).await {
        Ok((turn, name, cmd)) => Reply::ToolUse {
            id: tool_use_id(turn),
            name,
            input: json!({ "command": cmd }),
        },
        Err(text) => Reply::Text(text),
    };
    let model = model_of(&value, "claude-replay");
    let msg_id = format!("msg_iec_{:06}", inner.requests.lock().unwrap().len());
    if wants_stream(&value) {
        sse_response(sse_body(&msg_id, &model, &reply))
    } else {
        json_response(&message_json(&msg_id, &model, &reply))
    }
}

/// `POST /v1/messages/count_tokens`.
async fn count_tokens(State(inner): State<Arc<Inner>>, method: Method, uri: Uri, body: Bytes) -> Response {
    record(&inner, &method, &uri, &body, "count_tokens".into());
    json_response(&json!({ "input_tokens": 100 }))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The history Claude Code 1.0.59 sent after a piped command (read from a real run): the
    /// exchange twice. It is turn 1, not 2.
    #[test]
    fn a_repeated_exchange_in_the_history_is_one_turn() {
        let use0 = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_iec_0000", "name": "Bash", "input": {"command": "argvprobe A1 | cat"}}]});
        let res0 = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_iec_0000", "content": "ok", "is_error": false}]});
        let first = json!({"role": "user", "content": [{"type": "text", "text": "go"}]});
        let body = json!({"messages": [first, use0, res0, use0, res0]});
        assert_eq!(tool_results(&body).len(), 2);
        assert_eq!(turn_of(&body), 1);
        let use2 = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_iec_0001", "name": "Bash", "input": {"command": "argvprobe C1"}}]});
        let res2 = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_iec_0001", "content": "ok", "is_error": false}]});
        let body = json!({"messages": [first, use0, res0, use0, res0, use2, res2]});
        assert_eq!(turn_of(&body), 2);
    }
}
