//! `iec-mcp`: an MCP server (stdio transport, official Rust SDK `rmcp`) whose
//! tools run programs without ever building a command line.
//!
//! * `run` — `argv` goes element by element to `execvp`; no shell, no quoting.
//! * `run_script` — the script text is written to a private temporary file
//!   (mode 0600, deleted afterwards) and the interpreter is started as
//!   `[interpreter, FILE, args...]`; the script never travels in an argument.
//!
//! Entry point: [`serve_stdio`]. It must be awaited inside a tokio runtime with
//! IO and time enabled (`#[tokio::main]`, `Runtime::new()?.block_on(..)`, or a
//! current-thread runtime built with `enable_all()`).

pub mod exec;
pub mod framing;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData as McpError, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub use exec::{Outcome, StreamOut, OUTPUT_CAP};

/// Default `timeout_ms`.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// Largest accepted `timeout_ms`.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Interpreters accepted by `run_script`.
pub const INTERPRETERS: [&str; 4] = ["bash", "sh", "python3", "node"];

/// Parameters of the `run` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunParams {
    /// Program and arguments, passed to the program exactly as given (no
    /// shell, no splitting, no quoting). argv[0] is looked up in PATH unless
    /// it contains a '/'.
    pub argv: Vec<String>,
    /// Working directory (must exist). Default: the server's working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Variables added to (or overriding) the inherited environment.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Text written to the program's standard input, which is then closed.
    /// Without it, standard input is /dev/null.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Deadline in milliseconds (default 60000, max 600000). At the deadline
    /// the program's whole process group is killed with SIGKILL.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Parameters of the `run_script` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunScriptParams {
    /// One of: bash, sh, python3, node.
    #[schemars(extend("enum" = ["bash", "sh", "python3", "node"]))]
    pub interpreter: String,
    /// Script text. It is written byte-exact (UTF-8) to a temporary file
    /// (mode 0600, deleted afterwards) that the interpreter runs as
    /// `[interpreter, FILE, args...]`; it never appears on a command line.
    pub script: String,
    /// Arguments for the script ($1.. / sys.argv[1:] / process.argv.slice(2)).
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Working directory (must exist).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Variables added to (or overriding) the inherited environment.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Text written to the script's standard input, which is then closed.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Deadline in milliseconds (default 60000, max 600000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in d.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn timeout_of(ms: Option<u64>) -> Result<Duration, String> {
    let ms = ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if ms == 0 || ms > MAX_TIMEOUT_MS {
        return Err(format!(
            "timeout_ms must be between 1 and {MAX_TIMEOUT_MS}, got {ms}"
        ));
    }
    Ok(Duration::from_millis(ms))
}

fn error_result(tool: &str, message: String, extra: Value) -> CallToolResult {
    let mut v = json!({ "tool": tool, "error": message, "started": false });
    if let (Value::Object(m), Value::Object(x)) = (&mut v, extra) {
        m.extend(x);
    }
    let mut r = CallToolResult::error(vec![ContentBlock::text(format!("{tool}: {message}"))]);
    r.structured_content = Some(v);
    r
}

fn stream_summary(name: &str, s: &StreamOut) -> String {
    let mut h = format!("--- {name} ({} bytes", s.total_bytes);
    if s.truncated {
        h.push_str(&format!(", TRUNCATED to the first {} bytes", s.captured_bytes));
    }
    if !s.utf8 {
        h.push_str(", not UTF-8: text is lossy, exact bytes in base64");
    }
    h.push_str(") ---\n");
    h.push_str(&s.text);
    if !s.text.is_empty() && !s.text.ends_with('\n') {
        h.push('\n');
    }
    h
}

fn outcome_result(argv: &[String], cwd: Option<&Path>, o: &Outcome, extra: Value) -> CallToolResult {
    let mut v = json!({
        "argv": argv,
        "cwd": cwd.map(|p| p.to_string_lossy().into_owned()),
        "started": true,
        "exit_code": o.exit_code,
        "signal": o.signal,
        "timed_out": o.timed_out,
        "duration_ms": o.duration_ms,
        "pid": o.pid,
        "stdout": o.stdout,
        "stderr": o.stderr,
        "output_cap_bytes": OUTPUT_CAP,
    });
    if let (Value::Object(m), Value::Object(x)) = (&mut v, extra) {
        m.extend(x);
    }
    let status = match (o.exit_code, o.signal) {
        (Some(c), _) => format!("exit_code: {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "exit status unknown".to_string(),
    };
    let mut text = status;
    if o.timed_out {
        text.push_str(" | TIMED OUT (process group killed)");
    }
    text.push_str(&format!(" | {} ms\nargv: {}\n", o.duration_ms, json!(argv)));
    text.push_str(&stream_summary("stdout", &o.stdout));
    text.push_str(&stream_summary("stderr", &o.stderr));
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(v);
    r
}

/// The MCP server.
#[derive(Debug, Clone)]
pub struct IecMcp {
    tool_router: ToolRouter<Self>,
}

impl Default for IecMcp {
    fn default() -> Self {
        Self::new()
    }
}

#[tool_router(router = tool_router)]
impl IecMcp {
    pub fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Run a program with an exact argv (no shell).
    #[tool(
        name = "run",
        description = "Run a program with an exact argument vector: argv[0] is the program (PATH lookup unless it contains '/'), argv[1..] reach it byte-exact. No shell is involved, so quotes, $, globs, ;, | etc. are ordinary characters. Returns exit_code/signal, timed_out, stdout and stderr (1 MiB cap each, base64 when not UTF-8) and the argv as passed. isError is true only when the program could not be started."
    )]
    pub async fn run(&self, params: Parameters<RunParams>) -> Result<CallToolResult, McpError> {
        let p = params.0;
        if let Err(e) = iec_core::limits::check_command(&json!(p.argv)) {
            let bytes = iec_core::limits::command_bytes(&json!(p.argv));
            return Ok(error_result("run", e.to_string(), json!({ "argv_bytes": bytes })));
        }
        let timeout = match timeout_of(p.timeout_ms) {
            Ok(t) => t,
            Err(e) => return Ok(error_result("run", e, json!({ "argv": p.argv }))),
        };
        let spec = exec::Spec {
            argv: p.argv,
            cwd: p.cwd.map(PathBuf::from),
            env: p.env.unwrap_or_default(),
            stdin: p.stdin.map(String::into_bytes),
            timeout,
        };
        Ok(match exec::execute(&spec).await {
            Ok(o) => outcome_result(&spec.argv, spec.cwd.as_deref(), &o, json!({})),
            Err(e) => error_result("run", e, json!({ "argv": spec.argv })),
        })
    }

    /// Run a script delivered through a temporary file.
    #[tool(
        name = "run_script",
        description = "Run a script with bash, sh, python3 or node. The script text is written byte-exact to a private temporary file (mode 0600, deleted afterwards) and run as [interpreter, FILE, args...]; it is never put on a command line and never parsed by another shell. Returns the run result plus delivered_via \"file\" and script_sha256 (SHA-256 of the UTF-8 script bytes as written) so the caller can verify the bytes."
    )]
    pub async fn run_script(&self, params: Parameters<RunScriptParams>) -> Result<CallToolResult, McpError> {
        let p = params.0;
        let sha = sha256_hex(p.script.as_bytes());
        let info = json!({
            "interpreter": p.interpreter,
            "script_sha256": sha,
            "script_bytes": p.script.len(),
        });
        if p.script.len() > iec_core::MAX_TEXT {
            let e = iec_core::limits::TooLong {
                what: "the script".into(),
                bytes: p.script.len(),
                at_least: false,
            };
            return Ok(error_result("run_script", e.to_string(), info));
        }
        let suffix = match p.interpreter.as_str() {
            "bash" | "sh" => ".sh",
            "python3" => ".py",
            "node" => ".js",
            other => {
                return Ok(error_result(
                    "run_script",
                    format!(
                        "unsupported interpreter {other:?}; use one of {}",
                        INTERPRETERS.join(", ")
                    ),
                    info,
                ))
            }
        };
        let timeout = match timeout_of(p.timeout_ms) {
            Ok(t) => t,
            Err(e) => return Ok(error_result("run_script", e, info)),
        };
        let file = match write_script(p.script.as_bytes(), suffix) {
            Ok(f) => f,
            Err(e) => return Ok(error_result("run_script", e, info)),
        };
        let mut argv = vec![p.interpreter.clone(), file.to_string_lossy().into_owned()];
        argv.extend(p.args.unwrap_or_default());
        let spec = exec::Spec {
            argv,
            cwd: p.cwd.map(PathBuf::from),
            env: p.env.unwrap_or_default(),
            stdin: p.stdin.map(String::into_bytes),
            timeout,
        };
        let res = exec::execute(&spec).await;
        let path = file.to_path_buf();
        let deleted = file.close().is_ok() && !path.exists();
        let mut extra = info;
        if let Value::Object(m) = &mut extra {
            m.insert("delivered_via".into(), json!("file"));
            m.insert("script_path".into(), json!(path.to_string_lossy()));
            m.insert("script_deleted".into(), json!(deleted));
        }
        Ok(match res {
            Ok(o) => outcome_result(&spec.argv, spec.cwd.as_deref(), &o, extra),
            Err(e) => {
                if let Value::Object(m) = &mut extra {
                    m.insert("argv".into(), json!(spec.argv));
                }
                error_result("run_script", e, extra)
            }
        })
    }
}

/// Writes the script to a fresh 0600 temporary file, reads it back and checks
/// the bytes, and returns the (auto-deleting) path.
fn write_script(bytes: &[u8], suffix: &str) -> Result<tempfile::TempPath, String> {
    let mut dir = std::env::temp_dir();
    if !dir.is_absolute() {
        dir = std::env::current_dir()
            .map_err(|e| format!("temporary directory is relative and cwd unknown: {e}"))?
            .join(dir);
    }
    let mut f = tempfile::Builder::new()
        .prefix("iec-mcp-script-")
        .suffix(suffix)
        .tempfile_in(&dir)
        .map_err(|e| format!("cannot create the script file in {}: {e}", dir.display()))?;
    f.write_all(bytes)
        .and_then(|_| f.as_file().sync_all())
        .map_err(|e| format!("cannot write the script file: {e}"))?;
    let path = f.into_temp_path();
    let back = std::fs::read(&path).map_err(|e| format!("cannot re-read the script file: {e}"))?;
    if back != bytes {
        return Err("script file does not hold the script bytes after writing".into());
    }
    Ok(path)
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for IecMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("iec-mcp", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools `run` (exact argv, no shell) and `run_script` (script via a temporary file). \
                 Arguments reach the program byte-exact or the call is refused with isError.",
            )
    }
}

/// Serves the MCP protocol on this process's stdin/stdout until the client
/// closes stdin. Call from inside a tokio runtime with IO and time enabled
/// (multi-thread or current-thread).
pub async fn serve_stdio() -> anyhow::Result<()> {
    serve(tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves the MCP protocol on any line-oriented byte stream pair; every input
/// line passes the [`framing`] guard first.
///
/// Everything the server has to say goes to `output` as JSON-RPC: a session that does not
/// start with `initialize` (a notification or another request first) is answered with a
/// JSON-RPC error (id `null`, code -32600) before the error is returned; a client that closes
/// its input before initializing ends the session without an error.
pub async fn serve<I, O>(input: I, output: O) -> anyhow::Result<()>
where
    I: tokio::io::AsyncRead + Unpin + Send + 'static,
    O: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (server_side, our_side) = tokio::io::duplex(1 << 16);
    let (from_rmcp, to_rmcp) = tokio::io::split(our_side);
    let (err_tx, err_rx) = tokio::sync::mpsc::unbounded_channel();
    let pump = tokio::spawn(framing::pump_with(
        input,
        output,
        to_rmcp,
        from_rmcp,
        err_tx.clone(),
        err_rx,
    ));
    let served = async {
        let service = match IecMcp::new().serve(server_side).await {
            Ok(s) => s,
            // The client went away before initializing: nothing to answer, nothing failed.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => {
                let message = match e {
                    rmcp::service::ServerInitializeError::ExpectedInitializeRequest(_) => {
                        "MCP initialization failed: the session must start with an `initialize` request"
                            .into()
                    }
                    e => format!("MCP initialization failed: {e}"),
                };
                let mut line = serde_json::to_vec(&json!({
                    "jsonrpc": "2.0", "id": null,
                    "error": { "code": -32600, "message": message },
                }))
                .expect("serializable");
                line.push(b'\n');
                let _ = err_tx.send(line);
                anyhow::bail!(message);
            }
        };
        service.waiting().await?;
        anyhow::Ok(())
    }
    .await;
    drop(err_tx);
    pump.await?;
    served
}
