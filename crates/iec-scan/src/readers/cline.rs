//! Cline and Roo Code task histories (`tasks/<id>/api_conversation_history.json`), and the
//! Cline SDK's `<session>.messages.json` (`{version, sessionId, messages}`).
//!
//! Calls: an assistant `tool_use` block `execute_command` (`input.command`), the SDK's
//! `run_commands` (`input.commands`: strings or `{command}`), or in older versions an
//! `<execute_command><command>…</command></execute_command>` element in the assistant's text.
//! Results: a `tool_result` block (`tool_use_id`, `content`, `is_error`), or the next user text
//! `[execute_command for '…'] Result:` reading `Command executed successfully (exit code 0).`,
//! `Command failed with exit code N.` or (older) `Command executed.` with no code. No version
//! or OS is recorded.

use std::collections::VecDeque;

use serde_json::Value;

use super::Ctx;
use crate::call::{content_text, LoggedCall, Outcome};
use crate::input::Stop;

/// The exit code in a Cline result text (`… exit code N…`).
fn exit_code(text: &str) -> Option<i64> {
    let i = text.find("exit code ")? + "exit code ".len();
    let digits: String = text[i..]
        .chars()
        .enumerate()
        .take_while(|(k, c)| c.is_ascii_digit() || (*k == 0 && *c == '-'))
        .map(|(_, c)| c)
        .collect();
    digits.parse().ok()
}

/// The commands of `<execute_command>` elements in a text.
fn xml_commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("<execute_command>") {
        rest = &rest[i + "<execute_command>".len()..];
        let Some(a) = rest.find("<command>") else { break };
        let Some(b) = rest[a..].find("</command>") else {
            break;
        };
        out.push(rest[a + "<command>".len()..a + b].trim().to_string());
        rest = &rest[a + b..];
    }
    out
}

struct Waiting {
    id: Option<String>,
    call: LoggedCall,
}

/// Reads one task history or SDK messages document.
pub fn read_document(ctx: &mut Ctx, v: Value) -> Result<(), Stop> {
    let (messages, session) = match &v {
        Value::Array(a) => (
            a.as_slice(),
            ctx.file.rsplit_once('/').map_or(ctx.file, |(d, _)| d).to_string(),
        ),
        Value::Object(o) => (
            o.get("messages")
                .and_then(Value::as_array)
                .map_or(&[][..], |a| a.as_slice()),
            o.get("sessionId")
                .and_then(Value::as_str)
                .unwrap_or(ctx.file)
                .to_string(),
        ),
        _ => return Ok(()),
    };
    let mut waiting: VecDeque<Waiting> = VecDeque::new();
    let new_call = |ctx: &Ctx, line: u64, tool: &str, command: String, ts: Option<String>| LoggedCall {
        file: ctx.file.to_string(),
        line,
        session: session.clone(),
        harness: "cline".into(),
        version: None,
        os: None,
        cwd: None,
        timestamp: ts,
        sidechain: false,
        tool: tool.into(),
        input: serde_json::json!({ "command": command }),
        command,
        outcome: Outcome::default(),
    };
    for (i, m) in messages.iter().enumerate() {
        let line = i as u64 + 1;
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let ts = m.get("ts").map(|t| t.to_string());
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            Some(Value::Array(a)) => a.clone(),
            _ => vec![],
        };
        for b in &blocks {
            let bt = b.get("type").and_then(Value::as_str).unwrap_or_default();
            match (role, bt) {
                ("assistant", "tool_use") => {
                    let name = b.get("name").and_then(Value::as_str).unwrap_or_default();
                    let id = b.get("id").and_then(Value::as_str).map(String::from);
                    let input = b.get("input").unwrap_or(&Value::Null);
                    let cmds: Vec<String> = match name {
                        "execute_command" => input
                            .get("command")
                            .and_then(Value::as_str)
                            .map(String::from)
                            .into_iter()
                            .collect(),
                        "run_commands" => input
                            .get("commands")
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter()
                                    .filter_map(|c| {
                                        c.as_str().or_else(|| c.get("command").and_then(Value::as_str))
                                    })
                                    .map(String::from)
                                    .collect()
                            })
                            .unwrap_or_default(),
                        _ => continue,
                    };
                    for c in cmds {
                        waiting.push_back(Waiting {
                            id: id.clone(),
                            call: new_call(ctx, line, name, c, ts.clone()),
                        });
                    }
                }
                ("assistant", "text") => {
                    let text = b.get("text").and_then(Value::as_str).unwrap_or_default();
                    for c in xml_commands(text) {
                        waiting.push_back(Waiting {
                            id: None,
                            call: new_call(ctx, line, "execute_command", c, ts.clone()),
                        });
                    }
                }
                ("user", "tool_result") => {
                    let id = b.get("tool_use_id").and_then(Value::as_str);
                    let text = content_text(b.get("content").unwrap_or(&Value::Null));
                    let error = b.get("is_error").and_then(Value::as_bool);
                    // Every call of that tool_use (run_commands has several) gets the result.
                    while let Some(k) = waiting.iter().position(|w| w.id.as_deref() == id && id.is_some()) {
                        let mut w = waiting.remove(k).expect("present");
                        w.call.outcome = Outcome::new(error, exit_code(&text), &text);
                        (ctx.emit)(w.call);
                    }
                }
                ("user", "text") => {
                    let text = b.get("text").and_then(Value::as_str).unwrap_or_default();
                    if text.starts_with("[execute_command for ") {
                        if let Some(mut w) = waiting.pop_front() {
                            let failed = text.contains("Command failed");
                            w.call.outcome = Outcome::new(failed.then_some(true), exit_code(text), text);
                            (ctx.emit)(w.call);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    for w in waiting {
        (ctx.emit)(w.call);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_and_codes() {
        assert_eq!(
            xml_commands("x <execute_command>\n<command>ls -la</command>\n</execute_command> y <execute_command><command>a</command>"),
            vec!["ls -la", "a"]
        );
        assert_eq!(exit_code("Command failed with exit code 1.\nOutput:"), Some(1));
        assert_eq!(exit_code("Command executed successfully (exit code 0)."), Some(0));
        assert_eq!(exit_code("Command executed.\nOutput:"), None);
    }
}
