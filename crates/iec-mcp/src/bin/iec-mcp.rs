//! `iec-mcp`: the MCP server over stdio (JSON-RPC on stdin/stdout, logs nowhere).

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    iec_mcp::serve_stdio().await
}
