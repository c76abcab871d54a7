//! Real harness runs. A replay model server ([`server`]) plays the model in three APIs, one
//! handler each: Anthropic Messages ([`anthropic`]), OpenAI Responses and Chat Completions
//! ([`openai`]), Gemini ([`gemini_api`]). One launch ([`launch`]) runs a real, pinned harness
//! headless against it in a private sandbox, with a `BASH_ENV` witness and an argv probe
//! ([`probe`]), and runs each payload directly with `bash -c` as the reference; the drivers say
//! what differs: Claude Code ([`driver`]), Codex ([`codex`]), Gemini CLI ([`gemini`]).
//! [`harness`] puts them behind one trait for `iec harness learn` ([`learn`]); [`agree`] compares
//! what arrived with `iec check`'s predictions; [`mcp_servers`] drives command-running MCP
//! servers through a real MCP client. See this crate's README.md.

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
