//! The PowerShell grammar (tree-sitter-powershell): a script's statements and structure, its
//! first syntax error, and the native programs it calls with the source text of their
//! arguments (which [`super::parse_args`] then evaluates as PowerShell does).

use tree_sitter::{Node, Parser};

/// A parse: statement signatures, the whole tree's signature, and the first error.
pub struct Tree {
    /// The signature of each top-level statement (comments and separators left out).
    pub statements: Vec<String>,
    /// The signature of the whole tree.
    pub sig: String,
    /// The byte offset of the first syntax error, if the script does not parse.
    pub error_at: Option<usize>,
}

thread_local! {
    static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new({
        let mut p = Parser::new();
        p.set_language(&tree_sitter_powershell::LANGUAGE.into())
            .expect("tree-sitter-powershell grammar matches the tree-sitter runtime");
        p
    });
}

thread_local! {
    /// First syntax errors by text: every PowerShell launch asks it of the same emitted
    /// text, and error recovery on a text that does not parse is the costly part.
    static ERRORS: std::cell::RefCell<std::collections::HashMap<String, Option<usize>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// [`parse`]'s `error_at`, memoised per thread (1,024 entries; a text over 16 KiB is kept
/// as its length and SHA-256, so `--launch all` parses a long text once, not once per
/// PowerShell launch, without keeping copies of it).
pub fn error_at(src: &str) -> Option<usize> {
    let key = if src.len() > 16 * 1024 {
        // A NUL never starts a text that gets here (texts with NUL are refused first).
        format!("\0{}:{}", src.len(), iec_core::limits::sha256_hex(src.as_bytes()))
    } else {
        src.to_string()
    };
    if let Some(v) = ERRORS.with(|m| m.borrow().get(&key).copied()) {
        return v;
    }
    let v = parse(src).error_at;
    ERRORS.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= 1024 {
            m.clear();
        }
        m.insert(key, v);
    });
    v
}

fn with_tree<T>(src: &str, f: impl FnOnce(Node<'_>) -> T) -> Option<T> {
    PARSER.with(|p| {
        let t = p.borrow_mut().parse(src, None)?;
        Some(f(t.root_node()))
    })
}

/// Node kinds that carry no meaning for execution.
fn skipped(kind: &str) -> bool {
    matches!(kind, "command_argument_sep" | "comment" | "empty_statement")
}

/// A node's structure with its leaf texts (strings whole, as their source text).
fn sig(n: Node<'_>, src: &str, out: &mut String) {
    sig_of(n, src, out, false)
}

/// [`sig`], or with `native_masked` each native call reduced to its program name (its
/// arguments are compared as argv instead) and white-space-only tokens left out.
fn sig_of(n: Node<'_>, src: &str, out: &mut String, native_masked: bool) {
    let kind = n.kind();
    if skipped(kind) {
        return;
    }
    if native_masked {
        if n.child_count() == 0 && src[n.byte_range()].trim().is_empty() {
            return;
        }
        if kind == "command" {
            let mut c = n.walk();
            let name = n.children(&mut c).find(|k| k.kind() == "command_name");
            if let Some(program) = name.map(|name| &src[name.byte_range()]) {
                if is_native(program) {
                    out.push_str("(native=");
                    out.push_str(program);
                    out.push(')');
                    return;
                }
            }
        }
    }
    if n.child_count() == 0 || kind.contains("string") || kind == "stop_parsing" {
        out.push_str(kind);
        out.push('=');
        out.push_str(&src[n.byte_range()]);
        out.push('\u{1}');
        return;
    }
    out.push('(');
    out.push_str(kind);
    let mut c = n.walk();
    for ch in n.children(&mut c) {
        sig_of(ch, src, out, native_masked);
    }
    out.push(')');
}

/// The script's structure with native calls' arguments left out; `None` when it does not parse.
pub fn shape(src: &str) -> Option<String> {
    with_tree(src, |root| {
        if first_error(root).is_some() {
            return None;
        }
        let mut s = String::new();
        sig_of(root, src, &mut s, true);
        Some(s)
    })
    .flatten()
}

fn first_error(n: Node<'_>) -> Option<usize> {
    if n.is_error() || n.is_missing() {
        return Some(n.start_byte());
    }
    if !n.has_error() {
        return None;
    }
    let mut c = n.walk();
    let kids: Vec<Node<'_>> = n.children(&mut c).collect();
    kids.into_iter().find_map(first_error).or(Some(n.start_byte()))
}

/// The script's parse (a text the parser gives up on is an error at byte 0).
pub fn parse(src: &str) -> Tree {
    with_tree(src, |root| {
        let mut statements = Vec::new();
        let mut c = root.walk();
        for list in root.children(&mut c) {
            if list.kind() != "statement_list" {
                if !skipped(list.kind()) {
                    let mut s = String::new();
                    sig(list, src, &mut s);
                    statements.push(s);
                }
                continue;
            }
            let mut c2 = list.walk();
            for st in list.children(&mut c2) {
                if skipped(st.kind()) {
                    continue;
                }
                let mut s = String::new();
                sig(st, src, &mut s);
                statements.push(s);
            }
        }
        let mut whole = String::new();
        sig(root, src, &mut whole);
        Tree {
            statements,
            sig: whole,
            error_at: first_error(root),
        }
    })
    .unwrap_or(Tree {
        statements: vec![],
        sig: String::new(),
        error_at: Some(0),
    })
}

/// A native program called by the script, with the source text of its arguments.
pub struct NativeCall {
    /// The command name as written.
    pub program: String,
    /// The source text of its arguments (redirections blanked).
    pub args_text: String,
    /// Why its argv cannot be judged in check mode, if it cannot.
    pub unjudgeable: Option<String>,
    /// Byte range of the whole command in the source.
    pub command: std::ops::Range<usize>,
    /// Byte range of its arguments (`command_elements`), if it has any.
    pub elements: Option<std::ops::Range<usize>>,
    /// Whether the arguments include a redirection.
    pub redirected: bool,
}

/// Windows PowerShell 5.1 default aliases (and a few 7.x ones) that name cmdlets: their
/// arguments are bound inside PowerShell, not passed on a command line.
const ALIASES: &[&str] = &[
    "%", "?", "ac", "asnp", "cat", "cd", "chdir", "clc", "clear", "clhy", "cli", "clp", "cls", "clv", "cnsn",
    "compare", "copy", "cp", "cpi", "cpp", "curl", "cvpa", "dbp", "del", "diff", "dir", "dnsn", "ebp",
    "echo", "epal", "epcsv", "epsn", "erase", "etsn", "exsn", "fc", "fhx", "fl", "foreach", "ft", "fw",
    "gal", "gbp", "gc", "gcb", "gci", "gcm", "gcs", "gdr", "ghy", "gi", "gin", "gjb", "gl", "gm", "gmo",
    "gp", "gps", "gpv", "group", "gsn", "gsnp", "gsv", "gtz", "gu", "gv", "gwmi", "h", "history", "icm",
    "iex", "ihy", "ii", "ipal", "ipcsv", "ipmo", "ipsn", "irm", "ise", "iwmi", "iwr", "kill", "lp", "ls",
    "man", "md", "measure", "mi", "mount", "move", "mp", "mv", "nal", "ndr", "ni", "nmo", "npssc", "nsn",
    "nv", "ogv", "oh", "popd", "ps", "pushd", "pwd", "r", "rbp", "rcjb", "rcsn", "rd", "rdr", "ren", "ri",
    "rjb", "rm", "rmdir", "rmo", "rni", "rnp", "rp", "rsn", "rsnp", "rujb", "rv", "rvpa", "rwmi", "sajb",
    "sal", "saps", "sasv", "sbp", "sc", "scb", "select", "set", "shcm", "si", "sl", "sleep", "sls", "sort",
    "sp", "spjb", "spps", "spsv", "start", "stz", "sujb", "sv", "swmi", "tee", "trcm", "type", "wget",
    "where", "wjb", "write",
];

/// Language keywords and statements that look like command names in the grammar.
const KEYWORDS: &[&str] = &[
    "exit", "return", "break", "continue", "throw", "function", "filter", "param", "if", "else", "elseif",
    "foreach", "for", "while", "do", "until", "switch", "try", "catch", "finally", "trap", "begin",
    "process", "end", "data", "class", "enum", "using",
];

fn is_native(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if ALIASES.contains(&lower.as_str()) || KEYWORDS.contains(&lower.as_str()) {
        return false;
    }
    let base = lower.rsplit(['\\', '/']).next().unwrap_or(&lower);
    // Verb-Noun names are cmdlets or functions; a path or a name with an extension is a file.
    let has_path = lower.contains(['\\', '/']) || base.contains('.');
    if !has_path && base.contains('-') {
        return false;
    }
    !name.starts_with('$')
}

/// Named node kinds the `iec-windows` argument parser evaluates as PowerShell does.
fn judged_kind(kind: &str) -> bool {
    matches!(
        kind,
        "command_parameter"
            | "generic_token"
            | "command_argument_sep"
            | "array_literal_expression"
            | "unary_expression"
            | "string_literal"
            | "verbatim_string_characters"
            | "expandable_string_literal"
            | "integer_literal"
            | "decimal_integer_literal"
    )
}

fn unjudged_kind(n: Node<'_>) -> Option<String> {
    if n.is_named() && !judged_kind(n.kind()) {
        return Some(n.kind().to_string());
    }
    let mut c = n.walk();
    let kids: Vec<Node<'_>> = n.children(&mut c).collect();
    kids.into_iter().find_map(unjudged_kind)
}

/// Why the raw text after `--%` (the token itself left out) cannot be judged, if it cannot.
/// PowerShell passes it as written, except that a pipe ends it and `%NAME%` is replaced
/// from the environment.
pub fn stop_parsing_unjudgeable(raw: &str) -> Option<&'static str> {
    if raw.contains('|') {
        return Some(
            "--% followed by a pipe: PowerShell ends the raw text there, the grammar used here does not",
        );
    }
    let mut parts = raw.split('%');
    parts.next();
    let mut rest: Vec<&str> = parts.collect();
    // `%NAME%` needs a closing `%` after a non-empty name.
    rest.pop();
    if rest.iter().any(|name| !name.is_empty()) {
        return Some("--% followed by `%NAME%`, which PowerShell replaces from the environment (not known in check mode)");
    }
    None
}

fn collect(n: Node<'_>, src: &str, out: &mut Vec<NativeCall>) {
    if n.kind() == "command" {
        let mut c = n.walk();
        let kids: Vec<Node<'_>> = n.children(&mut c).collect();
        if let Some(name) = kids.iter().find(|k| k.kind() == "command_name") {
            let program = src[name.byte_range()].to_string();
            if is_native(&program) {
                let mut args_text = String::new();
                let mut unjudgeable = None;
                let mut redirected = false;
                let elements = kids
                    .iter()
                    .find(|k| k.kind() == "command_elements")
                    .map(|k| k.byte_range());
                if let Some(el) = kids.iter().find(|k| k.kind() == "command_elements") {
                    let mut c2 = el.walk();
                    for a in el.children(&mut c2) {
                        if a.kind().contains("redirection") {
                            redirected = true;
                            args_text.push(' ');
                            continue;
                        }
                        if unjudgeable.is_none() && a.kind() == "stop_parsing" {
                            let node = &src[a.byte_range()];
                            let raw = node.strip_prefix("--%").unwrap_or(node);
                            unjudgeable = stop_parsing_unjudgeable(raw).map(str::to_string);
                        } else if unjudgeable.is_none() {
                            unjudgeable = unjudged_kind(a).map(|k| match k.as_str() {
                                "variable" => {
                                    "a variable, whose value is not known in check mode".to_string()
                                }
                                k => {
                                    format!("`{k}`, which the iec-windows argument parser does not evaluate")
                                }
                            });
                        }
                        args_text.push_str(&src[a.byte_range()]);
                    }
                }
                out.push(NativeCall {
                    program,
                    args_text: args_text.trim().to_string(),
                    unjudgeable,
                    command: n.byte_range(),
                    elements,
                    redirected,
                });
            }
        }
    }
    let mut c = n.walk();
    let kids: Vec<Node<'_>> = n.children(&mut c).collect();
    for k in kids {
        collect(k, src, out);
    }
}

/// The native programs the script calls, in source order.
pub fn native_calls(src: &str) -> Vec<NativeCall> {
    with_tree(src, |root| {
        let mut out = Vec::new();
        collect(root, src, &mut out);
        out
    })
    .unwrap_or_default()
}
