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
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iec_harness::{install_claude_code, run_claude_code_with, HarnessRun, PayloadResult, RunOptions};

const VERSION: &str = "2.1.72";
const LAUNCH: &str = "claude-code-2.1.72-linux";
const BANG: &str = "argvprobe 'a != b'";
/// Payloads per harness launch (the conversation grows with every call).
const CHUNK: usize = 40;

/// Installs Claude Code (or explains the skip); `false` means skipped.
fn install() -> bool {
    if let Err(e) = install_claude_code(VERSION) {
        let why = format!("installing @anthropic-ai/claude-code@{VERSION} with npm failed: {e:#}");
        support::skip_or_panic(&why, support::HARNESS_SKIP);
        return false;
    }
    true
}

/// The `iec` binary: `$IEC_BIN`, else `<target>/<profile>/iec`, else built with cargo.
fn iec_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("IEC_BIN") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "IEC_BIN={} is not a file", p.display());
        return p;
    }
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/iec_hook-HASH
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/");
    let candidate = profile_dir.join("iec");
    if candidate.is_file() {
        return candidate;
    }
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug")
        .to_string();
    let target_dir = profile_dir.parent().expect("target dir");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "-p", "iec-cli", "--bin", "iec"])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    match profile.as_str() {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let status = cmd.status();
    match status {
        Ok(s) if s.success() && candidate.is_file() => candidate,
        other => panic!(
            "cannot find or build the iec binary: set IEC_BIN, or build it with `cargo build -p iec-cli` \
             (looked for {}; `{:?} build -p iec-cli` gave {other:?})",
            candidate.display(),
            cargo
        ),
    }
}

/// Argument words, each a valid bash word with a hazard for some hop.
const ATOMS: &[&str] = &[
    r#"'a != b'"#,
    r#""x ! y""#,
    r#"'it'"'"'s!'"#,
    r#"'select(.x != 1)'"#,
    r#"'M\\N'"#,
    r#"'$HOME'"#,
    r#"'%PATH%'"#,
    r#"$'tab\there'"#,
    r#"'`date`'"#,
    r#"'{a,b}'"#,
    r#"'grüße ñ 日本 ✓ !'"#,
    r#""multi word string here""#,
    r#"'!!'"#,
    r#""a\\b""#,
    r#"'$(id -u)'"#,
    r#"'*.rs'"#,
    r#"'a;b'"#,
    r#"'x > y'"#,
    r#""!foo""#,
    r#"'#not a comment'"#,
    r#"'\!'"#,
    r#"''"#,
    r#""semi;colon | pipe""#,
    r#"'back\slash'"#,
    r#"'"dq"'"#,
    r#"'!='"#,
    r#"'[[ a ]]'"#,
    r#"$'nl\nline'"#,
    r#"'~'"#,
    r#""\$HOME""#,
    r#"'end\'"#,
    r#"'.[] | select(.name != "x")'"#,
];

/// What follows the argument words.
const SUFFIXES: &[&str] = &[
    "",
    " | cat",
    " && argvprobe done",
    " ; argvprobe 'two !'",
    " 2>&1 | cat",
];

/// The payloads, deterministic: `argvprobe 'a != b'` first, each atom alone, pairs of atoms
/// with each suffix, and `$$` in a pipe.
fn payloads() -> Vec<String> {
    let mut v = vec![BANG.to_string(), format!("{BANG} | cat")];
    v.push(r#"argvprobe "PID=$$" | cat"#.to_string());
    for a in ATOMS {
        v.push(format!("argvprobe {a}"));
    }
    let n = ATOMS.len();
    for i in 0..n {
        let j = (i * 7 + 3) % n;
        let s = SUFFIXES[i % SUFFIXES.len()];
        v.push(format!("argvprobe {} {}{s}", ATOMS[i], ATOMS[j]));
    }
    let mut seen = std::collections::HashSet::new();
    v.retain(|p| seen.insert(p.clone()));
    v
}

/// Probe argvs with pids (`PID=<digits>`) normalized: `$$` differs between two runs.
fn norm(records: &[iec_harness::ProbeRecord]) -> Vec<Vec<String>> {
    records
        .iter()
        .map(|r| {
            r.argv
                .iter()
                .map(|a| match a.strip_prefix("PID=") {
                    Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                        "PID=<pid>".to_string()
                    }
                    _ => a.clone(),
                })
                .collect()
        })
        .collect()
}

fn changed(r: &PayloadResult) -> bool {
    norm(&r.probe) != norm(&r.direct.probe)
}

/// All payloads through Claude Code in launches of `CHUNK`, with an optional extra hook.
fn run_all(
    payloads: &[String],
    hook: Option<&str>,
) -> (Vec<(PayloadResult, Option<serde_json::Value>)>, String) {
    let mut out = Vec::new();
    let mut hook_stderr = String::new();
    for chunk in payloads.chunks(CHUNK) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        let mut opts = RunOptions::new(VERSION, None, &refs);
        opts.launch.timeout = Duration::from_secs(120);
        opts.launch.probe = Some(PathBuf::from(env!("CARGO_BIN_EXE_iec-argvprobe")));
        // The driver records the hook document and then pipes it to the iec hook in one hook
        // command (parallel hooks would race for the decision; see RunOptions::hook_command).
        opts.hook_command = hook.map(String::from);
        let run = run_claude_code_with(&opts).expect("harness run");
        check_run(&run, chunk.len());
        eprintln!(
            "claude-code {VERSION} (hook: {}): {} payloads in {} ms",
            hook.is_some(),
            chunk.len(),
            run.elapsed_ms
        );
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

fn check_run(run: &HarnessRun, n: usize) {
    assert!(!run.timed_out, "Claude Code timed out; stderr:\n{}", run.stderr);
    assert_eq!(run.results.len(), n);
    for r in &run.results {
        assert!(
            r.tool_result.is_some(),
            "no tool_result for {:?}; stdout:\n{}\nstderr:\n{}",
            r.payload,
            run.stdout,
            run.stderr
        );
        assert_eq!(r.echoed.as_deref(), Some(r.payload.as_str()));
        // The reference: a valid bash command whose direct run gives a known argv.
        assert_eq!(r.direct.exit_code, Some(0), "{:?}: {:?}", r.payload, r.direct);
        assert!(!r.direct.probe.is_empty(), "{:?}: {:?}", r.payload, r.direct);
    }
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
    if !install() {
        return;
    }
    // A private copy: a concurrent `cargo build` that relinks target/<profile>/iec mid-run must
    // not make a hook call fail.
    let iec_dir = tempfile::tempdir().unwrap();
    let iec = iec_dir.path().join("iec");
    std::fs::copy(iec_bin(), &iec).expect("copying the iec binary");
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
