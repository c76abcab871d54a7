//! Witness limits: a text that asks bash for more than a check needs (a brace range of
//! millions of words) ends its server with `WitnessError::Limit` — by the reply cap, the
//! memory limit or the request timeout, whichever comes first — and the pool keeps serving.
//! Its own test binary: the timeout is read once per process from `IEC_WITNESS_TIMEOUT_SECS`.

use iec_witness::{request_timeout, BashPool, WitnessError};

#[test]
fn huge_expansions_end_in_a_limit_and_the_pool_keeps_serving() {
    std::env::set_var("IEC_WITNESS_TIMEOUT_SECS", "1.5");
    assert_eq!(request_timeout().as_millis(), 1500);
    let pool = BashPool::new();
    assert_eq!(pool.expand_words(b"a{1..3}").unwrap().args, ["a1", "a2", "a3"]);

    // 40 million words: over the 2 GiB address-space limit (and the 64 MiB reply cap).
    match pool.expand_words(b"{10000000..49999999}") {
        Err(WitnessError::Limit(why)) => eprintln!("40M words: {why}"),
        other => panic!("40M words: expected a witness limit, got {other:?}"),
    }
    // 4 million words fit the memory and the reply cap, but bash needs seconds for them.
    match pool.expand_words(b"x{1000000..4999999}") {
        Err(WitnessError::Limit(why)) => {
            eprintln!("4M words: {why}");
            assert!(why.contains("no witness reply within 1.5 s"), "{why}");
        }
        other => panic!(
            "4M words: expected the timeout, got {:?}",
            other.map(|e| e.args.len())
        ),
    }
    // The servers that hit a limit were dropped; the next request gets a fresh one.
    assert_eq!(pool.expand_words(b"b{1..2}").unwrap().args, ["b1", "b2"]);
    assert!(pool.parse(b"echo ok", false).unwrap().parses());
}
