//! Byte-exact argv probe for batched runs: prints one line per invocation, the number of
//! arguments (without argv[0]) and each argument's bytes in hex, space-separated. Any byte
//! sequence is shown as it arrived (no UTF-8 decoding), and the line is the per-call separator
//! when one shell runs many probes in sequence.
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let mut line = args.len().to_string();
    for a in &args {
        line.push(' ');
        for b in a.as_bytes() {
            line.push_str(&format!("{b:02x}"));
        }
    }
    line.push('\n');
    std::io::stdout().write_all(line.as_bytes()).unwrap();
}
