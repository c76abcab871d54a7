//! The terminal witness under attack, with real tmux and bash (issue 16, item 1): whatever keys a
//! text holds, nothing it contains runs (canary files, a loopback listener, marker processes),
//! every readline function that acts on the line is refused and reported, and no process of the
//! witness outlives it or the process that started it.
//!
//! Needs tmux (`IEC_SKIP_TMUX=1` skips, and says so). The jail helper is this package's
//! `iec-jail` program.

use iec_witness::tmux::{Ending, TmuxWitness, Typed, Typist};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Every witness of this test program lives under one directory (its `TMPDIR`), which names its
/// processes; the tests run one at a time so that they can count them.
fn setup() -> Option<(MutexGuard<'static, ()>, &'static Path)> {
    static LOCK: Mutex<()> = Mutex::new(());
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if !iec_witness::tmux::available() {
        if std::env::var_os("IEC_SKIP_TMUX").is_some() {
            eprintln!("skipped: tmux is not installed (IEC_SKIP_TMUX=1)");
            return None;
        }
        panic!("tmux is not installed (Debian: apt-get install tmux); set IEC_SKIP_TMUX=1 to skip");
    }
    let dir = DIR.get_or_init(|| {
        let d = tempfile::Builder::new()
            .prefix("iec-tmux-test-")
            .tempdir()
            .unwrap();
        std::env::set_var("TMPDIR", d.path());
        std::env::set_var("IEC_JAIL_HELPER", env!("CARGO_BIN_EXE_iec-jail"));
        d
    });
    Some((guard, dir.path()))
}

fn typist(literal: bool) -> Typist {
    Typist {
        literal,
        suffix: if literal {
            String::new()
        } else {
            "; tmux wait -S done".into()
        },
        enter_same_call: !literal,
        history_expansion: !literal,
        width: 160,
        height: 40,
    }
}

/// Processes whose command line or environment names `marker` (tmux's `TMUX` variable names the
/// server's socket, under the witness's directory, in every process of the pane), with their
/// command lines.
fn procs_of(marker: &Path) -> Vec<(u32, String)> {
    let m = marker.as_os_str().as_encoded_bytes();
    let me = std::process::id();
    let mut v = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        // This process (a test runs in a thread of its own) is not a witness.
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let tgid = status
            .lines()
            .find_map(|l| l.strip_prefix("Tgid:"))
            .map(str::trim);
        if pid == me || tgid == Some(&*me.to_string()) {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let has = |b: &[u8]| b.windows(m.len()).any(|w| w == m);
        if has(&cmd) || has(&env) {
            let c = String::from_utf8_lossy(&cmd).replace('\0', " ");
            v.push((pid, c));
        }
    }
    v
}

/// Waits up to `limit` for the witness's processes to be at most `n` witnesses' worth: per
/// witness the tmux server, the helper's two (the jail's waiting process and the watchdog) and
/// one more, the pane's bash (a subshell it forked counts as one more).
fn settle(marker: &Path, n: usize, limit: Duration) -> Vec<(u32, String)> {
    let t0 = Instant::now();
    loop {
        let p = procs_of(marker);
        let shells = p
            .iter()
            .filter(|(_, c)| !c.contains(" __jail ") && !c.contains(" new-session "))
            .count();
        if (p.len() <= 4 * n && shells <= n) || t0.elapsed() > limit {
            return p;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The canary listener: a loopback TCP port no witness may reach.
struct Listener {
    l: TcpListener,
    port: u16,
}

impl Listener {
    fn new() -> Listener {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        Listener { l, port }
    }

    fn untouched(&self) -> bool {
        matches!(self.l.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }
}

/// A canary directory anyone may write to (the jailed shell runs as a user of its own when the
/// tests run as root: a file it fails to create must fail because of the jail, not the mode).
fn canary_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::Builder::new()
        .prefix("iec-canary-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

fn left(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect()
}

/// The text that would leave a canary file and a connection if any expansion of it ran.
fn canary_text(dir: &Path, n: usize, port: u16) -> String {
    format!(
        "$(/usr/bin/touch {}/c{n})$(exec 3<>/dev/tcp/127.0.0.1/{port})",
        dir.display()
    )
}

/// A bind -p key sequence as bytes (`None`: it needs a NUL, which no text can hold). `\000` last
/// is readline's "any other key" slot of the prefix before it: any key then, here `a`.
fn keyseq(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let rest = &b[i + 1..];
        if rest.starts_with(b"C-") {
            let (c, used) = match rest.get(2..) {
                Some([b'\\', x, ..]) => (*x, 4),
                Some([x, ..]) => (*x, 3),
                _ => return None,
            };
            let k = if c == b'?' { 0x7f } else { c & 0x1f };
            if k == 0 {
                return None;
            }
            out.push(k);
            i += 1 + used;
        } else if rest.starts_with(b"e") {
            out.push(0x1b);
            i += 2;
        } else if rest.len() >= 3 && rest[..3].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = u8::from_str_radix(std::str::from_utf8(&rest[..3]).unwrap(), 8).unwrap();
            if v == 0 {
                if i + 4 == b.len() {
                    out.push(b'a');
                } else {
                    return None;
                }
            } else {
                out.push(v);
            }
            i += 4;
        } else if let Some(&c) = rest.first() {
            out.push(c);
            i += 2;
        } else {
            return None;
        }
    }
    Some(out)
}

/// The emacs key bindings of a plain interactive bash on this machine (`bind -p`, the system's
/// inputrc read as the witness's bash reads it): (key sequence, function).
fn default_bindings() -> Vec<(String, String)> {
    let home = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(iec_witness::bash_path())
        .args(["--norc", "--noprofile", "-i", "-c", "bind -p"])
        .env_clear()
        .env("HOME", home.path())
        .env("LANG", "C.UTF-8")
        .env("TERM", "screen")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let mut v = vec![];
    for l in text.lines() {
        let Some(rest) = l.strip_prefix('"') else { continue };
        let Some((seq, f)) = rest.rsplit_once("\": ") else {
            continue;
        };
        v.push((seq.to_string(), f.to_string()));
    }
    assert!(v.len() > 100, "bind -p gave {} bindings: {text}", v.len());
    v
}

/// Functions that act on the line while it is typed, by name (an independent list, not the
/// witness's patterns): every default binding of these must be refused and reported.
fn acts_on_line(f: &str) -> bool {
    f.contains("expand")
        || f.contains("complete")
        || f.starts_with("possible-")
        || f.starts_with("glob-")
        || f.contains("execute")
        || matches!(
            f,
            "magic-space"
                | "insert-last-argument"
                | "yank-last-arg"
                | "yank-nth-arg"
                | "operate-and-get-next"
                | "insert-completions"
                | "spell-correct-word"
                | "insert-comment"
                | "re-read-init-file"
                | "delete-char-or-list"
                | "vi-editing-mode"
        )
}

/// A witness for `t`, or the same one when it may type another text.
fn next(w: Option<TmuxWitness>, t: &Typist) -> TmuxWitness {
    match w {
        Some(w) if w.reusable() => w,
        other => {
            drop(other);
            TmuxWitness::start(t).unwrap()
        }
    }
}

#[test]
fn every_default_key_binding_runs_nothing() {
    let Some((_g, marker)) = setup() else { return };
    let canaries = canary_dir();
    let listener = Listener::new();
    let bindings = default_bindings();
    let ty = typist(true);
    let mut w = None;
    let mut refused = 0;
    let mut skipped = vec![];
    for (n, (seq, func)) in bindings.iter().enumerate() {
        let Some(keys) = keyseq(seq) else {
            skipped.push(format!("{seq}: {func}"));
            continue;
        };
        let mut text = canary_text(canaries.path(), n, listener.port).into_bytes();
        text.extend_from_slice(&keys);
        let Ok(text) = String::from_utf8(text) else {
            // Bytes 128-255 alone (self-insert): a text is UTF-8.
            assert_eq!(func, "self-insert", "{seq}");
            continue;
        };
        let mut wit = next(w.take(), &ty);
        let t = wit.type_text(&text);
        let typed: Typed = t.unwrap_or_else(|e| panic!("{seq} ({func}): {e}"));
        if acts_on_line(func) {
            // (A key is listed under every name of its function: `\e.` is insert-last-argument
            // and yank-last-arg; the recorder names one.)
            assert!(
                !typed.refused_keys.is_empty() && typed.refused_keys.iter().all(|k| acts_on_line(k)),
                "{seq} ({func}) was not refused: {typed:?}"
            );
            refused += 1;
        }
        assert!(
            left(canaries.path()).is_empty(),
            "{seq} ({func}) ran the text: {:?}",
            left(canaries.path())
        );
        assert!(
            listener.untouched(),
            "{seq} ({func}): a connection reached the listener"
        );
        let p = settle(marker, 1, Duration::from_secs(2));
        assert!(p.len() <= 4, "{seq} ({func}) left processes: {p:?}");
        w = Some(wit);
    }
    drop(w);
    assert!(refused >= 30, "only {refused} bindings of acting functions");
    assert!(skipped.len() <= 2, "bindings not typed: {skipped:?}");
    let p = settle(marker, 0, Duration::from_secs(3));
    assert!(p.is_empty(), "processes left after the last witness ended: {p:?}");
}

/// The exact reproductions of issue 16 item 1, on both typists.
#[test]
fn the_reported_attacks_run_nothing_and_are_reported() {
    let Some((_g, marker)) = setup() else { return };
    let canaries = canary_dir();
    let listener = Listener::new();
    let d = canaries.path().display().to_string();
    let port = listener.port;
    let texts = [
        // shell-expand-line on a command substitution.
        format!("$(/usr/bin/touch {d}/a)\x1b\x05"),
        // The prompt command's name (with its nonce) expanded into the line, then used.
        format!("$PROMPT_COMMAND $(/usr/bin/touch {d}/b)\x1b\x05"),
        format!("$(eval \"$PROMPT_COMMAND; /usr/bin/touch {d}/c\")\x1b\x05"),
        format!(
            "$PROMPT_COMMAND\x1b\x05; /usr/bin/setsid /usr/bin/sleep 300 & exec 3<>/dev/tcp/127.0.0.1/{port}"
        ),
        format!("}}\n$PROMPT_COMMAND\x1b\x05\n/usr/bin/touch {d}/d"),
        // The shell's idle logout switched off.
        "$((TMOUT=0))\x1b\x05".to_string(),
        "${TMOUT:=0}$((TMOUT=0))\x1b\x05".to_string(),
        // Other expanding keys on the same texts.
        format!("$(/usr/bin/touch {d}/e)\x1b^"),
        format!("$(/usr/bin/touch {d}/f)\x18\x05"),
        format!("$(/usr/bin/touch {d}/g)\x0f"),
        format!("$(/usr/bin/touch {d}/h)/\t\t"),
        format!("$(/usr/bin/touch {d}/i)\x03"),
    ];
    for literal in [true, false] {
        let ty = typist(literal);
        for text in &texts {
            let mut w = TmuxWitness::start(&ty).unwrap();
            let t = w.type_text(text).unwrap();
            assert!(
                !t.refused_keys.is_empty() || t.ending != Ending::Complete,
                "{text:?}: neither refused nor stopped: {t:?}"
            );
            // A refused key only records its name: a witness that read cleanly otherwise reads
            // the next text as before.
            if w.reusable() {
                let t = w.type_text("echo ok").unwrap();
                let want = format!("echo ok{}", ty.suffix);
                assert_eq!(
                    (t.ending, t.read.as_str()),
                    (Ending::Complete, want.as_str()),
                    "after {text:?}"
                );
                assert!(t.refused_keys.is_empty());
            }
            assert!(
                left(canaries.path()).is_empty(),
                "{text:?} ran: {:?}",
                left(canaries.path())
            );
            assert!(
                listener.untouched(),
                "{text:?}: a connection reached the listener"
            );
            drop(w);
            let p = settle(marker, 0, Duration::from_secs(3));
            assert!(p.is_empty(), "{text:?} left processes: {p:?}");
        }
    }
    // No `sleep 300` of any witness anywhere.
    let sleepers: Vec<_> = procs_of(Path::new("sleep 300"));
    assert!(sleepers.is_empty(), "{sleepers:?}");
}

/// The bytes are the attack: the same keys typed into a plain interactive bash in tmux do run
/// the command substitution (so the tests above would see it).
#[test]
fn control_plain_bash_runs_the_expansion() {
    let Some((_g, _marker)) = setup() else { return };
    let canaries = canary_dir();
    let sock = canaries.path().join("sock");
    let tmux = iec_witness::tmux::tmux_path();
    let run = |args: &[&str]| {
        std::process::Command::new(&tmux)
            .arg("-S")
            .arg(&sock)
            .args(args)
            .status()
            .unwrap()
    };
    let bash = iec_witness::bash_path().display().to_string();
    assert!(run(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "w",
        &bash,
        "--norc",
        "--noprofile",
        "-i"
    ])
    .success());
    std::thread::sleep(Duration::from_millis(500));
    let text = format!("$(/usr/bin/touch {}/plain)", canaries.path().display());
    run(&["send-keys", "-t", "w", "-l", &text]);
    run(&["send-keys", "-t", "w", "-H", "1b", "05"]);
    let t0 = Instant::now();
    while !canaries.path().join("plain").exists() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    run(&["kill-server"]);
    assert!(
        canaries.path().join("plain").exists(),
        "ESC C-e did not expand in a plain bash"
    );
}

/// Ordinary texts still read as before, and a witness that read cleanly is used again with the
/// same processes.
#[test]
fn clean_readings_and_reuse() {
    let Some((_g, marker)) = setup() else { return };
    let mut w = TmuxWitness::start(&typist(true)).unwrap();
    let t = w.type_text("echo \"a\nb\"").unwrap();
    assert_eq!(t.ending, Ending::Complete);
    assert_eq!(t.read, "echo \"a\nb\"");
    assert_eq!(t.canonical.as_deref(), Some("    echo \"a\nb\""));
    assert!(t.refused_keys.is_empty());
    assert!(w.reusable());
    let before = procs_of(marker).len();
    assert_eq!(
        before,
        4,
        "server, the jail's waiting process, the watchdog, bash: {:?}",
        procs_of(marker)
    );
    let t = w.type_text("echo 'x").unwrap();
    assert_eq!(t.ending, Ending::Pending);
    assert!(!w.reusable());
    drop(w);
    // A syntax error ends the definition early; nothing was defined or run, the lines after it
    // were swallowed, and the shell reads the next text as before.
    let mut w = TmuxWitness::start(&typist(true)).unwrap();
    for text in [
        "echo (",
        "echo (
echo x
}",
        "fi",
    ] {
        let t = w.type_text(text).unwrap();
        assert_eq!(t.ending, Ending::Early, "{text:?}");
        assert!(t.screen.contains("syntax error"), "{}", t.screen);
        assert!(w.reusable(), "{text:?}");
        let t = w.type_text("echo ok").unwrap();
        assert_eq!((t.ending, t.read.as_str()), (Ending::Complete, "echo ok"));
        assert_eq!(procs_of(marker).len(), 4, "{:?}", procs_of(marker));
    }
    // A text that ends the definition and defines functions of its own (no command runs, the
    // DEBUG trap sees nothing) retires the shell, however it ended.
    for text in [
        "true; }; g() { :; }; __iec_r() { :",
        "true; }; g() { :; }
(",
    ] {
        let t = w.type_text(text).unwrap();
        assert!(
            matches!(t.ending, Ending::Complete | Ending::Early),
            "{text:?}: {t:?}"
        );
        assert!(!w.reusable(), "{text:?}: {t:?}");
        w = TmuxWitness::start(&typist(true)).unwrap();
    }
    drop(w);
    assert!(settle(marker, 0, Duration::from_secs(3)).is_empty());
}

/// Without a jail helper the witness refuses to start: it never runs bash unjailed.
#[test]
fn no_helper_no_witness() {
    let Some((_g, marker)) = setup() else { return };
    std::env::set_var("IEC_JAIL_HELPER", "/nonexistent/iec-jail");
    let r = TmuxWitness::start(&typist(true));
    std::env::set_var("IEC_JAIL_HELPER", env!("CARGO_BIN_EXE_iec-jail"));
    match r {
        Err(iec_witness::WitnessError::Start { program, source }) => {
            assert_eq!(program, "iec-jail");
            assert!(source.to_string().contains("IEC_JAIL_HELPER"), "{source}");
        }
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("a witness started without its jail helper"),
    }
    assert!(procs_of(marker).is_empty());
    // A helper that is not one (it exits at once): the witness does not start either.
    std::env::set_var("IEC_JAIL_HELPER", "/bin/true");
    let r = TmuxWitness::start(&typist(true));
    std::env::set_var("IEC_JAIL_HELPER", env!("CARGO_BIN_EXE_iec-jail"));
    assert!(r.is_err(), "a witness started under /bin/true");
    assert!(settle(marker, 0, Duration::from_secs(3)).is_empty());
}

/// The process that started witnesses exits without ending them (as `iec` does with its global
/// pool): the watchdog ends them at once.
#[test]
fn witnesses_end_with_their_owner() {
    let Some((_g, _marker)) = setup() else { return };
    let dir = tempfile::Builder::new()
        .prefix("iec-tmux-owner-")
        .tempdir()
        .unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "owner_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("IEC_TMUX_OWNER_CHILD", dir.path())
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(
        so.contains("owner-child: 3 witnesses"),
        "{so}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = settle(dir.path(), 0, Duration::from_secs(3));
    assert!(p.is_empty(), "witnesses outlived their owner: {p:?}");
}

/// Run by `witnesses_end_with_their_owner` in a process of its own.
#[test]
#[ignore]
fn owner_child() {
    let Some(dir) = std::env::var_os("IEC_TMUX_OWNER_CHILD") else {
        return;
    };
    std::env::set_var("IEC_JAIL_HELPER", env!("CARGO_BIN_EXE_iec-jail"));
    let mut ws = vec![];
    for literal in [true, false, true] {
        let mut w = TmuxWitness::start(&typist(literal)).unwrap();
        w.type_text("echo hi").unwrap();
        ws.push(w);
    }
    let n = procs_of(Path::new(&dir)).len();
    assert_eq!(n, 12, "{:?}", procs_of(Path::new(&dir)));
    println!("owner-child: {} witnesses", ws.len());
    // Exit without dropping them.
    std::mem::forget(ws);
    std::process::exit(0);
}

/// Texts that close the wrapping function on their own line (callers keep them from the witness
/// with `bash -n`, see `gate`; here they are typed anyway): the DEBUG trap skips every command,
/// the witness says so and is not used again.
#[test]
fn break_outs_past_the_gate_are_stopped() {
    let Some((_g, marker)) = setup() else { return };
    let canaries = canary_dir();
    let d = canaries.path().display().to_string();
    let texts = [
        (
            format!("true; }} ; /usr/bin/touch {d}/a ; x=$(/usr/bin/touch {d}/b); __iec_r() {{ :"),
            Ending::Stopped,
        ),
        (
            "true; } ; trap - DEBUG; echo $((TMOUT=0)) ; __iec_r() { :".to_string(),
            Ending::Stopped,
        ),
        // The recorder's own `builtin` replaced: nothing answers, and nothing ran.
        (
            format!("true; }}; builtin() {{ /usr/bin/touch {d}/c; }}; __iec_r() {{ :"),
            Ending::Timeout,
        ),
    ];
    for (text, ending) in texts {
        let mut w = TmuxWitness::start(&typist(true)).unwrap();
        let t = w.type_text(&text).unwrap();
        assert_eq!(t.ending, ending, "{text:?}: {t:?}");
        assert!(!w.reusable());
        assert!(
            left(canaries.path()).is_empty(),
            "{text:?} ran: {:?}",
            left(canaries.path())
        );
        drop(w);
        assert!(settle(marker, 0, Duration::from_secs(3)).is_empty());
    }
}

/// Red team, second round: a `}` that readline editing (`x`, DEL, `}`) or history expansion
/// (`!#:1:s/{x/}/`) builds after the gate looked at the typed text ended the witness's wrapper,
/// and what followed read a file into an error message. Editing keys are now refused and the
/// witness reads with history expansion off: the shell reads exactly the typed characters,
/// nothing leaves the wrapper, and no byte of the file reaches the reading.
#[test]
fn editing_and_history_cannot_build_a_closing_brace() {
    let Some((_g, marker)) = setup() else { return };
    let canaries = canary_dir();
    let secret = canaries.path().join("secret");
    std::fs::write(&secret, "MARKER_7731\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let s = secret.display();
    let tail = format!("; for x in $(( $(<{s}) )); do :; done");
    for literal in [true, false] {
        let ty = typist(literal);
        // DEL is backward-delete-char: refused, so the typed `x` stays and no `}` stands alone.
        let mut w = TmuxWitness::start(&ty).unwrap();
        let t = w.type_text(&format!("true; x\x7f}}{tail}")).unwrap();
        assert!(
            t.refused_keys.iter().any(|k| k == "backward-delete-char"),
            "{t:?}"
        );
        assert!(!format!("{t:?}").contains("MARKER_7731"), "{t:?}");
        drop(w);
        // Red team, third round: ESC-\ (delete-horizontal-space) deleted the backslash of `\"`,
        // which made a quoted `}` end the wrapper. A refused key drops its line and every line
        // after it: nothing of it is read, nothing runs (no error message of a redirection).
        let mut w = TmuxWitness::start(&ty).unwrap();
        let text = format!("true; echo \x1b\\\"; echo \"; }}; {{ :; }} < {s}; : \"; echo \x1b\\\"");
        let t = w.type_text(&text).unwrap();
        assert!(
            t.refused_keys.iter().any(|k| k == "delete-horizontal-space"),
            "{t:?}"
        );
        assert!(
            !t.screen.contains("Permission denied") && !t.screen.contains("MARKER_7731"),
            "{t:?}"
        );
        assert_ne!(
            t.ending,
            Ending::Stopped,
            "the DEBUG trap tripped: something ran: {t:?}"
        );
        assert!(!w.reusable(), "a witness that refused a key is used again");
        drop(w);
        // History expansion is not performed by the witness: the line is read as typed.
        let mut w = TmuxWitness::start(&ty).unwrap();
        let text = format!("true {{x; !#:1:s/{{x/}}/{tail}");
        let t = w.type_text(&text).unwrap();
        let want = format!("{text}{}", ty.suffix);
        assert_eq!(
            (t.ending, t.read.as_str()),
            (Ending::Complete, want.as_str()),
            "{t:?}"
        );
        assert!(t.refused_keys.is_empty() && w.reusable(), "{t:?}");
        assert!(!format!("{t:?}").contains("MARKER_7731"), "{t:?}");
        drop(w);
        let p = settle(marker, 0, Duration::from_secs(3));
        assert!(p.is_empty(), "left processes: {p:?}");
    }
    assert_eq!(left(canaries.path()), std::slice::from_ref(&secret));
}
