//! The witness memory limit (see `tests/limits.rs` for the timeout): with the default 20 s
//! timeout, 40 million words make bash reach its 2 GiB address space first; the allocation
//! fails, bash ends, and the request is a `WitnessError::Limit`, not a machine out of memory.

use iec_witness::{BashPool, WitnessError};

#[test]
fn forty_million_words_reach_the_memory_limit_not_the_machine() {
    assert!(
        std::env::var_os("IEC_WITNESS_TIMEOUT_SECS").is_none(),
        "this test needs the default timeout"
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
