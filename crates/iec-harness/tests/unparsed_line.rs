//! Claude Code 2.1.332's "unparsed line" refusal (issues 17 and 19), against the real harness.
//!
//! From 2.1.317 on, Claude Code parses each Bash command with its own bash parser and asks for
//! approval, which bypassed permissions do not lift, when the parse's root is an `ERROR` node: a
//! text bash and zsh might read differently (`$$(` anywhere, even quoted; `$\` and a newline;
//! `[[(`; a reserved word after an assignment; …). Nothing runs; the tool result says "Claude
//! Code can't be sure it read this command the way the shell will …" (or, when the text looks
//! like `rm` or holds a `$'\x…'` escape, "This command could not be checked for dangerous rm
//! operations …"). `iec_launches::unparsed` models it; the launch `claude-code-2.1.332-linux`
//! names the rule (`[validate] refuse_unparsed_line`).
//!
//! Each payload below runs through the real 2.1.332 once (one harness launch, about 10 s) and
//! is asserted three ways: what the harness did (refused before any shell ran, or ran it with
//! the direct `bash -c` run's argv), what `iec check` predicts (a certain refusal is "diverges"
//! at `tool-input`; a shape the model knows only in part is `unknown`, attribution
//! `harness-refusal`; the rest "corresponds"), and that the two agree on every payload. Then
//! `iec repair` renders each certain refusal (`eval $'…'`), and those renderings run through
//! the real harness with the intended argv (a second launch).
//!
//! Skips like `tests/agreement.rs`: when the npm install fails and `IEC_SKIP_HARNESS=1` (or
//! `IEC_SKIP_NPM=1`) is set, it prints `SKIPPED: …` and passes.

mod support;

use iec_harness::agree::{agree, Payload};

/// What the real 2.1.332 does with a payload and what `iec check` says of it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Refused; predicted "diverges" at `tool-input` (the model's certain rules).
    Refused,
    /// Refused; predicted `unknown` (a shape the model marks as possible).
    RefusedUnknown,
    /// Runs, with the argv of the direct run; predicted "corresponds".
    Runs,
}

use Expect::{Refused, RefusedUnknown, Runs};

/// The payloads: each hits or misses one of the harness parser's flags (named in the id).
const CASES: &[(&str, &str, Expect)] = &[
    // `mDo = /\$\$[({[]/` anywhere in the text (`dollarOperandDiff`), whatever the quoting.
    ("dollar-operand-single", "argvprobe '$$(~$'", Refused),
    ("dollar-operand-paren", "argvprobe '$$('", Refused),
    ("dollar-operand-brace", "argvprobe '$${x}'", Refused),
    ("dollar-operand-bracket", "argvprobe 'a$$['", Refused),
    ("dollar-operand-ansi-c", "argvprobe $'$$('", Refused),
    ("dollar-operand-comment", "argvprobe x # $$(", Refused),
    ("dollar-operand-triple", "argvprobe '$$$(x'", Refused),
    ("dollar-operand-second", "argvprobe a; argvprobe '$$[b'", Refused),
    ("dollar-operand-list", "echo '$${HOME}' && argvprobe x", Refused),
    ("dollar-operand-pipe", "argvprobe '$${' | cat", Refused),
    // The same refusal with the rm message (`one`, `SLt` in `sSe`).
    ("dollar-operand-rm", "argvprobe rm -f '$$('", Refused),
    ("dollar-operand-ansi-escape", "argvprobe $'\\x41' '$$('", Refused),
    // `$\` and a newline (`zshBraceDiff`).
    ("dollar-continuation", "argvprobe \"$\\\nx\"", Refused),
    ("dollar-continuation-single", "argvprobe '$\\\n'", Refused),
    // `[[(` where a command starts (`zshCondParenDiff`).
    ("cond-paren", "[[(1 == 1)]] && argvprobe x", Refused),
    // Shapes the model marks as possible: a reserved word after an assignment or a redirection
    // (`keywordDesync`), an inner `{` in `${…}` (`zshBraceDiff`).
    (
        "keyword-after-assignment",
        "argvprobe a; x=1 fi 2>/dev/null; true",
        RefusedUnknown,
    ),
    (
        "keyword-after-redirection",
        "argvprobe a; >/dev/null done 2>/dev/null; true",
        RefusedUnknown,
    ),
    ("brace-inner-open", "argvprobe ${x:-{a}", RefusedUnknown),
    // Red team round 8: a backquote or a single quote where the parser's arithmetic grammar
    // wants an operand (`zshMathDiff`: the text it leaves fails `Rr`): in `$((…))`, an
    // arithmetic command, a `for ((…))` head, a `${x:…}` offset or length, a subscript.
    ("arith-backquote", "argvprobe $((`echo 1`+1))", Refused),
    ("arith-backquote-dq", "argvprobe \"$((`echo 1`+1))\"", Refused),
    (
        "arith-backquote-assign",
        "x=$((`echo 2`*3)); argvprobe \"$x\"",
        Refused,
    ),
    ("arith-backquote-spaced", "argvprobe $(( `echo 1` ))", Refused),
    (
        "arith-command-backquote",
        "((x=`echo 1`)); argvprobe \"$x\"",
        Refused,
    ),
    (
        "for-head-backquote",
        "for ((i=`echo 0`;i<1;i++)); do argvprobe \"$i\"; done",
        Refused,
    ),
    (
        "substring-backquote",
        "x=abc; argvprobe \"${x:`echo 1`}\"",
        Refused,
    ),
    (
        "substring-length-backquote",
        "x=abc; argvprobe ${x:1:`echo 1`}",
        Refused,
    ),
    (
        "assoc-subscript-quote",
        "declare -A m=([k]=v); argvprobe \"${m['k']}\"",
        Refused,
    ),
    (
        "arith-subscript-quote",
        "declare -A m=([k]=1); argvprobe $((m['k']+1))",
        Refused,
    ),
    (
        "arith-command-subscript-quote",
        "declare -A m=([k]=1); ((m['k']++)); argvprobe \"${m[k]}\"",
        Refused,
    ),
    // `((` after a word that is not a reserved word: read as zsh would (the model: possible).
    ("arith-after-time", "time ((1)); argvprobe x", RefusedUnknown),
    // Their neighbours that run (before: `unknown`, or not told apart).
    (
        "for-arith",
        "for ((i=0;i<2;i++)); do :; done; argvprobe \"$i\"",
        Runs,
    ),
    (
        "for-arith-spaced",
        "for (( i=0 ; i<2 ; i++ )) ; do argvprobe \"$i\"; done",
        Runs,
    ),
    (
        "while-process-substitution",
        "while read l; do argvprobe \"$l\"; done < <(echo a)",
        Runs,
    ),
    (
        "while-process-substitution-redirect",
        "while read -r l; do argvprobe \"$l\"; done < <(printf '%s\\n' a b) > /dev/null",
        Runs,
    ),
    ("if-arith", "if ((1 < 2)); then argvprobe y; fi", Runs),
    (
        "while-arith",
        "x=0; while ((x < 2)); do ((x++)); done; argvprobe \"$x\"",
        Runs,
    ),
    ("negated-arith", "! ((0)) && argvprobe y", Runs),
    ("group-arith", "{ ((1)); } && argvprobe y", Runs),
    (
        "substring-plain",
        "x=abc; argvprobe \"${x:1:1}\" ${x: -1} ${x:(-2)}",
        Runs,
    ),
    (
        "assoc-subscript-dq",
        "declare -A m=([k]=v); argvprobe \"${m[\"k\"]}\" \"${m[k]}\"",
        Runs,
    ),
    ("default-backquote", "argvprobe ${x:-`echo a`}", Runs),
    (
        "arith-forms",
        "argvprobe $((16#ff)) $((1<<2)) $[2**3] $((1 + 2))",
        Runs,
    ),
    // Near misses that run.
    ("subst-open", "argvprobe '$(x'", Runs),
    ("arith-quoted", "argvprobe \"$((2*3))\"", Runs),
    ("dollar-space-paren", "argvprobe '$$ ('", Runs),
    ("dollar-alone", "argvprobe '$$' '('", Runs),
    ("bracket-open", "argvprobe '$[1'", Runs),
    ("bracket-arith", "argvprobe $[1+2]", Runs),
    ("bracket-arith-dq", "argvprobe \"$[1+2]\"", Runs),
    ("brace-default-quoted", "argvprobe \"${x:-'a b'}\"", Runs),
    ("backquote-arith", "argvprobe `echo $((1+2))`", Runs),
    ("cond-space-paren", "[[ (1 == 1) ]] && argvprobe x", Runs),
    ("keyword-argument", "x=1 argvprobe if", Runs),
    ("assignment-argument", "argvprobe x=1 done", Runs),
    ("escaped-dollars", "argvprobe \\$\\$\\(", Runs),
    ("escaped-dollars-quoted", "argvprobe '\\$\\$\\('", Runs),
    ("rm-word", "argvprobe 'rm -rf $$'", Runs),
    ("ansi-c-escape", "argvprobe $'a\\x41'", Runs),
    ("brace-open-quoted", "argvprobe '${x'", Runs),
    ("arith-command", "((1)) && argvprobe x", Runs),
    ("function-subst-text", "f() { argvprobe \"$@\"; }; f '$('", Runs),
    // Red team round 10: the text after a redirection in a simple command is no comment to the
    // parser's flag scan; `$((` or `$[` in a `<<\E` body; a reserved word after an assignment
    // whose value holds a quoted blank, an array or `$(…)` (all were "corresponds").
    (
        "comment-after-redirection",
        "argvprobe a > /dev/null # $(( 'x' ))\nargvprobe b",
        Refused,
    ),
    (
        "comment-after-redirection-word",
        "argvprobe a > f b # $(( 'x' ))\nargvprobe b",
        Refused,
    ),
    (
        "heredoc-backslash",
        "cat <<\\E\n$((1+2))\nE\nargvprobe x",
        Refused,
    ),
    (
        "keyword-quoted-prefix",
        "x=\"a b\" done; argvprobe x",
        RefusedUnknown,
    ),
    (
        "keyword-subst-prefix",
        "x=$(echo a b) done; argvprobe x",
        RefusedUnknown,
    ),
    (
        "keyword-array-prefix",
        "x=(a b) done; argvprobe x",
        RefusedUnknown,
    ),
    (
        "keyword-in-subst",
        "echo $(x=\"a b\" done; argvprobe x)",
        RefusedUnknown,
    ),
    (
        "comment-after-redirection-brace",
        "argvprobe a > f # ${x y}\nargvprobe b",
        RefusedUnknown,
    ),
    (
        "comment-after-here-string",
        "argvprobe a <<< x # $(( 'x' ))\nargvprobe b",
        Runs,
    ),
    (
        "comment-after-group",
        "{ argvprobe a; } > f # $(( 'x' ))\nargvprobe b",
        Runs,
    ),
    (
        "comment-after-separator",
        "argvprobe a > f; # $(( 'x' ))\nargvprobe b",
        Runs,
    ),
    (
        "heredoc-single-quoted",
        "cat <<'E'\n$((1+2))\nE\nargvprobe x",
        Runs,
    ),
];

#[test]
fn unparsed_line_refusals_agree_with_real_claude_code() {
    let refused = CASES.iter().filter(|c| c.2 != Runs).count();
    assert!(
        CASES.len() >= 30 && 2 * refused >= CASES.len() - 1,
        "{refused}/{}",
        CASES.len()
    );
    if support::claude_code("2.1.332").is_none() {
        return;
    }
    let payloads: Vec<Payload> = CASES
        .iter()
        .map(|(id, command, _)| Payload {
            id: (*id).into(),
            command: (*command).into(),
        })
        .collect();
    let rep = agree(&support::spec("2.1.332"), "claude-code-2.1.332-linux", &payloads).expect("agree run");
    assert_eq!(rep.results.len(), CASES.len());
    let mut failures = Vec::new();
    for ((id, command, expect), a) in CASES.iter().zip(&rep.results) {
        assert_eq!(a.id, *id);
        let observed = a.observed["verdict"].as_str().unwrap_or("?");
        let hop = a.observed["first_divergence"]["hop_name"].as_str();
        let result = a.observed["tool_result"]["content"].as_str().unwrap_or("");
        let harness_ok = match expect {
            Refused | RefusedUnknown => {
                observed == "diverges"
                    && hop == Some("tool-input")
                    && result.contains("This requires explicit approval.")
                    && a.observed["received"]["outer"].is_null()
            }
            Runs => observed == "corresponds",
        };
        if !harness_ok {
            failures.push(format!(
                "{id} {command:?}: the real harness did not do what this test says ({expect:?}): {}",
                a.observed
            ));
        }
        let predicted = a.predicted["verdict"].as_str().unwrap_or("?");
        let check_ok = match expect {
            Refused => {
                predicted == "diverges"
                    && a.predicted["first_divergence"]["hop_name"] == "tool-input"
                    && a.predicted["first_divergence"]["silent"] == false
            }
            RefusedUnknown => {
                predicted == "unknown"
                    && a.predicted["reason"]
                        .as_str()
                        .is_some_and(|r| r.contains("the harness may refuse the call"))
            }
            Runs => predicted == "corresponds",
        };
        if !check_ok {
            failures.push(format!(
                "{id} {command:?}: iec check predicted {} ({expect:?} expected)",
                a.predicted
            ));
        }
        if !a.verdict_agree {
            failures.push(format!(
                "{id} {command:?}: predicted {predicted}, observed {observed}"
            ));
        }
    }
    eprintln!(
        "claude-code 2.1.332: {} payloads ({refused} refused by the harness), {} agree",
        rep.results.len(),
        rep.totals["agree"]
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    repairs_of_refused_calls_run(&rep);
}

/// The harness parses no command longer than 10,000 UTF-16 code units (`pj`, `Ct = 1e4`):
/// `argvprobe '$$(' '…'` is refused at 10,000 and runs at 10,001 (the model said "diverges" at
/// any length before round 8).
#[test]
fn parse_limit_agrees_with_real_claude_code() {
    if support::claude_code("2.1.332").is_none() {
        return;
    }
    let text = |n: usize| {
        let head = "argvprobe '$$(' '";
        format!("{head}{}'", "x".repeat(n - head.len() - 1))
    };
    let limit = iec_launches::unparsed::PARSE_LIMIT;
    let payloads = vec![
        Payload {
            id: "parse-limit-at".into(),
            command: text(limit),
        },
        Payload {
            id: "parse-limit-over".into(),
            command: text(limit + 1),
        },
    ];
    let rep = agree(&support::spec("2.1.332"), "claude-code-2.1.332-linux", &payloads).expect("agree run");
    let verdicts: Vec<(&str, &str, bool)> = rep
        .results
        .iter()
        .map(|a| {
            (
                a.observed["verdict"].as_str().unwrap_or("?"),
                a.predicted["verdict"].as_str().unwrap_or("?"),
                a.verdict_agree,
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("diverges", "diverges", true),
            ("corresponds", "corresponds", true)
        ],
        "{:?}",
        rep.results
            .iter()
            .map(|a| &a.observed["tool_result"])
            .collect::<Vec<_>>()
    );
}

/// IntAct (`iec repair`) on each call the model says the harness refuses: the rendering it
/// delivers (`eval $'…'`, no `$$(` left in the text) runs through the real 2.1.332 and hands the
/// probe the argv of the direct `bash -c` run of the original call.
fn repairs_of_refused_calls_run(rep: &iec_harness::agree::AgreeReport) {
    let launch = iec_launches::Catalog::builtin()
        .get("claude-code-2.1.332-linux")
        .expect("launch")
        .clone();
    let mut payloads = Vec::new();
    for ((id, command, expect), a) in CASES.iter().zip(&rep.results) {
        if *expect != Refused {
            continue;
        }
        let call = iec_check::call_for_text(&launch, command);
        match iec_repair::repair(&launch, &call, iec_witness::global()).expect("repair") {
            iec_repair::Outcome::Deliver {
                repaired: true, call, ..
            } => payloads.push((
                Payload {
                    id: format!("repaired-{id}"),
                    command: call["command"].as_str().expect("a command").into(),
                },
                a.observed["direct"]["probe"].clone(),
            )),
            other => panic!("{id} {command:?}: iec repair did not deliver a rendering: {other:?}"),
        }
    }
    assert!(payloads.len() >= 10, "{}", payloads.len());
    for (p, _) in &payloads {
        assert!(
            iec_launches::unparsed::unparsed_line(&p.command).is_none(),
            "{}: the repair still holds what the harness refuses: {:?}",
            p.id,
            p.command
        );
    }
    let sent: Vec<Payload> = payloads.iter().map(|(p, _)| p.clone()).collect();
    let runs = agree(&support::spec("2.1.332"), "claude-code-2.1.332-linux", &sent).expect("agree run");
    let mut failures = Vec::new();
    for ((p, want), a) in payloads.iter().zip(&runs.results) {
        let ran = a.observed["verdict"] == "corresponds" && a.predicted["verdict"] == "corresponds";
        if !ran || a.observed["received"]["probe"] != *want {
            failures.push(format!(
                "{} {:?}: the harness gave {} (want the probe argv {want}); predicted {}",
                p.id, p.command, a.observed, a.predicted
            ));
        }
    }
    eprintln!(
        "claude-code 2.1.332: {} repaired refusals run, {} with the intended argv",
        payloads.len(),
        payloads.len() - failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
