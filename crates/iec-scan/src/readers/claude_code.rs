//! Claude Code project transcripts (`~/.claude/projects/<munged cwd>/<session>.jsonl`, subagents
//! in `<session>/subagents/agent-<id>.jsonl`).
//!
//! An `assistant` record's `message.content` holds `tool_use` blocks (`name` `Bash`, or
//! `PowerShell` where present, `input.command`); one API message may be spread over several
//! lines, one block each, so calls are kept by their `tool_use` id. The `tool_result` block of a
//! later `user` record (`tool_use_id`, `is_error`, `content`) and that record's `toolUseResult`
//! give the outcome: a failure's text starts with `Exit code N`; a success has no exit code (0
//! is implied when `toolUseResult` is the Bash tool's `{stdout, stderr, …}`). Every record
//! carries `version`, `cwd`, `sessionId` and `timestamp`; `isSidechain` (or a file under
//! `subagents/`) marks a subagent's calls. The OS is not recorded: it is read from the form of
//! `cwd`.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::{Ctx, LineReader, Pending};
use crate::call::{content_text, number_after, os_of_cwd, LoggedCall, Outcome};
use crate::input::{Skip, Stop};

/// The record types of Claude Code transcripts (1.0.x to 2.1.x) that are not calls' records are
/// read past; any other type is counted as unknown. 2.1.332 adds state records (`atis-latch`,
/// `cost-state`, `tools-used`) and copies of its API requests (`api-request`,
/// `api-request-blob`, `api-request-shape`: the calls they repeat are read from `assistant`).
pub const RECORD_TYPES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "attachment",
    "custom-title",
    "ai-title",
    "tag",
    "last-prompt",
    "result",
    "atis-latch",
    "cost-state",
    "tools-used",
    "api-request",
    "api-request-blob",
    "api-request-shape",
];

/// The shell tools read.
const SHELL_TOOLS: &[&str] = &["Bash", "PowerShell"];

/// The reader of one transcript.
pub struct Reader {
    subagent_file: bool,
    pending: Pending,
    seen: HashSet<String>,
}

impl Reader {
    /// A reader of the transcript at `path` (a file under `subagents/` is a sidechain).
    pub fn new(path: &Path) -> Reader {
        Reader {
            subagent_file: path.components().any(|c| c.as_os_str() == "subagents"),
            pending: Pending::default(),
            seen: HashSet::new(),
        }
    }

    fn call(&mut self, ctx: &mut Ctx, line: u64, rec: &Value, block: &Value) -> Result<(), Stop> {
        let id = block
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !id.is_empty() && !self.seen.insert(id.clone()) {
            // The same block written again (a message spread over lines, a resumed session).
            return Ok(());
        }
        let tool = block.get("name").and_then(Value::as_str).unwrap_or_default();
        let input = block.get("input").cloned().unwrap_or(Value::Null);
        let Some(command) = input.get("command").and_then(Value::as_str) else {
            return ctx.skip(
                line,
                Skip::MalformedRecord,
                format!("a {tool} tool_use without a command string"),
            );
        };
        let s = |k: &str| rec.get(k).and_then(Value::as_str).map(String::from);
        let cwd = s("cwd");
        let call = LoggedCall {
            file: ctx.file.to_string(),
            line,
            session: s("sessionId").unwrap_or_else(|| ctx.file.to_string()),
            harness: "claude-code".into(),
            version: s("version"),
            os: cwd.as_deref().and_then(os_of_cwd),
            cwd,
            timestamp: s("timestamp"),
            sidechain: self.subagent_file || rec.get("isSidechain").and_then(Value::as_bool) == Some(true),
            tool: tool.to_string(),
            command: command.to_string(),
            input,
            outcome: Outcome::default(),
        };
        self.pending.wait(ctx, &id, call);
        Ok(())
    }

    fn result(&mut self, ctx: &mut Ctx, rec: &Value, block: &Value) {
        let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
            return;
        };
        let Some(mut call) = self.pending.take(id) else {
            return;
        };
        let is_error = block.get("is_error").and_then(Value::as_bool);
        let text = content_text(block.get("content").unwrap_or(&Value::Null));
        let tur = rec.get("toolUseResult");
        let code = if is_error == Some(true) {
            number_after(&text, "Exit code").or_else(|| {
                tur.and_then(Value::as_str)
                    .and_then(|t| number_after(t, "Error: Exit code"))
            })
        } else if tur.is_some_and(|t| t.get("stdout").is_some()) {
            Some(0)
        } else {
            None
        };
        call.outcome = Outcome::new(is_error, code, &text);
        (ctx.emit)(call);
    }
}

impl LineReader for Reader {
    fn record(&mut self, ctx: &mut Ctx, line: u64, v: Value) -> Result<(), Stop> {
        let Some(t) = v.get("type").and_then(Value::as_str) else {
            return ctx.skip(line, Skip::MalformedRecord, "a record without a type");
        };
        if !RECORD_TYPES.contains(&t) {
            return ctx.skip(line, Skip::UnknownRecordType, format!("type {t:?}"));
        }
        let blocks = match v.pointer("/message/content") {
            Some(Value::Array(a)) => a.as_slice(),
            _ => return Ok(()),
        };
        match t {
            "assistant" => {
                for b in blocks {
                    if b.get("type").and_then(Value::as_str) == Some("tool_use")
                        && b.get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| SHELL_TOOLS.contains(&n))
                    {
                        self.call(ctx, line, &v, b)?;
                    }
                }
            }
            "user" => {
                for b in blocks {
                    if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                        self.result(ctx, &v, b);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, ctx: &mut Ctx) -> Result<(), Stop> {
        self.pending.finish(ctx)
    }
}
