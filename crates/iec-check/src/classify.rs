//! Names the mechanism of a change from the intended and received texts, and finds the programs
//! a text runs (for program substitution by snapshot functions).

use iec_core::Mechanism;

/// How the argv `got` differs from `sent` (both without argv\[0\]): the mechanism, and the
/// intended and received text (the first element that differs, or the whole argvs joined).
pub(crate) fn argv_change(sent: &[String], got: &[String]) -> (Mechanism, String, String) {
    if sent.len() == got.len() {
        let i = (0..sent.len()).find(|&i| sent[i] != got[i]).unwrap_or(0);
        let (a, b) = (&sent[i], &got[i]);
        return (mechanism(a, b), a.clone(), b.clone());
    }
    let (a, b) = (sent.join(" "), got.join(" "));
    let m = if b.len() < a.len() && a.starts_with(&b) {
        Mechanism::Truncation
    } else {
        Mechanism::ArityChange
    };
    (m, a, b)
}

/// The differing middle of two texts: (deleted from `a`, inserted in `b`, prefix length).
fn middle<'x>(a: &'x str, b: &'x str) -> (&'x str, &'x str, usize) {
    let p = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let mut p = p;
    while !a.is_char_boundary(p) || !b.is_char_boundary(p) {
        p -= 1;
    }
    let max = a.len().min(b.len()) - p;
    let mut s = a
        .bytes()
        .rev()
        .zip(b.bytes().rev())
        .take(max)
        .take_while(|(x, y)| x == y)
        .count();
    while !a.is_char_boundary(a.len() - s) || !b.is_char_boundary(b.len() - s) {
        s -= 1;
    }
    (&a[p..a.len() - s], &b[p..b.len() - s], p)
}

/// Classifies how `received` differs from `intended`.
pub fn mechanism(intended: &str, received: &str) -> Mechanism {
    if received.len() < intended.len() && intended.starts_with(received) {
        return Mechanism::Truncation;
    }
    let (del, ins, at) = middle(intended, received);
    let after = &intended[at + del.len()..];
    // An escape added before `!` or `$`: the sender protected the character from a re-expansion
    // that the receiver does not do, and the backslash stays as data.
    if del.is_empty() && !ins.is_empty() && ins.bytes().all(|b| b == b'\\') && after.starts_with(['!', '$']) {
        return Mechanism::ReExpansion;
    }
    if del.contains('$') || del.contains('!') || del.contains('%') {
        return Mechanism::ReExpansion;
    }
    // Quote characters (or escaping backslashes) removed, nothing else changed.
    let unquoted = |s: &str| s.replace(['\'', '"', '\\'], "");
    if del.len() > ins.len() && unquoted(del) == unquoted(ins) {
        return Mechanism::QuoteConsumption;
    }
    if words(intended) != words(received) && del.trim().is_empty() && ins.trim().is_empty() {
        return Mechanism::ArityChange;
    }
    Mechanism::Other
}

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

/// Programs the text invokes in command position, read from bash's canonical form (one command
/// per line or joined by operators). Prefixes that keep the following word a command (`env`,
/// `sudo`, `time`, `nohup`, `xargs`, `exec`) are looked through; `command NAME` bypasses shell
/// functions and is not reported.
pub fn invoked_programs(canonical: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_single = false;
    let mut in_double = false;
    let mut word = String::new();
    let mut at_command = true;
    let mut skip_next_is_command = false;
    let bytes = canonical.as_bytes();
    let mut i = 0;
    let flush = |word: &mut String, at_command: &mut bool, out: &mut Vec<String>, skip: &mut bool| {
        if word.is_empty() {
            return;
        }
        let w = std::mem::take(word);
        if *at_command {
            if w.contains('=')
                && !w.starts_with('=')
                && w.split('=')
                    .next()
                    .unwrap()
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_')
            {
                return; // an assignment; the command is still to come
            }
            match w.as_str() {
                "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "{" | "}" | "fi"
                | "done" | "esac" | "time" | "nohup" | "exec" | "sudo" | "env" | "xargs" | "-0" | "-r" => {
                    return
                }
                "command" | "builtin" => {
                    *at_command = false;
                    *skip = true;
                    return;
                }
                _ => {}
            }
            let name = w
                .rsplit('/')
                .next()
                .unwrap_or(&w)
                .trim_start_matches('\\')
                .to_string();
            if !*skip {
                out.push(name);
            }
            *skip = false;
            *at_command = false;
        }
    };
    while i < bytes.len() {
        let c = bytes[i] as char;
        if in_single {
            if c == '\'' {
                in_single = false;
            }
            word.push(c);
            i += 1;
            continue;
        }
        if in_double {
            if c == '\\' && i + 1 < bytes.len() {
                word.push(c);
                word.push(bytes[i + 1] as char);
                i += 2;
                continue;
            }
            if c == '"' {
                in_double = false;
            }
            word.push(c);
            i += 1;
            continue;
        }
        match c {
            '\'' => {
                in_single = true;
                word.push(c);
            }
            '"' => {
                in_double = true;
                word.push(c);
            }
            '\\' if i + 1 < bytes.len() => {
                word.push(c);
                word.push(bytes[i + 1] as char);
                i += 1;
            }
            ' ' | '\t' => flush(&mut word, &mut at_command, &mut out, &mut skip_next_is_command),
            '\n' | ';' | '|' | '&' | '(' | ')' | '`' => {
                flush(&mut word, &mut at_command, &mut out, &mut skip_next_is_command);
                at_command = true;
                skip_next_is_command = false;
            }
            _ => word.push(c),
        }
        i += 1;
    }
    flush(&mut word, &mut at_command, &mut out, &mut skip_next_is_command);
    out.retain(|w| !w.is_empty() && !w.starts_with('$'));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechanisms() {
        assert_eq!(
            mechanism("printf '%s' 'a != b'", "printf '%s' 'a \\!= b'"),
            Mechanism::ReExpansion
        );
        assert_eq!(mechanism("echo abcdef", "echo abc"), Mechanism::Truncation);
        assert_eq!(
            mechanism("echo \"PID=$$\" | cat", "echo PID= | cat"),
            Mechanism::ReExpansion
        );
        assert_eq!(
            mechanism("node -e 'console.log(\"t\")'", "node -e 'console.log(t)'"),
            Mechanism::QuoteConsumption
        );
        assert_eq!(mechanism("a\r\nb", "a\nb"), Mechanism::Other);
    }

    #[test]
    fn programs() {
        assert_eq!(invoked_programs("grep -r x . | wc -l"), vec!["grep", "wc"]);
        assert_eq!(
            invoked_programs("FOO=1 /usr/bin/find . -name '*.rs'"),
            vec!["find"]
        );
        assert_eq!(invoked_programs("command grep x; echo 'grep'"), vec!["echo"]);
        assert_eq!(
            invoked_programs("if true; then\n    rg x\nfi"),
            vec!["true", "rg"]
        );
        assert_eq!(invoked_programs("echo $(grep a b)"), vec!["echo", "grep"]);
    }
}
