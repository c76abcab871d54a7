//! Real harness runs: a replay Anthropic Messages API server ([`server`]) and a driver
//! ([`driver`]) that runs a real, pinned Claude Code headless against it, with a `BASH_ENV`
//! witness and an argv probe ([`probe`]), and runs each payload directly with `bash -c` as the
//! reference. The same server speaks the OpenAI Responses and Chat Completions APIs
//! ([`openai`]), and [`codex`] drives a real Codex CLI against it. See this crate's README.md.

pub mod agree;
pub mod anthropic;
pub mod codex;
pub mod driver;
pub mod gemini;
pub mod gemini_api;
pub mod harness;
pub mod hazard;
pub mod launch;
pub mod learn;
pub mod mcp_servers;
pub mod npm;
pub mod openai;
pub mod probe;
pub mod server;

pub use codex::{install_codex, run_codex_with, CodexOptions};
pub use driver::{install_claude_code, run_claude_code, run_claude_code_with, RunOptions};
pub use hazard::{action_hazard_payloads, hazard_payloads};
pub use launch::{DirectRun, HarnessRun, LaunchOptions, Launcher, PayloadResult};
pub use probe::ProbeRecord;
pub use server::{RecordedRequest, ReplayHandle, ReplayServer, Script, ToolResult};
