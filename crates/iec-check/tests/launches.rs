//! Launch behaviour. The table of call × launch → verdict, hop, kind, mechanism and silence is
//! data, `tests/data/launch-verdicts.toml`, each row citing the fact it pins;
//! `every_row_of_the_verdict_table` checks every row with the real witnesses. The tests below it
//! hold what is not a plain row: texts built by code, rows checked against a real shell in the same
//! loop, and reports read beyond their verdict.

use std::panic::{catch_unwind, AssertUnwindSafe};

use iec_check::{call_for_text, check, Options};
use iec_core::{Call, CheckReport, HopKind, Mechanism, Verdict};
use iec_launches::{Catalog, Launch};
use iec_witness::global;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug)]
enum Want {
    Corresponds,
    Diverges {
        hop: String,
        kind: HopKind,
        mechanism: Mechanism,
        silent: bool,
    },
    Unknown,
}
use Want::*;

fn d(hop: &str, kind: HopKind, mechanism: Mechanism, silent: bool) -> Want {
    Diverges {
        hop: hop.into(),
        kind,
        mechanism,
        silent,
    }
}

/// A verdict as the table writes it: `corresponds`, `unknown`, `diverges at eval (eval-parse,
/// re-expansion, silent)`.
fn shown(verdict: Verdict, first: Option<(&str, HopKind, Mechanism, bool)>) -> String {
    match first {
        Some((hop, kind, mechanism, silent)) => format!(
            "{} at {hop} ({}, {}, {})",
            verdict.as_str(),
            kind.as_str(),
            mechanism.as_str(),
            if silent { "silent" } else { "loud" }
        ),
        None => verdict.as_str().into(),
    }
}

impl Want {
    fn shown(&self) -> String {
        match self {
            Corresponds => shown(Verdict::Corresponds, None),
            Unknown => shown(Verdict::Unknown, None),
            Diverges {
                hop,
                kind,
                mechanism,
                silent,
            } => shown(Verdict::Diverges, Some((hop, *kind, *mechanism, *silent))),
        }
    }
}

/// A report names the launch's planned hops, in plan order, and stops only where one diverged:
/// hop names and kinds come from one place (`iec_core::Hop`, `Launch::plan`).
fn follows_the_plan(l: &Launch, r: &CheckReport) -> Result<(), String> {
    let plan: Vec<(&str, HopKind)> = l.plan().iter().map(|h| (h.name(), h.kind())).collect();
    let got: Vec<(&str, HopKind)> = r.hops.iter().map(|h| (h.name.as_str(), h.kind)).collect();
    let ok = match r.verdict {
        Verdict::Corresponds => got == plan,
        Verdict::Diverges => {
            // Hops after the first divergence may be shown, not judged.
            let Some(fd) = r.first_divergence.as_ref().map(|f| f.hop) else {
                return Err("diverges without a first divergence".into());
            };
            plan.starts_with(&got)
                && r.hops.get(fd).is_some_and(|h| h.corresponds == Some(false))
                && r.hops[fd + 1..].iter().all(|h| h.corresponds.is_none())
        }
        Verdict::Unknown => plan.starts_with(&got),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the report's hops {got:?} do not follow the launch's plan {plan:?}"
        ))
    }
}

/// Checks `call` on `launch` and holds the report to `want`: the verdict, the first divergence
/// (its hop diverged, no hop before it did) and the launch's hop plan. The error says what differs
/// and shows the report.
fn verdict_of(cat: &Catalog, launch: &str, call: &Call, want: &Want) -> Result<(), String> {
    let l = cat.get(launch).map_err(|e| e.to_string())?;
    let r = check(l, call, global(), Options::default()).map_err(|e| format!("check failed: {e}"))?;
    let fd = r.first_divergence.as_ref();
    let got = shown(
        r.verdict,
        fd.map(|f| (f.hop_name.as_str(), f.kind, f.mechanism, f.silent)),
    );
    let wrong = if got != want.shown() {
        Some(format!("expected {}, got {got}", want.shown()))
    } else {
        match want {
            Corresponds => None,
            Unknown => r.reason.is_none().then(|| "unknown without a reason".to_string()),
            Diverges { .. } => {
                let at = fd.map_or(0, |f| f.hop);
                if r.hops.get(at).map(|h| h.corresponds) != Some(Some(false)) {
                    Some(format!(
                        "the first divergence names hop {at}, which did not diverge"
                    ))
                } else {
                    r.hops[..at]
                        .iter()
                        .any(|h| h.corresponds == Some(false))
                        .then(|| "a hop before the first divergence diverged".to_string())
                }
            }
        }
    };
    match wrong.map_or_else(|| follows_the_plan(l, &r), Err) {
        Ok(()) => Ok(()),
        Err(e) => Err(format!(
            "{e}\nreport: {}",
            serde_json::to_string_pretty(&r).unwrap()
        )),
    }
}

fn run(launch: &str, call: Call, want: Want) {
    if let Err(e) = verdict_of(&Catalog::builtin(), launch, &call, &want) {
        panic!("{launch} {:?}: {e}", call.input);
    }
}

fn text(launch: &str, t: &str, want: Want) {
    let cat = Catalog::builtin();
    let call = call_for_text(cat.get(launch).unwrap(), t);
    run(launch, call, want)
}

const TABLE: &str = "tests/data/launch-verdicts.toml";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    row: Vec<toml::Spanned<toml::Value>>,
}

/// One `[[row]]` as written; see the head of the table for the fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowFields {
    launch: String,
    text: Option<String>,
    call: Option<CallFields>,
    verdict: Verdict,
    hop: Option<String>,
    kind: Option<HopKind>,
    mechanism: Option<Mechanism>,
    silent: Option<bool>,
    source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallFields {
    tool: String,
    input: serde_json::Value,
}

struct Row {
    /// `row N (line L)`.
    name: String,
    launch: String,
    call: Call,
    want: Want,
    source: String,
}

/// The row named `name`, or what is wrong with it.
fn read_row(cat: &Catalog, name: String, value: toml::Value) -> Result<Row, String> {
    let f: RowFields = value
        .try_into()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    let l = cat.get(&f.launch).map_err(|e| e.to_string())?;
    let call = match (f.text, f.call) {
        (Some(t), None) => call_for_text(l, &t),
        (None, Some(c)) => Call {
            tool: c.tool,
            input: c.input,
        },
        _ => return Err("give exactly one of `text` and `call`".into()),
    };
    let want = match (f.verdict, f.hop, f.kind, f.mechanism, f.silent) {
        (Verdict::Corresponds, None, None, None, None) => Corresponds,
        (Verdict::Unknown, None, None, None, None) => Unknown,
        (Verdict::Diverges, Some(hop), Some(kind), Some(mechanism), Some(silent)) => {
            d(&hop, kind, mechanism, silent)
        }
        (Verdict::Diverges, ..) => {
            return Err("`diverges` needs `hop`, `kind`, `mechanism` and `silent`".into())
        }
        (v, ..) => {
            return Err(format!(
                "`{}` takes no `hop`, `kind`, `mechanism` or `silent`",
                v.as_str()
            ))
        }
    };
    if f.source.trim().is_empty() {
        return Err("`source` is empty: name the fact the row pins".into());
    }
    Ok(Row {
        name,
        launch: f.launch,
        call,
        want,
        source: f.source,
    })
}

/// The table's rows, and what is wrong with each row that cannot be read (by its name).
fn read_table(cat: &Catalog) -> (Vec<Row>, Vec<String>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLE);
    let file = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{TABLE}: {e}"));
    let table: TableFile = toml::from_str(&file).unwrap_or_else(|e| panic!("{TABLE}: {e}"));
    let (mut rows, mut malformed) = (Vec::<Row>::new(), Vec::new());
    for (i, value) in table.row.into_iter().enumerate() {
        let line = file[..value.span().start].matches('\n').count() + 1;
        let name = format!("row {} (line {line})", i + 1);
        let value = value.into_inner();
        // What the row says it is, for a row that cannot be read.
        let said: Vec<String> = ["launch", "text", "call"]
            .iter()
            .filter_map(|k| value.get(k).map(|v| v.to_string()))
            .collect();
        match read_row(cat, name.clone(), value) {
            Err(e) => malformed.push(format!("{name} {}: {e}", said.join(" "))),
            Ok(row) => match rows.iter().find(|r| r.launch == row.launch && r.call == row.call) {
                Some(same) => malformed.push(format!(
                    "{name}: the same call on the same launch as {}",
                    same.name
                )),
                None => rows.push(row),
            },
        }
    }
    (rows, malformed)
}

#[test]
fn every_row_of_the_verdict_table() {
    let cat = Catalog::builtin();
    let (rows, malformed) = read_table(&cat);
    let mut failed = Vec::new();
    for row in &rows {
        let checked = catch_unwind(AssertUnwindSafe(|| {
            verdict_of(&cat, &row.launch, &row.call, &row.want)
        }));
        let e = match checked {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e,
            Err(p) => format!(
                "panicked: {}",
                p.downcast_ref::<String>()
                    .map(String::as_str)
                    .or(p.downcast_ref::<&str>().copied())
                    .unwrap_or("?")
            ),
        };
        failed.push(format!(
            "{}: {} {}\n  source: {}\n  {e}",
            row.name, row.launch, row.call.input, row.source
        ));
    }
    assert!(
        malformed.is_empty() && failed.is_empty() && !rows.is_empty(),
        "{TABLE}: {} rows, {} cannot be read, {} fail\n\n{}",
        rows.len() + malformed.len(),
        malformed.len(),
        failed.len(),
        malformed
            .iter()
            .chain(&failed)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

#[test]
fn every_report_follows_its_launch_plan() {
    let cat = Catalog::builtin();
    let texts = [
        "ls -la",
        "printf '%s' 'a != b'",
        "echo '{\"x\":1}' | jq 'select(.x != 2)'",
        "echo \"PID=$$\" | cat",
        "cat <<'EOF'\nhello $USER\nEOF",
        "printf a\r\nprintf b",
        "grep -rn TODO src",
        "echo {a,b}.txt",
        "echo \"today is $(date +%F)\"",
        "echo foo \\",
        "printf '%s\\n' 'C:\\\\Users\\\\me'",
        "if true; then",
    ];
    for l in cat.iter() {
        for t in texts {
            let r = check(l, &call_for_text(l, t), global(), Options::default()).unwrap();
            if let Err(e) = follows_the_plan(l, &r) {
                panic!(
                    "{} {t:?}: {e}\n{}",
                    l.id,
                    serde_json::to_string_pretty(&r).unwrap()
                );
            }
        }
    }
}

/// Patterns real dash reads otherwise than bash 5.2 (run here in an empty directory): `.?`
/// matches `..` in dash only; `[^a]` is "^ or a" in dash, "not a" in bash. `sh -c` is dash
/// (docs/spec/harnesses.md §17; its other rows are in the table).
#[test]
fn dash_reads_patterns_otherwise_than_bash() {
    let dir = tempfile::tempdir().unwrap();
    for (t, m) in [
        ("echo .?", Mechanism::ReExpansion),
        ("case b in [^a]) echo y;; esac", Mechanism::Other),
    ] {
        let out = |sh: &str| {
            let o = std::process::Command::new(sh)
                .args(["-c", t])
                .current_dir(dir.path())
                .output()
                .unwrap();
            String::from_utf8(o.stdout).unwrap()
        };
        assert_ne!(out("dash"), out("bash"), "{t}");
        text("sh-c", t, d("shell", HopKind::ShellParse, m, true));
        text("bash-c", t, Corresponds);
    }
}

/// docs/spec/harnesses.md §13, V17: mcp-shell-server joins argv with spaces for /bin/sh -c (its
/// other rows are in the table). An element with an unquoted pattern is matched against the
/// working directory by dash. `.?` is `..` in every directory (dash does not skip `.` and `..`;
/// bash 5.2 does): the 10^6 repair run delivered `["PROBE", ".?"]` as corresponding and the probe
/// got `..`.
#[test]
fn mcp_shell_server_hands_globs_to_dash() {
    let argv = |a: &[&str]| Call {
        tool: "x".into(),
        input: json!({ "command": a }),
    };
    let dir = tempfile::tempdir().unwrap();
    for (word, dash_gives) in [
        (".?", ".."),
        (".*", ". .."),
        (".[!a]", ".."),
        ("a?", "a?"),
        ("[ab]", "[ab]"),
        ("x*", "x*"),
    ] {
        let out = std::process::Command::new("dash")
            .args(["-c", &format!("echo {word}")])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim_end(),
            dash_gives,
            "{word}"
        );
        run(
            "mcp-shell-server",
            argv(&["echo", word]),
            d(
                "shell",
                HopKind::ShellParse,
                if word == ".*" {
                    Mechanism::ArityChange
                } else {
                    Mechanism::ReExpansion
                },
                true,
            ),
        );
    }
}

#[test]
fn spawn_witness_observes_execve() {
    let cat = Catalog::builtin();
    let l = cat.get("bash-c").unwrap();
    let t = "printf '%s' 'a != b' \"$HOME\"\r\ncat <<'EOF'\nx\nEOF";
    let r = check(
        l,
        &call_for_text(l, t),
        global(),
        Options {
            spawn_witness: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.verdict, Verdict::Corresponds);
    let spawn = r.hops.iter().find(|h| h.name == "spawn").unwrap();
    assert_eq!(spawn.witness, iec_core::WitnessKind::Real);
    assert_eq!(spawn.receipt["bash_execution_string"], t);
}

/// Observed with real bash and dash: `bash -c '-- echo hi'` → `--: invalid option`. The rows
/// (`-x echo hi`, `+x echo hi` on bash-c, sh-c, goose-linux; `--` first on mcp-shell-server) are in
/// the table; the real shells agree that nothing runs.
#[test]
fn a_text_starting_with_a_dash_is_read_as_shell_options() {
    for sh in ["bash", "dash"] {
        let o = std::process::Command::new(sh)
            .args(["-c", "-x echo hi"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{sh}");
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn oversized_argument_is_refused_by_execve() {
    text(
        "bash-c",
        &format!("echo {}", "a".repeat(140_000)),
        d("spawn", HopKind::ProcessInterface, Mechanism::Truncation, false),
    );
}

/// The boundary, held to the real kernel: an argument of 131,071 bytes runs, one of 131,072
/// (MAX_ARG_STRLEN counts the NUL) fails with E2BIG; `check` says the same on `bash-c` (it said
/// `corresponds` for exactly 131,072 bytes before; seen while tracing an E2BIG of the witness's
/// own `bash -n -c` in the million-string repair run).
#[test]
fn the_execve_limit_is_131071_bytes_per_argument() {
    for (len, runs) in [(131_071, true), (131_072, false)] {
        let t = format!("#{}", "a".repeat(len - 1));
        let real = std::process::Command::new("/bin/bash").args(["-c", &t]).status();
        match (&real, runs) {
            (Ok(st), true) => assert!(st.success(), "{len}: {st}"),
            (Err(e), false) => assert_eq!(e.kind(), std::io::ErrorKind::ArgumentListTooLong, "{len}: {e}"),
            _ => panic!("{len} bytes: bash -c gave {real:?}"),
        }
        let want = if runs {
            Corresponds
        } else {
            d("spawn", HopKind::ProcessInterface, Mechanism::Truncation, false)
        };
        text("bash-c", &t, want);
    }
}

/// OpenHands refuses more than one top-level statement (docs/spec/harnesses.md §5.1; the rows are
/// in the table): the offset names where the second statement starts.
#[test]
fn openhands_names_where_the_second_statement_starts() {
    let cat = Catalog::builtin();
    let l = cat.get("openhands-tmux").unwrap();
    let r = check(
        l,
        &call_for_text(l, "echo a\n\n  echo b"),
        global(),
        Options::default(),
    )
    .unwrap();
    let fd = r.first_divergence.unwrap();
    assert!(
        fd.detail.contains("multiple-statements at byte 10"),
        "{}",
        fd.detail
    );
}

#[test]
fn codex_exec_command_reads_cmd_and_parses_twice() {
    // Observed Codex 0.171.0: `exec_command {"cmd": …}`, the snapshot wrapper ends in
    // `exec '/bin/bash' -c '<cmd>'`: the outer bash expands one single-quoted word, the inner
    // bash parses the text as emitted. Its rows (a bare {"command": …}, an open quote) are in the table.
    let cat = Catalog::builtin();
    let l = cat.get("codex-exec-command-linux").unwrap();
    let call = Call {
        tool: "exec_command".into(),
        input: json!({"cmd": "printf '%s' 'a != b' \"$HOME\" it\\'s", "yield_time_ms": 1000}),
    };
    let r = check(l, &call, global(), Options::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Corresponds, "{r:?}");
    let names: Vec<&str> = r.hops.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["tool-input", "wrapper", "spawn", "shell", "inner-shell"]);
    assert_eq!(
        r.hops[3].receipt["eval_args"],
        json!(["printf '%s' 'a != b' \"$HOME\" it\\'s"])
    );
    assert_eq!(call_for_text(l, "ls").input, json!({"cmd": "ls"}));
}

/// `iec harness learn --harness claude-code@2.0.76` wrote `argv = ["/bin/bash", "-c", "-l",
/// "{{wrapper}}"]` (what 2.0.76 really runs: bash accepts options after `-c`); the spawn hop
/// read `-l` as the command text and called every call "diverges, loud: invalid option".
#[test]
fn options_after_dash_c_are_read_as_bash_reads_them() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../iec-launches/launches/claude-code-2.1.72-linux.toml"
    ))
    .unwrap()
    .replace("id = \"claude-code-2.1.72-linux\"", "id = \"learned\"")
    .replace(
        r#"argv = ["/bin/bash", "-c", "{{wrapper}}"]"#,
        r#"argv = ["/bin/bash", "-c", "-l", "{{wrapper}}"]"#,
    );
    let l = iec_launches::Launch::from_toml(&text).unwrap();
    assert_eq!(l.spawn.argv[2], "-l");
    for (t, verdict) in [
        ("ls -la", Verdict::Corresponds),
        ("printf '%s' 'a != b'", Verdict::Diverges),
    ] {
        let r = check(&l, &call_for_text(&l, t), global(), Options::default()).unwrap();
        assert_eq!(
            r.verdict,
            verdict,
            "{t}: {}",
            serde_json::to_string_pretty(&r).unwrap()
        );
        let shell = r.hops.iter().find(|h| h.name == "shell").unwrap();
        assert!(
            shell.note.as_deref().unwrap_or("").contains("login shell"),
            "{shell:?}"
        );
    }
}

/// Red team, round 4: shell-quote split an open quote leniently, so on argv launches
/// `rm -rf '/tmp/x` became three words and "corresponds", though bash reads no command there.
#[test]
fn an_open_quote_is_not_split_into_words() {
    let cat = Catalog::builtin();
    for id in ["mcp-shell-server", "codex-shell-linux"] {
        let l = cat.get(id).unwrap();
        for t in ["rm -rf '/tmp/x", "echo 'a b", "echo \"a"] {
            let call = call_for_text(l, t);
            assert_eq!(call.input["command"][0], "bash", "{id} {t}: {}", call.input);
            let r = check(l, &call, global(), Options::default()).unwrap();
            assert_eq!(
                r.verdict,
                Verdict::Unknown,
                "{id} {t}: {}",
                serde_json::to_string_pretty(&r).unwrap()
            );
            assert_eq!(r.attribution.as_deref(), Some("generation"));
        }
    }
}

/// Red team, round 5: any `extglob` in the text (a comment, an `echo` argument) made the whole
/// text parse with extglob on, so `echo @(a)` on a later line was "corresponds" though `bash -n`
/// rejects it and bash stops there.
#[test]
fn the_word_extglob_alone_does_not_switch_extglob_on() {
    let cat = Catalog::builtin();
    for id in ["bash-c", "claude-code-2.1.72-linux", "codex-shell-linux"] {
        let l = cat.get(id).unwrap();
        for t in [
            "echo shopt -s extglob\necho @(a)",
            "# shopt -s extglob\necho @(a)",
            "false && shopt -s extglob\necho @(a)",
        ] {
            let r = check(
                l,
                &call_for_text(l, t),
                global(),
                Options {
                    full_witness: true,
                    ..Options::default()
                },
            )
            .unwrap();
            assert_ne!(
                r.verdict,
                Verdict::Corresponds,
                "{id} {t:?}: {}",
                serde_json::to_string_pretty(&r).unwrap()
            );
        }
        // A text that does switch it on first is read with it on, as bash reads it line by line.
        let r = check(
            l,
            &call_for_text(l, "shopt -s extglob\necho @(a|b)"),
            global(),
            Options::default(),
        )
        .unwrap();
        assert_ne!(
            r.verdict,
            Verdict::Unknown,
            "{id}: {}",
            serde_json::to_string_pretty(&r).unwrap()
        );
    }
}

/// Codex 0.20's learned launch splices the text into a `{{payload}}` wrapper run by `bash -lc`;
/// a text ending in a backslash (`bash -c '…' \`) parses only at the end of input, which the
/// real Codex 0.20 runs unchanged (the learner's `wrapped-backslash` marker, 2026-12-07): it was
/// a false "diverges, loud" at the shell hop. A wrapper with anything after the text keeps it.
#[test]
fn a_text_ending_in_a_backslash_at_the_end_of_a_spliced_wrapper_corresponds() {
    let learned = |template: &str| {
        iec_launches::Launch::from_toml(&format!(
            "id = \"learned\"\nharness = \"codex\"\nversion = \"0.20.0\"\nos = \"linux\"\ntool = \"shell\"\nsource = \"test\"\n\n[wrapper]\ntemplate = {template:?}\npayload = \"raw\"\neval = false\n\n[spawn]\nargv = [\"bash\", \"-lc\", \"{{{{wrapper}}}}\"]\nshell = \"bash\"\nlogin = true\n"
        ))
        .unwrap()
    };
    let l = learned("{{payload}}");
    for t in ["bash -c 'argvprobe X \"$0\"' \\", "echo a \\", "cat <<EOF\nhi"] {
        let r = check(&l, &call_for_text(&l, t), global(), Options::default()).unwrap();
        assert_eq!(
            r.verdict,
            Verdict::Corresponds,
            "{t}: {}",
            serde_json::to_string_pretty(&r).unwrap()
        );
    }
    // With a command after the text, the backslash joins it to the call (`echo a echo done`):
    // it was "corresponds", bash printing the script without an error.
    let l = learned("{{payload}}\necho done");
    let r = check(&l, &call_for_text(&l, "echo a \\"), global(), Options::default()).unwrap();
    assert_eq!(
        r.verdict,
        Verdict::Diverges,
        "{}",
        serde_json::to_string_pretty(&r).unwrap()
    );
    let fd = r.first_divergence.unwrap();
    assert_eq!((fd.hop_name.as_str(), fd.silent), ("shell", true));
}
