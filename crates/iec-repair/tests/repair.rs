//! IntAct never delivers a changed call: for generated and hazardous texts on every launch,
//! `repair` refuses or delivers a call whose check corresponds, and whose rendering real bash
//! decodes back to the emitted bytes. IEC_REPAIR_CASES sets the generated count (default 1200).

use iec_check::{call_for_text, check, Options};
use iec_core::{Call, Verdict};
use iec_launches::Catalog;
use iec_repair::{repair, Outcome};
use iec_testkit::{gen, par};
use iec_witness::global;

fn run_real(argv: &[&str]) -> Vec<u8> {
    std::process::Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .unwrap()
        .stdout
}

#[test]
fn named_cases() {
    let cat = Catalog::builtin();
    let out = |id: &str, t: &str| {
        repair(
            cat.get(id).unwrap(),
            &call_for_text(cat.get(id).unwrap(), t),
            global(),
        )
        .unwrap()
    };
    // 2.1.72's \! is repaired with ANSI-C text.
    match out("claude-code-2.1.72-linux", "printf '%s' 'a != b'") {
        Outcome::Deliver {
            repaired: true,
            hop,
            rendering,
            call,
            check,
        } => {
            assert_eq!(hop.as_deref(), Some("eval"));
            assert_eq!(rendering.as_deref(), Some("ansi-c-eval"));
            assert_eq!(
                call["command"],
                "eval $'printf \\x27\\x25s\\x27 \\x27a \\x21= b\\x27'"
            );
            assert_eq!(check.unwrap().verdict, Verdict::Corresponds);
        }
        o => panic!("{o:?}"),
    }
    // Correspondence: delivered unchanged, other input fields kept.
    let l = cat.get("claude-code-2.1.332-linux").unwrap();
    let call = Call {
        tool: "Bash".into(),
        input: serde_json::json!({"command": "ls -la", "timeout": 5000, "description": "list"}),
    };
    match repair(l, &call, global()).unwrap() {
        Outcome::Deliver {
            repaired: false,
            call: c,
            ..
        } => assert_eq!(c, call.input),
        o => panic!("{o:?}"),
    }
    // 2.1.332's CR rejection: the CR is written visibly as \x0d.
    match out("claude-code-2.1.332-linux", "printf a\r\nprintf b") {
        Outcome::Deliver {
            repaired: true, call, ..
        } => assert_eq!(call["command"], "eval $'printf a\\x0d\\x0aprintf b'"),
        o => panic!("{o:?}"),
    }
    // Harness policy and generation errors are refused, with a reason.
    assert!(
        matches!(out("gemini-cli-linux", "echo \"$(date)\""), Outcome::Refuse { hop, .. } if hop == "tool-input")
    );
    assert!(matches!(out("bash-c", "echo 'x"), Outcome::Refuse { .. }));
    match out("claude-code-2.1.332-linux", "grep -r TODO .") {
        Outcome::Refuse { hop, reason } => {
            assert_eq!(hop, "program");
            assert!(reason.contains("command grep"), "{reason}");
        }
        o => panic!("{o:?}"),
    }
    // Red team round 7: `set -e` inside the wrapper's `&&` list is off, in `eval $'…'` too:
    // refused, never delivered as a call that keeps running after a failure.
    match out("claude-code-2.1.72-linux", "set -e; false; echo after") {
        Outcome::Refuse { hop, reason } => {
            assert_eq!(hop, "wrapper");
            assert!(reason.contains("`set -e`"), "{reason}");
        }
        o => panic!("{o:?}"),
    }
    // dash: the bash-only text is handed to bash.
    match out("sh-c", "echo {a,b}") {
        Outcome::Deliver {
            repaired: true,
            rendering,
            call,
            ..
        } => {
            assert_eq!(rendering.as_deref(), Some("bash-c"));
            assert_eq!(call["command"], "bash -c 'echo {a,b}'");
            // Real dash runs the repaired text and prints what bash would.
            assert_eq!(
                run_real(&["dash", "-c", call["command"].as_str().unwrap()]),
                b"a b\n"
            );
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn repaired_2_1_72_call_reaches_the_program_intact_through_the_real_wrapper() {
    // The wrapper 2.1.72 builds for the repaired text, run by real bash with a probe: the probe
    // receives the original argument bytes. (The snapshot path does not exist: `source` fails
    // loudly in 2.1.72's `&&` chain, so the test sources /dev/null instead.)
    let cat = Catalog::builtin();
    let l = cat.get("claude-code-2.1.72-linux").unwrap();
    let probe = env!("CARGO_BIN_EXE_iec-repair-probe");
    for arg in [
        "a != b",
        "x ! y",
        "M\\\\N",
        "$HOME",
        "it's",
        "\"q\"",
        "tab\there",
        "é 🦀",
        // SOH: refused once ("did not decode"), when the expansion witness split words on it.
        "a\u{1} != b",
        "\u{1}\u{1}!",
    ] {
        let text = format!("{probe} {}", iec_repair::single_quoted(arg));
        let Outcome::Deliver { call, .. } = repair(l, &call_for_text(l, &text), global()).unwrap() else {
            panic!("{arg}")
        };
        let cmd = call["command"].as_str().unwrap();
        let w = l.wrapper.as_ref().unwrap();
        let p = iec_launches::render::payload(&w.payload, cmd, w.stdin_suffix.as_deref());
        let wrapper = iec_launches::render::fill(&w.template, &p.words)
            .replace(iec_launches::render::SNAPSHOT_PATH, "/dev/null")
            .replace("/tmp/claude-0a1b-cwd", "/dev/null");
        let out = run_real(&["bash", "-c", &wrapper]);
        let got: Vec<String> = serde_json::from_slice::<serde_json::Value>(&out).unwrap()["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, vec![arg.to_string()], "{text}");
    }
}

#[test]
fn never_delivers_a_changed_call() {
    let n: usize = std::env::var("IEC_REPAIR_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1200);
    // The terminal launches type each text into a real tmux session (about 0.3 s a text, the
    // rest of the launches together take less): they get every `IEC_REPAIR_TERMINAL_EVERY`-th
    // text (default 10).
    let terminal_every: usize = std::env::var("IEC_REPAIR_TERMINAL_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
        .max(1);
    let cat = Catalog::builtin();
    let launches = iec_testkit::rotation::launches_under_test(&cat);
    // New texts every UTC day: the seed moves with the rotation (`IEC_ROTATION=K` repeats day K).
    let day = iec_testkit::rotation::start();
    eprintln!("texts of day {day} (IEC_ROTATION={day} repeats them)");
    let mut r = gen::Rng::new(4242 + day as u64);
    let texts: Vec<(usize, String)> = (0..n)
        .map(|i| {
            let text = if i % 3 == 0 {
                gen::adversarial(&mut r, "/nonexistent", "IECREPAIR", 9)
            } else {
                gen::script(&mut r)
            };
            (i, text)
        })
        .collect();
    // The texts are independent: one slice per core (the same texts on any number of cores).
    let counts = par::shards(&texts, |_, texts| {
        let (mut delivered, mut repaired, mut refused) = (0, 0, 0);
        for (i, text) in texts {
            for l in launches.iter().copied() {
                if l.terminal.is_some() && i % terminal_every != 0 {
                    continue;
                }
                let call = call_for_text(l, text);
                match repair(l, &call, global()).unwrap() {
                    Outcome::Deliver {
                        repaired: was,
                        call: input,
                        ..
                    } => {
                        let c = Call {
                            tool: call.tool.clone(),
                            input,
                        };
                        let mut rep = check(l, &c, global(), Options::default()).unwrap();
                        // A terminal launch's witness types into real tmux: under a heavy load
                        // (seen at load 8 on 2 cores, never alone) its check came out otherwise
                        // once; it is checked a second time, and the first outcome printed.
                        if l.terminal.is_some() && rep.verdict != Verdict::Corresponds {
                            eprintln!(
                                "terminal re-check of {} {text:?}: first {} {:?} {:?}",
                                l.id,
                                rep.verdict.as_str(),
                                rep.first_divergence.as_ref().map(|f| &f.detail),
                                rep.reason
                            );
                            rep = check(l, &c, global(), Options::default()).unwrap();
                        }
                        assert_eq!(
                            rep.verdict,
                            Verdict::Corresponds,
                            "{} {text:?} → {:?}: {:?} {:?}",
                            l.id,
                            c.input,
                            rep.first_divergence.as_ref().map(|f| &f.detail),
                            rep.reason
                        );
                        delivered += 1;
                        repaired += was as usize;
                    }
                    Outcome::Refuse { reason, .. } => {
                        assert!(!reason.is_empty());
                        refused += 1
                    }
                }
            }
        }
        (delivered, repaired, refused)
    });
    let (delivered, repaired, refused) = counts
        .into_iter()
        .fold((0, 0, 0), |a, c| (a.0 + c.0, a.1 + c.1, a.2 + c.2));
    println!("{n} texts × {} launches (terminal launches: every {terminal_every}th text): {delivered} delivered ({repaired} repaired), {refused} refused, 0 changed calls delivered", launches.len());
    assert!(repaired > 0 && refused > 0);
}
