//! Claude Code (`@anthropic-ai/claude-code`): `claude -p go --dangerously-skip-permissions`
//! against the replay server's Messages API ([`crate::driver`]). As root, the bypass flag is
//! refused unless `IS_SANDBOX=1`, which the driver sets (a user of a root container does the
//! same).

use super::Harness;
use crate::agree::{observe, Observed, RunSpec};
use crate::driver::{install_claude_code, run_claude_code_with, HarnessRun, PayloadResult, RunOptions};

/// Claude Code.
pub struct ClaudeCode;

impl Harness for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }
    fn title(&self) -> &'static str {
        "Claude Code"
    }
    fn install(&self, version: &str) -> anyhow::Result<()> {
        install_claude_code(version).map(|_| ())
    }
    fn run(&self, spec: &RunSpec, commands: &[&str]) -> anyhow::Result<HarnessRun> {
        // The harness as it is: no hook of ours in its settings.
        let mut ro = RunOptions::for_spec(spec, commands);
        ro.hook_witness = false;
        run_claude_code_with(&ro)
    }
    fn observe(&self, id: &str, r: &PayloadResult) -> Observed {
        observe(id, r)
    }
    fn tool(&self, run: &HarnessRun) -> Option<(String, Option<String>)> {
        run.requests
            .iter()
            .filter(|q| q.role.starts_with("main"))
            .find_map(|q| crate::anthropic::shell_tool_name(&q.body))
            .map(|t| (t, None))
    }
}
