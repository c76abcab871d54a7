//! Codex (`@openai/codex`): `codex exec` against the replay server's Responses API
//! ([`crate::codex`]), `approval_policy = "never"` and `sandbox_mode = "danger-full-access"` in
//! its private config (its headless equivalent of a user's bypass).

use super::Harness;
use crate::agree::{Observed, RunSpec};
use crate::codex::{install_codex, observe_codex, run_codex_with, CodexOptions};
use crate::launch::{HarnessRun, PayloadResult};
use crate::openai::ShellArg;

/// Codex CLI.
pub struct Codex;

impl Harness for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }
    fn title(&self) -> &'static str {
        "Codex"
    }
    fn install(&self, version: &str) -> anyhow::Result<()> {
        install_codex(version).map(|_| ())
    }
    fn run(&self, spec: &RunSpec, commands: &[&str]) -> anyhow::Result<HarnessRun> {
        run_codex_with(&CodexOptions::for_spec(spec, commands))
    }
    fn observe(&self, id: &str, r: &PayloadResult) -> Observed {
        observe_codex(id, r)
    }
    fn tool(&self, run: &HarnessRun) -> Option<(String, Option<String>)> {
        let t = run
            .requests
            .iter()
            .filter(|q| q.role.starts_with("main"))
            .find_map(|q| crate::openai::shell_tool(&q.body))?;
        let field = match t.arg {
            ShellArg::Text(f) | ShellArg::Argv(f) => f,
        };
        Some((t.name, (field != "command").then_some(field)))
    }
    /// No limit is known: a batch of any size is one `codex exec`.
    fn max_calls(&self) -> usize {
        usize::MAX
    }
}
