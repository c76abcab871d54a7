//! Whole scans: every kind of bad input counted by its reason (and `--strict` stopping at the
//! first), the JSON summary's exact fields, the JSON Lines record's fields, the HTML page.

use std::path::PathBuf;

use serde_json::json;

fn claude_line(id: &str, cmd: &str) -> String {
    json!({"type":"assistant","cwd":"/home/u/p","sessionId":"s1","version":"2.1.72","timestamp":"t",
           "message":{"content":[{"type":"tool_use","id":id,"name":"Bash","input":{"command":cmd}}]}})
    .to_string()
}

fn claude_result(id: &str, err: bool, text: &str) -> String {
    json!({"type":"user","sessionId":"s1","message":{"content":[{"type":"tool_result","tool_use_id":id,"is_error":err,"content":text}]}})
        .to_string()
}

/// A transcript holding every kind of bad line between good ones, an unreadable file and a file
/// of no known format.
fn bad_corpus(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut t: Vec<u8> = Vec::new();
    let mut line = |b: &[u8]| {
        t.extend_from_slice(b);
        t.push(b'\n');
    };
    line(claude_line("a", "printf '%s' 'a != b'").as_bytes());
    line(claude_result("a", false, "a \\!= b").as_bytes());
    line(b"this is not json");
    line(b"{\"type\":\"assistant\",\"message\":{\"content\":[");
    line(b"{\"type\":\"user\",\"x\":\"\xff\xfe\"}");
    line(b"{\"type\":\"user\",\"x\":\"a\0b\"}");
    let mut huge = b"{\"type\":\"user\",\"pad\":\"".to_vec();
    huge.extend(vec![b'x'; 3 << 20]);
    huge.extend(b"\"}");
    line(&huge);
    line(
        json!({"type":"never-seen","sessionId":"s1"})
            .to_string()
            .as_bytes(),
    );
    line(json!({"sessionId":"s1","uuid":"u"}).to_string().as_bytes());
    line(claude_line("b", "ls -la").as_bytes());
    line(claude_result("b", true, "Exit code 2\nls: x").as_bytes());
    let log = dir.join("t.jsonl");
    std::fs::write(&log, t).unwrap();
    let gone = dir.join("gone.jsonl");
    std::os::unix::fs::symlink(dir.join("no-such-target"), &gone).unwrap();
    let other = dir.join("other.json");
    std::fs::write(&other, "{\"some\": \"thing else\"}").unwrap();
    vec![log, gone, other]
}

fn opts(strict: bool) -> iec_scan::Options {
    iec_scan::Options {
        strict,
        bounds: iec_scan::readers::Bounds {
            max_line: 1 << 20,
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn bad_input_is_counted_by_reason() {
    let dir = tempfile::tempdir().unwrap();
    let files = bad_corpus(dir.path());
    let cat = iec_launches::Catalog::builtin();
    let mut recs = Vec::new();
    let r = iec_scan::scan(
        &cat,
        &files,
        &opts(false),
        iec_scan::Skips::new(false),
        &mut |r| recs.push(r.to_json()),
        &mut |_| {},
    )
    .unwrap();
    let s = r.summary.to_json();
    assert_eq!(
        s["skipped"],
        json!({"malformed-json": 1, "truncated-json": 1, "invalid-utf8": 1, "nul-byte": 1, "line-too-long": 1,
               "unknown-record-type": 1, "malformed-record": 1, "unreadable-file": 1, "unknown-format": 1})
    );
    // The good lines around the bad ones are all read.
    assert_eq!(s["calls"], 2);
    assert_eq!(recs[0]["verdict"], "diverges");
    assert_eq!(
        recs[1]["outcome"],
        json!({"seen": true, "error": true, "exit_code": 2, "error_text": "Exit code 2\nls: x"})
    );
    let text = iec_scan::report::text(&r);
    assert!(text.contains("line-too-long"), "{text}");
}

#[test]
fn strict_stops_at_the_first_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let files = bad_corpus(dir.path());
    let cat = iec_launches::Catalog::builtin();
    let mut n = 0;
    let e = iec_scan::scan(
        &cat,
        &files,
        &opts(true),
        iec_scan::Skips::new(true),
        &mut |_| n += 1,
        &mut |_| {},
    )
    .err()
    .expect("strict stops");
    assert_eq!((e.line, e.reason.as_str()), (3, "malformed-json"));
    assert!(e.file.ends_with("t.jsonl"));
}

#[test]
fn summary_has_exactly_the_issue_fields_and_records_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let lines = [
        claude_line("a", "printf '%s' 'a != b'"),
        claude_result("a", false, ""),
        claude_line("b", "printf '%s' 'a != b'"),
        claude_line("c", "ls"),
        claude_line("d", "python3 -c 'print(1'"),
        claude_result(
            "d",
            true,
            "Exit code 1\n  File \"<string>\", line 1\nSyntaxError: '(' was never closed",
        ),
    ];
    std::fs::write(&log, lines.join("\n")).unwrap();
    let cat = iec_launches::Catalog::builtin();
    let mut recs = Vec::new();
    let r = iec_scan::scan(
        &cat,
        &[log],
        &opts(false),
        iec_scan::Skips::new(false),
        &mut |r| recs.push(r.to_json()),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(r.distinct, 3, "the repeated command is checked once");
    let s = r.summary.to_json();
    let keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "calls",
        "exposed",
        "changed",
        "sessions",
        "sessions_with_changed",
        "silent_share",
        "by_hop",
        "by_mechanism",
        "by_harness_version",
        "attribution",
        "skipped",
    ];
    want.sort();
    assert_eq!(keys, want);
    assert_eq!(
        (
            s["calls"].as_u64(),
            s["changed"].as_u64(),
            s["sessions_with_changed"].as_u64()
        ),
        (Some(4), Some(2), Some(1))
    );
    assert_eq!(s["silent_share"], 1.0);
    assert_eq!(s["by_hop"], json!({"eval": 2}));
    assert_eq!(
        s["by_mechanism"],
        json!({"re-expansion": {"changed": 2, "silent": 2, "loud": 0}})
    );
    assert_eq!(
        s["by_harness_version"]["claude-code@2.1.72"]["change_rate"],
        json!(2.0 / 3.0 * 10000.0)
            .as_f64()
            .map(|x| x.round() / 10000.0)
            .unwrap()
    );
    assert_eq!(s["attribution"]["nested"], 1);
    for rec in &recs {
        for k in [
            "file",
            "line",
            "session",
            "harness",
            "version",
            "launch",
            "command",
            "verdict",
            "first_divergence",
            "outcome",
            "attribution",
        ] {
            assert!(rec.get(k).is_some(), "{k} missing in {rec}");
        }
    }
    let nested = recs
        .iter()
        .find(|r| r["command"] == "python3 -c 'print(1'")
        .unwrap();
    assert_eq!(
        (nested["verdict"].as_str(), nested["attribution"].as_str()),
        (Some("corresponds"), Some("nested"))
    );
    let html = iec_scan::html::page(&r);
    for id in ["rate", "mechanisms", "silent", "attribution"] {
        assert!(html.contains(&format!("<svg id=\"{id}\"")), "chart {id}");
    }
    assert!(
        html.contains("printf &#39;%s&#39; &#39;a != b&#39;"),
        "the example, escaped"
    );
    // Self-contained: no script, no fetched resource.
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
}

/// Issue 20: the files are read on a thread of their own, a chunk ahead of the checks. With
/// chunks of one call the records still come in the order of the files and their lines, the
/// progress counts every file in order, and a `--strict` stop in a later file comes after the
/// records of the files read before it (and none of its own).
#[test]
fn reading_ahead_keeps_the_order_and_the_strict_stop() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for f in 0..4 {
        let lines: Vec<String> = (0..3)
            .map(|i| {
                claude_line(
                    &format!("t{f}-{i}"),
                    &format!("printf '%s' 'file {f} call {i} != x'"),
                )
            })
            .collect();
        let log = dir.path().join(format!("{f}.jsonl"));
        std::fs::write(&log, lines.join("\n")).unwrap();
        files.push(log);
    }
    let bad = dir.path().join("4.jsonl");
    std::fs::write(&bad, format!("{}\nthis is not json\n", claude_line("t4-0", "ls"))).unwrap();
    files.push(bad);
    let cat = iec_launches::Catalog::builtin();
    for strict in [false, true] {
        let o = iec_scan::Options {
            chunk: 1,
            ..opts(strict)
        };
        let (mut recs, mut progress) = (Vec::new(), Vec::new());
        let r = iec_scan::scan(
            &cat,
            &files,
            &o,
            iec_scan::Skips::new(strict),
            &mut |r| recs.push(r.call.command.clone()),
            &mut |k| progress.push(k),
        );
        let mut want: Vec<String> = (0..4)
            .flat_map(|f| (0..3).map(move |i| format!("printf '%s' 'file {f} call {i} != x'")))
            .collect();
        if strict {
            let e = r.err().expect("strict stops");
            assert_eq!((e.line, e.reason.as_str()), (2, "malformed-json"));
            assert_eq!(progress, vec![1, 2, 3, 4]);
        } else {
            want.push("ls".into());
            assert_eq!(r.unwrap().summary.to_json()["calls"], 13);
            assert_eq!(progress, vec![1, 2, 3, 4, 5]);
        }
        assert_eq!(recs, want, "strict {strict}");
    }
}
