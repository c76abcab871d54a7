//! The argv probe; see `iec_harness::probe`.
fn main() {
    std::process::exit(iec_harness::probe::probe_main());
}
