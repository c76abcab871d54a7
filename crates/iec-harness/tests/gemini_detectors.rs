//! Gemini CLI's `detectCommandSubstitution`, three generations, against iec's ports: the
//! functions are read from the published `@google/gemini-cli-core` packages (`npm pack`, into
//! the project's cache) and run under node on generated texts and the red team's cases; iec's
//! port must find command substitution on exactly the texts the harness's function does.
//! 0.1.19 (0.1.15–0.7: a backtick counts where it closes one, no `>(`), 0.8.2 (0.8–0.10: with
//! `>(`) and 0.61.0 (`detectBashSubstitution`, 0.40 on). The command-root refusal likewise:
//! 0.1.9's `getCommandRoot` method (0.1.1–0.1.13) and 0.1.19's `getCommandRoots` (0.1.15–0.10).
//! Fails clearly without node or npm unless `IEC_SKIP_NPM=1`.

use iec_launches::render::{
    command_substitution_outside_single_quotes, gemini_0_1_15_substitution, gemini_has_command_root,
};
use iec_testkit::gen::Rng;
use std::path::{Path, PathBuf};
use std::process::Command;

mod node_oracle;

/// The harness versions and the function each one's `utils/shell-utils.js` holds.
const VERSIONS: &[(&str, &str)] = &[
    ("0.1.19", "detectCommandSubstitution"),
    ("0.8.2", "detectCommandSubstitution"),
    ("0.61.0", "detectBashSubstitution"),
];

/// `@google/gemini-cli-core@VERSION`'s `shell-utils.js`, packed once into the cache.
fn shell_utils(version: &str) -> Option<PathBuf> {
    core_file(version, "utils/shell-utils.js")
}

/// A file under `dist/src/` of `@google/gemini-cli-core@VERSION`, packed once into the cache.
fn core_file(version: &str, file: &str) -> Option<PathBuf> {
    let dir = iec_harness::launch::harness_cache_dir()
        .expect("cache dir")
        .join(format!("npm-pack-gemini-cli-core-{version}"));
    let js = dir.join("package/dist/src").join(file);
    if js.exists() {
        return Some(js);
    }
    std::fs::create_dir_all(&dir).unwrap();
    let packed = Command::new("npm")
        .args(["pack", "--silent", &format!("@google/gemini-cli-core@{version}")])
        .current_dir(&dir)
        .output();
    let ok = match packed {
        Ok(o) if o.status.success() => {
            let tgz = String::from_utf8_lossy(&o.stdout).trim().to_string();
            Command::new("tar")
                .args(["xzf", &tgz])
                .current_dir(&dir)
                .status()
                .is_ok_and(|s| s.success())
                && js.exists()
        }
        _ => false,
    };
    if ok {
        return Some(js);
    }
    if std::env::var("IEC_SKIP_NPM").as_deref() == Ok("1") {
        println!("SKIPPED (IEC_SKIP_NPM=1): npm pack @google/gemini-cli-core@{version} failed");
        return None;
    }
    panic!("npm pack @google/gemini-cli-core@{version} failed (set IEC_SKIP_NPM=1 to skip)");
}

/// The node program: the named functions' sources cut out of the module (top-level functions,
/// or a class's method as `method:NAME`; they use nothing else) and the expression EXPR (of
/// the text `t`) evaluated on every text read as a JSON line; one `true`/`false` line each.
const ORACLE: &str = r#"
import fs from 'node:fs';
import readline from 'node:readline';
const [file, names, expr] = process.argv.slice(2);
const src = fs.readFileSync(file, 'utf8');
let code = '';
for (const n of names.split(',')) {
  if (n.startsWith('method:')) {
    const name = n.slice(7);
    const start = src.indexOf('    ' + name + '(command) {');
    if (start < 0) throw new Error('no method ' + name);
    const end = src.indexOf('\n    }\n', start);
    code += 'function ' + src.slice(start + 4, end + 6) + '\n';
  } else {
    const start = src.search(new RegExp('(export )?function ' + n + '\\('));
    if (start < 0) throw new Error('no function ' + n);
    const end = src.indexOf('\n}\n', start);
    code += src.slice(start, end + 2).replace(/^export /, '') + '\n';
  }
}
const fn = new Function(code + 'return (t) => Boolean(' + expr + ');')();
for await (const line of readline.createInterface({ input: process.stdin })) {
  console.log(JSON.stringify(fn(JSON.parse(line))));
}
"#;

fn oracle(js: &Path, name: &str, texts: &[String]) -> Vec<bool> {
    oracle_expr(js, name, &format!("{name}(t)"), texts)
}

fn oracle_expr(js: &Path, names: &str, expr: &str, texts: &[String]) -> Vec<bool> {
    node_oracle::answers(None, ORACLE, &[js.to_str().unwrap(), names, expr], texts)
        .into_iter()
        .map(|v| v.as_bool().expect("true or false"))
        .collect()
}

/// Texts of the characters the detectors look at, and the red team's cases.
fn corpus() -> Vec<String> {
    let mut texts: Vec<String> = [
        "argvprobe a >(cat)",
        "argvprobe \">(x)\" >(true)",
        "argvprobe a | tee >(cat) >/dev/null",
        "argvprobe a # use `x\nargvprobe b",
        "argvprobe 'it'\\''s' # `\nargvprobe b",
        "argvprobe $'a\\'`'",
        "echo `'$(x)'`",
        "echo \"`x`\"",
        "cat <<'EOF'\n$(x)\nEOF",
        ": >(true); argvprobe t a",
        "argvprobe t a # `",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    const ALPHABET: &[&str] = &[
        "$", "(", ")", "'", "\"", "`", "\\", "<", ">", "a", " ", "#", "\n", "$(", "<(", ">(",
    ];
    let mut r = Rng::new(19);
    for _ in 0..20_000 {
        let n = 1 + r.below(12);
        texts.push((0..n).map(|_| *r.pick(ALPHABET)).collect());
    }
    texts
}

#[test]
fn iec_finds_command_substitution_where_each_gemini_generation_does() {
    let texts = corpus();
    for &(version, name) in VERSIONS {
        let Some(js) = shell_utils(version) else {
            return;
        };
        let want = oracle(&js, name, &texts);
        let port = |t: &str| match version {
            "0.1.19" => gemini_0_1_15_substitution(t, false),
            "0.8.2" => gemini_0_1_15_substitution(t, true),
            _ => command_substitution_outside_single_quotes(t),
        };
        let bad: Vec<String> = texts
            .iter()
            .zip(&want)
            .filter(|(t, w)| port(t).is_some() != **w)
            .take(10)
            .map(|(t, w)| format!("{t:?}: harness {w}"))
            .collect();
        assert!(
            bad.is_empty(),
            "Gemini CLI {version} ({name}), iec differs on:\n{}",
            bad.join("\n")
        );
        eprintln!(
            "Gemini CLI {version}: {} texts, {} with command substitution, iec agrees on all",
            texts.len(),
            want.iter().filter(|w| **w).count()
        );
    }
}

#[test]
fn iec_finds_a_command_root_where_each_gemini_generation_does() {
    let mut texts = corpus();
    const WORDS: &[&str] = &[
        "{", "}", "(", ")", "X=/", "/", "a/", "\\", "\"a\"", "'b c'", "\"\"", " ", "\n", ";", "&", "|", "&&",
        "a", "ls", "\u{a0}",
    ];
    let mut r = Rng::new(15);
    for _ in 0..20_000 {
        let n = 1 + r.below(8);
        texts.push((0..n).map(|_| *r.pick(WORDS)).collect());
    }
    // The harness refuses an empty text first ("Command cannot be empty.").
    texts.retain(|t| !t.trim().is_empty());
    let cases = [
        (
            "0.1.9",
            "tools/shell.js",
            "method:getCommandRoot",
            "getCommandRoot(t)",
            "gemini-0.1.1",
        ),
        (
            "0.1.19",
            "utils/shell-utils.js",
            "splitCommands,getCommandRoot,getCommandRoots",
            "getCommandRoots(t).length > 0",
            "gemini-0.1.15",
        ),
    ];
    for (version, file, names, expr, rule) in cases {
        let Some(js) = core_file(version, file) else {
            return;
        };
        let want = oracle_expr(&js, names, expr, &texts);
        let bad: Vec<String> = texts
            .iter()
            .zip(&want)
            .filter(|(t, w)| gemini_has_command_root(t, rule) != **w)
            .take(10)
            .map(|(t, w)| format!("{t:?}: harness finds a root: {w}"))
            .collect();
        assert!(
            bad.is_empty(),
            "Gemini CLI {version} ({rule}), iec differs on:\n{}",
            bad.join("\n")
        );
        eprintln!(
            "Gemini CLI {version}: {} texts, {} without a command root, iec agrees on all",
            texts.len(),
            want.iter().filter(|w| !**w).count()
        );
    }
}
