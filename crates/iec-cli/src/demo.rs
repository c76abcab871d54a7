//! `iec demo`: a built-in set of hazardous calls checked on every launch, as a matrix.

use anyhow::Result;
use iec_core::Verdict;
use iec_launches::Catalog;

/// The demo calls: each is a hazard observed in public reports (see the shared spec tables).
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
    let launches: Vec<_> = cat.iter().collect();
    let mut rows = Vec::new();
    for (name, text) in CALLS {
        let mut cells = Vec::new();
        for l in &launches {
            let call = iec_protocol::call_for_text(l, text);
            let r = iec_protocol::check(l, &call, iec_witness::global(), Default::default())?;
            cells.push(r);
        }
        rows.push((name, text, cells));
    }
    if json {
        let doc: Vec<_> = rows
            .iter()
            .map(|(name, text, cells)| serde_json::json!({ "call": name, "command": text, "results": cells }))
            .collect();
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(0);
    }
    let ids: Vec<&str> = launches.iter().map(|l| l.id.as_str()).collect();
    println!(
        "Checked without executing anything: {} calls × {} launches.",
        CALLS.len(),
        ids.len()
    );
    println!("ok = corresponds; X@hop:mechanism = diverges (s silent, L loud); ? = unknown\n");
    for (i, id) in ids.iter().enumerate() {
        println!("  L{i:<2} {id}");
    }
    print!("\n{:<20}", "call");
    for i in 0..ids.len() {
        print!(" {:<13}", format!("L{i}"));
    }
    println!();
    for (name, _, cells) in &rows {
        print!("{name:<20}");
        for r in cells {
            let cell = match (&r.verdict, &r.first_divergence) {
                (Verdict::Corresponds, _) => "ok".to_string(),
                (Verdict::Diverges, Some(fd)) => format!(
                    "X@{}:{}{}",
                    short_hop(&fd.hop_name),
                    short_mech(fd.mechanism.as_str()),
                    if fd.silent { "s" } else { "L" }
                ),
                _ => "?".to_string(),
            };
            print!(" {cell:<13}");
        }
        println!();
    }
    println!("\nhops: in=tool-input rw=harness-rewrite wr=wrapper sp=spawn sh=shell ev=eval pg=program");
    println!("mechanisms: qc=quote-consumption rx=re-expansion tr=truncation ar=arity-change ot=other");
    Ok(0)
}

fn short_hop(h: &str) -> &'static str {
    match h {
        "tool-input" => "in",
        "harness-rewrite" => "rw",
        "wrapper" => "wr",
        "spawn" => "sp",
        "shell" => "sh",
        "eval" => "ev",
        "program" => "pg",
        _ => "??",
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
