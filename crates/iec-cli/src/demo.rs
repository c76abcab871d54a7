//! `iec demo`: a built-in set of hazardous calls checked on every launch, as a matrix.

use crate::out::{out, outln};
use anyhow::Result;
use iec_core::{Hop, Verdict};
use iec_launches::Catalog;

/// The demo calls: each is a hazard observed in public reports (see the tables in docs/spec/).
pub const CALLS: &[(&str, &str)] = &[
    ("plain", "ls -la"),
    ("bang-in-quotes", "printf '%s' 'a != b'"),
    ("jq-not-equal", "echo '{\"x\":1}' | jq 'select(.x != 2)'"),
    ("pid-in-pipe", "echo \"PID=$$\" | cat"),
    ("backslashes", "printf '%s\\n' 'C:\\\\Users\\\\me'"),
    ("heredoc", "cat <<'EOF'\nhello $USER\nEOF"),
    ("cr-lf", "printf a\r\nprintf b"),
    ("grep", "grep -rn TODO src"),
    ("ansi-c", "printf $'tab\\there\\n'"),
    ("brace-expansion", "echo {a,b}.txt"),
    ("command-subst", "echo \"today is $(date +%F)\""),
    ("bash-c-wrapped", "bash -c 'echo $0 $1' x y"),
    ("trailing-backslash", "echo foo \\"),
];

pub fn run(json: bool) -> Result<i32> {
    let cat = Catalog::builtin();
    // The hand-written launches; the learned ones (one per range of harness versions) are in
    // `iec launches` and their history in `iec launches --history`.
    let (learned, launches): (Vec<_>, Vec<_>) = cat.iter().partition(|l| l.learned());
    let mut rows = Vec::new();
    for (name, text) in CALLS {
        let mut cells = Vec::new();
        for l in &launches {
            let call = iec_check::call_for_text(l, text);
            let r = iec_check::check(l, &call, iec_witness::global(), Default::default())?;
            cells.push(r);
        }
        rows.push((name, text, cells));
    }
    if json {
        let doc: Vec<_> = rows
            .iter()
            .map(|(name, text, cells)| serde_json::json!({ "call": name, "command": text, "results": cells }))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(0);
    }
    outln!(
        "Checked without executing anything: {} calls × {} launches.",
        CALLS.len(),
        launches.len()
    );
    outln!("ok = corresponds; hop:mechanism = diverges, s silent / L loud; ? = unknown\n");
    for (i, (name, text)) in CALLS.iter().enumerate() {
        outln!(
            "  C{:<2} {name:<19} {}",
            i + 1,
            text.replace('\n', "⏎").replace('\r', "\\r")
        );
    }
    out!("\n{:<30}", "launch");
    for i in 0..CALLS.len() {
        out!(" {:<7}", format!("C{}", i + 1));
    }
    outln!();
    for (j, l) in launches.iter().enumerate() {
        out!("{:<30}", l.id);
        for (_, _, cells) in &rows {
            let r = &cells[j];
            let cell = match (&r.verdict, &r.first_divergence) {
                (Verdict::Corresponds, _) => "ok".to_string(),
                (Verdict::Diverges, Some(fd)) => format!(
                    "{}:{}{}",
                    Hop::from_name(&fd.hop_name).map_or("??", short_hop),
                    short_mech(fd.mechanism.as_str()),
                    if fd.silent { "s" } else { "L" }
                ),
                _ => "?".to_string(),
            };
            out!(" {cell:<7}");
        }
        outln!();
    }
    let legend: Vec<String> = LEGEND
        .iter()
        .map(|&h| format!("{}={}", short_hop(h), h.name()))
        .collect();
    outln!("\nhops: {}", legend.join(" "));
    outln!("mechanisms: qc=quote-consumption rx=re-expansion tr=truncation ar=arity-change ot=other");
    if !learned.is_empty() {
        outln!(
            "+ {} launches learned from published harness versions: `iec launches`, `iec launches --history`",
            learned.len()
        );
    }
    Ok(0)
}

/// The hops the legend explains, in its order.
const LEGEND: [Hop; 9] = [
    Hop::ToolInput,
    Hop::HarnessRewrite,
    Hop::Wrapper,
    Hop::Spawn,
    Hop::Shell,
    Hop::Eval,
    Hop::Program,
    Hop::Native,
    Hop::Terminal,
];

fn short_hop(h: Hop) -> &'static str {
    match h {
        Hop::ToolInput => "in",
        Hop::HarnessRewrite => "rw",
        Hop::Wrapper => "wr",
        Hop::Spawn => "sp",
        Hop::Shell => "sh",
        Hop::Eval => "ev",
        Hop::Program => "pg",
        Hop::Native => "nt",
        Hop::Terminal => "tt",
        Hop::InnerShell => "??",
    }
}

fn short_mech(m: &str) -> &'static str {
    match m {
        "quote-consumption" => "qc",
        "re-expansion" => "rx",
        "truncation" => "tr",
        "arity-change" => "ar",
        _ => "ot",
    }
}
