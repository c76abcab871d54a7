//! Regenerates `tests/data/harness/`: runs the fixture payloads through each real harness this
//! project drives (Claude Code 2.1.72 and 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0) against
//! the replay server, and writes, per harness, the session logs the harness wrote (the sandbox
//! path rewritten to `/home/user/iec-fixture`) and what each call was observed to do
//! (`observed.jsonl`: the probe's argv through the harness against `bash -c`).
//!
//! ```sh
//! cargo run -p iec-scan --example regen_fixtures [HARNESS@VERSION ...]
//! ```

use std::path::{Path, PathBuf};

use iec_harness::agree::RunSpec;

/// The sandbox root's stand-in in the checked-in logs.
const PLACEHOLDER: &str = "/home/user/iec-fixture";

fn main() -> anyhow::Result<()> {
    let mut specs: Vec<String> = std::env::args().skip(1).collect();
    if specs.is_empty() {
        specs = [
            "claude-code@2.1.72",
            "claude-code@2.1.332",
            "codex@0.171.0",
            "gemini-cli@0.61.0",
        ]
        .map(String::from)
        .to_vec();
    }
    let payloads: Vec<String> = std::fs::read_to_string(data_dir().join("payloads.jsonl"))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .map(|v| v["command"].as_str().unwrap_or("").to_string())
        })
        .collect::<Result<_, _>>()?;
    for spec in specs {
        let (h, version) = iec_harness::harness::parse(&spec)?;
        h.install(&version)?;
        let cmds: Vec<&str> = payloads.iter().map(String::as_str).collect();
        let run = h.run(&RunSpec::new(&version), &cmds)?;
        anyhow::ensure!(!run.timed_out, "{spec} timed out; stderr:\n{}", run.stderr);
        anyhow::ensure!(
            !run.session_logs.is_empty(),
            "{spec} wrote no session log; stderr:\n{}",
            run.stderr
        );
        let out = data_dir().join(spec.replace('@', "-"));
        if out.exists() {
            std::fs::remove_dir_all(&out)?;
        }
        let root = run.sandbox_root.to_string_lossy().into_owned();
        let munged: String = root
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let placeholder_munged: String = PLACEHOLDER
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        for log in &run.session_logs {
            let rel = log.path.replace(&munged, &placeholder_munged);
            let text = String::from_utf8_lossy(&log.bytes)
                .replace(&root, PLACEHOLDER)
                .replace(&munged, &placeholder_munged);
            let p = out.join("logs").join(rel);
            std::fs::create_dir_all(p.parent().unwrap())?;
            std::fs::write(&p, text)?;
        }
        let mut observed = String::new();
        for (k, r) in run.results.iter().enumerate() {
            let o = h.observe(&format!("p{k:02}"), r);
            let line = serde_json::json!({
                "id": o.id, "command": o.command, "verdict": o.verdict,
                "first_divergence": o.first_divergence,
                "tool_result": o.tool_result,
            });
            observed.push_str(&serde_json::to_string(&line)?.replace(&root, PLACEHOLDER));
            observed.push('\n');
        }
        std::fs::write(out.join("observed.jsonl"), observed)?;
        eprintln!(
            "{spec}: {} logs, {} calls -> {}",
            run.session_logs.len(),
            run.results.len(),
            out.display()
        );
    }
    Ok(())
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/harness")
}
