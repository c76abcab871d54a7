//! The payload set and launches of `tests/iec_hook.rs` and `tests/shim.rs`: hazardous payloads
//! through a real Claude Code 2.1.72 (npm, `node cli.js`) in launches of [`CHUNK`], with an
//! optional extra hook and an optional launcher.

use std::path::Path;
use std::time::Duration;

use iec_harness::{run_claude_code_with, HarnessRun, PayloadResult, RunOptions};

pub const VERSION: &str = "2.1.72";
pub const LAUNCH: &str = "claude-code-2.1.72-linux";
pub use super::BANG;
/// Payloads per harness launch (the conversation grows with every call).
pub const CHUNK: usize = 40;

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
pub fn payloads() -> Vec<String> {
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
pub fn norm(records: &[iec_harness::ProbeRecord]) -> Vec<Vec<String>> {
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

/// Whether the probe got another argv through the harness than directly.
pub fn changed(r: &PayloadResult) -> bool {
    norm(&r.probe) != norm(&r.direct.probe)
}

/// All payloads through Claude Code in launches of [`CHUNK`], with an optional extra hook
/// command (the driver records the hook document and then pipes it to that hook in one hook
/// command: parallel hooks would race for the decision; see `RunOptions::hook_command`) and an
/// optional launcher (`bin`); `label` names the variant on stderr. Each launch is checked: no
/// timeout, every call with a tool result and echoed as emitted, and every payload a valid bash
/// command whose direct run gives a known argv.
pub fn run_chunks(
    payloads: &[String],
    hook: Option<&str>,
    bin: Option<&Path>,
    label: &str,
) -> Vec<HarnessRun> {
    let mut runs = Vec::new();
    for chunk in payloads.chunks(CHUNK) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        let mut opts = RunOptions::new(VERSION, bin.map(Path::to_path_buf), &refs);
        opts.launch.timeout = Duration::from_secs(120);
        opts.launch.probe = Some(super::probe());
        opts.hook_command = hook.map(String::from);
        let run = run_claude_code_with(&opts).expect("harness run");
        super::check_launch("Claude Code", &run, chunk.len(), false);
        for r in &run.results {
            // The reference: a valid bash command whose direct run gives a known argv.
            assert_eq!(r.direct.exit_code, Some(0), "{:?}: {:?}", r.payload, r.direct);
            assert!(!r.direct.probe.is_empty(), "{:?}: {:?}", r.payload, r.direct);
        }
        eprintln!(
            "claude-code {VERSION} ({label}): {} payloads in {} ms",
            chunk.len(),
            run.elapsed_ms
        );
        runs.push(run);
    }
    runs
}
