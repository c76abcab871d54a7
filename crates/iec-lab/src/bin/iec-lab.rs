//! The development runs' command line (not the product's: that is `iec harness run|learn|agree`).
//!
//! `iec-lab claude-code VERSION [--bin PATH] [--timeout SECS] [--json] [--no-hook] [--hook-command CMD] PAYLOAD...`
//!
//! Runs real Claude Code VERSION (installed from npm into ~/.cache/iec/harnesses unless --bin is
//! given) against the replay server, one Bash tool call per PAYLOAD, and prints what each
//! witness saw, next to the same payload run as `bash -c PAYLOAD`.
//! `iec-lab install VERSION` only installs and prints the launcher.
//! `iec-lab hazard N SEED` prints the generated hazard payloads as JSON Lines.

use std::path::PathBuf;
use std::time::Duration;

use iec_harness::{install_claude_code, run_claude_code_with, RunOptions};

fn usage() -> ! {
    eprintln!(
        "usage: iec-lab claude-code VERSION [--bin PATH] [--timeout SECS] [--json] [--no-hook] [--hook-command CMD] PAYLOAD...\n       iec-lab install VERSION\n       iec-lab hazard N SEED"
    );
    std::process::exit(2);
}

fn main() {
    // Linked as `argvprobe` or `iec-hook-recorder` (the driver does so when no separate
    // iec-argvprobe binary is found), this binary is the probe.
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let name = std::path::Path::new(&argv0).file_name().map(|n| n.to_owned());
    if name.is_some_and(|n| n == "argvprobe" || n == iec_harness::probe::HOOK_RECORDER_NAME) {
        std::process::exit(iec_harness::probe::probe_main());
    }
    let mut args = std::env::args().skip(1);
    let sub = args.next().unwrap_or_else(|| usage());
    match sub.as_str() {
        "hazard" => {
            // `iec-lab hazard N SEED`: the generated payloads as JSON Lines {"id","command"}.
            let n = args
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| usage());
            let seed = args
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| usage());
            for (id, command) in iec_harness::hazard_payloads(n, seed) {
                println!("{}", serde_json::json!({"id": id, "command": command}));
            }
        }
        "install" => {
            let v = args.next().unwrap_or_else(|| usage());
            match install_claude_code(&v) {
                Ok(l) => println!("{}", serde_json::to_string(&l).unwrap()),
                Err(e) => {
                    eprintln!("iec-lab: {e:#}");
                    std::process::exit(2);
                }
            }
        }
        "claude-code" => {
            let version = args.next().unwrap_or_else(|| usage());
            let mut bin = None;
            let mut timeout = 60u64;
            let mut json = false;
            let mut hook_witness = true;
            let mut hook_command = None;
            let mut payloads = Vec::new();
            let mut rest = args.peekable();
            while let Some(a) = rest.next() {
                match a.as_str() {
                    "--bin" => bin = Some(PathBuf::from(rest.next().unwrap_or_else(|| usage()))),
                    "--timeout" => {
                        timeout = rest
                            .next()
                            .and_then(|s| s.parse().ok())
                            .unwrap_or_else(|| usage())
                    }
                    "--json" => json = true,
                    "--no-hook" => hook_witness = false,
                    "--hook-command" => hook_command = Some(rest.next().unwrap_or_else(|| usage())),
                    "--" => payloads.extend(rest.by_ref()),
                    _ => payloads.push(a),
                }
            }
            if payloads.is_empty() {
                usage();
            }
            let payloads: Vec<&str> = payloads.iter().map(String::as_str).collect();
            let mut opts = RunOptions::new(&version, bin, &payloads);
            opts.launch.timeout = Duration::from_secs(timeout);
            opts.hook_witness = hook_witness;
            opts.hook_command = hook_command;
            let run = match run_claude_code_with(&opts) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("iec-lab: {e:#}");
                    std::process::exit(2);
                }
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&run).unwrap());
                return;
            }
            println!(
                "claude-code {}: exit {:?}{} in {} ms; unknown paths: {:?}",
                run.version,
                run.exit_code,
                if run.timed_out { " (timed out)" } else { "" },
                run.elapsed_ms,
                run.unknown_paths
            );
            for r in &run.results {
                println!("payload   {:?}", r.payload);
                println!(
                    "  hook    {:?}",
                    r.hook_input.as_ref().and_then(|h| h.get("command"))
                );
                println!("  outer   {:?}", r.outer);
                println!(
                    "  probe   {:?}",
                    r.probe.iter().map(|p| &p.argv).collect::<Vec<_>>()
                );
                match &r.tool_result {
                    Some(t) => println!("  result  is_error={} {:?}", t.is_error, t.content),
                    None => println!("  result  (none recorded)"),
                }
                println!(
                    "  direct  {:?} exit {:?}",
                    r.direct.probe.iter().map(|p| &p.argv).collect::<Vec<_>>(),
                    r.direct.exit_code
                );
            }
        }
        _ => usage(),
    }
}
