//! Senders: argv → Windows command line (spec §3, §4.6, §5.2).

use crate::RenderError;

fn push_n(s: &mut String, c: char, n: usize) {
    for _ in 0..n {
        s.push(c);
    }
}

fn check_nul(args: &[String]) -> Result<(), RenderError> {
    if args.iter().any(|a| a.contains('\0')) {
        return Err(RenderError::Nul);
    }
    Ok(())
}

/// Rust/CPython/Go style escaping: n backslashes before `"` → 2n+1 then `"`; a trailing run is
/// doubled only when the argument is quoted.
fn append_msvc(out: &mut String, arg: &str, quote: bool) {
    if quote {
        out.push('"');
    }
    let mut bs = 0usize;
    for c in arg.chars() {
        if c == '\\' {
            bs += 1;
        } else {
            if c == '"' {
                push_n(out, '\\', bs + 1);
            }
            bs = 0;
        }
        out.push(c);
    }
    if quote {
        push_n(out, '\\', bs);
        out.push('"');
    }
}

/// Colascione's `ArgvQuote` (spec §3.1), used by .NET `PasteArguments.AppendArgument`.
pub fn argv_quote(arg: &str, force: bool) -> String {
    if !force && !arg.is_empty() && !arg.chars().any(|c| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '"')) {
        return arg.to_string();
    }
    let mut out = String::from("\"");
    append_quoted_body(&mut out, arg);
    out.push('"');
    out
}

fn append_quoted_body(out: &mut String, arg: &str) {
    let chars: Vec<char> = arg.chars().collect();
    let mut i = 0;
    loop {
        let mut n = 0;
        while i < chars.len() && chars[i] == '\\' {
            n += 1;
            i += 1;
        }
        if i == chars.len() {
            push_n(out, '\\', 2 * n);
            break;
        }
        if chars[i] == '"' {
            push_n(out, '\\', 2 * n + 1);
            out.push('"');
        } else {
            push_n(out, '\\', n);
            out.push(chars[i]);
        }
        i += 1;
    }
}

/// Rust `std::process::Command` on Windows (`make_command_line`, `force_quotes = false`).
pub fn rust_std(args: &[String]) -> Result<String, RenderError> {
    rust_std_with(args, false, &[])
}

/// Rust `make_command_line` with `force_quotes` and `Arg::Raw` indices (appended verbatim).
pub fn rust_std_with(args: &[String], force_quotes: bool, raw: &[usize]) -> Result<String, RenderError> {
    check_nul(args)?;
    let (prog, rest) = args.split_first().ok_or(RenderError::NoProgram)?;
    if prog.contains('"') {
        return Err(RenderError::Invalid(
            "program path contains a double quote".into(),
        ));
    }
    let mut out = String::new();
    append_msvc(&mut out, prog, true);
    for (i, a) in rest.iter().enumerate() {
        out.push(' ');
        if raw.contains(&(i + 1)) {
            out.push_str(a);
        } else {
            let quote = force_quotes || a.is_empty() || a.contains(' ') || a.contains('\t');
            append_msvc(&mut out, a, quote);
        }
    }
    Ok(out)
}

/// Rust `make_bat_command_line` (BatBadBut mitigation, spec §4.6). `args[0]` is the script.
pub fn rust_std_bat(args: &[String]) -> Result<String, RenderError> {
    rust_std_bat_with(args, false)
}

/// [`rust_std_bat`] with `force_quotes`.
pub fn rust_std_bat_with(args: &[String], force_quotes: bool) -> Result<String, RenderError> {
    check_nul(args)?;
    let (script, rest) = args.split_first().ok_or(RenderError::NoProgram)?;
    if script.contains('"') || script.ends_with('\\') {
        return Err(RenderError::Invalid(
            "batch file name contains a quote or ends with a backslash".into(),
        ));
    }
    let mut cl = String::from("cmd.exe /e:ON /v:OFF /d /c \"\"");
    cl.push_str(script);
    cl.push('"');
    for a in rest {
        cl.push(' ');
        if a.contains('\r') || a.contains('\n') {
            return Err(RenderError::Invalid(
                "batch file arguments cannot contain CR or LF".into(),
            ));
        }
        append_bat_arg(&mut cl, a, force_quotes);
    }
    cl.push('"');
    Ok(cl)
}

fn append_bat_arg(out: &mut String, a: &str, quote0: bool) {
    let mut quote = quote0 || a.is_empty() || a.ends_with('\\');
    for ch in a.chars() {
        if ch.is_ascii() && !(ch.is_ascii_alphanumeric() || "#$*+-./:?@\\_".contains(ch)) {
            quote = true;
        }
        if ch.is_control() {
            quote = true;
        }
    }
    if quote {
        out.push('"');
    }
    let mut bs = 0usize;
    for ch in a.chars() {
        if ch == '\\' {
            bs += 1;
        } else {
            if ch == '"' {
                push_n(out, '\\', bs);
                out.push('"');
            } else if ch == '%' || ch == '\r' {
                out.push_str("%%cd:~,");
            }
            bs = 0;
        }
        out.push(ch);
    }
    if quote {
        push_n(out, '\\', bs);
        out.push('"');
    }
}

/// libuv `quote_cmd_arg` (Node `child_process.spawn`, `windowsVerbatimArguments: false`).
/// Every element, argv[0] included, is quoted by the same function.
pub fn node(args: &[String]) -> Result<String, RenderError> {
    check_nul(args)?;
    if args.is_empty() {
        return Err(RenderError::NoProgram);
    }
    let parts: Vec<String> = args.iter().map(|a| libuv_quote(a)).collect();
    Ok(parts.join(" "))
}

fn libuv_quote(arg: &str) -> String {
    if arg.is_empty() {
        return "\"\"".into();
    }
    if !arg.contains([' ', '\t', '"']) {
        return arg.to_string();
    }
    if !arg.contains(['"', '\\']) {
        return format!("\"{arg}\"");
    }
    let chars: Vec<char> = arg.chars().collect();
    let mut rev: Vec<char> = vec!['"'];
    let mut quote_hit = true;
    for &c in chars.iter().rev() {
        rev.push(c);
        if quote_hit && c == '\\' {
            rev.push('\\');
        } else if c == '"' {
            quote_hit = true;
            rev.push('\\');
        } else {
            quote_hit = false;
        }
    }
    rev.push('"');
    rev.into_iter().rev().collect()
}

/// Node with `windowsVerbatimArguments: true`: elements joined with single spaces, no quoting.
pub fn node_verbatim(args: &[String]) -> Result<String, RenderError> {
    check_nul(args)?;
    if args.is_empty() {
        return Err(RenderError::NoProgram);
    }
    Ok(args.join(" "))
}

/// CPython `subprocess.list2cmdline` (every element, argv[0] included, same rule).
pub fn cpython(args: &[String]) -> Result<String, RenderError> {
    check_nul(args)?;
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let quote = a.is_empty() || a.contains(' ') || a.contains('\t');
        // list2cmdline: n backslashes before '"' become 2n+1 then '"'
        if quote {
            out.push('"');
        }
        let mut bs = 0usize;
        for c in a.chars() {
            if c == '\\' {
                bs += 1;
            } else if c == '"' {
                push_n(&mut out, '\\', bs * 2);
                bs = 0;
                out.push_str("\\\"");
            } else {
                push_n(&mut out, '\\', bs);
                bs = 0;
                out.push(c);
            }
        }
        if quote {
            push_n(&mut out, '\\', bs * 2);
            out.push('"');
        } else {
            push_n(&mut out, '\\', bs);
        }
    }
    Ok(out)
}

/// .NET `PasteArguments.Paste(args, pasteFirstArgumentUsingArgV0Rules: true)` on Windows.
pub fn dotnet(args: &[String]) -> Result<String, RenderError> {
    dotnet_with(args, true)
}

/// .NET `PasteArguments`; `argv0_rules = false` is the Unix behaviour (argv[0] escaped like
/// every other element).
pub fn dotnet_with(args: &[String], argv0_rules: bool) -> Result<String, RenderError> {
    check_nul(args)?;
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if i == 0 && argv0_rules {
            if a.contains('"') {
                return Err(RenderError::Invalid(
                    "argv[0] cannot contain a double quote (ApplicationException)".into(),
                ));
            }
            if a.is_empty() || a.chars().any(char::is_whitespace) {
                out.push('"');
                out.push_str(a);
                out.push('"');
            } else {
                out.push_str(a);
            }
            continue;
        }
        out.push_str(&dotnet_arg(a));
    }
    Ok(out)
}

/// .NET `PasteArguments.AppendArgument` for one (non-argv[0]) element.
pub fn dotnet_arg(a: &str) -> String {
    if !a.is_empty() && !a.chars().any(|c| c.is_whitespace() || c == '"') {
        return a.to_string();
    }
    let mut out = String::from("\"");
    append_quoted_body(&mut out, a);
    out.push('"');
    out
}

/// Go `syscall.EscapeArg` for one element.
pub fn go_escape_arg(s: &str) -> String {
    if s.is_empty() {
        return "\"\"".into();
    }
    let needs_backslash = s.contains(['\\', '"']);
    let has_space = s.contains([' ', '\t']);
    if !needs_backslash && !has_space {
        return s.to_string();
    }
    if !needs_backslash {
        return format!("\"{s}\"");
    }
    let mut out = String::new();
    if has_space {
        out.push('"');
    }
    let mut slashes = 0usize;
    for c in s.chars() {
        match c {
            '\\' => slashes += 1,
            '"' => {
                push_n(&mut out, '\\', slashes + 1);
                slashes = 0;
            }
            _ => slashes = 0,
        }
        out.push(c);
    }
    if has_space {
        push_n(&mut out, '\\', slashes);
        out.push('"');
    }
    out
}

/// Go `makeCmdLine`: `EscapeArg` of every element joined with spaces.
pub fn go(args: &[String]) -> Result<String, RenderError> {
    check_nul(args)?;
    if args.is_empty() {
        return Err(RenderError::NoProgram);
    }
    Ok(args
        .iter()
        .map(|a| go_escape_arg(a))
        .collect::<Vec<_>>()
        .join(" "))
}

/// Windows PowerShell 5.1 native command line (spec §5.2 `ps51_cmdline`, [INFERRED]):
/// `"exe" ` + arguments; empty arguments dropped; an argument is wrapped in quotes when it has
/// whitespace outside `"`-pairs; nothing is escaped.
pub fn powershell51(args: &[String]) -> Result<String, RenderError> {
    check_nul(args)?;
    let (prog, rest) = args.split_first().ok_or(RenderError::NoProgram)?;
    let tail = ps_legacy_join(rest, false);
    let mut out = format!("\"{prog}\"");
    if !tail.is_empty() {
        out.push(' ');
        out.push_str(&tail);
    }
    Ok(out)
}

/// Joins PowerShell argument values the Legacy way. `pwsh7 = true` adds the 7.x fixes
/// (`\"` does not count as a quote; a trailing backslash run is doubled when quoting).
pub(crate) fn ps_legacy_join(args: &[String], pwsh7: bool) -> String {
    let mut parts = Vec::new();
    for a in args {
        if a.is_empty() {
            continue;
        }
        parts.push(ps_legacy_arg(a, pwsh7));
    }
    parts.join(" ")
}

pub(crate) fn ps_legacy_arg(a: &str, pwsh7: bool) -> String {
    let chars: Vec<char> = a.chars().collect();
    let mut quotes = 0usize;
    let mut need = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == '"' && !(pwsh7 && i > 0 && chars[i - 1] == '\\') {
            quotes += 1;
        } else if c.is_whitespace() && quotes % 2 == 0 {
            need = true;
            break;
        }
    }
    if !need {
        return a.to_string();
    }
    let mut out = String::from("\"");
    out.push_str(a);
    if pwsh7 {
        let trailing = chars.iter().rev().take_while(|&&c| c == '\\').count();
        push_n(&mut out, '\\', trailing);
    }
    out.push('"');
    out
}
