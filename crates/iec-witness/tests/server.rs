//! The witness server itself: canonical forms come from bash, and its guard stops commands even
//! when the break-out gate is bypassed on purpose.

use iec_witness::{bash_path, spawn, BashPool, BashServer, Parse};

#[test]
fn canonical_form_erases_formatting_and_keeps_bytes() {
    let pool = BashPool::new();
    let a = pool.parse(b"echo   a;b\t'c d'", false).unwrap();
    let b = pool.parse(b"echo a\nb 'c d'", false).unwrap();
    assert_eq!(a.canonical(), b.canonical());
    assert_eq!(a.canonical().unwrap(), "    echo a;\n    b 'c d'");
    // A CR is a byte bash keeps inside the word.
    let c = pool.parse(b"echo a\r", false).unwrap();
    assert_ne!(c.canonical(), pool.parse(b"echo a", false).unwrap().canonical());
    // Heredoc bodies are part of the canonical form.
    let h1 = pool.parse(b"cat <<'E'\nx $y\nE", false).unwrap();
    let h2 = pool.parse(b"cat <<'E'\nx $z\nE", false).unwrap();
    assert_ne!(h1.canonical(), h2.canonical());
    // ANSI-C quoting is decoded by bash's parser.
    let q1 = pool.parse(b"printf $'a\\tb'", false).unwrap();
    let q2 = pool.parse(b"printf 'a\tb'", false).unwrap();
    assert_eq!(q1.canonical(), q2.canonical());
}

#[test]
fn errors_and_end_only_texts() {
    let pool = BashPool::new();
    match pool.parse(b"echo 'x", false).unwrap() {
        Parse::Error { message } => assert!(message.contains("unexpected EOF"), "{message}"),
        p => panic!("{p:?}"),
    }
    assert!(matches!(
        pool.parse(b"cat <<EOF\nbody", false).unwrap(),
        Parse::EndOnly { .. }
    ));
    assert!(matches!(
        pool.parse(b"echo \\", false).unwrap(),
        Parse::EndOnly { .. }
    ));
    // extglob patterns parse only with extglob on.
    assert!(matches!(
        pool.parse(b"echo @(a|b)", false).unwrap(),
        Parse::Error { .. }
    ));
    assert!(matches!(
        pool.parse(b"echo @(a|b)", true).unwrap(),
        Parse::Ok { .. }
    ));
}

#[test]
fn guard_skips_commands_when_the_gate_is_bypassed() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pwned");
    let mut s = BashServer::start().unwrap();
    let text = format!("x\n}}\n/usr/bin/touch {}\n{{ :", f.display());
    let r = s.parse_unchecked(text.as_bytes(), false);
    assert!(r.is_err(), "the guard reports the skipped command: {r:?}");
    let mut s = BashServer::start().unwrap();
    let e = s
        .expand_words(format!("'a'; /usr/bin/touch {}; 'b'", f.display()).as_bytes())
        .unwrap();
    assert!(e.broke_out);
    let e2 = s
        .expand_words(format!("\"$(/usr/bin/touch {})\" x", f.display()).as_bytes())
        .unwrap();
    assert_eq!(e2.args, vec!["", "x"], "the command substitution ran nothing");
    assert!(!f.exists(), "nothing ran");
}

#[test]
fn expansion_hands_eval_what_the_outer_shell_would() {
    let pool = BashPool::new();
    let e = pool
        .expand_words(br#""printf '%s' 'a \!= b'" \< /dev/null"#)
        .unwrap();
    assert_eq!(e.args, vec!["printf '%s' 'a \\!= b'", "<", "/dev/null"]);
    let e = pool.expand_words(br#"'it'"'"'s' "\$HOME" \$x"#).unwrap();
    assert_eq!(e.args, vec!["it's", "$HOME", "$x"]);
}

/// A word may carry any byte but NUL, and each arrives as one argument: the reply separated
/// words by SOH (U+0001) once, so a word holding one came back as two and repair refused texts
/// with SOH as "did not decode to the same bytes". Empty words and a word list of one empty
/// word keep their count.
#[test]
fn expanded_words_keep_every_byte_but_nul() {
    let pool = BashPool::new();
    let all: String = (1u8..=0x7f).map(char::from).collect::<String>() + "é中";
    let word = |s: &str| {
        let mut w = String::from("$'");
        for b in s.bytes() {
            w.push_str(&format!("\\x{b:02x}"));
        }
        w + "'"
    };
    let e = pool
        .expand_words(format!("{} '' a\x01b {}", word(&all), word("\x01\x01")).as_bytes())
        .unwrap();
    assert_eq!(e.args, [all.as_str(), "", "a\x01b", "\x01\x01"]);
    assert_eq!(pool.expand_words(b"''").unwrap().args, [""]);
    assert!(pool.expand_words(b"$empty").unwrap().args.is_empty());
}

/// `${9?}` ends a non-interactive bash, the expansion server too: the expansion fails with
/// bash's message (as `bash -c 'echo ${9?}'` does, status 127) and the pool keeps serving. The
/// 10⁶-string repair run stopped on this as a witness error (string #422683).
#[test]
fn a_fatal_expansion_error_is_the_expansion_s_outcome() {
    let pool = BashPool::new();
    for w in [&b"a ${9?} b"[..], b"${x:?no x here}", b"\"${9?}\""] {
        let e = pool.expand_words(w).unwrap();
        assert_eq!((e.status, e.args.len(), e.broke_out), (127, 0, false), "{e:?}");
        assert!(
            e.diagnostics.contains("not set") || e.diagnostics.contains("no x here"),
            "{e:?}"
        );
        assert_eq!(pool.expand_words(b"c{1..2}").unwrap().args, ["c1", "c2"]);
    }
    let real = std::process::Command::new("/bin/bash")
        .args(["-c", "echo ${9?}; echo after"])
        .output()
        .unwrap();
    assert_eq!(
        (real.status.code(), real.stdout.as_slice()),
        (Some(127), &b""[..])
    );
}

#[test]
fn server_runs_without_network_and_in_an_empty_directory() {
    let mut s = BashServer::start().unwrap();
    let _ = s.parse_unchecked(b"echo hi", false).unwrap();
    let names: Vec<_> = std::fs::read_dir(s.dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let mut names: Vec<String> = names.iter().map(|n| n.to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names.len(), 2, "only the request files: {names:?}");
    assert!(
        names[0].starts_with("exp-") && names[1].starts_with("req-"),
        "{names:?}"
    );
    assert_eq!(
        s.functions().unwrap(),
        vec![
            "__iec_f".to_string(),
            "__iec_guard".to_string(),
            "__iec_rec".to_string()
        ]
    );
    if iec_witness::isolated_network() {
        let pid = s.pid();
        let own = std::fs::read_link("/proc/self/ns/net").unwrap();
        // The server is unshare's child (unshare execs bash, so the pid is bash's).
        let theirs = std::fs::read_link(format!("/proc/{pid}/ns/net")).unwrap();
        assert_ne!(own, theirs, "witness shares the test's network namespace");
    } else {
        println!("SKIPPED network-namespace assertion: unshare is not permitted here");
    }
}

#[test]
fn parse_only_server_cannot_act_when_the_gate_is_bypassed() {
    // A parse-only server runs without the DEBUG-trap guard: the kernel filter is the layer
    // under the gate. Break out of the function on purpose and try every way to act.
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let mut s = BashServer::start_parse_only(None).unwrap();
    assert!(
        s.parse_only(),
        "this system refused the seccomp filter; parse servers fell back to the guard"
    );
    let text = format!(
        "x\n}}\n/usr/bin/touch {a}\n: > {b}\necho hi >> {c}\n( : ) && echo forked > {d}\n\
         /bin/bash -c 'echo x > {e}'\nexec 3<>/dev/tcp/127.0.0.1/9 && echo net > {f}\n\
         printf x | cat > {g}\n{{ :",
        a = p("a"),
        b = p("b"),
        c = p("c"),
        d = p("d"),
        e = p("e"),
        f = p("f"),
        g = p("g"),
    );
    let _ = s.parse_unchecked(text.as_bytes(), false);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "something acted: {left:?}");
    // Under bash's restricted mode most of these fail even before the kernel's filter; the
    // filter itself is tested in jail.rs. Here: it is installed on the server process (a live
    // one: the failed fork above ended the first).
    let mut s = BashServer::start_parse_only(None).unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid())).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Seccomp:", "2"]),
        "{status}"
    );
    assert!(status
        .lines()
        .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["NoNewPrivs:", "1"]));
    // And it still parses.
    assert!(matches!(
        s.parse_unchecked(b"echo 'a != b' | wc -c", false).unwrap(),
        Parse::Ok { .. }
    ));
    assert!(
        s.expand_words(b"'a'").is_err(),
        "a parse-only server refuses expansion"
    );
}

/// Texts that parse, that do not, that reach past their function body, and that name the
/// server's functions.
const PAIR_TEXTS: [&[u8]; 10] = [
    b"echo   a;b\t'c d'",
    b"printf '%s' 'a \\!= b' < /dev/null | cat",
    b"cat <<'E'\nx $y\x01\nE",
    b"echo 'x",
    b"x\n}\n{ :",
    b"case x in (a) :;; esac",
    b"echo '",
    b"'\n}\n__iec_g() {\necho",
    b"{ echo",
    b"cat <<}\n",
];

#[test]
fn pair_parse_equals_two_parses() {
    let pool = BashPool::new();
    let texts = PAIR_TEXTS;
    for a in texts {
        for b in texts {
            // Diagnostics name the server's request file; the verdict and the form must agree.
            let shape = |p: &Parse| (std::mem::discriminant(p), p.canonical().map(str::to_string));
            let (pa, pb) = pool.parse_pair(a, b, false).unwrap();
            assert_eq!(shape(&pa), shape(&pool.parse(a, false).unwrap()), "{a:?}");
            assert_eq!(shape(&pb), shape(&pool.parse(b, false).unwrap()), "{b:?}");
        }
    }
}

/// A text that closes its function body early and defines another function (bash accepts it as
/// a body only because the gate is bypassed here) leaves that function in the server: such
/// state is why servers are retired after a bounded number of requests, and why a reply is
/// read only up to a bound.
#[test]
fn break_out_state_stays_and_servers_wear_out() {
    let mut s = BashServer::start().unwrap();
    let before = s.functions().unwrap();
    let p = s.parse_unchecked(b":\n}\n__left_behind() {\n:", false).unwrap();
    assert!(p.parses(), "{p:?}");
    let after = s.functions().unwrap();
    assert!(!before.iter().any(|f| f == "__left_behind"), "{before:?}");
    assert!(after.iter().any(|f| f == "__left_behind"), "{after:?}");
    assert!(!s.worn_out());
    for _ in 0..BashServer::RETIRE_AFTER {
        s.parse_unchecked(b"echo hi", false).unwrap();
    }
    assert!(s.worn_out());
}

/// bash 5.2 keeps parser state after an unterminated `[[`: the next text the same process parses
/// (`echo [[ x ]]`) is rejected. A server notices by its canary and is retired, so the pool
/// answers right (without the canary the pool would call `echo [[ x ]]` end-only).
#[test]
fn an_unterminated_conditional_retires_its_server() {
    let mut s = BashServer::start_parse_only(None).unwrap();
    assert!(!s.worn_out());
    assert!(matches!(
        s.parse_unchecked(b"a;[[", false).unwrap(),
        Parse::Error { .. }
    ));
    assert!(s.worn_out(), "the canary did not see the leftover state");
    // Other syntax errors leave the server in service.
    let mut t = BashServer::start_parse_only(None).unwrap();
    assert!(matches!(
        t.parse_unchecked(b"echo 'x", false).unwrap(),
        Parse::Error { .. }
    ));
    assert!(matches!(
        t.parse_unchecked(b"if", false).unwrap(),
        Parse::Error { .. }
    ));
    assert!(!t.worn_out());

    let pool = BashPool::new();
    for _ in 0..3 {
        assert!(matches!(pool.parse(b"a;[[", false).unwrap(), Parse::Error { .. }));
        assert_eq!(
            pool.parse(b"echo [[ x ]]", false).unwrap().canonical(),
            Some("    echo [[ x ]]")
        );
    }
    // Expanding such words never reaches an expansion server (whose guard it would break).
    let e = pool.expand_words(b"a;[[").unwrap();
    assert_eq!((e.args.len(), e.status, e.broke_out), (0, 2, false));
    assert_eq!(pool.expand_words(b"'[[' x").unwrap().args, ["[[", "x"]);
}

/// bash 5.2 abandons a text at a malformed `[[ … ]]` and exits 0: `bash -c '[[ ]]; echo hi'`
/// prints nothing and `bash -n` says 0, with a message for some (`[[|a`) and none for others
/// (`[[ ]]`). A server sees status 2 when it sources such a text as a function body; the
/// separate `bash -n` that then decides between an error and an end-only text said "parses"
/// (status 0), so `[[|a` was end-only, `iec check` said it corresponds, and words that spell one
/// went to an expansion server and broke its guard.
#[test]
fn a_text_bash_abandons_does_not_parse() {
    // What the real bash does with them (the receiver these answers stand for).
    for (text, says) in [
        ("[[ ]]; echo hi", ""),
        ("[[ ! ]]; echo hi", ""),
        ("[[|a\necho hi", "unexpected token `|' in conditional command"),
        ("[[ a b ]]\necho hi", "conditional binary operator expected"),
    ] {
        let out = std::process::Command::new(bash_path())
            .args(["-c", text])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{text:?}");
        assert_eq!(out.stdout, b"", "{text:?} ran something");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{text:?}: {out:?}"
        );
    }
    let abandoned: &[&[u8]] = &[
        b"[[ ]]",
        b"[[ ! ]]",
        b"[[|a",
        b"echo a\n[[ a b ]]\necho b",
        b"[[ -f ]]",
        b"f() { [[ ( a ]]; }",
    ];
    let mut s = BashServer::start_parse_only(None).unwrap();
    for text in abandoned {
        assert!(matches!(
            s.parse_unchecked(b"echo hi", false).unwrap(),
            Parse::Ok { .. }
        ));
        assert!(
            matches!(s.parse_unchecked(text, false).unwrap(), Parse::Error { .. }),
            "{:?}",
            String::from_utf8_lossy(text)
        );
        assert!(matches!(
            s.parse_mode(text, false, false).unwrap(),
            Parse::Error { .. }
        ));
    }
    let pool = BashPool::new();
    for text in abandoned {
        assert!(
            matches!(pool.parse(text, false).unwrap(), Parse::Error { .. }),
            "{:?}",
            String::from_utf8_lossy(text)
        );
        assert!(spawn::bash_n(text, false).unwrap().is_err());
    }
    assert_eq!(
        spawn::bash_n(b"[[ ]]", false).unwrap(),
        Err(spawn::ABANDONED.to_string())
    );
    // Texts with `[[` that bash reads to the end stay as they were.
    for text in [
        &b"[[ -n x ]] && echo y"[..],
        b"echo [[ ]]",
        b"cat <<E\n[[ ]]\nE",
        b"echo '[[ ]]'",
        b"[[ -n x ]] # [[ ]]",
        b"echo a\\",
    ] {
        assert!(
            spawn::bash_n(text, false).unwrap().is_ok(),
            "{:?}",
            String::from_utf8_lossy(text)
        );
        assert!(
            pool.parse(text, false).unwrap().parses(),
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
    // Also a text too long for an argument (read from a file).
    let mut long = "echo x\n".repeat(20_000).into_bytes();
    long.extend_from_slice(b"[[ ]]\necho y");
    assert!(long.len() > 131_071);
    assert_eq!(
        spawn::bash_n(&long, false).unwrap(),
        Err(spawn::ABANDONED.to_string())
    );
    // Words that spell one are refused before any expansion server sees them (string #457150
    // of the repair run: the server looped until the 64 MiB reply cap).
    let e = pool.expand_words(b"\\\\\\\\\\\\\r\n[[|aX-").unwrap();
    assert_eq!((e.args.len(), e.status, e.broke_out), (0, 2, false));
    assert!(
        e.diagnostics.contains("in conditional command"),
        "{}",
        e.diagnostics
    );
}

/// Issue 16: the gate is held to real bash. Every text built from a `}` with neighbours spelled
/// in many ways (blanks, operators, line continuations, quotes, comments, heredoc lines) is
/// parsed by a server *without* the gate; whenever bash really closed the wrapper early (the
/// text's function `__iec_brk` got defined), the gate must have flagged the text.
#[test]
fn gate_flags_every_real_break_out() {
    let joiners: &[&str] = &[
        "",
        "\n",
        "\\\n",
        "\\\n\\\n",
        " ",
        "\t",
        ";",
        "&",
        "|",
        "(",
        ")",
        "<",
        ">",
        "\\\\\n",
        "'",
        "\"",
        "#",
        "\n#\\\n",
        "\r",
        "\\",
        "\\ ",
        "$",
        "`",
        "{",
        "\\\n \\\n",
        "\\\r\n",
    ];
    let heads: &[&str] = &[
        "true\n",
        "true ",
        "true;",
        ": <<'}'\n",
        "cat <<E\n",
        "x=",
        "echo $(",
        "",
    ];
    let mut real = 0usize;
    let mut checked = 0usize;
    let mut missed_before = 0usize;
    // The gate before issue 16: a `}` between delimiters, continuations not looked through.
    let old_gate = |t: &[u8]| {
        let d = |b: u8| b" \t\n;&|()<>".contains(&b);
        t.iter()
            .enumerate()
            .any(|(i, &b)| b == b'}' && (i == 0 || d(t[i - 1])) && (i + 1 == t.len() || d(t[i + 1])))
    };
    let mut s = BashServer::start().unwrap();
    for head in heads {
        for p in joiners {
            for q in joiners {
                // The rest holds no other `}`: a function with a subshell body, and a `{` that the
                // wrapper's own `}` closes.
                let text = format!("{head}{p}}}{q};__iec_brk() ( : ); {{\ntrue");
                checked += 1;
                // A server that died on a text is replaced and asked again, so that every text
                // is judged by a live bash.
                let mut broke = None;
                for _ in 0..2 {
                    let _ = s.parse_unchecked(text.as_bytes(), false);
                    match s.functions() {
                        Ok(f) => {
                            broke = Some(f.iter().any(|n| n == "__iec_brk"));
                            break;
                        }
                        Err(_) => s = BashServer::start().unwrap(),
                    }
                }
                // A text that ends its server both times: bash -n alone must reject it or the
                // gate flag it.
                let broke = broke.unwrap_or_else(|| {
                    iec_witness::spawn::bash_n(text.as_bytes(), false)
                        .unwrap()
                        .is_ok()
                });
                if broke {
                    real += 1;
                    if !old_gate(text.as_bytes()) {
                        missed_before += 1;
                    }
                    assert!(
                        iec_witness::gate::may_break_out(text.as_bytes()),
                        "bash broke out of the wrapper but the gate passed {text:?}"
                    );
                }
                if broke || s.worn_out() {
                    s = BashServer::start().unwrap();
                }
            }
        }
    }
    println!("{checked} texts, {real} real break-outs, all flagged; the old gate missed {missed_before}");
    assert!(
        missed_before > 0,
        "the generator must include the break-outs the old gate missed"
    );
    assert!(real > 50, "the generator should produce real break-outs: {real}");
}

/// The batch of `parse_many` gives every text the form its own question gives, and the pool
/// answers later questions from it; a text that cannot share a batch (it does not parse, it
/// could reach into the next one, the gate sends it to `bash -n`) spoils nothing: it is left
/// to its own question, with the same answer as from a pool that never batched.
#[test]
fn many_parse_equals_single_parses() {
    let mut texts: Vec<&[u8]> = PAIR_TEXTS.to_vec();
    texts.extend_from_slice(&[
        b"ls src | head -20 && echo \"$(date +%F)\" $HOME",
        b"echo a \\",
        b"f() { echo x; }; f",
        b"",
        b"   ",
        b"# only a comment",
        b"for i in 1 2; do echo $i; done > out.txt 2>&1",
        b"python3 -c 'import sys; print(sys.argv)' a b",
        b"echo one\necho two",
        b"[[ -n x && x == y* ]] && (( 1 + 2 ))",
    ]);
    let batched = BashPool::new();
    let found = batched.parse_many(&texts);
    // The texts a batch may hold, each parsing on its own, are all found.
    assert_eq!(found, 8, "forms found");
    let single = BashPool::new();
    for t in &texts {
        let shape = |p: &Parse| (std::mem::discriminant(p), p.canonical().map(str::to_string));
        let want = single.parse(t, false).unwrap();
        assert_eq!(shape(&batched.parse(t, false).unwrap()), shape(&want), "{t:?}");
        assert_eq!(
            batched.validate(t, false).unwrap().parses(),
            want.parses(),
            "{t:?}"
        );
    }
}

/// A pool keeps the canonical form of each text it parsed on its own (issue 20: a scan asked
/// `date +%F`, the body of a command substitution, once for every command holding it): asked
/// again, every text gets the answer its first question got and a fresh pool gives, whether
/// it parses, does not, parses only at the end of input, or goes through the gate's `bash -n`.
#[test]
fn a_repeated_parse_answers_as_the_first() {
    let mut texts: Vec<&[u8]> = PAIR_TEXTS.to_vec();
    texts.extend_from_slice(&[
        b"date +%F",
        b"echo \"today $(date +%F)\" < /dev/null",
        b"cat <<'EOF' > notes.md\nline\n$NOT_EXPANDED\nEOF",
        b"echo a \\",
        b"echo 'unterminated",
        b"}; echo broke",
        b"# only a comment",
        b"",
    ]);
    let shape = |p: &Parse| (std::mem::discriminant(p), p.canonical().map(str::to_string));
    let pool = BashPool::new();
    let first: Vec<_> = texts
        .iter()
        .map(|t| shape(&pool.parse(t, false).unwrap()))
        .collect();
    for (t, want) in texts.iter().zip(&first) {
        assert_eq!(&shape(&pool.parse(t, false).unwrap()), want, "{t:?} again");
        assert_eq!(
            &shape(&BashPool::new().parse(t, false).unwrap()),
            want,
            "{t:?} fresh"
        );
        let v = pool.validate(t, false).unwrap();
        assert_eq!(
            v.parses(),
            BashPool::new().validate(t, false).unwrap().parses(),
            "{t:?}"
        );
    }
}

/// Worker `k` of a scan is kept on the `k`-th CPU it may run on for a run of checks, the
/// pins of its questions reuse that one, and its CPU mask comes back when the guard drops.
#[test]
fn worker_pins_spread_over_the_cpus_and_restore_the_mask() {
    use rustix::thread::{sched_getaffinity, CpuSet};
    if std::env::var("IEC_WITNESS_PIN").is_ok_and(|v| v == "0") {
        return;
    }
    let before = sched_getaffinity(None).unwrap();
    let allowed: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| before.is_set(c)).collect();
    let pool = BashPool::new();
    for k in 0..allowed.len() + 1 {
        let outer = pool.hold_cpu_for_worker(k).expect("pinned");
        let mask = sched_getaffinity(None).unwrap();
        assert_eq!(mask.count(), 1, "worker {k}");
        assert!(mask.is_set(allowed[k % allowed.len()]), "worker {k}");
        let inner = pool.hold_cpu().expect("nested pin");
        drop(inner);
        assert!(
            sched_getaffinity(None).unwrap() == mask,
            "an inner pin keeps the outer one"
        );
        // A question under the pin is answered.
        assert!(pool.parse(b"echo pinned", false).unwrap().parses());
        drop(outer);
        assert!(
            sched_getaffinity(None).unwrap() == before,
            "worker {k}: mask restored"
        );
    }
}
