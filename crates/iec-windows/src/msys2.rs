//! MSYS2 / Cygwin incoming argv (spec §6.1): `build_argv`, `quoted`, `globify`, `insert_file`
//! from `msys2/msys2-runtime` `winsup/cygwin/dcrt0.cc`, and the parts of `glob.cc` that matter
//! (GLOB_QUOTE protection with the 8,186-character cut, GLOB_BRACE, GLOB_TILDE, GLOB_NOCHECK).
//! Globbing matches against a virtual file list; nothing touches the real file system.

use std::collections::BTreeMap;

/// Pattern characters kept by `glob()`: `patbuf[8192]`, stop when fewer than MB_CUR_MAX (6)
/// slots remain before `patbuf + 8191`.
pub const GLOB_PATTERN_MAX: usize = 8186;
const MAX_AT_FILE_LEVEL: usize = 10;

/// Inputs of the MSYS2 argv builder.
#[derive(Clone, Debug)]
pub struct Msys2Options<'a> {
    /// Globbing on (default) or `MSYS=noglob`.
    pub glob: bool,
    /// Virtual files: relative POSIX path → content (globbing and `@file`).
    pub files: &'a BTreeMap<String, String>,
    /// `HOME` for `~` (tilde left alone when `None`).
    pub home: Option<&'a str>,
    /// MSYS2 root, used to convert a Windows argv[0] to POSIX form.
    pub root: &'a str,
}

fn issep(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\0')
}

/// `build_argv` with `winshell = 1` (the parent is not an MSYS2 process).
pub fn build_argv(cmdline: &str, o: &Msys2Options) -> Vec<String> {
    let mut cmd: Vec<char> = cmdline.chars().take_while(|&c| c != '\0').collect();
    let mut argv: Vec<String> = Vec::new();
    let mut pos = 0usize;
    let mut level = 0usize;
    loop {
        while pos < cmd.len() && issep(cmd[pos]) {
            pos += 1;
        }
        if pos >= cmd.len() {
            break;
        }
        let word_start = pos;
        let mut sawquote: Option<usize> = None;
        while pos < cmd.len() && !issep(cmd[pos]) {
            let c = cmd[pos];
            if c == '"' || c == '\'' {
                sawquote = Some(pos);
                let simple = argv.is_empty() || cmd[word_start] == '@' || !o.glob;
                pos = quoted(&mut cmd, pos, simple);
            } else {
                pos += 1;
            }
        }
        let word: String = cmd[word_start..pos].iter().collect();
        let after = (pos + 1).min(cmd.len());
        if !argv.is_empty()
            && sawquote != Some(word_start)
            && word.starts_with('@')
            && level < MAX_AT_FILE_LEVEL
        {
            if let Some(content) = o.files.get(&word[1..]) {
                level += 1;
                let mut next: Vec<char> = content.chars().take_while(|&c| c != '\0').collect();
                next.push(' ');
                next.extend_from_slice(&cmd[after..]);
                cmd = next;
                pos = 0;
                continue;
            }
        }
        pos = after;
        if o.glob && !argv.is_empty() {
            if let Some(g) = globify(&word, o) {
                argv.extend(g);
                continue;
            }
        }
        argv.push(word);
    }
    if let Some(a0) = argv.first_mut() {
        if a0.contains(':') || a0.contains('\\') {
            *a0 = win_to_posix(a0, o.root);
        }
    }
    argv
}

/// `cygwin_conv_path(CCP_WIN_A_TO_POSIX)` approximation: paths under the root lose it, other
/// drive paths become `/x/...`.
pub fn win_to_posix(p: &str, root: &str) -> String {
    let norm = p.replace('\\', "/");
    let r = root.replace('\\', "/");
    let r = r.trim_end_matches('/');
    if norm.get(..r.len()).is_some_and(|p| p.eq_ignore_ascii_case(r)) {
        let rest = &norm[r.len()..];
        if rest.is_empty() {
            return "/".into();
        }
        if rest.starts_with('/') {
            if let Some(b) = rest.strip_prefix("/usr/bin/") {
                return format!("/usr/bin/{b}");
            }
            return rest.to_string();
        }
    }
    let b = norm.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return format!("/{}{}", (b[0] as char).to_ascii_lowercase(), &norm[2..]);
    }
    norm
}

/// `quoted()`; `cmd[pos]` is the opening quote. Returns the index after the quoted region.
fn quoted(cmd: &mut Vec<char>, pos: usize, simple: bool) -> usize {
    let q = cmd[pos];
    if simple {
        cmd.remove(pos);
        match cmd[pos..].iter().position(|&c| c == q) {
            Some(p) => {
                cmd.remove(pos + p);
                pos + p
            }
            None => cmd.len(),
        }
    } else {
        let mut i = pos + 1;
        while i < cmd.len() {
            let c = cmd[i];
            if q == '"' && c == '\\' {
                i += 2;
                continue;
            }
            if c == q {
                if q == '"' && cmd.get(i + 1) == Some(&'"') {
                    cmd[i] = '\\';
                    i += 2;
                    continue;
                }
                return i + 1;
            }
            i += 1;
        }
        cmd.len()
    }
}

fn isdrive(w: &[char]) -> bool {
    w.len() >= 2 && w[0].is_ascii_alphabetic() && w[1] == ':'
}

fn isquote(c: char) -> bool {
    c == '"' || c == '\''
}

/// A pattern character with its GLOB_QUOTE protection bit.
type PChar = (char, bool);

/// `globify()`. `None` means the word is kept verbatim.
pub fn globify(word: &str, o: &Msys2Options) -> Option<Vec<String>> {
    let w: Vec<char> = word.chars().collect();
    if w.first() != Some(&'~') && !w.iter().any(|c| "?*[\"'(){}".contains(*c)) {
        return None;
    }
    let mut dos = isdrive(&w) || (w.len() > 1 && w[1] == '\\' && w[0] == '\\');
    if !dos && !w.is_empty() && isquote(w[0]) && w.len() > 2 {
        dos = isdrive(&w[1..]);
    }
    let mut pat: Vec<char> = Vec::new();
    let mut s = 0;
    while s < w.len() {
        let c = w[s];
        if !isquote(c) {
            if dos && c == '\\' {
                pat.push('\\');
            }
            pat.push(c);
            s += 1;
            continue;
        }
        let q = c;
        s += 1;
        while s < w.len() && w[s] != q {
            if !dos && w[s] == '\\' && s + 1 < w.len() && (w[s + 1] == q || w[s + 1] == '\\') {
                s += 1;
            }
            pat.push('\\');
            pat.push(w[s]);
            s += 1;
        }
        if s >= w.len() {
            break;
        }
        s += 1; // closing quote
    }
    // glob(): GLOB_QUOTE copy into the pattern buffer with the length cut.
    let mut p: Vec<PChar> = Vec::new();
    let mut i = 0;
    while i < pat.len() && p.len() < GLOB_PATTERN_MAX {
        if pat[i] == '\\' {
            if i + 1 < pat.len() {
                p.push((pat[i + 1], true));
                i += 2;
            } else {
                p.push(('\\', true));
                i += 1;
            }
        } else {
            p.push((pat[i], false));
            i += 1;
        }
    }
    let mut out = Vec::new();
    for alt in brace_expand(&p) {
        out.extend(glob0(&alt, o));
    }
    Some(out)
}

fn unprot(p: &[PChar], i: usize, c: char) -> bool {
    p.get(i).is_some_and(|&(x, prot)| x == c && !prot)
}

/// GLOB_BRACE expansion (globexp1/globexp2).
fn brace_expand(p: &[PChar]) -> Vec<Vec<PChar>> {
    if p.len() == 2 && unprot(p, 0, '{') && unprot(p, 1, '}') {
        return vec![p.to_vec()];
    }
    let Some(lb) = (0..p.len()).find(|&i| unprot(p, i, '{')) else {
        return vec![p.to_vec()];
    };
    // find the matching close brace, skipping [..]
    let mut depth = 0;
    let mut i = lb;
    let mut rb = None;
    while i < p.len() {
        if unprot(p, i, '[') {
            if let Some(j) = (i + 1..p.len()).find(|&j| unprot(p, j, ']')) {
                i = j + 1;
                continue;
            }
        }
        if unprot(p, i, '{') {
            depth += 1;
        } else if unprot(p, i, '}') {
            depth -= 1;
            if depth == 0 {
                rb = Some(i);
                break;
            }
        }
        i += 1;
    }
    let Some(rb) = rb else {
        return vec![p.to_vec()];
    };
    let mut alts: Vec<&[PChar]> = Vec::new();
    let mut depth = 0;
    let mut start = lb + 1;
    for j in lb + 1..rb {
        if unprot(p, j, '{') {
            depth += 1;
        } else if unprot(p, j, '}') {
            depth -= 1;
        } else if depth == 0 && unprot(p, j, ',') {
            alts.push(&p[start..j]);
            start = j + 1;
        }
    }
    alts.push(&p[start..rb]);
    let mut out = Vec::new();
    for a in alts {
        let mut v = p[..lb].to_vec();
        v.extend_from_slice(a);
        v.extend_from_slice(&p[rb + 1..]);
        out.extend(brace_expand(&v));
    }
    out
}

fn plain(p: &[PChar]) -> String {
    p.iter().map(|&(c, _)| c).collect()
}

/// glob0: tilde, then match against the virtual files; NOCHECK returns the de-quoted pattern.
fn glob0(p: &[PChar], o: &Msys2Options) -> Vec<String> {
    let mut p = p.to_vec();
    if unprot(&p, 0, '~') {
        if let Some(home) = o.home {
            let end = p.iter().position(|&(c, _)| c == '/').unwrap_or(p.len());
            if end == 1 {
                let mut v: Vec<PChar> = home.chars().map(|c| (c, true)).collect();
                v.extend_from_slice(&p[1..]);
                p = v;
            }
        }
    }
    let magic = p.iter().any(|&(c, prot)| !prot && matches!(c, '*' | '?' | '['));
    if magic {
        let mut m: Vec<String> = o
            .files
            .keys()
            .filter(|f| path_match(&p, &f.chars().collect::<Vec<_>>()))
            .cloned()
            .collect();
        if !m.is_empty() {
            m.sort();
            return m;
        }
    }
    vec![plain(&p)]
}

fn path_match(p: &[PChar], name: &[char]) -> bool {
    let psegs: Vec<&[PChar]> = p.split(|&(c, _)| c == '/').collect();
    let nsegs: Vec<&[char]> = name.split(|&c| c == '/').collect();
    psegs.len() == nsegs.len()
        && psegs.iter().zip(nsegs.iter()).all(|(ps, ns)| {
            // hidden names need an explicit leading dot in the pattern
            let has_magic = ps.iter().any(|&(c, prot)| !prot && matches!(c, '*' | '?' | '['));
            let dot_in_pattern = ps.first().map(|&(c, _)| c) == Some('.');
            if ns.first() == Some(&'.') && has_magic && !dot_in_pattern {
                return false;
            }
            seg_match(ps, ns)
        })
}

fn seg_match(p: &[PChar], n: &[char]) -> bool {
    if p.is_empty() {
        return n.is_empty();
    }
    let (c, prot) = p[0];
    if !prot && c == '*' {
        return (0..=n.len()).any(|k| seg_match(&p[1..], &n[k..]));
    }
    if n.is_empty() {
        return false;
    }
    if !prot && c == '?' {
        return seg_match(&p[1..], &n[1..]);
    }
    if !prot && c == '[' {
        // character class
        let mut j = 1;
        let negate = p.get(1).is_some_and(|&(x, pr)| !pr && (x == '!' || x == '^'));
        if negate {
            j += 1;
        }
        let mut ok = false;
        let mut first = true;
        while j < p.len() {
            let (x, pr) = p[j];
            if !pr && x == ']' && !first {
                let hit = ok != negate;
                return hit && seg_match(&p[j + 1..], &n[1..]);
            }
            first = false;
            if j + 2 < p.len() && p[j + 1] == ('-', false) && p[j + 2] != (']', false) {
                let hi = p[j + 2].0;
                if x <= n[0] && n[0] <= hi {
                    ok = true;
                }
                j += 3;
            } else {
                if x == n[0] {
                    ok = true;
                }
                j += 1;
            }
        }
        // no closing bracket: '[' is literal
        return n[0] == '[' && seg_match(&p[1..], &n[1..]);
    }
    c == n[0] && seg_match(&p[1..], &n[1..])
}
