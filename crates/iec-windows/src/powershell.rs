//! PowerShell (spec §5): native argument passing in Windows PowerShell 5.1 and PowerShell 7.x
//! (`$PSNativeCommandArgumentPassing` = `Legacy`, `Standard`, `Windows`), CLI `-Command`
//! joining and `-EncodedCommand` decoding. The PowerShell grammar that finds a script's native
//! calls is [`grammar`].

pub mod grammar;

use crate::render::{dotnet_arg, ps_legacy_join};
use crate::Error;

/// `$PSNativeCommandArgumentPassing`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassingMode {
    /// Windows PowerShell 5.1 (the 2016 algorithm).
    Ps51,
    /// 7.x `Legacy`.
    Legacy,
    /// 7.x `Standard` (ArgumentList → .NET PasteArguments).
    Standard,
    /// 7.3+ `Windows` (default on Windows): Legacy for a few targets, else Standard.
    Windows,
}

impl PassingMode {
    /// Parses `Legacy` / `Standard` / `Windows` (case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "legacy" => Some(Self::Legacy),
            "standard" => Some(Self::Standard),
            "windows" => Some(Self::Windows),
            _ => None,
        }
    }

    /// The passing a launch uses: its `native_passing` (`ps51`, `legacy`, `standard`,
    /// `windows`), else the default of its PowerShell version (`Windows` for `7`, 5.1's
    /// otherwise).
    pub fn of_launch(powershell: Option<&str>, native_passing: Option<&str>) -> Self {
        let pwsh = powershell == Some("7");
        match native_passing {
            Some("ps51") => Self::Ps51,
            Some("legacy") => Self::Legacy,
            Some("standard") => Self::Standard,
            Some("windows") => Self::Windows,
            _ if pwsh => Self::Windows,
            _ => Self::Ps51,
        }
    }
}

/// One argument after PowerShell's argument-mode parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PsArg {
    /// A value (already unquoted/expanded).
    Value(String),
    /// An array literal written with commas: its source text (passed as text).
    ArrayText(String),
    /// Text after `--%`, passed raw.
    Verbatim(String),
}

struct Elem {
    start: usize,
    end: usize,
    value: Option<String>,
    comma_inside: bool,
    starts_comma: bool,
    ends_comma: bool,
}

fn name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == ':' || c == '?'
}

fn backtick(c: char) -> char {
    match c {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        '0' => '\0',
        'a' => '\x07',
        'b' => '\x08',
        'e' => '\x1b',
        'f' => '\x0c',
        'v' => '\x0b',
        x => x,
    }
}

fn lookup<'v>(vars: &'v [(String, String)], name: &str) -> Option<&'v str> {
    let name = name.trim_start_matches("env:");
    vars.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Parses the argument text written after a native command into PowerShell argument values.
/// Supports barewords, `'…'`, `"…"` with backtick escapes and `$var`/`${var}` expansion,
/// bare `$var`, comma array literals, and `--%`. `$(…)` and other expressions are not evaluated.
pub fn parse_args(text: &str, vars: &[(String, String)], env: &[(String, String)]) -> Vec<PsArg> {
    let c: Vec<char> = text.chars().collect();
    let mut elems: Vec<Elem> = Vec::new();
    let mut i = 0;
    let mut verbatim: Option<String> = None;
    while i < c.len() {
        while i < c.len() && c[i].is_whitespace() {
            i += 1;
        }
        if i >= c.len() {
            break;
        }
        let start = i;
        if c[i..].starts_with(&['-', '-', '%']) && c.get(i + 3).map_or(true, |x| x.is_whitespace()) {
            let rest: String = c[(i + 3).min(c.len())..].iter().collect();
            let rest = rest.trim_start().to_string();
            verbatim = Some(expand_env(&rest, env));
            break;
        }
        let mut val = String::new();
        let mut any_defined = false;
        let mut only_var = true;
        let mut comma_inside = false;
        while i < c.len() && !c[i].is_whitespace() {
            let ch = c[i];
            match ch {
                '\'' => {
                    only_var = false;
                    any_defined = true;
                    i += 1;
                    while i < c.len() {
                        if c[i] == '\'' {
                            if c.get(i + 1) == Some(&'\'') {
                                val.push('\'');
                                i += 2;
                                continue;
                            }
                            i += 1;
                            break;
                        }
                        val.push(c[i]);
                        i += 1;
                    }
                }
                '"' => {
                    only_var = false;
                    any_defined = true;
                    i += 1;
                    while i < c.len() {
                        match c[i] {
                            '`' if i + 1 < c.len() => {
                                val.push(backtick(c[i + 1]));
                                i += 2;
                            }
                            '"' => {
                                if c.get(i + 1) == Some(&'"') {
                                    val.push('"');
                                    i += 2;
                                    continue;
                                }
                                i += 1;
                                break;
                            }
                            '$' => {
                                let (v, n) = var_ref(&c[i..], vars);
                                match v {
                                    Some(v) => val.push_str(&v),
                                    None if n == 1 => val.push('$'),
                                    None => {}
                                }
                                i += n;
                            }
                            x => {
                                val.push(x);
                                i += 1;
                            }
                        }
                    }
                }
                '`' => {
                    only_var = false;
                    any_defined = true;
                    if i + 1 < c.len() {
                        val.push(backtick(c[i + 1]));
                    }
                    i += 2;
                }
                '$' => {
                    let (v, n) = var_ref(&c[i..], vars);
                    match v {
                        Some(v) => {
                            val.push_str(&v);
                            any_defined = true;
                        }
                        None if n == 1 => {
                            val.push('$');
                            only_var = false;
                            any_defined = true;
                        }
                        None => {}
                    }
                    i += n;
                }
                ',' => {
                    comma_inside = true;
                    only_var = false;
                    any_defined = true;
                    val.push(',');
                    i += 1;
                }
                x => {
                    only_var = false;
                    any_defined = true;
                    val.push(x);
                    i += 1;
                }
            }
        }
        let end = i.min(c.len());
        let value = if only_var && !any_defined { None } else { Some(val) };
        elems.push(Elem {
            start,
            end,
            value,
            comma_inside,
            starts_comma: c[start] == ',',
            ends_comma: c[end - 1] == ',',
        });
    }
    // group elements joined by commas into array literals
    let mut out = Vec::new();
    let mut k = 0;
    while k < elems.len() {
        let mut j = k;
        while j + 1 < elems.len() && (elems[j].ends_comma || elems[j + 1].starts_comma) {
            j += 1;
        }
        if j > k || elems[k].comma_inside {
            let t: String = c[elems[k].start..elems[j].end].iter().collect();
            out.push(PsArg::ArrayText(t));
        } else if let Some(v) = elems[k].value.clone() {
            out.push(PsArg::Value(v));
        }
        k = j + 1;
    }
    if let Some(v) = verbatim {
        out.push(PsArg::Verbatim(v));
    }
    out
}

/// `$name` / `${name}` at the start of `c`: (value, chars consumed).
fn var_ref(c: &[char], vars: &[(String, String)]) -> (Option<String>, usize) {
    if c.get(1) == Some(&'{') {
        if let Some(p) = c.iter().position(|&x| x == '}') {
            let name: String = c[2..p].iter().collect();
            return (lookup(vars, &name).map(String::from), p + 1);
        }
    }
    let mut n = 1;
    while n < c.len() && name_char(c[n]) {
        n += 1;
    }
    if n == 1 {
        return (None, 1);
    }
    let name: String = c[1..n].iter().collect();
    (lookup(vars, &name).map(String::from), n)
}

/// `Environment.ExpandEnvironmentVariables`: defined `%NAME%` replaced, others kept.
pub fn expand_env(s: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(p) = rest.find('%') {
        out.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        match after.find('%') {
            Some(q) => {
                let name = &after[..q];
                match env.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)) {
                    Some((_, v)) if !name.is_empty() => {
                        out.push_str(v);
                        rest = &after[q + 1..];
                    }
                    _ => {
                        out.push('%');
                        rest = after;
                    }
                }
            }
            None => {
                out.push('%');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Is the `Windows` mode's Legacy list matched by this program?
pub fn windows_mode_is_legacy(program: &str) -> bool {
    let base = program
        .rsplit(['\\', '/'])
        .next()
        .unwrap_or(program)
        .to_ascii_lowercase();
    let (stem, ext) = match base.rfind('.') {
        Some(p) => (&base[..p], &base[p..]),
        None => (base.as_str(), ""),
    };
    matches!(ext, ".bat" | ".cmd" | ".js" | ".vbs" | ".wsf")
        || matches!(stem, "cmd" | "cscript" | "find" | "sqlcmd" | "wscript")
}

/// Builds the lpCommandLine PowerShell passes to `program`.
pub fn native_command_line(program: &str, args: &[PsArg], mode: PassingMode) -> String {
    let legacy = match mode {
        PassingMode::Ps51 | PassingMode::Legacy => true,
        PassingMode::Standard => false,
        PassingMode::Windows => windows_mode_is_legacy(program),
    };
    let pwsh7 = mode != PassingMode::Ps51;
    let mut parts: Vec<String> = Vec::new();
    for a in args {
        match a {
            PsArg::Value(v) => {
                if legacy {
                    let t = ps_legacy_join(std::slice::from_ref(v), pwsh7);
                    if !t.is_empty() {
                        parts.push(t);
                    }
                } else {
                    // ArgumentList element → PasteArguments.AppendArgument
                    parts.push(dotnet_arg(v));
                }
            }
            PsArg::ArrayText(t) => {
                if legacy {
                    parts.push(t.clone());
                } else {
                    for piece in t.split_whitespace() {
                        parts.push(dotnet_arg(piece));
                    }
                }
            }
            PsArg::Verbatim(t) => parts.push(t.clone()),
        }
    }
    let mut cl = format!("\"{program}\"");
    if !parts.is_empty() {
        cl.push(' ');
        cl.push_str(&parts.join(" "));
    }
    cl
}

/// What the target program receives (argv without argv[0]): batch files get cmd's raw
/// parameters `%1…` (quotes kept), everything else is parsed with the UCRT rules.
pub fn program_view(program: &str, command_line: &str) -> Vec<String> {
    let lower = program.to_ascii_lowercase();
    if lower.ends_with(".bat") || lower.ends_with(".cmd") {
        let tail = command_line
            .strip_prefix(&format!("\"{program}\""))
            .unwrap_or(command_line);
        return crate::cmd::batch_params(tail);
    }
    let mut v = crate::argv::ucrt(command_line, crate::argv::DEFAULT_MODULE_NAME);
    v.remove(0);
    v
}

/// The argv a native call means: its PowerShell values, then, after `--%`, what the program's
/// own parser makes of the raw text (PowerShell passes that text as written). `None` for an
/// array literal, whose elements PowerShell passes as source text.
pub fn intended_native_argv(program: &str, args_text: &str) -> Option<Vec<String>> {
    let mut argv = Vec::new();
    for a in parse_args(args_text, &[], &[]) {
        match a {
            PsArg::Value(v) => argv.push(v),
            PsArg::Verbatim(raw) => argv.extend(program_view(program, &format!("\"{program}\" {raw}"))),
            PsArg::ArrayText(_) => return None,
        }
    }
    Some(argv)
}

/// Native argument passing end to end: (command line, argv the program sees).
pub fn native(
    text: &str,
    mode: PassingMode,
    program: &str,
    vars: &[(String, String)],
    env: &[(String, String)],
) -> (String, Vec<String>) {
    let args = parse_args(text, vars, env);
    let cl = native_command_line(program, &args, mode);
    let view = program_view(program, &cl);
    (cl, view)
}

/// The PowerShell source a CLI invocation runs, from its argv (argv[0] included): `-Command`
/// joins every remaining argument with one space; `-EncodedCommand` decodes base64 UTF-16LE.
/// A first non-dash argument is `-Command` for 5.1 (`pwsh = false`) and `-File` for pwsh.
pub fn cli_command(argv: &[String], pwsh: bool) -> Result<String, Error> {
    let mut i = 1;
    while i < argv.len() {
        let key = argv[i].trim();
        if key.is_empty() {
            i += 1;
            continue;
        }
        let first = key.chars().next().unwrap_or(' ');
        if !matches!(first, '-' | '/' | '\u{2013}' | '\u{2014}' | '\u{2015}') {
            if pwsh {
                return Err(Error::Invalid(format!("-File {key}: not a command")));
            }
            return Ok(argv[i..].join(" "));
        }
        let mut k: &str = &key[first.len_utf8()..];
        if let Some(s) = k.strip_prefix(first) {
            k = s;
        }
        let k = k.to_ascii_lowercase();
        let is = |full: &str, min: usize| k.len() >= min && full.starts_with(&k);
        if k == "c" || is("command", 1) {
            if i + 1 >= argv.len() {
                return Err(Error::Invalid("-Command requires an argument".into()));
            }
            if argv[i + 1] == "-" {
                return Err(Error::Invalid("-Command - reads stdin".into()));
            }
            return Ok(argv[i + 1..].join(" "));
        }
        if k == "e" || k == "ec" || is("encodedcommand", 2) {
            let b = argv
                .get(i + 1)
                .ok_or_else(|| Error::Invalid("-EncodedCommand requires an argument".into()))?;
            return decode_encoded_command(b);
        }
        if k == "f" || is("file", 1) {
            return Err(Error::Invalid("-File runs a script, not a command".into()));
        }
        if k == "cwa" || is("commandwithargs", 8) {
            return argv
                .get(i + 1)
                .cloned()
                .ok_or_else(|| Error::Invalid("-CommandWithArgs requires an argument".into()));
        }
        // other switches: skip, with a value for the ones that take one
        let takes_value = [
            "executionpolicy",
            "ex",
            "ep",
            "workingdirectory",
            "wd",
            "windowstyle",
            "w",
            "outputformat",
            "o",
            "of",
            "inputformat",
            "if",
            "in",
            "configurationname",
            "settingsfile",
            "version",
            "psconsolefile",
        ];
        if takes_value.contains(&k.as_str()) {
            i += 1;
        }
        i += 1;
    }
    Err(Error::Invalid("no command".into()))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `-EncodedCommand` payload: base64 of the UTF-16LE source.
pub fn encode_command(source: &str) -> String {
    let bytes: Vec<u8> = source.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    let mut out = String::new();
    for ch in bytes.chunks(3) {
        let n =
            (ch[0] as u32) << 16 | (*ch.get(1).unwrap_or(&0) as u32) << 8 | *ch.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= ch.len() {
                out.push(B64[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes an `-EncodedCommand` payload (base64 → UTF-16LE).
pub fn decode_encoded_command(b64: &str) -> Result<String, Error> {
    let mut bits = 0u32;
    let mut nbits = 0;
    let mut bytes = Vec::new();
    for c in b64.trim().bytes() {
        if c == b'=' {
            break;
        }
        let v = B64
            .iter()
            .position(|&x| x == c)
            .ok_or_else(|| Error::Invalid("invalid base64".into()))? as u32;
        bits = bits << 6 | v;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            bytes.push((bits >> nbits) as u8);
            bits &= (1 << nbits) - 1;
        }
    }
    let units: Vec<u16> = bytes
        .chunks(2)
        .map(|p| u16::from_le_bytes([p[0], *p.get(1).unwrap_or(&0)]))
        .collect();
    Ok(String::from_utf16_lossy(&units))
}
