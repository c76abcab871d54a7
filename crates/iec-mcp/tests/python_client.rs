//! End-to-end tests with the official Python `mcp` SDK as the client
//! (tests/mcp_client.py), talking to the real server binary over stdio.

mod common;

use std::path::Path;
use std::time::Instant;

use common::{client, hostile_strings, is_error, structured};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn probe_output(resp: &Value) -> Vec<String> {
    let s = structured(resp);
    assert_eq!(s["exit_code"], 0, "{resp}");
    assert_eq!(s["stdout"]["utf8"], true);
    serde_json::from_str(s["stdout"]["text"].as_str().unwrap())
        .unwrap_or_else(|e| panic!("probe output not JSON ({e}): {resp}"))
}

const PROBE: [&str; 3] = [
    "python3",
    "-c",
    "import sys,json; print(json.dumps(sys.argv[1:]))",
];

/// The interpreter behind `python3` (not a version-manager shim), and a PATH
/// that finds it first.
fn real_python() -> (String, String) {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    let exe = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let dir = Path::new(&exe).parent().unwrap().display().to_string();
    let path = format!("{dir}:{}", std::env::var("PATH").unwrap_or_default());
    (exe, path)
}

#[test]
fn hostile_arguments_and_scripts_arrive_byte_exact() {
    let Some(py) = common::python() else { return };
    let canary = tempfile::tempdir().unwrap();
    let strings = hostile_strings(canary.path());
    assert!(strings.len() >= 200, "only {} strings", strings.len());
    let t = Instant::now();
    let (real_py, path) = real_python();
    let out = client(
        &py,
        "hostile",
        &json!({ "strings": strings, "python": real_py, "path": path }),
    );
    let elapsed = t.elapsed();

    // One call with every hostile string as its own argument.
    let all = &out["run_all"];
    assert_eq!(probe_output(all), strings);
    let mut argv: Vec<String> = PROBE.iter().map(|s| s.to_string()).collect();
    argv.extend(strings.iter().cloned());
    assert_eq!(structured(all)["argv"], json!(argv), "argv echoed as passed");

    // One call per string.
    let each = out["run_each"].as_array().unwrap();
    assert_eq!(each.len(), strings.len());
    for (s, r) in strings.iter().zip(each) {
        assert_eq!(probe_output(r), vec![s.clone()], "run {s:?}");
    }

    // Through env and stdin as well.
    for (s, r) in strings.iter().zip(out["run_env_stdin"].as_array().unwrap()) {
        assert_eq!(probe_output(r), vec![s.clone(), s.clone()], "env/stdin {s:?}");
    }

    // Scripts: the program prints its own file bytes as hex.
    let scripts = out["scripts"].as_array().unwrap();
    assert!(scripts.len() >= 2 * strings.len());
    let mut counts = std::collections::BTreeMap::new();
    for sc in scripts {
        let interp = sc["interpreter"].as_str().unwrap();
        let script = sc["script"].as_str().unwrap();
        let r = &sc["response"];
        let s = structured(r);
        assert_eq!(s["exit_code"], 0, "{interp} script failed: {r}");
        assert_eq!(s["delivered_via"], "file");
        assert_eq!(s["script_deleted"], true);
        assert_eq!(s["script_bytes"], script.len());
        assert_eq!(
            s["script_sha256"].as_str().unwrap(),
            hex(&Sha256::digest(script.as_bytes())),
            "sha256 of {script:?}"
        );
        assert_eq!(
            s["stdout"]["text"].as_str().unwrap(),
            hex(script.as_bytes()),
            "{interp} read back different bytes for {script:?}"
        );
        let a = s["argv"].as_array().unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0], interp);
        let file = a[1].as_str().unwrap();
        assert!(file.starts_with('/'), "{file}");
        assert!(!Path::new(file).exists(), "script file {file} was not deleted");
        *counts.entry(interp.to_string()).or_insert(0) += 1;
    }

    // Script arguments.
    assert_eq!(probe_output(&out["script_args"]), strings);
    assert_eq!(probe_output(&out["script_args_bash"]), strings);

    // Nothing was executed by a shell: no canary file exists.
    let left: Vec<_> = std::fs::read_dir(canary.path()).unwrap().collect();
    assert!(left.is_empty(), "canary files created: {left:?}");
    println!(
        "hostile: {} strings, {} run calls, {} script calls {:?}, {:.1}s client / {:.1}s total",
        strings.len(),
        1 + each.len() + out["run_env_stdin"].as_array().unwrap().len(),
        scripts.len() + 2,
        counts,
        out["elapsed_s"].as_f64().unwrap(),
        elapsed.as_secs_f64()
    );
}

#[test]
fn hundred_concurrent_calls() {
    let Some(py) = common::python() else { return };
    let tag = "$(x) '\"; |&";
    let out = client(&py, "concurrent", &json!({ "n": 100, "tag": tag }));
    let rs = out["results"].as_array().unwrap();
    assert_eq!(rs.len(), 100);
    for (i, r) in rs.iter().enumerate() {
        let s = structured(r);
        assert_eq!(s["exit_code"], 0, "{r}");
        assert_eq!(s["stdout"]["text"], format!("call-{i}-{tag}"), "{r}");
    }
    let elapsed = out["elapsed_s"].as_f64().unwrap();
    // Each call sleeps 0.3 s: serially that is >= 30 s.
    assert!(elapsed < 10.0, "100 calls took {elapsed:.1}s: not concurrent");
    println!("100 concurrent calls (0.3 s each) in {elapsed:.2}s");
}

fn calls(py: &Path, calls: Value) -> Vec<Value> {
    let out = client(py, "calls", &json!({ "calls": calls }));
    out["results"].as_array().unwrap().clone()
}

fn proc_alive(pid: i64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // state is the field after the ")" that closes the command name
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

#[test]
fn timeout_kills_the_process_group() {
    let Some(py) = common::python() else { return };
    let rs = calls(
        &py,
        json!([
            ["run", {"argv": ["sleep", "30"], "timeout_ms": 500}],
            ["run", {"argv": ["sh", "-c", "sleep 30 & echo $!; wait"], "timeout_ms": 500}],
        ]),
    );
    for r in &rs {
        let s = structured(r);
        assert_eq!(s["timed_out"], true, "{r}");
        assert_eq!(s["signal"], 9, "{r}");
        assert!(!is_error(r));
        let e = r["elapsed_s"].as_f64().unwrap();
        assert!(e < 5.0, "timeout took {e}s");
        println!("timeout_ms 500 returned after {e:.2}s");
        assert!(!proc_alive(s["pid"].as_i64().unwrap()));
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("TIMED OUT"), "{text}");
    }
    let grandchild: i64 = structured(&rs[1])["stdout"]["text"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!proc_alive(grandchild), "background sleep {grandchild} survived");
}

#[test]
fn errors_are_tool_results_and_outputs_are_lossless() {
    let Some(py) = common::python() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let file = cwd.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let cwd_s = cwd.path().to_str().unwrap();
    let rs = calls(
        &py,
        json!([
            ["run", {"argv": ["iec-no-such-program-x"]}],
            ["run", {"argv": ["/nonexistent/prog"]}],
            ["run", {"argv": []}],
            ["run", {"argv": ["true"], "cwd": "/nonexistent/dir"}],
            ["run", {"argv": ["true"], "cwd": file.to_str().unwrap()}],
            ["run", {"argv": ["true"], "timeout_ms": 600001}],
            ["run", {"argv": ["echo", "a\u{0}b"]}],
            ["run", {"argv": ["true"], "env": {"A=B": "x"}}],
            ["run_script", {"interpreter": "perl", "script": "print 1"}],
            ["run_script", {"interpreter": "bash -x", "script": "echo"}],
            ["run", {"argv": ["true"], "bogus": 1}],
        ]),
    );
    let needles = [
        "not found",
        "not found",
        "at least one",
        "cwd",
        "not a directory",
        "timeout_ms",
        "NUL",
        "'='",
        "unsupported interpreter",
        "unsupported interpreter",
        "unknown field",
    ];
    for (r, n) in rs.iter().zip(needles) {
        assert_eq!(r["ok"], true, "protocol error instead of a tool error: {r}");
        assert!(is_error(r), "expected isError: {r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(n), "{text:?} lacks {n:?}");
    }

    let rs = calls(
        &py,
        json!([
            ["run", {"argv": ["python3", "-c",
                "import sys; sys.stdout.buffer.write(bytes(range(256))); sys.stderr.buffer.write(b'e'*(3*1024*1024))"]}],
            ["run", {"argv": ["sh", "-c", "pwd; printf %s \"$IEC_V\"; cat; exit 7"],
                     "cwd": cwd_s, "env": {"IEC_V": "v;$(x)"}, "stdin": "from stdin\n"}],
            ["run", {"argv": ["sh", "-c", "kill -TERM $$"]}],
            ["run_script", {"interpreter": "node", "script": "console.log(JSON.stringify(process.argv.slice(2)))",
                            "args": ["-e", "$(x)", ""]}],
            ["run_script", {"interpreter": "sh", "script": "read l; echo \"got $l\"", "stdin": "line\n"}],
        ]),
    );
    let s = structured(&rs[0]);
    assert_eq!(s["stdout"]["utf8"], false);
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(s["stdout"]["base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(raw, (0..=255u8).collect::<Vec<_>>());
    assert_eq!(s["stderr"]["truncated"], true);
    assert_eq!(s["stderr"]["captured_bytes"], 1024 * 1024);
    assert_eq!(s["stderr"]["total_bytes"], 3 * 1024 * 1024);
    assert!(rs[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("TRUNCATED"));

    let s = structured(&rs[1]);
    assert_eq!(s["exit_code"], 7);
    let real = std::fs::canonicalize(cwd.path()).unwrap();
    assert_eq!(
        s["stdout"]["text"],
        format!("{}\nv;$(x)from stdin\n", real.display())
    );
    assert_eq!(structured(&rs[2])["signal"], 15);
    assert_eq!(structured(&rs[2])["exit_code"], Value::Null);
    assert_eq!(structured(&rs[3])["stdout"]["text"], "[\"-e\",\"$(x)\",\"\"]\n");
    assert_eq!(structured(&rs[4])["stdout"]["text"], "got line\n");
}

#[test]
fn lists_both_tools_with_schemas() {
    let Some(py) = common::python() else { return };
    let out = client(&py, "list", &json!({}));
    let tools = out["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["run", "run_script"]);
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["argv"]));
    assert_eq!(
        tools[1]["inputSchema"]["properties"]["interpreter"]["enum"],
        json!(["bash", "sh", "python3", "node"])
    );
    assert_eq!(out["server_info"]["name"], "iec-mcp");
    println!("protocol version negotiated: {}", out["protocol_version"]);
}
