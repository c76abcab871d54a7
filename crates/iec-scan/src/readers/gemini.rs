//! Gemini CLI chats (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, older `.json`).
//!
//! The `.jsonl` form is a metadata line (`sessionId`, `projectHash`, `startTime`), message
//! records, `{"$set": …}` metadata deltas and `{"$rewindTo": id}` lines; the `.json` form is one
//! document `{sessionId, projectHash, messages: […]}`. A `gemini` message's `toolCalls[]`
//! (`name: "run_shell_command"`, `args.command`) carries its own `result` (function-response
//! parts whose `output` reads `Output: …`, `Error: …`, `Exit Code: N` (only when not 0 in
//! newer versions), …) and `status`. A message may be written again as it changes: a call is
//! taken once, when its status is final (or at the end of the file). The CLI version is not
//! recorded; the OS and working directory only in the first user text ("My operating system
//! is: linux"), from which they are read.

use std::collections::HashSet;

use serde_json::Value;

use super::{Ctx, LineReader, Pending};
use crate::call::{content_text, number_after, os_of_cwd, LoggedCall, Outcome};
use crate::input::{Skip, Stop};

/// The `type`s of a chat message record.
pub const MESSAGE_TYPES: &[&str] = &["user", "info", "error", "warning", "gemini"];

/// The reader of one chat.
#[derive(Default)]
pub struct Reader {
    session: Option<String>,
    os: Option<String>,
    cwd: Option<String>,
    pending: Pending,
    done: HashSet<String>,
}

/// The OS name Gemini CLI writes (`process.platform`) as reports name it.
fn os_name(platform: &str) -> String {
    match platform {
        "win32" => "windows".into(),
        "darwin" => "macos".into(),
        other => other.into(),
    }
}

/// The word after `marker` in `text`, up to white space or a sentence end.
fn word_after(text: &str, marker: &str) -> Option<String> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let w: String = rest
        .trim_start()
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    let w = w.trim_end_matches(['.', ',']).to_string();
    (!w.is_empty()).then_some(w)
}

impl Reader {
    fn message(&mut self, ctx: &mut Ctx, line: u64, m: &Value) -> Result<(), Stop> {
        let Some(t) = m.get("type").and_then(Value::as_str) else {
            return ctx.skip(line, Skip::MalformedRecord, "a message without a type");
        };
        if !MESSAGE_TYPES.contains(&t) {
            return ctx.skip(line, Skip::UnknownRecordType, format!("type {t:?}"));
        }
        if t == "user" && (self.os.is_none() || self.cwd.is_none()) {
            let text = content_text(m.get("content").unwrap_or(&Value::Null));
            if let Some(os) = word_after(&text, "My operating system is:") {
                self.os = Some(os_name(&os));
            }
            if let Some(d) = word_after(&text, "working in the directory:") {
                self.cwd = Some(d);
            }
        }
        let Some(calls) = m.get("toolCalls").and_then(Value::as_array) else {
            return Ok(());
        };
        for c in calls {
            if c.get("name").and_then(Value::as_str) != Some("run_shell_command") {
                continue;
            }
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if self.done.contains(&id) {
                continue;
            }
            let args = c.get("args").cloned().unwrap_or(Value::Null);
            let Some(command) = args.get("command").and_then(Value::as_str).map(String::from) else {
                ctx.skip(
                    line,
                    Skip::MalformedRecord,
                    "run_shell_command without a command string",
                )?;
                continue;
            };
            let status = c.get("status").and_then(Value::as_str).unwrap_or_default();
            let text: String = c
                .get("result")
                .and_then(Value::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        .filter_map(|p| {
                            let r = p.pointer("/functionResponse/response")?;
                            r.get("output").or_else(|| r.get("error")).and_then(Value::as_str)
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            let final_status = matches!(status, "success" | "error" | "cancelled");
            let outcome = if final_status || !text.is_empty() {
                let code = number_after(&text, "Exit Code:").or_else(|| {
                    // Newer versions write the exit code only when it is not 0.
                    (status == "success" && text.contains("Output:")).then_some(0)
                });
                let error = match status {
                    "error" | "cancelled" => Some(true),
                    // A result that is no command output is the tool's own message (its
                    // command-substitution refusal is logged with status `success`).
                    _ if !text.is_empty() && !text.contains("Output:") => Some(true),
                    _ => None,
                };
                Outcome::new(error, code, &text)
            } else {
                Outcome::default()
            };
            let dir = args
                .get("dir_path")
                .or_else(|| args.get("directory"))
                .and_then(Value::as_str)
                .map(String::from)
                .or_else(|| self.cwd.clone());
            let call = LoggedCall {
                file: ctx.file.to_string(),
                line,
                session: self.session.clone().unwrap_or_else(|| ctx.file.to_string()),
                harness: "gemini-cli".into(),
                version: None,
                os: self.os.clone().or_else(|| dir.as_deref().and_then(os_of_cwd)),
                cwd: dir,
                timestamp: c
                    .get("timestamp")
                    .or_else(|| m.get("timestamp"))
                    .and_then(Value::as_str)
                    .map(String::from),
                sidechain: c.get("agentId").is_some(),
                tool: "run_shell_command".into(),
                input: args,
                command,
                outcome,
            };
            if final_status || id.is_empty() {
                if !id.is_empty() {
                    self.pending.take(&id);
                    self.done.insert(id);
                }
                (ctx.emit)(call);
            } else {
                self.pending.wait(ctx, &id, call);
            }
        }
        Ok(())
    }
}

impl LineReader for Reader {
    fn record(&mut self, ctx: &mut Ctx, line: u64, v: Value) -> Result<(), Stop> {
        if let Some(set) = v.get("$set") {
            // A metadata delta may carry messages (the first user message, with the OS).
            for m in set
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.message(ctx, line, m)?;
            }
            return Ok(());
        }
        if v.get("$rewindTo").is_some() {
            return Ok(());
        }
        if v.get("projectHash").is_some() {
            self.session = v.get("sessionId").and_then(Value::as_str).map(String::from);
            return Ok(());
        }
        self.message(ctx, line, &v)
    }

    fn finish(&mut self, ctx: &mut Ctx) -> Result<(), Stop> {
        self.pending.finish(ctx)
    }
}

/// Reads the one-document form.
pub fn read_document(ctx: &mut Ctx, v: Value) -> Result<(), Stop> {
    let mut r = Reader {
        session: v.get("sessionId").and_then(Value::as_str).map(String::from),
        ..Reader::default()
    };
    if let Some(ms) = v.get("messages").and_then(Value::as_array) {
        for (i, m) in ms.iter().enumerate() {
            r.message(ctx, i as u64 + 1, m)?;
        }
    }
    r.finish(ctx)
}
