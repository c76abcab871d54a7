//! Differential test against the REAL Claude Code 2.1.72 `cli.js`: the eval-payload builder
//! and the bash provider's `buildExecCommand` are cut out of cli.js at test time
//! (tests/cc_oracle.js) and run in ONE node process. Also checks the shell-quote copy
//! bundled inside cli.js against the Rust port.

mod common;

use common::*;
use iec_shellquote::claude_code_2_1_72::{build_eval_payload_with, wrapper_with, WrapperOptions};
use iec_shellquote::{parse_no_env, quote, QuoteArg, Token, OBJECT_TOKEN};
use serde_json::{json, Value};

const N_CMDS: usize = 40_000;
const N_SQ: usize = 20_000;

fn cli_js() -> Result<std::path::PathBuf, String> {
    if let Some(p) = std::env::var_os("IEC_CC_2_1_72_CLI_JS") {
        return Ok(p.into());
    }
    let prefix = cache_dir().join("npm-cc-2.1.72");
    let cli = prefix.join("node_modules/@anthropic-ai/claude-code/cli.js");
    npm_install(
        &prefix,
        &cli,
        "@anthropic-ai/claude-code@2.1.72",
        &["--omit=optional", "--ignore-scripts"],
    )?;
    Ok(cli)
}

struct Case {
    cmd: String,
    snap: Option<&'static str>,
    sandbox: bool,
    prefix: Option<&'static str>,
}

fn sq_record(s: &str) -> Value {
    let p = match parse_no_env(s) {
        Ok(toks) => Value::Array(
            toks.into_iter()
                .map(|t| match t {
                    Token::Str(x) => json!(["S", x]),
                    Token::Op(x) => json!(["O", x]),
                    Token::Glob(x) => json!(["G", x]),
                    Token::Comment(x) => json!(["C", x]),
                })
                .collect(),
        ),
        Err(e) => json!({ "err": e.message }),
    };
    json!({
        "q1": quote(&[QuoteArg::from(s)]),
        "q3": quote(&[s.into(), "<".into(), "/dev/null".into()]),
        "qop": quote(&[QuoteArg::Op(s.to_owned())]),
        "p": p,
    })
}

#[test]
fn claude_code_2_1_72_cli_js_differential() {
    let t0 = std::time::Instant::now();
    if let Err(why) = node_available() {
        println!("SKIPPED: {why}");
        return;
    }
    let cli = match cli_js() {
        Ok(p) => p,
        Err(why) => {
            println!("SKIPPED: {why}");
            return;
        }
    };
    let mut cases: Vec<Case> = Vec::new();
    for row in iec_table_rows() {
        cases.push(Case {
            cmd: row.to_owned(),
            snap: Some("/tmp/snap.sh"),
            sandbox: false,
            prefix: None,
        });
    }
    let mut rng = Rng::new(0x0cc2_1720);
    while cases.len() < N_CMDS {
        let cmd = gen_command(&mut rng);
        let snap = match rng.below(8) {
            0 => None,
            1 => Some("/h/it's a snap.sh"),
            _ => Some("/home/u/.claude/shell-snapshots/snapshot-bash-1-x.sh"),
        };
        let sandbox = rng.below(20) == 0;
        let prefix = match rng.below(40) {
            0 => Some("/usr/bin/env -i"),
            1 => Some("wrap"),
            _ => None,
        };
        cases.push(Case {
            cmd,
            snap,
            sandbox,
            prefix,
        });
    }
    let mut sq_inputs = Vec::new();
    while sq_inputs.len() < N_SQ {
        sq_inputs.push(gen_input(&mut rng));
    }
    let mut stdin = String::new();
    for c in &cases {
        stdin.push_str(
            &json!({"cmd": c.cmd, "snap": c.snap, "sandbox": c.sandbox, "prefix": c.prefix}).to_string(),
        );
        stdin.push('\n');
    }
    for s in &sq_inputs {
        stdin.push_str(&json!({ "sq": s }).to_string());
        stdin.push('\n');
    }
    let oracle = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cc_oracle.js");
    let lines = run_node(&[oracle, cli.to_str().unwrap(), OBJECT_TOKEN], stdin);
    assert_eq!(
        lines.len(),
        cases.len() + sq_inputs.len(),
        "node output line count"
    );

    let mut mismatches = 0usize;
    for (c, line) in cases.iter().zip(&lines) {
        let js: Value = serde_json::from_str(line).unwrap();
        let cwd = if c.sandbox {
            "/tmp/claude-sbx/cwd-abcd"
        } else {
            "/tmp/claude-abcd-cwd"
        };
        let opts = WrapperOptions {
            shell_path: "/bin/bash",
            snapshot_path: c.snap,
            session_env_script: None,
            cwd_file: cwd,
            use_sandbox: c.sandbox,
            shell_prefix: c.prefix,
        };
        let rs = json!({
            "payload": build_eval_payload_with(&c.cmd, c.sandbox).payload,
            "commandString": wrapper_with(&opts, &c.cmd),
        });
        if js != rs {
            mismatches += 1;
            if mismatches <= 5 {
                eprintln!("MISMATCH for command {:?} (snap {:?}, sandbox {}, prefix {:?})\n  js:   {js}\n  rust: {rs}", c.cmd, c.snap, c.sandbox, c.prefix);
            }
        }
    }
    for (s, line) in sq_inputs.iter().zip(&lines[cases.len()..]) {
        let js: Value = serde_json::from_str(line).unwrap();
        let rs = sq_record(s);
        if js != rs {
            mismatches += 1;
            if mismatches <= 5 {
                eprintln!("MISMATCH (bundled shell-quote) for input {s:?}\n  js:   {js}\n  rust: {rs}");
            }
        }
    }
    println!(
        "compared {} commands and {} shell-quote inputs against {} in {:?}",
        cases.len(),
        sq_inputs.len(),
        cli.display(),
        t0.elapsed()
    );
    assert_eq!(mismatches, 0, "{mismatches} mismatches (first 5 printed above)");
}

/// Commands from the table test, also run through the real cli.js here.
fn iec_table_rows() -> Vec<&'static str> {
    include!("cc_table_inputs.in").to_vec()
}
