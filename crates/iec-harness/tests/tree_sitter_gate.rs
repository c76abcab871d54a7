//! Gemini CLI's parse gate (`iec_launches::tree_sitter_gate`) against the harness's own parser:
//! npm `web-tree-sitter` 0.25.10 with `tree-sitter-bash` 0.25.1 (what Gemini CLI 0.11–0.39's
//! `^0.25.10` / `^0.25.0` install today) under node, running Gemini CLI's
//! `parseBashCommandDetails` walk (`collectCommandDetails`, `normalizeCommandName`,
//! `hasPromptCommandTransform`, copied from `@google/gemini-cli-core` 0.25.0's
//! `utils/shell-utils.js`). Every text of the corpora must give the same facts on both sides:
//! empty, has an error, how many commands and redirections, whether an expansion applies `@P`,
//! and whether 0.26–0.27's gate of every part (their `checkShellCommand` recursion) refuses it.

use iec_launches::tree_sitter_gate::{inspect, refuses_with, Gate};
use iec_testkit::gen;

mod node_oracle;
use std::path::{Path, PathBuf};

const WEB_TREE_SITTER: &str = "web-tree-sitter@0.25.10";
const TREE_SITTER_BASH: &str = "tree-sitter-bash@0.25.1";

/// Gemini CLI's walk, as in its `shell-utils.js`; prints one JSON line per input line.
const ORACLE: &str = r#"
import { Parser, Language } from 'web-tree-sitter';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
const root = process.argv[2];
await Parser.init();
const lang = await Language.load(fs.readFileSync(path.join(root, 'node_modules/tree-sitter-bash/tree-sitter-bash.wasm')));
const parser = new Parser();
parser.setLanguage(lang);
function normalizeCommandName(raw) {
  if (raw.length >= 2) {
    const first = raw[0]; const last = raw[raw.length - 1];
    if ((first === '"' && last === '"') || (first === "'" && last === "'")) return raw.slice(1, -1);
  }
  const trimmed = raw.trim();
  if (!trimmed) return trimmed;
  return trimmed.split(/[\\/]/).pop() ?? trimmed;
}
function extractNameFromNode(node) {
  switch (node.type) {
    case 'command': { const n = node.childForFieldName('name'); return n ? normalizeCommandName(n.text) : null; }
    case 'declaration_command': case 'unset_command': case 'test_command': {
      const c = node.child(0); return c ? normalizeCommandName(c.text) : null; }
    default: return null;
  }
}
function hasPromptCommandTransform(root) {
  const stack = [root];
  while (stack.length > 0) {
    const current = stack.pop();
    if (current.type === 'expansion') {
      for (let i = 0; i < current.childCount - 1; i += 1) {
        const op = current.child(i); const tr = current.child(i + 1);
        if (op?.text === '@' && tr?.text?.toLowerCase() === 'p') return true;
      }
    }
    for (let i = current.namedChildCount - 1; i >= 0; i -= 1) { const c = current.namedChild(i); if (c) stack.push(c); }
  }
  return false;
}
// 0.26–0.27: redirections are parts too, and the policy engine checks every part that is not
// the whole text again (`checkShellCommand` → `check`), in YOLO mode with the `@P` rule.
function parts(text) {
  const tree = parser.parse(text);
  const out = [];
  const stack = [tree.rootNode];
  let redirects = 0;
  while (stack.length) {
    const c = stack.pop();
    const name = extractNameFromNode(c);
    if (name) out.push(text.slice(c.startIndex, c.endIndex).trim());
    else if (['file_redirect', 'heredoc_redirect', 'herestring_redirect'].includes(c.type)) {
      redirects += 1; out.push(text.slice(c.startIndex, c.endIndex).trim());
    }
    for (let i = c.childCount - 1; i >= 0; i -= 1) { const ch = c.child(i); if (ch) stack.push(ch); }
  }
  const refused = tree.rootNode.hasError || out.length === 0 || hasPromptCommandTransform(tree.rootNode);
  tree.delete();
  return { refused, parts: out.filter(Boolean), redirects };
}
function gate026(command) {
  if (!command.trim()) return true;
  const p = parts(command);
  if (p.refused) return true;
  for (const sub of p.parts) {
    if (sub === command) continue;
    if (gate026(sub)) return true;
  }
  return false;
}
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  const text = JSON.parse(line);
  if (!text.trim()) { console.log(JSON.stringify({ empty: true, error: false, commands: 0, transform: false, redirects: 0, parts_refused: true })); continue; }
  const tree = parser.parse(text);
  let commands = 0;
  const stack = [tree.rootNode];
  while (stack.length) {
    const c = stack.pop();
    if (extractNameFromNode(c)) commands += 1;
    for (let i = c.namedChildCount - 1; i >= 0; i -= 1) { const ch = c.namedChild(i); if (ch) stack.push(ch); }
  }
  const p = parts(text);
  console.log(JSON.stringify({ empty: false, error: tree.rootNode.hasError, commands, transform: hasPromptCommandTransform(tree.rootNode), redirects: p.redirects, parts_refused: gate026(text) }));
  tree.delete();
}
"#;

/// The npm packages, installed once into the project's cache.
fn packages() -> Option<PathBuf> {
    let dir = iec_harness::launch::harness_cache_dir()
        .expect("cache dir")
        .join("npm-tree-sitter-bash-0.25.1");
    let wasm = |d: &Path| {
        let w = d.join("node_modules/tree-sitter-bash/tree-sitter-bash.wasm");
        (w.exists() && d.join("node_modules/web-tree-sitter/package.json").exists()).then_some(())
    };
    match iec_harness::npm::install_cached(
        &dir,
        WEB_TREE_SITTER,
        &[&[TREE_SITTER_BASH]],
        wasm,
        "no tree-sitter-bash.wasm",
    ) {
        Ok(()) => Some(dir),
        Err(e) if std::env::var("IEC_SKIP_NPM").as_deref() == Ok("1") => {
            println!("SKIPPED (IEC_SKIP_NPM=1): {e:#}");
            None
        }
        Err(e) => panic!("{e:#}\n(set IEC_SKIP_NPM=1 to skip this differential test)"),
    }
}

/// What node's walk says for each text, one JSON value per text.
fn oracle(root: &Path, texts: &[String]) -> Vec<serde_json::Value> {
    // ES modules resolve packages from the script's own folder.
    node_oracle::answers(Some(root), ORACLE, &[root.to_str().unwrap()], texts)
}

/// Hand-picked texts around the gate's rules.
fn edge_cases() -> Vec<String> {
    [
        "",
        "  \t",
        "x=1",
        "x=1 y=2",
        "# only a comment",
        "echo hi # and a comment",
        "export A=1",
        "unset A",
        "[[ -n x ]]",
        "[ -n x ]",
        "local x",
        "\"\" a",
        "'' a",
        "./ a",
        "/usr/bin/ x",
        "a\\ b",
        "echo ${x@P}",
        "echo \"${x@P}\"",
        "echo ${x@p}",
        "echo ${x@Q}",
        "echo ${x@U} ${x@a}",
        "argvprobe a; false && argvprobe \"${x@P}\"",
        "bash -c 'argvprobe X \"$0\"' \\",
        "echo a \\",
        "echo 'unterminated",
        "echo \"unterminated",
        "echo $((1+",
        "cat <<EOF\nbody\nEOF",
        "cat <<EOF\nbody",
        "cat <<'EOF' | cat\n$x\nEOF",
        "case x in a) echo a;; esac",
        "if true; then echo a; fi",
        "for i in 1 2; do echo $i; done",
        "f() { echo a; }; f",
        "(echo a)",
        "{ echo a; }",
        "echo a &",
        "echo a & echo b",
        "coproc cat",
        "time echo a",
        "! true",
        "echo $(echo a)",
        "echo `echo a`",
        "echo <(echo a)",
        "a=$(echo b)",
        "echo a | ",
        "echo a &&",
        "echo a;;",
        "echo a\r",
        "printf '%s\\n' 'a != b'",
        "echo {a,b}",
        "echo $'a\\nb'",
        "echo $\"a\"",
        "arr=(1 2); echo ${arr[@]}",
        "echo ${#x} ${x:-y} ${x/a/b} ${x^^}",
        "[[ $x =~ ^a(b|c)$ ]]",
        "(( x = 1 + 2 ))",
        "echo \u{85} \u{7f}",
        "echo é ✓ 𝄞",
        "declare -A m=([a]=1)",
        "select x in a b; do break; done",
        "while read -r l; do echo \"$l\"; done < /dev/null",
        "echo a >| f",
        "echo a &> /dev/null",
        "exec 3>&1",
        "\\echo a",
        "'echo' a",
        "\"/bin/echo\" a",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(red_team_texts())
    .collect()
}

/// Each `IEC_GATE_SWEEP_STEP`-th code point (default 61; `1` is every one, about 3.3 million
/// texts) in three places where the scanner's letter class decides the parse: a variable name
/// before `=`, a name inside `${…[1]}`, after `$` in a here-document.
fn code_point_sweep() -> Vec<String> {
    let step = iec_testkit::rotation::count("IEC_GATE_SWEEP_STEP", 61, usize::MAX).max(1);
    let mut out = Vec::new();
    for c in (0x80u32..=0x10FFFF).step_by(step).filter_map(char::from_u32) {
        out.push(format!("_{c}=1"));
        out.push(format!("argvprobe ${{_{c}[1]}}"));
        out.push(format!("argvprobe h <<E\nx${c}\nE\n"));
    }
    out
}

/// The red team's texts of 2026-12-07 (each confirmed against real Gemini CLI 0.12.0):
/// non-ASCII digits and plane-2 gaps are letters of the WebAssembly runtime, letters newer than
/// its Unicode are not, and a letter of two UTF-16 units across a 5,119-unit chunk boundary
/// reaches the scanner as two halves.
fn red_team_texts() -> Vec<String> {
    let mut out: Vec<String> = [
        "_\u{663}=1",
        "_\u{ff13}=1",
        "argvprobe ${_\u{663}[1]}",
        "argvprobe ${_\u{ff13}[1]}",
        "argvprobe ${_\u{969}[1]}",
        "argvprobe h <<E\nx$\u{663}\nE\n",
        "argvprobe h <<E\nprice: $\u{663}\u{660}\nE\n",
        "argvprobe h <<E\ntotal $\u{ff11}\u{ff10}\u{ff10}\nE\n",
        "argvprobe h <<E\nx$\u{1d7ce}\nE\n",
        "argvprobe ${_\u{2a6e0}[1]}",
        "argvprobe h <<E\nx$\u{2a6e0}\nE\n",
        "_\u{2c5f}=1",
        "_\u{30000}=1",
        "argvprobe ${_\u{2c5f}[1]}",
        "argvprobe ${_\u{30000}[1]}",
        "argvprobe h <<E\nx$\u{2c5f}\nE\n",
        "argvprobe h <<E\nx$\u{870}\nE\n",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let x = "\u{1d465}";
    for n in [5118, 5119, 5120] {
        out.push(format!("_{}=1", x.repeat(n)));
    }
    // The pair starting at UTF-16 unit 5118 or 10237 of the text, and at 5000.
    for at in [5000, 5117, 5118, 5119, 10236, 10237, 10238] {
        let head = "argvprobe hd <<E\n";
        out.push(format!("{head}{} ${x}\nE\n", "a".repeat(at - head.len() - 2)));
        let head = "argvprobe ";
        out.push(format!(
            "{head}{}\nargvprobe ${{_{x}[1]}}",
            "a".repeat(at - head.len() - 14)
        ));
    }
    out
}

#[test]
fn gemini_tree_sitter_gate_matches_the_npm_parser_on_every_corpus_text() {
    let Some(root) = packages() else { return };
    let mut texts = edge_cases();
    texts.extend(
        iec_harness::learn::markers("0a1b2c3d4e")
            .into_iter()
            .map(|m| m.command),
    );
    texts.extend(iec_harness::hazard_payloads(300, 7).into_iter().map(|(_, t)| t));
    texts.extend(
        iec_harness::action_hazard_payloads(300, 7)
            .into_iter()
            .map(|(_, t)| t),
    );
    let mut r = gen::Rng::new(0x7ee5);
    let n = iec_testkit::rotation::count("IEC_GATE_CASES", 3000, usize::MAX);
    for _ in 0..n {
        texts.push(gen::script(&mut r));
        texts.push(gen::broken(&mut r));
        texts.push(gen::hostile_string(&mut r));
    }
    texts.extend(code_point_sweep());
    let node = oracle(&root, &texts);
    let mut wrong = Vec::new();
    let (mut refused, mut errors, mut none, mut transforms) = (0, 0, 0, 0);
    for (text, want) in texts.iter().zip(&node) {
        let v = inspect(text);
        let parts = Gate {
            prompt_transform: true,
            parts: true,
        };
        let got = serde_json::json!({
            "empty": v.empty,
            "error": v.error.is_some(),
            "commands": if v.empty { 0 } else { v.commands },
            "transform": v.prompt_transform.is_some(),
            "redirects": if v.empty { 0 } else { v.redirects },
            "parts_refused": refuses_with(text, parts).is_some(),
        });
        if &got != want {
            wrong.push(format!("{text:?}: iec {got} node {want}"));
        }
        errors += usize::from(v.error.is_some());
        none += usize::from(!v.empty && v.commands == 0);
        transforms += usize::from(v.prompt_transform.is_some());
        refused += usize::from(iec_launches::tree_sitter_gate::refuses(text, true).is_some());
    }
    println!(
        "{} texts: {refused} refused ({errors} syntax errors, {none} without a command, {transforms} @P)",
        texts.len()
    );
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        texts.len(),
        wrong.join("\n")
    );
    // The corpora exercise every rule.
    assert!(
        errors > 100 && none > 0 && transforms > 0,
        "{errors} {none} {transforms}"
    );
}
