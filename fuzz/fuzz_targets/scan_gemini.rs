//! bytes → `iec_scan::readers::read_all` (`read_bytes`) as a Gemini CLI chat (lines, or the older one document; the first byte's low bit chooses), then the end of the scan
//! (calls still waiting emitted). Must never panic; every call read keeps its command.
#![no_main]
use iec_scan::readers::{read_all, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    read_all(data, if data.first().is_some_and(|b| b & 1 == 1) { Some(Format::GeminiDocument) } else { Some(Format::GeminiLines) });
});
