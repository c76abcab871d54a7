//! Differential test: the Rust port vs. the real npm shell-quote (same version Claude Code
//! 2.1.72 bundles), on >= 100,000 generated inputs, through ONE node process.

mod common;

use common::*;
use iec_shellquote::{parse_no_env, quote, QuoteArg, Token, OBJECT_TOKEN, SHELL_QUOTE_VERSION};
use serde_json::{json, Value};

const N: usize = 100_000;

fn rust_record(s: &str) -> Value {
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
fn npm_shell_quote_differential() {
    let t0 = std::time::Instant::now();
    if let Err(why) = node_available() {
        println!("SKIPPED: {why}");
        return;
    }
    let prefix = cache_dir().join(format!("npm-shell-quote-{SHELL_QUOTE_VERSION}"));
    let pkg = prefix.join("node_modules").join("shell-quote");
    if let Err(why) = npm_install(
        &prefix,
        &pkg.join("parse.js"),
        &format!("shell-quote@{SHELL_QUOTE_VERSION}"),
        &[],
    ) {
        println!("SKIPPED: {why}");
        return;
    }
    let pj: Value =
        serde_json::from_str(&std::fs::read_to_string(pkg.join("package.json")).unwrap()).unwrap();
    assert_eq!(
        pj["version"], SHELL_QUOTE_VERSION,
        "wrong shell-quote installed in {prefix:?}"
    );

    // Fixed edge cases first, then generated inputs.
    let mut inputs: Vec<String> = [
        "",
        " ",
        "a",
        "a b",
        "it's",
        "it's !",
        "a != b",
        "\\",
        "\\\\'x'|'",
        "$$a",
        "$?x",
        "$_foo",
        "${__proto__}",
        "$constructor",
        "a#b c",
        "#",
        "x #y",
        "'unterminated",
        "\"unterminated",
        "\"abc\\\"",
        "\"a\\\"b\"c\"",
        "$$🦀",
        "${}",
        "${x",
        "a*b",
        "\\*",
        "'*'",
        "<<<",
        "<<",
        "|&",
        "2>&1",
        "C:\\x",
        "a:&",
        "a::",
        "\u{2028}",
        "🦀",
        "\u{feff}x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rng = Rng::new(0x1ec5_5eed_2172);
    while inputs.len() < N {
        inputs.push(gen_input(&mut rng));
    }
    let mut stdin = String::new();
    for s in &inputs {
        stdin.push_str(&serde_json::to_string(s).unwrap());
        stdin.push('\n');
    }
    let oracle = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sq_oracle.js");
    let lines = run_node(&[oracle, pkg.to_str().unwrap(), OBJECT_TOKEN], stdin);
    assert_eq!(lines.len(), inputs.len(), "node output line count");
    let mut mismatches = 0usize;
    for (s, line) in inputs.iter().zip(&lines) {
        let js: Value = serde_json::from_str(line).unwrap();
        let rs = rust_record(s);
        if js != rs {
            mismatches += 1;
            if mismatches <= 5 {
                eprintln!("MISMATCH for input {s:?}\n  js:   {js}\n  rust: {rs}");
            }
        }
    }
    println!(
        "compared {} inputs against shell-quote@{SHELL_QUOTE_VERSION} in {:?}",
        inputs.len(),
        t0.elapsed()
    );
    assert_eq!(mismatches, 0, "{mismatches} mismatches (first 5 printed above)");
}
