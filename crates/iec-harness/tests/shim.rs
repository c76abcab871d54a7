//! Acceptance test of the shell shim `iec-bash` with a real Claude Code 2.1.72 (npm, `node
//! cli.js`) driven by the replay server, on the payload set of `tests/iec_hook.rs`:
//! * without hook or shim, `argvprobe 'a != b'` arrives as `a \!= b` (and others change too);
//! * with the shim as `CLAUDE_CODE_SHELL` but no intent recorded, every call is exactly as
//!   without it (the shim passes the argv through unchanged);
//! * with `iec hook claude-code --record-intent` and the shim, every call arrives as the direct
//!   `bash -c` run has it (`a != b`), none refused: the shim delivered the recorded text;
//! * a call a later hook rewrites after the intent was recorded is refused (exit 126), not run;
//! * `iec install claude-code --shim` settings (hook + `env.CLAUDE_CODE_SHELL`, read from
//!   `CLAUDE_CONFIG_DIR`) give the same intact delivery.
//!
//! Binaries: `iec` is `$IEC_BIN` and `iec-bash` is `$IEC_BASH_BIN`, else found in this test's
//! profile directory (`target/<profile>/`), else built there with cargo. Claude Code takes the
//! shim from `CLAUDE_CODE_SHELL`, set by a small launcher script. Skips like
//! `tests/claude_code.rs`: when the npm install fails and `IEC_SKIP_HARNESS=1` (or
//! `IEC_SKIP_NPM=1`) is set, it prints `SKIPPED: …` and passes.

mod support;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use iec_harness::{Launcher, PayloadResult};
use support::hook_payloads::{changed, norm, payloads, run_chunks, BANG, CHUNK, LAUNCH};

/// `norm` with each run's sandbox name (`iec-harness-XXXXXX`) masked: `$HOME` differs between
/// two runs.
fn across_runs(records: &[iec_harness::ProbeRecord]) -> Vec<Vec<String>> {
    norm(records)
        .into_iter()
        .map(|argv| argv.iter().map(|a| unsandbox(a)).collect())
        .collect()
}

fn unsandbox(s: &str) -> String {
    const TAG: &str = "iec-harness-";
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(TAG) {
        out.push_str(&rest[..i + TAG.len()]);
        rest = &rest[i + TAG.len()..];
        let n = rest
            .char_indices()
            .find(|(_, c)| !c.is_ascii_alphanumeric())
            .map_or(rest.len(), |(k, _)| k);
        out.push_str("<run>");
        rest = &rest[n..];
    }
    out.push_str(rest);
    out
}

/// The wrapper with its per-run parts masked: the snapshot and cwd file names, the sandbox.
fn mask(outer: &str) -> String {
    let mut s = unsandbox(outer);
    for (start, end) in [("source ", " && "), ("pwd -P >| ", "")] {
        if let Some(i) = s.find(start) {
            let from = i + start.len();
            let to = if end.is_empty() {
                s.len()
            } else {
                s[from..].find(end).map_or(s.len(), |k| from + k)
            };
            s.replace_range(from..to, "<path>");
        }
    }
    s
}

/// All payloads through Claude Code (see [`run_chunks`]), with an optional extra hook and an
/// optional launcher (the shim's); the hook may not write on stderr.
fn run_all(payloads: &[String], hook: Option<&str>, bin: Option<&Path>, label: &str) -> Vec<PayloadResult> {
    let mut out = Vec::new();
    for run in run_chunks(payloads, hook, bin, label) {
        assert!(
            run.hook_stderr.is_empty(),
            "{label}: the hook wrote on stderr:\n{}",
            run.hook_stderr
        );
        out.extend(run.results);
    }
    out
}

/// Writes `dir/claude-with-shim`: Claude Code with `CLAUDE_CODE_SHELL` naming the shim.
fn shim_launcher(dir: &Path, cc: &Launcher, shim: &Path) -> PathBuf {
    let q = |s: &std::ffi::OsStr| {
        let s = s.to_string_lossy();
        assert!(!s.contains('\''), "{s}");
        format!("'{s}'")
    };
    let mut line = format!("exec {}", q(cc.program.as_os_str()));
    for a in &cc.prefix_args {
        line.push(' ');
        line.push_str(&q(a));
    }
    let script = format!(
        "#!/bin/sh\nCLAUDE_CODE_SHELL={}\nexport CLAUDE_CODE_SHELL\n{line} \"$@\"\n",
        q(shim.as_os_str())
    );
    let path = dir.join("claude-with-shim");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn iec_bash_with_the_hook_delivers_hazardous_payloads_intact_through_claude_code_2_1_72() {
    let t0 = Instant::now();
    let Some(cc) = support::claude_code(support::hook_payloads::VERSION) else {
        return;
    };
    // Private copies: a concurrent `cargo build` that relinks target/<profile>/ mid-run must not
    // make a call fail. Claude Code accepts the shell only if its path contains "bash".
    let dir = tempfile::tempdir().unwrap();
    let iec = dir.path().join("iec");
    let shim = dir.path().join("iec-bash");
    std::fs::copy(support::workspace_bin("iec", "iec-cli", "IEC_BIN"), &iec).expect("copying iec");
    std::fs::copy(
        support::workspace_bin("iec-bash", "iec-shim", "IEC_BASH_BIN"),
        &shim,
    )
    .expect("copying iec-bash");
    let launcher = shim_launcher(dir.path(), &cc, &shim);
    let payloads = payloads();
    assert!(payloads.len() >= 50, "{}", payloads.len());

    // 1. Neither hook nor shim.
    let plain = run_all(&payloads, None, None, "plain");
    assert_eq!(plain[0].payload, BANG);
    assert_eq!(norm(&plain[0].probe), vec![vec!["a \\!= b".to_string()]]);
    assert_eq!(norm(&plain[0].direct.probe), vec![vec!["a != b".to_string()]]);
    let changed_plain = plain.iter().filter(|r| changed(r)).count();
    assert!(changed_plain > 0);

    // 2. The shim, no intents: every call as without it, the wrapper bash got unchanged.
    let shim_only = run_all(&payloads, None, Some(&launcher), "shim, no hook");
    for (p, s) in plain.iter().zip(&shim_only) {
        assert_eq!(s.payload, p.payload);
        assert_eq!(
            across_runs(&s.probe),
            across_runs(&p.probe),
            "{:?}: shim only vs plain",
            s.payload
        );
        assert_eq!(
            s.outer.as_deref().map(mask),
            p.outer.as_deref().map(mask),
            "{:?}: the wrapper bash received",
            s.payload
        );
        assert_eq!(
            s.tool_result.as_ref().map(|t| t.is_error),
            p.tool_result.as_ref().map(|t| t.is_error)
        );
    }

    // 3. The hook records, the shim delivers.
    let hook = format!(
        "'{}' hook claude-code --launch {LAUNCH} --record-intent",
        iec.display()
    );
    assert!(!iec.display().to_string().contains('\''));
    let with = run_all(
        &payloads,
        Some(&hook),
        Some(&launcher),
        "hook --record-intent + shim",
    );
    let mut changed_with = Vec::new();
    for (p, r) in plain.iter().zip(&with) {
        assert_eq!(r.payload, p.payload);
        let tr = r.tool_result.as_ref().unwrap();
        assert!(!tr.is_error, "{:?}: {tr:?}", r.payload);
        assert!(!tr.content.contains("iec-bash"), "{:?}: {tr:?}", r.payload);
        // The harness's parts are kept, the quoted command is replaced by the descriptor read.
        let outer = r.outer.as_deref().unwrap_or_default();
        assert!(
            outer.contains("eval \"$(</dev/fd/") && outer.contains(" && pwd -P >| "),
            "{:?}: bash got {outer:?}",
            r.payload
        );
        if changed(r) {
            changed_with.push(format!(
                "{:?}: probe {:?} direct {:?} (bash got {outer:?})",
                r.payload,
                norm(&r.probe),
                norm(&r.direct.probe)
            ));
        }
    }
    assert_eq!(
        norm(&with[0].probe),
        vec![vec!["a != b".to_string()]],
        "{BANG} with hook + shim"
    );
    let summary = format!(
        "{} payloads: plain {changed_plain} changed; shim without intents identical to plain; \
         hook --record-intent + shim {} changed, 0 refused ({:.1} s)",
        payloads.len(),
        changed_with.len(),
        t0.elapsed().as_secs_f64()
    );
    let _ = writeln!(std::io::stderr(), "{summary}");
    println!("{summary}");
    assert!(
        changed_with.is_empty(),
        "changed with hook + shim:\n{}",
        changed_with.join("\n")
    );

    // 4. A later hook rewrites the call after the intent was recorded: what reaches the shell
    //    is not what was recorded, so the shim refuses and nothing runs.
    let rewriting = format!(
        "{hook} >/dev/null; printf '%s' '{{\"hookSpecificOutput\":{{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\",\"updatedInput\":{{\"command\":\"argvprobe rewritten\"}}}}}}'"
    );
    let refused = run_all(
        &[BANG.to_string()],
        Some(&rewriting),
        Some(&launcher),
        "recorded, then rewritten",
    );
    let r = &refused[0];
    let tr = r.tool_result.as_ref().unwrap();
    assert!(r.probe.is_empty(), "the rewritten call ran: {:?}", r.probe);
    assert!(tr.is_error, "{tr:?}");
    assert!(
        tr.content.contains("iec-bash: refused at hop `wrapper`"),
        "{tr:?}"
    );
    println!(
        "recorded, then rewritten by a later hook: refused: {:?}",
        tr.content
    );

    // 5. The same through the installed settings: `iec install claude-code --shim` writes the
    //    hook and `env.CLAUDE_CODE_SHELL`; Claude Code reads them from CLAUDE_CONFIG_DIR.
    let config = dir.path().join("config");
    let out = Command::new(&iec)
        .args([
            "install",
            "claude-code",
            "--launch",
            LAUNCH,
            "--shim",
            "--settings",
        ])
        .arg(config.join("settings.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let installed = dir.path().join("claude-installed");
    let mut script =
        std::fs::read_to_string(shim_launcher(dir.path(), &cc, Path::new("/nonexistent/bash"))).unwrap();
    script = script.replace(
        "CLAUDE_CODE_SHELL='/nonexistent/bash'\nexport CLAUDE_CODE_SHELL\n",
        &format!(
            "CLAUDE_CONFIG_DIR='{}'\nexport CLAUDE_CONFIG_DIR\n",
            config.display()
        ),
    );
    std::fs::write(&installed, script).unwrap();
    std::fs::set_permissions(&installed, std::fs::Permissions::from_mode(0o755)).unwrap();
    let via_settings = run_all(&payloads[..CHUNK], None, Some(&installed), "iec install --shim");
    for r in &via_settings {
        let outer = r.outer.as_deref().unwrap_or_default();
        assert!(
            outer.contains("eval \"$(</dev/fd/"),
            "{:?}: bash got {outer:?}",
            r.payload
        );
        assert!(
            !changed(r),
            "{:?}: {:?} vs {:?}",
            r.payload,
            norm(&r.probe),
            norm(&r.direct.probe)
        );
    }
    println!(
        "iec install claude-code --shim: {} payloads, 0 changed",
        via_settings.len()
    );
}
