//! The action comparison against the real receiver (issue 17, item 5): for generated pairs of
//! texts, one derived from the other by the rewrites harnesses really do (re-quoting every word,
//! shell-quote's `'"'"'`, `!` escaped as `\!` as Claude Code 2.1.72 does, `< /dev/null` added
//! after a command or before a pipeline's first `|`, operators re-spaced), `action::same` (or
//! `same_modulo` with the stdin contract) must say "same" exactly when real bash, running both,
//! hands every command the same argv, assignment and redirections.
//!
//! Truth comes from running the texts: every command is the function `p`, which writes the
//! value of `$v` (assignments before it), the first line of its standard input (a file, a
//! here-string, the pipe from the command before it, or the script's own empty stdin) and its
//! arguments to descriptor 3 (pipes and
//! redirections of descriptor 1 do not hide them; each call in one write, the calls of a text
//! compared as a set, the commands of a pipeline running at once) and one byte to its standard output (so an
//! output redirection leaves a file with a name). Globs match a fixed set of files, `$x` holds
//! blanks and a pattern, `HOME` is fixed. The canonical forms come from the real bash witness.
//!
//! `IEC_ACTION_PAIRS` sets the number of pairs (default 100,000).

use iec_check::action;
use iec_testkit::gen::Rng;
use iec_testkit::par;
use iec_witness::{global, Parse};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Values of static words: each is rendered with a quoting style.
const VALUES: &[&str] = &[
    "a",
    "a b",
    "x!y",
    "a != b",
    "a~b",
    "~",
    "~/d",
    "it's",
    "-n",
    "",
    "%s\\n",
    "a=b",
    "b:~",
    "v=~",
    "é",
    ";",
    "&&",
    "|",
    "#x",
    "{\"k\": \"v\"}",
    "{a,b}",
    "*",
    "f?",
    "[ab]",
    "$x",
    "`p`",
    "\\",
    "a\"b",
    "!",
    "x!",
    "(error|warn)",
    "--opt=~/x",
    "a\tb",
];

/// Words with expansions, written as they stand.
const DYNAMIC: &[&str] = &[
    "$x",
    "\"$x\"",
    "${x}",
    "\"${x:-d}\"",
    "~",
    "~/d",
    "*",
    "f?",
    "{a,b}",
    "\"$x\"y",
    "$x''",
    "a=~",
    "'a'\"$x\"",
    "$(p c)",
    "\"$(p c)\"",
];

/// A static word's value in one of the quotings a harness or a model uses.
fn quote(rng: &mut Rng, v: &str, style: usize) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./,:@%+=".contains(c) || !c.is_ascii();
    match style % 5 {
        // Single quotes, `'\''` for a quote.
        0 => format!("'{}'", v.replace('\'', r"'\''")),
        // shell-quote's `'"'"'`.
        1 => format!("'{}'", v.replace('\'', r#"'"'"'"#)),
        // Double quotes (in a non-interactive shell `!` is literal there).
        2 => {
            let mut o = String::from("\"");
            for c in v.chars() {
                if "\"$`\\".contains(c) {
                    o.push('\\');
                }
                o.push(c);
            }
            o.push('"');
            o
        }
        // A backslash before every character that is not plain.
        3 if !v.is_empty() && !v.contains('\n') => {
            let mut o = String::new();
            for c in v.chars() {
                if !plain(c) {
                    o.push('\\');
                }
                o.push(c);
            }
            o
        }
        // Bare when every character is plain and no `~`/`=` rule applies; else single quotes.
        _ => {
            if !v.is_empty() && v.chars().all(plain) && rng.pct(90) {
                v.to_string()
            } else {
                format!("'{}'", v.replace('\'', r"'\''"))
            }
        }
    }
}

enum Word {
    Static(&'static str),
    Dynamic(&'static str),
}

struct Command {
    assign: Option<&'static str>,
    words: Vec<Word>,
    redirect: Option<(&'static str, String)>,
}

struct Text {
    commands: Vec<Command>,
    ops: Vec<&'static str>,
}

fn generate(rng: &mut Rng, index: usize) -> Text {
    let n = 1 + rng.below(3);
    let mut commands = vec![];
    for k in 0..n {
        let words = (0..1 + rng.below(4))
            .map(|_| {
                if rng.pct(20) {
                    Word::Dynamic(rng.pick::<&str>(DYNAMIC))
                } else {
                    Word::Static(rng.pick::<&str>(VALUES))
                }
            })
            .collect();
        let redirect = match rng.below(10) {
            0 => Some((">", format!("out/o{index}_{k}"))),
            1 => Some((">>", format!("out/o{index} {k}"))),
            2 => Some(("2>&1", String::new())),
            // Input of its own: the stdin contract added after it replaces it (red team round 3).
            3 => Some(("<<<", format!("in {index}"))),
            4 => Some(("<", "in.txt".to_string())),
            _ => None,
        };
        let assign = rng.pct(10).then(|| *rng.pick(&["a b", "x!y", "~", "c"]));
        commands.push(Command {
            assign,
            words,
            redirect,
        });
    }
    // (No `||`: `p` succeeds, so what follows `||` never runs and could not be compared.)
    let ops = (1..n).map(|_| *rng.pick(&[";", "&&", "|", ";", "&&"])).collect();
    Text { commands, ops }
}

/// The text with every static word in quoting `styles[i]`, operators spaced as `sp`.
fn render(rng: &mut Rng, t: &Text, style: &mut dyn FnMut(&mut Rng) -> usize, sp: &str) -> String {
    let mut o = String::new();
    for (i, c) in t.commands.iter().enumerate() {
        if i > 0 {
            let op = t.ops[i - 1];
            let _ = write!(o, "{}{op} ", if op == ";" { "" } else { sp });
        }
        if let Some(v) = c.assign {
            let s = style(rng);
            let _ = write!(o, "v={} ", quote(rng, v, s));
        }
        o.push('p');
        for w in &c.words {
            o.push(' ');
            match w {
                Word::Static(v) => {
                    let s = style(rng);
                    o.push_str(&quote(rng, v, s));
                }
                Word::Dynamic(d) => o.push_str(d),
            }
        }
        if let Some((op, target)) = &c.redirect {
            let _ = write!(o, " {op}");
            if !target.is_empty() {
                let s = style(rng);
                let _ = write!(
                    o,
                    "{}{}",
                    if rng.pct(50) { " " } else { "" },
                    quote(rng, target, s)
                );
            }
        }
    }
    o
}

/// What real bash does with each text: per text, what the commands printed on descriptor 3
/// and the files its redirections made.
fn run_real(texts: &[String], dir: &Path) -> Vec<String> {
    std::fs::create_dir_all(dir.join("out")).unwrap();
    for f in ["f1", "f2", "ab", "a"] {
        std::fs::write(dir.join(f), "").unwrap();
    }
    std::fs::write(dir.join("in.txt"), "from in.txt\n").unwrap();
    let mut script = String::from(
        "x='v  f*'; HOME=/h; p() { local r l=; builtin read -r l; builtin printf -v r '%s\\1' \"${v-U}\" \"<$l\" \"$@\"; builtin printf '%s\\4' \"$r\" >&3; builtin printf o; }\n",
    );
    for (i, t) in texts.iter().enumerate() {
        // Each text from the same state: a text that re-spacing turned into a lone assignment
        // (`p \; v=a` → `p \ ; v=a`) would leave `v` set for the texts after it.
        let _ = writeln!(
            script,
            "builtin printf '\\002{i}\\002' >&3\nbuiltin unset v\n{t}\n"
        );
    }
    let path = dir.join("script.bash");
    std::fs::write(&path, script).unwrap();
    let out = std::process::Command::new(iec_witness::bash_path())
        .args([
            "--norc",
            "--noprofile",
            "-c",
            "exec 3>&1 1>/dev/null 2>/dev/null; . ./script.bash",
        ])
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut per: Vec<String> = vec![String::new(); texts.len()];
    for part in text.split('\u{2}').skip(1).collect::<Vec<_>>().chunks(2) {
        if part.len() == 2 {
            if let Ok(i) = part[0].parse::<usize>() {
                // The commands of a pipeline run at once: their records in any order.
                let mut calls: Vec<&str> = part[1].split('\u{4}').collect();
                calls.sort();
                per[i] = calls.join("\u{4}");
            }
        }
    }
    let mut files: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for e in std::fs::read_dir(dir.join("out")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let i: usize = name[1..].split(['_', ' ']).next().unwrap().parse().unwrap();
        let content = std::fs::read_to_string(e.path()).unwrap();
        files.entry(i).or_default().push(format!("{name}={content}"));
    }
    for (i, mut f) in files {
        f.sort();
        per[i].push_str(&format!("\u{3}{}", f.join(",")));
    }
    per
}

fn canonical(text: &str) -> Option<String> {
    match global().parse(text.as_bytes(), false).unwrap() {
        Parse::Ok { canonical } => Some(canonical),
        _ => None,
    }
}

/// One batch of pairs through the action comparison and through real bash: how many pairs were
/// compared, how many real bash ran as the same action, how many added the stdin contract where
/// real bash read other input for it, and the first mismatches (at most 12).
fn compare_batch(
    a_texts: &[String],
    b_texts: &[String],
    neutral: &[bool],
) -> (usize, usize, usize, Vec<String>) {
    let n = a_texts.len();
    let mut mismatches = vec![];
    let (mut same_count, mut compared, mut overridden) = (0, 0, 0);
    // A text bash does not parse would end the whole script: it runs as `:` and is not
    // compared.
    let forms: Vec<Option<(String, String)>> = (0..n)
        .map(|i| Some((canonical(&a_texts[i])?, canonical(&b_texts[i])?)))
        .collect();
    let runnable = |texts: &[String]| -> Vec<String> {
        texts
            .iter()
            .zip(&forms)
            .map(|(t, f)| if f.is_some() { t.clone() } else { ":".into() })
            .collect()
    };
    let tmp = tempfile::tempdir().unwrap();
    let ra = run_real(&runnable(a_texts), &tmp.path().join("a"));
    let rb = run_real(&runnable(b_texts), &tmp.path().join("b"));
    for i in 0..n {
        let Some((x, y)) = forms[i].clone() else {
            continue;
        };
        compared += 1;
        let said = if neutral[i] {
            action::same_modulo(&x, &y, "< /dev/null")
        } else {
            action::same(&x, &y)
        };
        let real = ra[i] == rb[i];
        same_count += usize::from(real);
        overridden += usize::from(neutral[i] && !real);
        if said != real && mismatches.len() < 12 {
            mismatches.push(format!(
                "said {said}, bash {real}:\n  a: {:?}\n  b: {:?}\n  real a: {:?}\n  real b: {:?}",
                a_texts[i], b_texts[i], ra[i], rb[i]
            ));
        }
    }
    (compared, same_count, overridden, mismatches)
}

#[test]
fn action_comparison_equals_what_real_bash_does() {
    let pairs: usize = std::env::var("IEC_ACTION_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let mut rng = Rng::from_state(0x1_ec17_5eed);
    let batch = 2_000;
    // The pairs, made first in one seeded order, in batches of one bash script each.
    let mut batches = vec![];
    let mut done = 0;
    while done < pairs {
        let n = batch.min(pairs - done);
        let mut a_texts = vec![];
        let mut b_texts = vec![];
        let mut neutral = vec![];
        for i in 0..n {
            let t = generate(&mut rng, i);
            let a = render(&mut rng, &t, &mut |r| r.below(5), " ");
            let (b, stdin) = match rng.below(5) {
                // Every word quoted again, another way.
                0 | 1 => (render(&mut rng, &t, &mut |r| r.below(5), " "), false),
                // Claude Code 2.1.72: every `!` of the text escaped.
                2 => (a.replace('!', "\\!"), false),
                // The stdin contract: before the first `|`, else at the end.
                3 => match a.find(" | ") {
                    Some(at) => (format!("{} < /dev/null{}", &a[..at], &a[at..]), true),
                    None => (format!("{a} < /dev/null"), true),
                },
                // Operators re-spaced (shell-quote's re-joining).
                _ => (
                    a.replace(" && ", "&&").replace(" | ", "|").replace("; ", " ; "),
                    false,
                ),
            };
            a_texts.push(a);
            b_texts.push(b);
            neutral.push(stdin);
        }
        batches.push((a_texts, b_texts, neutral));
        done += n;
    }
    // The batches are independent: one slice of them per thread (the same pairs on any number
    // of threads), the mismatches in batch order.
    let per_batch = par::shards(&batches, |_, slice| {
        slice
            .iter()
            .map(|(a_texts, b_texts, neutral)| compare_batch(a_texts, b_texts, neutral))
            .collect::<Vec<_>>()
    });
    let mut mismatches = vec![];
    let (mut same_count, mut compared, mut overridden) = (0, 0, 0);
    for (c, same, o, m) in per_batch.into_iter().flatten() {
        compared += c;
        same_count += same;
        overridden += o;
        mismatches.extend(m);
    }
    mismatches.truncate(12);
    eprintln!(
        "{compared} pairs compared, {same_count} the same action for real bash, {overridden} with the stdin contract over other input"
    );
    // The generator gives commands input of their own (`<<<`, `<`): some pairs must show the
    // stdin contract replacing it (red team round 3).
    assert!(
        overridden >= pairs / 100,
        "only {overridden} pairs put the stdin contract over a command's own input"
    );
    assert!(
        compared >= pairs * 9 / 10,
        "only {compared} of {pairs} pairs parsed"
    );
    assert!(
        same_count > compared / 4 && same_count < compared,
        "a degenerate generator: {same_count} of {compared} same"
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches (first ones):\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
