//! Launch behaviour, as a table: call × launch → verdict, hop, kind, mechanism, silence. Each row
//! cites the fact it pins (docs/spec section or observation).

use iec_core::{Call, HopKind, Mechanism, Verdict};
use iec_launches::Catalog;
use iec_protocol::{call_for_text, check, Options};
use iec_witness::global;
use serde_json::json;

#[derive(Debug)]
enum Want {
    Corresponds,
    Diverges {
        hop: &'static str,
        kind: HopKind,
        mechanism: Mechanism,
        silent: bool,
    },
    Unknown,
}
use Want::*;

fn d(hop: &'static str, kind: HopKind, mechanism: Mechanism, silent: bool) -> Want {
    Diverges {
        hop,
        kind,
        mechanism,
        silent,
    }
}

/// A report names the launch's planned hops, in plan order, and stops only where one diverged:
/// hop names and kinds come from one place (`iec_core::Hop`, `Launch::plan`).
fn follows_the_plan(l: &iec_launches::Launch, r: &iec_core::CheckReport, ctx: &str) {
    let plan: Vec<(&str, HopKind)> = l.plan().iter().map(|h| (h.name(), h.kind())).collect();
    let got: Vec<(&str, HopKind)> = r.hops.iter().map(|h| (h.name.as_str(), h.kind)).collect();
    match r.verdict {
        Verdict::Corresponds => assert_eq!(got, plan, "{ctx}"),
        Verdict::Diverges => {
            assert!(plan.starts_with(&got), "{ctx}");
            // Hops after the first divergence may be shown, not judged.
            let fd = r.first_divergence.as_ref().unwrap().hop;
            assert_eq!(r.hops[fd].corresponds, Some(false), "{ctx}");
            assert!(r.hops[fd + 1..].iter().all(|h| h.corresponds.is_none()), "{ctx}");
        }
        Verdict::Unknown => assert!(plan.starts_with(&got), "{ctx}"),
    }
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
            follows_the_plan(
                l,
                &r,
                &format!("{} {t:?}: {}", l.id, serde_json::to_string_pretty(&r).unwrap()),
            );
        }
    }
}

fn run(launch: &str, call: Call, want: Want) {
    let cat = Catalog::builtin();
    let l = cat.get(launch).unwrap();
    let r = check(l, &call, global(), Options::default()).unwrap();
    let ctx = format!(
        "{launch} {:?}: {}",
        call.input,
        serde_json::to_string_pretty(&r).unwrap()
    );
    follows_the_plan(l, &r, &ctx);
    match want {
        Corresponds => {
            assert_eq!(r.verdict, Verdict::Corresponds, "{ctx}");
            assert!(r.first_divergence.is_none());
        }
        Unknown => {
            assert_eq!(r.verdict, Verdict::Unknown, "{ctx}");
            assert!(r.reason.is_some() && r.first_divergence.is_none());
        }
        Diverges {
            hop,
            kind,
            mechanism,
            silent,
        } => {
            assert_eq!(r.verdict, Verdict::Diverges, "{ctx}");
            let fd = r.first_divergence.as_ref().unwrap();
            assert_eq!(
                (fd.hop_name.as_str(), fd.kind, fd.mechanism, fd.silent),
                (hop, kind, mechanism, silent),
                "{ctx}"
            );
            assert_eq!(r.hops[fd.hop].corresponds, Some(false));
            assert!(r.hops[..fd.hop].iter().all(|h| h.corresponds != Some(false)));
        }
    }
}

fn text(launch: &str, t: &str, want: Want) {
    let cat = Catalog::builtin();
    let call = call_for_text(cat.get(launch).unwrap(), t);
    run(launch, call, want)
}

#[test]
fn claude_code_2_1_72_escapes_bang_inside_quotes() {
    // docs/spec/claude-code.md §7.2 (observed): 'a != b' arrives as a \!= b; silent.
    text(
        "claude-code-2.1.72-linux",
        "printf '%s' 'a != b'",
        d("eval", HopKind::EvalParse, Mechanism::ReExpansion, true),
    );
    text(
        "claude-code-2.1.72-linux",
        "argvprobe 'a != b' \"x ! y\" 'M\\\\N' '$HOME'",
        d("eval", HopKind::EvalParse, Mechanism::ReExpansion, true),
    );
    // Without a single quote shell-quote takes its single-quote branch: intact (§1.4 branch 1).
    text(
        "claude-code-2.1.72-linux",
        "printf \"%s\" \"a != b\"",
        Corresponds,
    );
    // Heredocs are single-quoted for eval (§1.3 step 2).
    text(
        "claude-code-2.1.72-linux",
        "cat <<'EOF'\nit's != ok\nEOF",
        Corresponds,
    );
    // Piped commands are re-tokenised by shell-quote parse(), which empties $$ (§1.3, CC#32879).
    text(
        "claude-code-2.1.72-linux",
        "echo \"PID=$$\" | cat",
        d("wrapper", HopKind::Wrapper, Mechanism::ReExpansion, true),
    );
    // A stdin redirect appended as `\<` joins the last command: neutral under the contract.
    text("claude-code-2.1.72-linux", "ls -la", Corresponds);
    text("claude-code-2.1.72-linux", "cd /tmp && ls", Corresponds);
}

#[test]
fn claude_code_2_1_332_single_quotes_and_rejects_control_characters() {
    // §7.1 (observed): '!' intact; CR rejected before any shell runs (loud).
    text("claude-code-2.1.332-linux", "printf '%s' 'a != b'", Corresponds);
    text(
        "claude-code-2.1.332-linux",
        "argvprobe 'a != b' \"x ! y\" 'M\\\\N' '$HOME' $'x\\ty'",
        Corresponds,
    );
    text(
        "claude-code-2.1.332-linux",
        "argvprobe a\r\nargvprobe b",
        d("tool-input", HopKind::StructuredDecode, Mechanism::Other, false),
    );
    text("claude-code-2.1.332-linux", "cat <<'EOF'\nit's\nEOF", Corresponds);
    // §1.7: grep, find and rg are snapshot functions (program substitution, silent), judged by
    // the rows of launches/substitutes/claude-code-2.1.332.toml: a recursive search differs
    // (ignore files, binary files, `./`), a word matching -Z makes the function run the real
    // grep, rg has no rows.
    text(
        "claude-code-2.1.332-linux",
        "grep -rl TODO . | xargs wc -l",
        d("program", HopKind::ChildArgv, Mechanism::Other, true),
    );
    text(
        "claude-code-2.1.332-linux",
        "grep -rlZ TODO . | xargs -0 wc -l",
        Corresponds,
    );
    text("claude-code-2.1.332-linux", "grep -c TODO notes.txt", Corresponds);
    text("claude-code-2.1.332-linux", "grep -P 'a\\d' notes.txt", Unknown);
    text(
        "claude-code-2.1.332-linux",
        "find . -name '*.rs'",
        d("program", HopKind::ChildArgv, Mechanism::Other, true),
    );
    text(
        "claude-code-2.1.332-linux",
        "find . -name '*.rs' | sort",
        Corresponds,
    );
    text(
        "claude-code-2.1.332-linux",
        "rg TODO",
        d("program", HopKind::ChildArgv, Mechanism::Other, true),
    );
    text("claude-code-2.1.332-linux", "command grep -r TODO .", Corresponds);
    text(
        "claude-code-2.1.332-linux",
        "/usr/bin/grep -r TODO .",
        Corresponds,
    );
    text(
        "claude-code-2.1.332-linux",
        "ls | xargs grep -l TODO",
        Corresponds,
    );
}

#[test]
fn control_paths() {
    for t in [
        "printf '%s' 'a != b'",
        "echo \"PID=$$\" | cat",
        "cat <<'EOF'\nx\nEOF",
        "printf a\r\nprintf b",
    ] {
        text("bash-c", t, Corresponds);
        text("goose-linux", t, Corresponds);
        text("opencode-linux", t, Corresponds);
    }
    text("bash-c", "echo 'unterminated", Unknown);
    text("bash-c", "fi", Unknown);
    // A trailing backslash parses only at the end of input; bash -c takes it as it is.
    text("bash-c", "echo foo \\", Corresponds);
}

#[test]
fn dash_as_sh() {
    // docs/spec/harnesses.md §17: dash has no arrays, [[, {a,b}, $'…', <<<.
    text("sh-c", "echo hi | wc -c", Corresponds);
    text(
        "sh-c",
        "a=(1 2)",
        d("shell", HopKind::ShellParse, Mechanism::Other, false),
    );
    text(
        "sh-c",
        "cat <<< x",
        d("shell", HopKind::ShellParse, Mechanism::Other, false),
    );
    text(
        "sh-c",
        "echo {a,b}.txt",
        d("shell", HopKind::ShellParse, Mechanism::ArityChange, true),
    );
    text(
        "sh-c",
        "printf $'a\\tb'",
        d("shell", HopKind::ShellParse, Mechanism::Other, true),
    );
    text(
        "sh-c",
        "[[ -n x ]] && echo y",
        d("shell", HopKind::ShellParse, Mechanism::Other, false),
    );
    // Patterns real dash reads otherwise than bash 5.2 (run here in an empty directory): `.?`
    // matches `..` in dash only; `[^a]` is "^ or a" in dash, "not a" in bash.
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

#[test]
fn gemini_cli() {
    // docs/spec/harnesses.md §3.2: command substitution refused (loud); bash -c wrapper stripped.
    text(
        "gemini-cli-linux",
        "echo \"today $(date)\"",
        d("tool-input", HopKind::StructuredDecode, Mechanism::Other, false),
    );
    text("gemini-cli-linux", "echo '$(not substituted)'", Corresponds);
    text(
        "gemini-cli-linux",
        "bash -c 'echo $0 $1' x y",
        d("harness-rewrite", HopKind::Wrapper, Mechanism::Other, true),
    );
    text("gemini-cli-linux", "cat <<'EOF'\nx\nEOF", Corresponds);
    // §3.3: a trailing backslash gets a space: the last argument becomes " ".
    text(
        "gemini-cli-linux",
        "echo foo \\",
        d("harness-rewrite", HopKind::Wrapper, Mechanism::Other, true),
    );
    text("gemini-cli-linux", "printf '%s' 'a != b'", Corresponds);
}

#[test]
fn argv_launches() {
    let argv = |a: &[&str]| Call {
        tool: "x".into(),
        input: json!({ "command": a }),
    };
    run(
        "codex-shell-linux",
        argv(&["bash", "-lc", "printf '%s' 'a != b'"]),
        Corresponds,
    );
    run(
        "codex-shell-linux",
        argv(&["argvprobe", "a b", "$HOME"]),
        Corresponds,
    );
    run("codex-shell-linux", argv(&["bash", "-lc", "echo 'x"]), Unknown);
    // docs/spec/harnesses.md §13, V17: mcp-shell-server joins argv with spaces for /bin/sh -c.
    run("mcp-shell-server", argv(&["ls", "-la"]), Corresponds);
    run(
        "mcp-shell-server",
        argv(&["echo", "a b"]),
        d("shell", HopKind::ShellParse, Mechanism::ArityChange, true),
    );
    run(
        "mcp-shell-server",
        argv(&["echo", "$HOME"]),
        d("shell", HopKind::ShellParse, Mechanism::ReExpansion, true),
    );
    run(
        "mcp-shell-server",
        argv(&["echo", "it's"]),
        d("shell", HopKind::ShellParse, Mechanism::QuoteConsumption, false),
    );
    // An element with an unquoted pattern is matched against the working directory by dash.
    // `.?` is `..` in every directory (dash does not skip `.` and `..`; bash 5.2 does): the
    // 10^6 repair run delivered `["PROBE", ".?"]` as corresponding and the probe got `..`.
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
    // Brackets that cannot form a pattern stay literal.
    run("mcp-shell-server", argv(&["echo", "[", "a]", "]["]), Corresponds);
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

#[test]
fn a_text_starting_with_a_dash_is_read_as_shell_options() {
    // Observed with real bash and dash: `bash -c '-- echo hi'` → `--: invalid option`.
    for launch in ["bash-c", "sh-c", "goose-linux"] {
        text(
            launch,
            "-x echo hi",
            d("spawn", HopKind::ProcessInterface, Mechanism::Other, false),
        );
        text(
            launch,
            "+x echo hi",
            d("spawn", HopKind::ProcessInterface, Mechanism::Other, false),
        );
    }
    let argv = Call {
        tool: "x".into(),
        input: json!({ "command": ["--", "sh", "commit"] }),
    };
    run(
        "mcp-shell-server",
        argv,
        d("spawn", HopKind::ProcessInterface, Mechanism::Other, false),
    );
    // The real shells agree that nothing runs.
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

#[test]
fn openhands_refuses_more_than_one_top_level_statement() {
    // Shared spec §5.1 (terminal_session.py: `len(split_bash_commands(command)) > 1` → error;
    // bashlex makes one node per complete command on its own line). Loud: the agent gets the
    // error text. One statement is typed; a complete here-document is part of its statement.
    // Rows whose one statement still changes on the way (tmux/escape hops) are in tmux_launches.rs.
    let refused = || d("tool-input", HopKind::StructuredDecode, Mechanism::Other, false);
    for (t, want) in [
        ("echo a\necho b", refused()),
        ("cat <<EOF\nx\nEOF\nls", refused()),
        ("ls &&\necho b\n  pwd", refused()),
        ("echo a; echo b", Corresponds),
        ("echo a && echo b", Corresponds),
        ("cat <<EOF\nx\nEOF", Corresponds),
        ("if true\nthen echo x\nfi", Corresponds),
        ("echo 'a\nb'", Corresponds),
        ("ls # c\n# d\n", Corresponds),
        ("ls &&\necho b", Corresponds),
    ] {
        text("openhands-tmux", t, want);
    }
    // The offset names where the second statement starts.
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
    // bash parses the text as emitted.
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
    // A bare {"command": …} is accepted too.
    run(
        "codex-exec-command-linux",
        Call {
            tool: "exec_command".into(),
            input: json!({"command": "cat <<'E'\nx $y\nE"}),
        },
        Corresponds,
    );
    text("codex-exec-command-linux", "echo 'open", Unknown);
}

/// `iec harness learn --harness claude-code@2.0.76` wrote `argv = ["/bin/bash", "-c", "-l",
/// "{{wrapper}}"]` (what 2.0.76 really runs: bash accepts options after `-c`); the spawn hop
/// read `-l` as the command text and called every call "diverges, loud: invalid option".
#[test]
fn options_after_dash_c_are_read_as_bash_reads_them() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../launches/claude-code-2.1.72-linux.toml"
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
