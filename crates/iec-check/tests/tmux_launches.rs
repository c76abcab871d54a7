//! Terminal-typing launches: Terminal-Bench's `tmux send-keys` (key names, `; tmux wait -S done`,
//! history expansion on) and OpenHands (escape_bash_special_chars, `send-keys -l`, `set +H`),
//! checked with the real tmux witness. Needs tmux (`IEC_SKIP_TMUX=1` skips, and says so).

use iec_check::{call_for_text, check, Options};
use iec_launches::Catalog;
use iec_witness::global;

fn skip() -> bool {
    if iec_witness::tmux::available() {
        assert!(
            iec_witness::tmux::jail_helper().is_some(),
            "the terminal witness's jail helper is not built: run `cargo build -p iec-witness --bin iec-jail` (cargo test --workspace builds it)"
        );
        return false;
    }
    if std::env::var_os("IEC_SKIP_TMUX").is_some() {
        eprintln!("skipped: tmux is not installed (IEC_SKIP_TMUX=1)");
        return true;
    }
    panic!("tmux is not installed (Debian: apt-get install tmux); set IEC_SKIP_TMUX=1 to skip");
}

/// (verdict, first divergent hop, mechanism, silent) as a short string.
fn verdict(id: &str, text: &str) -> String {
    let cat = Catalog::builtin();
    let l = cat.get(id).unwrap();
    let r = check(l, &call_for_text(l, text), global(), Options::default()).unwrap();
    let v = serde_json::to_value(&r).unwrap();
    match &r.first_divergence {
        None => v["verdict"].as_str().unwrap().to_string(),
        Some(f) => format!(
            "{}:{}:{}:{}",
            f.hop_name,
            v["first_divergence"]["mechanism"].as_str().unwrap(),
            if f.silent { "silent" } else { "loud" },
            f.received.replace('\n', "⏎")
        ),
    }
}

/// (text, tmux-send-keys verdict, openhands-tmux verdict), all observed with real tmux 3.3a and
/// bash 5.2.
const CASES: &[(&str, &str, &str)] = &[
    ("ls -la", "corresponds", "corresponds"),
    // `!=` is not a history event; `!b` inside double quotes is, and the line is dropped.
    ("echo 'a != b'", "corresponds", "corresponds"),
    ("echo \"a!b\"", "terminal:re-expansion:loud:", "corresponds"),
    // A trailing `;` ends the tmux command: `echo a;; tmux wait` would not parse either.
    (
        "echo a;",
        "wrapper:other:loud:echo a;; tmux wait -S done",
        "corresponds",
    ),
    // tmux turns an argument's trailing `\;` into `;`; OpenHands' doubling compensates it...
    (
        "echo a\\;",
        "terminal:quote-consumption:loud:echo a;; tmux wait -S done",
        "corresponds",
    ),
    (
        "find . -name x -exec rm {} \\;",
        "terminal:quote-consumption:loud:find . -name x -exec rm {} ;; tmux wait -S done",
        "corresponds",
    ),
    // ...and breaks a `\;` that is not at the end, which tmux leaves alone.
    (
        "find . -exec rm {} \\; -print",
        "corresponds",
        "terminal:other:silent:find . -exec rm {} \\\\; -print",
    ),
    // readline takes the tab (completion): the witness refuses the key and drops the line, so
    // what the shell would read is not observed (two arguments became one in the witness before
    // refused lines were dropped).
    (
        "printf '%s\\n' a\tb",
        "terminal:other:silent:",
        "terminal:other:silent:",
    ),
    // `EOF; tmux wait -S done` no longer ends the heredoc.
    (
        "cat <<'EOF'\nhello $USER\nEOF",
        "wrapper:other:loud:cat <<'EOF'⏎hello $USER⏎EOF; tmux wait -S done",
        "corresponds",
    ),
    // OpenHands refuses two top-level statements before typing (terminal_session.py).
    ("echo one\necho two", "corresponds", "tool-input:other:loud:"),
    (
        "sleep 1 &",
        "wrapper:other:loud:sleep 1 &; tmux wait -S done",
        "corresponds",
    ),
    // The comment swallows the completion signal.
    (
        "ls # list",
        "wrapper:other:silent:ls # list; tmux wait -S done",
        "corresponds",
    ),
    // A whole argument that is a key name is that key.
    ("Enter", "terminal:other:loud:; tmux wait -S done", "corresponds"),
    ("echo $'tab\\there'", "corresponds", "corresponds"),
];

#[test]
fn verdicts_on_both_launches() {
    if skip() {
        return;
    }
    for (text, tb, oh) in CASES {
        assert_eq!(verdict("tmux-send-keys", text), *tb, "tmux-send-keys {text:?}");
        assert_eq!(verdict("openhands-tmux", text), *oh, "openhands-tmux {text:?}");
    }
    // tmux refuses a message over its size limit ("command too long"): nothing is typed.
    let big = format!("echo {}", "x".repeat(20_000));
    for id in ["tmux-send-keys", "openhands-tmux"] {
        assert_eq!(verdict(id, &big), "terminal:truncation:loud:", "{id}");
    }
    // Beyond one execve argument the tmux client cannot even start (E2BIG): the same verdict,
    // where the witness's own tmux client failed to start before (the 10⁶-string repair run
    // stopped on such a string).
    let huge = format!("echo {}", "x".repeat(140_000));
    for id in ["tmux-send-keys", "openhands-tmux"] {
        assert_eq!(verdict(id, &huge), "terminal:truncation:loud:", "{id}");
    }
}

#[test]
fn check_mode_runs_nothing_typed() {
    if skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    for id in ["tmux-send-keys", "openhands-tmux"] {
        for text in [
            format!("touch {d}/a"),
            format!("echo $(touch {d}/b)"),
            format!("}}\ntouch {d}/c"),
            format!("echo (\ntouch {d}/d"),
            format!("while :; do touch {d}/e; done"),
            format!("cat <<EOF\n$(touch {d}/f)"),
            format!("{{ touch {d}/g; }} > {d}/h"),
        ] {
            let _ = verdict(id, &text);
        }
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "check mode ran typed text: {left:?}");
}

/// Keys are typed only while readline reads (the witness waits for its probe key): a line over
/// the pty's canonical limit (4095 bytes) arrives whole, every time, on both launches, and the
/// plain-text shortcut's neighbour (`full_witness`) says the same.
#[test]
fn long_lines_arrive_whole_every_time() {
    if skip() {
        return;
    }
    let cat = Catalog::builtin();
    for id in ["tmux-send-keys", "openhands-tmux"] {
        let l = cat.get(id).unwrap();
        for n in [4095, 4096, 4097, 8000, 12_000] {
            let text = "x".repeat(n);
            for round in 0..5 {
                let full = round % 2 == 1;
                let r = check(
                    l,
                    &call_for_text(l, &text),
                    global(),
                    Options {
                        full_witness: full,
                        ..Default::default()
                    },
                )
                .unwrap();
                let v = serde_json::to_value(&r).unwrap();
                assert_eq!(v["verdict"], "corresponds", "{id} {n} round {round}: {v}");
            }
        }
    }
}

/// Whether the second typed line of `text` runs as a command in a real interactive bash in
/// tmux, typed as Terminal-Bench types it (`send-keys TEXT '; tmux wait -S done' Enter`): a
/// marker command typed after it shows when the shell has read everything.
fn real_tmux_runs_line_2(text: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("sock");
    let tmux = |args: &[&str]| -> String {
        let o = std::process::Command::new(iec_witness::tmux::tmux_path())
            .arg("-S")
            .arg(&sock)
            .args(args)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    tmux(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "w",
        "-x",
        "160",
        "-y",
        "40",
        "bash --norc --noprofile -o ignoreeof",
    ]);
    let wait_for = |name: &str| {
        let t0 = std::time::Instant::now();
        while !dir.path().join(name).exists() {
            if t0.elapsed() > std::time::Duration::from_secs(20) {
                let screen = tmux(&["capture-pane", "-p", "-t", "w"]);
                panic!("{text:?}: {name} never appeared; the pane shows:\n{screen}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    tmux(&["send-keys", "-t", "w", "-l", "touch READY"]);
    tmux(&["send-keys", "-t", "w", "Enter"]);
    wait_for("READY");
    tmux(&["send-keys", "-t", "w", text, "; true", "Enter"]);
    // A program the first line left reading the terminal gets an end of input (typed while it
    // reads, so that its line discipline takes it as one), then the marker, again until the
    // shell runs it (a `read` takes a marker typed too early as its line).
    let settled = dir.path().join("SETTLED");
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(300));
        if tmux(&["display-message", "-p", "-t", "w", "#{pane_current_command}"]) != "bash" {
            tmux(&["send-keys", "-t", "w", "C-d"]);
        }
        tmux(&["send-keys", "-t", "w", "-l", "touch SETTLED"]);
        tmux(&["send-keys", "-t", "w", "Enter"]);
        let t0 = std::time::Instant::now();
        while !settled.exists() && t0.elapsed() < std::time::Duration::from_secs(1) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if settled.exists() {
            break;
        }
    }
    wait_for("SETTLED");
    let ran = dir.path().join("LINE2").exists();
    tmux(&["kill-server"]);
    ran
}

/// Whether `bash -c TEXT` (standard input empty) creates `LINE2`: the text run as written.
fn bash_c_creates_line_2(text: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new("bash")
        .args(["-c", text])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let _ = o;
    dir.path().join("LINE2").exists()
}

/// Red team rounds 6 and 7: texts whose later lines an earlier command reads as input, or
/// that act on the interactive shell as `bash -c` never would (prompt commands, key bindings,
/// aliases), were "corresponds" on tmux-send-keys. The real interactive bash in tmux and
/// `bash -c` are both run: the check says "corresponds" exactly when they agree.
#[test]
fn typed_lines_read_by_an_earlier_command_were_corresponds() {
    if skip() {
        return;
    }
    let cases = [
        "head -n1\ntouch LINE2",
        "read -r x\ntouch LINE2",
        "cat\ntouch LINE2",
        "cat /dev/stdin\ntouch LINE2",
        "cat <&1\ntouch LINE2",
        "date -f -\ntouch LINE2",
        "cd .\ntouch LINE2",
        "echo 'a b' > f\ntouch LINE2",
        "cat > f <<'EOF'\nhead\nEOF\ntouch LINE2",
        "while read -r l; do echo \"$l\"; done < /dev/null\ntouch LINE2",
        "echo x | head -n1\ntouch LINE2",
        "rm -f nothing\ntouch LINE2",
        "PROMPT_COMMAND='touch LINE2'",
        "alias ls='touch LINE2'\nls",
        "bind '\"x\":\"touch LINE2\"'\nx",
        // Red team round 8: the same state reached indirectly, and readers spelled otherwise.
        "declare -n r=PROMPT_COMMAND; r='touch LINE2'",
        ": ${PROMPT_COMMAND:='touch LINE2'}",
        "trap 'touch LINE2' DEBUG",
        "BASH_ALIASES[ls]='touch LINE2'\nls",
        "cat <&0\ntouch LINE2",
        "cat //dev/stdin\ntouch LINE2",
        "du --files0-from=-\ntouch LINE2",
    ];
    for text in cases {
        let real = real_tmux_runs_line_2(text);
        let written = bash_c_creates_line_2(text);
        let got = verdict("tmux-send-keys", text);
        let want = if real == written {
            "corresponds"
        } else {
            "terminal"
        };
        assert_eq!(
            got.split(':').next().unwrap(),
            want,
            "{text:?} (tmux: {real}, bash -c: {written}): {got}"
        );
    }
    // Undecidable from the text: a program the table does not know, an `rm` that may ask, an
    // operand known only at run time, more lines than the check looks back over. Unknown, and a
    // repair delivers one typed line.
    let cat = Catalog::builtin();
    let l = cat.get("tmux-send-keys").unwrap();
    let long = format!("read x\necho \"\n{}\"", "line\n".repeat(300));
    for (text, why) in [
        ("make\ntouch LINE2", "`make` may read the terminal"),
        ("touch x; rm -i x\ntouch LINE2", "`rm` (it may ask"),
        ("cat $NOPE\ntouch LINE2", "operand known only when it runs"),
        (long.as_str(), "more than 256 typed lines"),
    ] {
        let r = check(l, &call_for_text(l, text), global(), Options::default()).unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap()["verdict"],
            "unknown",
            "{text:?}"
        );
        assert_eq!(r.attribution.as_deref(), Some(iec_check::TERMINAL_INPUT));
        assert!(r.reason.as_deref().unwrap().contains(why), "{:?}", r.reason);
    }
    // A here-document is one command: its lines are not read after it has run (its head parses
    // only because the end of input closes it).
    assert_eq!(
        verdict("openhands-tmux", "cat <<'EOF'\nhello $USER\nEOF"),
        "corresponds"
    );
    // The history character: set on one line, it changes the expansion of the next.
    assert!(verdict("tmux-send-keys", "histchars=@\necho @@").starts_with("terminal:"));
}
