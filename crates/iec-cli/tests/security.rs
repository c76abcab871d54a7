//! Check mode executes nothing (issue 16), tried as an attacker would, through the `iec` binary:
//! generated break-out texts on every launch, the reported payloads, and poison attempts
//! against a running witness daemon. Evidence without strace: canary files, a loopback listener
//! that must see no connection, a `PWNED` marker that must not reach any output, and no witness
//! process left once `iec` has exited.
//!
//! The tests of this file run one at a time (a lock), so that "no process is left" speaks of
//! this test's `iec` alone; the test process adopts what its children leave, so processes of
//! anything else running on the machine do not count.

use serde_json::{json, Value};
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const IEC: &str = env!("CARGO_BIN_EXE_iec");

static SERIAL: Mutex<()> = Mutex::new(());

/// The bash- and dash-parsing launches: a text their shell rejects must never "correspond".
const BASH_LAUNCHES: &[&str] = &[
    "bash-c",
    "bash-lc",
    "claude-code-2.1.332-linux",
    "claude-code-2.1.72-linux",
    "claude-code-git-bash-windows",
    "codex-exec-command-linux",
    "codex-shell-command-linux",
    "gemini-cli-linux",
    "goose-linux",
    "opencode-linux",
    "opencode-windows-git-bash",
    "tmux-send-keys",
    "openhands-tmux",
];
const DASH_LAUNCHES: &[&str] = &["sh-c"];

/// Where an attack would leave traces: a directory for canary files and a loopback listener.
struct Traps {
    dir: tempfile::TempDir,
    listener: TcpListener,
}

impl Traps {
    fn new() -> Traps {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Traps {
            dir: tempfile::Builder::new().prefix("iec-canary-").tempdir().unwrap(),
            listener,
        }
    }

    /// Commands that act, with no `}` in them: a program, a write, a connection, a read whose
    /// content would be printed with the marker.
    fn actions(&self, n: usize) -> String {
        let d = self.dir.path().display();
        let port = self.listener.local_addr().unwrap().port();
        format!(
            "/usr/bin/touch {d}/exec-{n}; printf x > {d}/write-{n}; exec 3<>/dev/tcp/127.0.0.1/{port}; \
             read -r l < /etc/hostname; printf 'PWN''ED-%s' \"$l\"; ( /usr/bin/touch {d}/fork-{n} ) &"
        )
    }

    /// Nothing was written and nobody connected.
    fn assert_untouched(&self, what: &str) {
        let left: Vec<_> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "{what}: files appeared: {left:?}");
        match self.listener.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("{what}: the loopback listener was reached: {other:?}"),
        }
    }
}

/// Makes this test process the reaper of every process its `iec` children leave behind: an
/// orphaned witness is then re-parented here rather than to init, and can be told apart from
/// processes of anything else running on the machine.
fn adopt_orphans() {
    // SAFETY: prctl with an integer argument.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(
        r,
        0,
        "PR_SET_CHILD_SUBREAPER: {}",
        std::io::Error::last_os_error()
    );
}

/// Live processes (not zombies) descended from this test process: what the `iec` it ran left.
fn processes_left() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut procs = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
                .unwrap_or_default()
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd: String = String::from_utf8_lossy(&cmd).chars().take(80).collect();
        let pid = e.file_name().to_string_lossy().into_owned();
        procs.push((pid, field("PPid:"), field("State:"), field("Uid:"), cmd));
    }
    let parent: std::collections::HashMap<String, String> =
        procs.iter().map(|(p, pp, ..)| (p.clone(), pp.clone())).collect();
    let descends = |p: &String| {
        let mut p = p.clone();
        for _ in 0..64 {
            match parent.get(&p) {
                Some(pp) if *pp == me => return true,
                Some(pp) => p = pp.clone(),
                None => return false,
            }
        }
        false
    };
    procs
        .iter()
        .filter(|(p, _, state, ..)| state != "Z" && descends(p))
        .map(|(p, pp, _, uid, cmd)| format!("pid {p} ppid {pp} uid {uid}: {cmd:?}"))
        .collect()
}

/// Once `iec` has exited, nothing it started is alive (checked for up to 5 s: the kernel ends
/// a PID namespace's processes when its first one ends).
fn assert_no_witness_left(what: &str) {
    let t0 = Instant::now();
    loop {
        let left = processes_left();
        if left.is_empty() {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{what}: processes left: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `iec ARGS` with the text in a file; (exit code, stdout, stderr).
fn iec_with_text(args: &[&str], text: &str) -> (i32, String, String) {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    let o = Command::new(IEC)
        .args(args)
        .arg("--command-file")
        .arg(f.path())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn real_syntax_ok(shell: &str, text: &str) -> bool {
    Command::new(shell)
        .args(["-n", "-c", text])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Texts that try to close the witness's wrapper: a `}` with neighbours spelled every way bash
/// joins tokens (line continuations, operators, blanks), heredoc delimiters, then acting commands
/// and a function header that would swallow the wrapper's own `}`.
fn break_out_texts(traps: &Traps) -> Vec<String> {
    let joiners = ["", "\n", "\\\n", "\\\n\\\n", " ", ";", "&", "|", "\\\\\n", "\t"];
    let mut texts = vec![];
    let mut n = 0;
    for p in ["\n", "\\\n", ";\\\n", " "] {
        for q in joiners {
            n += 1;
            texts.push(format!("true{p}}}{q};{}; __x() {{\ntrue", traps.actions(n)));
        }
    }
    for head in [
        "cat <<'}'\nx\n",
        "cat <<E\n}\nE\n",
        "cat <<-}\n\t}\n",
        ": $(\n}\\\n)\n",
        "case x in\n}\\\n) ;;\nesac\n",
    ] {
        n += 1;
        texts.push(format!("{head}}}\\\n;{}; __x() {{\ntrue", traps.actions(n)));
    }
    texts
}

#[test]
fn break_out_texts_run_nothing_on_any_launch() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    adopt_orphans();
    let traps = Traps::new();
    let texts = break_out_texts(&traps);
    let mut rejected = 0;
    for text in &texts {
        let (code, out, err) = iec_with_text(&["check", "--launch", "all", "--format", "json"], text);
        assert!(matches!(code, 0 | 1 | 3), "exit {code} for {text:?}: {err}");
        assert!(
            !out.contains("PWNED") && !err.contains("PWNED"),
            "the marker was printed for {text:?}"
        );
        let reports: Vec<Value> = serde_json::from_str(&out).unwrap();
        let bash_rejects = !real_syntax_ok("bash", text);
        let dash_rejects = !real_syntax_ok("dash", text);
        rejected += usize::from(bash_rejects);
        for r in &reports {
            let id = r["launch"].as_str().unwrap();
            let rejects = (BASH_LAUNCHES.contains(&id) && bash_rejects)
                || (DASH_LAUNCHES.contains(&id) && dash_rejects);
            if rejects {
                assert_ne!(
                    r["verdict"], "corresponds",
                    "{id} on {text:?}, which its shell rejects"
                );
            }
        }
        traps.assert_untouched(&format!("{text:?}"));
    }
    assert_no_witness_left("break-out texts");
    println!(
        "{} texts on every launch, {rejected} rejected by bash -n; nothing ran",
        texts.len()
    );
    assert!(
        rejected * 2 > texts.len(),
        "most generated texts must be ones bash rejects"
    );
}

/// The reported payloads: `}`+backslash-newline on bash-c, the recorder takeover on the
/// expansion witness (mcp-shell-server joins the argv for /bin/sh), and a spawn witness with an
/// argv that skips BASH_ENV.
#[test]
fn reported_payloads_run_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    adopt_orphans();
    let traps = Traps::new();
    let d = traps.dir.path().display().to_string();

    let (code, out, _) = iec_with_text(
        &["check", "--launch", "bash-c", "--format", "json"],
        &format!("true\n}}\\\n;printf PWN''ED; /usr/bin/touch {d}/a; __x() {{\ntrue"),
    );
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((code, r["verdict"].as_str()), (3, Some("unknown")), "{out}");
    assert!(!out.contains("PWNED"));

    let takeover = json!({"command": ["x;","__iec_rec()","{","((","${!__iec_g@}=0","));","(","SECONDS=0;","while","((SECONDS<15));","do","read","-t","1","<","/dev/zero","||","true;","done",")","&","};","__iec_rec","b"]});
    let declare = json!({"command": ["x;","declare()","{","printf","'declare -fr __iec_rec\\n'",";","};","printf()","{","read","-r","l","<","/etc/hostname",";","};","__iec_rec","b", &format!(";/usr/bin/touch {d}/b")]});
    for call in [takeover, declare] {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(call.to_string().as_bytes()).unwrap();
        let o = Command::new(IEC)
            .args([
                "check",
                "--launch",
                "mcp-shell-server",
                "--format",
                "json",
                "--call-json",
            ])
            .arg(f.path())
            .output()
            .unwrap();
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_ne!(r["verdict"], "corresponds", "{call}");
    }

    let launch = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
    let bash_c = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../iec-launches/launches/bash-c.toml"
    ))
    .unwrap();
    std::fs::write(
        launch.path(),
        bash_c
            .replacen("id = \"bash-c\"", "id = \"bash-posix\"", 1)
            .replacen(
                "argv = [\"bash\", \"-c\",",
                "argv = [\"bash\", \"--posix\", \"-c\",",
                1,
            ),
    )
    .unwrap();
    for (id, file) in [
        ("bash-posix", Some(launch.path())),
        ("bash-lc", None),
        ("codex-shell-command-linux", None),
    ] {
        let mut args = vec!["check", "--launch", id, "--witness", "spawn", "--format", "json"];
        if let Some(f) = file {
            args.extend(["--launch-file", f.to_str().unwrap()]);
        }
        let (code, out, err) = iec_with_text(&args, &format!("/usr/bin/touch {d}/spawn-{id}"));
        let r: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{id}: {out} {err}"));
        assert_eq!(code, 3, "{id}: {out}");
        assert_eq!(r["attribution"], "witness-refused", "{id}: {out}");
    }
    traps.assert_untouched("reported payloads");
    assert_no_witness_left("reported payloads");
}

/// A PreToolUse document for a Bash call.
fn pre(command: &str) -> Vec<u8> {
    json!({
        "session_id": "s", "transcript_path": "/x.jsonl", "cwd": "/", "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "description": "d", "timeout": 120000},
        "tool_use_id": "toolu_1"
    })
    .to_string()
    .into_bytes()
}

fn hook(socket: &Path, stdin: &[u8]) -> (i32, String, String) {
    let mut c = Command::new(IEC)
        .args(["hook", "claude-code", "--launch", "claude-code-2.1.72-linux"])
        .env("IEC_DAEMON_SOCKET", socket)
        .env("IEC_DAEMON", "only")
        .env_remove("IEC_INTENT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin).unwrap();
    let o = c.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Issue 16, reproduction 3: a call that defined `declare` in a witness, sent a dozen times to a
/// running daemon, made every later comparison equal, and the hook let `printf '%s' 'a != b'`
/// through unrepaired. After any number of such attempts, and of texts that try to change the
/// expansion server's state, the daemon-backed hook still repairs it.
#[test]
fn poisoned_daemon_still_repairs() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    adopt_orphans();
    let traps = Traps::new();
    let dir = tempfile::Builder::new()
        .prefix("iec-sec-daemon-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let socket = dir.path().join("d.sock");
    let mut daemon = Command::new(IEC)
        .args(["daemon", "--idle-exit", "120"])
        .env("IEC_DAEMON_SOCKET", &socket)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        if t0.elapsed() > Duration::from_secs(30) || daemon.try_wait().unwrap().is_some() {
            let _ = daemon.kill();
            let o = daemon.wait_with_output().unwrap();
            panic!("no daemon: {}", String::from_utf8_lossy(&o.stderr));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let repaired =
        "\"updatedInput\":{\"command\":\"eval $'printf \\\\x27\\\\x25s\\\\x27 \\\\x27a \\\\x21= b\\\\x27'\"";
    let (code, first, err) = hook(&socket, &pre("printf '%s' 'a != b'"));
    assert_eq!(code, 0, "{err}");
    assert!(first.contains(repaired), "before any poison: {first}");
    let d = traps.dir.path().display();
    let poisons = [
        "true\n}\\\n;declare() { printf ':'; }; __x() {\ntrue".to_string(),
        "true\n}\\\n;printf() { :; }; typeset() { :; }; __x() {\ntrue".to_string(),
        format!("true\n}}\\\n;/usr/bin/touch {d}/p; __x() {{\ntrue"),
        "echo $((IFS=5)) 'q' x!y".to_string(),
        "echo $((POSIXLY_CORRECT=1)) $((FUNCNEST=1)) 'a' b!".to_string(),
        "echo ${!__iec@} $((__iec_mode=0)) $((__iec_tainted=0)) 'a' x!".to_string(),
        "echo 'a' x!; declare() { :; }; echo b!".to_string(),
        "printf '%s' 'a' x! | cat; __iec_rec() { :; }".to_string(),
    ];
    for round in 0..12 {
        for p in &poisons {
            let (code, out, err) = hook(&socket, &pre(p));
            assert_eq!(code, 0, "round {round} {p:?}: {err}");
            assert!(!out.contains("PWNED"));
        }
    }
    let (_, after, err) = hook(&socket, &pre("printf '%s' 'a != b'"));
    assert_eq!(
        after, first,
        "after the poison attempts the hook answers otherwise: {err}"
    );
    traps.assert_untouched("poisoned daemon");
    let _ = daemon.kill();
    let _ = daemon.wait();
    assert_no_witness_left("poisoned daemon");
}

/// Red team, rounds 2 and 3: `$(<file)` is performed by bash without a command the DEBUG trap
/// could skip, and an expansion witness read files named by the text into the report (a file in
/// /tmp, /etc/passwd, then system files under /usr). Landlock confines a witness's reads to its
/// program, its libraries, the locale and its own directory.
#[test]
fn files_named_by_a_text_are_not_read_into_reports() {
    let dir = tempfile::Builder::new()
        .prefix("iec-secret-")
        .tempdir_in("/tmp")
        .unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "MARKER_FILE_4412\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let os_line = os_release
        .lines()
        .find(|l| l.len() > 12)
        .unwrap_or("")
        .to_string();
    // (Round 4: files the witness's own loader may read, and a file read through an assignment.)
    for file in [
        secret.display().to_string(),
        "/etc/os-release".into(),
        "/usr/bin/env".into(),
        "/etc/ld.so.cache".into(),
    ] {
        for text in [
            format!("echo $(<{file})"),
            format!("echo \"$(<{file})\""),
            format!("echo ${{a:=$(<{file})}}$a"),
        ] {
            for launch in ["mcp-shell-server", "bash-c", "claude-code-2.1.72-linux"] {
                let (_, out, err) = iec_with_text(
                    &["check", "--launch", launch, "--full-witness", "--format", "json"],
                    &text,
                );
                let all = format!("{out}{err}");
                assert!(!all.contains("MARKER_FILE_4412"), "{launch} {text}: {all}");
                assert!(
                    os_line.is_empty() || !all.contains(&os_line),
                    "{launch} {text}: {all}"
                );
                assert!(
                    !all.contains("\\u007fELF") && !all.contains("\u{7f}ELF"),
                    "{launch} {text}: {all}"
                );
                assert!(
                    !all.contains("ld.so-1.7.0") && !all.contains("glibc-ld.so.cache"),
                    "{launch} {text}: {all}"
                );
            }
        }
    }
}

/// Red team round 6: the terminal witness's directory (its log holds every typed text) stayed
/// in the temporary directory after 9 of 20 checks: the watchdog that removes it was killed by
/// the hang-up of the pane's terminal first.
#[test]
fn terminal_witness_directories_outlived_the_check() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..12 {
        let launch = ["tmux-send-keys", "openhands-tmux"][i % 2];
        let o = Command::new(IEC)
            .args(["check", "--launch", launch, "--command", "echo \"$x\""])
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // The watchdog removes the directory once the check has exited.
    let t0 = Instant::now();
    loop {
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
