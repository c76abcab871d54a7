//! Unit tests for quote()/parse() edge cases (expected values checked against shell-quote 1.8.3).

use super::*;

fn q(s: &str) -> String {
    quote_str(s)
}

fn p(s: &str) -> Vec<Token> {
    parse_no_env(s).unwrap()
}

fn st(s: &str) -> Token {
    Token::Str(s.into())
}

fn op(s: &str) -> Token {
    Token::Op(s.into())
}

#[test]
fn quote_branches() {
    assert_eq!(q(""), "''");
    assert_eq!(q("abc"), "abc");
    // branch 1: whitespace / " / backslash without '
    assert_eq!(q("a b"), "'a b'");
    assert_eq!(q("a\"b"), "'a\"b'");
    assert_eq!(q("C:\\x"), "'C:\\x'"); // 1.8.3: backslash no longer doubled
    assert_eq!(q("a != b"), "'a != b'");
    // branch 2: has ' and (whitespace or " or ')
    assert_eq!(q("it's"), "\"it's\"");
    assert_eq!(q("it's !"), "\"it's \\!\"");
    assert_eq!(q("'$x`\\\""), "\"'\\$x\\`\\\\\\\"\"");
    // branch 3: per-character escaping
    assert_eq!(q("a!b"), "a\\!b");
    assert_eq!(q("<"), "\\<");
    assert_eq!(q("a:b"), "a\\:b");
    assert_eq!(q("a:&"), "a:\\&");
    assert_eq!(q("a::"), "a:\\:");
    assert_eq!(q("x*?[]{}"), "x\\*\\?\\[\\]\\{\\}");
    assert_eq!(q("~%+-_./"), "~%+-_./");
    assert_eq!(q("é🦀"), "é🦀");
    // JS \s includes NBSP, BOM, U+2028
    assert_eq!(q("a\u{a0}b"), "'a\u{a0}b'");
    assert_eq!(q("\u{feff}"), "'\u{feff}'");
}

#[test]
fn quote_lists_and_ops() {
    assert_eq!(
        quote(&["a b".into(), "<".into(), "/dev/null".into()]),
        "'a b' \\< /dev/null"
    );
    assert_eq!(quote(&[QuoteArg::Op("||".into())]), "\\|\\|");
    assert_eq!(quote(&[QuoteArg::Op("a\nb".into())]), "\\a\n\\b");
    assert_eq!(quote_strs(&["x", "", "y z"]), "x '' 'y z'");
}

#[test]
fn parse_words_quotes_ops() {
    assert_eq!(p("a b  c"), vec![st("a"), st("b"), st("c")]);
    assert_eq!(p("'a b' \"c d\""), vec![st("a b"), st("c d")]);
    assert_eq!(p("a'b'\"c\""), vec![st("abc")]);
    assert_eq!(
        p("a|b||c&&d;e;;f|&g"),
        vec![
            st("a"),
            op("|"),
            st("b"),
            op("||"),
            st("c"),
            op("&&"),
            st("d"),
            op(";"),
            st("e"),
            op(";;"),
            st("f"),
            op("|&"),
            st("g")
        ]
    );
    assert_eq!(p("<<EOF"), vec![op("<"), op("<"), st("EOF")]);
    assert_eq!(p("<<<x"), vec![op("<<<"), st("x")]);
    assert_eq!(p("2>&1"), vec![st("2"), op(">&"), st("1")]);
    assert_eq!(p("<(ls)"), vec![op("<("), st("ls"), op(")")]);
    assert_eq!(p(""), vec![]);
    assert_eq!(p("''"), vec![st("")]);
}

#[test]
fn parse_backslashes() {
    assert_eq!(p("a\\ b"), vec![st("a b")]);
    assert_eq!(p("\\|"), vec![st("|")]);
    assert_eq!(p("\\n"), vec![st("n")]);
    assert_eq!(p("\"a\\nb\""), vec![st("a\\nb")]);
    assert_eq!(p("\"a\\\"b\""), vec![st("a\"b")]);
    assert_eq!(p("\"\\$x\""), vec![st("$x")]);
    assert_eq!(p("'a\\b'"), vec![st("a\\b")]);
    assert_eq!(p("\\"), vec![st("")]);
    // the shell-quote '\' bug: `'a\'` with nothing after
    assert_eq!(p("'a\\' b"), vec![st("a\\"), st("b")]);
    // an operator char that the regex saw as quoted makes the whole chunk an op
    assert_eq!(p("\\\\'x'|'"), vec![op("\\\\'x'|'")]);
    // unterminated double quote closes via backtracking at an escaped quote
    assert_eq!(p("\"abc\\\""), vec![st("abc\"")]);
}

#[test]
fn parse_variables_without_env() {
    assert_eq!(p("$HOME"), vec![st("")]);
    assert_eq!(p("${HOME}x"), vec![st("x")]);
    assert_eq!(p("$"), vec![st("$")]);
    assert_eq!(p("x$"), vec![st("x$")]);
    assert_eq!(p("$%"), vec![st("$%")]);
    assert_eq!(p("$1abc"), vec![st("")]);
    // single-character variables skip the following character (upstream bug)
    assert_eq!(p("$$a"), vec![st("")]);
    assert_eq!(p("$?xy"), vec![st("y")]);
    assert_eq!(p("$_foo"), vec![st("oo")]);
    assert_eq!(p("$$🦀"), vec![st("\u{FFFD}")]);
    // Object.prototype is visible through the {} env
    assert_eq!(p("$constructor"), vec![st("function Object() { [native code] }")]);
    assert_eq!(
        p("${toString}"),
        vec![st("function toString() { [native code] }")]
    );
    assert_eq!(
        p("${__proto__}"),
        vec![st(&format!("{OBJECT_TOKEN}{{}}{OBJECT_TOKEN}"))]
    );
    assert_eq!(p("'$HOME'"), vec![st("$HOME")]);
    assert_eq!(p("\"$HOME/x\""), vec![st("/x")]);
}

#[test]
fn parse_errors() {
    assert_eq!(parse_no_env("${}").unwrap_err().message, "Bad substitution: ${}");
    assert_eq!(
        parse_no_env("${abc").unwrap_err().message,
        "Bad substitution: abc"
    );
}

#[test]
fn parse_globs_and_comments() {
    assert_eq!(p("*.rs"), vec![Token::Glob("*.rs".into())]);
    assert_eq!(p("\\*"), vec![Token::Glob("*".into())]);
    assert_eq!(p("'*'"), vec![st("*")]);
    assert_eq!(p("a #b c | d"), vec![st("a"), Token::Comment("b c | d".into())]);
    assert_eq!(p("a#b c"), vec![st("a"), Token::Comment("b c".into())]);
    assert_eq!(p("#"), vec![Token::Comment("".into())]);
}

#[test]
fn parse_with_env() {
    let env = |k: &str| match k {
        "X" => Some(EnvValue::Str("1 2".into())),
        "O" => Some(EnvValue::Object("{\"op\":\"|\"}".into())),
        _ => None,
    };
    assert_eq!(parse("$X \"${X}\"", &env).unwrap(), vec![st("1 2"), st("1 2")]);
    assert_eq!(
        parse("a$O", &env).unwrap(),
        vec![st(&format!("a{OBJECT_TOKEN}{{\"op\":\"|\"}}{OBJECT_TOKEN}"))]
    );
    assert_eq!(parse("$constructor", &env).unwrap(), vec![st("")]);
}
