//! `iec-mcp`: the MCP server over stdio (JSON-RPC lines on stdin/stdout).
//!
//! `IEC_MCP_RUNTIME` (used by the tests) picks how the tokio runtime is made:
//! unset or `multi_thread` = what `#[tokio::main]` builds, `block_on` =
//! `Runtime::new()?.block_on(..)`, `current_thread` = a current-thread runtime.

//!
//! Nothing is written to stderr: what the server has to say goes to the client as JSON-RPC
//! (see [`iec_mcp::serve`]); a session that failed exits 1.

use std::process::ExitCode;

fn main() -> ExitCode {
    let rt = match std::env::var("IEC_MCP_RUNTIME").as_deref() {
        Ok("block_on") => tokio::runtime::Runtime::new(),
        Ok("current_thread") => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        _ => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
    };
    match rt.map(|rt| rt.block_on(iec_mcp::serve_stdio())) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}
