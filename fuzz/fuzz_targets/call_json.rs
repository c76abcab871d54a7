//! bytes → serde_json::Value → iec_core::Call::from_json. Must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        if let Ok(call) = iec_core::Call::from_json(&v) {
            // A call read from an object keeps an input taken from that object.
            let _ = serde_json::to_string(&call);
        }
    }
});
