//! Differential test against the REAL `cli.js` of Claude Code 2.1.79 and 2.1.84: their
//! eval-payload builders (the functions named on `RELEASE_2_1_79` and `RELEASE_2_1_84`) are
//! cut out of cli.js at test time (tests/cc_release_oracle.js) and run in one node process
//! with npm's shell-quote 1.8.3, against `build_eval_payload_for`.

mod common;

use common::*;
use iec_shellquote::claude_code_2_1_72::{build_eval_payload_for, Release, RELEASE_2_1_79, RELEASE_2_1_84};
use serde_json::{json, Value};

const N_CMDS: usize = 20_000;

fn package(spec: &str, dir: &str, file: &str) -> Result<std::path::PathBuf, String> {
    let prefix = cache_dir().join(dir);
    let path = prefix.join(file);
    npm_install(&prefix, &path, spec, &["--omit=optional", "--ignore-scripts"])?;
    Ok(path)
}

/// Commands the learner's markers and the catalog's held payloads use, piped.
const ROWS: &[&str] = &[
    "argvprobe X \"it's\" | cat",
    "argvprobe X '$HOME' 'a${b}c' | cat",
    "argvprobe X '$HOME' \"\\$HOME\" '`date`' \"$((1+2))\" | cat",
    "argvprobe X \"PID=$$\" \"st=$?\" | cat",
    "argvprobe X $'a\\tb' $'it\\'s' $'\\x41!' | cat",
    "argvprobe X 'M\\\\N' \"a\\\\b\" c\\ d | cat",
    "argvprobe X 'a b' 2>&1 | cat",
    "argvprobe k:v \"$HOME/x\" $'!%b\\x41' | cat",
    "echo 'a\\' | cat",
    "echo 'a\\\\' x 'b' | cat",
    "echo \\\" x\\\" | cat",
    "echo '{a}' \"(b)\" '[c]' | cat",
    "echo a |\ncat",
    "FOO=bar baz | cat",
    "echo a > nul | cat",
];

fn differential(version: &str, release: &Release, config: Value) {
    if let Err(why) = node_available() {
        println!("SKIPPED: {why}");
        return;
    }
    let cli = package(
        &format!("@anthropic-ai/claude-code@{version}"),
        &format!("npm-cc-{version}"),
        "node_modules/@anthropic-ai/claude-code/cli.js",
    );
    let sq = package(
        "shell-quote@1.8.3",
        "npm-shell-quote-1.8.3",
        "node_modules/shell-quote/package.json",
    );
    let (cli, sq) = match (cli, sq) {
        (Ok(c), Ok(s)) => (c, s),
        (Err(why), _) | (_, Err(why)) => {
            println!("SKIPPED: {why}");
            return;
        }
    };
    let mut cases: Vec<(String, bool)> = ROWS.iter().map(|r| (r.to_string(), false)).collect();
    cases.extend(ROWS.iter().map(|r| (r.to_string(), true)));
    let mut rng = Rng::new(0x0cc2_1790);
    while cases.len() < N_CMDS {
        let mut cmd = gen_command(&mut rng);
        if rng.below(2) == 0 {
            cmd.push_str(" | cat");
        }
        cases.push((cmd, rng.below(10) == 0));
    }
    let stdin: String = cases
        .iter()
        .map(|(cmd, sandbox)| format!("{}\n", json!({"cmd": cmd, "sandbox": sandbox})))
        .collect();
    let oracle = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cc_release_oracle.js");
    let sq_dir = sq.parent().unwrap().to_str().unwrap().to_owned();
    let lines = run_node(
        &[oracle, cli.to_str().unwrap(), &sq_dir, &config.to_string()],
        stdin,
    );
    assert_eq!(lines.len(), cases.len(), "node output line count");
    let mut bad = Vec::new();
    let mut split_surrogate = 0usize;
    for ((cmd, sandbox), line) in cases.iter().zip(&lines) {
        // shell-quote's parse reads `$` names by UTF-16 unit and may cut a surrogate pair
        // (`$$🦀`); a Rust string cannot hold the half, so those are counted apart.
        let js: String = match serde_json::from_str(line) {
            Ok(s) => s,
            Err(e) if e.to_string().contains("surrogate") => {
                split_surrogate += 1;
                continue;
            }
            Err(e) => panic!("{cmd:?}: node gave {line}: {e}"),
        };
        let rs = build_eval_payload_for(release, cmd, *sandbox).payload;
        if rs != js {
            bad.push(format!("{cmd:?} sandbox={sandbox}\n  js   {js:?}\n  rust {rs:?}"));
        }
    }
    let piped = cases.iter().filter(|(c, _)| c.contains('|')).count();
    println!(
        "{version}: {} commands ({piped} with a `|`), {split_surrogate} with a split surrogate in the JS payload, {} differ",
        cases.len(),
        bad.len()
    );
    assert!(
        split_surrogate < cases.len() / 100,
        "{split_surrogate} split surrogates"
    );
    assert!(
        bad.is_empty(),
        "{} of {} differ:\n{}",
        bad.len(),
        cases.len(),
        bad[..bad.len().min(10)].join("\n")
    );
}

#[test]
fn claude_code_2_1_79_cli_js_differential() {
    differential(
        "2.1.79",
        &RELEASE_2_1_79,
        json!({
            "fns": ["Hq4", "$q4", "Oq4", "Mq4", "X96", "Dq4", "VL9", "kL9", "TL9", "Jq4", "vL9", "NL9",
                    "iN1", "lN1", "GL9", "ZL9", "dz", "bj9", "H4"],
            "quote": "P06",
            "nul": "fL9",
            "key": "D=Hq4(_),X=$q4(D),P=Oq4(D,X);if(!w.useSandbox&&D.includes(\"|\")&&X)P=Mq4(D);",
            "cmd": "_",
            "opts": "w",
            "out": "P",
        }),
    );
}

#[test]
fn claude_code_2_1_84_cli_js_differential() {
    differential(
        "2.1.84",
        &RELEASE_2_1_84,
        json!({
            "fns": ["ROq", "hOq", "LOq", "bOq", "si", "IOq", "Wg9", "Zg9", "Kc6", "E08", "Xg9", "COq",
                    "Dg9", "fg9", "KC1", "qC1", "Mg9", "Jg9", "GY", "fT9", "Zq"],
            "quote": "wG6",
            "nul": "Pg9",
            "key": "P=ROq(Y),X=hOq(P),D=LOq(P,X);if(P.includes(\"|\")&&X)D=bOq(P);",
            "cmd": "Y",
            "opts": "w",
            "out": "D",
        }),
    );
}
