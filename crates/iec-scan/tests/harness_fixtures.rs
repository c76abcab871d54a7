//! The fixtures under `tests/data/harness/` are session logs written by real harnesses (Claude
//! Code 2.1.72 and 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0) driven through the replay server
//! on `payloads.jsonl`, with what each call was observed to do (`observed.jsonl`: the argv
//! probe through the harness against `bash -c`). Regenerate them with
//! `cargo run -p iec-scan --example regen_fixtures`.
//!
//! Here the scan of each log must find every payload once, give each the verdict the run
//! observed (and the same first divergent hop), and read the outcome the harness reported.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Changes the checker predicts silent that the real run showed loud.
const KNOWN_LOUD: &[(&str, &str)] = &[("gemini-cli-0.61.0", "bash -c 'argvprobe $0 $1' x y")];

fn data(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/harness")
        .join(dir)
}

fn scan(dir: &str, launch: Option<&str>) -> (Vec<Value>, Value) {
    scan_logs(&iec_launches::Catalog::builtin(), &data(dir).join("logs"), launch)
}

fn scan_logs(cat: &iec_launches::Catalog, logs: &Path, launch: Option<&str>) -> (Vec<Value>, Value) {
    let mut skips = iec_scan::Skips::new(false);
    let files = iec_scan::files_under(&[logs.to_path_buf()], &mut skips).unwrap();
    let opts = iec_scan::Options {
        launch: launch.map(String::from),
        ..Default::default()
    };
    let mut recs = Vec::new();
    let r = iec_scan::scan(
        cat,
        &files,
        &opts,
        skips,
        &mut |r| recs.push(r.to_json()),
        &mut |_| {},
    )
    .unwrap();
    (recs, r.summary.to_json())
}

fn observed(dir: &str) -> Vec<Value> {
    std::fs::read_to_string(data(dir).join("observed.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Asserts the scan agrees with every observation; returns the records by command.
fn agrees(
    dir: &str,
    harness: &str,
    version: Option<&str>,
    launch: &str,
    override_launch: bool,
) -> HashMap<String, Value> {
    let (recs, summary) = scan(dir, override_launch.then_some(launch));
    agree(dir, recs, summary, harness, version, launch)
}

/// Asserts that `recs` (a scan of `dir`'s logs) agree with every observation of `dir`.
fn agree(
    dir: &str,
    recs: Vec<Value>,
    summary: Value,
    harness: &str,
    version: Option<&str>,
    launch: &str,
) -> HashMap<String, Value> {
    let obs = observed(dir);
    assert_eq!(recs.len(), obs.len(), "{dir}: one call per payload");
    assert_eq!(summary["calls"], obs.len() as u64);
    assert_eq!(summary["sessions"], 1);
    // Every record type the real harness wrote is known (2.1.332's `atis-latch`, Codex's
    // `world_state`, …): nothing skipped.
    assert_eq!(summary["skipped"], serde_json::json!({}), "{dir}");
    let by_cmd: HashMap<String, Value> = recs
        .into_iter()
        .map(|r| (r["command"].as_str().unwrap().to_string(), r))
        .collect();
    let mut changed = 0;
    for o in &obs {
        let cmd = o["command"].as_str().unwrap();
        let r = by_cmd
            .get(cmd)
            .unwrap_or_else(|| panic!("{dir}: no call {cmd:?} in the scan"));
        assert_eq!(r["harness"], harness);
        assert_eq!(r["version"].as_str(), version, "{dir}");
        assert_eq!(r["launch"], launch, "{dir}");
        assert_eq!(
            r["verdict"], o["verdict"],
            "{dir}: {cmd:?}: scan {} / observed {}",
            r["first_divergence"], o["first_divergence"]
        );
        if o["verdict"] == "diverges" {
            changed += 1;
            assert_eq!(
                r["first_divergence"]["hop_name"], o["first_divergence"]["hop_name"],
                "{dir}: {cmd:?}"
            );
            if KNOWN_LOUD.contains(&(dir, cmd)) {
                // The checker calls this change silent; the run shows it loud (iec-harness's
                // tests/gemini.rs pins the same disagreement). The scan's record carries the
                // evidence: the failure and its exit code.
                assert_eq!(
                    (
                        r["first_divergence"]["silent"].as_bool(),
                        o["first_divergence"]["silent"].as_bool()
                    ),
                    (Some(true), Some(false))
                );
                assert_eq!(r["outcome"]["error"], true, "{dir}: {cmd:?}");
            } else {
                assert_eq!(
                    r["first_divergence"]["silent"], o["first_divergence"]["silent"],
                    "{dir}: {cmd:?}"
                );
            }
        }
        assert_eq!(r["outcome"]["seen"], true, "{dir}: {cmd:?} has a result");
    }
    assert_eq!(summary["changed"], changed);
    by_cmd
}

#[test]
fn claude_code_2_1_72() {
    let r = agrees(
        "claude-code-2.1.72",
        "claude-code",
        Some("2.1.72"),
        "claude-code-2.1.72-linux",
        false,
    );
    let fail = &r["argvprobe one; exit 3"]["outcome"];
    assert_eq!(
        (fail["error"].as_bool(), fail["exit_code"].as_i64()),
        (Some(true), Some(3))
    );
    assert_eq!(r["argvprobe one; exit 3"]["attribution"], "other");
    let ok = &r["argvprobe hello world"];
    assert_eq!(
        (
            ok["outcome"]["error"].as_bool(),
            ok["outcome"]["exit_code"].as_i64()
        ),
        (Some(false), Some(0))
    );
    assert_eq!(ok["shortcut"], true, "a plain call takes the checker's shortcut");
    assert_eq!(
        r["argvprobe 'a != b'"]["first_divergence"]["mechanism"],
        "re-expansion"
    );
}

/// Copies `dir`'s logs to `to` with every record's `"version":"FROM"` written as `TO`.
fn relabel(dir: &str, to: &Path, from: &str, version: &str) {
    fn walk(src: &Path, dst: &Path, from: &str, to: &str) {
        std::fs::create_dir_all(dst).unwrap();
        for e in std::fs::read_dir(src).unwrap() {
            let p = e.unwrap().path();
            let q = dst.join(p.file_name().unwrap());
            if p.is_dir() {
                walk(&p, &q, from, to);
            } else {
                let text = std::fs::read_to_string(&p).unwrap();
                std::fs::write(&q, text.replace(from, to)).unwrap();
            }
        }
    }
    walk(
        &data(dir).join("logs"),
        to,
        &format!("\"version\":\"{from}\""),
        &format!("\"version\":\"{version}\""),
    );
}

#[test]
fn a_version_inside_a_learned_range_takes_that_launch() {
    // Claude Code 2.1.72's real log, its records labelled 2.1.66 (a version no hand-written
    // launch lists): uncovered with the catalog's reason, never mapped to a neighbour.
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    relabel("claude-code-2.1.72", &logs, "2.1.72", "2.1.66");
    let hand_written = iec_launches::Catalog::hand_written();
    let (recs, summary) = scan_logs(&hand_written, &logs, None);
    assert_eq!(recs.len(), observed("claude-code-2.1.72").len());
    for r in &recs {
        assert_eq!(r["verdict"], Value::Null);
        assert!(
            r["uncovered"]
                .as_str()
                .unwrap()
                .starts_with("claude-code@2.1.66 on linux is in no learned version range"),
            "{r}"
        );
    }
    assert_eq!(
        summary["by_harness_version"]["claude-code@2.1.66"]["uncovered"],
        recs.len()
    );
    // The launch file learned over 2.1.60..2.1.72 (as `--launch-file` or the catalog sweep
    // writes it): every call takes that launch and gets the verdict the run observed.
    // Every call of the relabelled log takes `launch` and gets the verdict the run observed.
    let scanned_as_2_1_66 = |cat: &iec_launches::Catalog, launch: &str| {
        let (recs, summary) = scan_logs(cat, &logs, None);
        agree(
            "claude-code-2.1.72",
            recs,
            summary,
            "claude-code",
            Some("2.1.66"),
            launch,
        );
    };
    for versions in [
        r#"[["2.1.60", "2.1.72"]]"#,
        // Between two ranges of the same launch.
        r#"[["2.1.50", "2.1.64"], ["2.1.70", "2.1.72"]]"#,
    ] {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../iec-launches/launches/claude-code-2.1.72-linux.toml"),
        )
        .unwrap();
        let learned = text.replace(
            r#"versions = [["2.1.72", "2.1.72"]]"#,
            &format!("versions = {versions}"),
        );
        assert_ne!(learned, text);
        let f = tmp.path().join("claude-code-2.1.72-linux.toml");
        std::fs::write(&f, learned).unwrap();
        let mut cat = iec_launches::Catalog::hand_written();
        cat.add_file(&f).unwrap();
        scanned_as_2_1_66(&cat, "claude-code-2.1.72-linux");
    }
    // The built-in catalog holds the sweep's launches, one learned over a range holding 2.1.66:
    // every call takes it, and its verdicts are the ones the real 2.1.72 run observed.
    let builtin = iec_launches::Catalog::builtin();
    let (l, _) = iec_launches::resolve::resolve(&builtin, "claude-code", "linux", "2.1.66", Some("Bash"))
        .expect("the catalog sweep learned a launch whose range holds 2.1.66");
    assert!(l.learned(), "{}", l.id);
    scanned_as_2_1_66(&builtin, &l.id);
}

#[test]
fn claude_code_2_1_332() {
    let r = agrees(
        "claude-code-2.1.332",
        "claude-code",
        Some("2.1.332"),
        "claude-code-2.1.332-linux",
        false,
    );
    // The control-character refusal: loud, at tool-input, and the log shows the refusal.
    let cr = &r["argvprobe a\r\nargvprobe b"];
    assert_eq!(cr["outcome"]["error"], true);
    assert!(cr["outcome"]["error_text"]
        .as_str()
        .unwrap()
        .contains("InputValidationError"));
    assert_eq!(cr["attribution"], "path");
    assert_eq!(cr["disagreement"], Value::Null);
}

#[test]
fn codex_0_171_0() {
    let r = agrees(
        "codex-0.171.0",
        "codex",
        Some("0.171.0"),
        "codex-exec-command-linux",
        false,
    );
    let fail = &r["argvprobe one; exit 3"]["outcome"];
    assert_eq!(
        (fail["error"].as_bool(), fail["exit_code"].as_i64()),
        (Some(true), Some(3))
    );
    assert_eq!(r["argvprobe hello world"]["tool"], "exec_command");
    assert_eq!(r["argvprobe hello world"]["os"], "linux");
}

#[test]
fn gemini_cli_0_61_0() {
    // Gemini CLI records no version: without --launch the calls are uncovered, and say why.
    let (recs, summary) = scan("gemini-cli-0.61.0", None);
    assert_eq!(recs.len(), 12);
    for r in &recs {
        assert_eq!(r["verdict"], Value::Null);
        assert!(
            r["uncovered"].as_str().unwrap().contains("no gemini-cli version"),
            "{r}"
        );
    }
    assert_eq!(
        summary["by_harness_version"]["gemini-cli@unknown"]["uncovered"],
        12
    );
    // With the launch named, every verdict agrees with the run.
    let r = agrees("gemini-cli-0.61.0", "gemini-cli", None, "gemini-cli-linux", true);
    assert_eq!(
        r["argvprobe hello world"]["os"], "linux",
        "read from the first user message"
    );
    let refused = &r["argvprobe \"$(echo sub)\""];
    assert!(
        refused["outcome"]["error_text"]
            .as_str()
            .unwrap_or("")
            .contains("Command injection detected"),
        "{refused}"
    );
    let fail = &r["argvprobe one; exit 3"]["outcome"];
    assert_eq!(fail["exit_code"].as_i64(), Some(3));
}
