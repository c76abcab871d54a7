//! A rotating sample for suites whose full set costs too much per CI run: one run takes `n` of
//! the items, starting at an index that moves by one every UTC day, so consecutive days cover
//! every item. `IEC_ROTATION=K` starts at the K-th item instead (to re-run what a failed day
//! ran); the count comes from the suite's own variable, where `all` takes every item.

use std::time::{SystemTime, UNIX_EPOCH};

use iec_launches::{Catalog, Launch};

/// The launches a generic suite (one that runs every launch) runs: every hand-written launch,
/// and `IEC_LEARNED_LAUNCHES` (default 2) of the learned ones (those with `learned_on`), in the
/// rotation. The learned launches share their hops with the hand-written ones and differ in
/// data (renderings, versions), so a sample per run, all of them over a week, keeps CI's time
/// flat as the catalog grows. Prints which learned launches this run takes.
pub fn launches_under_test(cat: &Catalog) -> Vec<&Launch> {
    let (learned, mut out): (Vec<&Launch>, Vec<&Launch>) = cat.iter().partition(|l| l.learned());
    let total = learned.len();
    let taken = sample(learned, "IEC_LEARNED_LAUNCHES", 2);
    eprintln!(
        "learned launches in this run ({} of {total}; IEC_LEARNED_LAUNCHES=all for every one): {}",
        taken.len(),
        taken.iter().map(|l| l.id.as_str()).collect::<Vec<_>>().join(", ")
    );
    out.extend(taken);
    out
}

/// The rotation's start: `IEC_ROTATION`, or else the days since 1970 (UTC).
pub fn start() -> usize {
    match std::env::var("IEC_ROTATION") {
        Ok(k) => k
            .parse()
            .unwrap_or_else(|_| panic!("IEC_ROTATION is a number, not {k:?}")),
        Err(_) => {
            let secs = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("clock after 1970")
                .as_secs();
            (secs / 86_400) as usize
        }
    }
}

/// How many items a run takes: the variable `var` (a number or `all`), else `default`.
pub fn count(var: &str, default: usize, len: usize) -> usize {
    match std::env::var(var).as_deref() {
        Ok("all") => len,
        Ok(v) => v
            .parse::<usize>()
            .unwrap_or_else(|_| panic!("{var} is a number or `all`, not {v:?}")),
        Err(_) => default,
    }
    .min(len)
}

/// `count(var, default)` of `items` from the rotation's start, in rotation order.
pub fn sample<T>(items: Vec<T>, var: &str, default: usize) -> Vec<T> {
    let n = count(var, default, items.len());
    pick(items, start(), n)
}

/// `n` of `items` from index `start` on, wrapping around.
pub fn pick<T>(items: Vec<T>, start: usize, n: usize) -> Vec<T> {
    let len = items.len().max(1);
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    (0..n.min(slots.len()))
        .filter_map(|i| slots[(start + i) % len].take())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::pick;

    #[test]
    fn pick_wraps_and_never_repeats_an_item() {
        assert_eq!(pick(vec![1, 2, 3, 4], 3, 2), vec![4, 1]);
        assert_eq!(pick(vec![1, 2, 3], 7, 5), vec![2, 3, 1]);
        assert_eq!(pick(Vec::<u8>::new(), 5, 2), Vec::<u8>::new());
    }

    #[test]
    fn consecutive_starts_cover_every_item() {
        let mut seen: Vec<u8> = (0..5).flat_map(|d| pick(vec![0u8, 1, 2, 3, 4], d, 1)).collect();
        seen.sort();
        assert_eq!(seen, vec![0, 1, 2, 3, 4]);
    }
}
