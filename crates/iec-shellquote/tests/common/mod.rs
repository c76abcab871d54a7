//! Shared helpers for the differential tests: npm installs into ~/.cache/iec, a seeded
//! generator, and a one-process JSON Lines node runner.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `Err(msg)` means "skip" (IEC_SKIP_NPM=1); panics with a clear message otherwise.
pub fn npm_install(prefix: &Path, marker: &Path, spec: &str, extra: &[&str]) -> Result<(), String> {
    if marker.exists() {
        return Ok(());
    }
    let skip = std::env::var("IEC_SKIP_NPM").as_deref() == Ok("1");
    std::fs::create_dir_all(prefix).expect("create npm cache dir");
    let mut cmd = Command::new("npm");
    cmd.arg("install")
        .arg("--prefix")
        .arg(prefix)
        .args(extra)
        .arg(spec);
    let res = cmd.output();
    let ok = match &res {
        Ok(o) => o.status.success() && marker.exists(),
        Err(_) => false,
    };
    if ok {
        return Ok(());
    }
    let why = match res {
        Ok(o) => format!(
            "npm install {spec} failed (status {}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => format!("could not run npm for {spec}: {e}"),
    };
    if skip {
        Err(why)
    } else {
        panic!("{why}\n(set IEC_SKIP_NPM=1 to skip this differential test)");
    }
}

pub fn cache_dir() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .expect("HOME is not set: the npm packages are cached under $HOME/.cache/iec");
    home.join(".cache").join("iec")
}

pub fn node_available() -> Result<(), String> {
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => {
            let why = "node is not available".to_owned();
            if std::env::var("IEC_SKIP_NPM").as_deref() == Ok("1") {
                Err(why)
            } else {
                panic!("{why}\n(set IEC_SKIP_NPM=1 to skip this differential test)");
            }
        }
    }
}

/// Runs one node process with `args`, feeding `input` (JSON Lines) on stdin; returns the
/// output lines.
pub fn run_node(args: &[&str], input: String) -> Vec<String> {
    let mut child = Command::new("node")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn node");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        stdin.write_all(input.as_bytes()).expect("write to node");
    });
    let out = child.wait_with_output().expect("wait node");
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("node output utf-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// xorshift64* — deterministic, seeded.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const SPECIALS: &[&str] = &[
    "'", "\"", "\\", "$", "!", "%", "^", "&", "|", "<", ">", "(", ")", "{", "}", "[", "]", "*", "?", "~",
    "#", ";", "`", "=", ":", ",", "@", "-", "_",
];
const SPACES: &[&str] = &[
    " ", " ", " ", "\t", "\n", "\r", "\r\n", "\u{a0}", "\u{2028}", "\u{feff}", "\u{b}",
];
const UNICODE: &[&str] = &["é", "🦀", "日本", "ß", "\u{2003}", "a🦀"];
const VARS: &[&str] = &[
    "$VAR",
    "${X}",
    "$$",
    "$?",
    "$1",
    "$@",
    "$#",
    "$!",
    "$*",
    "$-",
    "$_",
    "$_x",
    "$HOME",
    "${HOME}",
    "$constructor",
    "${toString}",
    "$hasOwnProperty",
    "${__proto__}",
    "${}",
    "${",
    "$",
    "$$🦀",
    "${a b}",
    "$é",
    "$9x",
    "$A_b1-",
];
const WORDS: &[&str] = &[
    "echo",
    "cat",
    "a",
    "foo",
    "x!y",
    "/dev/null",
    "nul",
    "NUL",
    "jq",
    ".a != .b",
    "C:",
    "a:b",
    "FOO=bar",
    "2",
    "1",
    "0",
    "&1",
    "grep",
    "it's",
    "EOF",
    "-n",
];
const OPS: &[&str] = &[
    "||",
    "&&",
    "|&",
    "<(",
    "<<<",
    ">>",
    ">&",
    "<&",
    "2>&1",
    ";;",
    "<<EOF",
    "<<'EOF'",
    "<<-\"X\"",
    "<<\\E",
    ">nul",
    "2>NUL",
    "&>nul",
    ">&2",
    "2>/dev/null",
    "|",
    " | ",
    " < ",
    "<",
    "$(",
    "$((1 << 2))",
    "[[ 1 << 2 ]]",
    "1<<2",
];
const QUOTED: &[&str] = &[
    "'a b'",
    "\"x ! y\"",
    "'it'\\''s'",
    "\"a\\\"b\"",
    "'\\''",
    "\"$HOME\"",
    "'$HOME'",
    "\"a\nb\"",
    "'c\nd'",
    "\"\\\\\"",
    "'\\\\'",
    "\"\"",
    "''",
    "\"it's\"",
    "'say \"hi\"'",
];
const KEYWORDS: &[&str] = &[
    "for ", "if ", "while ", "until ", "case ", "select ", "elif ", "x-if ",
];

/// One piece of a generated input.
fn piece(rng: &mut Rng, out: &mut String, shell_heavy: bool) {
    match rng.below(if shell_heavy { 11 } else { 10 }) {
        0 | 1 => {
            // printable ASCII
            out.push((0x20u8 + rng.below(95) as u8) as char);
        }
        2 | 3 => out.push_str(rng.pick(SPECIALS)),
        4 => {
            for _ in 0..1 + rng.below(5) {
                out.push('\\');
            }
        }
        5 => out.push_str(rng.pick(SPACES)),
        6 => out.push_str(rng.pick(UNICODE)),
        7 => out.push_str(rng.pick(VARS)),
        8 => out.push_str(rng.pick(WORDS)),
        9 => {
            if rng.below(2) == 0 {
                out.push_str(rng.pick(QUOTED))
            } else {
                out.push_str(rng.pick(OPS))
            }
        }
        _ => out.push_str(rng.pick(KEYWORDS)),
    }
}

/// A random input for the shell-quote differential test.
pub fn gen_input(rng: &mut Rng) -> String {
    let mut s = String::new();
    let n = rng.below(14);
    for _ in 0..n {
        piece(rng, &mut s, false);
    }
    s
}

/// A random shell-like command for the Claude Code differential test.
pub fn gen_command(rng: &mut Rng) -> String {
    let mut s = String::new();
    if rng.below(3) > 0 {
        s.push_str(rng.pick(WORDS));
        s.push(' ');
    }
    let n = 1 + rng.below(12);
    for i in 0..n {
        if rng.below(3) == 0 {
            s.push(' ');
        }
        piece(rng, &mut s, true);
        if i == n / 2 && rng.below(2) == 0 {
            s.push_str(rng.pick(&[" | ", "|", " | grep x", " && ", " ; ", "\n"]));
        }
    }
    s
}
