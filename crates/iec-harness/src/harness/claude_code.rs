//! Claude Code (`@anthropic-ai/claude-code`): `claude -p go --dangerously-skip-permissions`
//! against the replay server's Messages API ([`crate::driver`]). As root, the bypass flag is
//! refused unless `IS_SANDBOX=1`, which the driver sets (a user of a root container does the
//! same).

use serde_json::Value;

use crate::agree::RunSpec;
use crate::driver::{run_claude_code_with, HarnessRun, RunOptions};

/// One launch as a user runs it: no hook of ours in its settings.
pub(super) fn run(spec: &RunSpec, commands: &[&str]) -> anyhow::Result<HarnessRun> {
    let mut ro = RunOptions::for_spec(spec, commands);
    ro.hook_witness = false;
    ro.launch.session_calls = Some(super::CLAUDE_CODE.max_calls);
    run_claude_code_with(&ro)
}

/// The `Bash` tool (its `command` field) a Messages request offers.
pub(super) fn shell_tool(body: &Value) -> Option<super::ShellTool> {
    crate::anthropic::shell_tool_name(body).map(|t| (t, None))
}
