//! The harness's stdin contract (`< /dev/null`) is neutral only where the command it lands on
//! would read the harness's own stdin anyway (red team round 3, issue 17). Claude Code 2.1.72
//! and 2.0.76 append it to the command text (`eval 'CMD' \< /dev/null`) or put it before a
//! pipeline's first `|` whenever their detector sees no input redirection; it misses `sort<a.txt`,
//! `wc -l 0<a.txt`, `cat 0<>a.txt` and quoted here-strings, and bash then applies both
//! redirections in order: the harness's replaces the command's own input. 2.1.332 redirects
//! `eval` itself, under the command's own redirections: neutral.
//!
//! Each text is checked by `iec check` on the three launches (the verdict, exactly) and run by
//! real bash: the launch's wrapper (its template, its payload rendering of the text, an empty
//! snapshot) started by the launch's spawn argv, against `bash -c TEXT`, both from the same
//! fixture directory with stdin from `/dev/null`. A "diverges" verdict must come with a
//! different outcome (status, stdout), a "corresponds" with the same.
//!
//! Red team round 5: a text ending in `;` or a newline gets the redirection as a command of its
//! own (`false; < /dev/null`), whose status replaces the text's; unless that command succeeds
//! whatever happens (`echo done;`, a script's last `echo done` line).
//!
//! Red team round 7: the wrapper's `&&` list turns the text's `set -e` off.
//!
//! Red team round 4: a command earlier in the text that changes the shell's own stdin for the
//! rest of the script (`exec 0<a.txt; cat`, or `eval`, `.`, a function or a trap that may run
//! one) makes the added redirection replace that input.

use std::path::Path;
use std::process::{Command, Stdio};

use iec_check::{call_for_text, check, Options};
use iec_core::Verdict;
use iec_launches::{render, Catalog, Launch};
use iec_witness::global;

const LAUNCHES: [&str; 3] = [
    "claude-code-2.1.72-linux",
    "claude-code-2.0.76-linux",
    "claude-code-2.1.332-linux",
];

use Verdict::{Corresponds as C, Diverges as D};

/// Text, the verdicts on [`LAUNCHES`], and what the divergence names (the command the added
/// redirection lands on and the redirection it replaces), when it names one.
const CASES: &[(&str, [Verdict; 3], Option<&str>)] = &[
    // The command reads /dev/null already: a second `< /dev/null` changes nothing (Claude Code
    // 1.0.76 puts one before the first `|` even then; it was a false "diverges").
    ("cat < /dev/null | wc -c", [C, C, C], None),
    // `[` is the test builtin, not a name known only at run time (red team round 9).
    ("[ -d /tmp ]; echo $?", [C, C, C], None),
    ("[ -f /nonexistent ] && echo yes; echo $?", [C, C, C], None),
    ("wc -c 0</dev/null", [C, C, C], None),
    ("printf x | cat - < /dev/null", [C, C, C], None),
    // The red team's texts: the command's own input, replaced.
    (
        "bc <<< '2+3'",
        [D, D, C],
        Some("to `bc`, which has its own `<<< 2+3`"),
    ),
    (
        "sort<a.txt",
        [D, D, C],
        Some("to `sort`, which has its own `< a.txt`"),
    ),
    (
        "wc -l 0<a.txt",
        [D, D, C],
        Some("to `wc …`, which has its own `< a.txt`"),
    ),
    (
        "cat 0<>a.txt",
        [D, D, C],
        Some("to `cat`, which has its own `<> a.txt`"),
    ),
    (
        "while read -r l; do echo \"got $l\"; done <<< 'a b'",
        [D, D, C],
        Some("to `while … done`, which has its own `<<< 'a b'`"),
    ),
    (
        "python3 <<< 'print(42)'",
        [D, D, C],
        Some("to `python3`, which has its own `<<< 'print(42)'`"),
    ),
    // The pipe path puts it before the first `|`, on the command that redirects.
    (
        "sort<a.txt | cat",
        [D, D, C],
        Some("to `sort`, which has its own `< a.txt`"),
    ),
    // A duplicated descriptor, a compound's own redirection.
    (
        "exec 3<a.txt; cat 0<&3",
        [D, D, C],
        Some("to `cat`, which has its own `<&3`"),
    ),
    (
        "{ cat; } 0<a.txt",
        [D, D, C],
        Some("to `{ … }`, which has its own `< a.txt`"),
    ),
    // 2.0.76 rebuilds the piped loop with `< /dev/null` on `head`, inside a loop reading a file.
    (
        "while read -r l; do head -1 | cat; done<a.txt",
        [C, D, C],
        Some("to `head …` inside `while … done`, whose `< a.txt`"),
    ),
    // 2.0.76 gives up on a pipe with a backquote and appends it: to the pipe's reader.
    (
        "echo `echo hi` | cat",
        [C, D, C],
        Some("to `cat`, whose standard input is the pipe"),
    ),
    // Red team round 4: an earlier command changes the shell's own stdin for the rest of the
    // script (`exec 0<…`, or code that may run one: `eval`, `.`, a function, a trap, a command
    // named at run time); the added redirection replaces that input.
    (
        "exec 0<a.txt; cat",
        [D, D, C],
        Some("to `cat`, and `exec < a.txt` in the text changes the shell's own standard input"),
    ),
    ("exec 0<a.txt; wc -l", [D, D, C], Some("`exec < a.txt`")),
    ("exec 0<a.txt; tee out.txt", [D, D, C], Some("`exec < a.txt`")),
    ("exec 0<a.txt && cat", [D, D, C], Some("`exec < a.txt`")),
    ("exec 0<>a.txt; cat", [D, D, C], Some("`exec <> a.txt`")),
    ("exec 3<a.txt; exec 0<&3; cat", [D, D, C], Some("`exec <&3`")),
    ("exec 6<a.txt 0<&6; cat", [D, D, C], Some("`exec <&6`")),
    ("exec 0<&-; cat", [D, D, C], Some("`exec 0>&-`")),
    ("command exec 0<a.txt; cat", [D, D, C], Some("`exec < a.txt`")),
    ("{ exec 0<a.txt; }; cat", [D, D, C], Some("`exec < a.txt`")),
    ("f() { exec 0<a.txt; }; f; cat", [D, D, C], Some("`exec < a.txt`")),
    (
        "eval 'exec 0<a.txt'; cat",
        [D, D, C],
        Some("to `cat`, and `eval …` in the text runs shell code in the shell itself"),
    ),
    ("eval 'exec 0<a.txt'; cat | wc -l", [D, D, C], Some("`eval …`")),
    ("builtin eval 'exec 0<a.txt'; cat", [D, D, C], Some("`builtin …`")),
    (
        ". ./s.sh; cat",
        [D, D, C],
        Some("`. …` in the text runs shell code"),
    ),
    ("source ./s.sh; cat", [D, D, C], Some("`source …`")),
    ("g() { . ./s.sh; }; g; cat", [D, D, C], Some("`. …`")),
    (
        "trap 'exec 0<a.txt' DEBUG; cat",
        [D, D, C],
        Some("`trap …` in the text sets shell code"),
    ),
    (
        "e=exec; $e 0<a.txt; cat",
        [D, D, C],
        Some("runs a command known only at run time"),
    ),
    // Red team round 5: after a final `;` or newline the appended redirection is a command of
    // its own, whose status (0) replaces the last command's: a failing call reports success.
    (
        "false;",
        [D, D, C],
        Some("lands after the text's last command as a command of its own"),
    ),
    ("ls nosuchfile;", [D, D, C], Some("a command of its own")),
    ("false ;\t", [D, D, C], Some("a command of its own")),
    ("grep -q zzz a.txt\n", [D, D, C], Some("a command of its own")),
    (
        "echo start\ntest -f nofile\n",
        [D, D, C],
        Some("a command of its own"),
    ),
    ("echo a; false;", [D, D, C], Some("a command of its own")),
    // Red team round 6: a last command without a static name whose status is that of its
    // command substitution: with the redirection bash returns 0.
    (
        "out=$(ls nosuchfile)",
        [D, D, C],
        Some("a command without a static name"),
    ),
    ("x=$(grep -q zzz a.txt)", [D, D, C], Some("without a static name")),
    ("$(exit 3)", [D, D, C], Some("without a static name")),
    ("cd /tmp && v=`false`", [D, D, C], Some("without a static name")),
    // A last command that succeeds whatever happens: the wordless command's 0 replaces a 0.
    ("true;", [C, C, C], None),
    ("echo hi;", [C, C, C], None),
    (": ;", [C, C, C], None),
    ("ls nosuchfile\necho done\n", [C, C, C], None),
    ("exit 3;", [C, C, C], None),
    ("false; exit;", [C, C, C], None),
    ("x=$((1))", [C, C, C], None),
    ("false && exit 3;", [D, D, C], Some("a command of its own")),
    // ...but not where it may fail or is not alone in its list.
    ("echo hi > nodir/x;", [D, D, C], Some("a command of its own")),
    ("exec >&-; echo hi;", [D, D, C], Some("a command of its own")),
    ("false && echo hi;", [D, D, C], Some("a command of its own")),
    ("! true;", [D, D, C], Some("a command of its own")),
    (
        "echo() { return 3; }; echo hi;",
        [D, D, C],
        Some("a command of its own"),
    ),
    // Red team round 7: the wrapper's `… && eval … && pwd -P` makes bash ignore the text's
    // `set -e` (errexit is off in every command of a `&&` list but the last).
    ("set -e; false; echo after", [D, D, D], Some("`set -e`")),
    (
        "set -euo pipefail\nfalse\necho x",
        [D, D, D],
        Some("`set -euo pipefail`"),
    ),
    (
        "set -o errexit; ls nosuchfile; echo after",
        [D, D, D],
        Some("`set -o errexit`"),
    ),
    ("(set -e; false; echo after)", [D, D, D], Some("`set -e`")),
    (
        "set -e; f() { false; echo in-f; }; f",
        [D, D, D],
        Some("`set -e`"),
    ),
    ("eval 'set -e; false; echo after'", [D, D, D], Some("`set -e`")),
    ("set -x; echo hi", [C, C, C], None),
    ("set +e; false; echo after", [C, C, C], None),
    ("bash -c 'set -e; false; echo after'", [C, C, C], None),
    // A name, or no substitution: the status does not change.
    ("x=1", [C, C, C], None),
    ("out=$(cat a.txt); echo \"$out\"", [C, C, C], None),
    // After `&` the status was 0 already; a comment swallows the redirection.
    ("false &", [C, C, C], None),
    ("false # c", [C, C, C], None),
    // Neutral: nothing that runs changes the shell's own stdin.
    ("exec 3<a.txt; cat", [C, C, C], None),
    ("exec 2>/dev/null; cat", [C, C, C], None),
    ("trap 'rm -f out.txt' EXIT; cat", [C, C, C], None),
    ("f() { cat; }; cat", [C, C, C], None),
    ("cat; exec cat", [C, C, C], None),
    // Neutral: the command reads the harness's stdin anyway, or the detector saw the redirect.
    ("cat", [C, C, C], None),
    ("cat a.txt; cat", [C, C, C], None),
    ("echo a | cat", [C, C, C], None),
    ("cat < a.txt", [C, C, C], None),
    ("cat {fd}<a.txt", [C, C, C], None),
    ("if true; then cat; fi", [C, C, C], None),
];

/// Status and stdout of `argv` run in a fresh copy of the fixture directory.
fn run(dir: &Path, argv: &[String]) -> (Option<i32>, String) {
    if dir.exists() {
        std::fs::remove_dir_all(dir).unwrap();
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("a.txt"), "b\nc\na\n").unwrap();
    std::fs::write(dir.join("s.sh"), "exec 0<a.txt\n").unwrap();
    let home = dir.parent().unwrap();
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// What the launch's harness runs for `text`: its wrapper around the payload it renders, an
/// empty snapshot, started by its spawn argv.
fn harness_argv(l: &Launch, text: &str, tmp: &Path) -> Vec<String> {
    let w = l.wrapper.as_ref().expect("a wrapper");
    let snapshot = tmp.join("snapshot.sh");
    std::fs::write(&snapshot, "").unwrap();
    let p = render::payload(&w.payload, text, w.stdin_suffix.as_deref());
    let wrapper = w
        .template
        .replace("{{snapshot}}", snapshot.to_str().unwrap())
        .replace("{{tmp}}", tmp.to_str().unwrap())
        .replace("{{payload}}", &p.words);
    render::spawn_argv(l, &wrapper, None)
}

#[test]
fn the_stdin_contract_does_not_replace_a_command_s_own_input() {
    let cat = Catalog::builtin();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("work");
    let mut wrong = vec![];
    for (text, verdicts, names) in CASES {
        let direct = run(&dir, &["bash".into(), "-c".into(), text.to_string()]);
        for (id, want) in LAUNCHES.iter().zip(verdicts) {
            let l = cat.get(id).unwrap();
            let r = check(l, &call_for_text(l, text), global(), Options::default()).unwrap();
            let harness = run(&dir, &harness_argv(l, text, tmp.path()));
            let real = if harness == direct { C } else { D };
            if r.verdict != *want || real != *want {
                wrong.push(format!(
                    "{id} {text:?}: iec check {}, real bash {} (direct {direct:?}, harness {harness:?}), want {}",
                    r.verdict.as_str(),
                    real.as_str(),
                    want.as_str()
                ));
                continue;
            }
            if *want == D {
                let f = r.first_divergence.as_ref().unwrap();
                if f.hop_name != "wrapper" {
                    wrong.push(format!("{id} {text:?}: diverges at {}, not wrapper", f.hop_name));
                }
                if let Some(n) = names {
                    if !f.detail.contains(n) {
                        wrong.push(format!("{id} {text:?}: {:?} does not name {n:?}", f.detail));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{} wrong:\n{}", wrong.len(), wrong.join("\n"));
}
