//! OpenHands event streams.
//!
//! V0: an action `{id, timestamp, source: "agent", action: "run", args: {command, is_input}}`
//! and its observation `{observation: "run", cause: <action id>, content, extras: {metadata:
//! {exit_code, working_dir}} (older: extras.exit_code), success}`; stored one event per file
//! (`sessions/<sid>/events/<n>.json`) or as a trajectory (an array, or `{history: […]}`).
//! V1 (agent-sdk): `{kind: "ActionEvent", id, action: {kind: "TerminalAction" (earlier
//! "ExecuteBashAction"), command, is_input}}` and `{kind: "ObservationEvent", action_id,
//! observation: {content: [{text}], is_error, exit_code (-1: still running)}}`. Events of one
//! folder are one session: an action and its observation may be two files, in either order.
//! Input typed into a running process (`is_input: true`) is not a command and is not read. No
//! version is recorded; the OS is read from `working_dir`.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::Ctx;
use crate::call::{content_text, os_of_cwd, LoggedCall, Outcome};
use crate::input::{Skip, Stop};

const V1_KINDS: &[&str] = &[
    "ActionEvent",
    "ObservationEvent",
    "MessageEvent",
    "SystemPromptEvent",
    "AgentErrorEvent",
    "UserRejectObservation",
    "PauseEvent",
    "Condensation",
    "CondensationRequest",
    "CondensationSummaryEvent",
    "ConversationStateUpdateEvent",
    "LLMCompletionLogEvent",
];

/// True for one OpenHands event.
pub fn is_event(v: &Value) -> bool {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    (s("action").is_some() && (v.get("source").is_some() || v.get("args").is_some()))
        || (s("observation").is_some() && (v.get("cause").is_some() || v.get("extras").is_some()))
        || s("kind").is_some_and(|k| V1_KINDS.contains(&k))
}

/// The calls of one session waiting for their observation, and observations waiting for their
/// action.
#[derive(Default)]
pub struct Session {
    name: String,
    pending: HashMap<String, LoggedCall>,
    orphans: HashMap<String, Outcome>,
}

fn id_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl Session {
    fn event(&mut self, ctx: &mut Ctx, line: u64, e: &Value) -> Result<(), Stop> {
        let s = |k: &str| e.get(k).and_then(Value::as_str);
        if let Some(kind) = s("kind") {
            if !V1_KINDS.contains(&kind) {
                return ctx.skip(line, Skip::UnknownRecordType, format!("kind {kind:?}"));
            }
            match kind {
                "ActionEvent" => {
                    let a = e.get("action").unwrap_or(&Value::Null);
                    let ak = a.get("kind").and_then(Value::as_str).unwrap_or_default();
                    if matches!(ak, "TerminalAction" | "ExecuteBashAction") {
                        return self.action(ctx, line, e, a, "terminal", None);
                    }
                }
                "ObservationEvent" => {
                    let o = e.get("observation").unwrap_or(&Value::Null);
                    let text = content_text(o.get("content").unwrap_or(&Value::Null));
                    let code = o
                        .get("exit_code")
                        .and_then(Value::as_i64)
                        .or_else(|| o.pointer("/metadata/exit_code").and_then(Value::as_i64))
                        .filter(|c| *c >= 0);
                    let outcome = Outcome::new(o.get("is_error").and_then(Value::as_bool), code, &text);
                    self.observe(ctx, id_of(e.get("action_id")), outcome);
                }
                _ => {}
            }
            return Ok(());
        }
        if s("action") == Some("run") {
            let args = e.get("args").unwrap_or(&Value::Null);
            let cwd = e
                .pointer("/extras/metadata/working_dir")
                .and_then(Value::as_str)
                .map(String::from);
            return self.action(ctx, line, e, args, "execute_bash", cwd);
        }
        if s("observation") == Some("run") {
            let text = e.get("content").and_then(Value::as_str).unwrap_or_default();
            let code = e
                .pointer("/extras/metadata/exit_code")
                .or_else(|| e.pointer("/extras/exit_code"))
                .and_then(Value::as_i64)
                .filter(|c| *c >= 0);
            let error = e.get("success").and_then(Value::as_bool).map(|s| !s);
            self.observe(ctx, id_of(e.get("cause")), Outcome::new(error, code, text));
        }
        Ok(())
    }

    fn action(
        &mut self,
        ctx: &mut Ctx,
        line: u64,
        e: &Value,
        a: &Value,
        tool: &str,
        cwd: Option<String>,
    ) -> Result<(), Stop> {
        if a.get("is_input").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        let Some(command) = a.get("command").and_then(Value::as_str) else {
            return ctx.skip(
                line,
                Skip::MalformedRecord,
                "a run action without a command string",
            );
        };
        let mut call = LoggedCall {
            file: ctx.file.to_string(),
            line,
            session: self.name.clone(),
            harness: "openhands".into(),
            version: None,
            os: cwd.as_deref().and_then(os_of_cwd),
            cwd,
            timestamp: e.get("timestamp").and_then(Value::as_str).map(String::from),
            sidechain: false,
            tool: tool.into(),
            input: serde_json::json!({ "command": command }),
            command: command.to_string(),
            outcome: Outcome::default(),
        };
        match id_of(e.get("id")) {
            Some(id) => {
                if let Some(o) = self.orphans.remove(&id) {
                    call.outcome = o;
                    (ctx.emit)(call);
                } else {
                    self.pending.insert(id, call);
                }
            }
            None => (ctx.emit)(call),
        }
        Ok(())
    }

    fn observe(&mut self, ctx: &mut Ctx, id: Option<String>, outcome: Outcome) {
        let Some(id) = id else { return };
        match self.pending.remove(&id) {
            Some(mut call) => {
                call.outcome = outcome;
                (ctx.emit)(call);
            }
            None => {
                self.orphans.insert(id, outcome);
            }
        }
    }

    /// Emits the calls still waiting, without an outcome.
    pub fn finish(&mut self, ctx: &mut Ctx) -> Result<(), Stop> {
        let mut rest: Vec<LoggedCall> = self.pending.drain().map(|(_, c)| c).collect();
        rest.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        for c in rest {
            (ctx.emit)(c);
        }
        self.orphans.clear();
        Ok(())
    }
}

/// The session folder of a one-event file: its folder, or the folder above an `events` folder.
fn session_dir(path: &Path) -> String {
    let dir = path.parent().unwrap_or(Path::new(""));
    let dir = if dir.file_name().is_some_and(|n| n == "events") {
        dir.parent().unwrap_or(dir)
    } else {
        dir
    };
    dir.display().to_string()
}

/// Reads one OpenHands document: a trajectory (array or `{history}`), or one event of a session
/// folder (kept in `sessions` until the scan ends).
pub fn read_document(
    ctx: &mut Ctx,
    path: &Path,
    v: Value,
    sessions: &mut HashMap<String, Session>,
) -> Result<(), Stop> {
    let events = match &v {
        Value::Array(a) => Some(a),
        Value::Object(o) => o.get("history").and_then(Value::as_array),
        _ => None,
    };
    if let Some(events) = events {
        let mut s = Session {
            name: ctx.file.to_string(),
            ..Session::default()
        };
        for (i, e) in events.iter().enumerate() {
            s.event(ctx, i as u64 + 1, e)?;
        }
        return s.finish(ctx);
    }
    let dir = session_dir(path);
    let s = sessions.entry(dir.clone()).or_insert_with(|| Session {
        name: dir,
        ..Session::default()
    });
    s.event(ctx, 1, &v)
}
