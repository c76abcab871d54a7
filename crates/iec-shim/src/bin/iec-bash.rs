//! `iec-bash`: see the `iec_shim` crate docs.

fn main() {
    std::process::exit(iec_shim::run(std::env::args_os().collect()));
}
