//! A line guard in front of rmcp's stdio transport.
//!
//! rmcp silently drops some malformed lines (garbage before `initialize`,
//! lone UTF-16 surrogates, ...), which leaves a client waiting forever. Every
//! line from the client is checked here first: a line that is not a JSON-RPC
//! 2.0 message gets a JSON-RPC error response (`-32700` parse error or
//! `-32600` invalid request) and is not passed on; everything else is passed
//! to rmcp byte for byte. Output from rmcp and from the guard is written to
//! stdout one whole line at a time, so responses never interleave.

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

fn error_response(id: Value, code: i64, message: String) -> Vec<u8> {
    let mut v = serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    }))
    .expect("serializable");
    v.push(b'\n');
    v
}

/// Decides what to do with one client line: `Ok(())` = pass it on,
/// `Err(bytes)` = answer with this error line instead.
pub fn check_line(line: &[u8]) -> Result<(), Vec<u8>> {
    let v: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Err(error_response(
                Value::Null,
                -32700,
                format!("Parse error: the line is not valid JSON ({e})"),
            ))
        }
    };
    let obj = match &v {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err(error_response(
                Value::Null,
                -32600,
                "Invalid Request: JSON-RPC batches are not supported by MCP".into(),
            ))
        }
        _ => {
            return Err(error_response(
                Value::Null,
                -32600,
                "Invalid Request: a JSON-RPC message must be an object".into(),
            ))
        }
    };
    let id = match obj.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        Some(Value::Null) | None => Value::Null,
        Some(_) => {
            return Err(error_response(
                Value::Null,
                -32600,
                "Invalid Request: id must be a string or a number".into(),
            ))
        }
    };
    if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(error_response(
            id,
            -32600,
            "Invalid Request: \"jsonrpc\" must be \"2.0\"".into(),
        ));
    }
    match obj.get("method") {
        Some(Value::String(_)) => {
            if let Some(p) = obj.get("params") {
                if !p.is_object() {
                    return Err(error_response(
                        id,
                        -32600,
                        "Invalid Request: params must be an object".into(),
                    ));
                }
            }
            Ok(())
        }
        Some(_) => Err(error_response(
            id,
            -32600,
            "Invalid Request: method must be a string".into(),
        )),
        None if !id.is_null() && (obj.contains_key("result") || obj.contains_key("error")) => {
            Ok(()) // a response to a server-initiated request
        }
        None => Err(error_response(
            id,
            -32600,
            "Invalid Request: neither a request, a notification nor a response".into(),
        )),
    }
}

/// Pumps `input` through the guard into `to_rmcp`, and `from_rmcp` plus the
/// guard's own errors into `output`, until the input ends and rmcp has
/// finished writing.
pub async fn pump<I, O, ToR, FromR>(input: I, output: O, mut to_rmcp: ToR, from_rmcp: FromR)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
    ToR: AsyncWrite + Unpin + Send + 'static,
    FromR: AsyncRead + Unpin + Send + 'static,
{
    let (err_tx, mut err_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let reader = tokio::spawn(async move {
        let mut input = BufReader::new(input);
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
                    match check_line(&l) {
                        Ok(()) => {
                            l.push(b'\n');
                            if to_rmcp.write_all(&l).await.is_err() {
                                break;
                            }
                        }
                        Err(resp) => {
                            let _ = err_tx.send(resp);
                        }
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
            Some(-32600)
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#), None);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#), None);
    }
}
