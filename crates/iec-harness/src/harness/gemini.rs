//! Gemini CLI (`@google/gemini-cli`): `gemini -p go --yolo` against the replay server's Gemini
//! API ([`crate::gemini`]), the workspace trusted (an untrusted folder turns `--yolo` off). It
//! ends a prompt after 100 model turns, so a launch takes at most 90 calls.

use serde_json::Value;

use crate::agree::RunSpec;
use crate::gemini::{run_gemini_with, GeminiOptions};
use crate::launch::HarnessRun;

/// One `gemini -p` of `commands`, at most 90 a session (more go on in further sessions in the
/// same sandbox).
pub(super) fn run(spec: &RunSpec, commands: &[&str]) -> anyhow::Result<HarnessRun> {
    let mut o = GeminiOptions::for_spec(spec, commands);
    o.launch.session_calls = Some(super::GEMINI_CLI.max_calls);
    run_gemini_with(&o)
}

/// The shell tool a Gemini request declares (its `command` field).
pub(super) fn shell_tool(body: &Value) -> Option<super::ShellTool> {
    crate::gemini_api::shell_tool(body).map(|t| (t, None))
}
