//! MSYS2 outgoing argument path conversion (spec §6.3), a port of the `convert()` heuristic in
//! `msys2/msys2-runtime` `winsup/cygwin/msys2_path_conv.cc` (same algorithm as the test copy in
//! `msys2/path_convert` `src/path_conv.cpp`). The mount table is emulated: `/` → root,
//! `/bin/…` → `root/usr/bin/…`, `/dev/null` → `nul`, anything else → `root` + path.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PathType {
    None,
    SimpleWindowsPath,
    EscapeWindowsPath,
    WindowsPathList,
    Unc,
    EscapedPath,
    RootedPath,
    PosixPathList,
    RelativePath,
    Url,
}

struct Conv<'a> {
    s: &'a [char],
    root: &'a str,
    dst: Vec<char>,
}

fn isspace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

impl Conv<'_> {
    fn at(&self, i: usize) -> char {
        self.s.get(i).copied().unwrap_or('\0')
    }

    /// `memchr(from, c, n)` clamped to the string.
    fn memchr(&self, from: usize, c: char, n: isize) -> bool {
        if n <= 0 {
            return false;
        }
        let end = (from + n as usize).min(self.s.len());
        from < end && self.s[from..end].contains(&c)
    }

    fn copy(&mut self, from: usize, to: usize) {
        let to = to.min(self.s.len());
        if from < to {
            self.dst.extend_from_slice(&self.s[from..to]);
        }
    }

    fn find_path_start_and_type(&self, src: &mut usize, end: usize) -> PathType {
        let mut it = *src;
        if it >= self.s.len() || it == end {
            return PathType::None;
        }
        let c = self.at(it);
        if !c.is_ascii_alphanumeric() && !matches!(c, '/' | '\\' | ':' | '-' | '.') {
            *src += 1;
            return self.find_path_start_and_type(src, end);
        }
        let result = PathType::None;
        if c.is_ascii_alphabetic() && self.at(it + 1) == ':' {
            if self.at(it + 2) == '\\' {
                return PathType::SimpleWindowsPath;
            }
            let n = end as isize - (it + 2) as isize;
            if self.at(it + 2) == '/' && !self.memchr(it + 2, ':', n) {
                return PathType::SimpleWindowsPath;
            }
            if self.at(it + 2) == '/' && self.memchr(it + 2, ';', n) {
                return PathType::WindowsPathList;
            }
        }
        if c == '.'
            && (self.at(it + 1) == '.' || self.at(it + 1) == '/')
            && !self.memchr(it + 2, ':', end as isize - (it + 2) as isize)
        {
            return PathType::RelativePath;
        }
        if c == '/' {
            it += 1;
            if self.at(it).is_ascii_alphabetic() && self.at(it + 1) == ':' {
                return PathType::EscapeWindowsPath;
            }
            if self.at(it) == '.' && self.at(it + 1) == '.' {
                return PathType::SimpleWindowsPath;
            }
            if self.at(it) == '/' {
                it += 1;
                match self.at(it) {
                    ':' => return PathType::Url,
                    '/' => return PathType::EscapedPath,
                    _ => {}
                }
                if self.memchr(it, '/', end as isize - it as isize) {
                    return PathType::Unc;
                } else {
                    return PathType::EscapedPath;
                }
            }
            while it < self.s.len() && it != end {
                match self.at(it) {
                    ':' => {
                        let ch = self.at(it + 1);
                        if ch == '/' || ch == ':' || ch == '.' {
                            return PathType::PosixPathList;
                        }
                        // C fallthrough into ';'
                        return PathType::WindowsPathList;
                    }
                    ';' => return PathType::WindowsPathList,
                    _ => {}
                }
                it += 1;
            }
            return PathType::RootedPath;
        }

        let mut starts_with_minus = false;
        let mut starts_with_minus_alpha = false;
        if c == '-' {
            starts_with_minus = true;
            it += 1;
            if self.at(it).is_ascii_alphabetic() {
                it += 1;
                starts_with_minus_alpha = true;
                if self.memchr(it, ';', end as isize - it as isize) {
                    return PathType::WindowsPathList;
                }
            }
        }
        let mut it2 = it;
        while it2 < self.s.len() && it2 != end {
            let mut ch = self.at(it2);
            if starts_with_minus_alpha {
                if ch.is_ascii_alphabetic() && self.at(it2 + 1) == ':' && self.at(it2 + 2) == '/' {
                    return PathType::SimpleWindowsPath;
                }
                if ch == '/' && !self.memchr(it2, ',', end as isize - it as isize) {
                    *src = it2;
                    return self.find_path_start_and_type(src, end);
                }
                starts_with_minus_alpha = false;
            }
            if ch == '\'' || ch == '"' {
                starts_with_minus = false;
            }
            if ch == '='
                || (ch == ':' && starts_with_minus)
                || ((ch == '\'' || ch == '"') && result == PathType::None)
            {
                *src = it2 + 1;
                return self.find_path_start_and_type(src, end);
            }
            if ch == ',' && starts_with_minus {
                *src = it2 + 1;
                return self.find_path_start_and_type(src, end);
            }
            if ch == ':' && it2 + 1 != end {
                it2 += 1;
                ch = self.at(it2);
                if ch == '/' || ch == ':' || ch == '.' {
                    if ch == '/' && self.at(it2 + 1) == '/' {
                        return PathType::Url;
                    } else {
                        return PathType::PosixPathList;
                    }
                } else if !self.memchr(it2, '=', end as isize - it as isize) {
                    return PathType::SimpleWindowsPath;
                }
            }
            it2 += 1;
        }
        PathType::SimpleWindowsPath
    }

    fn convert_path(&mut self, from: &mut usize, to: usize, t: PathType) {
        match t {
            PathType::SimpleWindowsPath | PathType::WindowsPathList | PathType::RelativePath => {
                self.copy(*from, to)
            }
            PathType::EscapeWindowsPath | PathType::EscapedPath => {
                *from += 1;
                self.unc(*from, to);
            }
            PathType::Unc | PathType::Url => self.unc(*from, to),
            PathType::RootedPath => self.rooted(*from, to),
            PathType::PosixPathList => self.ppl(*from, to),
            PathType::None => {}
        }
    }

    fn unc(&mut self, from: usize, to: usize) {
        let to = to.min(self.s.len());
        for i in from..to {
            let c = self.s[i];
            self.dst.push(if c == '\\' { '/' } else { c });
        }
    }

    fn rooted(&mut self, from: usize, to: usize) {
        let mut real_to = to;
        if to >= self.s.len() && to > 0 {
            let c = self.at(to - 1);
            if c == '\'' || c == '"' {
                real_to = to - 1;
            }
        }
        let path: String = self.s[from.min(real_to)..real_to.min(self.s.len())]
            .iter()
            .collect();
        if path == "/dev/null" {
            self.dst.extend("nul".chars());
        } else if !path.is_empty() {
            let w = posix_to_win32(&path, self.root);
            self.dst.extend(w.chars());
        }
        if real_to != to {
            let c = self.at(real_to);
            self.dst.push(c);
        }
    }

    fn subp(&mut self, from: usize, end: usize, is_url: bool) {
        let mut f = from;
        let t = if is_url {
            PathType::Url
        } else {
            self.find_path_start_and_type(&mut f, end)
        };
        self.copy(from, f);
        if t == PathType::None {
            return;
        }
        let start = self.dst.len();
        self.convert_path(&mut f, end, t);
        if !is_url {
            for c in &mut self.dst[start..] {
                if *c == '/' {
                    *c = '\\';
                }
            }
        }
    }

    fn ppl(&mut self, from: usize, to: usize) {
        let mut it = from;
        let mut beg = it;
        let mut prev_was_simc = false;
        let mut is_url = false;
        while it < self.s.len() && it != to {
            if self.s[it] == ':' {
                if prev_was_simc {
                    it += 1;
                    continue;
                }
                if self.at(it + 1) == '/' && self.at(it + 2) == '/' && self.at(beg).is_ascii_alphabetic() {
                    is_url = self.s[beg..it]
                        .iter()
                        .all(|c| c.is_ascii_alphanumeric() || *c == '+');
                    if is_url {
                        it += 1;
                        continue;
                    }
                }
                prev_was_simc = true;
                self.subp(beg, it, is_url);
                is_url = false;
                self.dst.push(';');
            }
            if self.s[it] != ':' && prev_was_simc {
                prev_was_simc = false;
                beg = it;
            }
            it += 1;
        }
        if !prev_was_simc {
            self.subp(beg, it, is_url);
        } else {
            self.dst.pop();
        }
    }

    fn find_end_of_rooted_path(&self, from: usize, to: &mut usize, in_string: &mut char) {
        let mut it = from;
        while it < self.s.len() && it != *to {
            if self.s[it] == '.' && self.at(it + 1) == '.' && it > 0 && self.s[it - 1] == '/' {
                *to = it - 1;
                return;
            }
            it += 1;
        }
        while *to < self.s.len() {
            let c = self.s[*to];
            if *in_string == '\0' && c == ' ' {
                return;
            }
            if c == *in_string {
                *in_string = '\0';
                return;
            }
            if c == '/' && *to > 0 && self.s[*to - 1] == ' ' {
                *to -= 1;
                return;
            }
            *to += 1;
        }
    }

    fn find_end_of_posix_list(&self, to: &mut usize, in_string: &mut char) {
        while *to < self.s.len() && self.s[*to] != *in_string {
            *to += 1;
        }
        if self.at(*to) == *in_string {
            *in_string = '\0';
        }
    }

    fn sub_convert(&mut self, from: &mut usize, to: &mut usize, in_string: &mut char) {
        let copy_from = *from;
        let t = self.find_path_start_and_type(from, *to);
        if t == PathType::PosixPathList {
            self.find_end_of_posix_list(to, in_string);
        }
        if t == PathType::RootedPath {
            self.find_end_of_rooted_path(*from, to, in_string);
        }
        self.copy(copy_from, *from);
        if t != PathType::None {
            self.convert_path(from, *to, t);
        }
        if *to < self.s.len() {
            let c = self.s[*to];
            self.dst.push(c);
        }
    }
}

/// POSIX → Windows for a rooted path through the emulated mount table (forward slashes).
pub fn posix_to_win32(path: &str, root: &str) -> String {
    let p = path.replace('\\', "/");
    let root = root.trim_end_matches(['/', '\\']);
    if p == "/" {
        return root.to_string();
    }
    // cygdrive prefix "/": /c → C:/, /c/x → C:/x
    let b = p.as_bytes();
    if b.len() >= 2 && b[1].is_ascii_alphabetic() && (b.len() == 2 || b[2] == b'/') {
        let drive = (b[1] as char).to_ascii_uppercase();
        let rest = if b.len() > 3 { &p[3..] } else { "" };
        return format!("{drive}:/{rest}");
    }
    if p == "/bin" || p.starts_with("/bin/") {
        return format!("{root}/usr{p}");
    }
    format!("{root}{p}")
}

/// MSYS2's `convert()` of one argument (no exclusions, no environment).
pub fn convert(arg: &str, root: &str) -> String {
    let s: Vec<char> = arg.chars().take_while(|&c| c != '\0').collect();
    let mut need = false;
    for &c in &s {
        if c == '\\' || c == '/' {
            need = true;
            break;
        }
        if isspace(c) {
            break;
        }
    }
    if !need {
        return s.iter().collect();
    }
    let mut cv = Conv {
        s: &s,
        root,
        dst: Vec::new(),
    };
    let mut in_string = '\0';
    let mut srcit = 0;
    while srcit < s.len() {
        let c = s[srcit];
        if c == '\'' || c == '"' {
            if in_string == c {
                if cv.at(srcit + 1) != in_string {
                    in_string = '\0';
                }
            } else {
                in_string = c;
            }
            srcit += 1;
            continue;
        }
        if isspace(c) {
            break;
        }
        srcit += 1;
    }
    let mut srcbeg = 0;
    cv.sub_convert(&mut srcbeg, &mut srcit, &mut in_string);
    if srcit < s.len() {
        let rest = srcit + 1;
        cv.copy(rest, s.len());
    }
    cv.dst.into_iter().collect()
}

/// Options controlling the spawn-time conversion (environment of the MSYS2 process).
#[derive(Clone, Debug, Default)]
pub struct PathConvEnv {
    /// `MSYS_NO_PATHCONV` is set.
    pub no_pathconv: bool,
    /// `MSYS2_ARG_CONV_EXCL` prefixes (`*` = all).
    pub exclusions: Vec<String>,
}

impl PathConvEnv {
    /// Reads `MSYS_NO_PATHCONV` and `MSYS2_ARG_CONV_EXCL` from `K=V` pairs.
    pub fn from_env(env: &[(String, String)]) -> Self {
        let mut e = PathConvEnv::default();
        for (k, v) in env {
            if k == "MSYS_NO_PATHCONV" {
                e.no_pathconv = true;
            }
            if k == "MSYS2_ARG_CONV_EXCL" {
                e.exclusions = v.split(';').filter(|s| !s.is_empty()).map(String::from).collect();
            }
        }
        e
    }
}

/// Converts every argv element the way an MSYS2 program does before spawning a native program.
pub fn convert_argv(args: &[String], root: &str, env: &PathConvEnv) -> Vec<String> {
    args.iter()
        .map(|a| {
            if env.no_pathconv
                || env
                    .exclusions
                    .iter()
                    .any(|p| p == "*" || a.starts_with(p.as_str()))
            {
                a.clone()
            } else {
                convert(a, root)
            }
        })
        .collect()
}
