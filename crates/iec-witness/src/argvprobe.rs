//! The argv probe: a program that stands in for the target and writes the argv it received as a
//! JSON array of strings (bytes that are not UTF-8 are written as `\u00XX` escapes of each byte
//! would lose information, so they are written as lossy text plus a hex field). The `iec` binary
//! runs as the probe when invoked as `argvprobe` or as `iec argvprobe`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// Renders an argv as the probe writes it: `{"argv": [...], "hex": [...]}`.
pub fn record(args: &[OsString]) -> serde_json::Value {
    let argv: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a.as_bytes()).into_owned())
        .collect();
    let hex: Vec<String> = args
        .iter()
        .map(|a| a.as_bytes().iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    serde_json::json!({ "argv": argv, "hex": hex })
}
