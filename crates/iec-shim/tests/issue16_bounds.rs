//! Issue 16, item 6 for the shell shim: the intents it reads are bounded like every other
//! input (a text over 1 MiB is never recorded, and an intent file over the limit is not read
//! whole nor taken as an intent).

use iec_shim::intent::{self, Intent, Store};

#[test]
fn an_intent_over_the_text_limit_was_recorded_and_read_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(&tmp.path().join("intents")).unwrap();
    // The recorder refuses a text over the limit, naming it.
    let e = store
        .record(&"x".repeat((1 << 20) + 1), intent::scope_of_self(), "test")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "not recorded: the command text is 1048577 bytes; iec judges texts of at most 1048576 bytes (1 MiB, its text limit), so it is not checked"
    );
    // Files written past the recorder: an intent with a text over the limit, and a file longer
    // than any intent (the shim reads 8 MiB and one byte of it, no more). Neither is pending;
    // both are removed as unreadable. A file at the limit still is an intent.
    let now = intent::now_ms();
    let big = Intent {
        command: "y".repeat((1 << 20) + 1),
        created_ms: now,
        scope: vec![],
        source: "test".into(),
    };
    let big_path = store.write(&big).unwrap();
    let junk = store.dir().join("junk.json");
    std::fs::write(&junk, vec![b' '; 9 << 20]).unwrap();
    let at = Intent {
        command: "z".repeat(1 << 20),
        ..big.clone()
    };
    let at_path = store.write(&at).unwrap();
    let pending = store.pending(std::process::id());
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].path, at_path);
    assert!(!big_path.exists() && !junk.exists());
}
