//! bytes → `iec_scan::readers::read_all` (`read_bytes`) as a Cline / Roo task history (one document), then the end of the scan
//! (calls still waiting emitted). Must never panic; every call read keeps its command.
#![no_main]
use iec_scan::readers::{read_all, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    read_all(data, Some(Format::Cline));
});
