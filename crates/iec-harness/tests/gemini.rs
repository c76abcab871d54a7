//! Real Gemini CLI runs against the replay server's Gemini API, and the Gemini endpoints on
//! their own. Installs `@google/gemini-cli@0.61.0` into ~/.cache/iec/harnesses/gemini-cli-0.61.0
//! (reused). When the install fails, the test fails with the npm error, unless
//! `IEC_SKIP_HARNESS=1` (or the project-wide `IEC_SKIP_NPM=1`) is set: then it prints
//! `SKIPPED: …`.

mod support;

use iec_harness::gemini::{install_gemini_cli, observe_gemini, GEMINI_CLI_VERSION};
use iec_harness::harness::GEMINI_CLI;
use iec_harness::{HarnessRun, PayloadResult, ReplayServer, Script};
use serde_json::{json, Value};
use support::{argvs, direct_argvs, post, v, BANG, CRLF, PID, PRINTF, QUOTES};

/// Installs Gemini CLI (reused when present); `false` when the install failed and a skip
/// variable is set.
fn install_or_skip() -> bool {
    support::installed(
        &format!("@google/gemini-cli@{GEMINI_CLI_VERSION}"),
        support::HARNESS_SKIP,
        || install_gemini_cli(GEMINI_CLI_VERSION),
    )
    .is_some()
}

/// One `gemini -p` of `payloads`, checked (see `support::check_launch`); `None` when skipped.
fn run(payloads: &[&str]) -> Option<HarnessRun> {
    support::harness_launch(&GEMINI_CLI, GEMINI_CLI_VERSION, install_or_skip, payloads)
}

/// Checks that `outer` is Gemini CLI 0.61.0's wrapper around `cmd`: the `shopt -u` guard, an
/// unquoted `_bgpids_file=<TMPDIR>/gemini-shell-XXXXXX/bgpids.tmp` (mkdtemp's six characters),
/// the subshell with the EXIT trap, and the exit-code lines.
fn assert_wrapper(outer: &str, cmd: &str) {
    let head = "shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=";
    let rest = outer.strip_prefix(head).unwrap_or_else(|| panic!("{outer:?}"));
    let (path, body) = rest.split_once('\n').unwrap();
    let dir = path
        .strip_suffix("/bgpids.tmp")
        .unwrap_or_else(|| panic!("{path:?}"));
    let name = dir.rsplit('/').next().unwrap();
    let suffix = name
        .strip_prefix("gemini-shell-")
        .unwrap_or_else(|| panic!("{path:?}"));
    assert!(
        path.starts_with('/') && suffix.len() == 6 && suffix.bytes().all(|b| b.is_ascii_alphanumeric()),
        "{path:?}"
    );
    assert_eq!(
        body,
        format!("(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\n{cmd}\n)\n__code=$?\nexit $__code")
    );
}

/// `<untrusted_context>\nOutput: OUT\n…Process Group PGID: N\n</untrusted_context>` with the
/// middle trailer lines `mid` (e.g. `Exit Code: 3\n`).
fn assert_result(content: &str, out: &str, mid: &str) {
    let head = format!("<untrusted_context>\nOutput: {out}\n{mid}Process Group PGID: ");
    let pgid = content
        .strip_prefix(&head)
        .and_then(|t| t.strip_suffix("\n</untrusted_context>"))
        .unwrap_or_else(|| panic!("{content:?}"));
    assert!(
        !pgid.is_empty() && pgid.bytes().all(|b| b.is_ascii_digit()),
        "{content:?}"
    );
}

const AB: &str = r#"argvprobe 'a b' "c d""#;
const EXIT3: &str = "exit 3";
const BACKSLASH: &str = "argvprobe foo \\";
const PADDED: &str = "  argvprobe padded  \n";
const SUBST: &str = r#"argvprobe "$(echo hi)""#;

/// The refusal Gemini CLI 0.61.0's shell tool answers (as the tool's output, not an error).
const REFUSAL: &str = "Command injection detected: command substitution syntax ($(), backticks, <() or >()) found in command arguments. On PowerShell, @() array subexpressions and $() subexpressions are also blocked. This is a security risk and the command was blocked.";

#[test]
fn gemini_cli_0_61_0_runs_run_shell_command_in_its_subshell_wrapper() {
    let payloads = [
        AB, BANG, PID, QUOTES, CRLF, PRINTF, EXIT3, BACKSLASH, PADDED, SUBST,
    ];
    let Some(run) = run(&payloads) else {
        return;
    };
    // One streaming request per turn to the model named on the command line, nothing else.
    let uris: Vec<(&str, &str)> = run
        .requests
        .iter()
        .map(|r| (r.uri.as_str(), r.role.as_str()))
        .collect();
    let want: Vec<String> = (0..=payloads.len()).map(|k| format!("main:{k}")).collect();
    assert_eq!(uris.len(), payloads.len() + 1, "{uris:?}");
    for ((uri, role), w) in uris.iter().zip(&want) {
        assert_eq!(
            *uri,
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(role, w);
    }
    // The shell tool Gemini CLI 0.61.0 offers: `run_shell_command` with a required `command`.
    let body = &run.requests[0].body;
    assert_eq!(
        iec_harness::gemini_api::shell_tool(body).as_deref(),
        Some("run_shell_command")
    );
    let decl = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["functionDeclarations"].as_array().unwrap())
        .find(|d| d["name"] == "run_shell_command")
        .unwrap();
    assert_eq!(
        decl["parametersJsonSchema"]["required"],
        serde_json::json!(["command"])
    );
    // The harness keeps the model's call ids.
    let ids: Vec<String> = run
        .results
        .iter()
        .map(|r| r.tool_result.as_ref().unwrap().tool_use_id.clone())
        .collect();
    let want_ids: Vec<String> = (0..payloads.len())
        .map(iec_harness::gemini_api::call_id)
        .collect();
    assert_eq!(ids, want_ids);

    let [ab, bang, pid, quotes, crlf, printf, exit3, backslash, padded, subst] = &run.results[..] else {
        unreachable!()
    };
    assert_eq!(argvs(ab), v(&["a b", "c d"]));
    assert_eq!(ab.probe[0].hex, ["612062", "632064"]);
    assert_eq!(argvs(bang), v(&["a != b"]));
    assert_eq!(argvs(quotes), support::quotes_argv());
    // No control-character check: the CR reaches bash, as with `bash -c`.
    assert_eq!(argvs(crlf), vec![vec!["a\r".to_string()], vec!["b".to_string()]]);
    let a = argvs(pid);
    assert!(
        a.len() == 1
            && a[0].len() == 1
            && a[0][0]
                .strip_prefix("PID=")
                .is_some_and(|n| n.parse::<u32>().is_ok()),
        "{a:?}"
    );
    for r in [ab, bang, quotes, crlf, padded] {
        assert_eq!(argvs(r), direct_argvs(r), "{:?}", r.payload);
    }
    // trim(), then a space after a trailing backslash: the last argument becomes " ".
    assert_eq!(argvs(backslash), v(&["foo", " "]));
    assert_eq!(direct_argvs(backslash), v(&["foo", "\\"]));

    // Hops: bash gets the wrapper around the trimmed command; one bash per call.
    for (r, cmd) in [
        (ab, AB),
        (bang, BANG),
        (pid, PID),
        (quotes, QUOTES),
        (crlf, CRLF),
        (printf, PRINTF),
        (exit3, EXIT3),
        (backslash, "argvprobe foo \\ "),
        (padded, "argvprobe padded"),
    ] {
        let outer = r.outer.as_deref().expect("the wrapper seen by BASH_ENV");
        assert_wrapper(outer, cmd);
        assert_eq!(r.bash_strings, [outer.to_string()]);
        assert_eq!(iec_harness::gemini::wrapped_command(outer), Some(cmd));
    }
    assert_result(
        &ab.tool_result.as_ref().unwrap().content,
        r#"{"argv":["a b","c d"],"hex":["612062","632064"]}"#,
        "",
    );
    assert_result(&printf.tool_result.as_ref().unwrap().content, "x != y\nit's", "");
    let t = exit3.tool_result.as_ref().unwrap();
    assert!(t.is_error);
    assert_result(&t.content, "(empty)", "Exit Code: 3\n");
    // The refused call: no bash, no probe, the refusal as the tool's output (no error flag).
    let t = subst.tool_result.as_ref().unwrap();
    assert_eq!(t.content, REFUSAL);
    assert!(!t.is_error);
    assert!(subst.bash_strings.is_empty() && subst.probe.is_empty() && subst.outer.is_none());
    assert_eq!(direct_argvs(subst), v(&["hi"]));

    // Observed verdicts.
    let verdict = |r: &PayloadResult| {
        let o = observe_gemini("x", r);
        let fd = o.first_divergence.map(|f| {
            format!(
                "{} {} {}",
                f.hop_name,
                f.mechanism,
                if f.silent { "silent" } else { "loud" }
            )
        });
        (o.verdict, fd)
    };
    for r in [ab, bang, pid, quotes, crlf, printf, exit3, padded] {
        assert_eq!(verdict(r), ("corresponds".to_string(), None), "{:?}", r.payload);
    }
    assert_eq!(
        verdict(backslash),
        (
            "diverges".to_string(),
            Some("harness-rewrite other silent".to_string())
        )
    );
    assert_eq!(
        verdict(subst),
        ("diverges".to_string(), Some("tool-input other loud".to_string()))
    );
}

#[test]
fn gemini_api_answers_from_the_script() {
    let (addr, server) = ReplayServer::start(Script::commands(["argvprobe 'a != b'"])).unwrap();
    let tools = json!([{"functionDeclarations": [
        {"name": "read_file", "parametersJsonSchema": {"type": "object"}},
        {"name": "run_shell_command", "parametersJsonSchema": {"type": "object",
            "properties": {"command": {"type": "string"}}, "required": ["command"]}}]}]);
    let user = json!({"role": "user", "parts": [{"text": "go"}]});
    let path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";

    // Turn 0, streaming: one SSE event with the functionCall.
    let (status, body) = post(addr, path, &json!({"contents": [user], "tools": tools}));
    assert_eq!(status, 200);
    let data: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    assert_eq!(data.len(), 1, "{body}");
    let ev: Value = serde_json::from_str(data[0]).unwrap();
    assert_eq!(
        ev["candidates"][0]["content"],
        json!({"role": "model", "parts": [{"functionCall": {"id": "gemini_iec_0000",
            "name": "run_shell_command", "args": {"command": "argvprobe 'a != b'"}}}]})
    );
    assert_eq!(ev["candidates"][0]["finishReason"], "STOP");

    // Turn 1 (non-streaming) carries the function response: the final text.
    let contents = json!([user,
        {"role": "model", "parts": [{"functionCall": {"id": "gemini_iec_0000",
            "name": "run_shell_command", "args": {"command": "argvprobe 'a != b'"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "gemini_iec_0000",
            "name": "run_shell_command", "response": {"output":
            "<untrusted_context>\nOutput: boom\nExit Code: 2\nProcess Group PGID: 9\n</untrusted_context>"}}}]}]);
    let (status, body) = post(
        addr,
        "/v1beta/models/gemini-2.5-flash:generateContent",
        &json!({"contents": contents, "tools": tools}),
    );
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["candidates"][0]["content"]["parts"], json!([{"text": "Done."}]));
    let tr = server.tool_result(0).unwrap();
    assert_eq!(tr.tool_use_id, "gemini_iec_0000");
    assert!(tr.is_error);
    let so = iec_harness::gemini_api::shell_output(&tr.content);
    assert_eq!((so.output.as_str(), so.exit_code), ("boom", Some(2)));
    assert_eq!(
        server.echoed_input(0),
        Some(json!({"command": "argvprobe 'a != b'"}))
    );

    // A side request that asks for JSON gets its schema's smallest value; one without, the side
    // text; countTokens a count; an unknown method a 404.
    let (_, body) = post(
        addr,
        "/v1beta/models/gemini-3.5-flash-lite:generateContent",
        &json!({"contents": [user], "generationConfig": {"responseMimeType": "application/json",
            "responseJsonSchema": {"type": "OBJECT", "properties": {
                "complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}}}}}),
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    let text = v["candidates"][0]["content"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"complexity_reasoning": "", "complexity_score": 0})
    );
    let (_, body) = post(
        addr,
        "/v1beta/models/m:generateContent",
        &json!({"contents": [user]}),
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["candidates"][0]["content"]["parts"], json!([{"text": "OK"}]));
    let (status, body) = post(addr, "/v1beta/models/m:countTokens", &json!({"contents": [user]}));
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()),
        (200, json!({"totalTokens": 100}))
    );
    let (status, _) = post(addr, "/v1beta/models/m:embedContent", &json!({}));
    assert_eq!(status, 404);
    let roles: Vec<String> = server.requests().iter().map(|r| r.role.clone()).collect();
    assert_eq!(
        roles,
        ["main:0", "main:1", "side", "side", "count_tokens", "unknown"]
    );
    assert_eq!(server.unknown_paths(), ["POST /v1beta/models/m:embedContent"]);
}

/// `iec check`'s predictions on `gemini-cli-linux` against real Gemini CLI runs on the hazard
/// payloads the Claude Code and Codex agreement tests use (same seed).
#[test]
fn gemini_cli_0_61_0_agrees_with_iec_check_on_300_hazard_payloads() {
    support::agrees_on_300_hazards(
        "gemini-cli",
        GEMINI_CLI_VERSION,
        install_or_skip(),
        iec_harness::gemini::run_observed,
        &["gemini-cli-linux"],
    );
}

/// A payload aimed at one of Gemini CLI's own hops, what reached the probe through Gemini CLI
/// 0.61.0 (`None`: checked separately), the observed verdict, and whether `iec check` on
/// `gemini-cli-linux` agrees.
struct Case {
    cmd: &'static str,
    argv: Option<&'static [&'static [&'static str]]>,
    observed: &'static str,
    agrees: bool,
}

const fn case(
    cmd: &'static str,
    argv: Option<&'static [&'static [&'static str]]>,
    observed: &'static str,
    agrees: bool,
) -> Case {
    Case {
        cmd,
        argv,
        observed,
        agrees,
    }
}

const RW: &str = "diverges at harness-rewrite";
const SH: &str = "diverges at shell";
const IN: &str = "diverges at tool-input";
const OK: &str = "corresponds";

/// stripShellWrapper, the substitution check, trim(), the subshell wrapper and its variables,
/// argv[0]. Measured with gemini-cli 0.61.0; the `agrees: false` rows are the known limits of
/// `iec check` on this launch (see the test below).
const ADVERSARIAL: &[Case] = &[
    // A redundant `bash -c '…'` is stripped; the argv is the same (one bash fewer), and the
    // script holds only constructs of iec_check::wrapping's whitelist. `sh -c` is not judged
    // so (sh's script then runs in bash).
    case("bash -c 'argvprobe \"x y\" z'", Some(&[&["x y", "z"]]), OK, true),
    case("sh -c 'argvprobe a'", Some(&[&["a"]]), OK, false),
    case(
        "/bin/bash -c \"argvprobe \\\"a b\\\" \\${HOME}x\"",
        None,
        OK,
        true,
    ),
    case("bash -c \"argvprobe \\\"\\$HOME\\\"\"", None, OK, true),
    case("bash\t-c\t'argvprobe tab'", Some(&[&["tab"]]), OK, true),
    // Stripping that changes the call: outer quotes sliced, arguments after the script lost,
    // other programs' wrappers (case-insensitive) run by bash.
    case(
        "bash -c 'argvprobe a' && argvprobe 'b c'",
        Some(&[&["a && argvprobe b", "c"]]),
        RW,
        true,
    ),
    case("bash -c 'argvprobe \"$0\" \"$1\"' x y", Some(&[]), RW, true),
    case("BASH -c 'argvprobe upper'", Some(&[&["upper"]]), RW, true),
    case("powershell -Command 'argvprobe ps'", Some(&[&["ps"]]), RW, true),
    case("cmd.exe /c argvprobe cmd", Some(&[&["cmd"]]), RW, true),
    // The wrapper's context: line 4 of its text, a subshell, its own variable, argv[0].
    case("argvprobe \"$LINENO\"", Some(&[&["4"]]), SH, false),
    case("argvprobe \"$BASH_SUBSHELL\"", Some(&[&["1"]]), SH, false),
    case("argvprobe \"${_bgpids_file:+set}\"", Some(&[&["set"]]), SH, false),
    case("argvprobe \"$0\"", None, SH, false),
    // The substitution check: quotes and escapes as bash reads them, except `$'…'`.
    case("argvprobe \"a\\`b\"", Some(&[&["a`b"]]), OK, true),
    case("argvprobe \"\\$(x)\"", Some(&[&["$(x)"]]), OK, true),
    case("argvprobe \"<(x)\"", Some(&[&["<(x)"]]), OK, true),
    case("argvprobe \"it's\" '$(x)'", Some(&[&["it's", "$(x)"]]), OK, true),
    case("argvprobe <(true)", Some(&[]), IN, true),
    case("argvprobe `echo b`", Some(&[]), IN, true),
    case("argvprobe \"$(printf '%s' x)\"", Some(&[]), IN, true),
    // `$'\''` is one quote character to bash, but toggles the check's single-quote state:
    // the single-quoted `'$(x)'` after it is refused.
    case("argvprobe $'\\'' '$(x)'", Some(&[]), IN, true),
    // trim() and the trailing backslash.
    case("\targvprobe lead", Some(&[&["lead"]]), OK, true),
    case("argvprobe foo \\", Some(&[&["foo", " "]]), RW, true),
    case("argvprobe a \\\n", Some(&[&["a", " "]]), RW, true),
    // Inside the subshell: comments, exit, background jobs, globbing options.
    case("argvprobe a # comment", Some(&[&["a"]]), OK, true),
    case("argvprobe x; exit 5", Some(&[&["x"]]), OK, true),
    case("argvprobe a &\nwait", Some(&[&["a"]]), OK, true),
    case("shopt -s nullglob; argvprobe *.none", Some(&[&[]]), OK, true),
    case("argvprobe *.none", Some(&[&["*.none"]]), OK, true),
];

/// The adversarial payloads through real Gemini CLI, each against `bash -c` and against
/// `iec check --launch gemini-cli-linux`. Two kinds of disagreement remain, both beyond the
/// launch file: `iec check` counts the removal of a redundant `sh -c '…'` as a rewrite although
/// the argv is the same (a redundant `bash -c '…'` is judged by `iec_check::wrapping`'s
/// whitelist), and it does not evaluate the variables whose value the wrapper's context changes
/// (`$LINENO`, `$BASH_SUBSHELL`, `$_bgpids_file`, `$0`). The test pins both lists: it fails when
/// either side changes.
#[test]
fn gemini_cli_0_61_0_adversarial_payloads() {
    if !install_or_skip() {
        return;
    }
    let payloads: Vec<iec_harness::agree::Payload> = ADVERSARIAL
        .iter()
        .enumerate()
        .map(|(i, c)| iec_harness::agree::Payload {
            id: format!("g{i:02}"),
            command: c.cmd.to_string(),
        })
        .collect();
    let observed = iec_harness::gemini::run_observed(&support::spec(GEMINI_CLI_VERSION), &payloads)
        .expect("gemini runs");
    let rep = iec_harness::agree::agree_observed(GEMINI_CLI_VERSION, "gemini-cli-linux", &observed)
        .expect("agreement");
    let mut failures = Vec::new();
    for ((c, o), a) in ADVERSARIAL.iter().zip(&observed).zip(&rep.results) {
        let got: Vec<Vec<String>> = serde_json::from_value(o.received["probe"].clone()).unwrap();
        let direct: Vec<Vec<String>> = serde_json::from_value(o.direct["probe"].clone()).unwrap();
        let verdict = match &o.first_divergence {
            Some(f) => format!("diverges at {}", f.hop_name),
            None => o.verdict.clone(),
        };
        let argv_ok = match c.argv {
            Some(want) => {
                got == want
                    .iter()
                    .map(|r| r.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            }
            // `${HOME}`/`$HOME` through a stripped double-quoted script: as the direct run.
            None if c.cmd.contains("HOME") => got == direct && !got.is_empty(),
            // argv[0] of Gemini's bash is the first `bash` on PATH, made absolute.
            None => {
                direct == [["bash"]]
                    && got.len() == 1
                    && got[0].len() == 1
                    && got[0][0].starts_with('/')
                    && got[0][0].ends_with("/bash")
            }
        };
        if !argv_ok || verdict != c.observed || a.verdict_agree != c.agrees {
            failures.push(format!(
                "{}\n    argv {got:?} (direct {direct:?}), observed {verdict}, agrees {}\n    predicted {}",
                c.cmd, a.verdict_agree, a.predicted
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Gemini CLI 0.1.19 ends its headless session (status 1) when it refuses a command for
/// command substitution, before answering the call: the driver records the refusal its stderr
/// names as that call's result and runs the calls after it in a new session in the same
/// sandbox. (Before, every call after the refusal came back empty and 0.1.19–0.1.21 could not
/// be learned: "the environment marker reached no bash".)
#[test]
fn gemini_cli_0_1_19_ending_its_session_on_a_refusal_is_resumed() {
    const V: &str = "0.1.19";
    let installed = support::installed(&format!("@google/gemini-cli@{V}"), support::HARNESS_SKIP, || {
        install_gemini_cli(V)
    });
    if installed.is_none() {
        return;
    }
    let payloads = ["argvprobe one", SUBST, "argvprobe three"];
    let run =
        iec_harness::harness::Harness::run(&GEMINI_CLI, &support::spec(V), &payloads).expect("harness run");
    assert!(!run.timed_out, "stderr:\n{}", run.stderr);
    assert_eq!(run.results.len(), 3);
    assert_eq!(argvs(&run.results[0]), vec![vec!["one".to_string()]]);
    let refused = &run.results[1];
    let t = refused
        .tool_result
        .as_ref()
        .expect("the refusal recorded as the call's result");
    assert!(t.is_error);
    assert_eq!(
        t.content,
        "Command substitution using $(), <(), or >() is not allowed for security reasons"
    );
    assert!(refused.bash_strings.is_empty() && refused.probe.is_empty());
    assert!(run
        .stderr
        .contains("Error executing tool run_shell_command: Command substitution"));
    // The next call ran in the new session.
    assert_eq!(argvs(&run.results[2]), vec![vec!["three".to_string()]]);
    assert_eq!(run.exit_code, Some(0), "the last session ends normally");
    // What iec check predicts for that launch agrees: refused at tool-input.
    let o = observe_gemini("subst", refused);
    assert_eq!(o.verdict, "diverges");
    assert_eq!(o.first_divergence.expect("divergence").hop_name, "tool-input");
}
