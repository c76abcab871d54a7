//! A pool runs at most its limit of bash servers, however many threads ask at once (issue 16,
//! bounds: a library caller with many threads used to start one server per thread and keep
//! them all). Its own test binary: it counts this process's children.

use iec_witness::BashPool;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// This process's children (each server is one: bash, or the process that waits for bash in
/// its own PID namespace).
fn children() -> usize {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let rest = &stat[stat.rfind(')').unwrap() + 2..];
            rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok()) == Some(me)
        })
        .count()
}

#[test]
fn sixteen_threads_at_once_started_sixteen_servers() {
    let pool = BashPool::with_limit(2);
    assert_eq!(pool.limit(), 2);
    let done = AtomicBool::new(false);
    let most = AtomicUsize::new(0);
    let answered = AtomicUsize::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                most.fetch_max(children(), Ordering::SeqCst);
                assert!(
                    t0.elapsed() < Duration::from_secs(300),
                    "the pool's callers never finished"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let workers: Vec<_> = (0..16)
            .map(|t| {
                let (pool, answered) = (&pool, &answered);
                s.spawn(move || {
                    for j in 0..6 {
                        // Both kinds of server: parsing, and expansion (which parses first).
                        if (t + j) % 2 == 0 {
                            let p = pool.validate(format!("echo {t}-{j}").as_bytes(), false).unwrap();
                            assert!(matches!(p, iec_witness::Parse::Ok { .. }), "{p:?}");
                        } else {
                            let e = pool.expand_words(format!("a{t} 'b {j}'").as_bytes()).unwrap();
                            assert_eq!(e.args, [format!("a{t}"), format!("b {j}")]);
                        }
                        answered.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
    });
    assert_eq!(answered.load(Ordering::SeqCst), 96);
    let most = most.load(Ordering::SeqCst);
    assert!(most >= 1, "the sampler saw no server at all");
    assert!(most <= 2, "{most} servers at once with a limit of 2");
}
