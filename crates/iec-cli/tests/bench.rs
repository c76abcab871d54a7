//! `iec bench` as a user runs it: the JSON shape and acceptance figures of `--quick` (issue 21),
//! and the HTML report's charts holding the same figures as the JSON of the same run.

mod support;

use serde_json::{Map, Value};
use std::collections::BTreeSet;

fn iec(args: &[&str]) -> (i32, String, String) {
    support::run_env(env!("CARGO_BIN_EXE_iec"), args, b"", &[])
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not one JSON document ({e}): {s}"))
}

fn keys(o: &Map<String, Value>) -> BTreeSet<&str> {
    o.keys().map(String::as_str).collect()
}

/// The figures of one path, as the issue names them, plus what the report adds.
const PATH_KEYS: [&str; 16] = [
    "items",
    "lost",
    "lost_changed",
    "recovered",
    "false_repairs",
    "changed_calls",
    "recovery_rate",
    "mcnemar_p",
    // Added by the report.
    "decided_by",
    "recovered_changed",
    "hop_hiding",
    "mechanisms",
    "unknown_calls",
    "undecided",
    "off_fail_on_pass",
    "off_pass_on_fail",
];

fn count(m: &Value, k: &str) -> u64 {
    m[k].as_u64()
        .unwrap_or_else(|| panic!("`{k}` is not a count: {m}"))
}

#[test]
fn quick_json_has_the_issue_shape_and_meets_the_acceptance_figures() {
    let (code, out, err) = iec(&["bench", "--quick", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let top = v.as_object().unwrap();
    assert_eq!(
        keys(top),
        BTreeSet::from(["pairs", "chains", "tasks", "paths", "overall"]),
        "{out}"
    );
    assert!(count(&v, "pairs") >= 67, "{out}");
    assert!(count(&v, "chains") >= 135, "{out}");
    assert!(count(&v, "tasks") >= 46, "{out}");
    let paths = v["paths"].as_object().unwrap();
    assert!(paths.len() >= 6);
    for launch in [
        "bash-c",
        "claude-code-2.1.72-linux",
        "claude-code-2.1.332-linux",
        "claude-code-git-bash-windows",
        "codex-windows-powershell",
        "tmux-send-keys",
    ] {
        assert!(paths.contains_key(launch), "no path {launch}");
    }
    let want: BTreeSet<&str> = PATH_KEYS.into_iter().collect();
    let items = count(&v, "pairs") + count(&v, "chains") + count(&v, "tasks");
    for (launch, m) in paths.iter().chain([(&"overall".to_string(), &v["overall"])]) {
        assert_eq!(keys(m.as_object().unwrap()), want, "{launch}: {m}");
        // Every figure but the rate, the p-value, the decider and the mechanisms is a count.
        for k in PATH_KEYS
            .into_iter()
            .filter(|k| !matches!(*k, "recovery_rate" | "mcnemar_p" | "decided_by" | "mechanisms"))
        {
            count(m, k);
        }
        let p = m["mcnemar_p"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&p), "{launch}: {p}");
        match &m["recovery_rate"] {
            Value::Null => assert_eq!(count(m, "lost_changed"), 0, "{launch}"),
            r => {
                let r = r.as_f64().unwrap();
                let want = count(m, "recovered_changed") as f64 / count(m, "lost_changed") as f64;
                assert_eq!(r, want, "{launch}");
            }
        }
        assert!(count(m, "lost_changed") <= count(m, "lost"), "{launch}");
        assert!(count(m, "recovered") <= count(m, "lost"), "{launch}");
        assert_eq!(count(m, "false_repairs"), 0, "{launch}: {m}");
        if launch != "overall" {
            assert_eq!(count(m, "items"), items, "{launch}");
        }
    }
    for (launch, by) in [
        ("bash-c", "run"),
        ("claude-code-2.1.72-linux", "run"),
        ("claude-code-git-bash-windows", "emulated"),
        ("tmux-send-keys", "terminal-witness"),
    ] {
        assert_eq!(paths[launch]["decided_by"], by, "{launch}");
    }
    let control = &paths["bash-c"];
    assert_eq!(count(control, "lost"), 0, "{control}");
    assert_eq!(count(control, "changed_calls"), 0, "{control}");
    assert_eq!(control["mcnemar_p"], 1.0);
    let o = &v["overall"];
    let rate = o["recovery_rate"].as_f64().unwrap();
    assert!(
        rate >= 0.792,
        "IntAct recovers {rate} of the lost items with a changed call"
    );
    // The paths that change calls lose items there.
    assert!(count(&paths["claude-code-2.1.72-linux"], "lost_changed") > 0);
    assert!(count(&paths["tmux-send-keys"], "lost_changed") > 0);
    // The report on stdout is JSON alone (no progress bar: stderr is not a terminal here).
    assert!(out.trim_start().starts_with('{') && out.trim_end().ends_with('}'));
    assert!(err.is_empty(), "{err}");
}

/// Pairs of the built-in data with these ids, as a data folder of their own.
fn small_suite(dir: &std::path::Path, ids: &[&str]) {
    let builtin = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../iec-bench/data/pairs.jsonl");
    let text = std::fs::read_to_string(builtin).unwrap();
    let pairs: Vec<&str> = text
        .lines()
        .filter(|l| ids.iter().any(|id| l.contains(&format!("\"id\": \"{id}\""))))
        .collect();
    assert_eq!(pairs.len(), ids.len());
    std::fs::write(dir.join("pairs.jsonl"), pairs.join("\n")).unwrap();
    std::fs::write(dir.join("chains.jsonl"), "").unwrap();
    std::fs::write(dir.join("tasks.jsonl"), "").unwrap();
}

/// The value of `attr="…"` in the first tag that starts with `after`.
fn attr<'h>(html: &'h str, after: &str, attr: &str) -> &'h str {
    let from = html
        .find(after)
        .unwrap_or_else(|| panic!("no {after} in the HTML"));
    let rest = &html[from..];
    let end = rest.find('>').unwrap();
    let tag = &rest[..end];
    let k = format!("{attr}=\"");
    let i = tag.find(&k).unwrap_or_else(|| panic!("no {attr} in {tag}")) + k.len();
    &tag[i..i + tag[i..].find('"').unwrap()]
}

#[test]
fn html_report_holds_the_charts_with_the_figures_of_the_json() {
    let d = tempfile::tempdir().unwrap();
    small_suite(
        d.path(),
        &[
            "bang-in-single-quotes-1",
            "test-not-equal-1",
            "backslash-path-1",
            "heredoc-second-line-1",
        ],
    );
    let html_file = d.path().join("report.html");
    let paths = "bash-c,claude-code-2.1.72-linux,claude-code-git-bash-windows";
    let (code, out, err) = iec(&[
        "bench",
        "--data",
        d.path().to_str().unwrap(),
        "--paths",
        paths,
        "--format",
        "json",
        "--html",
        html_file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let html = std::fs::read_to_string(&html_file).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    // Self-contained: nothing fetched, nothing run.
    for banned in [
        "<script", "http://", "https://", "<link", "src=", "@import", "url(",
    ] {
        assert!(!html.contains(banned), "the HTML holds {banned}");
    }
    assert_eq!(attr(&html, "<p id=\"summary\"", "data-pairs"), "4");
    for chart in [
        "id=\"lost-recovered\"",
        "id=\"mechanisms\"",
        "id=\"mcnemar\"",
        "id=\"figures\"",
    ] {
        assert!(html.contains(chart), "no chart {chart}");
    }
    let mut lost_somewhere = false;
    for launch in paths.split(',') {
        let m = &v["paths"][launch];
        // Lost against recovered.
        let g = format!("<g class=\"path\" data-path=\"{launch}\" data-lost=");
        for (a, k) in [
            ("data-lost", "lost"),
            ("data-lost-changed", "lost_changed"),
            ("data-recovered", "recovered"),
            ("data-recovered-changed", "recovered_changed"),
        ] {
            assert_eq!(attr(&html, &g, a), m[k].to_string(), "{launch} {k}");
        }
        lost_somewhere |= count(m, "lost") > 0;
        // McNemar.
        let g = format!("<g class=\"path\" data-path=\"{launch}\" data-mcnemar-p=");
        let p: f64 = attr(&html, &g, "data-mcnemar-p").parse().unwrap();
        assert_eq!(p, m["mcnemar_p"].as_f64().unwrap(), "{launch}");
        assert_eq!(
            attr(&html, &g, "data-off-fail-on-pass"),
            m["off_fail_on_pass"].to_string()
        );
        // Mechanisms: one bar segment per mechanism with its count, in this path's group.
        let start = html
            .find(&format!("<g class=\"path\" data-path=\"{launch}\"><text"))
            .unwrap();
        let group = &html[start..start + html[start..].find("</g>").unwrap()];
        let mechanisms = m["mechanisms"].as_object().unwrap();
        for (name, n) in mechanisms {
            let seg = format!("data-mechanism=\"{name}\" data-calls=\"{n}\"");
            assert!(group.contains(&seg), "{launch}: no {seg} in {group}");
        }
        assert_eq!(group.matches("data-mechanism=").count(), mechanisms.len());
        // The table row.
        assert!(html.contains(&format!("<tr data-path=\"{launch}\"><td>{launch}</td>")));
    }
    assert!(lost_somewhere, "the small suite loses nothing: {out}");
    assert_eq!(v["paths"]["bash-c"]["lost"], 0);

    // A file that cannot be written is an error before the run, naming the file.
    let bad = d.path().join("no-such-dir/report.html");
    let (code, _, err) = iec(&[
        "bench",
        "--data",
        d.path().to_str().unwrap(),
        "--paths",
        "bash-c",
        "--html",
        bad.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("cannot write the HTML report to") && err.contains("no-such-dir"),
        "{err}"
    );
}
