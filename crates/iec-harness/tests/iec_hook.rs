//! Acceptance test of `iec hook claude-code` with a real Claude Code 2.1.72 (npm, `node cli.js`)
//! driven by the replay server: `argvprobe 'a != b'` arrives as `a \!= b` without the hook and
//! as `a != b` with it, and the same holds for a deterministic set of ≥50 hazardous payloads.
//!
//! The `iec` binary is `$IEC_BIN`, else `iec` in this test's profile directory
//! (`target/<profile>/`, the parent of `deps/`), else built there with `cargo build -p iec-cli`.
//! Skips like `tests/claude_code.rs`: when the npm install fails and `IEC_SKIP_HARNESS=1` (or
//! `IEC_SKIP_NPM=1`) is set, it prints `SKIPPED: …` and passes.

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use iec_harness::PayloadResult;
use support::hook_payloads::{changed, norm, payloads, run_chunks, BANG, LAUNCH, VERSION};

/// All payloads through Claude Code (see [`run_chunks`]), with an optional extra hook: each
/// result with the hook document recorded for its call, and what the hooks wrote on stderr.
fn run_all(
    payloads: &[String],
    hook: Option<&str>,
) -> (Vec<(PayloadResult, Option<serde_json::Value>)>, String) {
    let mut out = Vec::new();
    let mut hook_stderr = String::new();
    for run in run_chunks(payloads, hook, None, &format!("hook: {}", hook.is_some())) {
        hook_stderr.push_str(&run.hook_stderr);
        for (k, r) in run.results.into_iter().enumerate() {
            let id = format!("toolu_iec_{k:04}");
            let doc = run
                .hook_log
                .iter()
                .find(|h| h.get("tool_use_id").and_then(|v| v.as_str()) == Some(id.as_str()))
                .cloned();
            out.push((r, doc));
        }
    }
    (out, hook_stderr)
}

/// What `iec hook claude-code` decides for the hook document Claude Code really sent.
#[derive(Debug, PartialEq, Eq)]
enum Decision {
    Pass,
    Repair(String),
    Deny(String),
}

fn decide(iec: &Path, doc: &serde_json::Value) -> Decision {
    let mut child = Command::new(iec)
        .args(["hook", "claude-code", "--launch", LAUNCH])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running iec hook");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(doc.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "iec hook failed: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        assert!(
            out.stderr.is_empty(),
            "iec hook failed open: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return Decision::Pass;
    }
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("hook JSON");
    let h = &v["hookSpecificOutput"];
    match h["permissionDecision"].as_str() {
        Some("allow") => Decision::Repair(h["updatedInput"]["command"].as_str().unwrap().to_string()),
        Some("deny") => Decision::Deny(h["permissionDecisionReason"].as_str().unwrap_or("").to_string()),
        other => panic!("unexpected decision {other:?}: {text}"),
    }
}

#[test]
fn iec_hook_delivers_hazardous_payloads_intact_through_claude_code_2_1_72() {
    let t0 = Instant::now();
    if support::claude_code(VERSION).is_none() {
        return;
    }
    // A private copy: a concurrent `cargo build` that relinks target/<profile>/iec mid-run must
    // not make a hook call fail.
    let iec_dir = tempfile::tempdir().unwrap();
    let iec = iec_dir.path().join("iec");
    std::fs::copy(support::workspace_bin("iec", "iec-cli", "IEC_BIN"), &iec).expect("copying the iec binary");
    let payloads = payloads();
    assert!(payloads.len() >= 50, "{}", payloads.len());

    // Without the iec hook (the recording hook only).
    let (plain, _) = run_all(&payloads, None);
    let bang = &plain[0].0;
    assert_eq!(bang.payload, BANG);
    assert_eq!(norm(&bang.probe), vec![vec!["a \\!= b".to_string()]]);
    assert_eq!(norm(&bang.direct.probe), vec![vec!["a != b".to_string()]]);
    let changed_without: Vec<&str> = plain
        .iter()
        .filter(|(r, _)| changed(r))
        .map(|(r, _)| r.payload.as_str())
        .collect();
    assert!(!changed_without.is_empty());

    // With `iec hook claude-code` after the recording hook.
    let hook = format!("'{}' hook claude-code --launch {LAUNCH}", iec.display());
    assert!(!iec.display().to_string().contains('\''));
    let (hooked, hook_stderr) = run_all(&payloads, Some(&hook));
    let (mut intact, mut repaired, mut refused, mut changed_with) = (0, 0, 0, Vec::new());
    // Repaired although the call arrived intact without the hook (iec's prediction is wrong or
    // conservative there): listed, not an error.
    let mut needless = Vec::new();
    for (k, (r, doc)) in hooked.iter().enumerate() {
        assert_eq!(r.payload, plain[k].0.payload);
        let doc = doc
            .as_ref()
            .unwrap_or_else(|| panic!("the hook never saw {:?}", r.payload));
        let tr = r.tool_result.as_ref().unwrap();
        match decide(&iec, doc) {
            Decision::Deny(reason) => {
                refused += 1;
                assert!(tr.is_error, "{:?}: denied but {tr:?}", r.payload);
                assert!(tr.content.contains("iec:"), "{:?}: {tr:?} ({reason})", r.payload);
                assert!(
                    r.probe.is_empty(),
                    "{:?}: denied but the probe ran: {:?}",
                    r.payload,
                    r.probe
                );
                continue;
            }
            Decision::Repair(cmd) => {
                repaired += 1;
                if !changed(&plain[k].0) {
                    needless.push(r.payload.as_str());
                }
                assert!(
                    r.outer.as_deref().is_some_and(|o| o.contains("eval \\$'")),
                    "{:?}: repaired to {cmd:?} but bash got {:?}\nall bash strings of the turn: {:#?}\nprobe {:?}\ntool result {:?}\nthe hook's stderr: {hook_stderr}",
                    r.payload,
                    r.outer,
                    r.bash_strings,
                    r.probe,
                    r.tool_result
                );
            }
            Decision::Pass => {}
        }
        assert!(!tr.is_error, "{:?}: {tr:?}", r.payload);
        if changed(r) {
            changed_with.push(format!(
                "{:?}: probe {:?} direct {:?} (bash got {:?})",
                r.payload,
                norm(&r.probe),
                norm(&r.direct.probe),
                r.outer
            ));
        } else {
            intact += 1;
        }
    }
    assert_eq!(
        norm(&hooked[0].0.probe),
        vec![vec!["a != b".to_string()]],
        "{BANG} with the hook"
    );
    let summary = format!(
        "{} payloads: without hook {} changed; with hook {} changed, {repaired} repaired, {refused} refused ({intact} intact; {:.1} s)",
        payloads.len(),
        changed_without.len(),
        changed_with.len(),
        t0.elapsed().as_secs_f64()
    );
    let _ = writeln!(std::io::stderr(), "{summary}");
    assert!(hook_stderr.is_empty(), "the hook wrote on stderr:\n{hook_stderr}");
    println!("{summary}");
    for p in &changed_without {
        eprintln!("  changed without hook: {p}");
    }
    for p in &needless {
        eprintln!("  repaired, though intact without hook: {p}");
    }
    // Every call that changed without the hook was repaired or refused (none passed through).
    assert!(repaired + refused >= changed_without.len());
    assert!(
        changed_with.is_empty(),
        "changed with the hook:\n{}",
        changed_with.join("\n")
    );
    assert!(
        intact >= 50,
        "only {intact} payloads delivered intact with the hook"
    );
}
