//! The Gemini side of the replay server: the Gemini API as the `@google/genai` SDK speaks it
//! (`POST /v1beta/models/<model>:generateContent`, `:streamGenerateContent?alt=sse`,
//! `:countTokens`; also under `/v1/` and `/v1alpha/`), answering from the same
//! [`Script`](crate::Script). Gemini CLI sends its requests here when `GOOGLE_GEMINI_BASE_URL`
//! names the server.
//!
//! **Shell tool.** Taken from the request's own tool list (`tools[].functionDeclarations[]`):
//! `run_shell_command` when offered, else the first declaration whose name contains `shell` or
//! `bash`. Its arguments are `{"command": TEXT}`, and the call's working directory (when the
//! script gives one) in the string parameter the declaration has for it: `dir_path` (0.61.0),
//! older `directory`.
//!
//! **Turns.** A request with a shell tool is a main-loop request; its turn is the number of
//! `functionResponse` parts in its `contents`, so a retried request gets the same answer. Turn
//! `k < n` answers one `functionCall` part (id `gemini_iec_<k>`); turn `n` answers the final
//! text. Other requests (routing classifiers, summaries: no shell tool) get the side text, or,
//! when they ask for JSON (`generationConfig.responseMimeType: "application/json"`), the
//! smallest value of their `responseJsonSchema`/`responseSchema` (numbers 0: a loop-detection
//! check then reports no loop).
//!
//! **Tool results.** Gemini CLI sends `{"functionResponse": {"id", "name", "response":
//! {"output": TEXT}}}`; the text is `Output: …` followed by optional `Error: …`, `Exit Code: N`,
//! `Signal: …`, `Background PIDs: …` and `Process Group PGID: N` lines, all inside
//! `<untrusted_context>` tags. A Gemini function response has no error flag:
//! [`ToolResult::is_error`] is set when the text reports a nonzero `Exit Code`, a `Signal` or an
//! `Error`, or when the response is `{"error": …}`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::server::{
    json_response, json_status, main_requests, read_request, record, sse_response, Inner, RecordedRequest,
    ToolResult,
};

/// Adds the Gemini API's endpoints (`generateContent` and `streamGenerateContent` of any model).
pub(crate) fn routes(router: Router<Arc<Inner>>) -> Router<Arc<Inner>> {
    router
        .route("/v1beta/models/{call}", post(models))
        .route("/v1/models/{call}", post(models))
        .route("/v1alpha/models/{call}", post(models))
}

/// The id the server gives the `functionCall` of script call `k`.
pub fn call_id(k: usize) -> String {
    format!("gemini_iec_{k:04}")
}

/// The function declarations of a request: `(name, parameters schema)`.
fn declarations(body: &Value) -> Vec<(String, Value)> {
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return vec![];
    };
    tools
        .iter()
        .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
        .flatten()
        .filter_map(|d| {
            let name = d.get("name")?.as_str()?.to_string();
            let params = d
                .get("parametersJsonSchema")
                .or_else(|| d.get("parameters"))
                .cloned()
                .unwrap_or(Value::Null);
            Some((name, params))
        })
        .collect()
}

/// The shell tool's name in a request's tool list, if any.
pub fn shell_tool(body: &Value) -> Option<String> {
    shell_declaration(body).map(|(n, _)| n)
}

/// The parameters the shell tool declares for the working directory of a call, newest first.
pub const DIR_PARAMS: [&str; 2] = ["dir_path", "directory"];

/// The shell tool in a request's tool list and its working-directory parameter (the first of
/// [`DIR_PARAMS`] it declares as a string), if any.
pub fn shell_tool_and_dir(body: &Value) -> Option<(String, Option<String>)> {
    let (name, params) = shell_declaration(body)?;
    let dir = DIR_PARAMS.into_iter().find(|p| {
        params
            .get("properties")
            .and_then(|ps| ps.get(*p))
            .and_then(|d| d.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|t| t.eq_ignore_ascii_case("string"))
    });
    Some((name, dir.map(String::from)))
}

/// The shell tool's declaration: its name and parameters schema.
fn shell_declaration(body: &Value) -> Option<(String, Value)> {
    let decls = declarations(body);
    decls
        .iter()
        .find(|(n, _)| n == "run_shell_command")
        .or_else(|| {
            decls.iter().find(|(n, _)| {
                let n = n.to_ascii_lowercase();
                n.contains("shell") || n.contains("bash")
            })
        })
        .cloned()
}

/// The parts of every content of a request, in order, with the content's role.
fn parts(body: &Value) -> Vec<(&str, &Value)> {
    let mut out = Vec::new();
    for c in body
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = c.get("role").and_then(Value::as_str).unwrap_or("user");
        for p in c.get("parts").and_then(Value::as_array).into_iter().flatten() {
            out.push((role, p));
        }
    }
    out
}

/// The `functionResponse` objects of a request, in order.
pub fn function_responses(body: &Value) -> Vec<&Value> {
    parts(body)
        .into_iter()
        .filter_map(|(_, p)| p.get("functionResponse"))
        .collect()
}

/// The `functionCall` objects of the model's contents in a request, in order.
pub fn function_calls(body: &Value) -> Vec<&Value> {
    parts(body)
        .into_iter()
        .filter(|(role, _)| *role == "model")
        .filter_map(|(_, p)| p.get("functionCall"))
        .collect()
}

/// The text of a function response: `response.output` (a string), else `response.error`, else
/// the response as JSON.
fn response_text(fr: &Value) -> (String, bool) {
    let r = fr.get("response").unwrap_or(&Value::Null);
    if let Some(s) = r.get("output").and_then(Value::as_str) {
        return (s.to_string(), false);
    }
    match r.get("error") {
        Some(Value::String(s)) => (s.clone(), true),
        Some(e) => (e.to_string(), true),
        None => (r.to_string(), false),
    }
}

/// The text inside `<untrusted_context>` tags (the tags Gemini CLI wraps tool output in), with
/// the escaped closing tag restored; the text itself when it has no such tags.
pub fn untrusted_inner(text: &str) -> String {
    let t = text
        .strip_prefix("<untrusted_context>\n")
        .and_then(|t| t.strip_suffix("\n</untrusted_context>"));
    match t {
        Some(inner) => inner.replace("&lt;/untrusted_context&gt;", "</untrusted_context>"),
        None => text.to_string(),
    }
}

/// The trailer lines Gemini CLI's shell tool puts after the output, from last to first.
const TRAILERS: &[&str] = &[
    "Process Group PGID: ",
    "Background PIDs: ",
    "Signal: ",
    "Exit Code: ",
    "Error: ",
];

/// A shell tool result split into the command's output and the trailer lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellOutput {
    /// The combined stdout/stderr (`(empty)` as the empty string).
    pub output: String,
    /// The nonzero exit code, if reported.
    pub exit_code: Option<i32>,
    /// The `Signal:`, `Error:` trailer values.
    pub signal: Option<String>,
    pub error: Option<String>,
    /// Whether the text was the shell tool's `Output: …` form at all.
    pub recognized: bool,
}

/// Splits a `run_shell_command` result (`Output: …` and its trailer lines).
pub fn shell_output(content: &str) -> ShellOutput {
    let inner = untrusted_inner(content);
    let Some(mut body) = inner.strip_prefix("Output: ").map(str::to_string) else {
        return ShellOutput {
            output: inner,
            exit_code: None,
            signal: None,
            error: None,
            recognized: false,
        };
    };
    let (mut exit_code, mut signal, mut error) = (None, None, None);
    // Peel trailer lines off the end in the order the tool writes them (reversed).
    for prefix in TRAILERS {
        let Some(i) = body.rfind(&format!("\n{prefix}")) else {
            continue;
        };
        let value = &body[i + 1 + prefix.len()..];
        // An `Error:` value may span lines; the others are one line.
        if *prefix != "Error: " && value.contains('\n') {
            continue;
        }
        match *prefix {
            "Exit Code: " => exit_code = value.trim().parse().ok(),
            "Signal: " => signal = Some(value.to_string()),
            "Error: " => error = Some(value.to_string()),
            _ => {}
        }
        body.truncate(i);
    }
    if body == "(empty)" {
        body.clear();
    }
    ShellOutput {
        output: body,
        exit_code,
        signal,
        error,
        recognized: true,
    }
}

/// The tool result the harness sent back for script call `k`: the function response with the
/// server's id for call `k`, else the `k`-th function response of a request that carries more
/// than `k` (the harness may give calls its own ids).
pub fn tool_result(requests: &[RecordedRequest], k: usize) -> Option<ToolResult> {
    let id = call_id(k);
    let mains = || main_requests(requests);
    let fr = mains()
        .find_map(|r| {
            function_responses(&r.body)
                .into_iter()
                .find(|f| f.get("id").and_then(Value::as_str) == Some(id.as_str()))
                .cloned()
        })
        .or_else(|| mains().find_map(|r| function_responses(&r.body).get(k).map(|f| (*f).clone())))?;
    let (content, flagged) = response_text(&fr);
    let so = shell_output(&content);
    Some(ToolResult {
        tool_use_id: fr
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        is_error: flagged
            || so.exit_code.is_some_and(|c| c != 0)
            || so.signal.is_some()
            || so.error.is_some(),
        content,
    })
}

/// The `args` of script call `k` as the harness echoed them back in a later request (the model
/// turn's `functionCall`), matched by id, else by position.
pub fn echoed_arguments(requests: &[RecordedRequest], k: usize) -> Option<Value> {
    let id = call_id(k);
    let gemini = || {
        requests
            .iter()
            .filter(|r| r.role.starts_with("main:") && r.uri.contains("/models/"))
    };
    gemini()
        .find_map(|r| {
            function_calls(&r.body)
                .into_iter()
                .find(|c| c.get("id").and_then(Value::as_str) == Some(id.as_str()))
                .and_then(|c| c.get("args").cloned())
        })
        .or_else(|| {
            gemini().find_map(|r| {
                function_calls(&r.body)
                    .get(k)
                    .and_then(|c| c.get("args").cloned())
            })
        })
}

/// The smallest value a JSON schema (Gemini's upper-case `type` names or JSON Schema's) allows.
pub fn schema_value(schema: &Value) -> Value {
    if let Some(e) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return e.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::String(s)) => s.to_ascii_lowercase(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null")
            .to_ascii_lowercase(),
        _ if schema.get("properties").is_some() => "object".into(),
        _ => "string".into(),
    };
    match ty.as_str() {
        "object" => {
            let mut o = serde_json::Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    o.insert(k.clone(), schema_value(v));
                }
            }
            Value::Object(o)
        }
        "array" => json!([]),
        // 0 (or the minimum): a loop-detection check's `unproductive_state_confidence` of 0
        // lets the session go on.
        "integer" => json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(0)),
        "number" => json!(schema.get("minimum").and_then(Value::as_f64).unwrap_or(0.0)),
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => json!(""),
    }
}

enum Reply {
    Call { name: String, args: Value, id: String },
    Text(String),
}

/// `POST /v1beta/models/<model>:<method>` (and `/v1/`, `/v1alpha/`).
async fn models(State(inner): State<Arc<Inner>>, method: Method, uri: Uri, body: Bytes) -> Response {
    let path = uri.path();
    let tail = path.rsplit('/').next().unwrap_or("");
    let (model, action) = tail.rsplit_once(':').unwrap_or((tail, ""));
    match action {
        "generateContent" | "streamGenerateContent" => {}
        "countTokens" => {
            record(&inner, &method, &uri, &body, "count_tokens".into());
            return json_response(&json!({"totalTokens": 100}));
        }
        _ => {
            record(&inner, &method, &uri, &body, "unknown".into());
            return json_status(
                StatusCode::NOT_FOUND,
                &json!({"error": {"code": 404, "status": "NOT_FOUND",
                    "message": format!("replay server: no {} {}", method, path)}}),
            );
        }
    }
    let (value, main) = read_request((&inner, &method, &uri, &body), shell_tool_and_dir, |b| {
        function_responses(b).len()
    });
    let reply = match inner.answer(main, || side_text(&inner, &value)).await {
        Ok((turn, (name, dir_param), cmd)) => Reply::Call {
            name,
            args: call_args(&cmd, dir_param.as_deref(), inner.workdir(turn).as_deref()),
            id: call_id(turn),
        },
        Err(text) => Reply::Text(text),
    };
    let n = inner.requests.lock().unwrap().len();
    let part = match &reply {
        Reply::Call { name, args, id } => json!({"functionCall": {"id": id, "name": name, "args": args}}),
        Reply::Text(t) => json!({"text": t}),
    };
    let doc = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
        "modelVersion": model,
        "responseId": format!("gemini_iec_resp_{n:06}"),
    });
    if action == "streamGenerateContent" {
        // The SDK asks for `alt=sse`; one event carries the whole candidate.
        sse_response(format!("data: {doc}\r\n\r\n"))
    } else {
        json_response(&doc)
    }
}

/// The `args` of a shell call: `{"command": TEXT}`, and the working directory in `dir_param`
/// when the tool declares one and the call has one.
fn call_args(command: &str, dir_param: Option<&str>, dir: Option<&str>) -> Value {
    let mut args = json!({ "command": command });
    if let (Some(p), Some(d)) = (dir_param, dir) {
        args[p] = json!(d);
    }
    args
}

/// The answer to a side request: the smallest value of its schema when it asks for JSON, else
/// the script's side text.
fn side_text(inner: &Inner, body: &Value) -> String {
    let config = body.get("generationConfig");
    let wants_json = config
        .and_then(|c| c.get("responseMimeType"))
        .and_then(Value::as_str)
        == Some("application/json");
    let schema = config.and_then(|c| c.get("responseJsonSchema").or_else(|| c.get("responseSchema")));
    match (wants_json, schema) {
        (true, Some(s)) => schema_value(s).to_string(),
        (true, None) => "{}".into(),
        _ => inner.script.side_text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_shell_output() {
        let c = "<untrusted_context>\nOutput: hi\nthere\nExit Code: 3\nProcess Group PGID: 42\n</untrusted_context>";
        let s = shell_output(c);
        assert_eq!(s.output, "hi\nthere");
        assert_eq!(s.exit_code, Some(3));
        assert!(s.recognized);
        let s =
            shell_output("<untrusted_context>\nOutput: (empty)\nProcess Group PGID: 7\n</untrusted_context>");
        assert_eq!(s.output, "");
        assert_eq!(s.exit_code, None);
        let s = shell_output("Command injection detected: …");
        assert!(!s.recognized);
    }

    #[test]
    fn schema_values() {
        let s = json!({"type": "OBJECT", "properties": {
            "complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}}});
        assert_eq!(
            schema_value(&s),
            json!({"complexity_reasoning": "", "complexity_score": 0})
        );
        assert_eq!(
            schema_value(&json!({"type": "string", "enum": ["user", "model"]})),
            json!("user")
        );
    }

    #[test]
    fn picks_run_shell_command() {
        let b = json!({"tools": [{"functionDeclarations": [
            {"name": "read_file", "parametersJsonSchema": {}},
            {"name": "run_shell_command", "parametersJsonSchema": {"type": "object"}}]}]});
        assert_eq!(shell_tool(&b).as_deref(), Some("run_shell_command"));
        assert_eq!(
            shell_tool_and_dir(&b),
            Some(("run_shell_command".to_string(), None))
        );
        assert_eq!(
            shell_tool(&json!({"tools": [{"functionDeclarations": [{"name": "glob"}]}]})),
            None
        );
    }

    #[test]
    fn a_declared_dir_path_carries_the_calls_directory() {
        for param in DIR_PARAMS {
            let b = json!({"tools": [{"functionDeclarations": [{"name": "run_shell_command",
                "parametersJsonSchema": {"type": "object", "properties": {
                    "command": {"type": "string"}, param: {"type": "string"}}}}]}]});
            let (name, dir) = shell_tool_and_dir(&b).unwrap();
            assert_eq!(
                (name.as_str(), dir.as_deref()),
                ("run_shell_command", Some(param))
            );
            assert_eq!(
                call_args("ls", dir.as_deref(), Some("/w/a")),
                json!({"command": "ls", param: "/w/a"})
            );
        }
        assert_eq!(call_args("ls", Some("dir_path"), None), json!({"command": "ls"}));
        assert_eq!(call_args("ls", None, Some("/w")), json!({"command": "ls"}));
    }
}
