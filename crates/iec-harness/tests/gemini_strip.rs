//! Gemini CLI's `stripShellWrapper`, every generation, against iec's port
//! (`iec_launches::gemini_strip`): the function is cut out of the published
//! `@google/gemini-cli-core` package of one version per generation (`npm pack`, into the
//! project's cache; 0.51.0 on with npm's shell-quote 1.8.3, which it imports) and run under node
//! on generated texts; iec must hand on exactly the text the harness's function returns.
//! Fails clearly without node or npm unless `IEC_SKIP_NPM=1`.

use iec_launches::gemini_strip::{strip, Generation};
use iec_launches::render::is_js_whitespace as js_ws;
use iec_testkit::gen::Rng;
use std::path::{Path, PathBuf};
use std::process::Command;

mod node_oracle;

/// One published core version per generation.
const VERSIONS: &[(&str, Generation)] = &[
    ("0.1.19", Generation::V0_1_15),
    ("0.11.3", Generation::V0_11_3),
    ("0.36.0", Generation::V0_36_0),
    ("0.44.1", Generation::V0_44_0),
    ("0.61.0", Generation::V0_51_0),
];

/// A folder of the project's cache, made once by `make` (which must leave `marker` behind);
/// `None` (printed) when npm fails and `IEC_SKIP_NPM=1`.
fn cached(dir: &str, marker: &str, make: &[&[&str]]) -> Option<PathBuf> {
    let dir = iec_harness::launch::harness_cache_dir()
        .expect("cache dir")
        .join(dir);
    if dir.join(marker).exists() {
        return Some(dir);
    }
    std::fs::create_dir_all(&dir).unwrap();
    for argv in make {
        let ok = Command::new(argv[0])
            .args(&argv[1..])
            .current_dir(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            break;
        }
    }
    if dir.join(marker).exists() {
        return Some(dir);
    }
    if std::env::var("IEC_SKIP_NPM").as_deref() == Ok("1") {
        println!("SKIPPED (IEC_SKIP_NPM=1): {make:?} failed in {}", dir.display());
        return None;
    }
    panic!(
        "{make:?} failed in {} (set IEC_SKIP_NPM=1 to skip)",
        dir.display()
    );
}

/// `@google/gemini-cli-core@VERSION`'s `dist/src/utils/shell-utils.js`.
fn shell_utils(version: &str) -> Option<PathBuf> {
    let spec = format!("@google/gemini-cli-core@{version}");
    let file = format!("google-gemini-cli-core-{version}.tgz");
    let dir = cached(
        &format!("npm-pack-gemini-cli-core-{version}"),
        "package/dist/src/utils/shell-utils.js",
        &[&["npm", "pack", "--silent", &spec], &["tar", "xzf", &file]],
    )?;
    Some(dir.join("package/dist/src/utils/shell-utils.js"))
}

/// The node program: `stripShellWrapper` (with 0.44's `stripHupGuard` and its constant) cut out
/// of the module, shell-quote's `parse` imported where the module imports it, run on every
/// text read as a JSON line; one JSON string each.
const ORACLE: &str = r#"
import fs from 'node:fs';
import readline from 'node:readline';
const [file] = process.argv.slice(2);
const src = fs.readFileSync(file, 'utf8');
let parse = () => { throw new Error('this generation does not import shell-quote'); };
if (/import \{[^}]*\bparse\b[^}]*\} from 'shell-quote'/.test(src)) {
  ({ parse } = await import('shell-quote'));
}
const cut = (n) => {
  const start = src.search(new RegExp('(export )?function ' + n + '\\('));
  if (start < 0) throw new Error('no function ' + n);
  return src.slice(start, src.indexOf('\n}\n', start) + 2).replace(/^export /, '') + '\n';
};
let code = '';
const guard = src.match(/export const BASH_HUP_GUARD = .*;\n/);
if (guard) code += guard[0].replace(/^export /, '');
if (src.includes('function stripHupGuard(')) code += cut('stripHupGuard');
code += cut('stripShellWrapper');
const strip = new Function('parse', code + 'return stripShellWrapper;')(parse);
for await (const line of readline.createInterface({ input: process.stdin })) {
  console.log(JSON.stringify(strip(JSON.parse(line))));
}
"#;

/// Texts made of the words the patterns look at.
fn corpus() -> Vec<String> {
    const PROGRAMS: &[&str] = &[
        "bash",
        "sh",
        "zsh",
        "BASH",
        "Sh",
        "/bin/bash",
        "a/sh",
        "/bash",
        "x/ZSH",
        "cmd.exe",
        "CMD.EXE",
        "cmdXexe",
        "cmd exe",
        "cmd\nexe",
        "powershell",
        "PowerShell.exe",
        "pwsh",
        "pwsh.exe",
        "xbash",
        "bash-c",
        "trap '' HUP;",
        "trap '' HUP; ",
    ];
    const FLAGS: &[&str] = &[
        "-c",
        "-C",
        "/c",
        "/C",
        "-Command",
        "-command",
        "-NoProfile -Command",
        "-cx",
        "-NoProfile",
    ];
    const REST: &[&str] = &[
        "'",
        "\"",
        "\\\"",
        "a b",
        "$x",
        "${y}",
        "'a'",
        "\"a b\"",
        "x",
        "\\",
        "trap '' HUP;",
        "trap '' HUP; x",
        "'a' && b 'c'",
        "\"a \\\"b\\\"\"",
        "\"$HOME\"",
        "\"a\" \"b\"",
    ];
    const SPACE: &[&str] = &[" ", "  ", "\t", "\n", "\u{a0}", "\u{2028}", "\u{feff}", ""];
    let mut r = Rng::new(0x6e_5719);
    let mut texts = vec![
        "bash -c 'ls -la'".to_string(),
        "BASH -c 'argvprobe t a'".into(),
        "bash /c 'argvprobe t a'".into(),
        "/bin/bash -c 'argvprobe t a'".into(),
        "bash -c \"argvprobe t \\\"a b\\\"\"".into(),
        "trap '' HUP; argvprobe t a".into(),
        "trap '' HUP;".into(),
    ];
    for _ in 0..20_000 {
        let mut t = String::new();
        t.push_str(r.pick::<&str>(SPACE));
        t.push_str(r.pick::<&str>(PROGRAMS));
        t.push_str(r.pick::<&str>(SPACE));
        if r.below(8) != 0 {
            t.push_str(r.pick::<&str>(FLAGS));
        }
        for _ in 0..r.below(4) {
            t.push_str(r.pick::<&str>(SPACE));
            t.push_str(r.pick::<&str>(REST));
        }
        t.push_str(r.pick::<&str>(SPACE));
        texts.push(t);
    }
    texts
}

#[test]
fn iec_strips_a_model_written_shell_wrapper_as_each_gemini_generation_does() {
    let Some(sq) = cached(
        "npm-shell-quote-1.8.3",
        "node_modules/shell-quote/package.json",
        &[&[
            "npm",
            "install",
            "--prefix",
            ".",
            "--ignore-scripts",
            "shell-quote@1.8.3",
        ]],
    ) else {
        return;
    };
    let texts = corpus();
    for &(version, g) in VERSIONS {
        let Some(js) = shell_utils(version) else {
            return;
        };
        let want = node_oracle::answers(Some(Path::new(&sq)), ORACLE, &[js.to_str().unwrap()], &texts);
        let port = |t: &str| strip(g, t).unwrap_or_else(|| t.trim_matches(js_ws).to_string());
        let bad: Vec<String> = texts
            .iter()
            .zip(&want)
            .filter(|(t, w)| w.as_str() != Some(port(t).as_str()))
            .take(10)
            .map(|(t, w)| format!("{t:?}: harness {w}, iec {:?}", port(t)))
            .collect();
        assert!(
            bad.is_empty(),
            "Gemini CLI {version} ({g:?}), iec differs on:\n{}",
            bad.join("\n")
        );
        let changed = texts
            .iter()
            .zip(&want)
            .filter(|(t, w)| w.as_str() != Some(t.trim_matches(js_ws)))
            .count();
        eprintln!(
            "Gemini CLI {version}: {} texts, {changed} stripped, iec agrees on all",
            texts.len()
        );
    }
}
