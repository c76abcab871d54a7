//! Gemini CLI's strip of a model-written `bash -c SCRIPT`, judged by the whitelists of
//! `iec_check::wrapping` and held to real bash: every row of `tests/data/gemini-strip.toml` is
//! checked by `iec check` and run in real bash (the stripped text inside Gemini CLI's real
//! wrapper text, against the call text run by `bash -c` and the call text inside the same
//! wrapper), see the head of that file.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use iec_check::{call_for_text, check, wrapping, Options};
use iec_core::Verdict;
use iec_launches::{render, Catalog, Launch};
use iec_witness::global;
use serde::Deserialize;

const TABLE: &str = "tests/data/gemini-strip.toml";
const LAUNCH: &str = "gemini-cli-linux";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    row: Vec<Row>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    script: Option<String>,
    text: Option<String>,
    verdict: Verdict,
    /// The first diverging hop of a "diverges" row, when not `harness-rewrite`.
    hop: Option<String>,
    /// Against `bash -c TEXT`.
    direct: Observed,
    /// Against the unstripped text inside the same wrapper (Gemini CLI without its strip).
    unstripped: Observed,
    /// Why a "corresponds" row differs from the direct run: the wrapper's own effect, seen for
    /// the unstripped call too.
    context: Option<String>,
    why: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Observed {
    Same,
    DiagnosticPrefix,
    /// The same but for the environment bash exports to the programs it runs: their output
    /// differs only in `SHLVL`'s value (a line `SHLVL=N`, or the number alone) and in the order
    /// of its lines (bash's exported `_` stands elsewhere). Only with a `context`.
    Environment,
    Differs,
}

impl Row {
    fn text(&self) -> String {
        match (&self.script, &self.text) {
            (Some(s), None) => {
                assert!(
                    !s.contains('\''),
                    "script {s:?} holds a single quote: give `text`"
                );
                format!("bash -c '{s}'")
            }
            (None, Some(t)) => t.clone(),
            _ => panic!("give exactly one of `script` and `text`: {:?}", self.why),
        }
    }
}

/// What one run left: status, stdout, stderr, the files in its directory, Gemini's pid file.
#[derive(Debug, PartialEq)]
struct Outcome {
    status: Option<i32>,
    stdout: String,
    stderr: String,
    files: BTreeMap<String, String>,
    bgpids: String,
}

/// Runs `argv` in `dir` (emptied and filled with the fixtures first) from a fixed environment.
fn run_in(dir: &Path, argv: &[&str], pidfile: &Path) -> Outcome {
    if dir.exists() {
        std::fs::remove_dir_all(dir).unwrap();
    }
    std::fs::create_dir(dir).unwrap();
    for f in ["f.txt", "g.txt", ".hidden"] {
        std::fs::write(dir.join(f), "fixture\n").unwrap();
    }
    let _ = std::fs::remove_file(pidfile);
    let home = dir.parent().unwrap();
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("PWD", dir)
        .env("USER", "iec")
        .env("LOGNAME", "iec")
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb")
        .env("TMPDIR", home)
        // A level no other number in the rows' output takes (LINENO, BASH_SUBSHELL, PPID, a
        // descriptor): what the programs print of it is told apart (`exported_environment`).
        .env("SHLVL", SHLVL.to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let content = std::fs::read(e.path()).unwrap_or_default();
        files.insert(
            e.file_name().to_string_lossy().into_owned(),
            String::from_utf8_lossy(&content).into_owned(),
        );
    }
    Outcome {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        files,
        bgpids: std::fs::read_to_string(pidfile).unwrap_or_default(),
    }
}

/// The shell's own diagnostic prefix (`bash: line 1: `, `/usr/bin/bash: -c: line 8: `), made
/// one.
fn without_prefix(stderr: &str, shells: &[&str]) -> String {
    stderr
        .lines()
        .map(|l| {
            for s in shells {
                if let Some(rest) = l.strip_prefix(&format!("{s}: ")) {
                    let rest = rest.strip_prefix("-c: ").unwrap_or(rest);
                    if let Some(r) = rest.strip_prefix("line ") {
                        let digits = r.chars().take_while(char::is_ascii_digit).count();
                        if digits > 0 {
                            if let Some(after) = r[digits..].strip_prefix(": ") {
                                return format!("SHELL: {after}\n");
                            }
                        }
                    }
                }
            }
            format!("{l}\n")
        })
        .collect()
}

/// The `SHLVL` every run starts from.
const SHLVL: u32 = 100;

/// Output with `SHLVL`'s value and the order of lines made one: what differs when programs see
/// another environment exported by bash (the wrapper's context, see [`Observed::Environment`]).
/// A value is one the runs export: [`SHLVL`] as given, or raised by the wrapper's bash and the
/// model's (one or two levels).
fn exported_environment(stdout: &str) -> String {
    let mut lines: Vec<String> = stdout
        .lines()
        .map(|l| {
            let number = |x: &str| x.parse::<u32>().is_ok_and(|n| (SHLVL..=SHLVL + 2).contains(&n));
            match l.strip_prefix("SHLVL=") {
                Some(n) if number(n) => "SHLVL=N".to_string(),
                _ if number(l) => "N".to_string(),
                _ => l.to_string(),
            }
        })
        .collect();
    lines.sort();
    lines.join("\n")
}

/// Runs the call text directly, the call text in the launch's wrapper and the stripped text in
/// the launch's wrapper; how the last compares with each of the first two.
fn observe(l: &Launch, text: &str, received: &str) -> [(Observed, String); 2] {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("work");
    let gemini_tmp = tmp.path().join("gemini");
    std::fs::create_dir(&gemini_tmp).unwrap();
    let w = l.wrapper.as_ref().expect("gemini wrapper");
    assert_eq!(w.payload, "raw");
    let wrap = |payload: &str| {
        w.template
            .replace("{{tmp}}", gemini_tmp.to_str().unwrap())
            .replace("{{payload}}", payload)
    };
    let pidfile = gemini_tmp.join("gemini-shell-0a1b/bgpids.tmp");
    std::fs::create_dir_all(pidfile.parent().unwrap()).unwrap();
    let shell = l.spawn.argv[0].as_str();
    assert_eq!(l.spawn.argv[1..], ["-c", "{{wrapper}}"]);
    let direct = run_in(&dir, &["bash", "-c", text], &pidfile);
    let unstripped = run_in(&dir, &[shell, "-c", &wrap(text)], &pidfile);
    let gemini = run_in(&dir, &[shell, "-c", &wrap(received)], &pidfile);
    let shells = ["bash", shell];
    let compare = |reference: &Outcome, name: &str| {
        let shown = format!("{name} {reference:?}\nstripped {gemini:?}");
        if *reference == gemini {
            return (Observed::Same, shown);
        }
        let normal = |o: &Outcome| Outcome {
            stderr: without_prefix(&o.stderr, &shells),
            stdout: o.stdout.clone(),
            status: o.status,
            files: o.files.clone(),
            bgpids: o.bgpids.clone(),
        };
        if normal(reference) == normal(&gemini) {
            return (Observed::DiagnosticPrefix, shown);
        }
        let exported = |o: &Outcome| Outcome {
            stdout: exported_environment(&o.stdout),
            ..normal(o)
        };
        match exported(reference) == exported(&gemini) {
            true => (Observed::Environment, shown),
            false => (Observed::Differs, shown),
        }
    };
    [compare(&direct, "direct"), compare(&unstripped, "unstripped")]
}

#[test]
fn every_row_of_the_strip_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLE);
    let file: File = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cat = Catalog::builtin();
    let l = cat.get(LAUNCH).unwrap();
    let mut wrong = vec![];
    for row in &file.row {
        let text = row.text();
        // The table is consistent with itself: a corresponding strip leaves the action of the
        // unstripped call, and of the direct run but for the wrapper's own context.
        let corresponds = row.verdict == Verdict::Corresponds;
        let context = matches!(row.direct, Observed::Differs | Observed::Environment)
            || row.unstripped == Observed::Environment;
        if row.verdict == Verdict::Unknown
            || (corresponds && row.unstripped == Observed::Differs)
            || (corresponds && context != row.context.is_some())
            || (!corresponds && row.context.is_some())
        {
            wrong.push(format!(
                "{text:?}: verdict {:?} with direct {:?}, unstripped {:?}, context {:?}",
                row.verdict, row.direct, row.unstripped, row.context
            ));
        }
        let r = check(l, &call_for_text(l, &text), global(), Options::default()).unwrap();
        let at = r.first_divergence.as_ref().map(|f| f.hop_name.as_str());
        let hop = row.hop.as_deref().unwrap_or("harness-rewrite");
        if r.verdict != row.verdict || (r.verdict == Verdict::Diverges && at != Some(hop)) {
            wrong.push(format!(
                "{text:?}: iec check says {} at {at:?}, the table {} at {hop} ({})\n{}",
                r.verdict.as_str(),
                row.verdict.as_str(),
                row.why,
                serde_json::to_string_pretty(&r.hops).unwrap()
            ));
            continue;
        }
        // What the harness runs, by its own rewrite steps (also for a call it refuses: the
        // strip's action is shown all the same).
        let steps = &l.rewrite.as_ref().expect("gemini rewrite steps").steps;
        let received = steps
            .iter()
            .fold(text.clone(), |t, step| render::rewrite_step(step, &t).0);
        let [direct, unstripped] = observe(l, &text, &received);
        for ((seen, shown), want, name) in [
            (direct, row.direct, "direct"),
            (unstripped, row.unstripped, "unstripped"),
        ] {
            if seen != want {
                wrong.push(format!(
                    "{text:?}: against the {name} run real bash shows {seen:?}, the table {want:?} ({})\n{shown}",
                    row.why
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} rows wrong:\n{}",
        wrong.len(),
        wrong.join("\n\n")
    );
}

/// The command names the whitelist treats as bash's own are exactly the real bash's builtins
/// and reserved words.
#[test]
fn the_builtin_list_is_real_bash_s() {
    let out = Command::new("bash")
        .args(["-c", "compgen -b; compgen -k"])
        .output()
        .unwrap();
    let mut real: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut ours: Vec<String> = wrapping::BASH_BUILTINS_AND_KEYWORDS
        .iter()
        .map(|s| s.to_string())
        .collect();
    real.sort();
    ours.sort();
    assert_eq!(ours, real);
}
