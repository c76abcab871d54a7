//! Regressions (red team round 8) on claude-code-2.1.332-linux, whose snapshot defines `grep`,
//! `find`, `rg` and `pkill` as functions. The expected verdicts come from real runs: the same
//! texts run through the real Claude Code 2.1.332 and with `bash -c`
//! (`shadowed_names_reached_otherwise_red_team_round8` in crates/iec-harness/tests/substitution.rs),
//! and the substitution table's rows, each shown with GNU grep/find and the embedded ugrep/bfs.

use iec_check::{call_for_text, check, Options};
use iec_core::{CheckReport, Verdict};
use iec_launches::Catalog;
use iec_witness::global;

fn report(text: &str) -> CheckReport {
    let cat = Catalog::builtin();
    let l = cat.get("claude-code-2.1.332-linux").unwrap();
    check(l, &call_for_text(l, text), global(), Options::default()).unwrap()
}

/// A text, its verdict, and the substitution that decides it: (named, behaviour).
type Case<'a> = (&'a str, Verdict, Option<(&'a str, &'a str)>);

fn expect(cases: &[Case]) {
    let mut bad = Vec::new();
    for (text, verdict, sub) in cases {
        let r = report(text);
        let decided = r
            .substitutions
            .iter()
            .find(|s| s.behaviour != "same")
            .map(|s| (s.named.as_str(), s.behaviour.as_str()));
        if r.verdict != *verdict || decided != *sub {
            bad.push(format!(
                "`{text}`: {:?} with {decided:?}, want {verdict:?} with {sub:?}",
                r.verdict
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `g=grep; $g -r x .` ran ugrep (a real run) and was judged "corresponds": a command name
/// known only at run time may be a shadowed one.
#[test]
fn dynamic_command_name_was_judged_corresponds() {
    expect(&[
        ("g=grep; $g -r TODO d", Verdict::Unknown, Some(("$g", "unknown"))),
        (
            "G=grep; \"$G\" -r TODO d",
            Verdict::Unknown,
            Some(("$G", "unknown")),
        ),
        (
            "$(echo grep) -r TODO d",
            Verdict::Unknown,
            Some(("$(echo grep)", "unknown")),
        ),
        (
            "${x}ep -c TODO f.txt",
            Verdict::Unknown,
            Some(("${x}ep", "unknown")),
        ),
        (
            "g='grep -r'; $g TODO d",
            Verdict::Unknown,
            Some(("$g", "unknown")),
        ),
        (
            "e=exec; e=grep; $e -r TODO d",
            Verdict::Unknown,
            Some(("$e", "unknown")),
        ),
        ("$cmd -r TODO d", Verdict::Unknown, Some(("$cmd", "unknown"))),
        // A variable the text sets only to other names, a command substitution naming none, an
        // arithmetic expansion (stdin_contract.rs runs the first two for real).
        ("e=exec; $e 0<a.txt; cat", Verdict::Corresponds, None),
        ("$(exit 3)", Verdict::Corresponds, None),
        ("$((1+2))", Verdict::Corresponds, None),
        // A pattern in command position stays as written unless a file matches it: `[` is the
        // test command (IEC-Bench's test-not-equal pairs went "unknown"); `gr?p` may be grep.
        (
            "if [ 3 -ne 4 ]; then echo differs; fi",
            Verdict::Corresponds,
            None,
        ),
        ("gr?p -r TODO d", Verdict::Unknown, Some(("gr?p", "unknown"))),
        // Static parts no shadowed name has: a path, or a start none begins with.
        ("\"$HOME/bin/tool\" -r x", Verdict::Corresponds, None),
        ("ls${x} -l", Verdict::Corresponds, None),
    ]);
}

/// `eval grep -r TODO d` ran ugrep (real runs, also with `command eval` and `builtin eval`) and
/// was judged "corresponds": `eval`'s text is now judged as the text's own.
#[test]
fn eval_of_a_shadowed_name_was_judged_corresponds() {
    expect(&[
        (
            "eval grep -r TODO d",
            Verdict::Diverges,
            Some(("grep", "differs")),
        ),
        (
            "eval 'grep -r TODO d'",
            Verdict::Diverges,
            Some(("grep", "differs")),
        ),
        (
            "command eval grep -r TODO d",
            Verdict::Diverges,
            Some(("grep", "differs")),
        ),
        (
            "builtin eval grep -r TODO d",
            Verdict::Diverges,
            Some(("grep", "differs")),
        ),
        ("eval \"$cmd\"", Verdict::Unknown, Some(("eval", "unknown"))),
        ("eval grep -c TODO f.txt", Verdict::Corresponds, None),
    ]);
}

/// `type grep`, `type -t grep`, `command -v grep`, `declare -F grep` print "function" (or the
/// bare name) through the real harness where `bash -c` names /usr/bin/grep, and were judged
/// "corresponds". `type -P`, `type -f` and `which` print alike (real runs).
#[test]
fn type_of_a_shadowed_name_was_judged_corresponds() {
    expect(&[
        ("type grep", Verdict::Diverges, Some(("grep", "differs"))),
        ("type -t grep", Verdict::Diverges, Some(("grep", "differs"))),
        ("type -a grep", Verdict::Diverges, Some(("grep", "differs"))),
        ("command -v grep", Verdict::Diverges, Some(("grep", "differs"))),
        ("command -V find", Verdict::Diverges, Some(("find", "differs"))),
        ("declare -F grep", Verdict::Diverges, Some(("grep", "differs"))),
        ("type -P grep", Verdict::Corresponds, None),
        ("type -f grep", Verdict::Corresponds, None),
        ("which grep", Verdict::Corresponds, None),
        ("command -v ls", Verdict::Corresponds, None),
        // Output discarded: only the status is seen, 0 for a function as for a file (real
        // runs); `declare -F` returns 1 without the function.
        ("command -v grep >/dev/null && echo y", Verdict::Corresponds, None),
        ("type grep > /dev/null 2>&1", Verdict::Corresponds, None),
        (
            "command -v grep > out",
            Verdict::Diverges,
            Some(("grep", "differs")),
        ),
        (
            "command -v grep >&2",
            Verdict::Diverges,
            Some(("grep", "differs")),
        ),
        (
            "declare -F grep >/dev/null",
            Verdict::Diverges,
            Some(("grep", "differs")),
        ),
    ]);
}

/// A prefix assignment does not bypass the function (real run: `PATH=/usr/bin grep -r TODO d`
/// ran ugrep): already judged by the rows, pinned here.
#[test]
fn prefix_assignment_does_not_bypass_the_function() {
    expect(&[
        (
            "PATH=/usr/bin grep -r TODO d",
            Verdict::Diverges,
            Some(("grep", "differs")),
        ),
        // The function still runs, and in a C locale the rows are not shown (red team round 9:
        // `LC_ALL=C grep -i 'é'` matches `É` only under the substitute): unknown.
        (
            "LC_ALL=C grep -c TODO f.txt",
            Verdict::Unknown,
            Some(("grep", "unknown")),
        ),
    ]);
}

/// A binary input: the substitute's -I skips it where GNU grep reports a match (real run:
/// `grep TODO b.png` exit 0 against 1, `grep -c` prints 1 against nothing). An operand named
/// for a binary format is now "unknown"; -a, --text, -I and --binary-files=text/without-match
/// make both read it alike (row grep-binary-text, shown with the real programs).
#[test]
fn binary_operand_was_judged_corresponds() {
    expect(&[
        ("grep TODO logo.png", Verdict::Unknown, Some(("grep", "unknown"))),
        (
            "grep -c TODO lib/libx.so",
            Verdict::Unknown,
            Some(("grep", "unknown")),
        ),
        ("grep -a TODO logo.png", Verdict::Corresponds, None),
        (
            "grep --binary-files=text -c TODO logo.png",
            Verdict::Corresponds,
            None,
        ),
        ("grep -I TODO logo.png", Verdict::Corresponds, None),
        ("grep TODO notes.txt", Verdict::Corresponds, None),
        ("grep TODO .png", Verdict::Corresponds, None),
    ]);
    let r = report("grep -a TODO logo.png");
    assert!(
        !r.substitutions[0]
            .caveats
            .iter()
            .any(|c| c == "grep-binary-input"),
        "{:?}",
        r.substitutions
    );
    let r = report("grep TODO notes.txt");
    assert!(
        r.substitutions[0]
            .caveats
            .iter()
            .any(|c| c == "grep-binary-input"),
        "{:?}",
        r.substitutions
    );
}

/// `find d | grep -c a` and `find d | grep -v zz | sort` print alike through the real harness,
/// and were judged "diverges" by the traversal order, which a line filter followed by `sort`,
/// or a count, drops.
#[test]
fn find_through_grep_filter_was_judged_diverges() {
    expect(&[
        ("find d | grep -c a", Verdict::Corresponds, None),
        ("find d | grep -v zz | sort", Verdict::Corresponds, None),
        (
            "find . -type f | grep -i -e LOG | wc -l",
            Verdict::Corresponds,
            None,
        ),
        ("find . | grep -q x", Verdict::Corresponds, None),
        // The order survives: printed as found, numbered, cut at one, or NUL-ended records.
        ("find . | grep x", Verdict::Diverges, Some(("find", "differs"))),
        (
            "find . | grep -n x | sort",
            Verdict::Diverges,
            Some(("find", "differs")),
        ),
        (
            "find . | grep -m1 x",
            Verdict::Diverges,
            Some(("find", "differs")),
        ),
        (
            "find . -print0 | grep -c x",
            Verdict::Diverges,
            Some(("find", "differs")),
        ),
    ]);
}

/// The snapshot defines `rg` only when `hash rg` fails (read from the real 2.1.332 snapshot):
/// with a real rg on PATH the call runs it, so "diverges" was wrong there; whether one is on
/// PATH is known only at run time.
#[test]
fn rg_was_judged_substituted_when_a_real_rg_is_on_path() {
    expect(&[
        ("rg TODO", Verdict::Unknown, Some(("rg", "unknown"))),
        ("rg -l TODO src | sort", Verdict::Unknown, Some(("rg", "unknown"))),
        ("command rg TODO", Verdict::Corresponds, None),
    ]);
}
