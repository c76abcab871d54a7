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
use std::time::{Duration, Instant};

use iec_harness::{
    install_claude_code, run_claude_code_with, HarnessRun, Launcher, PayloadResult, RunOptions,
};

const VERSION: &str = "2.1.72";
const LAUNCH: &str = "claude-code-2.1.72-linux";
const BANG: &str = "argvprobe 'a != b'";
/// Payloads per harness launch (the conversation grows with every call).
const CHUNK: usize = 40;

/// Installs Claude Code (or explains the skip); `None` means skipped.
fn install() -> Option<Launcher> {
    match install_claude_code(VERSION) {
        Ok(l) => Some(l),
        Err(e) => {
            let why = format!("installing @anthropic-ai/claude-code@{VERSION} with npm failed: {e:#}");
            support::skip_or_panic(&why, support::HARNESS_SKIP);
            None
        }
    }
}

/// A workspace binary: `$env_var`, else `<target>/<profile>/<name>`, else built with cargo.
fn workspace_bin(name: &str, package: &str, env_var: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env_var) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "{env_var}={} is not a file", p.display());
        return p;
    }
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/");
    let candidate = profile_dir.join(name);
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
    cmd.args(["build", "-p", package, "--bin", name])
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
    match cmd.status() {
        Ok(s) if s.success() && candidate.is_file() => candidate,
        other => panic!(
            "cannot find or build {name}: set {env_var}, or build it with `cargo build -p {package}` \
             (looked for {}; the build gave {other:?})",
            candidate.display()
        ),
    }
}

// The payload set of tests/iec_hook.rs (copied: one generator, two tests).

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

fn changed(r: &PayloadResult) -> bool {
    norm(&r.probe) != norm(&r.direct.probe)
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

/// All payloads through Claude Code in launches of `CHUNK`, with an optional extra hook and
/// an optional launcher (the shim's).
fn run_all(payloads: &[String], hook: Option<&str>, bin: Option<&Path>, label: &str) -> Vec<PayloadResult> {
    let mut out = Vec::new();
    for chunk in payloads.chunks(CHUNK) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        let mut opts = RunOptions::new(VERSION, bin.map(Path::to_path_buf), &refs);
        opts.launch.timeout = Duration::from_secs(120);
        opts.launch.probe = Some(PathBuf::from(env!("CARGO_BIN_EXE_iec-argvprobe")));
        opts.hook_command = hook.map(String::from);
        let run = run_claude_code_with(&opts).expect("harness run");
        check_run(&run, chunk.len());
        assert!(
            run.hook_stderr.is_empty(),
            "{label}: the hook wrote on stderr:\n{}",
            run.hook_stderr
        );
        eprintln!(
            "claude-code {VERSION} ({label}): {} payloads in {} ms",
            chunk.len(),
            run.elapsed_ms
        );
        out.extend(run.results);
    }
    out
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
        assert_eq!(r.direct.exit_code, Some(0), "{:?}: {:?}", r.payload, r.direct);
        assert!(!r.direct.probe.is_empty(), "{:?}: {:?}", r.payload, r.direct);
    }
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
    let Some(cc) = install() else {
        return;
    };
    // Private copies: a concurrent `cargo build` that relinks target/<profile>/ mid-run must not
    // make a call fail. Claude Code accepts the shell only if its path contains "bash".
    let dir = tempfile::tempdir().unwrap();
    let iec = dir.path().join("iec");
    let shim = dir.path().join("iec-bash");
    std::fs::copy(workspace_bin("iec", "iec-cli", "IEC_BIN"), &iec).expect("copying iec");
    std::fs::copy(workspace_bin("iec-bash", "iec-shim", "IEC_BASH_BIN"), &shim).expect("copying iec-bash");
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
