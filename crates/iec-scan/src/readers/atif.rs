//! Harbor ATIF trajectories (`agent/trajectory.json`, v1.0–v1.8): the format a Terminal-Bench
//! 2.0 run writes for every agent.
//!
//! `{schema_version, session_id, agent: {name, version}, steps: [{step_id, timestamp,
//! tool_calls: [{tool_call_id, function_name, arguments}], observation: {results:
//! [{source_call_id, content, extra}]}}]}`. Shell calls are `Bash` (Claude Code),
//! `exec_command` / `shell` / `shell_command` (Codex), `run_shell_command` (Gemini CLI),
//! `execute_bash` / `terminal` (OpenHands) and `bash_command` (Terminus: `keystrokes`). Exit
//! codes appear only as text in `content`, in each harness's own wording; Claude Code's raw
//! `is_error` survives in `extra.tool_result_metadata`.

use std::collections::HashMap;

use serde_json::Value;

use super::Ctx;
use crate::call::{command_text, content_text, number_after, os_of_cwd, LoggedCall, Outcome};
use crate::input::{Skip, Stop};

/// The field that carries the command for each shell function.
fn command_field(function: &str) -> Option<&'static str> {
    Some(match function {
        "Bash" | "PowerShell" | "shell" | "shell_command" | "run_shell_command" | "execute_bash"
        | "terminal" => "command",
        "exec_command" => "cmd",
        "bash_command" => "keystrokes",
        _ => return None,
    })
}

/// An exit code in any harness's wording.
pub fn any_exit_code(text: &str) -> Option<i64> {
    if text.starts_with('{') {
        if let Some(c) = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v.pointer("/metadata/exit_code").and_then(Value::as_i64))
        {
            return Some(c);
        }
    }
    [
        "Exit code:",
        "Exit Code:",
        "Exit code",
        "Process exited with code",
    ]
    .iter()
    .find_map(|p| number_after(text, p))
}

/// Reads one trajectory.
pub fn read_document(ctx: &mut Ctx, v: Value) -> Result<(), Stop> {
    let agent = v.get("agent").unwrap_or(&Value::Null);
    let harness = agent
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    let version = agent.get("version").and_then(Value::as_str).map(String::from);
    let cwd = agent
        .pointer("/extra/cwds/0")
        .or_else(|| agent.pointer("/extra/cwd"))
        .and_then(Value::as_str)
        .map(String::from);
    let session = v
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap_or(ctx.file)
        .to_string();
    let Some(steps) = v.get("steps").and_then(Value::as_array) else {
        return ctx.skip(0, Skip::MalformedRecord, "a trajectory without steps");
    };
    let mut pending: HashMap<String, LoggedCall> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let line = step
            .get("step_id")
            .and_then(Value::as_u64)
            .unwrap_or(i as u64 + 1);
        let ts = step.get("timestamp").and_then(Value::as_str).map(String::from);
        for c in step
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let function = c.get("function_name").and_then(Value::as_str).unwrap_or_default();
            let Some(field) = command_field(function) else {
                continue;
            };
            let args = match c.get("arguments") {
                Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                    Ok(a) if a.is_object() => a,
                    _ => {
                        ctx.skip(
                            line,
                            Skip::MalformedArguments,
                            format!("{function} arguments are not a JSON object"),
                        )?;
                        continue;
                    }
                },
                Some(a @ Value::Object(_)) => a.clone(),
                _ => {
                    ctx.skip(
                        line,
                        Skip::MalformedArguments,
                        format!("{function} without arguments"),
                    )?;
                    continue;
                }
            };
            let Some(command) = args.get(field).and_then(command_text) else {
                ctx.skip(
                    line,
                    Skip::MalformedArguments,
                    format!("{function} arguments without {field}"),
                )?;
                continue;
            };
            let id = c
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let call = LoggedCall {
                file: ctx.file.to_string(),
                line,
                session: session.clone(),
                harness: harness.clone(),
                version: version.clone(),
                os: cwd.as_deref().and_then(os_of_cwd),
                cwd: cwd.clone(),
                timestamp: ts.clone(),
                sidechain: false,
                tool: function.to_string(),
                input: args,
                command,
                outcome: Outcome::default(),
            };
            order.push(id.clone());
            pending.insert(id, call);
        }
        for r in step
            .pointer("/observation/results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(id) = r.get("source_call_id").and_then(Value::as_str) else {
                continue;
            };
            let Some(call) = pending.get_mut(id) else { continue };
            let text = content_text(r.get("content").unwrap_or(&Value::Null));
            let error = r
                .pointer("/extra/tool_result_metadata/is_error")
                .or_else(|| r.pointer("/extra/is_error"))
                .and_then(Value::as_bool);
            call.outcome = Outcome::new(error, any_exit_code(&text), &text);
        }
    }
    for id in order {
        if let Some(c) = pending.remove(&id) {
            (ctx.emit)(c);
        }
    }
    Ok(())
}
