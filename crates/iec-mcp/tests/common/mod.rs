//! Shared helpers: the Python `mcp` SDK client venv and the hostile strings.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

pub const SERVER: &str = env!("CARGO_BIN_EXE_iec-mcp");

/// The venv's python with the `mcp` SDK, installing it on first use.
/// `None` (after printing `SKIPPED: ...`) only when installation failed and
/// `IEC_SKIP_PYPI=1` is set; otherwise an installation failure panics.
pub fn python() -> Option<PathBuf> {
    static PY: OnceLock<Option<PathBuf>> = OnceLock::new();
    PY.get_or_init(|| iec_testkit::venv::python("mcp", "mcp", "mcp, mcp.client.stdio"))
        .clone()
}

/// Runs tests/mcp_client.py with a scenario and its input; returns its output JSON.
pub fn client(py: &Path, scenario: &str, input: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let inp = dir.path().join("in.json");
    let out = dir.path().join("out.json");
    std::fs::write(&inp, serde_json::to_vec(input).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let res = Command::new(py)
        .arg(&script)
        .arg(SERVER)
        .arg(scenario)
        .arg(&inp)
        .arg(&out)
        .output()
        .expect("start python client");
    assert!(
        res.status.success(),
        "python MCP client failed ({}):\nstdout: {}\nstderr: {}",
        res.status,
        String::from_utf8_lossy(&res.stdout),
        String::from_utf8_lossy(&res.stderr)
    );
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

/// ≥200 hostile strings (no NUL: a program argument cannot carry one).
/// `canary` is a directory in which `$(touch ...)`-style strings would create files.
pub fn hostile_strings(canary: &Path) -> Vec<String> {
    let c = canary.display().to_string();
    let specials = "'\"\\$!%^&|<>(){}[]*?~#;`";
    let mut v: Vec<String> = Vec::new();
    for ch in specials.chars() {
        v.push(ch.to_string());
        v.push(format!("a{ch}b"));
        v.push(format!("{ch}{ch}"));
    }
    v.push(specials.to_string());
    for n in 1..=9 {
        v.push("\\".repeat(n));
        v.push(format!("{}\"", "\\".repeat(n)));
        v.push(format!("a{}", "\\".repeat(n)));
    }
    v.extend(
        [
            "",
            "",
            " ",
            "  ",
            " leading",
            "trailing ",
            "a b",
            "a  b",
            "\t",
            "a\tb",
            " \t ",
            "\n",
            "\r",
            "\r\n",
            "a\nb",
            "a\r\nb",
            "trailing\n",
            "\n\n\n",
            "\\n",
            "\\r\\n",
            "\\t",
            "\\\n",
            "-",
            "--",
            "-e",
            "-c",
            "-n",
            "--help",
            "--version",
            "-rf",
            "--=",
            "-\n",
            "--x=$(id)",
            "é",
            "日本語",
            "🦀",
            "e\u{301}",
            "ß",
            "\u{202e}rtl",
            "\u{200b}",
            "\u{feff}bom",
            "\u{2028}",
            "\u{2029}",
            "\u{85}",
            "\u{a0}",
            "\u{7f}",
            "\u{fffd}",
            "\u{10ffff}",
            "Ω≈ç√∫",
            "$HOME",
            "${HOME}",
            "${HOME:-x}",
            "$((1+1))",
            "$'\\x41'",
            "$\"x\"",
            "!!",
            "!$",
            "!-1",
            "%PATH%",
            "%%",
            "^&^|",
            "{a,b}",
            "{1..3}",
            "[a-z]*",
            "*.rs",
            "?",
            "~root",
            "~/x",
            "#not a comment",
            "a;b",
            "a&&b",
            "a||b",
            "a|b",
            "a>b",
            "a<b",
            "a>>b",
            "2>&1",
            "<<EOF",
            "<(echo x)",
            ">(cat)",
            "'\"'\"'",
            "\"'\"",
            "'''",
            "\"\"\"",
            "`id`",
            "\\`id\\`",
            "''",
            "\"\"",
            "x=y",
            "IFS=,",
            "PATH=",
            "ls -la",
            "rm -rf /",
            "'; exit 1; '",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    for tag in ["dollar", "tick", "semi", "amp", "pipe", "nl", "and", "quote"] {
        let f = format!("{c}/{tag}");
        v.push(match tag {
            "dollar" => format!("$(touch {f})"),
            "tick" => format!("`touch {f}`"),
            "semi" => format!("; touch {f}"),
            "amp" => format!("& touch {f}"),
            "pipe" => format!("| touch {f}"),
            "nl" => format!("x\ntouch {f}"),
            "and" => format!("&& touch {f} #"),
            _ => format!("'$(touch {f})'\"$(touch {f})\""),
        });
    }
    for c0 in 1u8..32 {
        v.push(format!("ctl{}x", c0 as char));
    }
    // 10 KB strings.
    v.push("A".repeat(10 * 1024));
    v.push("'\"$(touch X)`;|&\\\n\t ".repeat(10 * 1024 / 18));
    v.push("日本🦀".repeat(10 * 1024 / 10));
    v.push(format!("-{}", "\\".repeat(10 * 1024)));
    // Deterministic pseudo-random mixes over a hostile alphabet.
    let alphabet: Vec<char> = "'\"\\$!%^&|<>(){}[]*?~#;` \t\r\nab-=é日🦀\u{202e}"
        .chars()
        .collect();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..60 {
        let len = 1 + i % 40;
        let mut s = String::new();
        for _ in 0..len {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s.push(alphabet[(state >> 33) as usize % alphabet.len()]);
        }
        v.push(s);
    }
    v
}

pub fn structured(resp: &Value) -> &Value {
    assert_eq!(resp["ok"], true, "protocol error: {resp}");
    &resp["result"]["structuredContent"]
}

pub fn is_error(resp: &Value) -> bool {
    resp["result"]["isError"] == true
}
