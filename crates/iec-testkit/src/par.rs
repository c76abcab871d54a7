//! Spreading a suite's independent cases over the machine's cores. `cargo test` runs test
//! binaries one after another, so a binary whose time is one long `#[test]` keeps one core busy
//! while the others wait; the long property and canary tests hand their cases to [`shards`]
//! instead. The cases are made first, in one seeded order, so the set checked is the same on any
//! number of cores.

/// How many threads [`shards`] uses: `IEC_TEST_SHARDS` when set (at least 1), else four per CPU
/// this process may run on. More threads than CPUs because the cases mostly wait: on the warm
/// bash witnesses, on the tmux witness's typed keys, on child processes (measured in
/// BENCHMARKS.md, "CI time"); the witness pool bounds its servers at four per CPU too.
pub fn threads() -> usize {
    if let Some(n) = std::env::var("IEC_TEST_SHARDS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return n.max(1);
    }
    4 * std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `f` on consecutive slices of `items` (at most [`threads`] of them, together every item once,
/// in order), each on its own thread; the results in the order of the slices. `f` gets the slice
/// and the index of its first item in `items`. A panic in any slice is raised again here, after
/// every slice has ended.
pub fn shards<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &[T]) -> R + Sync) -> Vec<R> {
    let n = threads().min(items.len()).max(1);
    let size = items.len().div_ceil(n).max(1);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(size)
            .enumerate()
            .map(|(i, chunk)| s.spawn(move || f(i * size, chunk)))
            .collect();
        let results: Vec<std::thread::Result<R>> = handles.into_iter().map(|h| h.join()).collect();
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_in_order() {
        for len in [0usize, 1, 2, 3, 7, 100, 101] {
            let items: Vec<usize> = (0..len).collect();
            let got: Vec<(usize, Vec<usize>)> = shards(&items, |at, s| (at, s.to_vec()));
            let flat: Vec<usize> = got.iter().flat_map(|(_, s)| s.clone()).collect();
            assert_eq!(flat, items, "len {len}");
            for (at, s) in &got {
                if let Some(first) = s.first() {
                    assert_eq!(first, at);
                }
            }
        }
    }

    #[test]
    fn a_panic_in_a_shard_is_raised() {
        let items: Vec<usize> = (0..10).collect();
        let r = std::panic::catch_unwind(|| {
            shards(&items, |_, s| assert!(!s.contains(&9), "nine"));
        });
        assert!(r.is_err());
    }
}
