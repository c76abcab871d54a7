//! Runs a node program on texts, one JSON line in and one JSON value out per text: the
//! differential tests' way to ask a harness's own JavaScript.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `program` (an ES module, written into `dir`, so it resolves packages from there; in the
/// system's temporary folder when `None`) with `args`, feeds every text as a JSON line, and
/// returns one JSON value per text.
pub fn answers(dir: Option<&Path>, program: &str, args: &[&str], texts: &[String]) -> Vec<serde_json::Value> {
    let mut b = tempfile::Builder::new();
    b.prefix("oracle-").suffix(".mjs");
    let script = match dir {
        Some(d) => b.tempfile_in(d),
        None => b.tempfile(),
    }
    .unwrap();
    std::fs::write(script.path(), program).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(script.path()).args(args);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs (tests need node and npm)");
    let mut stdin = child.stdin.take().unwrap();
    let input: String = texts
        .iter()
        .map(|t| serde_json::to_string(t).unwrap() + "\n")
        .collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "node: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), texts.len(), "node answered every text");
    lines
}
