//! Command-running MCP servers driven end to end by a real MCP client (the Python `mcp` SDK):
//! npm `@wonderwhy-er/desktop-commander@0.2.52`, npm `mcp-server-commands@0.5.0` and PyPI
//! `mcp-shell-server@1.1.14`, installed into `~/.cache/iec` on first use. What the argv probe
//! received through each server is asserted exactly, next to the direct `bash -c` run.
//! When a server or the client cannot be installed the test fails with the installer's error,
//! unless `IEC_SKIP_MCP_SERVERS=1` is set: then it prints `SKIPPED: …` and passes.

use std::io::Write;
use std::path::PathBuf;

use iec_harness::agree::{Observed, Payload};
use iec_harness::mcp_servers::{
    client_python, install, run_observed, summarize, summary_line, McpRunOptions, ServerKind, ServerSpec,
    Summary,
};
use serde_json::{json, Value};

fn ready(kind: ServerKind) -> Option<ServerSpec> {
    let spec = ServerSpec::pinned(kind);
    if let Err(e) = install(&spec).and_then(|_| client_python()) {
        let why = format!(
            "installing {}@{} or the Python `mcp` client failed: {e:#}",
            kind.package(),
            spec.version
        );
        if std::env::var("IEC_SKIP_MCP_SERVERS").is_ok_and(|v| v == "1") {
            let _ = writeln!(std::io::stderr(), "SKIPPED: {why} (IEC_SKIP_MCP_SERVERS=1)");
            println!("SKIPPED: {why} (IEC_SKIP_MCP_SERVERS=1)");
            return None;
        }
        panic!("{why}\n(set IEC_SKIP_MCP_SERVERS=1 to skip the MCP server measurements)");
    }
    Some(spec)
}

fn opts() -> McpRunOptions {
    McpRunOptions {
        probe: Some(PathBuf::from(env!("CARGO_BIN_EXE_iec-argvprobe"))),
        ..Default::default()
    }
}

fn run(kind: ServerKind, cmds: &[&str]) -> Option<Vec<Observed>> {
    let spec = ready(kind)?;
    let ps: Vec<Payload> = cmds
        .iter()
        .enumerate()
        .map(|(i, c)| Payload {
            id: format!("t{i}"),
            command: c.to_string(),
        })
        .collect();
    Some(run_observed(&spec, &ps, &opts()).expect("MCP server run"))
}

/// Asserts one observation: the probe argv through the server, the direct argv, the verdict
/// and (for a change) hop, mechanism and silence.
fn check(o: &Observed, got: serde_json::Value, want: serde_json::Value, change: Option<(&str, &str, bool)>) {
    let ctx = serde_json::to_string_pretty(o).unwrap();
    assert_eq!(
        o.received["probe"], got,
        "received argv of {:?}\n{ctx}",
        o.command
    );
    assert_eq!(o.direct["probe"], want, "direct argv of {:?}\n{ctx}", o.command);
    match change {
        None => assert_eq!(o.verdict, "corresponds", "{ctx}"),
        Some((hop, mechanism, silent)) => {
            assert_eq!(o.verdict, "diverges", "{ctx}");
            let f = o.first_divergence.as_ref().unwrap();
            assert_eq!(
                (f.hop_name.as_str(), f.mechanism.as_str(), f.silent),
                (hop, mechanism, silent),
                "{ctx}"
            );
        }
    }
}

/// A change an observation shows: hop, mechanism, silent.
type Change = Option<(&'static str, &'static str, bool)>;

/// Runs each case's payload through `kind` and checks its observation (see [`check`]): the argv
/// the probe must receive through the server and directly, and the change; `None` when skipped.
fn run_cases(kind: ServerKind, cases: &[(&str, Value, Value, Change)]) -> Option<Vec<Observed>> {
    let cmds: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let obs = run(kind, &cmds)?;
    for (o, (_, got, want, change)) in obs.iter().zip(cases) {
        check(o, got.clone(), want.clone(), *change);
    }
    Some(obs)
}

#[test]
fn desktop_commander_runs_bash_login_shell_and_rewrites_ssh() {
    #[rustfmt::skip]
    let cases = [
        ("argvprobe 'a != b'", json!([["a != b"]]), json!([["a != b"]]), None),
        ("argvprobe $'tab\\there' {a,b}", json!([["tab\there", "a", "b"]]), json!([["tab\there", "a", "b"]]), None),
        ("argvprobe \"${BASH_VERSION:+bash}\"", json!([["bash"]]), json!([["bash"]]), None),
        // `ssh …` becomes `ssh -t …` before the shell runs it.
        ("ssh example.invalid 'uptime -p'", json!([["-t", "example.invalid", "uptime -p"]]), json!([["example.invalid", "uptime -p"]]), Some(("shell", "arity-change", true))),
    ];
    let Some(obs) = run_cases(ServerKind::DesktopCommander, &cases) else {
        return;
    };
    // The text reached bash unchanged (the login shell's witness logged it).
    assert!(
        obs[0].received["bash_strings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "argvprobe 'a != b'"),
        "{}",
        obs[0].received
    );
    let content = obs[0].tool_result["content"].as_str().unwrap();
    assert!(content.contains("(shell: /bin/bash)"), "{content}");
}

#[test]
fn mcp_server_commands_hands_the_text_to_dash() {
    // Node's exec() runs `/bin/sh -c TEXT`: dash reads `$'…'` as `$` and a single-quoted word;
    // `\'` inside `$'…'` ends dash's single quotes: a syntax error, reported as a failed call.
    #[rustfmt::skip]
    let cases = [
        ("argvprobe 'a != b'", json!([["a != b"]]), json!([["a != b"]]), None),
        ("argvprobe $'tab\\there'", json!([["$tab\\there"]]), json!([["tab\there"]]), Some(("shell", "other", true))),
        ("argvprobe {a,b}.txt", json!([["{a,b}.txt"]]), json!([["a.txt", "b.txt"]]), Some(("shell", "arity-change", true))),
        ("argvprobe \"${BASH_VERSION:+bash}\"", json!([[""]]), json!([["bash"]]), Some(("shell", "truncation", true))),
        ("argvprobe $'z!!$' $'!\\'z'", json!([]), json!([["z!!$", "!'z"]]), Some(("shell", "other", false))),
    ];
    let Some(obs) = run_cases(ServerKind::ServerCommands, &cases) else {
        return;
    };
    let content = obs[4].tool_result["content"].as_str().unwrap();
    assert!(
        content.contains("Syntax error: Unterminated quoted string"),
        "{content}"
    );
    assert_eq!(obs[4].tool_result["is_error"], true);
}

#[test]
fn mcp_shell_server_execs_argv_drops_empty_and_refuses_operators() {
    let Some(obs) = run(
        ServerKind::ShellServer,
        &[
            "argvprobe 'a != b' \"$HOME/x\"",
            "argvprobe 'a b' | cat",
            "argvprobe '' x",
            "argvprobe 'a;b'",
            "argvprobe '>' x",
        ],
    ) else {
        return;
    };
    // Its tool takes an argv array: the argv the direct run built is sent.
    let home_x = obs[0].direct["probe"][0][1].as_str().unwrap().to_string();
    assert!(home_x.ends_with("/home/x"), "{home_x}");
    assert_eq!(
        obs[0].received["arguments"]["command"],
        json!(["argvprobe", "a != b", home_x])
    );
    check(
        &obs[0],
        json!([["a != b", home_x]]),
        json!([["a != b", home_x]]),
        None,
    );
    assert_eq!(
        obs[1].received["arguments"]["command"],
        json!(["argvprobe", "a b", "|", "cat"])
    );
    check(&obs[1], json!([["a b"]]), json!([["a b"]]), None);
    // Empty arguments are removed before exec.
    check(
        &obs[2],
        json!([["x"]]),
        json!([["", "x"]]),
        Some(("spawn", "arity-change", true)),
    );
    // An argument containing `;`, `&&`, `||`, a backtick, CR or LF is refused.
    check(
        &obs[3],
        json!([]),
        json!([["a;b"]]),
        Some(("tool-input", "other", false)),
    );
    let err = obs[3].tool_result["content"].as_str().unwrap();
    assert!(err.contains("Unexpected shell operator: a;b"), "{err}");
    // A `>` element is a redirection even as data: the probe runs without arguments.
    check(
        &obs[4],
        json!([[]]),
        json!([[">", "x"]]),
        Some(("spawn", "arity-change", true)),
    );
}

/// Hand-picked payloads next to the generated ones: a bash-only word for `/bin/sh`, an empty
/// argument, shell operators inside quotes, a newline in a quoted word, `$HOME`, a command
/// substitution, tilde, an `ssh` command (desktop-commander rewrites those).
fn hand_picked() -> Vec<Payload> {
    [
        ("bang", "argvprobe 'a != b'"),
        ("home", "argvprobe \"$HOME\""),
        ("ansi-c", "argvprobe $'tab\\there'"),
        ("brace", "argvprobe {a,b}.txt"),
        ("bash-version", "argvprobe \"${BASH_VERSION:+bash}\""),
        ("empty-arg", "argvprobe '' x"),
        ("semicolon", "argvprobe 'a;b'"),
        ("and", "argvprobe 'a && b'"),
        ("backtick", "argvprobe '`x`'"),
        ("newline", "argvprobe 'a\nb'"),
        ("pipe-word", "argvprobe '|' x"),
        ("redirect-word", "argvprobe '>' x"),
        ("cmdsubst", "argvprobe \"$(printf sub)\""),
        ("tilde", "argvprobe ~/x"),
        ("ssh", "ssh example.invalid 'uptime -p'"),
        ("backslashes", "argvprobe 'C:\\\\Users\\\\me'"),
        ("echo-e", "argvprobe \"$(echo -e 'a\\tb')\""),
    ]
    .into_iter()
    .map(|(id, c)| Payload {
        id: format!("m-{id}"),
        command: c.to_string(),
    })
    .collect()
}

/// The measurement set: `hazard_payloads(100, 1)` and [`hand_picked`].
fn measurement_payloads() -> Vec<Payload> {
    let mut v: Vec<Payload> = iec_harness::hazard_payloads(100, 1)
        .into_iter()
        .map(|(id, command)| Payload { id, command })
        .collect();
    v.extend(hand_picked());
    v
}

/// The table of docs/findings/mcp-servers.md: 100 generated hazard payloads
/// (`hazard_payloads(100, 1)`) and 17 hand-picked ones, on each server.
#[test]
fn measured_totals() {
    let ps = measurement_payloads();
    assert_eq!(ps.len(), 117);
    let expect = |kind| -> Summary {
        let (changed, refused, silent, mech): (usize, usize, usize, &[(&str, usize)]) = match kind {
            ServerKind::DesktopCommander => (1, 0, 1, &[("arity-change", 1)]),
            ServerKind::ServerCommands => (
                46,
                0,
                38,
                &[
                    ("arity-change", 1),
                    ("other", 41),
                    ("re-expansion", 3),
                    ("truncation", 1),
                ],
            ),
            ServerKind::ShellServer => (31, 28, 3, &[("arity-change", 3)]),
        };
        Summary {
            payloads: 117,
            changed,
            refused,
            silent,
            unknown: 0,
            mechanisms: mech.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    };
    for kind in ServerKind::all() {
        let Some(spec) = ready(kind) else { return };
        let obs = run_observed(&spec, &ps, &opts()).expect("MCP server run");
        let s = summarize(&obs);
        eprintln!("{}", summary_line(&spec, &s));
        let changed: Vec<String> = obs
            .iter()
            .filter(|o| o.verdict != "corresponds")
            .map(|o| format!("{} {:?}: {:?}", o.id, o.command, o.first_divergence))
            .collect();
        assert_eq!(s, expect(kind), "{}:\n{}", kind.name(), changed.join("\n"));
    }
}
