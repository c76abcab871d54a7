//! `iec-mcp`: the MCP server over stdio (JSON-RPC lines on stdin/stdout).
//!
//! `IEC_MCP_RUNTIME` (used by the tests) picks how the tokio runtime is made:
//! unset or `multi_thread` = what `#[tokio::main]` builds, `block_on` =
//! `Runtime::new()?.block_on(..)`, `current_thread` = a current-thread runtime.

fn main() -> anyhow::Result<()> {
    let rt = match std::env::var("IEC_MCP_RUNTIME").as_deref() {
        Ok("block_on") => tokio::runtime::Runtime::new()?,
        Ok("current_thread") => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        _ => tokio::runtime::Builder::new_multi_thread().enable_all().build()?,
    };
    rt.block_on(iec_mcp::serve_stdio())
}
