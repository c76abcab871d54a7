//! `iec-mcp`: the MCP server over stdio (JSON-RPC lines on stdin/stdout).
//!
//! `IEC_MCP_RUNTIME` (used by the tests) picks how the tokio runtime is made:
//! unset or `multi_thread` = what `#[tokio::main]` builds, `block_on` =
//! `Runtime::new()?.block_on(..)`, `current_thread` = a current-thread runtime.

//!
//! Nothing is written to stderr once it serves: what the server has to say goes to the client
//! as JSON-RPC (see [`iec_mcp::serve`]); a session that failed exits 1. An environment variable
//! with a bad value (see `iec_core::config`) is named on stderr before it serves, exit 1.

use std::process::ExitCode;

fn main() -> ExitCode {
    use iec_core::config::{Config, McpRuntime};
    let rt = match Config::from_env().map(|c| c.mcp_runtime) {
        Ok(McpRuntime::BlockOn) => tokio::runtime::Runtime::new(),
        Ok(McpRuntime::CurrentThread) => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        Ok(McpRuntime::MultiThread) => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
        Err(e) => {
            eprintln!("iec-mcp: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.map(|rt| rt.block_on(iec_mcp::serve_stdio())) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}
