//! The state of one check: the launch, the witnesses, the hops reported so far, and the
//! comparisons every hop uses (bash's own parse, asked once per text).

use crate::{action, plain, CheckError, Options};
use iec_core::{byte_diff, ActionDifference, FirstDivergence, Hop, HopReport, Mechanism, WitnessKind};
use iec_launches::Launch;
use iec_witness::{BashPool, Parse, WitnessError};
use serde_json::Value;

pub(crate) struct Run<'a> {
    pub(crate) launch: &'a Launch,
    pub(crate) pool: &'a BashPool,
    pub(crate) opts: Options,
    pub(crate) hops: Vec<HopReport>,
    pub(crate) fd: Option<FirstDivergence>,
    /// Parses already asked for in this check (a text is often parsed at several hops).
    pub(crate) parsed: std::cell::RefCell<Vec<(String, Parse)>>,
    /// Set when a plain-text shortcut stood in for a witness.
    pub(crate) shortcut: std::cell::Cell<bool>,
    /// Set by a hop that cannot tell whether the call runs as written: the verdict is `unknown`
    /// with this attribution (if any) and reason.
    pub(crate) undecided: Option<(Option<&'static str>, String)>,
    /// Commands whose program the harness replaces (the program hop).
    pub(crate) substitutions: Vec<iec_core::Substitution>,
}

impl Run<'_> {
    pub(crate) fn push(
        &mut self,
        hop: Hop,
        witness: WitnessKind,
        ok: Option<bool>,
        receipt: Value,
        note: Option<String>,
    ) {
        self.hops.push(HopReport {
            name: hop.name().into(),
            kind: hop.kind(),
            witness,
            corresponds: ok,
            receipt,
            note,
        });
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn diverge(
        &mut self,
        hop: Hop,
        witness: WitnessKind,
        receipt: Value,
        mechanism: Mechanism,
        silent: bool,
        intended: &str,
        received: &str,
        detail: String,
    ) {
        let index = self.hops.len();
        self.push(hop, witness, Some(false), receipt, Some(detail.clone()));
        if self.fd.is_none() {
            self.fd = Some(FirstDivergence {
                hop: index,
                hop_name: hop.name().into(),
                kind: hop.kind(),
                mechanism,
                silent,
                intended: intended.into(),
                received: received.into(),
                diff: byte_diff(intended.as_bytes(), received.as_bytes()),
                detail,
                // Only where the hop compares two shell texts (not a program name, an argv).
                action: matches!(
                    hop,
                    Hop::HarnessRewrite
                        | Hop::Wrapper
                        | Hop::Shell
                        | Hop::Eval
                        | Hop::InnerShell
                        | Hop::Terminal
                )
                .then(|| self.action_difference(intended, received))
                .flatten(),
            });
        }
    }

    /// The first command and word where bash's parses of two texts (asked for already in this
    /// check) differ as actions.
    fn action_difference(&self, intended: &str, received: &str) -> Option<ActionDifference> {
        let parsed = self.parsed.borrow();
        // A plain text's parse is computed, not asked (and not kept).
        let canonical = |t: &str| match parsed.iter().find(|(x, _)| x == t) {
            Some((_, Parse::Ok { canonical })) if !canonical.is_empty() => Some(canonical.clone()),
            _ => match self.plain_parse(t) {
                Some(Parse::Ok { canonical }) => Some(canonical),
                _ => None,
            },
        };
        let (x, y) = (canonical(intended)?, canonical(received)?);
        let (command, intended, received) = action::first_difference(&x, &y)?;
        Some(ActionDifference {
            command,
            intended,
            received,
        })
    }

    /// bash's parse of a plain text, without asking bash: its words, one space apart, as
    /// `declare -f` prints a simple command.
    pub(crate) fn plain_parse(&self, text: &str) -> Option<Parse> {
        if self.opts.full_witness || !plain::is_plain(text) {
            return None;
        }
        self.shortcut.set(true);
        let words: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
        Some(Parse::Ok {
            canonical: format!("    {}", words.join(" ")),
        })
    }

    /// What the outer shell hands on for harness-rendered words (see
    /// [`BashPool::expand_words_as`]); literal words are expanded without asking bash.
    pub(crate) fn expand(
        &self,
        words: &str,
        posix_words: bool,
    ) -> Result<iec_witness::Expansion, CheckError> {
        // The one place words reach an expansion witness: never words whose expansion runs
        // code or reads files (the hops judge those from the text, see `action::runs_code`).
        if let Some(code) = action::runs_code(words) {
            return Err(WitnessError::Refused(format!(
                "`{code}` runs code when expanded; no witness expands it (nothing was run)"
            ))
            .into());
        }
        if !self.opts.full_witness && words.len() <= 8192 {
            if let Some(args) = plain::literal_words(words) {
                self.shortcut.set(true);
                return Ok(iec_witness::Expansion {
                    args,
                    status: 0,
                    diagnostics: String::new(),
                    broke_out: false,
                });
            }
        }
        Ok(self.pool.expand_words_as(words.as_bytes(), posix_words)?)
    }

    /// `dash -n`, skipped for plain texts (dash and bash read them alike).
    pub(crate) fn dash_n(&self, text: &str) -> Result<Result<(), String>, CheckError> {
        if self.plain_parse(text).is_some() {
            return Ok(Ok(()));
        }
        match self.pool.dash_n(text.as_bytes())? {
            Err(message) if message.trim().is_empty() => Err(crashed("dash")),
            r => Ok(r),
        }
    }

    pub(crate) fn parse(&self, text: &str) -> Result<Parse, CheckError> {
        if let Some(p) = self.plain_parse(text) {
            return Ok(p);
        }
        if let Some((_, p)) = self.parsed.borrow().iter().find(|(t, _)| t == text) {
            // A validity-only answer has no canonical form; ask again for it.
            if !matches!(p, Parse::Ok { canonical } if canonical.is_empty()) {
                return Ok(p.clone());
            }
        }
        let p = no_crash(self.pool.parse(text.as_bytes(), wants_extglob(text))?)?;
        self.parsed.borrow_mut().retain(|(t, _)| t != text);
        self.parsed.borrow_mut().push((text.to_string(), p.clone()));
        Ok(p)
    }

    /// [`Run::parse`] of two texts, in one question to bash when neither is known yet.
    pub(crate) fn parse_two(&self, a: &str, b: &str) -> Result<(Parse, Parse), CheckError> {
        let known = |t: &str| {
            self.plain_parse(t).is_some()
                || self
                    .parsed
                    .borrow()
                    .iter()
                    .any(|(x, p)| x == t && !matches!(p, Parse::Ok { canonical } if canonical.is_empty()))
        };
        if known(a) || known(b) || wants_extglob(a) != wants_extglob(b) {
            return Ok((self.parse(a)?, self.parse(b)?));
        }
        let (pa, pb) = self
            .pool
            .parse_pair(a.as_bytes(), b.as_bytes(), wants_extglob(a))?;
        let (pa, pb) = (no_crash(pa)?, no_crash(pb)?);
        for (t, p) in [(a, &pa), (b, &pb)] {
            self.parsed.borrow_mut().retain(|(x, _)| x != t);
            self.parsed.borrow_mut().push((t.to_string(), p.clone()));
        }
        Ok((pa, pb))
    }

    /// Whether bash accepts the text (cheaper than [`Run::parse`]; cached with it).
    pub(crate) fn validate(&self, text: &str) -> Result<Parse, CheckError> {
        if let Some(p) = self.plain_parse(text) {
            return Ok(p);
        }
        if let Some((_, p)) = self.parsed.borrow().iter().find(|(t, _)| t == text) {
            return Ok(p.clone());
        }
        let p = no_crash(self.pool.validate(text.as_bytes(), wants_extglob(text))?)?;
        self.parsed.borrow_mut().push((text.to_string(), p.clone()));
        Ok(p)
    }

    /// Compares two bash texts by bash's own parse. `Ok(None)`: they denote the same commands;
    /// `Ok(Some(parse of received))`: they do not.
    pub(crate) fn same_bash(&self, intended: &str, received: &str) -> Result<Option<Parse>, CheckError> {
        if intended == received {
            return Ok(None);
        }
        let (a, b) = self.parse_two(intended, received)?;
        match (a.canonical(), b.canonical()) {
            (Some(x), Some(y)) if action::same(x, y) => Ok(None),
            _ => Ok(Some(b)),
        }
    }

    /// As [`Run::same_bash`], but `received` may carry the contract-neutral redirect `suffix`
    /// (`< /dev/null`) once more than `intended`, wherever the harness put it (after the
    /// command, before a pipeline's first `|`), where it is neutral: on a command that would
    /// read the harness's stdin anyway ([`action::compare_modulo`]). `Ok(Some((parse, why)))`:
    /// they differ, `why` naming the command whose own input the redirect replaces.
    pub(crate) fn same_bash_modulo(
        &self,
        intended: &str,
        received: &str,
        suffix: Option<&str>,
    ) -> Result<Option<(Parse, Option<String>)>, CheckError> {
        let Some(sfx) = suffix.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(self.same_bash(intended, received)?.map(|p| (p, None)));
        };
        if intended == received {
            return Ok(None);
        }
        // The suffix appended to a text that parses on its own only adds the redirect to its
        // last command (a text that parses only at the end of input, a trailing backslash, would
        // absorb it, and is compared in full; after a final `;`, `&` or newline it is a command
        // of its own, compared in full too: red team round 5). That is neutral unless the text redirects or
        // pipes anything (`bc <<< '2+3' < /dev/null`, `a | b < /dev/null`): without a `<` or
        // `|` in it, no command has an input the suffix could replace; or unless a command in
        // it may change the shell's own stdin for the commands after it (`. ./s.sh; cat`).
        if received.strip_prefix(intended) == suffix
            && !ends_a_command(intended)
            && !intended.contains(['<', '|'])
            && !action::may_change_shell_stdin(intended)
            && matches!(self.validate(intended)?, Parse::Ok { .. })
        {
            return Ok(None);
        }
        let (a, b) = self.parse_two(intended, received)?;
        if let (Some(x), Some(y)) = (a.canonical(), b.canonical()) {
            match action::compare_modulo(x, y, sfx) {
                action::Modulo::Same => return Ok(None),
                action::Modulo::Overrides(why) => return Ok(Some((b, Some(why)))),
                action::Modulo::Differs => {}
            }
        }
        Ok(Some((b, None)))
    }
}

/// Whether the text's last command is already ended (a final `;`, `&` or newline, blanks
/// after it): a suffix appended to it is a command of its own, not a redirection of that one.
fn ends_a_command(text: &str) -> bool {
    text.trim_end_matches([' ', '\t']).ends_with([';', '&', '\n'])
}

/// A witness shell that rejects a text without a word has not found a syntax error: bash and
/// dash always name one. It died (bash 5.2 overflows its stack on some twenty thousand nested
/// `$(`, exit 139, nothing on stderr): a witness limit, not the agent's error.
pub(crate) fn crashed(shell: &str) -> CheckError {
    WitnessError::Limit(format!(
        "{shell} ended without a diagnostic while parsing the text: it crashed (deep nesting, such as \
         thousands of `$(`, overflows its parser's stack), so whether the harness's {shell} would run \
         it cannot be told"
    ))
    .into()
}

/// [`crashed`] for a parse error without a message.
pub(crate) fn no_crash(p: Parse) -> Result<Parse, CheckError> {
    match &p {
        Parse::Error { message } if message.trim().is_empty() => Err(crashed("bash")),
        _ => Ok(p),
    }
}

/// Texts that switch extglob on before anything else are parsed with it on (bash applies
/// `shopt` line by line; a function body is parsed at once). Only a first command line that is
/// exactly `shopt -s extglob` counts: the word in a comment, an argument or a command that may not
/// run (`false && shopt -s extglob`) leaves bash's parser as `bash -n` has it, extglob off.
pub(crate) fn wants_extglob(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| l.trim_end_matches(';').trim_end() == "shopt -s extglob")
}
