//! The witness memory limit (see `tests/limits.rs` for the timeout): 40 million words make bash
//! reach its 2 GiB address space; the allocation fails, bash ends, and the request is a
//! `WitnessError::Limit`, not a machine out of memory. On an idle 2-core machine this takes
//! about 7 s, inside the default 20 s timeout; on a loaded one the timeout could come first, so
//! this test (its own process) raises the timeout to 600 s and the memory limit alone must stop
//! bash.

use iec_witness::{BashPool, WitnessError};

#[test]
fn forty_million_words_reach_the_memory_limit_not_the_machine() {
    // SAFETY: set before any thread of this test binary reads the environment (one test).
    unsafe { std::env::set_var("IEC_WITNESS_TIMEOUT_SECS", "600") };
    assert_eq!(
        iec_witness::request_timeout(),
        std::time::Duration::from_secs(600)
    );
    let pool = BashPool::new();
    match pool.expand_words(b"{10000000..49999999}") {
        Err(WitnessError::Limit(why)) => {
            eprintln!("40M words: {why}");
            assert!(why.contains("ran out of its 2048 MiB"), "{why}");
        }
        other => panic!("expected a witness limit, got {:?}", other.map(|e| e.args.len())),
    }
    assert_eq!(pool.expand_words(b"c{1..2}").unwrap().args, ["c1", "c2"]);
}
