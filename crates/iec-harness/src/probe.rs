//! The argv probe (`iec-argvprobe`, installed as `argvprobe` first on `PATH`): writes the argv it
//! received (without argv0) as one JSON line `{"argv":[…],"hex":[…]}` to the file named by
//! `IEC_ARGVPROBE_LOG` (appended) and to stdout. It is a compiled program, not a script, so it
//! does not itself start a bash that would read `BASH_ENV` and add to the bash witness log.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

/// Environment variable naming the probe's log file.
pub const PROBE_LOG_ENV: &str = "IEC_ARGVPROBE_LOG";

/// One probe invocation as logged.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProbeRecord {
    /// The arguments after argv0, as (lossy) UTF-8.
    pub argv: Vec<String>,
    /// The same arguments' bytes in hex.
    pub hex: Vec<String>,
}

/// The record for `args` (argv0 excluded by the caller).
pub fn record(args: &[OsString]) -> ProbeRecord {
    ProbeRecord {
        argv: args
            .iter()
            .map(|a| String::from_utf8_lossy(a.as_bytes()).into_owned())
            .collect(),
        hex: args
            .iter()
            .map(|a| a.as_bytes().iter().map(|b| format!("{b:02x}")).collect())
            .collect(),
    }
}

/// The name under which the probe binary records a hook's stdin instead: invoked as
/// `iec-hook-recorder LOG`, it appends its stdin (one JSON document, compacted) as one line to
/// LOG, prints nothing and exits 0 (no decision: the tool call proceeds).
pub const HOOK_RECORDER_NAME: &str = "iec-hook-recorder";

fn hook_record_main(log: Option<OsString>) -> i32 {
    use std::io::Read;
    let mut input = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut input);
    let line = match serde_json::from_slice::<serde_json::Value>(&input) {
        Ok(v) => v.to_string(),
        Err(_) => serde_json::json!({ "unparsed": String::from_utf8_lossy(&input) }).to_string(),
    };
    if let Some(path) = log {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
    0
}

/// The probe's `main`: log and print, exit 0 (or record a hook's stdin when invoked as
/// [`HOOK_RECORDER_NAME`]).
pub fn probe_main() -> i32 {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    if std::path::Path::new(&argv0)
        .file_name()
        .is_some_and(|n| n == HOOK_RECORDER_NAME)
    {
        return hook_record_main(std::env::args_os().nth(1));
    }
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let line = serde_json::to_string(&record(&args)).expect("json");
    if let Some(path) = iec_core::config::current().argvprobe_log {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            // One write call per record, so concurrent probes do not interleave within a line.
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
    println!("{line}");
    0
}

/// Parses a probe log (one JSON record per line; unparsable lines are skipped).
pub fn parse_log(bytes: &[u8]) -> Vec<ProbeRecord> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
