//! `cargo bench -p iec-witness --bench server`: one warm witness server, one request type at a
//! time, so the cost of bash's own work is separated from the protocol around it.

use iec_witness::BashServer;
use std::time::{Duration, Instant};

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e6
}

fn main() {
    let n: usize = std::env::var("IEC_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let small = b"printf '%s\\n' 'a != b' \"$HOME\" | wc -c # 50 B".to_vec();
    let mut big = Vec::new();
    while big.len() < 1024 {
        big.extend_from_slice(b"printf '%s\\n' \"$x\" 'it''s' $'\\t' | grep -c a > /dev/null && echo ok\n");
    }
    // Both ends on one CPU, as the pool arranges for its callers.
    // SAFETY: plain affinity syscalls on this thread.
    let cpu = unsafe {
        let cpu = libc::sched_getcpu() as usize;
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
        cpu
    };
    let pinned = iec_core::config::current().witness_pin;
    let mut s = BashServer::start_on(pinned.then_some(cpu)).unwrap();
    let mut parser = BashServer::start_parse_only(pinned.then_some(cpu)).unwrap();
    println!("| request | text | p50 | p99 |");
    println!("|---|---|---|---|");
    // The round trip alone: a request that makes bash list its functions and answer.
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        std::hint::black_box(s.functions().unwrap());
        v.push(t.elapsed());
    }
    println!(
        "| round trip (list functions) | - | {:.0} µs | {:.0} µs |",
        pct(&mut v, 0.5),
        pct(&mut v, 0.99)
    );
    for (label, text) in [("50 B", &small), ("1 KB", &big)] {
        for (mode, canonical) in [("validate", false), ("canonical", true)] {
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let t = Instant::now();
                let p = parser.parse_mode(text, false, canonical).unwrap();
                v.push(t.elapsed());
                std::hint::black_box(p);
            }
            println!(
                "| {mode} | {label} | {:.0} µs | {:.0} µs |",
                pct(&mut v, 0.5),
                pct(&mut v, 0.99)
            );
        }
        let words = format!("'{}'", String::from_utf8_lossy(text).replace('\'', "'\\''"));
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let e = s.expand_words(words.as_bytes()).unwrap();
            v.push(t.elapsed());
            std::hint::black_box(e);
        }
        println!(
            "| expand | {label} | {:.0} µs | {:.0} µs |",
            pct(&mut v, 0.5),
            pct(&mut v, 0.99)
        );
    }
}
