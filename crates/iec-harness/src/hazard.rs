//! A deterministic generator of hazardous `argvprobe` payloads: `argvprobe` followed by 1–4
//! generated words (single-quoted strings with `!`, `$`, `\`, `"`, `%`, spaces, tabs and Unicode;
//! double-quoted strings with `\"`, `\\`, `!`, `\$`; `$'…'` escapes; plain words), sometimes
//! piped to `cat`, sometimes with `"$HOME"` or `'$$'`. Every payload is valid bash, and its
//! direct `bash -c` argv is deterministic: `$$` only appears inside single quotes, and `$HOME`
//! is the sandbox's private HOME, the same for the harness and the direct run.

/// A small deterministic PRNG (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Pieces of a single-quoted word's content (no `'`).
const SQ: &[&str] = &[
    "a", "b", "x", "!", "!=", "!!", "$", "$HOME", "$$", "\\", "\\\\", "\"", "%", "%PATH%", " ", "\t", "é",
    "✓", "日本", "=", "(", ")", "{a,b}", "*", "`x`", "#", "~", ";", "|", "&", "-n", "!foo",
];

/// Pieces of a double-quoted word's content (already escaped for bash's double quotes).
const DQ: &[&str] = &[
    "a", "b", "y", "\\\"", "\\\\", "!", " ! ", "\\$", "\\$HOME", " ", "é", "%", "=", "'", "x y", "\\`", "#",
    "~", "!=",
];

/// Pieces of a `$'…'` word's content.
const ANSI: &[&str] = &[
    "a", "b", "\\t", "\\n", "\\x41", "\\\\", "\\'", "!", " ", "\\u00e9", "$", "\\\"", "%", "z",
];

/// Plain words (no quoting needed, no expansion, no glob).
const PLAIN: &[&str] = &[
    "a", "plain", "x.y", "--flag", "-n", "a=b", "k:v", "1,2", "p/q", "@at", "%s", "100%", "+x", "a_b", "é",
    "x^y", "end",
];

fn quoted(rng: &mut Rng, pieces: &[&str], min: usize) -> String {
    let n = min + rng.below(4);
    (0..n).map(|_| rng.pick(pieces)).collect()
}

fn word(rng: &mut Rng) -> String {
    match rng.below(10) {
        0..=2 => format!("'{}'", quoted(rng, SQ, 1)),
        3..=5 => format!("\"{}\"", quoted(rng, DQ, 1)),
        6 | 7 => format!("$'{}'", quoted(rng, ANSI, 1)),
        8 => rng.pick(PLAIN).to_string(),
        _ => match rng.below(4) {
            0 => "\"$HOME\"".to_string(),
            1 => "\"$HOME/x\"".to_string(),
            2 => "'$$'".to_string(),
            _ => "'PID=$$'".to_string(),
        },
    }
}

/// `n` payloads `(id, command)` from `seed`, the same for the same arguments.
pub fn hazard_payloads(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let words = 1 + rng.below(4);
            let mut cmd = String::from("argvprobe");
            for _ in 0..words {
                cmd.push(' ');
                cmd.push_str(&word(&mut rng));
            }
            if rng.below(5) == 0 {
                cmd.push_str(" | cat");
            }
            (format!("h{seed}-{i:04}"), cmd)
        })
        .collect()
}

/// Unquoted hazards that a harness may re-quote without changing the argv (or may change):
/// `!` next to and inside words, `~` inside words and where bash expands it, braces that expand
/// and that do not, arithmetic and parameter expansions.
const UNQUOTED: &[&str] = &[
    "x!y",
    "foo!",
    "!",
    "!w",
    "a~b",
    "~",
    "~/d",
    "k=~/x",
    "{a,b}",
    "x{1..3}",
    "{x}",
    "$((1+2))",
    "\"$((2*3))\"",
    "${HOME}",
    "\"${HOME:-d}\"",
    "${#HOME}",
    "a!=b",
    "(error|warn)",
];

/// `n` payloads `(id, command)` from `seed` for the comparison by action (issue 17): quoted words
/// next to unquoted `!`, `~`, `{…}`, `$((…))` and `${…}`, redirections, and `;`/`&&` lists of
/// `argvprobe` commands, the last sometimes piped to `cat` (one probe per pipeline: the
/// commands of a pipeline run at once and would record in any order). Every payload is valid
/// bash with a deterministic argv.
pub fn action_hazard_payloads(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let commands = 1 + rng.below(3);
            let mut cmd = String::new();
            for k in 0..commands {
                if k > 0 {
                    cmd.push_str(rng.pick(&["; ", " && ", ";"]));
                }
                cmd.push_str("argvprobe");
                for _ in 0..1 + rng.below(4) {
                    cmd.push(' ');
                    match rng.below(3) {
                        0 => cmd.push_str(&word(&mut rng)),
                        1 => cmd.push_str(rng.pick(UNQUOTED)),
                        // A quoted word glued to an unquoted hazard.
                        _ => {
                            let w = word(&mut rng);
                            let h = rng.pick(&["!x", "!", "~z", "{y}", "$((1))", "${HOME}"]);
                            if rng.below(2) == 0 {
                                cmd.push_str(&format!("{w}{h}"));
                            } else {
                                cmd.push_str(&format!("{h}{w}"));
                            }
                        }
                    }
                }
                match rng.below(6) {
                    0 => cmd.push_str(" 2>&1"),
                    1 => cmd.push_str(" < /dev/null"),
                    _ => {}
                }
            }
            if rng.below(4) == 0 {
                cmd.push_str(" | cat");
            }
            (format!("a{seed}-{i:04}"), cmd)
        })
        .collect()
}
