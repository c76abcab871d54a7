//! `iec launches --history`: for each harness and OS, its launches in version order with the
//! ranges they hold for, and what each changes: every probe call (a fixed set, one per hazard
//! the catalog's launches are known to differ on) that `iec check` finds changed on it, with the
//! hop and mechanism. Generated from the catalog, so a new launch file adds its rows.

use iec_core::Verdict;
use iec_launches::resolve::Version;
use iec_launches::{Catalog, Launch};

/// The probe calls, one per hazard.
pub const PROBES: &[&str] = &[
    "printf '%s' 'a != b'",
    "echo $$ | cat",
    "echo \"$(echo a b)\" | cat",
    "printf 'a\u{1}b'",
    "echo a\\;b",
    "grep -r x .",
    "false;",
    // Gemini CLI 0.11–0.25's parse gate: a text that names no command.
    "x=1",
    // Gemini CLI 0.26–0.27's: every here-document.
    "cat <<EOF\nx\nEOF",
    // Gemini CLI 0.1.9 refuses every backtick, 0.1.9 and 0.1.13 every `$(`, quoted or not.
    "echo `echo a`",
    "echo '$(x)'",
    // Gemini CLI 0.1.x–0.10 find no command root in `X=/` (0.1.1–0.1.13 also in braces); 0.40
    // on refuse an unclosed backtick, 0.1.15–0.10 do not.
    "X=/ echo a",
    "{ echo a; }",
    "echo a # `",
    // Gemini CLI's strip of a model-written wrapper, by generation (`iec_launches::gemini_strip`):
    // 0.1.15–0.10 strip `bash /c` but not `BASH -c`, 0.36 on a shell with a path, 0.51 on read a
    // double-quoted script with shell-quote, 0.44 removes a leading `trap '' HUP; `.
    "bash /c 'echo a'",
    "BASH -c 'echo a'",
    "/bin/bash -c 'echo a'",
    "bash -c \"echo \\\"a b\\\"\"",
    "trap '' HUP; echo a",
    // Which text its input rules judge (`checked_text`): the model's (0.1.19–0.39), what the
    // strip leaves (0.1.15–0.1.20, 0.40 on).
    "bash -c 'echo \"$(echo a)\"'",
    "bash -c \"echo '$(echo a)'\"",
];

fn md(s: &str) -> String {
    let body = s
        .replace('|', "\\|")
        .replace('\u{1}', "\\x01")
        .replace('\n', "\\n");
    // A code span holding a backtick is fenced with two, spaced (CommonMark).
    if body.contains('`') {
        format!("`` {body} ``")
    } else {
        format!("`{body}`")
    }
}

fn ranges(l: &Launch) -> String {
    l.versions
        .iter()
        .map(|r| {
            if r[0] == r[1] {
                r[0].clone()
            } else {
                format!("{}–{}", r[0], r[1])
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The table (Markdown) for every launch with version ranges.
pub fn table(cat: &Catalog) -> anyhow::Result<String> {
    let mut ls: Vec<&Launch> = cat.iter().filter(|l| !l.versions.is_empty()).collect();
    let first = |l: &Launch| l.versions.iter().filter_map(|r| Version::parse(&r[0])).min();
    ls.sort_by(|a, b| (&a.harness, &a.os, first(a)).cmp(&(&b.harness, &b.os, first(b))));
    let mut o = String::from(
        "| harness | os | versions | launch | hop | mechanism | example |\n|---|---|---|---|---|---|---|\n",
    );
    for l in ls {
        let mut rows = vec![];
        for p in PROBES {
            let call = iec_check::call_for_text(l, p);
            let r = iec_check::check(l, &call, iec_witness::global(), iec_check::Options::default())?;
            match (&r.verdict, &r.first_divergence) {
                (Verdict::Diverges, Some(fd)) => rows.push((
                    format!("{} {}", fd.hop, fd.hop_name),
                    format!(
                        "{}, {}",
                        fd.mechanism.as_str(),
                        if fd.silent { "silent" } else { "loud" }
                    ),
                    md(p),
                )),
                (Verdict::Corresponds, _) => {}
                (v, _) => rows.push(("-".into(), v.as_str().to_string(), md(p))),
            }
        }
        if rows.is_empty() {
            rows.push(("-".into(), "none of the probes changes".into(), "-".into()));
        }
        for (hop, mech, ex) in rows {
            o.push_str(&format!(
                "| {} | {} | {} | {} | {hop} | {mech} | {ex} |\n",
                l.harness,
                l.os,
                ranges(l),
                l.id
            ));
        }
    }
    Ok(o)
}
