//! `iec bench --mode agent` end to end against the replay model server of `iec-harness`: the
//! server plays the model (each task's recorded actions as its tool calls, then a final text)
//! on the Anthropic Messages and OpenAI Chat Completions APIs; `iec` delivers each call along
//! the path, runs it in the task's sandbox and lets the check decide.

mod support;

use iec_harness::server::{ReplayServer, Script};
use serde_json::{json, Value};

const TASKS: &str = include_str!("../../iec-bench/data/tasks.jsonl");

/// The built-in task `id`: its JSON line and its recorded actions.
fn task(id: &str) -> (String, Vec<String>) {
    let line = TASKS
        .lines()
        .find(|l| !l.starts_with('#') && serde_json::from_str::<Value>(l).unwrap()["id"] == id)
        .unwrap_or_else(|| panic!("no task {id}"));
    let v: Value = serde_json::from_str(line).unwrap();
    let actions = v["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    (line.to_string(), actions)
}

/// A data folder with that one task.
fn data(line: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("pairs.jsonl"), "").unwrap();
    std::fs::write(d.path().join("chains.jsonl"), "").unwrap();
    std::fs::write(d.path().join("tasks.jsonl"), format!("{line}\n")).unwrap();
    d
}

struct Run {
    code: i32,
    out: String,
    err: String,
    /// The main-loop requests the server received.
    requests: Vec<Value>,
}

/// `iec bench --mode agent` on task `id` against a replay server that emits `commands`, then
/// `final_text`.
fn agent(id: &str, commands: &[String], final_text: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let (line, _) = task(id);
    let dir = data(&line);
    let mut script = Script::commands(commands.iter().cloned());
    script.final_text = final_text.into();
    let (_, server) = ReplayServer::start(script).unwrap();
    let openai = extra.windows(2).any(|w| w == ["--api", "openai"]);
    let endpoint = if openai {
        format!("{}/v1", server.base_url())
    } else {
        server.base_url()
    };
    let mut args = vec![
        "bench",
        "--mode",
        "agent",
        "--data",
        dir.path().to_str().unwrap(),
        "--endpoint",
        &endpoint,
        "--model",
        "replay-model",
    ];
    if !extra.contains(&"--format") {
        args.extend_from_slice(&["--format", "json", "--items"]);
    }
    args.extend_from_slice(extra);
    let (code, out, err) = support::run_env(env!("CARGO_BIN_EXE_iec"), &args, b"", env);
    let requests = server
        .requests()
        .into_iter()
        .filter(|r| r.role.starts_with("main:"))
        .map(|r| r.body)
        .collect();
    Run {
        code,
        out,
        err,
        requests,
    }
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not one JSON document ({e}): {s}"))
}

/// One path's agent figures in one IntAct mode.
fn figures(v: &Value, path: &str, mode: &str) -> Value {
    v["paths"][path]["agent"][mode].clone()
}

fn session<'v>(v: &'v Value, path: &str, intact: bool) -> &'v Value {
    v["agent"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == path && r["intact"] == intact)
        .unwrap_or_else(|| panic!("no session on {path} intact {intact}: {v}"))
}

const CC: &str = "claude-code-2.1.72-linux";

/// jq-filter-1's filter holds `!=` inside single quotes: Claude Code 2.1.72 writes it as
/// `\!=`, and jq rejects the filter (replay mode: lost, recovered by IntAct). The model is the
/// same in every session, so only the path and IntAct make the difference.
#[test]
fn anthropic_intact_recovers_what_the_path_loses_and_the_loss_is_a_false_confirmation() {
    let (_, actions) = task("jq-filter-1");
    let r = agent(
        "jq-filter-1",
        &actions,
        "Done: open.json lists the ids.",
        &["--paths", &format!("bash-c,{CC}")],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.err);
    let v = json(&r.out);
    // Replay mode says so: lost on 2.1.72 with a changed call, recovered; nothing lost on bash-c.
    assert_eq!(v["paths"][CC]["lost_changed"], 1, "{}", r.out);
    assert_eq!(v["paths"][CC]["recovered_changed"], 1, "{}", r.out);
    assert_eq!(v["paths"]["bash-c"]["lost"], 0, "{}", r.out);
    // One call and the final answer: 2 requests of 100 input and 10 output tokens each.
    let pass = json!({"tasks": 1, "passed": 1, "pass_rate": 1.0, "tokens": 220,
        "tokens_per_passed": 220.0, "false_confirmations": 0, "turn_limit": 0});
    assert_eq!(figures(&v, "bash-c", "intact_off"), pass, "{}", r.out);
    assert_eq!(figures(&v, "bash-c", "intact_on"), pass, "{}", r.out);
    assert_eq!(figures(&v, CC, "intact_on"), pass, "{}", r.out);
    assert_eq!(
        figures(&v, CC, "intact_off"),
        json!({"tasks": 1, "passed": 0, "pass_rate": 0.0, "tokens": 220,
            "tokens_per_passed": null, "false_confirmations": 1, "turn_limit": 0}),
        "{}",
        r.out
    );
    let off = session(&v, CC, false);
    assert_eq!(off["calls"], 1);
    assert_eq!(off["repaired"], 0);
    assert_eq!(off["stopped"], true);
    assert_eq!(off["false_confirmation"], true);
    assert_eq!(off["final_text"], "Done: open.json lists the ids.");
    let on = session(&v, CC, true);
    assert_eq!(
        (on["pass"].clone(), on["repaired"].clone()),
        (json!(true), json!(1)),
        "{on}"
    );
    assert_eq!(session(&v, "bash-c", true)["repaired"], 0);
    // 4 sessions × 2 requests, each offering the one shell tool and naming the model.
    assert_eq!(r.requests.len(), 8);
    for b in &r.requests {
        assert_eq!(b["model"], "replay-model");
        assert_eq!(b["tools"].as_array().unwrap().len(), 1);
        assert_eq!(b["tools"][0]["name"], "bash");
    }
    // The second request of each session carries the tool result the model saw: on 2.1.72
    // with IntAct off, jq's complaint about the `\!=` it received and its exit code; else
    // nothing (the output went to open.json).
    let mut results: Vec<(bool, String)> = r
        .requests
        .iter()
        .flat_map(iec_harness::server::tool_results)
        .map(|t| (t.is_error, t.content))
        .collect();
    results.sort();
    assert_eq!(results.len(), 4, "{results:?}");
    assert_eq!(
        results[..3],
        vec![(false, "(no output)".to_string()); 3][..],
        "{results:?}"
    );
    let (err, text) = &results[3];
    assert!(
        *err && text.starts_with("jq: error") && text.ends_with("\nExit code: 3"),
        "{text}"
    );
}

/// The same lost session, but the model reports a failure: not a false confirmation.
#[test]
fn a_reported_failure_is_not_a_false_confirmation() {
    let (_, actions) = task("jq-filter-1");
    let r = agent(
        "jq-filter-1",
        &actions,
        "I could not verify open.json.",
        &["--paths", CC],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.err);
    let v = json(&r.out);
    let off = figures(&v, CC, "intact_off");
    assert_eq!(
        (off["passed"].clone(), off["false_confirmations"].clone()),
        (json!(0), json!(0))
    );
    assert_eq!(figures(&v, CC, "intact_on")["passed"], 1);
}

/// A model that claims success without doing the work: every path fails it, each a false
/// confirmation; and one that runs out of turns is not one.
#[test]
fn claims_without_work_and_the_turn_limit() {
    let r = agent(
        "sed-amp-1",
        &[],
        "All done, the notes are updated.",
        &["--paths", "bash-c"],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.err);
    let v = json(&r.out);
    for mode in ["intact_off", "intact_on"] {
        assert_eq!(
            figures(&v, "bash-c", mode),
            json!({"tasks": 1, "passed": 0, "pass_rate": 0.0, "tokens": 110,
                "tokens_per_passed": null, "false_confirmations": 1, "turn_limit": 0}),
            "{}",
            r.out
        );
    }
    let (_, actions) = task("git-commit-2");
    let r = agent(
        "git-commit-2",
        &actions,
        "Done.",
        &["--paths", "bash-c", "--max-turns", "2"],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.err);
    let v = json(&r.out);
    let m = figures(&v, "bash-c", "intact_off");
    assert_eq!(
        m,
        json!({"tasks": 1, "passed": 0, "pass_rate": 0.0, "tokens": 220,
            "tokens_per_passed": null, "false_confirmations": 0, "turn_limit": 1}),
        "{}",
        r.out
    );
    assert_eq!(session(&v, "bash-c", false)["stopped"], false);
    // The table: one line per path and IntAct mode.
    let r = agent(
        "sed-amp-1",
        &[],
        "All done.",
        &["--paths", "bash-c", "--format", "text"],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.out
            .contains("\nAgent mode: replay-model through \"http://127.0.0.1:"),
        "{}",
        r.out
    );
    for mode in ["off", "on"] {
        let want = format!(
            "{:<32} {:>6} {:>7} {:>7} {:>9} {:>13} {:>6} {:>7}\n",
            "bash-c", mode, 1, 0, "0.0%", "-", 1, 0
        );
        assert!(r.out.contains(&want), "{want:?} in {}", r.out);
    }
}

/// The OpenAI-compatible API, with a key from a named variable that is never printed, and a
/// failing call whose output and exit code reach the model.
#[test]
fn openai_chat_completions_with_a_key_that_is_never_printed() {
    let (_, mut actions) = task("json-config-1");
    actions.insert(0, "ls no-such-file".into());
    const KEY: &str = "sk-iec-bench-test-4f1c9e";
    let r = agent(
        "json-config-1",
        &actions,
        "Done.",
        &[
            "--paths",
            "bash-c",
            "--api",
            "openai",
            "--key-env",
            "BENCH_AGENT_TEST_KEY",
        ],
        &[("BENCH_AGENT_TEST_KEY", KEY)],
    );
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(!r.out.contains(KEY) && !r.err.contains(KEY));
    let v = json(&r.out);
    assert_eq!(v["agent"]["api"], "openai");
    // 3 calls and the final answer, 110 tokens each.
    for mode in ["intact_off", "intact_on"] {
        let m = figures(&v, "bash-c", mode);
        assert_eq!(
            (m["passed"].clone(), m["tokens"].clone()),
            (json!(1), json!(440)),
            "{}",
            r.out
        );
    }
    // The failing `ls`: its stderr and exit code went back as the tool message.
    let last = r
        .requests
        .iter()
        .find(|b| b["messages"].as_array().unwrap().len() == 8)
        .expect("a request with the system, user and three call-and-result pairs");
    let first_result = &last["messages"][3];
    assert_eq!(first_result["role"], "tool");
    let content = first_result["content"].as_str().unwrap();
    assert!(
        content.starts_with("ls: cannot access 'no-such-file'"),
        "{content}"
    );
    assert!(content.ends_with("\nExit code: 2"), "{content}");
}

#[test]
fn bad_options_are_clear_errors() {
    let (line, _) = task("sed-amp-1");
    let dir = data(&line);
    let d = dir.path().to_str().unwrap();
    let local = "http://127.0.0.1:9";
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "--model",
                "m",
                "--endpoint",
                "https://api.example.invalid",
                "--key-env",
                "BENCH_AGENT_NO_SUCH_KEY",
            ],
            "no API key: set the environment variable BENCH_AGENT_NO_SUCH_KEY",
        ),
        (
            &["--endpoint", local],
            "--mode agent needs --endpoint URL and --model NAME",
        ),
        (
            &["--model", "m", "--endpoint", "ftp://x"],
            "is not an http:// or https:// URL",
        ),
        (
            &[
                "--model",
                "m",
                "--endpoint",
                local,
                "--paths",
                "codex-windows-powershell",
            ],
            "codex-windows-powershell has no receiver on this machine",
        ),
    ];
    for (extra, want) in cases {
        let args = [&["bench", "--mode", "agent", "--data", d][..], extra].concat();
        let (code, _, err) = support::run_env(env!("CARGO_BIN_EXE_iec"), &args, b"", &[]);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
