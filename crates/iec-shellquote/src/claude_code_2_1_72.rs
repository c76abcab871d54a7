//! Port of the code in Claude Code **2.1.72** `cli.js` that turns the Bash tool's command into
//! the `-c` string (`buildExecCommand` of the bash provider, minified `Ro7`).
//!
//! Minified names refer to `@anthropic-ai/claude-code@2.1.72/cli.js`; see `README.md`.
//! In 2.1.72 `buildExecCommand` does (de-minified):
//!
//! ```js
//! D = Xo7(cmd)                 // >nul rewrite
//! X = Do7(D)                   // add stdin redirect?
//! P = Mo7(D, X)                // heredoc / multi-line / default quoting
//! if (!useSandbox && D.includes("|") && X) P = Zo7(D)   // pipe rearrangement
//! parts = []
//! if (snapshot) parts.push(`source ${n7([snapshot])}`)
//! if (sessionEnvScript) parts.push(sessionEnvScript)
//! if (extglobLine) parts.push(extglobLine)      // Uf9(shellPath)
//! parts.push(`eval ${P}`)
//! parts.push(`pwd -P >| ${cwdFile}`)
//! s = parts.join(" && ")
//! if (process.env.CLAUDE_CODE_SHELL_PREFIX) s = fA1(CLAUDE_CODE_SHELL_PREFIX, s)
//! ```
//!
//! `n7` is Claude Code's wrapper around shell-quote `quote` (strings are passed through).

use crate::{js, parse_no_env, quote_str, quote_strs, Token};

/// Where (if anywhere) `< /dev/null` was added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinRedirect {
    /// No redirect added (heredoc, or the command already has a `<` redirect).
    None,
    /// `quote([cmd, "<", "/dev/null"])`: the payload ends in ` \< /dev/null`; `eval` joins its
    /// arguments, so the redirect becomes text appended to the command (binds to the last
    /// simple command).
    AppendedToEval,
    /// ` < /dev/null` unquoted after the quoted command: a redirect of the `eval` builtin
    /// itself (multi-line quoted path and pipe bail-out path).
    OnEval,
    /// `< /dev/null` inserted inside the command before the first top-level `|`.
    InsidePipe,
}

/// Which branch of the builder produced the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadPath {
    /// `n7([cmd, "<", "/dev/null"])` or `n7([cmd])` (`Mo7` default branch).
    Default,
    /// Heredoc detected (`oW8`): `'...'` with `'` → `'"'"'`, no redirect.
    Heredoc,
    /// Multi-line quoted string (`Nf9`): `'...'` with `'` → `'"'"'`, plus ` < /dev/null`.
    MultilineQuoted,
    /// Pipe rearrangement (`Zo7`): tokens re-quoted, `< /dev/null` before first `|`.
    PipeRearranged,
    /// Pipe rearrangement gave up (`aB6`): `n7([cmd]) + " < /dev/null"`.
    PipeBailout,
}

/// Why `Zo7` bailed out to `aB6`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipeBailoutReason {
    /// The command contains a backtick.
    Backtick,
    /// The command contains `$(`.
    DollarParen,
    /// `/\b(for|while|until|if|case|select)\s/` matched (`Rf9`).
    ShellKeyword,
    /// shell-quote `parse` threw (`Gz` returned `success: false`); the message.
    ParseError(String),
    /// No `{op: "|"}` token, or it is the first token (`Ef9(...) <= 0`).
    NoPipeOperator,
    /// A newline is left after joining continuations (2.1.75).
    Newline,
    /// `/\$[A-Za-z_{]/` matched: a variable or parameter expansion (2.1.79's `Mq4`).
    Variable,
    /// A single-quoted string closes after backslashes (an odd number, or an even number with
    /// another `'` later): 2.1.84's `Kc6`.
    EscapedSingleQuoteClose,
    /// Unbalanced quotes in the text, or unbalanced brackets or quotes in a parsed word:
    /// 2.1.84's `E08`.
    Unbalanced,
}

/// Result of [`build_eval_payload`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalPayload {
    /// Exactly the text Claude Code puts after `eval ` in the wrapper.
    pub payload: String,
    /// The command after the `>nul` rewrite (`Xo7`).
    pub rewritten_command: String,
    /// Whether `Xo7` changed anything.
    pub null_redirect_rewritten: bool,
    /// Result of `Do7` (shouldAddStdinRedirect).
    pub add_stdin_redirect: bool,
    /// Where `< /dev/null` went.
    pub stdin_redirect: StdinRedirect,
    /// Which branch produced `payload`.
    pub path: PayloadPath,
    /// Set when `path == PipeBailout`.
    pub pipe_bailout_reason: Option<PipeBailoutReason>,
    /// Set when `path == PipeRearranged`: the rebuilt command (tokens re-quoted, `< /dev/null`
    /// before the first `|`) before the outer `quote()` for eval, i.e. what the harness means
    /// eval to run.
    pub rebuilt_command: Option<String>,
}

/// How one line of Claude Code releases builds the eval payload: what differs between the
/// releases whose `cli.js` was read (each constant below names the functions it was read from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// A piped command is cut at each lone `|` (not quote-aware) instead of re-tokenised, and
    /// quoted as `quote([first, "<", "/dev/null", "|", rest])` (1.0.0 to 1.0.4x).
    pub split_pipe: bool,
    /// The `>nul` rewrite (`Xo7`) runs first.
    pub null_rewrite: bool,
    /// `shouldAddStdinRedirect` (`Do7`) and the heredoc / multi-line quoting (`Mo7`); without
    /// it every command is `quote([cmd, "<", "/dev/null"])` and every piped one rearranged.
    pub redirect_check: bool,
    /// The pipe rearrangement also bails out on `$(` and a shell keyword (`Rf9`).
    pub bail_subst_keyword: bool,
    /// `\`-newline continuations are joined before the parse (`hf9`).
    pub join_continuations: bool,
    /// It also bails out when the joined text still holds a newline.
    pub bail_newline: bool,
    /// What a bail-out gives.
    pub bail: Bail,
    /// How each token is re-quoted.
    pub requote: Requote,
    /// The rebuilt text is single-quoted for eval (`'…'`, `'` as `'"'"'`) rather than
    /// shell-quote `quote([rebuilt])`.
    pub rebuilt_single_quoted: bool,
    /// It also bails out on `$` before a letter, `_` or `{` (2.1.79).
    pub bail_variable: bool,
    /// It also bails out on an escaped single-quote close (`Kc6`) before the parse and on
    /// unbalanced quotes or brackets (`E08`) after it (2.1.84).
    pub bail_unbalanced: bool,
    /// The rearrangement runs for a sandboxed command too (the `!useSandbox` test is gone; seen
    /// in 2.1.83 and 2.1.84).
    pub pipe_in_sandbox: bool,
    /// The bundled shell-quote's `quote` is the older one that backslash-escapes `\` inside
    /// single quotes ([`crate::quote_strs_escaping_backslash`]; 1.0.0 to 1.0.17).
    pub quote_escapes_backslash: bool,
}

/// What the pipe rearrangement gives when it bails out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bail {
    /// `quote([cmd, "<", "/dev/null"])`: the `\<` word appended to eval's arguments.
    AppendedToEval,
    /// `quote([cmd]) + " < /dev/null"`: a redirect of eval (`aB6`).
    QuotedOnEval,
    /// `'cmd' < /dev/null` with `'` as `'"'"'` (2.1.75's `r06`).
    SingleQuotedOnEval,
}

/// How the pipe rearrangement re-quotes the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requote {
    /// Each string quoted, each operator object's `op` pushed (a glob pushes `glob`).
    Plain,
    /// As `Plain`, with `N>&M` (parsed as `>&` or as `>` `&M`) and `N>/dev/null` written as one
    /// word (N, M: 0, 1, 2).
    FdJoined,
    /// As `FdJoined`, with leading `NAME=` assignments kept unquoted and a glob's pattern
    /// pushed (`Wo7`).
    Full,
}

/// Claude Code 1.0.65 (`Mq2`, `Lq2`; seen the same in 1.0.44): no redirect check, every piped
/// command rearranged, tokens re-quoted one by one.
pub const RELEASE_1_0_65: Release = Release {
    split_pipe: false,
    null_rewrite: false,
    redirect_check: false,
    bail_subst_keyword: false,
    join_continuations: false,
    bail_newline: false,
    bail: Bail::AppendedToEval,
    requote: Requote::Plain,
    rebuilt_single_quoted: false,
    bail_variable: false,
    bail_unbalanced: false,
    pipe_in_sandbox: false,
    quote_escapes_backslash: false,
};

/// Claude Code 1.0.21 and 1.0.44 (`uE4`, `JBQ`): `A.split(/(?<!\|)\|(?!\|)/)`, and when that
/// gives more than one part, `quote([parts[0], "<", "/dev/null", "|", parts[1..].join("|")])`.
pub const RELEASE_1_0_21: Release = Release {
    split_pipe: true,
    ..RELEASE_1_0_65
};

/// Claude Code 1.0.0 to 1.0.17: 1.0.21's payload built with the older shell-quote `quote`, which
/// doubles a backslash inside its single quotes (read in 1.0.0's and 1.0.17's `cli.js`;
/// 1.0.21's has the newer one). `"a\\b"` reaches the shell as `"a\\\\b"`.
pub const RELEASE_1_0_0: Release = Release {
    quote_escapes_backslash: true,
    ..RELEASE_1_0_21
};

/// Claude Code 1.0.76 (`NLB`, `qLB`): 1.0.65 with file-descriptor redirects kept as one word.
pub const RELEASE_1_0_76: Release = Release {
    requote: Requote::FdJoined,
    ..RELEASE_1_0_65
};

/// Claude Code 1.0.128 and 2.0.76 (`JBB`/`VBB`, `kc2`/`gc2`, see [`build_eval_payload_2_0_76`]).
pub const RELEASE_2_0_76: Release = Release {
    redirect_check: true,
    requote: Requote::Full,
    ..RELEASE_1_0_65
};

/// Claude Code 2.1.3 (`RtB`, `MtB`, `KtB`): 2.0.76 that also bails out on `$(` and keywords.
pub const RELEASE_2_1_3: Release = Release {
    bail_subst_keyword: true,
    ..RELEASE_2_0_76
};

/// Claude Code 2.1.72 (`Xo7`, `Do7`, `Mo7`, `Zo7`, `aB6`, `Wo7`).
pub const RELEASE_2_1_72: Release = Release {
    null_rewrite: true,
    bail_subst_keyword: true,
    join_continuations: true,
    bail: Bail::QuotedOnEval,
    ..RELEASE_2_0_76
};

/// Claude Code 2.1.75 (`sK4`, `aK4`, `oK4`, `A34`, `r06`, `q34`, `eK4`): 2.1.72 whose pipe
/// rearrangement single-quotes for eval, both its bail-out and its rebuilt text, and bails out
/// on a newline left after joining continuations.
pub const RELEASE_2_1_75: Release = Release {
    bail_newline: true,
    bail: Bail::SingleQuotedOnEval,
    rebuilt_single_quoted: true,
    ..RELEASE_2_1_72
};

/// Claude Code 2.1.79 (`Hq4`, `$q4`, `Oq4`, `Mq4`, `X96`, `Dq4`, `Jq4`): 2.1.75 (2.1.77's `B44`
/// is 2.1.75's) whose pipe rearrangement also bails out when `/\$[A-Za-z_{]/` matches, so a
/// piped command with a `$NAME` or `${…}` expansion is single-quoted whole rather than
/// re-tokenised (which dropped the expansion). 2.1.83's `g_q` is the same, called without the
/// `!useSandbox` test.
pub const RELEASE_2_1_79: Release = Release {
    bail_variable: true,
    ..RELEASE_2_1_75
};

/// Claude Code 2.1.84 (`ROq`, `hOq`, `LOq`, `bOq`, `si`, `IOq`, `COq`, `Kc6`, `E08`; 2.1.88's
/// `o_K`, `Oo6`, `JN8` are the same): 2.1.79 whose pipe rearrangement also bails out on an
/// escaped single-quote close (`Kc6`) and on unbalanced quotes or brackets in the text or a
/// parsed word (`E08`: `"it's"` has a lone `'` in its word), and runs for sandboxed commands too
/// (`if(P.includes("|")&&X)D=bOq(P)`).
pub const RELEASE_2_1_84: Release = Release {
    bail_unbalanced: true,
    pipe_in_sandbox: true,
    ..RELEASE_2_1_79
};

/// `buildExecCommand` payload for a non-sandboxed command.
pub fn build_eval_payload(cmd: &str) -> EvalPayload {
    build_eval_payload_with(cmd, false)
}

/// `buildExecCommand` payload; `use_sandbox` disables the pipe rearrangement
/// (`if(!w.useSandbox&&D.includes("|")&&X)P=Zo7(D)`).
pub fn build_eval_payload_with(cmd: &str, use_sandbox: bool) -> EvalPayload {
    build_eval_payload_for(&RELEASE_2_1_72, cmd, use_sandbox)
}

/// The `eval` payload of Claude Code **1.0.x and 2.0.x** (seen in 1.0.128 and 2.0.76 `cli.js`:
/// `kc2`/`gc2` in 2.0.76, `JBB`/`VBB` in 1.0.128). The same quoting as 2.1.72 without its `>nul`
/// rewrite, and a pipe rearrangement that bails out only for a backtick (not for `$(` nor a
/// shell keyword), parses the command as it is (no line-continuation joining), and bails out
/// to `quote([cmd, "<", "/dev/null"])` (the `\<` word appended to eval's arguments) rather
/// than to a redirect of eval:
///
/// ```js
/// F = bc2(A); E = kc2(A, F)
/// if (!sandbox && A.includes("|") && F) E = gc2(A)
/// function gc2(A) {
///   if (A.includes("`")) return t6([A, "<", "/dev/null"])
///   let Q = sI(A); if (!Q.success) return t6([A, "<", "/dev/null"])
///   let B = Q.tokens, G = firstPipe(B); if (G <= 0) return t6([A, "<", "/dev/null"])
///   return t6([[...hc2(B, 0, G), "< /dev/null", ...hc2(B, G, B.length)].join(" ")])
/// }
/// ```
pub fn build_eval_payload_2_0_76(cmd: &str) -> EvalPayload {
    build_eval_payload_for(&RELEASE_2_0_76, cmd, false)
}

/// `quote(xs)` with `release`'s shell-quote.
fn quote_strs_for(release: &Release, xs: &[&str]) -> String {
    if release.quote_escapes_backslash {
        crate::quote_strs_escaping_backslash(xs)
    } else {
        quote_strs(xs)
    }
}

/// The `eval` payload of `release` (see [`Release`]); `use_sandbox` disables the pipe
/// rearrangement.
pub fn build_eval_payload_for(release: &Release, cmd: &str, use_sandbox: bool) -> EvalPayload {
    let (d, null_redirect_rewritten) = if release.null_rewrite {
        rewrite_null_redirect(cmd)
    } else {
        (cmd.to_string(), false)
    };
    let x = !release.redirect_check || should_add_stdin_redirect(&d);
    let (mut payload, mut path, mut stdin_redirect) = if release.redirect_check {
        quote_for_eval(&d, x)
    } else {
        (
            quote_strs_for(release, &[&d, "<", "/dev/null"]),
            PayloadPath::Default,
            StdinRedirect::AppendedToEval,
        )
    };
    let mut pipe_bailout_reason = None;
    let mut rebuilt_command = None;
    let parts = split_lone_pipes(&d);
    if release.split_pipe && !use_sandbox && parts.len() > 1 {
        let rest = parts[1..].join("|");
        payload = quote_strs_for(release, &[parts[0], "<", "/dev/null", "|", &rest]);
        rebuilt_command = Some(format!("{} < /dev/null | {rest}", parts[0]));
        path = PayloadPath::PipeRearranged;
        stdin_redirect = StdinRedirect::InsidePipe;
    } else if !release.split_pipe && (release.pipe_in_sandbox || !use_sandbox) && d.contains('|') && x {
        match rearrange_pipe_command(release, &d) {
            Ok(rebuilt) => {
                payload = if release.rebuilt_single_quoted {
                    single_quote_for_eval(&rebuilt)
                } else {
                    quote_str(&rebuilt)
                };
                rebuilt_command = Some(rebuilt);
                path = PayloadPath::PipeRearranged;
                stdin_redirect = StdinRedirect::InsidePipe;
            }
            Err(reason) => {
                (payload, stdin_redirect) = match release.bail {
                    Bail::AppendedToEval => {
                        (quote_strs(&[&d, "<", "/dev/null"]), StdinRedirect::AppendedToEval)
                    }
                    Bail::QuotedOnEval => (format!("{} < /dev/null", quote_str(&d)), StdinRedirect::OnEval),
                    Bail::SingleQuotedOnEval => (
                        format!("{} < /dev/null", single_quote_for_eval(&d)),
                        StdinRedirect::OnEval,
                    ),
                };
                path = PayloadPath::PipeBailout;
                pipe_bailout_reason = Some(reason);
            }
        }
    }
    EvalPayload {
        payload,
        rewritten_command: d,
        null_redirect_rewritten,
        add_stdin_redirect: x,
        stdin_redirect,
        path,
        pipe_bailout_reason,
        rebuilt_command,
    }
}

/// Options for [`wrapper_with`], mirroring the inputs of `buildExecCommand`.
#[derive(Debug, Clone, Default)]
pub struct WrapperOptions<'a> {
    /// Shell path; `Uf9` picks the extglob line by `includes("bash")` / `includes("zsh")`.
    pub shell_path: &'a str,
    /// Snapshot file (already POSIX-converted); `None` = no snapshot (then `-l` is used).
    pub snapshot_path: Option<&'a str>,
    /// Session environment script (`NLA()`), pushed verbatim.
    pub session_env_script: Option<&'a str>,
    /// The cwd file, inserted verbatim (not quoted) after `pwd -P >| `.
    pub cwd_file: &'a str,
    /// `useSandbox`.
    pub use_sandbox: bool,
    /// `process.env.CLAUDE_CODE_SHELL_PREFIX`.
    pub shell_prefix: Option<&'a str>,
}

/// The whole `-c` string for bash without sandbox, session env script or shell prefix:
/// `source <n7([snapshot])> && shopt -u extglob 2>/dev/null || true && eval <payload> && pwd -P >| <cwd_file>`.
pub fn wrapper(snapshot_path: Option<&str>, cwd_file: &str, cmd: &str) -> String {
    wrapper_with(
        &WrapperOptions {
            shell_path: "/bin/bash",
            snapshot_path,
            cwd_file,
            ..Default::default()
        },
        cmd,
    )
}

/// The whole `-c` string (`Ro7(...).buildExecCommand(cmd, ...)`'s `commandString`).
pub fn wrapper_with(opts: &WrapperOptions<'_>, cmd: &str) -> String {
    let p = build_eval_payload_with(cmd, opts.use_sandbox).payload;
    let mut w: Vec<String> = Vec::new();
    if let Some(snap) = opts.snapshot_path {
        w.push(format!("source {}", quote_str(snap)));
    }
    if let Some(env) = opts.session_env_script {
        if !env.is_empty() {
            w.push(env.to_owned());
        }
    }
    if let Some(g) = extglob_line(opts.shell_path, opts.shell_prefix.is_some()) {
        w.push(g.to_owned());
    }
    w.push(format!("eval {p}"));
    w.push(format!("pwd -P >| {}", opts.cwd_file));
    let f = w.join(" && ");
    match opts.shell_prefix {
        Some(prefix) if !prefix.is_empty() => apply_shell_prefix(prefix, &f),
        _ => f,
    }
}

/// `J` for the non-sandbox case: `path.posix.join(tmpdir, "claude-" + id + "-cwd")`
/// (`id` = 4 lowercase hex digits); assumes `tmpdir` needs no normalisation.
pub fn cwd_file_path(tmpdir: &str, id: &str) -> String {
    format!("{}/claude-{id}-cwd", tmpdir.trim_end_matches('/'))
}

/// `Uf9(A)`.
pub fn extglob_line(shell_path: &str, shell_prefix_set: bool) -> Option<&'static str> {
    if shell_prefix_set {
        Some("{ shopt -u extglob || setopt NO_EXTENDED_GLOB; } >/dev/null 2>&1 || true")
    } else if shell_path.contains("bash") {
        Some("shopt -u extglob 2>/dev/null || true")
    } else if shell_path.contains("zsh") {
        Some("setopt NO_EXTENDED_GLOB 2>/dev/null || true")
    } else {
        None
    }
}

/// `fA1(prefix, commandString)`.
pub fn apply_shell_prefix(prefix: &str, f: &str) -> String {
    // A.lastIndexOf(" -") in UTF-16 units; the index is only used to split, so a byte index
    // of the same substring is equivalent.
    match prefix.rfind(" -") {
        Some(k) if k > 0 => format!(
            "{} {} {}",
            quote_str(&prefix[..k]),
            &prefix[k + 1..],
            quote_str(f)
        ),
        _ => format!("{} {}", quote_str(prefix), quote_str(f)),
    }
}

// ---------------------------------------------------------------------------------------------
// Xo7 / kf9: >nul rewrite
// ---------------------------------------------------------------------------------------------

/// `Xo7(A) = A.replace(/(\d?&?>+\s*)[Nn][Uu][Ll](?=\s|$|[|&;)\n])/g, "$1/dev/null")`.
/// Returns the new string and whether any replacement happened.
pub fn rewrite_null_redirect(a: &str) -> (String, bool) {
    let c: Vec<char> = a.chars().collect();
    let mut out = String::with_capacity(a.len());
    let mut changed = false;
    let mut i = 0;
    while i < c.len() {
        if let Some((prefix_end, end)) = null_redirect_at(&c, i) {
            out.extend(&c[i..prefix_end]);
            out.push_str("/dev/null");
            changed = true;
            i = end;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    (out, changed)
}

fn null_redirect_at(c: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if j < c.len() && js::is_digit(c[j]) {
        j += 1;
    }
    if j < c.len() && c[j] == '&' {
        j += 1;
    }
    let gt = j;
    while j < c.len() && c[j] == '>' {
        j += 1;
    }
    if j == gt {
        return None;
    }
    while j < c.len() && js::is_space(c[j]) {
        j += 1;
    }
    let prefix_end = j;
    if j + 3 > c.len() {
        return None;
    }
    if !(c[j].eq_ignore_ascii_case(&'n')
        && c[j + 1].eq_ignore_ascii_case(&'u')
        && c[j + 2].eq_ignore_ascii_case(&'l'))
    {
        return None;
    }
    // (?=\s|$|[|&;)\n])
    match c.get(j + 3) {
        None => {}
        Some(&n) if js::is_space(n) || matches!(n, '|' | '&' | ';' | ')' | '\n') => {}
        _ => return None,
    }
    Some((prefix_end, j + 3))
}

// ---------------------------------------------------------------------------------------------
// oW8: heredoc detection
// ---------------------------------------------------------------------------------------------

/// `oW8(A)`:
/// ```js
/// if (/\d\s*<<\s*\d/.test(A) || /\[\[\s*\d+\s*<<\s*\d+\s*\]\]/.test(A) || /\$\(\(.*<<.*\)\)/.test(A)) return false;
/// return /<<-?\s*(?:(['"]?)(\w+)\1|\\(\w+))/.test(A);
/// ```
pub fn has_heredoc(a: &str) -> bool {
    let c: Vec<char> = a.chars().collect();
    if digit_shift_digit(&c) || bracket_shift(&c) || arith_shift(&c) {
        return false;
    }
    (0..c.len().saturating_sub(1)).any(|b| c[b] == '<' && c[b + 1] == '<' && heredoc_after(&c, b + 2))
}

fn skip_spaces(c: &[char], mut j: usize) -> usize {
    while j < c.len() && js::is_space(c[j]) {
        j += 1;
    }
    j
}

fn skip_digits(c: &[char], mut j: usize) -> usize {
    while j < c.len() && js::is_digit(c[j]) {
        j += 1;
    }
    j
}

/// `/\d\s*<<\s*\d/`
fn digit_shift_digit(c: &[char]) -> bool {
    (0..c.len()).any(|d| {
        if !js::is_digit(c[d]) {
            return false;
        }
        let j = skip_spaces(c, d + 1);
        if j + 1 >= c.len() || c[j] != '<' || c[j + 1] != '<' {
            return false;
        }
        let k = skip_spaces(c, j + 2);
        k < c.len() && js::is_digit(c[k])
    })
}

/// `/\[\[\s*\d+\s*<<\s*\d+\s*\]\]/`
fn bracket_shift(c: &[char]) -> bool {
    (0..c.len().saturating_sub(1)).any(|a| {
        if c[a] != '[' || c[a + 1] != '[' {
            return false;
        }
        let mut j = skip_spaces(c, a + 2);
        let d = skip_digits(c, j);
        if d == j {
            return false;
        }
        j = skip_spaces(c, d);
        if j + 1 >= c.len() || c[j] != '<' || c[j + 1] != '<' {
            return false;
        }
        j = skip_spaces(c, j + 2);
        let d = skip_digits(c, j);
        if d == j {
            return false;
        }
        j = skip_spaces(c, d);
        j + 1 < c.len() && c[j] == ']' && c[j + 1] == ']'
    })
}

/// `/\$\(\(.*<<.*\)\)/` (`.` excludes line terminators).
fn arith_shift(c: &[char]) -> bool {
    for line in c.split(|&ch| js::is_line_terminator(ch)) {
        let find = |from: usize, a: char, b: char, extra: Option<char>| -> Option<usize> {
            (from..line.len()).find(|&i| {
                line[i] == a
                    && i + 1 < line.len()
                    && line[i + 1] == b
                    && extra.map_or(true, |e| i + 2 < line.len() && line[i + 2] == e)
            })
        };
        if let Some(a) = find(0, '$', '(', Some('(')) {
            if let Some(b) = find(a + 3, '<', '<', None) {
                if find(b + 2, ')', ')', None).is_some() {
                    return true;
                }
            }
        }
    }
    false
}

/// `-?\s*(?:(['"]?)(\w+)\1|\\(\w+))` at `j`.
fn heredoc_after(c: &[char], mut j: usize) -> bool {
    if j < c.len() && c[j] == '-' {
        j += 1;
    }
    j = skip_spaces(c, j);
    match c.get(j) {
        Some(&q) if q == '\'' || q == '"' => {
            let mut k = j + 1;
            while k < c.len() && js::is_word(c[k]) {
                k += 1;
            }
            k > j + 1 && k < c.len() && c[k] == q
        }
        Some(&w) if js::is_word(w) => true,
        Some('\\') => c.get(j + 1).is_some_and(|&w| js::is_word(w)),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Nf9: multi-line quoted string
// ---------------------------------------------------------------------------------------------

/// `Nf9(A)`: `/'(?:[^'\\]|\\.)*\n(?:[^'\\]|\\.)*'/` or the same with `"`.
pub fn has_multiline_quoted_string(a: &str) -> bool {
    let c: Vec<char> = a.chars().collect();
    multiline_q(&c, '\'') || multiline_q(&c, '"')
}

fn multiline_q(c: &[char], q: char) -> bool {
    (0..c.len()).any(|o| {
        if c[o] != q {
            return false;
        }
        let mut p = o + 1;
        let mut saw_nl = false;
        while p < c.len() {
            if c[p] == q {
                return saw_nl;
            }
            if c[p] == '\\' {
                if p + 1 < c.len() && !js::is_line_terminator(c[p + 1]) {
                    p += 2;
                    continue;
                }
                return false;
            }
            if c[p] == '\n' {
                saw_nl = true;
            }
            p += 1;
        }
        false
    })
}

// ---------------------------------------------------------------------------------------------
// Vf9 / Do7: stdin redirect decision
// ---------------------------------------------------------------------------------------------

/// `Vf9(A) = /(?:^|[\s;&|])<(?![<(])\s*\S+/.test(A)`.
pub fn has_stdin_redirect(a: &str) -> bool {
    let c: Vec<char> = a.chars().collect();
    (0..c.len()).any(|i| {
        c[i] == '<'
            && (i == 0 || js::is_space(c[i - 1]) || matches!(c[i - 1], ';' | '&' | '|'))
            && !matches!(c.get(i + 1), Some('<') | Some('('))
            && c[i + 1..].iter().any(|&ch| !js::is_space(ch))
    })
}

/// `Do7(A)`: `!oW8(A) && !Vf9(A)`.
pub fn should_add_stdin_redirect(a: &str) -> bool {
    !has_heredoc(a) && !has_stdin_redirect(a)
}

// ---------------------------------------------------------------------------------------------
// Mo7: default / heredoc / multi-line quoting
// ---------------------------------------------------------------------------------------------

fn single_quote_for_eval(a: &str) -> String {
    format!("'{}'", a.replace('\'', "'\"'\"'"))
}

/// `Mo7(A, q)`.
fn quote_for_eval(a: &str, q: bool) -> (String, PayloadPath, StdinRedirect) {
    let heredoc = has_heredoc(a);
    if heredoc || has_multiline_quoted_string(a) {
        let y = single_quote_for_eval(a);
        if heredoc {
            return (y, PayloadPath::Heredoc, StdinRedirect::None);
        }
        return if q {
            (
                format!("{y} < /dev/null"),
                PayloadPath::MultilineQuoted,
                StdinRedirect::OnEval,
            )
        } else {
            (y, PayloadPath::MultilineQuoted, StdinRedirect::None)
        };
    }
    if q {
        (
            quote_strs(&[a, "<", "/dev/null"]),
            PayloadPath::Default,
            StdinRedirect::AppendedToEval,
        )
    } else {
        (quote_str(a), PayloadPath::Default, StdinRedirect::None)
    }
}

// ---------------------------------------------------------------------------------------------
// Zo7: pipe rearrangement
// ---------------------------------------------------------------------------------------------

/// `Rf9(A) = /\b(for|while|until|if|case|select)\s/.test(A)`.
fn has_shell_keyword(a: &str) -> bool {
    let c: Vec<char> = a.chars().collect();
    const KWS: &[&str] = &["for", "while", "until", "if", "case", "select"];
    (0..c.len()).any(|i| {
        (i == 0 || !js::is_word(c[i - 1]))
            && KWS.iter().any(|kw| {
                let k: Vec<char> = kw.chars().collect();
                c[i..].starts_with(&k) && c.get(i + k.len()).is_some_and(|&n| js::is_space(n))
            })
    })
}

/// `/\$[A-Za-z_{]/.test(A)` (2.1.79's `Mq4`).
fn has_variable(a: &str) -> bool {
    a.as_bytes()
        .windows(2)
        .any(|w| w[0] == b'$' && (w[1].is_ascii_alphabetic() || w[1] == b'_' || w[1] == b'{'))
}

/// 2.1.84's `Kc6(A)`: a single-quoted string (outside double quotes, a `\` outside single
/// quotes skipping the next character) that closes after an odd number of backslashes, or an
/// even number of them with another `'` later in the text.
fn escaped_single_quote_close(a: &str) -> bool {
    let c: Vec<char> = a.chars().collect();
    let (mut sq, mut dq) = (false, false);
    let mut i = 0;
    while i < c.len() {
        let z = c[i];
        if z == '\\' && !sq {
            i += 2;
            continue;
        }
        if z == '"' && !sq {
            dq = !dq;
        } else if z == '\'' && !dq {
            sq = !sq;
            if !sq {
                let n = c[..i].iter().rev().take_while(|&&b| b == '\\').count();
                if n % 2 == 1 || (n > 0 && c[i + 1..].contains(&'\'')) {
                    return true;
                }
            }
        }
        i += 1;
    }
    false
}

/// 2.1.84's `E08(A, tokens)`: an odd number of `"` or of `'` counted as quotes in the text, or a
/// parsed word with unequal `{}`, `()` or `[]` counts or an odd number of `"` or of `'` not
/// right after a `\`.
fn unbalanced(a: &str, tokens: &[Token]) -> bool {
    let c: Vec<char> = a.chars().collect();
    let (mut sq, mut dq, mut ndq, mut nsq) = (false, false, 0usize, 0usize);
    let mut i = 0;
    while i < c.len() {
        let z = c[i];
        if z == '\\' && !sq {
            i += 2;
            continue;
        }
        if z == '"' && !sq {
            ndq += 1;
            dq = !dq;
        } else if z == '\'' && !dq {
            nsq += 1;
            sq = !sq;
        }
        i += 1;
    }
    if ndq % 2 != 0 || nsq % 2 != 0 {
        return true;
    }
    tokens.iter().any(|t| {
        let Token::Str(w) = t else { return false };
        let n = |ch: char| w.chars().filter(|&x| x == ch).count();
        let unescaped = |ch: char| {
            let w: Vec<char> = w.chars().collect();
            (0..w.len())
                .filter(|&j| w[j] == ch && (j == 0 || w[j - 1] != '\\'))
                .count()
        };
        n('{') != n('}')
            || n('(') != n(')')
            || n('[') != n(']')
            || unescaped('"') % 2 != 0
            || unescaped('\'') % 2 != 0
    })
}

/// `hf9(A) = A.replace(/\\+\n/g, m => (m.length-1) % 2 === 1 ? "\\".repeat(m.length-2) : m)`.
fn join_continuations(a: &str) -> String {
    let c: Vec<char> = a.chars().collect();
    let mut out = String::with_capacity(a.len());
    let mut i = 0;
    while i < c.len() {
        if c[i] == '\\' {
            let mut j = i;
            while j < c.len() && c[j] == '\\' {
                j += 1;
            }
            let k = j - i;
            if j < c.len() && c[j] == '\n' && k % 2 == 1 {
                out.extend(std::iter::repeat('\\').take(k - 1));
                i = j + 1;
            } else {
                out.extend(&c[i..j]);
                i = j;
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// `A.split(/(?<!\|)\|(?!\|)/)`: the text cut at each `|` that has no `|` on either side.
fn split_lone_pipes(a: &str) -> Vec<&str> {
    let b = a.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    for i in 0..b.len() {
        let lone = b[i] == b'|' && (i == 0 || b[i - 1] != b'|') && b.get(i + 1) != Some(&b'|');
        if lone {
            out.push(&a[from..i]);
            from = i + 1;
        }
    }
    out.push(&a[from..]);
    out
}

/// `Zo7(A)` of `release`: the rebuilt command (tokens re-quoted, `< /dev/null` before the
/// first `|`), or why it bails out.
fn rearrange_pipe_command(release: &Release, a: &str) -> Result<String, PipeBailoutReason> {
    if a.contains('`') {
        return Err(PipeBailoutReason::Backtick);
    }
    if release.bail_subst_keyword && a.contains("$(") {
        return Err(PipeBailoutReason::DollarParen);
    }
    if release.bail_variable && has_variable(a) {
        return Err(PipeBailoutReason::Variable);
    }
    if release.bail_subst_keyword && has_shell_keyword(a) {
        return Err(PipeBailoutReason::ShellKeyword);
    }
    let q = if release.join_continuations {
        join_continuations(a)
    } else {
        a.to_string()
    };
    if release.bail_newline && q.contains('\n') {
        return Err(PipeBailoutReason::Newline);
    }
    if release.bail_unbalanced && escaped_single_quote_close(&q) {
        return Err(PipeBailoutReason::EscapedSingleQuoteClose);
    }
    // 1.0.x does not catch the parse's failure (the call fails there, nothing runs); the
    // bail-out stands for it.
    let tokens = parse_no_env(&q).map_err(|e| PipeBailoutReason::ParseError(e.message))?;
    if release.bail_unbalanced && unbalanced(&q, &tokens) {
        return Err(PipeBailoutReason::Unbalanced);
    }
    // Ef9: index of the first {op: "|"}
    let z = match tokens.iter().position(|t| matches!(t, Token::Op(o) if o == "|")) {
        Some(z) if z > 0 => z,
        _ => return Err(PipeBailoutReason::NoPipeOperator),
    };
    let mut parts = requote_tokens(release.requote, &tokens, 0, z);
    parts.push("< /dev/null".to_owned());
    parts.extend(requote_tokens(release.requote, &tokens, z, tokens.len()));
    Ok(parts.join(" "))
}

/// `sW8(A)`: object with an `op` key (operators and globs).
fn is_op_obj(t: &Token) -> bool {
    matches!(t, Token::Op(_) | Token::Glob(_))
}

fn op_name(t: &Token) -> Option<&str> {
    match t {
        Token::Op(o) => Some(o),
        Token::Glob(_) => Some("glob"),
        _ => None,
    }
}

fn is_fd(s: &str) -> bool {
    matches!(s, "0" | "1" | "2")
}

/// `yf9(A) = /^[A-Za-z_][A-Za-z0-9_]*=/.test(A)`.
fn is_env_assignment(s: &str) -> bool {
    let mut it = s.chars();
    match it.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    for c in it {
        if c == '=' {
            return true;
        }
        if !js::is_word(c) {
            return false;
        }
    }
    false
}

/// `Wo7(A, q, K)`: re-quote tokens `q..K` as `how` says.
fn requote_tokens(how: Requote, a: &[Token], q: usize, k: usize) -> Vec<String> {
    let mut y = Vec::new();
    let mut z = how != Requote::Full; // seen a command word (assignments no longer allowed)
    let mut i = q;
    while i < k {
        let w = &a[i];
        if let (Token::Str(ws), true) = (w, how != Requote::Plain) {
            if is_fd(ws) && i + 2 < k && is_op_obj(&a[i + 1]) {
                let o = op_name(&a[i + 1]);
                let d = match &a[i + 2] {
                    Token::Str(s) => Some(s.as_str()),
                    _ => None,
                };
                if o == Some(">&") && d.is_some_and(is_fd) {
                    y.push(format!("{ws}>&{}", d.unwrap_or_default()));
                    i += 3;
                    continue;
                }
                if o == Some(">") && d == Some("/dev/null") {
                    y.push(format!("{ws}>/dev/null"));
                    i += 3;
                    continue;
                }
                if o == Some(">") {
                    if let Some(h) = d.and_then(|d| d.strip_prefix('&')) {
                        if is_fd(h) {
                            y.push(format!("{ws}>&{h}"));
                            i += 3;
                            continue;
                        }
                    }
                }
            }
        }
        match w {
            Token::Str(ws) => {
                if !z && is_env_assignment(ws) {
                    let eq = ws.find('=').unwrap_or(0);
                    y.push(format!("{}={}", &ws[..eq], quote_str(&ws[eq + 1..])));
                } else {
                    z = true;
                    y.push(quote_str(ws));
                }
            }
            Token::Glob(p) if how == Requote::Full => y.push(p.clone()),
            Token::Glob(_) => y.push("glob".to_owned()),
            Token::Op(o) => {
                y.push(o.clone());
                if how == Requote::Full && (o == "&&" || o == "||" || o == ";") {
                    z = false;
                }
            }
            Token::Comment(_) => {} // no `op` key: silently dropped
        }
        i += 1;
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_observed_example() {
        let p = build_eval_payload(r#"argvprobe 'a != b' "x ! y""#);
        assert_eq!(p.payload, r#""argvprobe 'a \!= b' \"x \! y\"" \< /dev/null"#);
        assert_eq!(p.path, PayloadPath::Default);
        assert_eq!(p.stdin_redirect, StdinRedirect::AppendedToEval);
    }
}
