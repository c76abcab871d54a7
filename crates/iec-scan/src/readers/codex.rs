//! Codex rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`).
//!
//! Each line is `{timestamp, type, payload}`. `session_meta` gives the session id, `cwd` and
//! `cli_version`; `turn_context` a later `cwd`. A `response_item` `function_call` named `shell`
//! (argv `command`), `shell_command` (`command` text) or `exec_command` (`cmd` text) carries its
//! arguments as a JSON **string**; `local_shell_call` carries `action.command` (an argv). The
//! `function_call_output` with the same `call_id` gives the outcome: a JSON string
//! `{"output", "metadata": {"exit_code"}}` (`shell`), `Exit code: N` (`shell_command`) or
//! `Process exited with code N` (`exec_command`); Codex persists no error flag. An
//! `event_msg` `exec_command_end` (persisted in some versions) gives `exit_code`. Legacy
//! rollouts (mid-2025: a bare `{id, timestamp, instructions}` first line, `record_type` lines and
//! items without the `payload` wrapper) are read the same way. The OS is read from `cwd`.

use std::collections::HashMap;

use serde_json::Value;

use super::{Ctx, LineReader, Pending};
use crate::call::{command_text, content_text, number_after, os_of_cwd, LoggedCall, Outcome};
use crate::input::{Skip, Stop};

/// The `type`s of a rollout line.
pub const ROLLOUT_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

/// Response items that may stand bare on a legacy line.
const ITEM_TYPES: &[&str] = &[
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "local_shell_call",
    "custom_tool_call",
    "custom_tool_call_output",
    "web_search_call",
];

/// The reader of one rollout.
#[derive(Default)]
pub struct Reader {
    session: Option<String>,
    version: Option<String>,
    cwd: Option<String>,
    pending: Pending,
    exit_codes: HashMap<String, i64>,
}

impl Reader {
    fn new_call(
        &self,
        ctx: &Ctx,
        line: u64,
        ts: Option<&str>,
        tool: &str,
        input: Value,
        command: String,
    ) -> LoggedCall {
        let cwd = input
            .get("workdir")
            .and_then(Value::as_str)
            .map(String::from)
            .or_else(|| self.cwd.clone());
        LoggedCall {
            file: ctx.file.to_string(),
            line,
            session: self.session.clone().unwrap_or_else(|| ctx.file.to_string()),
            harness: "codex".into(),
            version: self.version.clone(),
            os: self.cwd.as_deref().or(cwd.as_deref()).and_then(os_of_cwd),
            cwd,
            timestamp: ts.map(String::from),
            sidechain: false,
            tool: tool.into(),
            input,
            command,
            outcome: Outcome::default(),
        }
    }

    fn item(&mut self, ctx: &mut Ctx, line: u64, ts: Option<&str>, p: &Value) -> Result<(), Stop> {
        let s = |k: &str| p.get(k).and_then(Value::as_str);
        let id = s("call_id").unwrap_or_default().to_string();
        match s("type") {
            Some("function_call") => {
                let name = s("name").unwrap_or_default();
                let (tool, field) = match name {
                    "shell" | "container.exec" => ("shell", "command"),
                    "shell_command" => ("shell_command", "command"),
                    "exec_command" => ("exec_command", "cmd"),
                    _ => return Ok(()),
                };
                let args = match p.get("arguments") {
                    Some(Value::String(a)) => match serde_json::from_str::<Value>(a) {
                        Ok(v) if v.is_object() => v,
                        Ok(_) => {
                            return ctx.skip(
                                line,
                                Skip::MalformedArguments,
                                format!("{name} arguments are not an object"),
                            )
                        }
                        Err(e) => {
                            return ctx.skip(line, Skip::MalformedArguments, format!("{name} arguments: {e}"))
                        }
                    },
                    Some(v @ Value::Object(_)) => v.clone(),
                    _ => {
                        return ctx.skip(
                            line,
                            Skip::MalformedArguments,
                            format!("{name} without arguments"),
                        )
                    }
                };
                let Some(command) = args.get(field).and_then(command_text) else {
                    return ctx.skip(
                        line,
                        Skip::MalformedArguments,
                        format!("{name} arguments without {field}"),
                    );
                };
                let call = self.new_call(ctx, line, ts, tool, args, command);
                self.pending.wait(ctx, &id, call);
            }
            Some("local_shell_call") => {
                let action = p.get("action").unwrap_or(&Value::Null);
                let Some(argv) = action.get("command").filter(|c| c.is_array()) else {
                    return ctx.skip(line, Skip::MalformedRecord, "local_shell_call without an argv");
                };
                let command = command_text(argv).unwrap_or_default();
                let mut input = serde_json::json!({ "command": argv });
                if let Some(w) = action.get("working_directory") {
                    input["workdir"] = w.clone();
                }
                let call = self.new_call(ctx, line, ts, "shell", input, command);
                self.pending.wait(ctx, &id, call);
            }
            Some("function_call_output") => {
                if let Some(mut call) = self.pending.take(&id) {
                    call.outcome = output_outcome(
                        p.get("output").unwrap_or(&Value::Null),
                        self.exit_codes.remove(&id),
                    );
                    (ctx.emit)(call);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The outcome a `function_call_output`'s `output` tells (`fallback`: an `exec_command_end`
/// exit code).
fn output_outcome(out: &Value, fallback: Option<i64>) -> Outcome {
    let success = out.get("success").and_then(Value::as_bool);
    let text = match out {
        Value::String(s) => s.clone(),
        Value::Object(o) => content_text(o.get("content").unwrap_or(&Value::Null)),
        other => content_text(other),
    };
    // `shell`: a JSON string with the exit code in its metadata.
    if text.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            if let Some(code) = v.pointer("/metadata/exit_code").and_then(Value::as_i64) {
                let body = v.get("output").and_then(Value::as_str).unwrap_or_default();
                return Outcome::new(success.map(|s| !s), Some(code), body);
            }
        }
    }
    let code = number_after(&text, "Exit code:")
        .or_else(|| number_after(&text, "Process exited with code"))
        .or(fallback);
    Outcome::new(success.map(|s| !s), code, &text)
}

impl LineReader for Reader {
    fn record(&mut self, ctx: &mut Ctx, line: u64, v: Value) -> Result<(), Stop> {
        let ts = v.get("timestamp").and_then(Value::as_str).map(String::from);
        let t = v.get("type").and_then(Value::as_str);
        let payload = v.get("payload");
        match (t, payload) {
            (Some("session_meta"), Some(p)) => {
                let p = p.get("meta").unwrap_or(p);
                self.session = p
                    .get("id")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .or(self.session.take());
                self.version = p
                    .get("cli_version")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .or(self.version.take());
                self.cwd = p
                    .get("cwd")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .or(self.cwd.take());
            }
            (Some("turn_context"), Some(p)) => {
                if let Some(c) = p.get("cwd").and_then(Value::as_str) {
                    self.cwd = Some(c.into());
                }
            }
            (Some("response_item"), Some(p)) => self.item(ctx, line, ts.as_deref(), p)?,
            (Some("event_msg"), Some(p)) => {
                if p.get("type").and_then(Value::as_str) == Some("exec_command_end") {
                    let id = p.get("call_id").and_then(Value::as_str);
                    let code = p.get("exit_code").and_then(Value::as_i64);
                    if let (Some(id), Some(code)) = (id, code) {
                        if self.pending.contains(id) && self.exit_codes.len() < Pending::MAX {
                            self.exit_codes.insert(id.into(), code);
                        }
                    }
                }
            }
            // 0.171.0's state snapshot and token accounting: no calls.
            (Some("compacted" | "world_state" | "token_usage_record"), _) => {}
            // Legacy rollouts: items without the wrapper, a bare session line, state lines.
            (Some(t), None) if ITEM_TYPES.contains(&t) => self.item(ctx, line, ts.as_deref(), &v)?,
            (None, None) if v.get("record_type").is_some() => {}
            (None, None) if v.get("instructions").is_some() || v.get("id").is_some() => {
                self.session = v.get("id").and_then(Value::as_str).map(String::from);
            }
            (Some(t), _) => return ctx.skip(line, Skip::UnknownRecordType, format!("type {t:?}")),
            (None, _) => return ctx.skip(line, Skip::MalformedRecord, "a line without a type"),
        }
        Ok(())
    }

    fn finish(&mut self, ctx: &mut Ctx) -> Result<(), Stop> {
        self.pending.finish(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_of_each_tool() {
        let o = output_outcome(
            &Value::String(r#"{"output":"boom\n","metadata":{"exit_code":2,"duration_seconds":0.1}}"#.into()),
            None,
        );
        assert_eq!(
            (o.error, o.exit_code, o.error_text.as_deref()),
            (Some(true), Some(2), Some("boom\n"))
        );
        let o = output_outcome(
            &Value::String("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok".into()),
            None,
        );
        assert_eq!((o.error, o.exit_code), (Some(false), Some(0)));
        let o = output_outcome(
            &Value::String(
                "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 127\nOutput:\nx: not found"
                    .into(),
            ),
            None,
        );
        assert_eq!((o.error, o.exit_code), (Some(true), Some(127)));
        let o = output_outcome(
            &serde_json::json!({"content": "failed to start", "success": false}),
            None,
        );
        assert_eq!((o.error, o.exit_code), (Some(true), None));
        let o = output_outcome(&Value::String("no code here".into()), Some(4));
        assert_eq!(o.exit_code, Some(4));
    }
}
