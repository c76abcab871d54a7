//! bytes as UTF-8 (invalid skipped) → iec_launches::tree_sitter_gate::refuses with and without
//! the prompt-transform rule: no panic, no crash (the grammar crate's own scanner crashed on `{`
//! followed by a code point above 255), and every reported offset is a char boundary inside
//! the text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for transform in [false, true] {
        if let Some(f) = iec_launches::tree_sitter_gate::refuses(text, transform) {
            let at = f.offset();
            assert!(at <= text.len() && text.is_char_boundary(at), "{f:?} in {text:?}");
        }
    }
});
