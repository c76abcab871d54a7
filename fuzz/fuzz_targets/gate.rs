//! bytes → iec_witness::gate::may_break_out, plus soundness against an independent
//! re-derivation: if the gate says "cannot break out", the text must contain no `}` that stands
//! alone as a token (preceded by start/blank/newline/`;&|()<>` and followed by
//! end/blank/newline/`;&|()<>`).
#![no_main]
use libfuzzer_sys::fuzz_target;

const DELIMS: &[u8] = b" \t\n;&|()<>";

fn standalone_brace(text: &[u8]) -> Option<usize> {
    for i in 0..text.len() {
        if text[i] != b'}' {
            continue;
        }
        let before_ok = match i.checked_sub(1) {
            None => true,
            Some(j) => DELIMS.contains(&text[j]),
        };
        let after_ok = match text.get(i + 1) {
            None => true,
            Some(b) => DELIMS.contains(b),
        };
        if before_ok && after_ok {
            return Some(i);
        }
    }
    None
}

fuzz_target!(|data: &[u8]| {
    let flagged = iec_witness::gate::may_break_out(data);
    if !flagged {
        if let Some(i) = standalone_brace(data) {
            panic!("gate passed a text with a standalone `}}` at byte {i}: {:?}", String::from_utf8_lossy(data));
        }
    }
});
