//! cmd.exe emulation (spec §4): `/C` `/K` `/S` extraction, phase 1 percent expansion (command
//! line and batch modes), phase 2 tokenising (`^`, quotes, `& && | || < > ( )`, first LF ends the
//! line), phase 5 delayed expansion, and a small interpreter (echo, set, setlocal/endlocal,
//! for /L, call, goto, rem, batch files and `cmd` children in a virtual directory).
//! Nothing touches the real file system; external programs are recorded, not run.

use std::collections::BTreeMap;

/// cmd.exe's command-line and expansion limit, in UTF-16 units.
pub const CMD_MAX: usize = 8191;

/// Inputs of the cmd emulator.
#[derive(Clone, Debug, Default)]
pub struct CmdOptions {
    /// Environment (`K=V`), names case-insensitive.
    pub env: Vec<(String, String)>,
    /// Virtual current directory: file name → content. `.bat`/`.cmd` files run; other files
    /// (e.g. `a.exe`) are executables whose launches are recorded.
    pub files: BTreeMap<String, String>,
    /// Delayed expansion state (registry default; `/V:ON|OFF` overrides).
    pub delayed: bool,
}

/// An external program cmd would start, with the command line it would pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// File name found in the virtual directory.
    pub program: String,
    /// lpCommandLine text.
    pub command_line: String,
}

/// Result of running a cmd command line or a batch line.
#[derive(Clone, Debug, Default)]
pub struct CmdResult {
    /// The command string cmd executes (after `/C` quote stripping and the first-LF cut; for a
    /// batch line, the line itself).
    pub executes: String,
    /// `executes` after phase 1 (percent expansion), i.e. the text phase 2 tokenises.
    pub expanded: String,
    /// Text after the first line break was discarded.
    pub truncated: bool,
    /// The command line exceeded 8,191 characters ("The command line is too long.").
    pub too_long: bool,
    /// Standard output (each line ends with `\n`).
    pub stdout: String,
    /// Some command failed (not found, too long, syntax).
    pub error: bool,
    /// Delayed expansion in effect for the command string.
    pub delayed: bool,
    /// External programs started, in order.
    pub launches: Vec<Launch>,
    /// Files created or overwritten by redirections (virtual directory), in order.
    pub files_written: Vec<String>,
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Parsed cmd switches.
#[derive(Clone, Debug, Default)]
pub struct Switches {
    /// `/S`
    pub s: bool,
    /// `/Q`
    pub q: bool,
    /// `/D`
    pub d: bool,
    /// `/V:ON` (Some(true)) or `/V:OFF` (Some(false)).
    pub v: Option<bool>,
    /// `/E:OFF` given.
    pub e_off: bool,
    /// `/K` instead of `/C`.
    pub k: bool,
}

/// Splits a cmd.exe command line into switches and the `/C`/`/K` command string (spec §4.1).
/// `exe_exists` decides rule 1. Returns `None` when there is no `/C` or `/K`.
pub fn extract(cmdline: &str, exe_exists: &dyn Fn(&str) -> bool) -> Option<(Switches, String)> {
    let cl: Vec<char> = cmdline.chars().collect();
    // argv[0] by the CommandLineToArgvW rule
    let mut i = 0;
    if cl.first() == Some(&'"') {
        i = cl[1..]
            .iter()
            .position(|&c| c == '"')
            .map(|p| p + 2)
            .unwrap_or(cl.len());
    } else {
        while i < cl.len() && cl[i] != ' ' && cl[i] != '\t' {
            i += 1;
        }
    }
    let rest0 = &cl[i..];
    let pos = (0..rest0.len().saturating_sub(1))
        .find(|&j| rest0[j] == '/' && matches!(rest0[j + 1].to_ascii_lowercase(), 'c' | 'k'))?;
    let mut sw = Switches {
        k: rest0[pos + 1].eq_ignore_ascii_case(&'k'),
        ..Default::default()
    };
    let pre = &rest0[..pos];
    let mut j = 0;
    while j + 1 < pre.len() {
        if pre[j] == '/' {
            let c = pre[j + 1].to_ascii_lowercase();
            let on_off = || {
                let t: String = pre[j + 2..]
                    .iter()
                    .take(4)
                    .collect::<String>()
                    .to_ascii_lowercase();
                if t.starts_with(":on") {
                    Some(true)
                } else if t.starts_with(":off") {
                    Some(false)
                } else {
                    None
                }
            };
            match c {
                's' => sw.s = true,
                'q' => sw.q = true,
                'd' => sw.d = true,
                'v' => sw.v = on_off(),
                'e' => sw.e_off = on_off() == Some(false),
                _ => {}
            }
        }
        j += 1;
    }
    let s: Vec<char> = rest0[pos + 2..].to_vec();
    let q: Vec<usize> = (0..s.len()).filter(|&k| s[k] == '"').collect();
    if !sw.s && q.len() == 2 {
        let between: String = s[q[0] + 1..q[1]].iter().collect();
        if !between.chars().any(|c| "&<>()@^|".contains(c))
            && between.chars().any(|c| c == ' ' || c == '\t')
            && exe_exists(&between)
        {
            return Some((sw, s.iter().collect()));
        }
    }
    let mut t: Vec<char> = s.iter().copied().skip_while(|&c| c == ' ' || c == '\t').collect();
    if t.first() == Some(&'"') {
        t.remove(0);
        if let Some(last) = t.iter().rposition(|&c| c == '"') {
            t.remove(last);
        }
    }
    Some((sw, t.into_iter().collect()))
}

#[derive(Clone, Debug)]
enum Node {
    Simple { text: String, redirs: Vec<Redir> },
    Block(Vec<(Option<Op>, Node)>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Seq,
    And,
    Or,
    Pipe,
}

#[derive(Clone, Debug)]
struct Redir {
    handle: u32,
    append: bool,
    input: bool,
    target: String,
}

/// Phase 2 parser over a char slice.
struct P2<'a> {
    s: &'a [char],
    i: usize,
}

fn is_cmd_delim(c: char) -> bool {
    matches!(c, ' ' | '\t' | ';' | ',' | '=' | '\x0b' | '\x0c' | '\u{ff}')
}

impl P2<'_> {
    /// Parses a command list until end or an unmatched `)` when `in_block`.
    fn list(&mut self, in_block: bool) -> Result<Vec<(Option<Op>, Node)>, String> {
        let mut out: Vec<(Option<Op>, Node)> = Vec::new();
        let mut pending: Option<Op> = None;
        loop {
            let node = self.command(in_block)?;
            if let Some(n) = node {
                out.push((pending.take(), n));
            }
            if self.i >= self.s.len() {
                break;
            }
            let c = self.s[self.i];
            match c {
                ')' if in_block => {
                    self.i += 1;
                    return Ok(out);
                }
                '&' => {
                    self.i += 1;
                    if self.s.get(self.i) == Some(&'&') {
                        self.i += 1;
                        pending = Some(Op::And);
                    } else {
                        pending = Some(Op::Seq);
                    }
                }
                '|' => {
                    self.i += 1;
                    if self.s.get(self.i) == Some(&'|') {
                        self.i += 1;
                        pending = Some(Op::Or);
                    } else {
                        pending = Some(Op::Pipe);
                    }
                }
                _ => break,
            }
        }
        if in_block {
            return Err("unbalanced parenthesis".into());
        }
        Ok(out)
    }

    /// One simple command or block.
    fn command(&mut self, in_block: bool) -> Result<Option<Node>, String> {
        let mut text = String::new();
        let mut redirs = Vec::new();
        let mut quote = false;
        let mut at_start = true;
        while self.i < self.s.len() {
            let c = self.s[self.i];
            if c == '\n' {
                self.i = self.s.len();
                break;
            }
            if quote {
                if c == '"' {
                    quote = false;
                }
                text.push(c);
                self.i += 1;
                continue;
            }
            match c {
                '"' => {
                    quote = true;
                    text.push(c);
                    at_start = false;
                    self.i += 1;
                }
                '^' => {
                    self.i += 1;
                    if self.i < self.s.len() && self.s[self.i] != '\n' {
                        text.push(self.s[self.i]);
                        self.i += 1;
                    }
                    at_start = false;
                }
                '&' | '|' => break,
                ')' if in_block => break,
                '(' if at_start => {
                    self.i += 1;
                    let inner = self.list(true)?;
                    return Ok(Some(Node::Block(inner)));
                }
                '<' | '>' => {
                    let mut handle = if c == '<' { 0 } else { 1 };
                    // a single digit right before the operator names the handle
                    let tc: Vec<char> = text.chars().collect();
                    if let Some(&d) = tc.last() {
                        if d.is_ascii_digit() && (tc.len() == 1 || is_cmd_delim(tc[tc.len() - 2])) {
                            handle = d.to_digit(10).unwrap_or(1);
                            text.pop();
                        }
                    }
                    self.i += 1;
                    let mut append = false;
                    if c == '>' && self.s.get(self.i) == Some(&'>') {
                        append = true;
                        self.i += 1;
                    }
                    if self.s.get(self.i) == Some(&'&') {
                        self.i += 1;
                        let mut t = String::new();
                        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                            t.push(self.s[self.i]);
                            self.i += 1;
                        }
                        redirs.push(Redir {
                            handle,
                            append,
                            input: c == '<',
                            target: format!("&{t}"),
                        });
                        continue;
                    }
                    while self.i < self.s.len() && matches!(self.s[self.i], ' ' | '\t') {
                        self.i += 1;
                    }
                    let mut t = String::new();
                    let mut q = false;
                    while self.i < self.s.len() {
                        let d = self.s[self.i];
                        if d == '\n' {
                            break;
                        }
                        if d == '"' {
                            q = !q;
                        } else if !q
                            && (matches!(d, ' ' | '\t' | '&' | '|' | '<' | '>') || (d == ')' && in_block))
                        {
                            break;
                        } else if !q && d == '^' {
                            self.i += 1;
                            if let Some(&e) = self.s.get(self.i) {
                                t.push(e);
                            }
                            self.i += 1;
                            continue;
                        }
                        t.push(d);
                        self.i += 1;
                    }
                    if t.is_empty() {
                        return Err("The syntax of the command is incorrect.".into());
                    }
                    redirs.push(Redir {
                        handle,
                        append,
                        input: c == '<',
                        target: t,
                    });
                }
                _ => {
                    if !(c == ' ' || c == '\t' || c == '@' || (at_start && is_cmd_delim(c))) {
                        at_start = false;
                    }
                    text.push(c);
                    self.i += 1;
                }
            }
        }
        if text.trim_matches([' ', '\t']).is_empty() && redirs.is_empty() {
            return Ok(None);
        }
        Ok(Some(Node::Simple { text, redirs }))
    }
}

/// Phase 2 on a line: stops at the first LF.
fn parse_line(line: &str) -> Result<Vec<(Option<Op>, Node)>, String> {
    let chars: Vec<char> = line.chars().collect();
    let mut p = P2 { s: &chars, i: 0 };
    let r = p.list(false)?;
    if p.i < chars.len() && chars[p.i] != '\n' {
        return Err(format!("{} was unexpected at this time.", chars[p.i]));
    }
    Ok(r)
}

/// Resolves a command name in the virtual directory: an explicit `.com`/`.exe`/`.bat`/`.cmd`
/// name as is, otherwise PATHEXT order `.COM .EXE .BAT .CMD` (case-insensitive).
fn find_file(files: &BTreeMap<String, String>, name: &str) -> Option<String> {
    let get = |f: &str| files.keys().find(|k| k.eq_ignore_ascii_case(f)).cloned();
    let lower = name.to_ascii_lowercase();
    if [".com", ".exe", ".bat", ".cmd"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        if let Some(f) = get(name) {
            return Some(f);
        }
    }
    for e in [".COM", ".EXE", ".BAT", ".CMD"] {
        if let Some(f) = get(&format!("{name}{e}")) {
            return Some(f);
        }
    }
    None
}

/// Batch context for `%0`–`%9` and `%*`.
#[derive(Clone, Debug, Default)]
struct BatchCtx {
    arg0: String,
    args: Vec<String>,
    all: String,
}

/// Splits batch parameters: delimiters space, tab, `,`, `;`, `=` outside quotes; quotes kept.
pub fn batch_params(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut q = false;
    for c in s.chars() {
        if !q && matches!(c, ' ' | '\t' | ',' | ';' | '=') {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c == '"' {
            q = !q;
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

struct Interp<'a> {
    env: Vec<(String, String)>,
    files: &'a mut BTreeMap<String, String>,
    stdout: String,
    error: bool,
    errorlevel: i32,
    launches: Vec<Launch>,
    delayed: bool,
    extensions: bool,
    echo_on: bool,
    locals: Vec<(Vec<(String, String)>, bool)>,
    depth: usize,
    exit: bool,
    out_stack: Vec<String>,
    written: Vec<String>,
}

fn unquote(s: &str) -> String {
    s.chars().filter(|&c| c != '"').collect()
}

impl<'a> Interp<'a> {
    fn get(&self, name: &str) -> Option<String> {
        if let Some((_, v)) = self.env.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)) {
            return Some(v.clone());
        }
        match name.to_ascii_uppercase().as_str() {
            "CD" => Some("C:\\".into()),
            "ERRORLEVEL" => Some(self.errorlevel.to_string()),
            "RANDOM" => Some("4".into()),
            "CMDEXTVERSION" if self.extensions => Some("2".into()),
            _ => None,
        }
    }

    fn set(&mut self, name: &str, value: &str) {
        self.env.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        if !value.is_empty() {
            self.env.push((name.to_string(), value.to_string()));
        }
    }

    /// `name`, `name:~s,l`, `name:a=b`.
    fn lookup(&self, name: &str) -> Option<String> {
        if self.extensions {
            if let Some(colon) = name.find(':') {
                let (base, spec) = (&name[..colon], &name[colon + 1..]);
                if base.is_empty() {
                    return None;
                }
                let v = self.get(base)?;
                if let Some(sub) = spec.strip_prefix('~') {
                    let chars: Vec<char> = v.chars().collect();
                    let n = chars.len() as i64;
                    let (a, b) = match sub.split_once(',') {
                        Some((a, b)) => (a, Some(b)),
                        None => (sub, None),
                    };
                    let parse = |t: &str| -> Option<i64> {
                        if t.trim().is_empty() {
                            Some(0)
                        } else {
                            t.trim().parse().ok()
                        }
                    };
                    let mut s = parse(a)?;
                    if s < 0 {
                        s = (n + s).max(0);
                    }
                    let s = s.min(n);
                    let e = match b {
                        None => n,
                        Some(b) => {
                            let l = parse(b)?;
                            if l < 0 {
                                (n + l).max(s)
                            } else {
                                (s + l).min(n)
                            }
                        }
                    };
                    return Some(chars[s as usize..e.max(s) as usize].iter().collect());
                }
                if let Some((from, to)) = spec.split_once('=') {
                    if from.is_empty() {
                        return Some(v);
                    }
                    let (star, from) = match from.strip_prefix('*') {
                        Some(f) => (true, f),
                        None => (false, from),
                    };
                    let lv = v.to_ascii_lowercase();
                    let lf = from.to_ascii_lowercase();
                    if star {
                        return Some(match lv.find(&lf) {
                            Some(p) => format!("{to}{}", &v[p + from.len()..]),
                            None => v,
                        });
                    }
                    let mut out = String::new();
                    let mut rest = v.as_str();
                    let mut lrest = lv.as_str();
                    while let Some(p) = lrest.find(&lf) {
                        out.push_str(&rest[..p]);
                        out.push_str(to);
                        rest = &rest[p + from.len()..];
                        lrest = &lrest[p + from.len()..];
                    }
                    out.push_str(rest);
                    return Some(out);
                }
                return None;
            }
        }
        self.get(name)
    }

    /// Phase 1, command-line mode.
    fn phase1_cmdline(&self, line: &str) -> String {
        let c: Vec<char> = line.chars().collect();
        let mut out = String::new();
        let mut i = 0;
        while i < c.len() {
            if c[i] != '%' {
                out.push(c[i]);
                i += 1;
                continue;
            }
            match c[i + 1..].iter().position(|&x| x == '%') {
                None => {
                    out.extend(&c[i..]);
                    break;
                }
                Some(p) => {
                    let j = i + 1 + p;
                    let name: String = c[i + 1..j].iter().collect();
                    match (!name.is_empty()).then(|| self.lookup(&name)).flatten() {
                        Some(v) => {
                            out.push_str(&v);
                            i = j + 1;
                        }
                        None => {
                            out.push('%');
                            i += 1;
                        }
                    }
                }
            }
        }
        out
    }

    /// Phase 1, batch mode.
    fn phase1_batch(&self, line: &str, ctx: &BatchCtx) -> String {
        let c: Vec<char> = line.chars().collect();
        let mut out = String::new();
        let mut i = 0;
        let arg = |n: usize| -> String {
            if n == 0 {
                ctx.arg0.clone()
            } else {
                ctx.args.get(n - 1).cloned().unwrap_or_default()
            }
        };
        while i < c.len() {
            if c[i] == '\n' {
                break;
            }
            if c[i] != '%' {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let n = c.get(i + 1).copied();
            match n {
                None => break, // lone trailing % removed
                Some('%') => {
                    out.push('%');
                    i += 2;
                }
                Some(d) if d.is_ascii_digit() => {
                    out.push_str(&arg(d.to_digit(10).unwrap_or(0) as usize));
                    i += 2;
                }
                Some('*') => {
                    out.push_str(&ctx.all);
                    i += 2;
                }
                Some('~') if self.extensions => {
                    let mut j = i + 2;
                    while j < c.len() && "fdpnxsatz".contains(c[j].to_ascii_lowercase()) {
                        j += 1;
                    }
                    if j < c.len() && c[j].is_ascii_digit() {
                        let v = arg(c[j].to_digit(10).unwrap_or(0) as usize);
                        let v = v
                            .strip_prefix('"')
                            .map(|x| x.strip_suffix('"').unwrap_or(x))
                            .unwrap_or(&v);
                        out.push_str(v);
                        i = j + 1;
                    } else {
                        i = self.batch_var(&c, i, &mut out);
                    }
                }
                _ => {
                    i = self.batch_var(&c, i, &mut out);
                }
            }
        }
        out
    }

    fn batch_var(&self, c: &[char], i: usize, out: &mut String) -> usize {
        match c[i + 1..].iter().position(|&x| x == '%' || x == '\n') {
            Some(p) if c[i + 1 + p] == '%' => {
                let j = i + 1 + p;
                let name: String = c[i + 1..j].iter().collect();
                if let Some(v) = self.lookup(&name) {
                    out.push_str(&v);
                }
                j + 1
            }
            _ => i + 1, // no closing %: the % is removed
        }
    }

    /// Phase 5.
    fn delayed_expand(&self, s: &str) -> String {
        if !self.delayed || !s.contains('!') {
            return s.to_string();
        }
        let c: Vec<char> = s.chars().collect();
        let mut out = String::new();
        let mut i = 0;
        while i < c.len() {
            match c[i] {
                '^' => {
                    if i + 1 < c.len() {
                        out.push(c[i + 1]);
                    }
                    i += 2;
                }
                '!' => match c[i + 1..].iter().position(|&x| x == '!') {
                    Some(p) => {
                        let name: String = c[i + 1..i + 1 + p].iter().collect();
                        if let Some(v) = self.lookup(&name) {
                            out.push_str(&v);
                        }
                        i = i + 2 + p;
                    }
                    None => i += 1,
                },
                x => {
                    out.push(x);
                    i += 1;
                }
            }
        }
        out
    }

    fn print(&mut self, s: &str) {
        if let Some(top) = self.out_stack.last_mut() {
            top.push_str(s);
        } else {
            self.stdout.push_str(s);
        }
    }

    fn fail(&mut self, code: i32) {
        self.errorlevel = code;
        self.error = true;
    }

    fn find_file(&self, name: &str) -> Option<String> {
        find_file(self.files, name)
    }

    fn run_list(&mut self, list: &[(Option<Op>, Node)], ctx: Option<&BatchCtx>) {
        let mut last_ok = true;
        for (op, node) in list {
            if self.exit {
                return;
            }
            match op {
                Some(Op::And) if !last_ok => continue,
                Some(Op::Or) if last_ok => continue,
                _ => {}
            }
            self.errorlevel = 0;
            match node {
                Node::Block(inner) => self.run_list(inner, ctx),
                Node::Simple { text, redirs } => self.run_simple(text, redirs, ctx),
            }
            last_ok = self.errorlevel == 0;
        }
    }

    fn run_simple(&mut self, text: &str, redirs: &[Redir], ctx: Option<&BatchCtx>) {
        let mut capture = false;
        for r in redirs {
            if !r.input && r.handle == 1 && !r.target.starts_with('&') {
                capture = true;
            }
        }
        if capture {
            self.out_stack.push(String::new());
        }
        for r in redirs {
            if !r.input && r.handle != 1 && !r.target.starts_with('&') {
                let name = unquote(&r.target);
                self.written.push(name.clone());
                let e = self.files.entry(name).or_default();
                if !r.append {
                    e.clear();
                }
            }
        }
        let text = self.delayed_expand(text);
        self.exec(&text, ctx);
        if capture {
            let data = self.out_stack.pop().unwrap_or_default();
            for r in redirs {
                if !r.input && r.handle == 1 && !r.target.starts_with('&') {
                    let name = unquote(&r.target);
                    self.written.push(name.clone());
                    let e = self.files.entry(name).or_default();
                    if !r.append {
                        e.clear();
                    }
                    e.push_str(&data);
                }
            }
        }
    }

    /// Executes one simple command text (after phases 1, 2 and 5).
    fn exec(&mut self, text: &str, ctx: Option<&BatchCtx>) {
        let c: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < c.len() && (is_cmd_delim(c[i]) || c[i] == '@') {
            i += 1;
        }
        if i >= c.len() {
            return;
        }
        let body: String = c[i..].iter().collect();
        // internal commands recognised by prefix
        let lower = body.to_ascii_lowercase();
        let word_end = |w: &str| -> Option<String> {
            if lower.starts_with(w) {
                let rest = &body[w.len()..];
                match rest.chars().next() {
                    None => Some(String::new()),
                    Some(ch) if " \t.(/\\:;,=+[]".contains(ch) => Some(rest.to_string()),
                    _ => None,
                }
            } else {
                None
            }
        };
        if let Some(rest) = word_end("echo") {
            return self.echo(&rest);
        }
        if word_end("rem").is_some() {
            return;
        }
        if word_end("goto").is_some() {
            return;
        }
        if let Some(rest) = word_end("setlocal") {
            if ctx.is_some() {
                self.locals.push((self.env.clone(), self.delayed));
                for w in rest.split([' ', '\t']).map(|w| w.to_ascii_lowercase()) {
                    match w.as_str() {
                        "enabledelayedexpansion" => self.delayed = true,
                        "disabledelayedexpansion" => self.delayed = false,
                        _ => {}
                    }
                }
            }
            return;
        }
        if word_end("endlocal").is_some() {
            if ctx.is_some() {
                if let Some((env, d)) = self.locals.pop() {
                    self.env = env;
                    self.delayed = d;
                }
            }
            return;
        }
        if let Some(rest) = word_end("set") {
            return self.set_cmd(&rest);
        }
        if let Some(rest) = word_end("for") {
            return self.for_cmd(&rest, ctx);
        }
        if word_end("exit").is_some() {
            self.exit = true;
            return;
        }
        if let Some(rest) = word_end("call") {
            let expanded = match ctx {
                Some(cx) => self.phase1_batch(&rest, cx),
                None => self.phase1_cmdline(&rest),
            };
            let t: String = expanded.chars().skip_while(|&ch| is_cmd_delim(ch)).collect();
            if t.starts_with(':') {
                return; // labels are not supported
            }
            return self.external(&t);
        }
        self.external(&body)
    }

    fn echo(&mut self, rest: &str) {
        let mut ch = rest.chars();
        let first = ch.next();
        let after: String = ch.collect();
        if first.is_none()
            || (matches!(first, Some(' ' | '\t')) && after.trim_matches([' ', '\t']).is_empty())
        {
            let st = if self.echo_on { "on" } else { "off" };
            self.print(&format!("ECHO is {st}.\n"));
            return;
        }
        if matches!(first, Some(' ' | '\t')) {
            let t = after.trim_matches([' ', '\t']).to_ascii_lowercase();
            if t == "on" || t == "off" {
                self.echo_on = t == "on";
                return;
            }
        }
        self.print(&format!("{after}\n"));
    }

    fn set_cmd(&mut self, rest: &str) {
        let r = rest.trim_start_matches([' ', '\t']);
        let r: String = if let Some(x) = r.strip_prefix('"') {
            match x.rfind('"') {
                Some(p) => x[..p].to_string(),
                None => x.to_string(),
            }
        } else {
            r.to_string()
        };
        if r.to_ascii_lowercase().starts_with("/a") || r.to_ascii_lowercase().starts_with("/p") {
            return; // not emulated
        }
        match r.find('=') {
            Some(p) if p > 0 => {
                let (k, v) = (&r[..p], &r[p + 1..]);
                self.set(k, v);
            }
            Some(_) => self.fail(1),
            None => {
                let prefix = r.trim_end_matches([' ', '\t']).to_ascii_lowercase();
                let mut vars: Vec<(String, String)> = self
                    .env
                    .iter()
                    .filter(|(k, _)| k.to_ascii_lowercase().starts_with(&prefix))
                    .cloned()
                    .collect();
                if vars.is_empty() {
                    self.fail(1);
                    return;
                }
                vars.sort_by_key(|(k, _)| k.to_ascii_uppercase());
                for (k, v) in vars {
                    self.print(&format!("{k}={v}\n"));
                }
            }
        }
    }

    fn for_cmd(&mut self, rest: &str, ctx: Option<&BatchCtx>) {
        // FOR /L %X IN (start,step,end) DO command
        let t = rest.trim_start();
        let lower = t.to_ascii_lowercase();
        let Some(after_l) = lower.strip_prefix("/l").map(|_| &t[2..]) else {
            self.fail(1);
            return;
        };
        let a = after_l.trim_start();
        let Some(var) = a.strip_prefix('%').and_then(|x| x.chars().next()) else {
            self.fail(1);
            return;
        };
        let a = a[1 + var.len_utf8()..].trim_start();
        let la = a.to_ascii_lowercase();
        if !la.starts_with("in") {
            self.fail(1);
            return;
        }
        let a = a[2..].trim_start();
        // The set's `)` is the first one after its `(` (a `)` before it is a syntax error).
        let open = a.find('(');
        let close = open.and_then(|o| a[o + 1..].find(')').map(|i| o + 1 + i));
        let (Some(open), Some(close)) = (open, close) else {
            self.fail(1);
            return;
        };
        let nums: Vec<i64> = a[open + 1..close]
            .split([',', ' ', '\t', ';', '='])
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap_or(0))
            .collect();
        let after = a[close + 1..].trim_start();
        if !after.to_ascii_lowercase().starts_with("do") {
            self.fail(1);
            return;
        }
        let body = after[2..].trim_start().to_string();
        let (start, step, end) = (
            nums.first().copied().unwrap_or(0),
            nums.get(1).copied().unwrap_or(0),
            nums.get(2).copied().unwrap_or(0),
        );
        let pat = format!("%{var}");
        let mut v = start;
        let mut guard = 0;
        while (step > 0 && v <= end) || (step < 0 && v >= end) {
            let b = body.replace(&pat, &v.to_string());
            if self.echo_on && !b.starts_with('@') {
                self.print(&format!("\nC:\\>{b}\n"));
            }
            match parse_line(&b) {
                Ok(list) => self.run_list(&list, ctx),
                Err(_) => self.fail(1),
            }
            v += step;
            guard += 1;
            if guard > 100_000 || self.exit {
                break;
            }
        }
    }

    /// Command token, resolution, and batch/child/external launch.
    fn external(&mut self, body: &str) {
        let c: Vec<char> = body.chars().collect();
        let mut i = 0;
        let mut q = false;
        while i < c.len() {
            let ch = c[i];
            if ch == '"' {
                q = !q;
            } else if !q && (is_cmd_delim(ch) || ch == '(') {
                break;
            }
            i += 1;
        }
        let token: String = c[..i].iter().collect();
        let rest: String = c[i..].iter().collect();
        let name = unquote(&token);
        if name.is_empty() {
            return;
        }
        let found = self.find_file(&name);
        let lname = name.to_ascii_lowercase();
        match found {
            Some(f)
                if f.to_ascii_lowercase().ends_with(".bat") || f.to_ascii_lowercase().ends_with(".cmd") =>
            {
                let content = self.files.get(&f).cloned().unwrap_or_default();
                let all: String = rest.trim_start_matches([' ', '\t']).to_string();
                let bctx = BatchCtx {
                    arg0: token.clone(),
                    args: batch_params(&rest),
                    all,
                };
                self.run_batch(&content, &bctx);
            }
            Some(f) => {
                self.launches.push(Launch {
                    program: f,
                    command_line: body.to_string(),
                });
            }
            None if lname == "cmd" || lname == "cmd.exe" || lname.ends_with("\\cmd.exe") => {
                if self.depth > 16 {
                    self.fail(1);
                    return;
                }
                let files_snapshot = self.files.clone();
                let mut files = files_snapshot;
                let opts = CmdOptions {
                    env: self.env.clone(),
                    files: files.clone(),
                    delayed: self.delayed,
                };
                let r = run_cmdline_inner(body, &opts, &mut files, self.depth + 1);
                *self.files = files;
                let out = r.stdout;
                self.print(&out);
                self.launches.extend(r.launches);
                self.written.extend(r.files_written);
                if r.error {
                    self.fail(1);
                }
            }
            None => {
                self.fail(9009);
            }
        }
    }

    fn run_batch(&mut self, content: &str, ctx: &BatchCtx) {
        if self.depth > 32 {
            self.fail(1);
            return;
        }
        self.depth += 1;
        let saved_locals = self.locals.len();
        for raw in content.split('\n') {
            if self.exit {
                break;
            }
            let line: String = raw.chars().filter(|&ch| ch != '\r').collect();
            let trimmed = line.trim_start_matches(|ch: char| is_cmd_delim(ch));
            if trimmed.starts_with(':') || trimmed.is_empty() {
                continue;
            }
            let expanded = self.phase1_batch(&line, ctx);
            if utf16_len(&expanded) > CMD_MAX {
                self.fail(1);
                continue;
            }
            let t = expanded.trim_start_matches(|ch: char| is_cmd_delim(ch));
            if self.echo_on && !t.starts_with('@') {
                self.print(&format!("\nC:\\>{}\n", t.trim_end()));
            }
            match parse_line(&expanded) {
                Ok(list) => self.run_list(&list, Some(ctx)),
                Err(_) => self.fail(1),
            }
        }
        while self.locals.len() > saved_locals {
            if let Some((env, d)) = self.locals.pop() {
                self.env = env;
                self.delayed = d;
            }
        }
        self.depth -= 1;
    }
}

/// Runs a full cmd.exe command line (`cmd.exe [switches] /c …`).
pub fn run_cmdline(cmdline: &str, opts: &CmdOptions) -> CmdResult {
    let mut files = opts.files.clone();
    run_cmdline_inner(cmdline, opts, &mut files, 0)
}

fn run_cmdline_inner(
    cmdline: &str,
    opts: &CmdOptions,
    files: &mut BTreeMap<String, String>,
    depth: usize,
) -> CmdResult {
    let mut res = CmdResult::default();
    if utf16_len(cmdline) > CMD_MAX {
        res.too_long = true;
        res.error = true;
        return res;
    }
    let snapshot = files.clone();
    let exists = |n: &str| find_file(&snapshot, n).is_some();
    let Some((sw, s)) = extract(cmdline, &exists) else {
        res.delayed = opts.delayed;
        return res; // interactive: nothing executes from the command line
    };
    let (s, truncated) = match s.find('\n') {
        Some(p) => (s[..p].to_string(), true),
        None => (s, false),
    };
    res.executes = s.clone();
    res.truncated = truncated;
    let delayed = sw.v.unwrap_or(opts.delayed);
    res.delayed = delayed;
    let mut it = Interp {
        env: opts.env.clone(),
        files,
        stdout: String::new(),
        error: false,
        errorlevel: 0,
        launches: Vec::new(),
        delayed,
        extensions: !sw.e_off,
        echo_on: !sw.q,
        locals: Vec::new(),
        depth,
        exit: false,
        out_stack: Vec::new(),
        written: Vec::new(),
    };
    let expanded = it.phase1_cmdline(&s);
    res.expanded = expanded.clone();
    if utf16_len(&expanded) > CMD_MAX {
        res.too_long = true;
        res.error = true;
        return res;
    }
    match parse_line(&expanded) {
        Ok(list) => it.run_list(&list, None),
        Err(_) => it.fail(1),
    }
    res.stdout = it.stdout;
    res.error = it.error;
    res.launches = it.launches;
    res.files_written = it.written;
    res
}

/// Runs one line of a batch file (echo off, no batch parameters), the mode of Wine's
/// `test_cmdline.cmd` vectors.
pub fn run_batch_line(line: &str, opts: &CmdOptions) -> CmdResult {
    let mut files = opts.files.clone();
    let mut it = Interp {
        env: opts.env.clone(),
        files: &mut files,
        stdout: String::new(),
        error: false,
        errorlevel: 0,
        launches: Vec::new(),
        delayed: opts.delayed,
        extensions: true,
        echo_on: false,
        locals: Vec::new(),
        depth: 0,
        exit: false,
        out_stack: Vec::new(),
        written: Vec::new(),
    };
    let ctx = BatchCtx::default();
    let expanded = it.phase1_batch(line, &ctx);
    let mut res = CmdResult {
        executes: line.to_string(),
        expanded: expanded.clone(),
        delayed: opts.delayed,
        ..Default::default()
    };
    if utf16_len(&expanded) > CMD_MAX {
        res.too_long = true;
        res.error = true;
        return res;
    }
    match parse_line(&expanded) {
        Ok(list) => it.run_list(&list, Some(&ctx)),
        Err(_) => it.fail(1),
    }
    res.truncated = line.contains('\n');
    res.stdout = it.stdout;
    res.error = it.error;
    res.launches = it.launches;
    res.files_written = it.written;
    res
}
