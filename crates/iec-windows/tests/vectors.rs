//! Data-driven tests: every public vector in `tests/data/*.jsonl` must pass.
//! Each test prints `file: passed/total`. Parameters a vector states in its `note` (fixture
//! files, environment, delayed-expansion state, the PowerShell target, Rust `Arg::Raw`
//! indices) are read from the note; no vector is special-cased.

use iec_windows::{receive_json, render_json, ReceiveOptions};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn load(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_str().expect("string").to_string())
        .collect()
}

fn is_error(v: &Value) -> bool {
    v.get("error") == Some(&Value::Bool(true))
}

fn note(v: &Value) -> &str {
    v.get("note").and_then(Value::as_str).unwrap_or("")
}

/// Runs `check` on each vector, prints the count, and fails listing every mismatch.
fn run(name: &str, check: impl Fn(&Value) -> Result<(), String>) {
    let cases = load(name);
    let mut fails = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        if let Err(e) = check(c) {
            fails.push(format!("  #{i}: input {} => {e}", c["input"]));
        }
    }
    println!("{name}: {}/{} passed", cases.len() - fails.len(), cases.len());
    assert!(
        fails.is_empty(),
        "{name}: {} failures\n{}",
        fails.len(),
        fails.join("\n")
    );
}

fn eq(got: &Value, want: &Value) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("got {got}, expected {want}"))
    }
}

fn render_check(sender: &str, mode: Option<&str>, c: &Value) -> Result<(), String> {
    let out = render_json(sender, mode, &strings(&c["input"]));
    if is_error(&c["expected"]) {
        return if out.get("error").is_some() {
            Ok(())
        } else {
            Err(format!("expected refusal, got {out}"))
        };
    }
    eq(&out["command_line"], &c["expected"])
}

#[test]
fn wine_commandlinetoargvw() {
    run("wine-commandlinetoargvw.jsonl", |c| {
        let out = receive_json(
            "commandlinetoargvw",
            c["mode"].as_str(),
            &ReceiveOptions::default(),
            c["input"].as_str().unwrap(),
        )
        .map_err(|e| e.to_string())?;
        eq(&out["argv"], &c["expected"])
    });
}

/// `input[2,3,4] are Arg::Raw` → `raw:2,3,4`.
fn raw_mode(note: &str) -> String {
    let raw_at = note.find("are Arg::Raw").expect("raw indices in note");
    let start = note[..raw_at].rfind("input[").expect("input[") + 6;
    let end = start + note[start..].find(']').expect("]");
    format!("raw:{}", &note[start..end])
}

#[test]
fn rust_std_windows_args() {
    run("rust-std-windows-args.jsonl", |c| {
        match c["receiver"].as_str().unwrap() {
            "msvcrt-argv" => {
                let out = receive_json(
                    "msvcrt",
                    c["mode"].as_str(),
                    &ReceiveOptions::default(),
                    c["input"].as_str().unwrap(),
                )
                .map_err(|e| e.to_string())?;
                eq(&out["argv"], &c["expected"])
            }
            "msvcrt-quote" => {
                let mode = match c["mode"].as_str() {
                    None => None,
                    Some("force_quotes") => Some("force_quotes".to_string()),
                    Some("raw-args") => Some(raw_mode(note(c))),
                    Some(m) => return Err(format!("unknown mode {m}")),
                };
                render_check("rust-std", mode.as_deref(), c)
            }
            r => Err(format!("unknown receiver {r}")),
        }
    });
}

const BAT_SCRIPTS: [(&str, &str); 3] = [
    ("windows-bat-args1.bat", "@a.exe %*"),
    ("windows-bat-args2.bat", "@a.exe %1 %2 %3 %4 %5 %6 %7 %8 %9"),
    (
        "windows-bat-args3.bat",
        "@a.exe \"%~1\" \"%~2\" \"%~3\" \"%~4\" \"%~5\" \"%~6\" \"%~7\" \"%~8\" \"%~9\"",
    ),
];

fn trim_trailing_empty(mut v: Vec<String>) -> Vec<String> {
    while v.last().is_some_and(String::is_empty) {
        v.pop();
    }
    v
}

#[test]
fn rust_std_bat_args() {
    run("rust-std-bat-args.jsonl", |c| {
        let input = strings(&c["input"]);
        for (script, body) in BAT_SCRIPTS {
            let mut argv = vec![script.to_string()];
            argv.extend(input.iter().cloned());
            let out = render_json("rust-std-bat", None, &argv);
            if is_error(&c["expected"]) {
                if out.get("error").is_none() {
                    return Err(format!("expected refusal, got {out}"));
                }
                continue;
            }
            let cl = out["command_line"].as_str().ok_or(format!("refused: {out}"))?;
            // round trip: cmd.exe runs the script, which starts a.exe; a.exe parses with UCRT
            let mut opts = ReceiveOptions::default();
            opts.files.insert(script.into(), body.into());
            opts.files.insert("a.exe".into(), String::new());
            let r = receive_json("cmd", None, &opts, cl).map_err(|e| e.to_string())?;
            let launches = r["launches"].as_array().unwrap();
            let written = r["files_written"].as_array().unwrap();
            if r["error"] != json!(false)
                || launches.len() != 1
                || r["stdout"] != json!("")
                || !written.is_empty()
            {
                return Err(format!("{script}: cmd result {r}"));
            }
            let child = iec_windows::receive::msvcrt(launches[0]["command_line"].as_str().unwrap());
            let got = trim_trailing_empty(child[1..].to_vec());
            if got != trim_trailing_empty(input.clone()) {
                return Err(format!("{script}: {cl} → a.exe got {got:?}"));
            }
        }
        Ok(())
    });
}

#[test]
fn cpython_list2cmdline() {
    run("cpython-list2cmdline.jsonl", |c| render_check("cpython", None, c));
}

#[test]
fn dotnet_pasteargs() {
    run("dotnet-pasteargs.jsonl", |c| {
        render_check("dotnet", c["mode"].as_str(), c)
    });
}

#[test]
fn go_escapearg() {
    run("go-escapearg.jsonl", |c| {
        let input = strings(&c["input"]);
        eq(
            &json!(iec_windows::render::go_escape_arg(&input[0])),
            &c["expected"],
        )?;
        render_check("go", None, c)
    });
}

/// `invoked as & cscript.exe <TESTDRIVE>\test.wsf …` → `cscript.exe`; `& <TESTDRIVE>\test.bat` →
/// `test.bat`.
fn ps_program(note: &str) -> Option<String> {
    let p = note.find("invoked as & ")? + "invoked as & ".len();
    let tok = note[p..].split(' ').next()?;
    Some(tok.strip_prefix("<TESTDRIVE>\\").unwrap_or(tok).to_string())
}

#[test]
fn powershell_native_args() {
    run("powershell-native-args.jsonl", |c| {
        let opts = ReceiveOptions {
            ps_vars: vec![("a".into(), "a\"b c\"d".into())],
            program: ps_program(note(c)),
            ..Default::default()
        };
        let out = receive_json(
            "pwsh-native",
            c["mode"].as_str(),
            &opts,
            c["input"].as_str().unwrap(),
        )
        .map_err(|e| e.to_string())?;
        eq(&out["argv"], &c["expected"]).map_err(|e| format!("{e} (command line {})", out["command_line"]))
    });
}

/// Parses `fixture files in the current directory: a.bat="…", "b c.bat"="…"`.
fn fixture_files(note: &str) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let key = "fixture files in the current directory: ";
    let Some(p) = note.find(key) else {
        return files;
    };
    let s: Vec<char> = note[p + key.len()..].chars().collect();
    let mut i = 0;
    loop {
        let name: String;
        if s.get(i) == Some(&'"') {
            let e = i + 1 + s[i + 1..].iter().position(|&c| c == '"').unwrap();
            name = s[i + 1..e].iter().collect();
            i = e + 1;
            assert_eq!(s[i], '=');
            i += 1;
        } else {
            let e = (i..s.len() - 1)
                .find(|&k| s[k] == '=' && s[k + 1] == '"')
                .unwrap();
            name = s[i..e].iter().collect();
            i = e + 1;
        }
        assert_eq!(s[i], '"');
        let e = i + 1 + s[i + 1..].iter().position(|&c| c == '"').unwrap();
        let content: String = s[i + 1..e].iter().collect();
        files.insert(name, content);
        i = e + 1;
        if s.get(i) == Some(&',') && s.get(i + 1) == Some(&' ') {
            i += 2;
        } else {
            break;
        }
    }
    files
}

/// `env: var=11 (…)` → `[("var", "11")]`.
fn note_env(note: &str) -> Vec<(String, String)> {
    let Some(p) = note.find("env: ") else {
        return Vec::new();
    };
    let tok = note[p + 5..].split([' ', ';']).next().unwrap_or("");
    ReceiveOptions::parse_kv(&[tok])
}

#[test]
fn wine_cmd_cmdline() {
    run("wine-cmd-cmdline.jsonl", |c| {
        let n = note(c);
        let opts = ReceiveOptions {
            env: note_env(n),
            files: fixture_files(n),
            delayed_expansion: n.contains("delayed expansion enabled"),
            ..Default::default()
        };
        let r = receive_json("cmd", c["mode"].as_str(), &opts, c["input"].as_str().unwrap())
            .map_err(|e| e.to_string())?;
        let stdout = r["stdout"].as_str().unwrap();
        let stdout = stdout.strip_suffix('\n').unwrap_or(stdout);
        if is_error(&c["expected"]) {
            return if r["error"] == json!(true) && stdout.is_empty() {
                Ok(())
            } else {
                Err(format!("expected failure, got {r}"))
            };
        }
        if r["error"] != json!(false) {
            return Err(format!("unexpected error: {r}"));
        }
        eq(&json!(stdout), &c["expected"]).map_err(|e| format!("{e} (executes {})", r["executes"]))
    });
}

#[test]
fn msys2_path_convert() {
    run("msys2-path-convert.jsonl", |c| {
        let opts = ReceiveOptions {
            msys2_root: Some("C:/msys32".into()),
            ..Default::default()
        };
        let input = json!([c["input"]]).to_string();
        let out = receive_json("msys2-pathconv", None, &opts, &input).map_err(|e| e.to_string())?;
        eq(&out["argv"][0], &c["expected"])
    });
}
