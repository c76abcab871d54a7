//! Check mode executes nothing. Adversarial calls — brace and `fi` break-outs, unterminated
//! here-documents, `$(…)`, backticks, `> file`, `exec`, `kill`, aliases, `/dev/tcp` — are checked
//! on every launch; afterwards the canary directory must be empty, no process may carry the
//! marker, and the loopback listener must have seen no connection. Calls: IEC_CANARY_CASES
//! (default 4000, new every UTC day) × every launch (the terminal launches: every 4th call).

use iec_check::{call_for_text, check, Options};
use iec_launches::Catalog;
use iec_testkit::{gen, par};
use iec_witness::global;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};

fn processes_with(marker: &str) -> Vec<String> {
    let mut out = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) && !cmd.contains("canary") {
                out.push(cmd);
            }
        }
    }
    out
}

#[test]
fn adversarial_calls_leave_no_trace() {
    let n: usize = std::env::var("IEC_CANARY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4_000);
    let canary = tempfile::Builder::new().prefix("iec-canary-").tempdir().unwrap();
    let dir = canary.path().to_str().unwrap().to_string();
    let marker = format!("IECMARK{}", std::process::id());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let checks = AtomicUsize::new(0);
    let cat = Catalog::builtin();
    let launches = iec_testkit::rotation::launches_under_test(&cat);
    // The terminal launches type each text into a real tmux session (tens of times the cost of
    // a check elsewhere; `tmux_security.rs` types every readline canary into them): they get
    // every `IEC_CANARY_TERMINAL_EVERY`-th call (default 4).
    let terminal_every: usize = std::env::var("IEC_CANARY_TERMINAL_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
        .max(1);
    // Two seeded streams of n/2 calls each, new every UTC day (`IEC_ROTATION=K` repeats day K),
    // made first; then one slice of them per thread (the same calls on any number of threads).
    let day = iec_testkit::rotation::start() as u64;
    eprintln!("calls of day {day} (IEC_ROTATION={day} repeats them)");
    let texts: Vec<(usize, String)> = (0..2u64)
        .flat_map(|t| {
            let mut r = gen::Rng::new(777 + t + 2 * day);
            let (dir, marker) = (&dir, &marker);
            (0..n / 2)
                .map(|_| gen::adversarial(&mut r, dir, marker, port))
                .collect::<Vec<_>>()
        })
        .enumerate()
        .collect();
    par::shards(&texts, |_, texts| {
        for (i, text) in texts {
            for l in launches.iter().copied() {
                if l.terminal.is_some() && i % terminal_every != 0 {
                    continue;
                }
                let call = call_for_text(l, text);
                check(l, &call, global(), Options::default())
                    .unwrap_or_else(|e| panic!("{} {text:?}: {e}", l.id));
                checks.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left: Vec<_> = std::fs::read_dir(canary.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "check mode left files: {left:?}");
    let procs = processes_with(&marker);
    assert!(procs.is_empty(), "check mode started processes: {procs:?}");
    let mut connections = 0;
    while listener.accept().is_ok() {
        connections += 1;
    }
    assert_eq!(connections, 0, "check mode connected to the network");
    println!(
        "{} checks of {n} adversarial calls on {} launches: no file, no process, no connection",
        checks.load(Ordering::Relaxed),
        launches.len()
    );
}

/// The canary itself must be able to fail: running the same texts for real leaves traces.
#[test]
fn the_canary_sees_a_real_run() {
    let canary = tempfile::Builder::new().prefix("iec-canary-").tempdir().unwrap();
    let dir = canary.path().to_str().unwrap().to_string();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let touch = format!("/usr/bin/touch {dir}/real");
    std::process::Command::new("bash")
        .args(["-c", &touch])
        .status()
        .unwrap();
    assert!(canary.path().join("real").exists());
    listener.set_nonblocking(true).unwrap();
    let tcp = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    std::process::Command::new("bash")
        .args(["-c", &tcp])
        .status()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(listener.accept().is_ok(), "a real run's connection is seen");
}
