//! IntAct on the Windows launches: renderings are written in the language of the launch's shell.
//! PowerShell's native-argument hop gets `ps-stop-parsing` (`program --% RAW`), checked by the
//! emulated PowerShell (tree-sitter-powershell, the 5.1 / 7.x native command line, the program's
//! UCRT parse); cmd.exe gets no rendering at all. IEC_REPAIR_PS_CASES sets the number of generated
//! strings (default 8000, new every UTC day: `IEC_ROTATION`).

use iec_check::{call_for_text, check, Options};
use iec_core::{CheckReport, Verdict};
use iec_launches::{Catalog, Launch};
use iec_repair::{repair, Outcome};
use iec_testkit::gen;
use iec_witness::global;
use serde_json::Value;

fn outcome(l: &Launch, text: &str) -> Outcome {
    repair(l, &call_for_text(l, text), global()).unwrap()
}

fn check_text(l: &Launch, text: &str) -> CheckReport {
    check(l, &call_for_text(l, text), global(), Options::default()).unwrap()
}

/// The argv of every native call, as the `native` hop's receipt gives it.
fn native_argv(rep: &CheckReport) -> Vec<Vec<String>> {
    let hop = rep
        .hops
        .iter()
        .find(|h| h.name == "native")
        .expect("a native hop");
    hop.receipt["calls"]
        .as_array()
        .expect("calls in the receipt")
        .iter()
        .map(|c| serde_json::from_value(c["argv"].clone()).expect("argv of a judged call"))
        .collect()
}

/// A PowerShell single-quoted literal: everything is literal but `'`, written twice.
fn ps_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

const PS51: &[&str] = &["powershell51-native", "codex-windows-powershell"];

#[test]
fn ps_stop_parsing_renders_changed_native_calls() {
    let cat = Catalog::builtin();
    // (text, rendering, argv of each native call as the program receives it)
    let table: &[(&str, &str, &[&[&str]])] = &[
        (
            r#"argvprobe 'a"b' 'c d\' ''; Write-Output done"#,
            "argvprobe --% \"a\\\"b\" \"c d\\\\\" \"\"\n; Write-Output done",
            &[&["a\"b", "c d\\", ""]],
        ),
        (
            r#"git commit -m 'say "hi" now'"#,
            r#"git --% commit -m "say \"hi\" now""#,
            &[&["commit", "-m", "say \"hi\" now"]],
        ),
        (
            r#"node -e 'console.log("test")'"#,
            r#"node --% -e "console.log(\"test\")""#,
            &[&["-e", "console.log(\"test\")"]],
        ),
        (
            r#"if ($true) { argvprobe 'x"y' } else { argvprobe 'z' }"#,
            "if ($true) { argvprobe --% \"x\\\"y\"\n } else { argvprobe 'z' }",
            &[&["x\"y"], &["z"]],
        ),
        (
            r#"argvprobe 'a"b' # why"#,
            "argvprobe --% \"a\\\"b\"\n# why",
            &[&["a\"b"]],
        ),
        (
            "argvprobe 1 '' 2\r\nargvprobe 'p q\\\\'",
            "argvprobe --% 1 \"\" 2\r\nargvprobe --% \"p q\\\\\\\\\"",
            &[&["1", "", "2"], &["p q\\\\"]],
        ),
    ];
    for id in PS51 {
        let l = cat.get(id).unwrap();
        for (text, want, argv) in table {
            let before = check_text(l, text);
            assert_eq!(before.verdict, Verdict::Diverges, "{id} {text:?}");
            match outcome(l, text) {
                Outcome::Deliver {
                    repaired: true,
                    hop,
                    rendering,
                    call,
                    check,
                } => {
                    assert_eq!(hop.as_deref(), Some("native"));
                    assert_eq!(rendering.as_deref(), Some("ps-stop-parsing"));
                    assert_eq!(call["command"], *want, "{id} {text:?}");
                    assert_eq!(check.unwrap().verdict, Verdict::Corresponds);
                    let after = check_text(l, want);
                    assert_eq!(after.verdict, Verdict::Corresponds, "{id} {want:?}");
                    let got = native_argv(&after);
                    let argv: Vec<Vec<String>> = argv
                        .iter()
                        .map(|a| a.iter().map(|s| s.to_string()).collect())
                        .collect();
                    assert_eq!(got, argv, "{id} {text:?}");
                }
                o => panic!("{id} {text:?}: {o:?}"),
            }
        }
    }
}

#[test]
fn ps_stop_parsing_refuses_what_the_raw_text_cannot_carry() {
    let cat = Catalog::builtin();
    let l = cat.get("powershell51-native").unwrap();
    let table: &[(&str, &str)] = &[
        (r#"argvprobe 'a"b' > out.txt"#, "redirection"),
        (r#"argvprobe 'a"b' | Select-Object -First 1"#, "does not parse"),
        (r#"argvprobe '%PATH%"x'"#, "%NAME%"),
        ("argvprobe 'a\"b\nc'", "line break"),
        (r#"argvprobe 'a"|b'"#, "line break or `|`"),
        (r#"run.bat 'a b"c'"#, "batch file"),
    ];
    for (text, why) in table {
        assert_eq!(check_text(l, text).verdict, Verdict::Diverges, "{text:?}");
        match outcome(l, text) {
            Outcome::Refuse { hop, reason } => {
                assert_eq!(hop, "native", "{text:?}");
                assert!(reason.contains(why), "{text:?}: {reason}");
                assert!(reason.contains(".ps1 file"), "{reason}");
            }
            o => panic!("{text:?}: {o:?}"),
        }
    }
}

#[test]
fn check_judges_stop_parsing() {
    let cat = Catalog::builtin();
    let l = cat.get("powershell51-native").unwrap();
    // The raw text reaches the program as written; its argv is the program's parse of it.
    let rep = check_text(l, r#"argvprobe x --% "a\"b" c"#);
    assert_eq!(rep.verdict, Verdict::Corresponds);
    assert_eq!(native_argv(&rep), vec![vec!["x", "a\"b", "c"]]);
    // Values before --% are still written the 5.1 way.
    let rep = check_text(l, r#"argvprobe 'p"q' --% r"#);
    assert_eq!(rep.verdict, Verdict::Diverges);
    // (the open quote of `p"q` runs on into the raw text)
    assert_eq!(native_argv(&rep), vec![vec!["pq r"]]);
    // %NAME% and a pipe after --% are not judged.
    for text in [r#"argvprobe --% "%PATH%""#, "argvprobe --% a | Write-Output"] {
        let rep = check_text(l, text);
        assert_eq!(rep.verdict, Verdict::Unknown, "{text}");
        assert!(rep.reason.unwrap().contains("--%"));
    }
}

#[test]
fn cmd_launches_get_no_rendering() {
    let cat = Catalog::builtin();
    for id in ["goose-windows-cmd", "cline-windows-cmd"] {
        let l = cat.get(id).unwrap();
        match outcome(l, "echo a\necho b") {
            Outcome::Refuse { reason, .. } => assert!(reason.contains(".cmd"), "{id}: {reason}"),
            o => panic!("{id}: {o:?}"),
        }
        let mut r = gen::Rng::new(77);
        for _ in 0..3000 {
            let s = gen::hostile_string(&mut r);
            for text in [s.clone(), format!("argvprobe \"{s}\"")] {
                if let Outcome::Deliver { repaired, call, .. } = outcome(l, &text) {
                    assert!(!repaired, "{id} {text:?} → {call}");
                    assert_eq!(call["command"], Value::String(text.clone()));
                }
            }
        }
    }
}

#[test]
fn powershell_hostile_arguments_arrive_intact_or_are_refused() {
    let n: usize = std::env::var("IEC_REPAIR_PS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8_000);
    let cat = Catalog::builtin();
    let ps: Vec<&Launch> = cat
        .iter()
        .filter(|l| l.windows.as_ref().is_some_and(|w| w.receiver == "powershell"))
        .collect();
    assert_eq!(ps.len(), 5, "PowerShell launches in the catalog");
    // New strings every UTC day (`IEC_ROTATION=K` repeats day K).
    let day = iec_testkit::rotation::start();
    eprintln!("strings of day {day} (IEC_ROTATION={day} repeats them)");
    let mut r = gen::Rng::new(0x5053 + day as u64);
    let (mut same, mut repaired, mut refused) = (0usize, 0usize, 0usize);
    let mut reasons = std::collections::BTreeMap::new();
    for i in 0..n {
        let s = gen::hostile_string(&mut r);
        // One argument, or three with an empty one (5.1 drops empty arguments).
        let (text, want) = if i % 2 == 0 {
            (format!("argvprobe {}", ps_quoted(&s)), vec![s.clone()])
        } else {
            (
                format!("argvprobe x {} ''", ps_quoted(&s)),
                vec!["x".to_string(), s.clone(), String::new()],
            )
        };
        for l in &ps {
            match outcome(l, &text) {
                Outcome::Deliver {
                    repaired: was,
                    call,
                    rendering,
                    ..
                } => {
                    let delivered = call["command"].as_str().unwrap();
                    let rep = check_text(l, delivered);
                    assert_eq!(
                        rep.verdict,
                        Verdict::Corresponds,
                        "{} {text:?} → {delivered:?}",
                        l.id
                    );
                    assert_eq!(
                        native_argv(&rep),
                        vec![want.clone()],
                        "{} {text:?} → {delivered:?}",
                        l.id
                    );
                    if was {
                        assert_eq!(rendering.as_deref(), Some("ps-stop-parsing"));
                        repaired += 1;
                    } else {
                        assert_eq!(delivered, text);
                        same += 1;
                    }
                }
                Outcome::Refuse { hop, reason } => {
                    assert!(!reason.contains("ansi-c-eval"), "{reason}");
                    // The rendering's own reason when there is one, else the reason's start.
                    let why = match reason.rsplit_once("), and ") {
                        Some((_, w)) => w,
                        None => reason.as_str(),
                    };
                    let class: String = why
                        .split(" (\"")
                        .next()
                        .unwrap_or_default()
                        .chars()
                        .take(100)
                        .collect();
                    *reasons
                        .entry(format!("{} {hop}: …{class}", l.id))
                        .or_insert(0usize) += 1;
                    refused += 1;
                }
            }
        }
    }
    println!(
        "{n} hostile strings × {} PowerShell launches: {same} delivered unchanged, {repaired} repaired \
         (ps-stop-parsing), {refused} refused; every delivered argv is the intended one",
        ps.len()
    );
    let mut top: Vec<_> = reasons.into_iter().collect();
    top.sort_by_key(|t| std::cmp::Reverse(t.1));
    for (class, count) in top.iter().take(12) {
        println!("  {count:>7}  {class}");
    }
    assert!(repaired > n / 10 && same > n / 10, "{same} {repaired} {refused}");
}

#[test]
fn typographic_quotes_are_not_judged_on_powershell() {
    // PowerShell ends `'don’t'` after `don` (’ is a single quote to its tokenizer); the grammar
    // used here would read one string. Not judged, and so not delivered.
    let cat = Catalog::builtin();
    for id in [
        "powershell51-native",
        "pwsh-native",
        "claude-code-powershell-windows",
    ] {
        let l = cat.get(id).unwrap();
        for (text, code) in [("git commit -m 'don’t'", "U+2019"), ("argvprobe “a b”", "U+201C")] {
            let rep = check_text(l, text);
            assert_eq!(rep.verdict, Verdict::Unknown, "{id} {text}");
            assert!(rep.reason.as_deref().unwrap().contains(code), "{:?}", rep.reason);
            match outcome(l, text) {
                Outcome::Refuse { hop, reason } => {
                    assert_eq!(hop, "tool-input");
                    assert!(reason.contains("delivers only what it can verify"), "{reason}");
                }
                o => panic!("{id} {text}: {o:?}"),
            }
        }
    }
    // A POSIX launch reads them as ordinary characters.
    let l = cat.get("bash-c").unwrap();
    assert_eq!(check_text(l, "echo 'don’t'").verdict, Verdict::Corresponds);
}

#[test]
fn git_bash_process_interface_gets_base64_eval() {
    // The MSYS2 runtime halves backslash runs inside quotes: `'a\\b'` would reach bash as
    // `'a\b'`. base64 text passes it untouched; real bash decodes and evals the same bytes.
    let cat = Catalog::builtin();
    let text = r"printf '%s|' 'a\\b' 'c\\\\d' *.none";
    let want = "eval \"$(base64 -d <<< cHJpbnRmICclc3wnICdhXFxiJyAnY1xcXFxkJyAqLm5vbmU=)\"";
    let run = |t: &str| {
        std::process::Command::new("bash")
            .args(["-c", t])
            .output()
            .unwrap()
            .stdout
    };
    for id in ["opencode-windows-git-bash", "claude-code-git-bash-windows"] {
        let l = cat.get(id).unwrap();
        let before = check_text(l, text);
        assert_eq!(before.verdict, Verdict::Diverges);
        assert_eq!(before.first_divergence.unwrap().hop_name, "spawn");
        match outcome(l, text) {
            Outcome::Deliver {
                repaired: true,
                hop,
                rendering,
                call,
                ..
            } => {
                assert_eq!(hop.as_deref(), Some("spawn"));
                assert_eq!(rendering.as_deref(), Some("base64-eval"));
                assert_eq!(call["command"], want);
                assert_eq!(check_text(l, want).verdict, Verdict::Corresponds);
                assert_eq!(run(want), b"a\\\\b|c\\\\\\\\d|*.none|");
                assert_eq!(run(want), run(text));
            }
            o => panic!("{id}: {o:?}"),
        }
        // `$(…)` would drop a trailing line break: refused instead.
        let t = format!("{text}\n");
        assert!(matches!(outcome(l, &t), Outcome::Refuse { hop, .. } if hop == "spawn"));
    }
}
