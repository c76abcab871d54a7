//! `iec harness learn`: derives a launch file from real runs of marker payloads.
//!
//! One harness run carries a small set of marker payloads (each holds the tag
//! `IECMARK_<nonce>`). From what the witnesses recorded, the launch is derived, not copied:
//!
//! * **wrapper template**: the plain marker's outer text (the `$BASH_EXECUTION_STRING` of the
//!   harness's bash) with the rendered payload replaced by `{{payload}}`, the snapshot path (the
//!   one path under the run's `HOME`) by `{{snapshot}}` and the run's `TMPDIR` by `{{tmp}}`;
//! * **payload rendering**: the one known rendering ([`render::PAYLOADS`]) that, placed in that
//!   template, reproduces the outer text of every rendering marker (quotes, `!`, `$`, backticks,
//!   backslashes, a pipe, command substitution) byte for byte (file names under `{{tmp}}` that
//!   change from call to call aside);
//! * **eval**: the shell that ran the payload (its `/proc/$$/cmdline`, read by a marker) is the
//!   one that received the wrapper, and the quoted words in the slot, expanded by real bash, are
//!   the command: the outer shell parsed it a second time. What the expansion adds after the
//!   command is the `stdin_suffix`;
//! * **spawn argv**: that `/proc/$$/cmdline`, with the wrapper element as `{{wrapper}}`;
//! * **validation**: control-character markers (CR, U+0001, ESC, DEL, U+0085; tab and LF as controls)
//!   that the harness answers with an error tool result before any shell ran, a
//!   command-substitution marker, and an unparsed-line marker (`'$$('`, refused by Claude Code's
//!   own parser from 2.1.317 on);
//! * **snapshot shadowing**: the functions and aliases defined in the harness's shell
//!   (`compgen -A function`, `compgen -a`, with `type -t`/`type -P`) that a plain `bash -c` does
//!   not have.
//!
//! The TOML is parsed back with the `iec-launches` loader before it is returned.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use iec_launches::tree_sitter_gate::Gate;
use iec_launches::{render, Launch};
use serde::Serialize;
use serde_json::{json, Value};

use crate::agree::{predict, RunSpec};
use crate::harness::{Harness, CLAUDE_CODE};
use crate::launch::{HarnessRun, PayloadResult};

/// The start of an error that says the harness ran but the learner cannot describe what it did
/// (a rendering it has no port of, a wrapper shape a launch file cannot hold): a limit of the
/// learner, not of the harness. `crates/iec-lab/scripts/catalog-sweep` lists such versions under
/// this reason kind, apart from the ones that cannot be driven.
pub const UNSUPPORTED: &str = "learner-unsupported: ";

/// What a marker is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MarkerKind {
    /// Its outer text must be reproduced by the learned template and rendering.
    Rendering,
    /// Shown against the learned template (the harness may treat it differently, e.g. leave
    /// out its own stdin redirect), not used to choose.
    Context,
    /// A control character: accepted, or rejected before any shell runs.
    Control,
    /// Reads `HOME`, `TMPDIR`, `PWD` and `/proc/$$/cmdline` of the shell that runs it.
    Environment,
    /// Lists the shell's functions and aliases.
    Functions,
}

/// One marker payload.
#[derive(Debug, Clone, Serialize)]
pub struct Marker {
    /// Short name (`plain`, `squote`, …).
    pub id: String,
    pub kind: MarkerKind,
    /// The tag the command carries (`IECMARK_<nonce>` or `IECMARK_<nonce>_<id>`).
    pub tag: String,
    /// The command the model emits.
    pub command: String,
    /// What the marker is meant to show.
    pub purpose: &'static str,
    /// The control character of a control marker.
    #[serde(skip)]
    pub control: Option<char>,
}

/// The control characters tried, with a name each.
pub const CONTROLS: &[(&str, char)] = &[
    ("cr", '\r'),
    ("soh", '\u{1}'),
    ("esc", '\u{1b}'),
    ("del", '\u{7f}'),
    ("nel", '\u{85}'),
    ("tab", '\t'),
    ("lf", '\n'),
];

/// Where a marker's command sits: alone, piped into `cat`, after `true &&`, or before `; true`.
/// A harness may render piped commands or lists through another path (Claude Code 2.1.72 and
/// 2.0.76 re-tokenise a piped command with shell-quote), so each marker runs in every shape.
pub const SHAPES: &[&str] = &["", "pipe", "and", "seq"];

/// `command` in `shape` (see [`SHAPES`]).
fn shaped(command: &str, shape: &str) -> String {
    match shape {
        "pipe" => format!("{command} | cat"),
        "and" => format!("true && {command}"),
        "seq" => format!("{command}; true"),
        _ => command.to_string(),
    }
}

/// `cat` reading the here-document `<<DELIM` (`delim` as written: quoted or not) with `body`,
/// in `shape`: the shape's operator stays on the `cat` line, the body follows it.
fn heredoc(delim: &str, body: &str, shape: &str) -> String {
    format!("{}\n{body}\nEOF", shaped(&format!("cat <<{delim}"), shape))
}

/// The marker payloads for `nonce` (alphanumeric).
pub fn markers(nonce: &str) -> Vec<Marker> {
    let base = format!("IECMARK_{nonce}");
    let mut out = Vec::new();
    // `f(tag, shape)` gives the command; every shape of [`SHAPES`] is added unless `plain_only`.
    let mut add = |id: &str,
                   kind: MarkerKind,
                   purpose: &'static str,
                   plain_only: bool,
                   f: &dyn Fn(&str, &str) -> String| {
        for shape in SHAPES {
            if plain_only && !shape.is_empty() {
                continue;
            }
            let full = if shape.is_empty() {
                id.to_string()
            } else {
                format!("{id}.{shape}")
            };
            let tag = if full == "plain" {
                base.clone()
            } else {
                format!("{base}_{}", full.replace(['.', '-'], "_"))
            };
            out.push(Marker {
                id: full,
                kind,
                command: f(&tag, shape),
                tag,
                purpose,
                control: None,
            });
        }
    };
    use MarkerKind::*;
    let simple = |g: fn(&str) -> String| move |t: &str, shape: &str| shaped(&g(t), shape);
    add(
        "plain",
        Rendering,
        "the wrapper around a plain command",
        false,
        &simple(|t| format!("argvprobe {t}")),
    );
    add(
        "squote",
        Rendering,
        "a single quote",
        false,
        &simple(|t| format!("argvprobe {t} \"it's\"")),
    );
    add(
        "bang",
        Rendering,
        "! next to a single quote",
        false,
        &simple(|t| format!("argvprobe {t} 'a != b' \"x ! y\"")),
    );
    add(
        "bang-dq",
        Rendering,
        "! in double quotes, no single quote",
        false,
        &simple(|t| format!("argvprobe {t} \"a != b\"")),
    );
    add(
        "bang-bare",
        Rendering,
        "unquoted ! in and next to words, next to a quoted word",
        false,
        &simple(|t| format!("argvprobe {t} x!y foo! 'q r' !w")),
    );
    add(
        "dollar",
        Rendering,
        "$, backticks and arithmetic, quoted and live",
        false,
        &simple(|t| format!("argvprobe {t} '$HOME' \"\\$HOME\" '`date`' \"$((1+2))\"")),
    );
    add(
        "param",
        Rendering,
        "$NAME and ${…} in single quotes, no backtick or $( beside them",
        false,
        &simple(|t| format!("argvprobe {t} '$HOME' 'a${{b}}c'")),
    );
    add(
        "special",
        Rendering,
        "$$ and $? (shell-quote's parse empties them)",
        false,
        &simple(|t| format!("argvprobe {t} \"PID=$$\" \"st=$?\"")),
    );
    add(
        "background",
        Rendering,
        "a command ending in `&` (Gemini CLI up to 0.39 appends `;` to every other command)",
        true,
        &simple(|t| format!("argvprobe {t} bg &")),
    );
    add(
        "ansi",
        Rendering,
        "$'…' with escapes and a quote",
        false,
        &simple(|t| format!("argvprobe {t} $'a\\tb' $'it\\'s' $'\\x41!'")),
    );
    add(
        "tilde",
        Rendering,
        "~ and braces that expand and that do not",
        false,
        &simple(|t| format!("argvprobe {t} a~b ~/d 'k=~' {{a,b}} x{{1..2}} {{y}}")),
    );
    add(
        "backslash",
        Rendering,
        "backslashes",
        false,
        &simple(|t| format!("argvprobe {t} 'M\\\\N' \"a\\\\b\" c\\ d")),
    );
    add(
        "dquote",
        Rendering,
        "escaped double quotes",
        false,
        &simple(|t| format!("argvprobe {t} \"say \\\"hi\\\"\"")),
    );
    add(
        "semicolon",
        Rendering,
        "\\\\; quoted and unquoted (find -exec double escaping)",
        false,
        &simple(|t| format!("argvprobe {t} 'a\\\\;b' c\\\\;")),
    );
    add(
        "redir",
        Rendering,
        "a redirection of stderr (in a pipe when shaped so)",
        false,
        &simple(|t| format!("argvprobe {t} 'a b' 2>&1")),
    );
    add(
        "redir-in",
        Context,
        "a redirection of stdin (in a pipe when shaped so; a harness may then leave out its own)",
        false,
        &simple(|t| format!("argvprobe {t} \"c'd\" < /dev/null")),
    );
    add(
        "pipe",
        Rendering,
        "a pipe and $$",
        true,
        &simple(|t| format!("argvprobe {t} \"PID=$$\" | cat")),
    );
    add(
        "wrapped",
        Rendering,
        "a model-written bash -c wrapper",
        true,
        &simple(|t| format!("bash -c 'argvprobe {t} a'")),
    );
    // Which generation of Gemini CLI's `stripShellWrapper` runs (`iec_launches::gemini_strip`):
    // 0.1.15 strips `bash /c` but not `BASH -c`, 0.11.3 `BASH -c` but not a path, 0.36.0 a path,
    // 0.44.0 a leading `trap '' HUP; ` as well, 0.51.0 re-parses a double-quoted script.
    add(
        "wrapped-upper",
        Rendering,
        "a model-written `BASH -c` wrapper (Gemini CLI strips it case-insensitively from 0.11.3 on)",
        true,
        &simple(|t| format!("BASH -c 'argvprobe {t} a'")),
    );
    add(
        "wrapped-slash-c",
        Rendering,
        "a model-written `bash /c` wrapper (Gemini CLI 0.1.15–0.10 strips `/c` after any shell)",
        true,
        &simple(|t| format!("bash /c 'argvprobe {t} a'")),
    );
    add(
        "wrapped-path",
        Rendering,
        "a model-written `/bin/bash -c` wrapper (Gemini CLI strips a shell with a path from 0.36.0 on)",
        true,
        &simple(|t| format!("/bin/bash -c 'argvprobe {t} a'")),
    );
    add(
        "wrapped-dq",
        Rendering,
        "a model-written `bash -c \"…\"` with escaped quotes (Gemini CLI re-parses it with shell-quote from 0.51.0 on; before, it slices the quotes off)",
        true,
        &simple(|t| format!("bash -c \"argvprobe {t} \\\"a b\\\"\"")),
    );
    add(
        "hup-guard",
        Rendering,
        "a leading `trap '' HUP; ` (Gemini CLI 0.44.0 removes it: its `stripHupGuard`)",
        true,
        &simple(|t| format!("trap '' HUP; argvprobe {t} a")),
    );
    // Which text the harness's input rules judge when it strips a model-written wrapper:
    // `$(…)` (and `${x@P}`, for a tree-sitter gate) outside single quotes only before the
    // strip, or only after it.
    add(
        "gate-raw",
        Context,
        "`$(…)` and `${x@P}` in single quotes inside a model-written `bash -c \"…\"`: refused only where the harness checks the text before its strip (Gemini CLI 0.1.19–0.39)",
        true,
        &simple(|t| format!("bash -c \"argvprobe {t} '$(echo a)' '${{x@P}}'\"")),
    );
    add(
        "gate-stripped",
        Context,
        "`$(…)` in double quotes inside a model-written `bash -c '…'`: refused only where the harness checks what its strip leaves (Gemini CLI 0.1.15–0.1.20 and 0.40 on)",
        true,
        &simple(|t| format!("bash -c 'argvprobe {t} \"$(echo a)\"'")),
    );
    add(
        "wrapped-backslash",
        Context,
        "a model-written bash -c wrapper ending in a backslash (tells the order of a wrapper strip and a trim)",
        true,
        &simple(|t| format!("bash -c 'argvprobe {t} \"$0\"' \\")),
    );
    add(
        "prompt-transform",
        Context,
        "`${x@P}` in a command that never runs: Gemini CLI 0.13–0.39's tree-sitter gate refuses the prompt transform before any shell runs",
        true,
        &simple(|t| format!("argvprobe {t} a; false && argvprobe {t} \"${{x@P}}\"")),
    );
    add(
        "spaces",
        Rendering,
        "leading and trailing white space",
        true,
        &simple(|t| format!("  argvprobe {t} b  ")),
    );
    add(
        "unparsed",
        Context,
        "`$$(` in single quotes: a text bash and zsh may read differently (Claude Code refuses it before any shell runs from 2.1.317 on: its unparsed-line check)",
        true,
        &simple(|t| format!("argvprobe {t} '$$('")),
    );
    add(
        "subst",
        Context,
        "command substitution with $(…)",
        false,
        &simple(|t| format!("argvprobe {t} \"$(echo s)\" x$(echo u)")),
    );
    add(
        "backtick",
        Context,
        "command substitution with backticks",
        false,
        &simple(|t| format!("argvprobe {t} `echo t`")),
    );
    add(
        "root-slash",
        Context,
        "an assignment ending in `/` before the command: Gemini CLI 0.1.x–0.10 take `X=/` for the command and find no command root in it",
        true,
        &simple(|t| format!("X=/ argvprobe {t} a")),
    );
    add(
        "root-group",
        Context,
        "a command in braces: Gemini CLI 0.1.1–0.1.13 delete `{}()` and find no command root before the leading space",
        true,
        &simple(|t| format!("{{ argvprobe {t} a; }}")),
    );
    add(
        "procsub-out",
        Context,
        "`>(…)`: Gemini CLI 0.8 on refuse it as command substitution, 0.1.15–0.7 do not",
        true,
        &simple(|t| format!(": >(true); argvprobe {t} a")),
    );
    add(
        "backtick-open",
        Context,
        "an unclosed backtick in a comment: Gemini CLI 0.40 on refuse it, 0.1.15–0.10 (a backtick counts where it closes one) do not",
        true,
        &simple(|t| format!("argvprobe {t} a # `")),
    );
    add(
        "heredoc",
        Context,
        "a quoted here-document",
        false,
        &|t, shape| heredoc("'EOF'", &format!("{t} $HOME"), shape),
    );
    add(
        "heredoc-live",
        Context,
        "an unquoted here-document with expansions",
        false,
        &|t, shape| heredoc("EOF", &format!("{t} $((1+2)) \\$HOME 'q'"), shape),
    );
    add(
        "env",
        Environment,
        "HOME, TMPDIR, PWD and the argv of the shell that runs the command",
        true,
        &|t, _| {
            format!("mapfile -d \"\" IECA < /proc/$$/cmdline; argvprobe {t} \"$HOME\" \"${{TMPDIR-}}\" \"$PWD\" \"${{IECA[@]}}\"")
        },
    );
    add(
        "functions",
        Functions,
        "functions and aliases defined in the shell that runs the command, with each function's text",
        true,
        &|t, _| {
            format!("for f in $(compgen -A function) $(compgen -a); do argvprobe {t} \"$f\" \"$(type -t \"$f\")\" \"$(type -P \"$f\")\" \"$(declare -f \"$f\")\"; done; argvprobe {t} .")
        },
    );
    for (name, c) in CONTROLS {
        let tag = format!("{base}_{name}");
        out.push(Marker {
            id: name.to_string(),
            kind: Control,
            command: format!("argvprobe {tag} 'a{c}b'"),
            tag,
            purpose: "a control character in single quotes",
            control: Some(*c),
        });
    }
    out
}

/// A fresh nonce: 10 hex digits from the clock and the process id.
pub fn fresh_nonce() -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let x = (t as u64) ^ ((std::process::id() as u64) << 32) ^ (t >> 64) as u64;
    // A mix step so that close clocks give different digits.
    let x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!("{:010x}", x >> 24)
}

/// What one marker showed, and what was concluded from it.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence {
    pub marker: String,
    pub kind: MarkerKind,
    pub purpose: String,
    pub command: String,
    /// A bash of the harness received a text carrying the marker's tag.
    pub reached_shell: bool,
    /// That outer text, with the run's paths as `{{snapshot}}` and `{{tmp}}`.
    pub outer: Option<String>,
    /// The argv of each probe call through the harness.
    pub probe: Vec<Vec<String>>,
    /// The same in the direct `bash -c` run.
    pub direct_probe: Vec<Vec<String>>,
    pub tool_result: Option<Value>,
    /// For rendering markers: which known renderings reproduce the outer text in a template
    /// derived from the plain marker.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub renderings: BTreeMap<String, bool>,
    /// Where the learned template filled with the learned rendering differs from the outer
    /// text (`None` when it reproduces it).
    pub template_diff: Option<String>,
    /// `iec check` on the learned launch agrees with the observed verdict (rendering,
    /// context and control markers).
    pub agrees: Option<bool>,
    pub finding: String,
}

/// The learned launch's self-check: the held hazard payloads run through the real harness and
/// `iec check` on the learned launch compared with each observed verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    /// How the held payloads were made (generator and seed).
    pub held: String,
    pub payloads: usize,
    pub agree: usize,
    /// How many the real harness changed (observed verdict not `corresponds`).
    pub observed_changed: usize,
    /// One line per disagreement (`iec harness agree`'s text form).
    pub disagreements: Vec<String>,
    pub elapsed_ms: u128,
}

/// A learned launch.
#[derive(Debug, Clone, Serialize)]
pub struct Learned {
    pub harness: String,
    pub version: String,
    /// The launch file's text.
    pub toml: String,
    /// The same, parsed back with the `iec-launches` loader.
    pub launch: Launch,
    pub evidence: Vec<Evidence>,
    pub nonce: String,
    /// The harness run's wall time.
    pub elapsed_ms: u128,
    /// The self-check on held payloads (`None` when it was not run).
    pub verification: Option<Verification>,
}

impl Learned {
    /// The markers on which `iec check` with the learned launch disagrees with what was
    /// observed, and the held payloads on which it does, as lines.
    pub fn disagreements(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .evidence
            .iter()
            .filter(|e| e.agrees == Some(false))
            .map(|e| format!("marker {}: {:?}: {}", e.marker, e.command, e.finding))
            .collect();
        if let Some(v) = &self.verification {
            out.extend(v.disagreements.iter().cloned());
        }
        out
    }

    /// Every marker and held payload agrees.
    pub fn agrees(&self) -> bool {
        self.disagreements().is_empty()
    }

    /// The launch file as written with `--force` when it disagrees: the disagreements listed
    /// in comment lines at the top.
    pub fn toml_with_disagreements(&self) -> String {
        let d = self.disagreements();
        if d.is_empty() {
            return self.toml.clone();
        }
        let mut t = format!(
            "# WRITTEN WITH --force: iec check on this launch disagrees with the real harness on {}:\n",
            d.len()
        );
        for line in &d {
            for (k, l) in line.lines().enumerate() {
                t.push_str(if k == 0 { "#   " } else { "#     " });
                t.push_str(&l.replace('\r', "\\r"));
                t.push('\n');
            }
        }
        t.push_str(&self.toml);
        t
    }

    /// The `--format json` document.
    pub fn document(&self, launch_file: Option<&std::path::Path>) -> Value {
        json!({
            "harness": self.harness,
            "version": self.version,
            "launch": self.launch.id,
            "launch_file": launch_file.map(|p| p.display().to_string()),
            "toml": self.toml,
            "nonce": self.nonce,
            "elapsed_ms": self.elapsed_ms as u64,
            "evidence": self.evidence,
            "verification": self.verification,
            "agrees": self.agrees(),
            "disagreements": self.disagreements(),
        })
    }
}

/// The held payloads' seeds: distinct from those of the tests' 300-payload sets.
pub const HELD_SEED: u64 = 4517;

/// `n` held hazard payloads: alternately from [`crate::hazard_payloads`] and
/// [`crate::action_hazard_payloads`] with [`HELD_SEED`].
pub fn held_payloads(n: usize) -> Vec<crate::agree::Payload> {
    let a = crate::hazard_payloads(n.div_ceil(2), HELD_SEED);
    let b = crate::action_hazard_payloads(n / 2, HELD_SEED);
    let mut out = Vec::new();
    let (mut a, mut b) = (a.into_iter(), b.into_iter());
    loop {
        let (x, y) = (a.next(), b.next());
        if x.is_none() && y.is_none() {
            break;
        }
        for (id, command) in x.into_iter().chain(y) {
            out.push(crate::agree::Payload { id, command });
        }
    }
    out
}

/// How to learn.
#[derive(Debug, Clone)]
pub struct LearnOptions {
    /// Held payloads to verify the learned launch on (0: no verification).
    pub verify: usize,
}

impl Default for LearnOptions {
    fn default() -> Self {
        LearnOptions { verify: 40 }
    }
}

/// Runs the markers through real Claude Code and learns its launch (no verification).
pub fn learn(spec: &RunSpec) -> anyhow::Result<Learned> {
    learn_harness(&CLAUDE_CODE, spec, &LearnOptions { verify: 0 })
}

/// Runs the markers through the real harness `h` (in as few launches as it takes), learns its
/// launch, and verifies it on `opts.verify` held payloads.
pub fn learn_harness(h: &dyn Harness, spec: &RunSpec, opts: &LearnOptions) -> anyhow::Result<Learned> {
    let nonce = fresh_nonce();
    let ms = markers(&nonce);
    let started = Instant::now();
    // One launch: a harness that takes fewer calls a session ([`Harness::max_calls`]) goes on
    // in further sessions in the same sandbox, so every marker sees the paths the environment
    // marker read.
    let cmds: Vec<&str> = ms.iter().map(|m| m.command.as_str()).collect();
    let run = crate::harness::checked(h.title(), &spec.version, cmds.len(), h.run(spec, &cmds)?)?;
    let mut learned = learn_from_run_with(h, &spec.version, &nonce, &ms, &run)?;
    learned.elapsed_ms = started.elapsed().as_millis();
    if opts.verify > 0 {
        let t = Instant::now();
        let held = held_payloads(opts.verify);
        let observed = crate::harness::run_observed(h, spec, &held)?;
        let rep = crate::agree::agree_observed_launch(&spec.version, &learned.launch, &observed)?;
        learned.verification = Some(Verification {
            held: format!(
                "hazard_payloads({}, {HELD_SEED}) and action_hazard_payloads({}, {HELD_SEED}), interleaved",
                opts.verify.div_ceil(2),
                opts.verify / 2
            ),
            payloads: rep.results.len(),
            agree: rep.results.iter().filter(|a| a.verdict_agree).count(),
            observed_changed: observed.iter().filter(|o| o.verdict != "corresponds").count(),
            disagreements: rep
                .disagreements()
                .into_iter()
                .map(crate::agree::agreement_line)
                .collect(),
            elapsed_ms: t.elapsed().as_millis(),
        });
    }
    Ok(learned)
}

/// One marker's result, as read for learning.
#[derive(Clone)]
struct Seen<'a> {
    m: &'a Marker,
    r: &'a PayloadResult,
    /// The raw outer text carrying the tag.
    outer: Option<String>,
    /// The harness's error text when it refused the call before any shell ran.
    rejected: Option<String>,
}

/// The harness's refusal text, as an `InputValidationError: <message>` line when the tool
/// result is `<tool_use_error>Name: [{"message": …}, …]</tool_use_error>`.
pub fn rejection_message(content: &str) -> String {
    let t = content.trim();
    let t = t
        .strip_prefix("<tool_use_error>")
        .and_then(|t| t.strip_suffix("</tool_use_error>"))
        .unwrap_or(t)
        .trim();
    if let Some((name, rest)) = t.split_once(": ") {
        if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(rest) {
            let msgs: Vec<&str> = items.iter().filter_map(|i| i.get("message")?.as_str()).collect();
            if !msgs.is_empty() {
                return format!("{name}: {}", msgs.join("; "));
            }
        }
    }
    t.to_string()
}

/// Characters that end a path in shell text.
fn path_end(s: &str) -> usize {
    s.find(|c: char| c.is_whitespace() || "'\"`;&|<>()$\\".contains(c))
        .unwrap_or(s.len())
}

/// The run's paths and how they are written in a launch.
struct Paths {
    home: Vec<String>,
    tmp: Vec<String>,
    /// Paths that must not remain in a learned template (cwd, sandbox root).
    forbidden: Vec<String>,
    snapshot: Option<String>,
    /// The directory the harness is installed in (its npm cache directory).
    install: Option<String>,
}

impl Paths {
    /// `s` with the snapshot path as `{{snapshot}}` and the temporary directory as `{{tmp}}`;
    /// a path inside the harness's own installation (Codex puts its `codex-path` directory on
    /// PATH) as `{{tmp}}/<its last component>`, since launch files name no install location.
    fn norm(&self, s: &str) -> String {
        let mut out = s.to_string();
        if let Some(inst) = self.install.as_deref().filter(|i| i.len() > 1) {
            let key = format!("{inst}/");
            let mut o = String::new();
            let mut rest = out.as_str();
            while let Some(i) = rest.find(&key) {
                o.push_str(&rest[..i]);
                let p = &rest[i..];
                let p = &p[..path_end(p)];
                let last = p.rsplit('/').next().unwrap_or("");
                o.push_str("{{tmp}}/");
                o.push_str(last);
                rest = &rest[i + p.len()..];
            }
            o.push_str(rest);
            out = o;
        }
        if let Some(snap) = &self.snapshot {
            out = replace_path(&out, snap, "{{snapshot}}");
        }
        let mut tmps = self.tmp.clone();
        tmps.sort_by_key(|t| std::cmp::Reverse(t.len()));
        for t in &tmps {
            out = replace_path(&out, t, "{{tmp}}");
        }
        out
    }

    /// The first run path left in a normalized text.
    fn leftover(&self, s: &str) -> Option<String> {
        self.home
            .iter()
            .chain(&self.tmp)
            .chain(&self.forbidden)
            .chain(&self.install)
            .find(|p| !p.is_empty() && s.contains(p.as_str()))
            .cloned()
    }
}

/// `s` with each occurrence of the path `path` that is a whole path or a leading part of one
/// (the next character ends the path or is `/`) written as `with`. Claude Code from 2.1.154 on
/// gives its shell `TMPDIR=<tmp>/claude-0` (0: the uid) and still writes its cwd file as
/// `<tmp>/claude-XXXX-cwd`: where XXXX starts with 0, a plain text replacement would eat it.
fn replace_path(s: &str, path: &str, with: &str) -> String {
    if path.is_empty() {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(path) {
        let after = &rest[i + path.len()..];
        let ends = after.is_empty() || after.starts_with('/') || path_end(after) == 0;
        out.push_str(&rest[..i]);
        out.push_str(if ends { with } else { path });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// File names under `{{tmp}}/` masked (they change from call to call: `claude-XXXX-cwd`).
fn mask(s: &str) -> String {
    let key = "{{tmp}}/";
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(key) {
        out.push_str(&rest[..i + key.len()]);
        rest = &rest[i + key.len()..];
        let end = path_end(rest);
        out.push('*');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The file names that follow `{{tmp}}/` in a normalized text.
fn tmp_names(s: &str) -> Vec<String> {
    let key = "{{tmp}}/";
    s.match_indices(key)
        .map(|(i, _)| {
            let r = &s[i + key.len()..];
            r[..path_end(r)].to_string()
        })
        .collect()
}

/// `s` with the file names after `{{tmp}}/` replaced, in order, by `names`.
fn rename_tmp(s: &str, names: &[String]) -> String {
    let key = "{{tmp}}/";
    let mut out = String::new();
    let mut rest = s;
    let mut k = 0;
    while let Some(i) = rest.find(key) {
        out.push_str(&rest[..i + key.len()]);
        rest = &rest[i + key.len()..];
        let end = path_end(rest);
        out.push_str(names.get(k).map_or(&rest[..end], String::as_str));
        k += 1;
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// One name for a file name seen in several calls: the name itself when it never changed;
/// else the common prefix and suffix of the names seen, with the varying middle written as
/// `0a1b…` of the first name's length (`claude-edb8-cwd`, `claude-7cfd-cwd` → `claude-0a1b-cwd`).
fn stable_name(seen: &[String]) -> String {
    let Some(first) = seen.first() else {
        return String::new();
    };
    if seen.iter().all(|n| n == first) {
        return first.clone();
    }
    let chars: Vec<Vec<char>> = seen.iter().map(|n| n.chars().collect()).collect();
    let c0 = &chars[0];
    let min = chars.iter().map(Vec::len).min().unwrap_or(0);
    let pre = (0..min)
        .take_while(|&i| chars.iter().all(|c| c[i] == c0[i]))
        .count();
    let suf = (0..min - pre)
        .take_while(|&i| chars.iter().all(|c| c[c.len() - 1 - i] == c0[c0.len() - 1 - i]))
        .count();
    let middle = c0.len() - pre - suf;
    let mut out: String = c0[..pre].iter().collect();
    out.extend("0a1b".chars().cycle().take(middle));
    out.extend(&c0[c0.len() - suf..]);
    out
}

/// A wrapper template and the rendering it goes with.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Candidate {
    /// Rewrite steps applied to the command before it is rendered.
    steps: Vec<&'static str>,
    rendering: &'static str,
    template: String,
}

impl Candidate {
    fn fill(&self, command: &str) -> String {
        self.template.replace(
            "{{payload}}",
            &render::payload(self.rendering, &rewritten(&self.steps, command), None).words,
        )
    }
}

/// TOML basic string.
fn toml_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            c if c.is_control() => o.push_str(&format!("\\u{:04X}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn toml_array(items: &[String]) -> String {
    format!(
        "[{}]",
        items.iter().map(|s| toml_str(s)).collect::<Vec<_>>().join(", ")
    )
}

/// `YYYY-MM-DD` (UTC) of a Unix time.
pub fn utc_date(unix_secs: u64) -> String {
    // Howard Hinnant's civil_from_days.
    let z = (unix_secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn argvs(recs: &[crate::probe::ProbeRecord]) -> Vec<Vec<String>> {
    recs.iter().map(|p| p.argv.clone()).collect()
}

/// The probe records whose first argument is `tag`.
fn tagged<'a>(recs: &'a [crate::probe::ProbeRecord], tag: &str) -> Vec<&'a [String]> {
    recs.iter()
        .filter(|p| p.argv.first().is_some_and(|a| a == tag))
        .map(|p| &p.argv[1..])
        .collect()
}

/// Learns Claude Code's launch from a finished run of `ms` (results in the same order).
pub fn learn_from_run(
    version: &str,
    nonce: &str,
    ms: &[Marker],
    run: &HarnessRun,
) -> anyhow::Result<Learned> {
    learn_from_run_with(&CLAUDE_CODE, version, nonce, ms, run)
}

/// The rewrite steps a harness may apply before rendering, as the learner tries them: none,
/// each step alone, each ordered pair.
fn step_sets() -> Vec<Vec<&'static str>> {
    let steps: Vec<&'static str> = render::REWRITES
        .iter()
        .copied()
        .filter(|s| *s != "space-join")
        .collect();
    let mut out = vec![vec![]];
    for a in &steps {
        out.push(vec![*a]);
    }
    for a in &steps {
        for b in &steps {
            if a != b {
                out.push(vec![*a, *b]);
            }
        }
    }
    out
}

/// `text` after the rewrite `steps`.
fn rewritten(steps: &[&str], text: &str) -> String {
    let mut t = text.to_string();
    for st in steps {
        t = render::rewrite_step(st, &t).0;
    }
    t
}

/// Learns the launch of harness `h` from a finished run of `ms` (results in the same order):
/// the run's paths from the environment marker, then each learner of the module's list in turn
/// (wrapper template and payload rendering, eval, spawn argv, validation, snapshot shadowing),
/// then the launch file and what each marker showed.
pub fn learn_from_run_with(
    h: &dyn Harness,
    version: &str,
    nonce: &str,
    ms: &[Marker],
    run: &HarnessRun,
) -> anyhow::Result<Learned> {
    anyhow::ensure!(run.results.len() == ms.len(), "one result per marker");
    let seen = read_markers(ms, run);
    let by_id = |id: &str| seen.iter().find(|s| s.m.id == id).expect("marker");
    let plain = by_id("plain");
    let Some(plain_outer) = plain.outer.clone() else {
        bail!(
            "the plain marker {:?} reached no bash of the harness (tool result: {:?}; {}); nothing to learn from",
            plain.m.command,
            plain.r.tool_result,
            how_it_ended(run),
        );
    };
    let env = read_environment(by_id("env"), run)?;
    let paths = learn_paths(&env, &plain_outer)?;
    let template = learn_template(&seen, plain, &plain_outer, &paths)?;
    let parse = learn_second_parse(&template.chosen, plain, &env)?;
    let spawn = learn_spawn(run, &env, &paths)?;
    // The gate markers are judged once the rules are known (`learn_checked_text`).
    let ungated: Vec<Seen> = seen
        .iter()
        .filter(|s| !is_gate_marker(&s.m.id))
        .cloned()
        .collect();
    let mut validation = learn_validation(&ungated)?;
    let strips = template
        .chosen
        .steps
        .iter()
        .any(|s| iec_launches::gemini_strip::generation(s).is_some());
    validation.checked_text = learn_checked_text(&seen, &validation, strips)?;
    let shadowing = learn_shadowing(by_id("functions"), &validation)?;
    let (tool, input_field) = h.tool(run).context("no main-loop request listed a shell tool")?;
    let facts = Facts {
        tool,
        input_field,
        template,
        parse,
        spawn,
        validation,
        shadowing,
    };
    let t = launch_toml(h, version, ms.len(), &facts);
    let launch =
        Launch::from_toml(&t).with_context(|| format!("the learned launch file does not load:\n{t}"))?;
    let evidence = evidence(h, &seen, &launch, &paths, &facts)?;
    Ok(Learned {
        harness: h.name().into(),
        version: version.into(),
        toml: t,
        launch,
        evidence,
        nonce: nonce.into(),
        elapsed_ms: run.elapsed_ms,
        verification: None,
    })
}

/// What the learners found, from which the launch file is written.
struct Facts {
    tool: String,
    input_field: Option<String>,
    template: Template,
    parse: SecondParse,
    spawn: Spawn,
    validation: Validation,
    shadowing: Shadowing,
}

/// Each marker with its result: the outer text that carried its tag, and the harness's refusal.
fn read_markers<'a>(ms: &'a [Marker], run: &'a HarnessRun) -> Vec<Seen<'a>> {
    ms.iter()
        .zip(&run.results)
        .map(|(m, r)| {
            let outer = r.bash_strings.iter().find(|s| s.contains(&m.tag)).cloned();
            // No bash received the marker's tag and nothing ran, but the harness answered.
            let rejected = match &r.tool_result {
                Some(t) if outer.is_none() && r.probe.is_empty() => Some(rejection_message(&t.content)),
                _ => None,
            };
            Seen {
                m,
                r,
                outer,
                rejected,
            }
        })
        .collect()
}

/// What the environment marker read through the harness and directly.
struct Environment {
    /// The wrapper text that carried the marker.
    outer: String,
    /// `HOME`, `TMPDIR`, `PWD` and then `/proc/$$/cmdline` of the harness's shell.
    through: Vec<String>,
    /// `HOME`, `TMPDIR`, `PWD` of the direct run.
    direct: Vec<String>,
}

impl Environment {
    /// The argv of the shell that ran the marker (`/proc/$$/cmdline`).
    fn cmdline(&self) -> &[String] {
        &self.through[3..]
    }
}

/// How the harness run ended, for an error: its exit status, requests, last stderr line.
fn how_it_ended(run: &HarnessRun) -> String {
    let said = run
        .stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    format!(
        "the harness exited {:?} after {} requests to the model; its last stderr line: {said:?}",
        run.exit_code,
        run.requests.len()
    )
}

/// Reads the environment marker.
fn read_environment(env: &Seen, run: &HarnessRun) -> anyhow::Result<Environment> {
    let Some(outer) = env.outer.clone() else {
        bail!(
            "the environment marker reached no bash of the harness (tool result: {:?}; {})",
            env.r.tool_result,
            how_it_ended(run),
        );
    };
    let env_rec = tagged(&env.r.probe, &env.m.tag);
    let env_direct = tagged(&env.r.direct.probe, &env.m.tag);
    let (Some(env_h), Some(env_d)) = (env_rec.first(), env_direct.first()) else {
        bail!(
            "the environment marker's probe did not run (harness: {:?}, direct: {:?})",
            env.r.probe,
            env.r.direct.probe
        );
    };
    anyhow::ensure!(
        env_h.len() >= 4 && env_d.len() >= 3,
        "short environment record {env_h:?}"
    );
    Ok(Environment {
        outer,
        through: env_h.to_vec(),
        direct: env_d.to_vec(),
    })
}

/// The run's paths, the harness's view and the direct run's (the driver's sandbox), and the
/// snapshot: the one path under HOME (or under the run's private root, which holds HOME and
/// TMPDIR: Codex keeps it in its CODEX_HOME there) that the plain marker's wrapper names,
/// outside TMPDIR.
fn learn_paths(env: &Environment, plain_outer: &str) -> anyhow::Result<Paths> {
    let (env_h, env_d) = (&env.through, &env.direct);
    let mut home = vec![env_h[0].clone(), env_d[0].clone()];
    let mut tmp = vec![env_h[1].clone(), env_d[1].clone()];
    home.retain(|p| !p.is_empty());
    tmp.retain(|p| !p.is_empty());
    home.dedup();
    tmp.dedup();
    let cwds = vec![env_h[2].clone(), env_d[2].clone()];
    let mut private_roots = Vec::new();
    for h in &home {
        if let Some(parent) = std::path::Path::new(h).parent() {
            let parent = parent.display().to_string();
            if parent.len() > 1 && tmp.iter().any(|t| t.starts_with(&format!("{parent}/"))) {
                private_roots.push(parent);
            }
        }
    }
    let mut forbidden: Vec<String> = cwds.iter().chain(&private_roots).cloned().collect();
    forbidden.retain(|p| p.len() > 1);
    let mut under_home: Vec<String> = Vec::new();
    let roots: Vec<String> = home.iter().chain(&private_roots).cloned().collect();
    let under = |p: &str, dirs: &[String]| dirs.iter().any(|d| p == d || p.starts_with(&format!("{d}/")));
    for h in &roots {
        let key = format!("{h}/");
        for (i, _) in plain_outer.match_indices(&key) {
            let p = &plain_outer[i..];
            let p = p[..path_end(p)].to_string();
            if !under(&p, &tmp) && !under(&p, &cwds) && !under_home.contains(&p) {
                under_home.push(p);
            }
        }
    }
    if under_home.len() > 1 {
        bail!("{UNSUPPORTED}the wrapper names more than one path under HOME ({under_home:?}); which is the snapshot?");
    }
    Ok(Paths {
        home,
        tmp,
        forbidden,
        snapshot: under_home.pop(),
        install: crate::launch::harness_cache_dir()
            .ok()
            .map(|d| d.display().to_string()),
    })
}

/// The learned wrapper template and payload rendering, with what was tried.
struct Template {
    /// Every template and rendering the plain marker allows.
    candidates: Vec<Candidate>,
    /// The one that reproduces every rendering marker, its `{{tmp}}` file names made stable.
    chosen: Candidate,
    /// The file names seen after each `{{tmp}}/` of the template, call by call.
    names_seen: Vec<Vec<String>>,
    /// The name written for each.
    stable: Vec<String>,
}

/// A rendering marker that reached a shell (its outer text must be reproduced), and a context
/// marker that did.
fn reaches(s: &Seen) -> bool {
    s.outer.is_some() && s.rejected.is_none()
}

/// Whether candidate `c` reproduces marker `s`'s outer text (file names under `{{tmp}}` aside).
fn reproduces(paths: &Paths, c: &Candidate, s: &Seen) -> bool {
    let actual = paths.norm(s.outer.as_deref().unwrap_or(""));
    mask(&c.fill(&s.m.command)) == mask(&actual)
}

/// **Wrapper template** and **payload rendering**: each known rendering of the plain marker
/// after each set of known rewrite steps, at each place it occurs in the plain marker's outer
/// text, is a candidate; the one that reproduces every rendering marker is learned.
fn learn_template(seen: &[Seen], plain: &Seen, plain_outer: &str, paths: &Paths) -> anyhow::Result<Template> {
    let norm_plain = paths.norm(plain_outer);
    let mut candidates = Vec::new();
    for steps in step_sets() {
        let text = rewritten(&steps, &plain.m.command);
        for kind in render::PAYLOADS {
            let words = render::payload(kind, &text, None).words;
            for (i, _) in norm_plain.match_indices(&words) {
                let template = format!(
                    "{}{{{{payload}}}}{}",
                    &norm_plain[..i],
                    &norm_plain[i + words.len()..]
                );
                let c = Candidate {
                    steps: steps.clone(),
                    rendering: kind,
                    template,
                };
                if !candidates.contains(&c) {
                    candidates.push(c);
                }
            }
        }
    }
    if candidates.is_empty() {
        bail!(
            "{UNSUPPORTED}no ported rendering ({}) of {:?} occurs in the wrapper text {:?}",
            render::PAYLOADS.join(", "),
            plain.m.command,
            norm_plain
        );
    }
    let mut chosen = choose(seen, &candidates, paths)?;
    // File names under {{tmp}} that change from call to call get one stable name.
    let outers_norm: Vec<String> = seen
        .iter()
        .filter_map(|s| s.outer.as_deref())
        .map(|o| paths.norm(o))
        .collect();
    let template_names = tmp_names(&chosen.template);
    let mut names_seen: Vec<Vec<String>> = vec![Vec::new(); template_names.len()];
    for o in &outers_norm {
        let ns = tmp_names(o);
        if ns.len() == template_names.len() {
            for (j, n) in ns.into_iter().enumerate() {
                if !names_seen[j].contains(&n) {
                    names_seen[j].push(n);
                }
            }
        }
    }
    let stable: Vec<String> = names_seen.iter().map(|v| stable_name(v)).collect();
    chosen.template = rename_tmp(&chosen.template, &stable);
    if let Some(p) = paths.leftover(&chosen.template) {
        bail!("{UNSUPPORTED}the wrapper template still names a path of the run ({p}) that a launch has no placeholder for: {:?}", chosen.template);
    }
    Ok(Template {
        candidates,
        chosen,
        names_seen,
        stable,
    })
}

/// Whether the harness's own source runs rewrite step `a` before `b`, an order no marker tells
/// apart: Gemini CLI's `tools/shell.js` (read in 0.11.3 and 0.17.1; 0.61.0's bundle does the
/// same) calls `stripShellWrapper(this.params.command)` and then `.trim()` on what it returns.
/// Every generation of the strip (`iec_launches::gemini_strip::STEPS`) runs before either trim.
fn source_before(a: &str, b: &str) -> bool {
    iec_launches::gemini_strip::generation(a).is_some()
        && matches!(b, "gemini-trim" | "gemini-trim-semicolon")
}

/// Of candidates that differ only in the order of the same rewrite steps, the one whose order
/// [`source_before`] holds; `None` when they differ otherwise or no one order is known.
fn source_order<'a>(many: &[&'a Candidate]) -> Option<&'a Candidate> {
    let first = many.first()?;
    let mut sorted_first = first.steps.clone();
    sorted_first.sort_unstable();
    let same_but_order = many.iter().all(|c| {
        let mut s = c.steps.clone();
        s.sort_unstable();
        c.rendering == first.rendering && c.template == first.template && s == sorted_first
    });
    if !same_but_order {
        return None;
    }
    // The pairs of a candidate's steps the source orders, and whether each is in that order.
    let ordered = |c: &Candidate| -> Vec<bool> {
        let mut out = vec![];
        for (i, a) in c.steps.iter().enumerate() {
            for (j, b) in c.steps.iter().enumerate() {
                if source_before(a, b) {
                    out.push(i < j);
                }
            }
        }
        out
    };
    let known: Vec<&'a Candidate> = many
        .iter()
        .copied()
        .filter(|c| ordered(c).iter().all(|ok| *ok))
        .collect();
    match known[..] {
        [c] if !ordered(c).is_empty() => Some(c),
        _ => None,
    }
}

/// The one candidate consistent with the markers: it reproduces every rendering marker and each
/// rewrite step it names changes some marker's text (a step that changes nothing is not
/// learned); fewest steps first.
fn choose(seen: &[Seen], candidates: &[Candidate], paths: &Paths) -> anyhow::Result<Candidate> {
    let rendering_markers: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.m.kind == MarkerKind::Rendering && reaches(s))
        .collect();
    let consistent: Vec<&Candidate> = {
        let all: Vec<&Candidate> = candidates
            .iter()
            .filter(|c| rendering_markers.iter().all(|s| reproduces(paths, c, s)))
            .filter(|c| {
                c.steps.iter().all(|st| {
                    rendering_markers
                        .iter()
                        .any(|s| render::rewrite_step(st, &s.m.command).0 != s.m.command)
                })
            })
            .collect();
        let fewest = all.iter().map(|c| c.steps.len()).min().unwrap_or(0);
        let all: Vec<&Candidate> = all.into_iter().filter(|c| c.steps.len() == fewest).collect();
        // Still more than one (rewrite steps in another order): the one that also reproduces
        // the most context markers (a harness may build some of those differently, so they do
        // not rule a candidate out).
        let context: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.m.kind == MarkerKind::Context && reaches(s))
            .collect();
        let score = |c: &Candidate| context.iter().filter(|s| reproduces(paths, c, s)).count();
        let best = all.iter().map(|c| score(c)).max().unwrap_or(0);
        all.into_iter().filter(|c| score(c) == best).collect()
    };
    match consistent.as_slice() {
        [c] => Ok((*c).clone()),
        [] => {
            let mut why = String::new();
            for c in candidates {
                let bad = rendering_markers
                    .iter()
                    .find(|s| !reproduces(paths, c, s))
                    .expect("inconsistent");
                let actual = paths.norm(bad.outer.as_deref().unwrap_or(""));
                why.push_str(&format!(
                    "\n  {} (rewrites {:?}) in {:?}: marker {} differs {}",
                    c.rendering,
                    c.steps,
                    c.template,
                    bad.m.id,
                    iec_core::byte_diff(mask(&c.fill(&bad.m.command)).as_bytes(), mask(&actual).as_bytes())
                ));
            }
            bail!("{UNSUPPORTED}no ported rendering reproduces every marker's wrapper text:{why}");
        }
        many => match source_order(many) {
            Some(c) => Ok(c.clone()),
            None => bail!(
                "{UNSUPPORTED}the markers do not tell these renderings apart: {:?}",
                many.iter()
                    .map(|c| (&c.steps, c.rendering, &c.template))
                    .collect::<Vec<_>>()
            ),
        },
    }
}

/// How the wrapper's slot reaches the command: parsed a second time by the outer shell
/// (`eval`), by a second bash (`inner_shell`), or not at all.
struct SecondParse {
    eval: bool,
    inner_shell: bool,
    /// What the expansion of the slot's words adds after the command.
    suffix: Option<String>,
    note: String,
}

/// **Eval**: the shell that ran the command is the one that received the wrapper (its
/// /proc/$$/cmdline holds the wrapper), and the slot's words, expanded by real bash, are the
/// command text; or a second bash received them as its `-c` text.
fn learn_second_parse(chosen: &Candidate, plain: &Seen, env: &Environment) -> anyhow::Result<SecondParse> {
    let cmdline = env.cmdline();
    let same_process = cmdline.contains(&env.outer);
    let words = render::payload(
        chosen.rendering,
        &rewritten(&chosen.steps, &plain.m.command),
        None,
    )
    .words;
    let expansion = iec_witness::global()
        .expand_words(words.as_bytes())
        .context("expanding the slot's words with the bash witness")?;
    let eval_text = expansion.args.join(" ");
    let plain_ran = tagged(&plain.r.probe, &plain.m.tag).len() == 1;
    let inner_text_logged = plain.r.bash_strings.contains(&eval_text);
    if chosen.rendering == "raw" {
        return Ok(SecondParse {
            eval: false,
            inner_shell: false,
            suffix: None,
            note: "the command is spliced into the wrapper unquoted: one parse".to_string(),
        });
    }
    anyhow::ensure!(
        plain_ran,
        "the plain marker's probe did not run once through the harness: {:?}",
        plain.r.probe
    );
    let Some(rest) = eval_text.strip_prefix(&plain.m.command) else {
        bail!(
            "{UNSUPPORTED}the slot's words {words:?} expand to {eval_text:?}, which does not start with the command {:?}",
            plain.m.command
        );
    };
    let suffix = (!rest.is_empty()).then(|| rest.to_string());
    if same_process {
        Ok(SecondParse {
            eval: true,
            inner_shell: false,
            suffix,
            note: format!(
                "the shell that ran the command received the wrapper (its /proc/$$/cmdline), and the slot's words expand to {eval_text:?}: the outer shell parsed the command a second time (eval)"
            ),
        })
    } else if inner_text_logged {
        Ok(SecondParse {
            eval: false,
            inner_shell: true,
            suffix,
            note: format!("a second bash received {eval_text:?} as its -c text (inner shell)"),
        })
    } else {
        bail!("{UNSUPPORTED}the quoted command ran, but neither in the wrapper's shell nor in a logged inner bash (cmdline {cmdline:?})");
    }
}

/// The shell the harness starts.
struct Spawn {
    /// Its argv, the wrapper element as `{{wrapper}}`.
    argv: Vec<String>,
    /// `bash` or `dash`.
    shell: &'static str,
    login: bool,
}

/// **Spawn argv**: the argv of the bash that received the wrapper (the argv witness logs each
/// bash's own argv; the marker's /proc/$$/cmdline is the same process when there is no inner
/// shell), read as bash reads it.
fn learn_spawn(run: &HarnessRun, env: &Environment, paths: &Paths) -> anyhow::Result<Spawn> {
    let (cmdline, env_outer) = (env.cmdline(), &env.outer);
    let spawned: Vec<String> = run
        .bash_argvs
        .iter()
        .find(|a| a.contains(env_outer))
        .cloned()
        .or_else(|| cmdline.contains(env_outer).then(|| cmdline.to_vec()))
        .with_context(|| {
            format!(
                "no bash argv holds the wrapper text (the argv witness logged {} argvs; the marker's shell had {cmdline:?})",
                run.bash_argvs.len()
            )
        })?;
    let wrapper_at: Vec<usize> = spawned
        .iter()
        .enumerate()
        .filter(|(_, a)| *a == env_outer)
        .map(|(i, _)| i)
        .collect();
    if wrapper_at.len() != 1 {
        bail!("{UNSUPPORTED}the shell's argv {spawned:?} does not hold the wrapper text exactly once");
    }
    let argv0 = spawned.first().cloned().unwrap_or_default();
    let invocation = iec_launches::invocation::bash_invocation(&argv0, &spawned[1..])
        .map_err(|e| anyhow::anyhow!("bash refuses the harness's argv {spawned:?}: {e}"))?;
    anyhow::ensure!(
        invocation.command.map(|c| c + 1) == Some(wrapper_at[0]),
        "bash reads the argv {spawned:?} with command string {:?}, not the wrapper at {}",
        invocation.command.map(|c| &spawned[c + 1]),
        wrapper_at[0]
    );
    anyhow::ensure!(
        !invocation.interactive,
        "{UNSUPPORTED}the harness starts an interactive bash ({spawned:?}); a launch does not model that"
    );
    let argv: Vec<String> = spawned
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if i == wrapper_at[0] {
                "{{wrapper}}".to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    if let Some(p) = argv.iter().find_map(|a| paths.leftover(a)) {
        bail!("{UNSUPPORTED}the shell's argv {argv:?} names a path of the run ({p})");
    }
    Ok(Spawn {
        argv,
        shell: shell_of(&argv0)?,
        login: invocation.login,
    })
}

/// `bash` or `dash`, for the program `argv0` (a `sh` by what it links to).
fn shell_of(argv0: &str) -> anyhow::Result<&'static str> {
    let base = std::path::Path::new(argv0.trim_start_matches('-'))
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(match base.as_str() {
        "bash" => "bash",
        "dash" => "dash",
        "sh" => match std::fs::canonicalize(argv0)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .as_deref()
        {
            Some("bash") => "bash",
            Some("dash") => "dash",
            other => {
                bail!("{UNSUPPORTED}the harness runs {argv0} ({other:?}), which is neither bash nor dash")
            }
        },
        other => bail!("{UNSUPPORTED}the harness runs {argv0} ({other}), which is neither bash nor dash"),
    })
}

/// What the harness refuses before any shell runs, each rule with the harness's message.
struct Validation {
    /// Which text the rules judge where the harness strips a wrapper (`None`: not learned).
    checked_text: Option<String>,
    reject_control_chars: Option<String>,
    reject_newlines: Option<String>,
    reject_command_substitution: Option<String>,
    /// Which detector decides `reject_command_substitution` (`None`: 0.40 on's).
    command_substitution_detector: Option<String>,
    /// Gemini CLI 0.1.x–0.10's command-root refusal.
    refuse_no_command_root: Option<iec_launches::RefuseNoCommandRoot>,
    /// A plain substring test refuses (Gemini CLI 0.1.9, 0.1.13): learned when the markers'
    /// command-substitution refusals differ (the message holds the command) or when only some
    /// of them are refused.
    reject_substrings: Option<iec_launches::RejectSubstrings>,
    /// The harness's own parser refuses texts it may read otherwise than bash
    /// ([`iec_launches::unparsed`]): learned from the `unparsed` marker.
    refuse_unparsed_line: Option<String>,
    /// Gemini CLI's tree-sitter gate ([`iec_launches::tree_sitter_gate`]): learned when the
    /// markers refused with one message are exactly those a gate refuses; its message.
    refuse_tree_sitter_error: Option<String>,
    /// Which gate (the `@P` rule, parts).
    tree_sitter_gate: Gate,
}

/// Gemini CLI's tree-sitter gate, when the markers show it: the message and the gate. The gate
/// is learned when every marker the plain gate refuses was refused with one message; then the
/// markers refused with that message must be exactly those one of the gates refuses (plain, with
/// the `@P` rule — the `prompt-transform` marker —, with parts, with both; the first that fits),
/// or the harness is not supported.
fn learn_tree_sitter_gate(seen: &[Seen]) -> anyhow::Result<Option<(String, Gate)>> {
    use iec_launches::tree_sitter_gate::refuses_with;
    let gated: Vec<&Seen> = seen
        .iter()
        .filter(|s| refuses_with(&s.m.command, Gate::default()).is_some())
        .collect();
    // Every one of them refused with one message, or this harness has no such gate (a refusal
    // of some of them is another rule's, judged with the other markers).
    let Some(msg) = gated.first().and_then(|s| s.rejected.clone()) else {
        return Ok(None);
    };
    if gated.iter().any(|s| s.rejected.as_ref() != Some(&msg)) {
        return Ok(None);
    }
    let observed: Vec<&str> = seen
        .iter()
        .filter(|s| s.rejected.as_ref() == Some(&msg))
        .map(|s| s.m.id.as_str())
        .collect();
    let predicted = |gate: Gate| -> Vec<&str> {
        seen.iter()
            .filter(|s| refuses_with(&s.m.command, gate).is_some())
            .map(|s| s.m.id.as_str())
            .collect()
    };
    let gates =
        [(false, false), (true, false), (false, true), (true, true)].map(|(prompt_transform, parts)| Gate {
            prompt_transform,
            parts,
        });
    if let Some(gate) = gates.into_iter().find(|g| predicted(*g) == observed) {
        return Ok(Some((msg, gate)));
    }
    let plain = predicted(Gate::default());
    let unexplained: Vec<&&str> = observed.iter().filter(|id| !plain.contains(id)).collect();
    bail!(
        "{UNSUPPORTED}the harness refuses {unexplained:?} with its parse gate's message ({msg:?}), which no tree-sitter gate refuses (its parser reads them without an error)"
    )
}

impl Validation {
    /// Whether `s` was refused by the launch's command-substitution rule (either kind).
    fn substitution_refused(&self, s: &Seen) -> bool {
        let Some(got) = &s.rejected else {
            return false;
        };
        self.reject_command_substitution.as_ref() == Some(got)
            || self
                .reject_substrings
                .as_ref()
                .is_some_and(|r| &r.message_for(&s.m.command) == got)
    }
}

/// A harness that refuses every text holding `$(` (or a backtick, or either) by a plain
/// substring test, quoted or not (Gemini CLI 0.1.9: `$(` or a backtick, the refused command in
/// its message; 0.1.13: `$(` only). Learned when the markers refused with the first
/// substitution refusal's message (each marker's text in it read as `{{command}}`) are exactly
/// those that hold one of the strings; the parse gate's refusals aside.
fn learn_reject_substrings(
    seen: &[Seen],
    gate_refused: impl Fn(&Seen) -> bool,
) -> Option<iec_launches::RejectSubstrings> {
    let template = |s: &Seen| {
        s.rejected
            .as_ref()
            .map(|r| r.replace(s.m.command.as_str(), "{{command}}"))
    };
    let first = seen
        .iter()
        .find(|s| substitutes(&s.m.id) && s.rejected.is_some())?;
    let message = template(first)?;
    let ids = |keep: &dyn Fn(&Seen) -> bool| -> Vec<&str> {
        seen.iter()
            .filter(|s| !gate_refused(s) && keep(s))
            .map(|s| s.m.id.as_str())
            .collect()
    };
    let observed = ids(&|s| template(s).as_ref() == Some(&message));
    [&["$(", "`"][..], &["$("], &["`"]]
        .into_iter()
        .map(|subs| iec_launches::RejectSubstrings {
            substrings: subs.iter().map(|s| s.to_string()).collect(),
            message: message.clone(),
        })
        .find(|rule| ids(&|s| rule.find(&s.m.command).is_some()) == observed)
}

/// Gemini CLI 0.1.x–0.10's command-root refusal, when the `root-slash` marker was refused (by
/// no earlier rule, `explained`): its message (the marker's text in it as `{{command}}`) and the
/// function whose texts without a root are exactly the markers refused with that message
/// (`gemini-0.1.1` also refuses `root-group`), or the harness is not supported.
fn learn_command_root(
    seen: &[Seen],
    explained: impl Fn(&Seen) -> bool,
) -> anyhow::Result<Option<iec_launches::RefuseNoCommandRoot>> {
    let Some(slash) = seen.iter().find(|s| s.m.id == "root-slash") else {
        return Ok(None);
    };
    let Some(msg) = slash.rejected.as_ref().filter(|_| !explained(slash)) else {
        return Ok(None);
    };
    let message = msg.replace(slash.m.command.as_str(), "{{command}}");
    let ids = |keep: &dyn Fn(&Seen) -> bool| -> Vec<&str> {
        seen.iter()
            .filter(|s| !explained(s) && keep(s))
            .map(|s| s.m.id.as_str())
            .collect()
    };
    let observed =
        ids(&|s| s.rejected.as_deref() == Some(message.replace("{{command}}", &s.m.command).as_str()));
    for rule in ["gemini-0.1.1", "gemini-0.1.15"] {
        if ids(&|s| !iec_launches::render::gemini_has_command_root(&s.m.command, rule)) == observed {
            return Ok(Some(iec_launches::RefuseNoCommandRoot {
                rule: rule.to_string(),
                message,
            }));
        }
    }
    bail!(
        "{UNSUPPORTED}the harness refuses {observed:?} with the message it refused `X=/ argvprobe …` with ({msg:?}), which no command-root function of Gemini CLI's explains"
    )
}

/// Which of Gemini CLI's `detectCommandSubstitution` refused exactly the markers refused with
/// the command-substitution message `msg` (the parse gate's refusals aside): `None` for 0.40
/// on's (or when none fits exactly: the verification on held payloads then judges),
/// `gemini-0.8.2` or `gemini-0.1.15` for the older ones (`procsub-out`, `backtick-open`).
fn learn_substitution_detector(
    seen: &[Seen],
    msg: &str,
    gate_refused: impl Fn(&Seen) -> bool,
) -> Option<String> {
    use iec_launches::render::{command_substitution_outside_single_quotes, gemini_0_1_15_substitution};
    let ids = |keep: &dyn Fn(&Seen) -> bool| -> Vec<&str> {
        seen.iter()
            .filter(|s| !gate_refused(s) && keep(s))
            .map(|s| s.m.id.as_str())
            .collect()
    };
    let observed = ids(&|s| s.rejected.as_deref() == Some(msg));
    let modern = ids(&|s| command_substitution_outside_single_quotes(&s.m.command).is_some());
    if modern == observed {
        return None;
    }
    [("gemini-0.8.2", true), ("gemini-0.1.15", false)]
        .into_iter()
        .find(|(_, out)| ids(&|s| gemini_0_1_15_substitution(&s.m.command, *out).is_some()) == observed)
        .map(|(name, _)| name.to_string())
}

/// Whether a marker is a command-substitution one (`subst`, `backtick`, in any shape).
fn substitutes(id: &str) -> bool {
    let stem = id.split('.').next().unwrap_or(id);
    stem == "subst" || stem == "backtick"
}

/// The markers that tell which text a harness's input rules judge.
fn is_gate_marker(id: &str) -> bool {
    id == "gate-raw" || id == "gate-stripped"
}

/// **Checked text**: where the harness strips a model-written wrapper, whether its rules judge
/// the text before the strip (the `gate-raw` marker refused), after it (`gate-stripped`), or
/// both; a refusal must carry a learned rule's message. `None` without a strip, or when
/// neither marker was refused (nothing tells).
fn learn_checked_text(seen: &[Seen], v: &Validation, strips: bool) -> anyhow::Result<Option<String>> {
    let mut refused = [false; 2];
    for (k, id) in ["gate-raw", "gate-stripped"].into_iter().enumerate() {
        let Some(s) = seen.iter().find(|s| s.m.id == id) else {
            bail!("no {id} marker");
        };
        let Some(msg) = &s.rejected else {
            continue;
        };
        let rule = [
            &v.reject_command_substitution,
            &v.refuse_tree_sitter_error,
            &v.reject_control_chars,
            &v.reject_newlines,
            &v.refuse_unparsed_line,
        ]
        .iter()
        .any(|m| {
            // 0.1.15–0.1.20 refuse the stripped text in `execute()`, which puts "Could not
            // execute command due to invalid parameters: " before the rule's message.
            m.as_ref()
                .is_some_and(|m| msg == m || msg.strip_suffix(m.as_str()).is_some_and(|p| p.ends_with(": ")))
        }) || v
            .reject_substrings
            .as_ref()
            .is_some_and(|r| *msg == r.message_for(&s.m.command))
            || v.refuse_no_command_root
                .as_ref()
                .is_some_and(|r| *msg == r.message.replace("{{command}}", &s.m.command));
        anyhow::ensure!(
            rule,
            "{UNSUPPORTED}the harness refused marker {id} ({:?}) with a message no learned rule has: {msg:?}",
            s.m.command
        );
        refused[k] = true;
    }
    if !strips {
        return Ok(None);
    }
    Ok(match refused {
        [true, true] => Some("both".into()),
        [true, false] => Some("raw".into()),
        [false, true] => Some("stripped".into()),
        [false, false] => None,
    })
}

/// **Validation**: the control-character markers the harness refuses before any shell ran (CR,
/// U+0001, ESC, DEL, U+0085: control characters, C1 included; CR and LF: newlines), and whether it refuses command
/// substitution. Any other refusal is not a rule a launch can say.
fn learn_validation(seen: &[Seen]) -> anyhow::Result<Validation> {
    let by_id = |id: &str| seen.iter().find(|s| s.m.id == id).expect("marker");
    let (refuse_tree_sitter_error, tree_sitter_gate) = match learn_tree_sitter_gate(seen)? {
        Some((msg, gate)) => (Some(msg), gate),
        None => (None, Gate::default()),
    };
    // A refusal by the parse gate, explained by it.
    let gate_refused =
        |s: &Seen| refuse_tree_sitter_error.is_some() && s.rejected == refuse_tree_sitter_error;
    let mut rejected_controls = Vec::new();
    let mut accepted_controls = Vec::new();
    for s in seen
        .iter()
        .filter(|s| s.m.kind == MarkerKind::Control && !gate_refused(s))
    {
        if s.rejected.is_some() {
            rejected_controls.push(s.m.id.clone());
        } else if s.outer.is_some() {
            accepted_controls.push(s.m.id.clone());
        } else {
            bail!(
                "control marker {} neither reached a bash nor was refused (tool result {:?})",
                s.m.id,
                s.r.tool_result
            );
        }
    }
    let msg_of = |id: &str| by_id(id).rejected.clone().unwrap_or_default();
    let set = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (reject_control_chars, reject_newlines) = if rejected_controls.is_empty() {
        (None, None)
    } else if rejected_controls == set(&["cr", "soh", "esc", "del", "nel"]) {
        (Some(msg_of("cr")), None)
    } else if rejected_controls == set(&["cr", "lf"]) {
        (None, Some(msg_of("lf")))
    } else {
        bail!(
            "{UNSUPPORTED}the harness refuses {rejected_controls:?} and accepts {accepted_controls:?}: no launch validation rule says that"
        );
    };
    let subst = by_id("subst");
    let mut reject_command_substitution = subst.rejected.clone();
    let mut reject_substrings = None;
    // Every substitution marker refused with the same message, or none; else a plain substring
    // test explains exactly the refusals, or the harness is not supported.
    let subst_refusals: Vec<&Seen> = seen
        .iter()
        .filter(|s| substitutes(&s.m.id) && s.rejected.is_some())
        .collect();
    if !subst_refusals.is_empty() && subst_refusals.iter().any(|s| s.rejected != subst.rejected) {
        if let Some(rule) = learn_reject_substrings(seen, gate_refused) {
            reject_command_substitution = None;
            reject_substrings = Some(rule);
        }
    }
    if reject_substrings.is_none()
        && !subst_refusals.is_empty()
        && subst_refusals.iter().any(|s| s.rejected != subst.rejected)
    {
        bail!(
            "{UNSUPPORTED}the harness refuses some command-substitution markers and not others: {:?}",
            seen.iter()
                .filter(|s| substitutes(&s.m.id))
                .map(|s| (&s.m.id, s.rejected.is_some()))
                .collect::<Vec<_>>()
        );
    }
    let substring_rule = |s: &Seen| {
        reject_substrings
            .as_ref()
            .is_some_and(|r| s.rejected.as_ref() == Some(&r.message_for(&s.m.command)))
    };
    // The unparsed marker (`'$$('`) holds `$(`: a substring test's refusal is not this rule.
    let unparsed_marker = by_id("unparsed");
    let refuse_unparsed_line = unparsed_marker
        .rejected
        .clone()
        .filter(|_| !substring_rule(unparsed_marker));
    // A refusal by a rule learned so far.
    let learned_rule = |s: &Seen| {
        gate_refused(s)
            || substring_rule(s)
            || (s.rejected.is_some()
                && [
                    &reject_command_substitution,
                    &reject_control_chars,
                    &reject_newlines,
                    &refuse_unparsed_line,
                ]
                .iter()
                .any(|m| **m == s.rejected))
    };
    let refuse_no_command_root = learn_command_root(seen, learned_rule)?;
    let root_rule = |s: &Seen| {
        refuse_no_command_root
            .as_ref()
            .is_some_and(|r| s.rejected.as_ref() == Some(&r.message.replace("{{command}}", &s.m.command)))
    };
    let command_substitution_detector = reject_command_substitution
        .as_ref()
        .and_then(|msg| learn_substitution_detector(seen, msg, gate_refused));
    for s in seen {
        // A refusal with the command-substitution marker's message is that rule (`$((…))` holds
        // `$(`); whether iec check predicts it is judged with the other markers. So is a refusal
        // with the unparsed-line marker's message on a text the model calls certain.
        let same_rule = reject_command_substitution.is_some() && s.rejected == reject_command_substitution;
        let unparsed = refuse_unparsed_line.is_some()
            && s.rejected == refuse_unparsed_line
            && iec_launches::unparsed::unparsed_line(&s.m.command).is_some_and(|u| u.certain);
        // A marker plain bash rejects too (`c\\; | cat`: `;` then `|`) may be refused by a
        // harness that parses commands first (Gemini CLI 0.17's "could not be parsed safely"):
        // iec check calls such a text `unknown` (generation) on every launch.
        let bash_rejects = s.r.direct.exit_code == Some(2)
            && s.r.direct.probe.is_empty()
            && s.r.direct.stderr.contains("syntax error");
        if s.rejected.is_some()
            && s.m.kind != MarkerKind::Control
            && !substitutes(&s.m.id)
            && !same_rule
            && !substring_rule(s)
            && !root_rule(s)
            && !unparsed
            && !bash_rejects
            && !gate_refused(s)
        {
            bail!(
                "the harness refused marker {} ({:?}): {:?}",
                s.m.id,
                s.m.command,
                s.rejected
            );
        }
    }
    Ok(Validation {
        checked_text: None,
        reject_control_chars,
        reject_newlines,
        reject_command_substitution,
        command_substitution_detector,
        refuse_no_command_root,
        reject_substrings,
        refuse_unparsed_line,
        refuse_tree_sitter_error,
        tree_sitter_gate,
    })
}

/// The programs the harness's shell shadows with functions or aliases.
struct Shadowing {
    /// The functions marker was refused by the command-substitution rule: nothing learned.
    refused: bool,
    shadowed: Vec<String>,
    /// One note per shadowed name.
    notes: Vec<String>,
    /// The substitutes read from the shadowing functions' texts (`declare -f`).
    functions: Vec<iec_launches::substitutes::SeenFunction>,
    /// The built-in behaviour table that describes those functions, when exactly one does.
    substitutes: Option<String>,
}

/// **Snapshot shadowing**: the functions and aliases defined in the harness's shell that a plain
/// `bash -c` does not have, from the functions marker `fns`.
fn learn_shadowing(fns: &Seen, validation: &Validation) -> anyhow::Result<Shadowing> {
    let fn_recs = tagged(&fns.r.probe, &fns.m.tag);
    // A harness that refuses command substitution refuses this marker too (Gemini CLI): then
    // no shadowing is learned, and the evidence says why.
    let refused = validation.substitution_refused(fns);
    anyhow::ensure!(
        refused || fn_recs.last().is_some_and(|r| r == &["."]),
        "the functions marker did not run to its end through the harness: {:?}",
        fns.r.probe
    );
    let fn_direct: Vec<String> = tagged(&fns.r.direct.probe, &fns.m.tag)
        .iter()
        .filter(|r| r.len() >= 3)
        .map(|r| r[0].clone())
        .collect();
    let mut shadowed = Vec::new();
    let mut notes = Vec::new();
    let mut functions = Vec::new();
    for r in fn_recs.iter().filter(|r| r.len() >= 3) {
        let (name, kind, program) = (&r[0], &r[1], &r[2]);
        if name.starts_with('_') || fn_direct.contains(name) || shadowed.contains(name) {
            continue;
        }
        shadowed.push(name.clone());
        if let Some(f) = r
            .get(3)
            .and_then(|text| iec_launches::substitutes::read_function(name, text))
        {
            functions.push(f);
        }
        notes.push(if program.is_empty() {
            format!("{name} ({kind}; no {name} program on PATH)")
        } else {
            format!("{name} ({kind}, shadows the {name} program on PATH)")
        });
    }
    // A table is named only when exactly one describes the functions: two would mean two
    // tables claim the same snapshot, and none a snapshot no table was shown on (its calls stay
    // "diverges").
    let substitutes = match iec_launches::substitutes::Table::describing(&functions)[..] {
        [id] if !functions.is_empty() => Some(id.to_string()),
        _ => None,
    };
    Ok(Shadowing {
        refused,
        shadowed,
        notes,
        functions,
        substitutes,
    })
}

/// The launch file's text.
fn launch_toml(h: &dyn Harness, version: &str, markers: usize, f: &Facts) -> String {
    let chosen = &f.template.chosen;
    let date = utc_date(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    );
    let os = std::env::consts::OS;
    let id = format!("{}-{version}-{os}-learned", h.name());
    let mut t = String::new();
    t.push_str(&format!(
        "# {} {version} on {os}, learned by `iec harness learn` from {markers} marker payloads run through the\n# real harness ({date}); `iec harness learn --format json` prints what each marker showed.\n",
        h.title(),
    ));
    t.push_str(&format!("id = {}\n", toml_str(&id)));
    t.push_str(&format!("harness = {}\n", toml_str(h.name())));
    t.push_str(&format!("version = {}\n", toml_str(version)));
    t.push_str(&format!("os = {}\n", toml_str(os)));
    t.push_str(&format!("tool = {}\n", toml_str(&f.tool)));
    if let Some(field) = &f.input_field {
        t.push_str(&format!("input_field = {}\n", toml_str(field)));
    }
    t.push_str(&format!(
        "source = {}\n",
        toml_str(&format!("learned by iec harness learn from real runs on {date}"))
    ));
    let v = &f.validation;
    if v.reject_control_chars.is_some()
        || v.reject_newlines.is_some()
        || v.reject_command_substitution.is_some()
        || v.reject_substrings.is_some()
        || v.refuse_no_command_root.is_some()
        || v.refuse_unparsed_line.is_some()
        || v.refuse_tree_sitter_error.is_some()
    {
        t.push_str("\n[validate]\n");
        for (k, v) in [
            ("reject_control_chars", &v.reject_control_chars),
            ("reject_newlines", &v.reject_newlines),
            ("reject_command_substitution", &v.reject_command_substitution),
            ("refuse_unparsed_line", &v.refuse_unparsed_line),
            ("refuse_tree_sitter_error", &v.refuse_tree_sitter_error),
        ] {
            if let Some(v) = v {
                t.push_str(&format!("{k} = {}\n", toml_str(v)));
            }
        }
        if let Some(r) = &v.refuse_no_command_root {
            t.push_str(&format!(
                "refuse_no_command_root = {{ rule = {}, message = {} }}\n",
                toml_str(&r.rule),
                toml_str(&r.message)
            ));
        }
        if let Some(d) = &v.command_substitution_detector {
            t.push_str(&format!("command_substitution_detector = {}\n", toml_str(d)));
        }
        if let Some(c) = &v.checked_text {
            t.push_str(&format!("checked_text = {}\n", toml_str(c)));
        }
        if let Some(r) = &v.reject_substrings {
            t.push_str(&format!(
                "reject_substrings = {{ substrings = {}, message = {} }}\n",
                toml_array(&r.substrings),
                toml_str(&r.message)
            ));
        }
        if v.tree_sitter_gate.prompt_transform {
            t.push_str("tree_sitter_prompt_transform = true\n");
        }
        if v.tree_sitter_gate.parts {
            t.push_str("tree_sitter_parts = true\n");
        }
    }
    if !chosen.steps.is_empty() {
        t.push_str("\n[rewrite]\n");
        t.push_str(&format!(
            "steps = {}\n",
            toml_array(&chosen.steps.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        ));
    }
    t.push_str("\n[wrapper]\n");
    t.push_str(&format!("template = {}\n", toml_str(&chosen.template)));
    t.push_str(&format!("payload = {}\n", toml_str(chosen.rendering)));
    t.push_str(&format!("eval = {}\n", f.parse.eval));
    if f.parse.inner_shell {
        t.push_str("inner_shell = true\n");
    }
    if let Some(s) = &f.parse.suffix {
        t.push_str(&format!("stdin_suffix = {}\n", toml_str(s)));
    }
    t.push_str("\n[spawn]\n");
    t.push_str(&format!("argv = {}\n", toml_array(&f.spawn.argv)));
    t.push_str(&format!("shell = {}\n", toml_str(f.spawn.shell)));
    if f.spawn.login {
        t.push_str("login = true\n");
    }
    let s = &f.shadowing;
    if !s.shadowed.is_empty() {
        t.push_str("\n[snapshot]\n");
        t.push_str(&format!("shadowed = {}\n", toml_array(&s.shadowed)));
        t.push_str(&format!(
            "note = {}\n",
            toml_str(&format!(
                "defined in the harness's shell after the snapshot, not in a plain bash -c: {}",
                s.notes.join(", ")
            ))
        ));
        if let Some(id) = &s.substitutes {
            t.push_str(&format!(
                "# Learned: the snapshot's {} start what this behaviour table describes (the same\n# argv[0], words and passthrough patterns, read from `declare -f`).\n",
                s.functions
                    .iter()
                    .filter(|f| {
                        iec_launches::substitutes::Table::builtin_ref(id).is_some_and(|t| t.program(&f.name).is_some())
                    })
                    .map(|f| format!("{} ({})", f.name, f.argv0))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            t.push_str(&format!("substitutes = {}\n", toml_str(id)));
        }
    }
    t
}

/// Whether the first divergence of `p` is the harness's `< /dev/null` replacing a command's
/// standard input (the action reader reports the added redirection as `0<…`).
fn replaces_stdin(p: &iec_core::CheckReport) -> bool {
    p.first_divergence
        .as_ref()
        .and_then(|f| f.action.as_ref())
        .is_some_and(|a| a.intended == "(nothing)" && a.received.starts_with("0<"))
}

/// Whether the first divergence of `p` is only about the exit status the harness reports (its
/// `< /dev/null` lands after a text's final `;` as a command of its own, whose status 0
/// replaces the call's: iec check's message ends "a failing call reports success"). A marker
/// observes argv, and its probe succeeds: no run can show that either way (Claude Code 1.0.3's
/// `c\\;` marker).
fn status_only(p: &iec_core::CheckReport) -> bool {
    p.first_divergence
        .as_ref()
        .is_some_and(|f| f.detail.ends_with("a failing call reports success"))
}

/// What each marker showed, and whether `iec check` on the learned `launch` agrees with it.
fn evidence(
    h: &dyn Harness,
    seen: &[Seen],
    launch: &Launch,
    paths: &Paths,
    f: &Facts,
) -> anyhow::Result<Vec<Evidence>> {
    let chosen = &f.template.chosen;
    let mut evidence = Vec::new();
    for s in seen {
        let outer = s.outer.as_deref().map(|o| paths.norm(o));
        let mut renderings = BTreeMap::new();
        if s.m.kind == MarkerKind::Rendering && reaches(s) {
            for kind in render::PAYLOADS {
                let ok = f
                    .template
                    .candidates
                    .iter()
                    .filter(|c| c.rendering == *kind)
                    .any(|c| reproduces(paths, c, s));
                renderings.insert(kind.to_string(), ok);
            }
        }
        let template_diff = outer.as_ref().and_then(|o| {
            let d = iec_core::byte_diff(mask(&chosen.fill(&s.m.command)).as_bytes(), mask(o).as_bytes());
            (!d.is_empty()).then_some(d)
        });
        let agrees = match s.m.kind {
            MarkerKind::Rendering | MarkerKind::Context | MarkerKind::Control => {
                let o = h.observe(&s.m.id, s.r);
                let p = predict(launch, &s.m.command)?;
                // The markers observe argv; a stdin contract that replaces a command's input
                // (2.0.76 puts `< /dev/null` on a pipe's reader) changes what it reads, which
                // no argv shows: such a marker is not judged either way; nor is one whose only
                // change is the status reported.
                // A background command's probe may never run: Claude Code 2.1.332 ends the
                // process group when the shell exits (the `background` marker shows the
                // wrapper's rendering; its argv is not judged).
                let background = s.m.command.trim_end().ends_with('&');
                // Nor one whose probe ran neither through the harness nor directly (`bash /c`
                // where nothing strips it runs a script `/c`): there is no argv to judge.
                let unobserved = o.verdict == "unknown";
                (!replaces_stdin(&p) && !status_only(&p) && !background && !unobserved)
                    .then(|| (p.verdict.as_str() == "corresponds") == (o.verdict == "corresponds"))
            }
            _ => None,
        };
        let finding = finding(s, paths, f, &renderings, &template_diff);
        evidence.push(Evidence {
            marker: s.m.id.clone(),
            kind: s.m.kind,
            purpose: s.m.purpose.to_string(),
            command: s.m.command.clone(),
            reached_shell: s.outer.is_some(),
            outer,
            probe: argvs(&s.r.probe),
            direct_probe: argvs(&s.r.direct.probe),
            tool_result: s
                .r
                .tool_result
                .as_ref()
                .map(|t| json!({"is_error": t.is_error, "content": t.content})),
            renderings,
            template_diff,
            agrees,
            finding,
        });
    }
    Ok(evidence)
}

/// What was concluded from marker `s`, in words.
fn finding(
    s: &Seen,
    paths: &Paths,
    f: &Facts,
    renderings: &BTreeMap<String, bool>,
    template_diff: &Option<String>,
) -> String {
    match (s.m.kind, s.m.id.as_str()) {
        (_, "plain") => {
            let names_note: Vec<String> = f
                .template
                .names_seen
                .iter()
                .zip(&f.template.stable)
                .map(|(v, s)| {
                    if v.len() > 1 {
                        format!("{} names seen, written {s}", v.len())
                    } else {
                        format!("{s} in every call")
                    }
                })
                .collect();
            format!(
                "the {} rendering of the command occurs in the wrapper text; the rest is the template (snapshot {} → {{{{snapshot}}}}, TMPDIR → {{{{tmp}}}}; files under it: {})",
                f.template.chosen.rendering,
                if paths.snapshot.is_some() { "path" } else { "absent" },
                names_note.join("; ")
            )
        }
        (MarkerKind::Rendering, _) if s.rejected.is_some() => {
            format!(
                "refused before any shell ran: {}",
                s.rejected.as_deref().unwrap_or("")
            )
        }
        (MarkerKind::Rendering, _) => format!(
            "reproduced by: {}",
            renderings
                .iter()
                .filter(|(_, ok)| **ok)
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (MarkerKind::Environment, _) => format!(
            "shell argv {:?} ({}{}); {}",
            f.spawn.argv,
            f.spawn.shell,
            if f.spawn.login { ", login" } else { "" },
            f.parse.note
        ),
        (MarkerKind::Functions, _) => {
            if f.shadowing.refused {
                "refused by the command-substitution rule: no shadowing learned".to_string()
            } else if f.shadowing.shadowed.is_empty() {
                "no function or alias beyond a plain bash -c's".to_string()
            } else {
                let sh = &f.shadowing;
                let read = sh
                    .functions
                    .iter()
                    .map(|x| {
                        format!(
                            "{} runs argv[0] {} with {:?}, passthrough {:?}",
                            x.name, x.argv0, x.prefix, x.passthrough
                        )
                    })
                    .collect::<Vec<_>>();
                format!(
                    "shadowed: {}; substitutes read: {}; behaviour table: {}",
                    sh.notes.join(", "),
                    if read.is_empty() {
                        "none".to_string()
                    } else {
                        read.join("; ")
                    },
                    sh.substitutes.as_deref().unwrap_or("none describes them")
                )
            }
        }
        (MarkerKind::Control, _) => match &s.rejected {
            Some(m) => format!("refused before any shell ran: {m}"),
            None => "reached the shell".to_string(),
        },
        (MarkerKind::Context, _) => match template_diff {
            None => "reproduced by the learned template".to_string(),
            Some(d) => format!("the harness builds this one differently from the learned template: {d}"),
        },
    }
}

#[cfg(test)]
mod tests {
    /// Gemini CLI 0.11–0.39: every marker is reproduced with the strip before the trim and
    /// with the trim before the strip; the source's order is learned.
    #[test]
    fn steps_no_marker_orders_take_the_sources_order() {
        let c = |steps: &[&'static str]| Candidate {
            steps: steps.to_vec(),
            rendering: "raw",
            template: "{ {{payload}}; }".into(),
        };
        let a = c(&["gemini-trim", "gemini-strip-shell-wrapper"]);
        let b = c(&["gemini-strip-shell-wrapper", "gemini-trim"]);
        assert_eq!(
            source_order(&[&a, &b]).map(|x| x.steps.clone()),
            Some(b.steps.clone())
        );
        assert_eq!(
            source_order(&[&b, &a]).map(|x| x.steps.clone()),
            Some(b.steps.clone())
        );
        // Another template or rendering, or steps no source order names: not decided.
        let mut other = b.clone();
        other.template = "{{payload}}".into();
        assert!(source_order(&[&a, &other]).is_none());
        let x = c(&["space-join", "gemini-trim"]);
        let y = c(&["gemini-trim", "space-join"]);
        assert!(source_order(&[&x, &y]).is_none());
    }

    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400), "2000-02-29");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14");
    }

    #[test]
    fn rejection_text() {
        let c = "<tool_use_error>InputValidationError: [\n  {\n    \"code\": \"custom\",\n    \"path\": [\n      \"command\"\n    ],\n    \"message\": \"command contains control characters\"\n  }\n]</tool_use_error>";
        assert_eq!(
            rejection_message(c),
            "InputValidationError: command contains control characters"
        );
        assert_eq!(rejection_message(" plain error "), "plain error");
    }

    #[test]
    fn paths_are_replaced_whole() {
        let t = "/r/tmp";
        let shell_tmp = "/r/tmp/claude-0";
        let p = Paths {
            home: vec!["/r/home".into()],
            tmp: vec![t.into(), shell_tmp.into()],
            forbidden: vec![],
            snapshot: Some("/r/home/.claude/snap.sh".into()),
            install: None,
        };
        // Claude Code 2.1.154: TMPDIR=<tmp>/claude-0, cwd file <tmp>/claude-0106-cwd.
        assert_eq!(
            p.norm(
                "source /r/home/.claude/snap.sh && eval x < /dev/null && pwd -P >| /r/tmp/claude-0106-cwd"
            ),
            "source {{snapshot}} && eval x < /dev/null && pwd -P >| {{tmp}}/claude-0106-cwd"
        );
        assert_eq!(
            p.norm("cd /r/tmp/claude-0; ls /r/tmp/claude-0/x '/r/tmp'"),
            "cd {{tmp}}; ls {{tmp}}/x '{{tmp}}'"
        );
        assert_eq!(replace_path("/r/tmpx /r/tmp", "/r/tmp", "T"), "/r/tmpx T");
    }

    #[test]
    fn masks_tmp_names() {
        assert_eq!(
            mask("pwd -P >| {{tmp}}/claude-edb8-cwd && x {{tmp}}/a'b"),
            "pwd -P >| {{tmp}}/* && x {{tmp}}/*'b"
        );
        assert_eq!(tmp_names("a {{tmp}}/claude-1-cwd b"), vec!["claude-1-cwd"]);
        let seen = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            stable_name(&seen(&["claude-edb8-cwd", "claude-7cfd-cwd", "claude-3b3a-cwd"])),
            "claude-0a1b-cwd"
        );
        assert_eq!(stable_name(&seen(&["state", "state"])), "state");
        assert_eq!(
            rename_tmp("x {{tmp}}/a-1 y {{tmp}}/b", &seen(&["a-0", "b"])),
            "x {{tmp}}/a-0 y {{tmp}}/b"
        );
    }

    #[test]
    fn toml_strings() {
        assert_eq!(toml_str("a\"b\\c\u{1}"), "\"a\\\"b\\\\c\\u0001\"");
    }

    /// A marker's result: refused with `refusal`, or run (nothing recorded: the gate learner
    /// reads refusals only).
    fn ran_or_refused(m: &Marker, refusal: Option<&str>) -> PayloadResult {
        PayloadResult {
            payload: m.command.clone(),
            emitted: m.command.clone(),
            echoed: None,
            outer: None,
            bash_strings: vec![],
            probe: vec![],
            hook_input: None,
            tool_result: refusal.map(|c| crate::server::ToolResult {
                tool_use_id: "t".into(),
                is_error: true,
                content: c.into(),
            }),
            direct: crate::launch::DirectRun {
                exit_code: Some(0),
                ..Default::default()
            },
        }
    }

    /// What `learn` reads from the markers refused by `refuse(marker)` (the others ran).
    fn seen_with<T>(refuse: impl Fn(&Marker) -> Option<String>, learn: impl FnOnce(&[Seen]) -> T) -> T {
        let ms = markers("0a1b2c3d4e");
        let results: Vec<PayloadResult> = ms
            .iter()
            .map(|m| ran_or_refused(m, refuse(m).as_deref()))
            .collect();
        let seen: Vec<Seen> = ms
            .iter()
            .zip(&results)
            .map(|(m, r)| Seen {
                m,
                r,
                outer: None,
                rejected: r.tool_result.as_ref().map(|t| t.content.clone()),
            })
            .collect();
        learn(&seen)
    }

    /// The gate learned from markers refused by `refuse(marker)`.
    fn gate_of(refuse: impl Fn(&Marker) -> Option<&'static str>) -> anyhow::Result<Option<(String, Gate)>> {
        seen_with(|m| refuse(m).map(str::to_string), learn_tree_sitter_gate)
    }

    /// The substring rule learned from markers refused by `refuse(marker)`.
    fn substrings_of(refuse: impl Fn(&Marker) -> Option<String>) -> Option<Vec<String>> {
        seen_with(refuse, |seen| {
            learn_reject_substrings(seen, |_| false).map(|r| {
                assert_eq!(r.message, "Command rejected: {{command}}\nReason: no");
                r.substrings
            })
        })
    }

    /// Gemini CLI 0.1.x's refusal of `c`: the command in the message.
    fn rejected_0_1(c: &str) -> String {
        format!("Command rejected: {c}\nReason: no")
    }

    #[test]
    fn gemini_0_1_9_substring_refusals_are_learned() {
        // 0.1.9: `command.includes('$(') || command.includes('`')`, quoted or not (the
        // unparsed marker's `'$$('` and the live here-document's `$((1+2))` too).
        let both = |m: &Marker| {
            (m.command.contains("$(") || m.command.contains('`')).then(|| rejected_0_1(&m.command))
        };
        assert_eq!(substrings_of(both), Some(vec!["$(".to_string(), "`".to_string()]));
        // 0.1.13: `$(` only; backticks run.
        let dollar = |m: &Marker| m.command.contains("$(").then(|| rejected_0_1(&m.command));
        assert_eq!(substrings_of(dollar), Some(vec!["$(".to_string()]));
    }

    #[test]
    fn gemini_command_root_refusals_are_learned_with_their_function() {
        let root = |rule: &'static str, msg: fn(&str) -> String| {
            seen_with(
                move |m: &Marker| {
                    (!iec_launches::render::gemini_has_command_root(&m.command, rule))
                        .then(|| msg(&m.command))
                },
                |seen| {
                    learn_command_root(seen, |_| false)
                        .unwrap()
                        .map(|r| (r.rule, r.message))
                },
            )
        };
        // 0.1.1–0.1.13: the command in the message; `{ … }` refused too.
        assert_eq!(
            root("gemini-0.1.1", rejected_0_1),
            Some((
                "gemini-0.1.1".to_string(),
                "Command rejected: {{command}}\nReason: no".to_string()
            ))
        );
        // 0.1.15–0.10: one message; only `X=/ …`.
        const NO_ROOT: &str = "Could not identify command root to obtain permission from user.";
        assert_eq!(
            root("gemini-0.1.15", |_| NO_ROOT.to_string()),
            Some(("gemini-0.1.15".to_string(), NO_ROOT.to_string()))
        );
        // Nothing refused: no rule.
        assert_eq!(
            seen_with(|_| None, |seen| learn_command_root(seen, |_| false).unwrap()),
            None
        );
        // The slash marker refused with a message that refuses others no root explains.
        let e = seen_with(
            |m: &Marker| (m.id == "root-slash" || m.id == "spaces").then(|| NO_ROOT.to_string()),
            |seen| learn_command_root(seen, |_| false).unwrap_err().to_string(),
        );
        assert!(e.contains("\"spaces\""), "{e}");
    }

    #[test]
    fn substring_refusals_a_substring_does_not_explain_are_not_learned() {
        // Gemini CLI 0.1.15's detector: `$(` outside single quotes only (the unparsed
        // marker's `'$$('` runs): no substring test says that.
        let outside = |m: &Marker| {
            iec_launches::render::command_substitution_outside_single_quotes(&m.command)
                .map(|_| rejected_0_1(&m.command))
        };
        assert_eq!(substrings_of(outside), None);
        // One more marker refused with the same message, without `$(`.
        let more =
            |m: &Marker| (m.command.contains("$(") || m.id == "spaces").then(|| rejected_0_1(&m.command));
        assert_eq!(substrings_of(more), None);
    }

    const PARSE: &str = "Command rejected because it could not be parsed safely";

    #[test]
    fn gemini_0_13_parse_gate_is_learned_with_the_prompt_transform() {
        use iec_launches::tree_sitter_gate::refuses;
        let with = |prompt_transform, parts| {
            Some((
                PARSE.to_string(),
                Gate {
                    prompt_transform,
                    parts,
                },
            ))
        };
        let got = gate_of(|m| refuses(&m.command, true).map(|_| PARSE)).unwrap();
        assert_eq!(got, with(true, false));
        // 0.11–0.12: the same gate without the `@P` rule.
        let got = gate_of(|m| refuses(&m.command, false).map(|_| PARSE)).unwrap();
        assert_eq!(got, with(false, false));
        // 0.26–0.27: each part gated on its own (every here-document refused).
        let parts = Gate {
            prompt_transform: true,
            parts: true,
        };
        let got = gate_of(|m| iec_launches::tree_sitter_gate::refuses_with(&m.command, parts).map(|_| PARSE))
            .unwrap();
        assert_eq!(got, with(true, true));
    }

    #[test]
    fn a_harness_that_runs_the_gated_markers_has_no_gate() {
        // Claude Code, Codex, Gemini CLI 0.40 on: nothing refused.
        assert_eq!(gate_of(|_| None).unwrap(), None);
        // Claude Code 2.1.317 on refuses some of them by another rule (its unparsed-line
        // check) and runs the others: not a gate.
        let got = gate_of(|m| (m.id == "wrapped-backslash").then_some("unparsed line")).unwrap();
        assert_eq!(got, None);
    }

    #[test]
    fn a_refusal_with_the_gates_message_that_the_gate_does_not_explain_is_unsupported() {
        use iec_launches::tree_sitter_gate::refuses;
        // Gemini CLI 0.11.3 refusing the `lf` marker while its parser was still loading.
        let e = gate_of(|m| (refuses(&m.command, false).is_some() || m.id == "lf").then_some(PARSE))
            .unwrap_err()
            .to_string();
        assert!(e.contains("[\"lf\"]") && e.contains("without an error"), "{e}");
    }
}
