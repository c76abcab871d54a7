//! Check mode runs nothing on the terminal launches (issue 16, item 1), through the whole check:
//! the reported attacks (readline's shell-expand-line on a command substitution, on
//! `$PROMPT_COMMAND`, on `$((TMOUT=0))`) leave no file, connection or process and are never
//! "corresponds"; a burst of checks leaves no tmux server or bash once the checking process
//! exits. Needs tmux (`IEC_SKIP_TMUX=1` skips) and the jail helper (`iec-jail`, built by
//! `cargo test --workspace` or `cargo build -p iec-witness --bin iec-jail`).

use iec_check::{call_for_text, check, Options};
use iec_launches::Catalog;
use iec_witness::global;
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

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
    assert!(
        iec_witness::tmux::jail_helper().is_some(),
        "the terminal witness's jail helper is not built: run `cargo build -p iec-witness --bin iec-jail` (cargo test --workspace builds it)"
    );
    let dir = DIR.get_or_init(|| {
        let d = tempfile::Builder::new().prefix("iec-ptest-").tempdir().unwrap();
        std::env::set_var("TMPDIR", d.path());
        d
    });
    Some((guard, dir.path()))
}

/// Processes whose command line or environment names `marker` (the terminal witness's under a
/// `TMPDIR`: `TMPDIR/iec-tmux-`).
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
            v.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    v
}

/// Waits up to `limit` for at most `n` processes under `marker`.
fn settle(marker: &Path, n: usize, limit: Duration) -> Vec<(u32, String)> {
    let t0 = Instant::now();
    loop {
        let p = procs_of(marker);
        if p.len() <= n || t0.elapsed() > limit {
            return p;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn verdict(id: &str, text: &str) -> serde_json::Value {
    let cat = Catalog::builtin();
    let l = cat.get(id).unwrap();
    let r = check(l, &call_for_text(l, text), global(), Options::default()).unwrap();
    serde_json::to_value(&r).unwrap()
}

#[test]
fn reported_attacks_run_nothing_and_never_correspond() {
    let Some((_g, dir)) = setup() else { return };
    let marker = &dir.join("iec-tmux-");
    let canaries = tempfile::Builder::new()
        .prefix("iec-canary-")
        .tempdir_in("/tmp")
        .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(canaries.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let d = canaries.path().display().to_string();
    let texts = [
        format!("$(/usr/bin/touch {d}/a)\x1b\x05"),
        format!("$PROMPT_COMMAND $(/usr/bin/touch {d}/b)\x1b\x05"),
        format!("$(eval \"$PROMPT_COMMAND; /usr/bin/touch {d}/c\")\x1b\x05"),
        format!(
            "$PROMPT_COMMAND\x1b\x05; /usr/bin/setsid /usr/bin/sleep 300 & exec 3<>/dev/tcp/127.0.0.1/{port}"
        ),
        "$((TMOUT=0))\x1b\x05".to_string(),
        format!("echo hi # $(/usr/bin/touch {d}/e)\x1b\x05"),
        format!("$(/usr/bin/touch {d}/f)\x18\x05"),
        format!("$(/usr/bin/touch {d}/g)\x0f"),
        "{ echo a\n# x\x03\n}".to_string(),
    ];
    for id in ["tmux-send-keys", "openhands-tmux"] {
        for text in &texts {
            let v = verdict(id, text);
            assert_ne!(v["verdict"], "corresponds", "{id} {text:?}: {v}");
            let left: Vec<_> = std::fs::read_dir(canaries.path())
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            assert!(left.is_empty(), "{id} {text:?} ran: {left:?}");
            assert!(
                matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
                "{id} {text:?}: a connection reached the listener"
            );
        }
    }
    // The idle witnesses (at most one per typist) end with the pool.
    assert!(procs_of(marker).len() <= 8, "{:?}", procs_of(marker));
    iec_witness::tmux::global().clear();
    let p = settle(marker, 0, Duration::from_secs(3));
    assert!(p.is_empty(), "processes left: {p:?}");
}

/// 50 checks through the terminal launches in a process that then exits without ending its
/// witnesses (as `iec` does): none of their tmux servers or shells remain.
#[test]
fn a_burst_leaves_nothing_once_the_process_exits() {
    let Some((_g, _marker)) = setup() else { return };
    let dir = tempfile::Builder::new().prefix("iec-burst-").tempdir().unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "burst_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("IEC_TMUX_BURST", dir.path())
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(
        so.contains("burst: 50 checks"),
        "{so}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = settle(&dir.path().join("iec-tmux-"), 0, Duration::from_secs(3));
    assert!(
        p.is_empty(),
        "terminal witnesses outlived the checking process: {p:?}"
    );
}

/// Run by `a_burst_leaves_nothing_once_the_process_exits` in a process of its own.
#[test]
#[ignore]
fn burst_child() {
    let Some(dir) = std::env::var_os("IEC_TMUX_BURST") else {
        return;
    };
    let dir = Path::new(&dir);
    let cat = Catalog::builtin();
    let mut n = 0;
    for i in 0..25 {
        for id in ["tmux-send-keys", "openhands-tmux"] {
            let l = cat.get(id).unwrap();
            // Every fifth text ends the definition early (history expansion on tmux-send-keys),
            // every fifth has a refused key, the rest read cleanly.
            let text = match i % 5 {
                0 => format!("echo \"a!{i}b\""),
                1 => format!("echo {i}\x1b\x05"),
                _ => format!("echo \"{i}\""),
            };
            let opts = Options {
                full_witness: true,
                ..Default::default()
            };
            let r = check(l, &call_for_text(l, &text), global(), opts).unwrap();
            let v = serde_json::to_value(&r).unwrap();
            assert_ne!(v["verdict"], "unknown", "{id} {text:?}: {v}");
            n += 1;
        }
    }
    let p = procs_of(&dir.join("iec-tmux-"));
    assert!(p.len() <= 8, "witnesses accumulate: {p:?}");
    println!("burst: {n} checks, {} witness processes", p.len());
    std::process::exit(0);
}

/// Red team, fourth round: a backslash before a CR is an escaped CR for `bash -n` but a line
/// continuation in the terminal (CR is Enter), so `\`CR`}` closed the witness's wrapper and a
/// `for` word list ran its expansions at the shell's top level, into the report. The gate now
/// judges the text as the terminal delivers it (CR as a line break).
#[test]
fn a_backslash_before_a_carriage_return_cannot_end_the_wrapper() {
    let Some((_g, _dir)) = setup() else { return };
    let cat = Catalog::builtin();
    for id in ["tmux-send-keys", "openhands-tmux"] {
        let l = cat.get(id).unwrap();
        for text in [
            "echo x;\\\r} && for x in ${X:?MARK_TOPLEVEL_9}; do :; done",
            "{ :;\\\r}; } && for x in ${X:?MARK_TOPLEVEL_9}; do :; done",
        ] {
            let r = check(
                l,
                &call_for_text(l, text),
                global(),
                Options {
                    full_witness: true,
                    ..Options::default()
                },
            )
            .unwrap();
            let all = serde_json::to_string(&r).unwrap();
            assert_eq!(r.verdict, iec_core::Verdict::Diverges, "{id} {text:?}: {all}");
            assert!(
                !all.contains("X: MARK_TOPLEVEL_9"),
                "{id} {text:?} ran at the top level: {all}"
            );
        }
    }
}
