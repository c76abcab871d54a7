//! A line guard in front of rmcp's stdio transport.
//!
//! rmcp silently drops some malformed lines (garbage before `initialize`,
//! lone UTF-16 surrogates, ...), which leaves a client waiting forever. Every
//! line from the client is checked here first: a line that is not a JSON-RPC
//! 2.0 message gets a JSON-RPC error response (`-32700` parse error,
//! `-32600` invalid request, `-32602` for params that are not an object) and
//! is not passed on; a message with a member twice (two `id`s) is an invalid
//! request, answered with its id when all of them agree, else `null`; an id
//! that is valid JSON but beyond `f64` (`1e400`) is kept as written. Before
//! the session has begun ([`Guard`]) notifications and responses are dropped
//! unanswered (rmcp would end the session on them) and requests for unknown
//! methods are answered `-32601`. Everything else is passed to rmcp byte for
//! byte. Output from rmcp and from the guard is written to
//! stdout one whole line at a time, so responses never interleave.

use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Longest accepted line (same as rmcp's default).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Outcome of reading one line.
enum Line {
    Eof,
    TooLong,
    Data(Vec<u8>),
}

async fn read_line_limited<R: AsyncBufRead + Unpin>(r: &mut R, max: usize) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Data(buf)
            });
        }
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            let take = if done { used - 1 } else { used };
            if buf.len() + take > max {
                too_long = true;
                buf = Vec::new();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        r.consume(used);
        if done {
            return Ok(if too_long { Line::TooLong } else { Line::Data(buf) });
        }
    }
}

/// The top-level `id` and `method` of a message, as written.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
}

/// The byte range and text of the top-level `id` of `line`, as the client wrote it.
fn raw_id(line: &[u8]) -> Option<(std::ops::Range<usize>, &str)> {
    let text = std::str::from_utf8(line).ok()?;
    let head: Head<'_> = serde_json::from_str(text).ok()?;
    let raw = head.id?.get();
    let start = raw.as_ptr() as usize - text.as_ptr() as usize;
    Some((start..start + raw.len(), raw))
}

/// An error response whose `id` is `id_raw`, the id's JSON text exactly as the client wrote it
/// (`null` when there is none).
fn error_line(id_raw: &str, code: i64, message: String) -> Vec<u8> {
    let error = json!({ "code": code, "message": message });
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id_raw},\"error\":{error}}}\n").into_bytes()
}

fn error_response(id: Value, code: i64, message: String) -> Vec<u8> {
    error_line(&id.to_string(), code, message)
}

/// The id of a line that does not parse only because of lone surrogate escapes: read with each
/// replaced by `\ufffd`, so the error answers the request it belongs to.
fn id_despite_surrogates(line: &[u8]) -> Option<String> {
    let mut fixed = line.to_vec();
    for _ in 0..64 {
        match serde_json::from_slice::<Value>(&fixed) {
            Ok(_) => {
                return raw_id(&fixed).map(|(_, raw)| raw.to_string()).filter(|raw| {
                    raw.starts_with(['"', '-']) || raw.starts_with(|c: char| c.is_ascii_digit())
                })
            }
            Err(_) => {
                let l = iec_core::json::lone_surrogate(&fixed)?;
                fixed[l.offset..l.offset + 6].copy_from_slice(b"\\ufffd");
            }
        }
    }
    None
}

/// The members of a top-level JSON object as written, duplicates kept (serde_json's `Value`
/// keeps only the last of duplicate keys, and a number beyond `f64` fails it).
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut m: M) -> Result<Members<'a>, M::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, &'a RawValue>()? {
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// Methods a client may send that this server (rmcp) knows; any other method is answered
/// `-32601` by the guard before the session has begun (after it, by rmcp).
pub const KNOWN_METHODS: [&str; 24] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "prompts/list",
    "prompts/get",
    "logging/setLevel",
    "completion/complete",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
    "sampling/createMessage",
    "roots/list",
    "elicitation/create",
];

/// What the guard does with one client line.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Pass it on to rmcp.
    Pass,
    /// Answer with this error line instead.
    Answer(Vec<u8>),
    /// Drop it without an answer (a notification or a response before the session has begun).
    Drop,
}

/// Decides what to do with one client line once the session has begun: `Ok(())` = pass it on,
/// `Err(bytes)` = answer with this error line instead (see [`Guard`] for the lines before).
pub fn check_line(line: &[u8]) -> Result<(), Vec<u8>> {
    match (Guard { begun: true }).check(line) {
        Verdict::Pass | Verdict::Drop => Ok(()),
        Verdict::Answer(b) => Err(b),
    }
}

/// The guard's state: whether the session has begun (rmcp has been passed an `initialize`
/// request, or a request carrying the stateless lifecycle's metadata). Before that, rmcp ends
/// the session on a notification or a response; the guard drops them instead (JSON-RPC: a
/// notification gets no reply), and answers requests for methods it does not know `-32601`.
#[derive(Debug, Default)]
pub struct Guard {
    /// True once a line that begins the session was passed on.
    pub begun: bool,
}

impl Guard {
    /// Decides what to do with one client line (and notes when it begins the session).
    pub fn check(&mut self, line: &[u8]) -> Verdict {
        match self.classify(line) {
            Ok(v) => v,
            Err(b) => Verdict::Answer(b),
        }
    }

    fn classify(&mut self, line: &[u8]) -> Result<Verdict, Vec<u8>> {
        let parsed = serde_json::from_slice::<Value>(line);
        if parsed.is_err() {
            if let Some(l) = iec_core::json::lone_surrogate(line) {
                let id = id_despite_surrogates(line).unwrap_or_else(|| "null".into());
                return Err(error_line(&id, -32700, format!("Parse error: {l}")));
            }
        }
        // The members as written: valid JSON whose numbers `Value` cannot hold (an id of `1e400`)
        // is still a message.
        let members = match std::str::from_utf8(line)
            .ok()
            .map(serde_json::from_str::<Members<'_>>)
        {
            Some(Ok(m)) => m,
            _ => {
                return Err(match parsed {
                    Err(e) => error_response(
                        Value::Null,
                        -32700,
                        format!("Parse error: the line is not valid JSON ({e})"),
                    ),
                    Ok(Value::Array(_)) => error_response(
                        Value::Null,
                        -32600,
                        "Invalid Request: JSON-RPC batches are not supported by MCP".into(),
                    ),
                    Ok(_) => error_response(
                        Value::Null,
                        -32600,
                        "Invalid Request: a JSON-RPC message must be an object".into(),
                    ),
                })
            }
        };
        // The id as written (a number beyond 64 bits, `1.0`, `1e3`, `1e400` kept exactly).
        let ids: Vec<&str> = members
            .0
            .iter()
            .filter(|(k, _)| k == "id")
            .map(|(_, v)| v.get())
            .collect();
        let id_ok = |raw: &str| {
            raw.starts_with(['"', '-']) || raw.starts_with(|c: char| c.is_ascii_digit()) || raw == "null"
        };
        let id: String = match ids.first() {
            None => "null".into(),
            Some(raw) if ids.iter().all(|r| r == raw) && id_ok(raw) => raw.to_string(),
            Some(_) if ids.len() > 1 => "null".into(),
            Some(_) => {
                return Err(error_response(
                    Value::Null,
                    -32600,
                    "Invalid Request: id must be a string or a number".into(),
                ))
            }
        };
        let mut seen = std::collections::HashSet::new();
        if let Some((k, _)) = members.0.iter().find(|(k, _)| !seen.insert(k.as_str())) {
            return Err(error_line(
                &id,
                -32600,
                format!("Invalid Request: the member {k:?} appears more than once"),
            ));
        }
        let mut obj = serde_json::Map::new();
        for (k, v) in &members.0 {
            if k == "id" {
                continue;
            }
            match serde_json::from_str::<Value>(v.get()) {
                Ok(v) => {
                    obj.insert(k.clone(), v);
                }
                Err(e) if k == "params" => {
                    return Err(error_line(&id, -32602, format!("Invalid params: {e}")))
                }
                Err(e) => {
                    return Err(error_line(
                        &id,
                        -32600,
                        format!("Invalid Request: member {k:?}: {e}"),
                    ))
                }
            }
        }
        if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
            return Err(error_line(
                &id,
                -32600,
                "Invalid Request: \"jsonrpc\" must be \"2.0\"".into(),
            ));
        }
        let has_id = !ids.is_empty() && id != "null";
        match obj.get("method") {
            Some(Value::String(method)) => {
                match obj.get("params") {
                    None | Some(Value::Object(_)) => {}
                    // A structured value JSON-RPC allows, but not MCP's: invalid params.
                    Some(Value::Array(_)) => {
                        return Err(error_line(
                            &id,
                            -32602,
                            "Invalid params: MCP params must be an object, not an array".into(),
                        ))
                    }
                    Some(_) => {
                        return Err(error_line(
                            &id,
                            -32600,
                            "Invalid Request: params must be an object".into(),
                        ))
                    }
                }
                if !has_id {
                    // A notification: never answered. Before the session it would end rmcp's.
                    return Ok(if self.begun { Verdict::Pass } else { Verdict::Drop });
                }
                if !self.begun && !KNOWN_METHODS.contains(&method.as_str()) {
                    return Err(error_line(&id, -32601, format!("Method not found: {method}")));
                }
                if method == "tools/call" && !obj.get("params").is_some_and(|p| p["name"].is_string()) {
                    return Err(error_line(
                        &id,
                        -32602,
                        "Invalid params: tools/call needs `name`, the tool to call (a string)".into(),
                    ));
                }
                if !self.begun {
                    let meta = &obj.get("params").map_or(Value::Null, |p| p["_meta"].clone());
                    self.begun = method == "initialize"
                        || (!matches!(method.as_str(), "ping" | "server/discover")
                            && meta.get("io.modelcontextprotocol/protocolVersion").is_some()
                            && meta.get("io.modelcontextprotocol/clientCapabilities").is_some());
                }
                Ok(Verdict::Pass)
            }
            Some(_) => Err(error_line(
                &id,
                -32600,
                "Invalid Request: method must be a string".into(),
            )),
            None if has_id && (obj.contains_key("result") || obj.contains_key("error")) => {
                // A response to a server-initiated request; before the session there is none.
                Ok(if self.begun { Verdict::Pass } else { Verdict::Drop })
            }
            None => Err(error_line(
                &id,
                -32600,
                "Invalid Request: neither a request, a notification nor a response".into(),
            )),
        }
    }
}

/// Request ids rmcp cannot hold (it keeps a numeric id as an `i64`: a number beyond 64 bits,
/// `1.0`, `1e3`, `-0` would come back changed or not at all) travel to rmcp as a string of
/// this process's own and are put back, as the client wrote them, in rmcp's response.
#[derive(Default)]
struct IdMap {
    nonce: String,
    next: u64,
    /// Stand-in (JSON text, with its quotes) → the client's id (JSON text).
    taken: std::collections::HashMap<String, String>,
}

impl IdMap {
    fn new() -> IdMap {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        IdMap {
            nonce: format!("{:x}-{t:x}", std::process::id()),
            ..IdMap::default()
        }
    }

    /// `line` with its id replaced by a stand-in when rmcp could not echo it exactly.
    fn outgoing(&mut self, line: Vec<u8>) -> Vec<u8> {
        let Some((range, raw)) = raw_id(&line) else {
            return line;
        };
        let is_request = std::str::from_utf8(&line)
            .ok()
            .and_then(|t| serde_json::from_str::<Head<'_>>(t).ok())
            .is_some_and(|h| h.method.is_some());
        let numeric = raw.starts_with('-') || raw.starts_with(|c: char| c.is_ascii_digit());
        if !is_request || !numeric || raw.parse::<i64>().is_ok_and(|n| n.to_string() == raw) {
            return line;
        }
        self.next += 1;
        let stand_in = format!("\"iec-mcp-id-{}-{}\"", self.nonce, self.next);
        self.taken.insert(stand_in.clone(), raw.to_string());
        let mut out = line[..range.start].to_vec();
        out.extend_from_slice(stand_in.as_bytes());
        out.extend_from_slice(&line[range.end..]);
        out
    }

    /// `line` (from rmcp) with a stand-in id replaced by the client's own.
    fn incoming(&mut self, line: Vec<u8>) -> Vec<u8> {
        if self.taken.is_empty() {
            return line;
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let Some((range, raw)) = raw_id(body) else {
            return line;
        };
        let Some(original) = self.taken.remove(raw) else {
            return line;
        };
        let mut out = line[..range.start].to_vec();
        out.extend_from_slice(original.as_bytes());
        out.extend_from_slice(&line[range.end..]);
        out
    }
}

/// Pumps `input` through the guard into `to_rmcp`, and `from_rmcp` plus the
/// guard's own errors into `output`, until the input ends and rmcp has
/// finished writing.
pub async fn pump<I, O, ToR, FromR>(input: I, output: O, to_rmcp: ToR, from_rmcp: FromR)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
    ToR: AsyncWrite + Unpin + Send + 'static,
    FromR: AsyncRead + Unpin + Send + 'static,
{
    let (err_tx, err_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    pump_with(input, output, to_rmcp, from_rmcp, err_tx, err_rx).await
}

/// [`pump`], with the channel of lines the guard writes besides rmcp's given: a holder of
/// another sender can write lines too, and the pump ends only when every sender is gone.
pub async fn pump_with<I, O, ToR, FromR>(
    input: I,
    output: O,
    mut to_rmcp: ToR,
    from_rmcp: FromR,
    err_tx: mpsc::UnboundedSender<Vec<u8>>,
    mut err_rx: mpsc::UnboundedReceiver<Vec<u8>>,
) where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
    ToR: AsyncWrite + Unpin + Send + 'static,
    FromR: AsyncRead + Unpin + Send + 'static,
{
    let ids = std::sync::Arc::new(std::sync::Mutex::new(IdMap::new()));
    let ids_out = ids.clone();
    let reader = tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut guard = Guard::default();
        loop {
            match read_line_limited(&mut input, MAX_LINE).await {
                Ok(Line::Eof) | Err(_) => break,
                Ok(Line::TooLong) => {
                    let _ = err_tx.send(error_response(
                        Value::Null,
                        -32700,
                        format!("Parse error: line longer than {MAX_LINE} bytes"),
                    ));
                }
                Ok(Line::Data(mut l)) => {
                    if l.last() == Some(&b'\r') {
                        l.pop();
                    }
                    if l.iter().all(|b| b.is_ascii_whitespace()) {
                        continue;
                    }
                    match guard.check(&l) {
                        Verdict::Pass => {
                            let mut l = ids.lock().expect("not poisoned").outgoing(l);
                            l.push(b'\n');
                            if to_rmcp.write_all(&l).await.is_err() {
                                break;
                            }
                        }
                        Verdict::Answer(resp) => {
                            let _ = err_tx.send(resp);
                        }
                        Verdict::Drop => {}
                    }
                }
            }
        }
        let _ = to_rmcp.shutdown().await;
        drop(to_rmcp);
    });

    let mut output = output;
    let mut from_rmcp = BufReader::new(from_rmcp);
    let mut rmcp_open = true;
    let mut errs_open = true;
    while rmcp_open || errs_open {
        let mut line = Vec::new();
        tokio::select! {
            r = from_rmcp.read_until(b'\n', &mut line), if rmcp_open => {
                match r {
                    Ok(0) | Err(_) => rmcp_open = false,
                    Ok(_) => {
                        let line = ids_out.lock().expect("not poisoned").incoming(line);
                        if output.write_all(&line).await.is_err() { break; }
                        let _ = output.flush().await;
                    }
                }
            }
            e = err_rx.recv(), if errs_open => {
                match e {
                    None => errs_open = false,
                    Some(bytes) => {
                        if output.write_all(&bytes).await.is_err() { break; }
                        let _ = output.flush().await;
                    }
                }
            }
        }
    }
    let _ = output.flush().await;
    reader.abort();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &str) -> Option<i64> {
        check_line(line.as_bytes()).err().map(|b| {
            serde_json::from_slice::<Value>(&b).unwrap()["error"]["code"]
                .as_i64()
                .unwrap()
        })
    }

    #[test]
    fn classifies_lines() {
        assert_eq!(code("garbage"), Some(-32700));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\ud800"}}"#),
            Some(-32700)
        );
        assert_eq!(code("[1,2]"), Some(-32600));
        assert_eq!(code("3"), Some(-32600));
        assert_eq!(code(r#"{"id":7}"#), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#), Some(-32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":5}"#), Some(-32600));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":"s"}"#),
            Some(-32600)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            Some(-32602)
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#), None);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#), None);
    }
}
