//! The literal-words shortcut agrees with real bash (and bash with dash's word rules) on every
//! generated word list it accepts; it must accept the shell-quote renderings of Claude Code 2.1.72.

use iec_check::plain::literal_words;
use iec_testkit::gen::Rng;
use iec_witness::global;

const PIECES: &[&str] = &[
    "a", "Z9", "'", "\"", "\\", " ", "\t", "\n", "$", "`", "!", "é", "🦀", "'\"'\"'", "\"'\"", "\\\"",
    "\\\\", "\\$", "\\`", "\\!", "x=y", "-", "%", ",", "''", "\"\"", "*", "~", "{a,b}", "#", ";", "<",
];

#[test]
fn literal_words_equal_bash_expansion() {
    let mut r = Rng::new(4242);
    let (mut accepted, mut total) = (0, 0);
    for _ in 0..20_000 {
        let n = 1 + r.below(12);
        let words: String = (0..n).map(|_| *r.pick::<&str>(PIECES)).collect();
        total += 1;
        let Some(fast) = literal_words(&words) else {
            continue;
        };
        accepted += 1;
        for posix in [false, true] {
            let real = global().expand_words_as(words.as_bytes(), posix).unwrap();
            assert_eq!(real.status, 0, "{words:?}: {}", real.diagnostics);
            assert_eq!(fast, real.args, "{words:?} (posix words: {posix})");
        }
    }
    println!(
        "{accepted} of {total} generated word lists taken by the shortcut, all equal to bash's expansion"
    );
    assert!(
        accepted > 2_000,
        "the generator must exercise the shortcut: {accepted}"
    );
}

#[test]
fn shell_quote_renderings_take_the_shortcut() {
    for text in [
        "printf '%s' 'a != b'",
        "echo \"it's\" | jq '.a'",
        "x\ny 'z' \"w\"",
    ] {
        let rendered = iec_shellquote::quote_strs(&[text]);
        let fast = literal_words(&rendered).unwrap_or_else(|| panic!("{rendered:?}"));
        // The value is what bash makes of the rendering (2.1.72's `\!` included), not the text.
        assert_eq!(global().expand_words(rendered.as_bytes()).unwrap().args, fast);
    }
}
