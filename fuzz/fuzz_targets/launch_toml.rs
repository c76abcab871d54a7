//! bytes (lossy UTF-8) → iec_launches::Launch::from_toml. Errors are fine; panics are not.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = iec_launches::Launch::from_toml(&text);
});
