//! bytes → `iec_scan::readers::read_bytes` as a Codex rollout (line by line), then the end of the scan
//! (calls still waiting emitted). Must never panic; every call read keeps its command.
#![no_main]
use iec_scan::readers::{read_bytes, Format, Shared};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let format = Some(Format::Codex);
    let mut shared = Shared::default();
    let mut skips = iec_scan::Skips::new(false);
    let mut calls = Vec::new();
    let _ = read_bytes("f/s.jsonl", data, format, &mut shared, &mut skips, &mut |c| calls.push(c));
    let _ = shared.finish(&mut skips, &mut |c| calls.push(c));
    for c in &calls {
        let _ = iec_core::exposure(&c.command);
        let _ = serde_json::to_string(c);
    }
});
