//! Codex (`@openai/codex`): `codex exec` against the replay server's Responses API
//! ([`crate::codex`]), `approval_policy = "never"` and `sandbox_mode = "danger-full-access"` in
//! its private config (its headless equivalent of a user's bypass). No limit of calls per launch
//! is known: a batch of any size is one `codex exec`.

use serde_json::Value;

use crate::agree::RunSpec;
use crate::codex::{run_codex_with, CodexOptions};
use crate::launch::HarnessRun;
use crate::openai::ShellArg;

/// One `codex exec` of `commands`.
pub(super) fn run(spec: &RunSpec, commands: &[&str]) -> anyhow::Result<HarnessRun> {
    run_codex_with(&CodexOptions::for_spec(spec, commands))
}

/// The shell tool a Responses request offers, and its field when that is not `command`.
pub(super) fn shell_tool(body: &Value) -> Option<super::ShellTool> {
    let t = crate::openai::shell_tool(body)?;
    let field = match t.arg {
        ShellArg::Text(f) | ShellArg::Argv(f) => f,
    };
    Some((t.name, (field != "command").then_some(field)))
}
