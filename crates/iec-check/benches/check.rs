//! `cargo bench -p iec-check --bench check`: latency of `check` per call, warm witnesses
//! against a naive witness that starts a new bash for every hop (a `BASH_ENV` witness for the
//! process interface, a fresh bash for every parse and expansion), in the same run. Prints p50
//! and p99 per launch and text size as a Markdown table (copied into BENCHMARKS.md).
//! IEC_BENCH_ITERS sets the warm sample count (default 2000; the naive one is a tenth);
//! IEC_BENCH_WARM_ONLY=1 times only the warm rows up to 1 KB (the spawn-per-hop columns then
//! repeat the warm ones), for quick comparisons of two builds.

use iec_check::{call_for_text, check, Options};
use iec_launches::Catalog;
use iec_testkit::gen;
use iec_witness::BashPool;
use std::time::{Duration, Instant};

fn text_of_size(bytes: usize, seed: u64) -> String {
    if bytes <= 60 {
        return "printf '%s\\n' 'a != b' \"$HOME\" | wc -c # 50 B"
            .chars()
            .take(bytes)
            .collect();
    }
    // Scripts that run the same hops on every launch compared here (no CR, no `}` that would
    // send the text through the break-out gate's separate `bash -n`), joined up to the size.
    let mut r = gen::Rng::new(seed);
    let mut s = String::new();
    while s.len() < bytes {
        let t = gen::script(&mut r);
        if t.contains('\r') || t.contains('}') {
            continue;
        }
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(&t);
    }
    s
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn sample(
    pool: &BashPool,
    opts: Options,
    launch: &iec_launches::Launch,
    text: &str,
    n: usize,
) -> Vec<Duration> {
    let call = call_for_text(launch, text);
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = check(launch, &call, pool, opts).unwrap();
        v.push(t.elapsed());
        std::hint::black_box(r);
    }
    v.sort();
    v
}

fn fmt(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.0} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}

fn main() {
    let iters: usize = std::env::var("IEC_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let cat = Catalog::builtin();
    let warm = BashPool::new();
    let cold = BashPool::cold();
    println!("| launch | text | verdict | warm p50 | warm p99 | spawn-per-hop p50 | spawn-per-hop p99 | speed-up (p50) |");
    println!("|---|---|---|---|---|---|---|---|");
    for id in ["bash-c", "claude-code-2.1.72-linux"] {
        let l = cat.get(id).unwrap();
        for (label, size) in [("50 B", 50), ("1 KB", 1024), ("64 KB", 65_536)] {
            let text = text_of_size(size, size as u64);
            let verdict = check(l, &call_for_text(l, &text), &warm, Options::default())
                .unwrap()
                .verdict;
            // Warm up the pool before sampling.
            let warm_opts = Options::default();
            // The naive witness starts a new bash for every hop it observes: the process
            // interface (a BASH_ENV witness) and every parse or expansion.
            let naive_opts = Options {
                spawn_witness: true,
                ..Default::default()
            };
            let _ = sample(&warm, warm_opts, l, &text, 20);
            let w = sample(
                &warm,
                warm_opts,
                l,
                &text,
                if size > 10_000 { iters / 10 } else { iters },
            );
            // IEC_BENCH_WARM_ONLY=1: warm rows up to 1 KB only (quick A/B runs of two builds).
            let warm_only = std::env::var_os("IEC_BENCH_WARM_ONLY").is_some_and(|v| v == "1");
            if warm_only && size > 10_000 {
                continue;
            }
            let c = if warm_only {
                w.clone()
            } else {
                sample(&cold, naive_opts, l, &text, (iters / 10).max(20))
            };
            println!(
                "| {id} | {label} ({} B) | {} | {} | {} | {} | {} | {:.0}× |",
                text.len(),
                verdict.as_str(),
                fmt(percentile(&w, 0.5)),
                fmt(percentile(&w, 0.99)),
                fmt(percentile(&c, 0.5)),
                fmt(percentile(&c, 0.99)),
                percentile(&c, 0.5).as_secs_f64() / percentile(&w, 0.5).as_secs_f64()
            );
        }
    }
}
