//! Deterministic generators of bash texts: scripts that parse by construction (quotes of all
//! kinds, `$'…'`, here-documents with quoted and unquoted delimiters, `!`, backslash runs, CR,
//! tabs, Unicode, long texts), texts that do not parse, and adversarial texts that would act on
//! the world if anything ran them. Used by the property, canary and benchmark suites.

/// A small xorshift generator: deterministic across platforms and fast.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator (seed 0 is replaced).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// The generator in state `state` as it stands, not mixed as [`Rng::new`] mixes a seed: for a
    /// suite whose sequence was fixed by starting from that state (`tests/action_property.rs`).
    /// A state of 0 would give 0 forever and is refused.
    pub fn from_state(state: u64) -> Rng {
        assert_ne!(state, 0, "xorshift has no state 0");
        Rng(state)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// True with probability `p` percent.
    pub fn pct(&mut self, p: usize) -> bool {
        self.below(100) < p
    }
    /// One element of `xs`.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

const PLAIN: &[char] = &[
    'a', 'b', 'z', 'X', '0', '9', '_', '.', '/', '-', '+', ',', ':', '=', '@', '%', '^', 'é', 'ß', '中',
    '🦀', '!',
];
const ANY: &[char] = &[
    'a', 'Z', '0', ' ', '\t', '\n', '\r', '!', '$', '`', '"', '\\', '%', '^', '&', '|', '<', '>', '(', ')',
    '{', '}', '[', ']', '*', '?', '~', '#', ';', '=', 'é', '🦀', '\u{2028}', '\u{7f}', '\u{1b}',
];

fn plain_word(r: &mut Rng) -> String {
    let n = 1 + r.below(8);
    let mut s: String = (0..n).map(|_| *r.pick(PLAIN)).collect();
    // `!` followed by `(` would be an extglob; a leading `!` alone is a pipeline negation.
    if s.starts_with('!') {
        s.insert(0, 'x');
    }
    s
}

fn single_quoted(r: &mut Rng) -> String {
    let n = r.below(12);
    let body: String = (0..n).map(|_| *r.pick(ANY)).filter(|&c| c != '\'').collect();
    format!("'{body}'")
}

fn double_quoted(r: &mut Rng) -> String {
    let mut s = String::from("\"");
    for _ in 0..r.below(10) {
        match r.below(9) {
            0 => s.push_str("\\\""),
            1 => s.push_str(&"\\".repeat(2 * (1 + r.below(3)))),
            2 => s.push_str("\\$"),
            3 => s.push_str("$HOME"),
            4 => s.push_str("${x:-d}"),
            5 => s.push('!'),
            6 => s.push_str("\\`"),
            _ => {
                let c = *r.pick(ANY);
                if !matches!(c, '"' | '\\' | '$' | '`') {
                    s.push(c);
                }
            }
        }
    }
    s.push('"');
    s
}

fn ansi_c(r: &mut Rng) -> String {
    let mut s = String::from("$'");
    for _ in 0..r.below(8) {
        s.push_str(r.pick::<&str>(&[
            "\\n", "\\t", "\\x41", "\\u00e9", "\\'", "\\\\", "a", " ", "!", "\\r", "\"", "$",
        ]));
    }
    s.push('\'');
    s
}

fn escaped(r: &mut Rng) -> String {
    let c = *r.pick(&[
        '\\', '"', '\'', '$', '!', ' ', '`', '&', ';', '|', '<', '>', '(', ')', '{', '}', '*', '#', 'n', 'é',
    ]);
    format!("{}{}", "\\\\".repeat(r.below(3)), format_args!("\\{c}"))
}

fn word(r: &mut Rng) -> String {
    let parts = 1 + r.below(3);
    (0..parts)
        .map(|_| match r.below(10) {
            0..=2 => plain_word(r),
            3 => single_quoted(r),
            4 => double_quoted(r),
            5 => ansi_c(r),
            6 => escaped(r),
            7 => r
                .pick(&[
                    "$x",
                    "${y}",
                    "$1",
                    "$?",
                    "$$",
                    "\"$@\"",
                    "$(printf x)",
                    "`printf y`",
                    "$((1+2))",
                ])
                .to_string(),
            8 => r
                .pick(&["*.txt", "a?c", "[ab]", "~", "{a,b}", "x{1..3}"])
                .to_string(),
            _ => single_quoted(r),
        })
        .collect()
}

fn simple_command(r: &mut Rng) -> String {
    let name = r
        .pick(&[
            "printf",
            "echo",
            "argvprobe",
            "cat",
            "jq",
            "python3",
            "node",
            "test",
            "true",
            "wc",
        ])
        .to_string();
    let mut s = name;
    if r.pct(10) {
        s = format!("X{}={} {s}", r.below(9), word(r));
    }
    for _ in 0..r.below(5) {
        s.push(' ');
        s.push_str(&word(r));
    }
    match r.below(12) {
        0 => s.push_str(" > out.txt"),
        1 => s.push_str(" 2>&1"),
        2 => s.push_str(" < in.txt"),
        3 => s.push_str(" <<< 'here string'"),
        _ => {}
    }
    s
}

fn heredoc(r: &mut Rng) -> String {
    let delim = r.pick(&["EOF", "PY", "MY_END", "x"]).to_string();
    let (open, quoted) = match r.below(4) {
        0 => (delim.clone(), false),
        1 => (format!("'{delim}'"), true),
        2 => (format!("\"{delim}\""), true),
        _ => (format!("\\{delim}"), true),
    };
    let dash = r.pct(25);
    let mut body = String::new();
    for _ in 0..r.below(4) {
        let mut line: String = (0..r.below(20))
            .map(|_| *r.pick(ANY))
            .filter(|&c| c != '\n')
            .collect();
        if !quoted {
            // In an unquoted body `$`, `` ` `` and `\` are live; keep them well formed.
            line = line.replace(['$', '`', '\\'], "_");
        }
        if dash && r.pct(50) {
            line.insert(0, '\t');
        }
        if line.trim_start_matches('\t') == delim || line.is_empty() {
            line.push('.');
        }
        body.push_str(&line);
        body.push('\n');
    }
    format!(
        "cat <<{}{open}\n{body}{}{delim}",
        if dash { "-" } else { "" },
        if dash { "\t" } else { "" }
    )
}

/// A bash script that parses by construction.
pub fn script(r: &mut Rng) -> String {
    let n = 1 + r.below(4);
    let mut s = String::new();
    let mut after_heredoc = false;
    let mut simple_last = false;
    for i in 0..n {
        if i > 0 {
            // A here-document body starts on the next line; only a newline may follow it.
            s.push_str(if after_heredoc {
                "\n"
            } else {
                r.pick::<&str>(&["; ", " && ", " || ", " | ", "\n", "\n\n", " ;\t"])
            });
        }
        after_heredoc = false;
        simple_last = false;
        match r.below(14) {
            0 => {
                s.push_str(&heredoc(r));
                after_heredoc = true;
            }
            1 => s.push_str(&format!(
                "if {}; then {}; fi",
                simple_command(r),
                simple_command(r)
            )),
            2 => s.push_str(&format!(
                "for v in {} {}; do {}; done",
                word(r),
                word(r),
                simple_command(r)
            )),
            3 => s.push_str(&format!("( {} )", simple_command(r))),
            4 if r.pct(30) => s.push_str(&format!("{{ {}; }}", simple_command(r))),
            5 if i + 1 == n => s.push_str(&format!(
                "{} # comment {}",
                simple_command(r),
                r.pick(&["it's", "a \"b\"", "!x", "}"])
            )),
            _ => {
                s.push_str(&simple_command(r));
                simple_last = !s.ends_with("<<< 'here string'");
            }
        }
    }
    if r.pct(5) && simple_last {
        s.push('\r'); // a CR at the end is part of the last word for bash
    }
    s
}

/// A long script: `script`s joined by newlines until at least `bytes` long.
pub fn long_script(r: &mut Rng, bytes: usize) -> String {
    let mut s = String::new();
    while s.len() < bytes {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(&script(r));
    }
    s
}

/// A text that is likely not to parse (the caller confirms with `bash -n`).
pub fn broken(r: &mut Rng) -> String {
    let base = script(r);
    match r.below(6) {
        0 => format!("{base} '"),
        1 => format!("{base}\nfi"),
        2 => format!("{base} )"),
        3 => format!("if {base}"),
        4 => format!("{base} && "),
        _ => format!("echo \"{base}"),
    }
}

/// An adversarial text: if any part of it ran, it would leave a trace in `canary_dir`, start a
/// process whose command line holds `marker`, or connect to `127.0.0.1:port`.
pub fn adversarial(r: &mut Rng, canary_dir: &str, marker: &str, port: u16) -> String {
    let f = format!("{canary_dir}/{}", r.below(1000));
    let acts = [
        format!("/usr/bin/touch {f}"),
        format!("echo x > {f}"),
        format!("mkdir {f}.d"),
        format!("/bin/sleep 30 {marker} &"),
        format!("exec -a {marker} /bin/sleep 30"),
        format!("kill -9 $PPID; /usr/bin/touch {f}"),
        format!("read x < /dev/tcp/127.0.0.1/{port}"),
        format!("{{ :; }} < /dev/tcp/127.0.0.1/{port}"),
        format!("alias ls='/usr/bin/touch {f}'; ls"),
        format!("eval '/usr/bin/touch {f}'"),
        format!("cp /etc/hostname {f}"),
        format!("printf x >> {f}"),
        format!("coproc /bin/sleep 30 {marker}"),
        format!("trap '/usr/bin/touch {f}' EXIT"),
    ];
    let act = r.pick(&acts).clone();
    match r.below(14) {
        0 => format!("x\n}}\n{act}\n{{ :"),
        1 => format!("x }}; {act}; {{ :"),
        2 => format!("if true; then :; fi\nfi\n{act}"),
        3 => format!("cat <<EOF\n$({act})\nEOF"),
        4 => format!("cat <<EOF\n{act}"),
        5 => format!("echo $({act})"),
        6 => format!("echo `{act}`"),
        7 => format!("echo \"$({act})\" '!' \"x\""),
        8 => format!("'; {act}; '"),
        9 => format!("\"; {act}; \""),
        10 => format!("x'\"'\"'; {act}; '\"'\"'"),
        11 => act.to_string(),
        12 => format!("echo ok\r\n{act}"),
        _ => format!("printf '%s' 'a != b' && {act} | cat"),
    }
}

/// Characters that shells, wrappers and harness checks treat specially.
const HOSTILE_SPECIALS: &[char] = &[
    '\'', '"', '\\', '$', '!', '%', '^', '&', '|', '<', '>', '(', ')', '{', '}', '[', ']', '*', '?', '~',
    '#', ';', '`', '=', ' ',
];
/// Multi-byte characters: two-, three- and four-byte UTF-8 (astral), combining marks, line and
/// paragraph separators, BOM / zero-width no-break space, zero-width space, no-break space.
const HOSTILE_UNICODE: &[&str] = &[
    "é",
    "ß",
    "ÿ",
    "中",
    "文",
    "🦀",
    "😀",
    "𝄞",
    "\u{10FFFF}",
    "\u{1F1EB}\u{1F1F7}",
    "e\u{301}",
    "\u{301}",
    "\u{20DD}",
    "\u{2028}",
    "\u{2029}",
    "\u{FEFF}",
    "\u{200B}",
    "\u{A0}",
    "\u{202E}",
    "\u{FFFD}",
    "Ω",
];

/// A hostile string (not a script): code points U+0001..U+00FF (every byte value but NUL, as a
/// JSON string carries them: U+0080..U+00FF as two-byte UTF-8), weighted towards
/// `'"\$!%^&|<>(){}[]*?~#;` and backquote, backslash runs of 1–9, CR, LF, CRLF, tabs and
/// multi-byte Unicode (astral, combining marks, U+2028, U+FEFF). Lengths are mostly short
/// (70% under 24 bytes), with a tail up to 64 KiB (one string in a thousand is 4–64 KiB).
/// Never holds NUL; at most 65,536 bytes.
pub fn hostile_string(r: &mut Rng) -> String {
    const MAX: usize = 65_536;
    let target = match r.below(1000) {
        0..=699 => r.below(24),
        700..=949 => 24 + r.below(232),
        950..=998 => 256 + r.below(3840),
        _ => 4096 + r.below(MAX - 4096 + 1),
    };
    let mut s = String::with_capacity(target + 4);
    while s.len() < target {
        match r.below(100) {
            0..=34 => s.push(*r.pick(HOSTILE_SPECIALS)),
            35..=42 => s.push_str(&"\\".repeat(1 + r.below(9))),
            43..=48 => s.push_str(r.pick::<&str>(&["\r", "\n", "\r\n"])),
            49..=53 => s.push('\t'),
            54..=61 => s.push_str(r.pick::<&str>(HOSTILE_UNICODE)),
            62..=76 => s.push(char::from_u32(1 + r.below(255) as u32).unwrap()),
            _ => s.push(*r.pick(&['a', 'b', 'z', 'X', '0', '9', '_', '.', '/', '-', ' ', 'x'])),
        }
    }
    while s.len() > MAX {
        s.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic() {
        let a: Vec<String> = {
            let mut r = Rng::new(7);
            (0..5).map(|_| script(&mut r)).collect()
        };
        let b: Vec<String> = {
            let mut r = Rng::new(7);
            (0..5).map(|_| script(&mut r)).collect()
        };
        assert_eq!(a, b);
    }

    #[test]
    fn hostile_strings() {
        let mut r = Rng::new(11);
        let v: Vec<String> = (0..20_000).map(|_| hostile_string(&mut r)).collect();
        assert!(v.iter().all(|s| !s.contains('\0') && s.len() <= 65_536));
        let all: String = v.iter().filter(|s| s.len() < 4096).map(String::as_str).collect();
        for c in (1..=255u32).filter_map(char::from_u32) {
            assert!(all.contains(c), "U+{:04X} never generated", c as u32);
        }
        for x in [
            "\\\\\\\\\\\\\\\\\\",
            "\r\n",
            "\u{2028}",
            "\u{FEFF}",
            "🦀",
            "e\u{301}",
        ] {
            assert!(all.contains(x), "{x:?} never generated");
        }
        assert!(v.iter().any(|s| s.len() > 32_768));
        assert!(v.iter().filter(|s| s.len() < 24).count() > 12_000);
    }
}
