//! Regression (red team F7): on claude-code-2.1.332-linux, rows of the substitution table that
//! claim `same` covered calls where the embedded ugrep and bfs behave otherwise than GNU grep
//! and find, so these texts were judged "corresponds". Each must now name the row that shows
//! the difference with the real programs (crates/iec-harness/tests/substitution.rs), with the
//! verdict "diverges", or "unknown" where the difference depends on input the call does not show.

use iec_check::{call_for_text, check, Options};
use iec_core::Verdict;
use iec_launches::Catalog;
use iec_witness::global;

const CASES: &[(&str, Verdict, &str)] = &[
    ("grep 'a*' f.txt", Verdict::Diverges, "grep-empty-match"),
    ("grep -c 'z*' f", Verdict::Diverges, "grep-empty-match"),
    ("grep -o '' f.txt", Verdict::Diverges, "grep-empty-match"),
    ("grep -w '' f.txt", Verdict::Diverges, "grep-empty-match"),
    ("grep -E '()' f.txt", Verdict::Diverges, "grep-empty-group"),
    ("grep '\\(\\)' f.txt", Verdict::Diverges, "grep-empty-group"),
    ("grep '\\d' f.txt", Verdict::Diverges, "grep-escape"),
    ("grep -E '\\d' f.txt", Verdict::Diverges, "grep-escape"),
    ("grep '\\t' f.txt", Verdict::Diverges, "grep-escape"),
    ("grep -x end f.txt", Verdict::Unknown, "grep-crlf-input"),
    ("grep -v -o TODO f.txt", Verdict::Diverges, "grep-invert-with"),
    (
        "grep -m1 -A2 TODO f.txt",
        Verdict::Diverges,
        "grep-max-count-context",
    ),
    ("grep TODO .", Verdict::Diverges, "grep-directory-operand"),
    (
        "find tree -type f | sort -s -t/ -k1,1",
        Verdict::Diverges,
        "find-traversal-order",
    ),
    (
        "find tree -type f -printf '%p\\c' | sort",
        Verdict::Diverges,
        "find-traversal-order",
    ),
    (
        "find tree -name '*.log' -exec echo {} + | sort",
        Verdict::Diverges,
        "find-traversal-order",
    ),
    (
        "find tree -name '*.log' -exec sh -c 'echo $1 >> L' _ {} \\; | wc -l",
        Verdict::Diverges,
        "find-traversal-order",
    ),
];

#[test]
fn same_rows_too_broad_red_team_f7() {
    let cat = Catalog::builtin();
    let l = cat.get("claude-code-2.1.332-linux").unwrap();
    let mut bad = Vec::new();
    for (text, verdict, row) in CASES {
        let r = check(l, &call_for_text(l, text), global(), Options::default()).unwrap();
        let subs: Vec<_> = r
            .substitutions
            .iter()
            .filter(|s| s.named == "grep" || s.named == "find")
            .collect();
        let got_rows = subs.first().map(|s| s.rows.clone()).unwrap_or_default();
        let behaviour = subs.first().map(|s| s.behaviour.clone()).unwrap_or_default();
        let want_behaviour = if *verdict == Verdict::Diverges {
            "differs"
        } else {
            "unknown"
        };
        if r.verdict != *verdict
            || subs.len() != 1
            || !got_rows.iter().any(|x| x == row)
            || behaviour != want_behaviour
        {
            bad.push(format!(
                "`{text}`: {:?} behaviour {behaviour:?} rows {got_rows:?}, want {verdict:?} {want_behaviour} with {row}",
                r.verdict
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The calls the rows show alike stay "corresponds".
#[test]
fn narrowed_rows_keep_the_calls_shown_alike() {
    let cat = Catalog::builtin();
    let l = cat.get("claude-code-2.1.332-linux").unwrap();
    for text in [
        "grep -c TODO f.txt",
        "grep -c '' f.txt",
        "grep -c '^foo' f.txt",
        "grep -n '\\w\\+_1' f.txt",
        "grep -c -v -o TODO f.txt",
        "grep -m1 -B2 TODO f.txt",
        "find tree -type f -name '*.log' | sort",
        "find tree -type f -printf '%p\\n' | sort",
        "find tree -name '*.log' -exec grep -l . {} + | sort",
        "find tree | sort -u",
    ] {
        let r = check(l, &call_for_text(l, text), global(), Options::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Corresponds, "`{text}`: {:?}", r.substitutions);
    }
}
