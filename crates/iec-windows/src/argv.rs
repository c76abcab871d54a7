//! MSVC-family argv parsers: UCRT (2008+), pre-2008 msvcrt and CommandLineToArgvW.
//!
//! Spec: `docs/spec/windows-receivers.md` §1 (UCRT, pre-2008) and §2 (CommandLineToArgvW).

/// Placeholder for `GetModuleFileNameW(NULL)` returned for an empty command line.
pub const DEFAULT_MODULE_NAME: &str = "TEST.EXE";

fn is_ws(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// The command line as the receiver sees it: a string ends at its first NUL.
fn until_nul(cmdline: &str) -> Vec<char> {
    cmdline.chars().take_while(|&c| c != '\0').collect()
}

/// UCRT / VS2008+ rules (spec §1 `ucrt_parse`).
pub fn ucrt(cmdline: &str, module: &str) -> Vec<String> {
    let cl = until_nul(cmdline);
    if cl.is_empty() {
        return vec![module.to_string()];
    }
    let mut i = 0;
    let mut in_q = false;
    let mut cur = String::new();
    // argv[0]: quotes only toggle, no escapes
    while i < cl.len() {
        let c = cl[i];
        i += 1;
        if c == '"' {
            in_q = !in_q;
            continue;
        }
        if is_ws(c) && !in_q {
            break;
        }
        cur.push(c);
    }
    let mut argv = vec![cur];
    while i < cl.len() && is_ws(cl[i]) {
        i += 1;
    }
    parse_args_2008(&cl[i..], &mut argv);
    argv
}

/// Arguments after argv[0] under the 2008+ rules.
pub(crate) fn parse_args_2008(cl: &[char], argv: &mut Vec<String>) {
    let mut i = 0;
    let mut cur = String::new();
    let mut in_q = false;
    let mut have = false; // an argument has started (needed for "" → empty arg)
    while i < cl.len() {
        let c = cl[i];
        i += 1;
        match c {
            ' ' | '\t' if !in_q => {
                if have || !cur.is_empty() {
                    argv.push(std::mem::take(&mut cur));
                }
                have = false;
                while i < cl.len() && is_ws(cl[i]) {
                    i += 1;
                }
            }
            '\\' => {
                let mut n = 1;
                while i < cl.len() && cl[i] == '\\' {
                    n += 1;
                    i += 1;
                }
                if i < cl.len() && cl[i] == '"' {
                    push_n(&mut cur, '\\', n / 2);
                    if n % 2 == 1 {
                        i += 1;
                        cur.push('"');
                    }
                } else {
                    push_n(&mut cur, '\\', n);
                }
            }
            '"' if in_q => match cl.get(i) {
                Some('"') => {
                    i += 1;
                    cur.push('"');
                }
                Some(_) => in_q = false,
                None => {}
            },
            '"' => {
                in_q = true;
                have = true;
            }
            _ => cur.push(c),
        }
    }
    if have || !cur.is_empty() || in_q {
        argv.push(cur);
    }
}

fn push_n(s: &mut String, c: char, n: usize) {
    for _ in 0..n {
        s.push(c);
    }
}

/// Pre-2008 msvcrt rules (spec §1 "Pre-2008 difference"): `""` inside quotes gives a literal
/// quote and leaves quoted mode; argv[0] runs to the next quote when it starts with one,
/// otherwise to the first character `<= ' '`.
pub fn pre2008(cmdline: &str, module: &str) -> Vec<String> {
    let cl = until_nul(cmdline);
    if cl.is_empty() {
        return vec![module.to_string()];
    }
    let mut i;
    let argv0: String;
    if cl[0] == '"' {
        let end = cl[1..].iter().position(|&c| c == '"').map(|p| p + 1);
        match end {
            Some(e) => {
                argv0 = cl[1..e].iter().collect();
                i = e + 1;
            }
            None => {
                argv0 = cl[1..].iter().collect();
                i = cl.len();
            }
        }
    } else {
        let e = cl.iter().position(|&c| c <= ' ').unwrap_or(cl.len());
        argv0 = cl[..e].iter().collect();
        // the terminating character is consumed
        i = (e + 1).min(cl.len());
    }
    let mut argv = vec![argv0];
    while i < cl.len() && is_ws(cl[i]) {
        i += 1;
    }
    let cl = &cl[i..];
    let mut i = 0;
    let mut cur = String::new();
    let mut in_q = false;
    let mut have = false;
    while i < cl.len() {
        let c = cl[i];
        i += 1;
        match c {
            ' ' | '\t' if !in_q => {
                if have || !cur.is_empty() {
                    argv.push(std::mem::take(&mut cur));
                }
                have = false;
                while i < cl.len() && is_ws(cl[i]) {
                    i += 1;
                }
            }
            '\\' => {
                let mut n = 1;
                while i < cl.len() && cl[i] == '\\' {
                    n += 1;
                    i += 1;
                }
                if i < cl.len() && cl[i] == '"' {
                    push_n(&mut cur, '\\', n / 2);
                    if n % 2 == 1 {
                        i += 1;
                        cur.push('"');
                    }
                } else {
                    push_n(&mut cur, '\\', n);
                }
            }
            '"' if in_q => {
                if cl.get(i) == Some(&'"') {
                    i += 1;
                    cur.push('"');
                }
                in_q = false;
            }
            '"' => {
                in_q = true;
                have = true;
            }
            _ => cur.push(c),
        }
    }
    if have || !cur.is_empty() {
        argv.push(cur);
    }
    argv
}

/// shell32 `CommandLineToArgvW` (spec §2 `cl2a`, Wine's algorithm).
pub fn commandlinetoargvw(cmdline: &str, module: &str) -> Vec<String> {
    let cl = until_nul(cmdline);
    if cl.is_empty() {
        return vec![module.to_string()];
    }
    let mut s;
    let argv0: String;
    if cl[0] == '"' {
        match cl[1..].iter().position(|&c| c == '"') {
            Some(p) => {
                argv0 = cl[1..p + 1].iter().collect();
                s = p + 2;
            }
            None => {
                argv0 = cl[1..].iter().collect();
                s = cl.len();
            }
        }
    } else {
        let e = cl.iter().position(|&c| is_ws(c)).unwrap_or(cl.len());
        argv0 = cl[..e].iter().collect();
        s = e;
    }
    let mut argv = vec![argv0];
    while s < cl.len() && is_ws(cl[s]) {
        s += 1;
    }
    if s >= cl.len() {
        return argv;
    }
    let mut d: Vec<char> = Vec::new();
    let mut qcount = 0u32;
    let mut bcount = 0usize;
    while s < cl.len() {
        let c = cl[s];
        if is_ws(c) && qcount == 0 {
            argv.push(d.drain(..).collect());
            bcount = 0;
            while s < cl.len() && is_ws(cl[s]) {
                s += 1;
            }
            if s >= cl.len() {
                return argv;
            }
        } else if c == '\\' {
            d.push(c);
            bcount += 1;
            s += 1;
        } else if c == '"' {
            if bcount % 2 == 0 {
                let l = d.len() - bcount / 2;
                d.truncate(l);
                qcount += 1;
            } else {
                let l = d.len() - bcount / 2 - 1;
                d.truncate(l);
                d.push('"');
            }
            s += 1;
            bcount = 0;
            while s < cl.len() && cl[s] == '"' {
                qcount += 1;
                if qcount == 3 {
                    d.push('"');
                    qcount = 0;
                }
                s += 1;
            }
            if qcount == 2 {
                qcount = 0;
            }
        } else {
            d.push(c);
            s += 1;
            bcount = 0;
        }
    }
    argv.push(d.into_iter().collect());
    argv
}
