//! The text format: a short hop-by-hop table with the diff.

use iec_core::{CheckReport, Verdict};
use std::fmt::Write;

fn short(s: &str, n: usize) -> String {
    let s = s.replace('\n', "⏎");
    if s.chars().count() <= n {
        s
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// Renders one report for a terminal.
pub fn report(r: &CheckReport) -> String {
    let mut o = String::new();
    let head = match (&r.verdict, &r.first_divergence) {
        (Verdict::Diverges, Some(fd)) => format!(
            "diverges at hop {} {} ({}): {}, {}",
            fd.hop,
            fd.hop_name,
            fd.kind.as_str(),
            fd.mechanism.as_str(),
            if fd.silent { "silent" } else { "loud" }
        ),
        (v, _) => v.as_str().to_string(),
    };
    writeln!(o, "{}: {}", r.launch, head).unwrap();
    if let Some(reason) = &r.reason {
        writeln!(o, "  reason: {reason}").unwrap();
    }
    for (i, h) in r.hops.iter().enumerate() {
        let ok = match h.corresponds {
            Some(true) => "ok",
            Some(false) => "CHANGED",
            None => "-",
        };
        let receipt = h
            .receipt
            .get("text")
            .or_else(|| h.receipt.get("delivers"))
            .or_else(|| h.receipt.get("eval_args"))
            .or_else(|| h.receipt.get("argv"))
            .or_else(|| h.receipt.get("command"))
            .map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            })
            .unwrap_or_default();
        writeln!(
            o,
            "  {i} {:<16} {:<18} {:<9} {:<8} {}",
            h.name,
            h.kind.as_str(),
            format!("{:?}", h.witness).to_lowercase(),
            ok,
            short(&receipt, 70)
        )
        .unwrap();
    }
    if let Some(fd) = &r.first_divergence {
        writeln!(o, "  {}", fd.detail).unwrap();
        if !fd.diff.is_empty() {
            writeln!(o, "  diff {}", short(&fd.diff, 160)).unwrap();
        }
    }
    o
}
