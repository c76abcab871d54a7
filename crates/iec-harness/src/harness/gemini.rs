//! Gemini CLI (`@google/gemini-cli`): `gemini -p go --yolo` against the replay server's Gemini
//! API ([`crate::gemini`]), the workspace trusted (an untrusted folder turns `--yolo` off).

use super::Harness;
use crate::agree::{Observed, RunSpec};
use crate::gemini::{install_gemini_cli, observe_gemini, run_gemini_with, GeminiOptions};
use crate::launch::{HarnessRun, PayloadResult};

/// Gemini CLI.
pub struct GeminiCli;

impl Harness for GeminiCli {
    fn name(&self) -> &'static str {
        "gemini-cli"
    }
    fn title(&self) -> &'static str {
        "Gemini CLI"
    }
    fn install(&self, version: &str) -> anyhow::Result<()> {
        install_gemini_cli(version).map(|_| ())
    }
    fn run(&self, spec: &RunSpec, commands: &[&str]) -> anyhow::Result<HarnessRun> {
        run_gemini_with(&GeminiOptions::for_spec(spec, commands))
    }
    fn observe(&self, id: &str, r: &PayloadResult) -> Observed {
        observe_gemini(id, r)
    }
    fn tool(&self, run: &HarnessRun) -> Option<(String, Option<String>)> {
        run.requests
            .iter()
            .filter(|q| q.role.starts_with("main"))
            .find_map(|q| crate::gemini_api::shell_tool(&q.body))
            .map(|t| (t, None))
    }
    /// Gemini CLI ends a prompt after 100 model turns.
    fn max_calls(&self) -> usize {
        90
    }
}
