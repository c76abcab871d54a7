/*!
The launch catalog. A launch (execution path) is an ordered list of hops for one harness,
version and OS, written as a TOML file (see `crates/iec-launches/launches/` in the repository); this crate loads
them and implements the harness renderings they name (sender side: what the harness builds).
Receivers live elsewhere: real ones in `iec-witness`, emulated ones in `iec-windows`.
*/
#![deny(missing_docs)]

pub mod gemini_strip;
pub mod invocation;
pub mod render;
pub mod resolve;
pub mod substitutes;
pub mod tree_sitter_gate;
pub mod unparsed;

pub use iec_core::Hop;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

include!(concat!(env!("OUT_DIR"), "/builtin.rs"));

/// How the tool's input carries the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputShape {
    /// `{"command": "TEXT"}`.
    #[default]
    String,
    /// `{"command": ["prog", "arg", ...]}`.
    Argv,
}

/// The shell that receives the process's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShellId {
    /// GNU bash.
    Bash,
    /// dash (Debian's /bin/sh).
    Dash,
    /// The shell named by argv[0] of an argv call (bash, sh, dash), if any.
    FromArgv,
}

/// Input validation the harness applies before anything runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validate {
    /// Reject texts with control characters other than tab and newline; the value is the
    /// harness's error message.
    pub reject_control_chars: Option<String>,
    /// Reject `$(`, backticks, `<(` and `>(` outside single quotes; the value is the message.
    pub reject_command_substitution: Option<String>,
    /// Which `detectCommandSubstitution` decides `reject_command_substitution`: absent, Gemini
    /// CLI 0.40 on's; `gemini-0.1.15` (0.1.15–0.7: a backtick counts where it closes one,
    /// `>(` not at all) or `gemini-0.8.2` (0.8–0.10: the same with `>(`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_substitution_detector: Option<String>,
    /// Which text the rules above judge when the launch strips a model-written shell wrapper
    /// (`iec_launches::gemini_strip`): absent or `"stripped"`, what the strip leaves (Gemini CLI
    /// 0.40 on: `detectCommandSubstitution(strippedCommand)`); `"raw"`, the text as the model
    /// wrote it (0.1.21–0.39: `validateToolParams(params)` before the strip); `"both"` (0.1.19–
    /// 0.1.20, which validate the raw text and again the stripped one; 0.1.15–0.1.16 only the
    /// stripped one). Learned from the `gate-raw` and `gate-stripped` markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_text: Option<String>,
    /// Refuse texts in which Gemini CLI 0.1.x–0.10's command-root function finds no command
    /// root ("Could not identify command root to obtain permission from user.").
    pub refuse_no_command_root: Option<RefuseNoCommandRoot>,
    /// Reject texts that hold any of these strings anywhere, quoted or not (Gemini CLI 0.1.9:
    /// `$(` or a backtick; 0.1.13: `$(`).
    pub reject_substrings: Option<RejectSubstrings>,
    /// Reject texts with a line break; the value is the message.
    pub reject_newlines: Option<String>,
    /// Reject texts of more than one top-level statement (complete commands on separate lines,
    /// as OpenHands' bashlex `split_bash_commands` counts them; `a; b` and `a && b` are one).
    /// Needs bash's parser, so the IEC protocol applies it; the value is the message.
    pub reject_multiple_statements: Option<String>,
    /// Refuse texts that the harness's own bash parser reads as bash and zsh might not
    /// (Claude Code 2.1.317 and later: an "unparsed line", see [`unparsed`]); the value is the
    /// message. The model's certain findings are refusals; its possible ones make the check
    /// `unknown`.
    pub refuse_unparsed_line: Option<String>,
    /// Refuse texts Gemini CLI's tree-sitter-bash gate refuses (0.11–0.27: a syntax error or
    /// missing node, no command, see [`tree_sitter_gate`]); the value is the message.
    pub refuse_tree_sitter_error: Option<String>,
    /// With `refuse_tree_sitter_error`: the gate also refuses the `@P` prompt transform
    /// (`${x@P}`; Gemini CLI 0.13 on).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tree_sitter_prompt_transform: bool,
    /// With `refuse_tree_sitter_error`: redirections are parts too and each part is gated on
    /// its own text (Gemini CLI 0.26–0.27's policy engine; [`tree_sitter_gate::Gate::parts`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tree_sitter_parts: bool,
    /// Rules of [`unparsed`] whose certain findings this harness version is not shown to
    /// refuse: they count as possible (`unknown`). Claude Code 2.1.317–2.1.322 run
    /// ``argvprobe $((`echo 1`+1))``, which 2.1.323 and later refuse (`arithmetic`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unparsed_possible_only: Vec<String>,
}

/// Gemini CLI's refusal of a text whose command root it cannot find.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefuseNoCommandRoot {
    /// Which function: `gemini-0.1.1` (0.1.1–0.1.13: the first word after deleting `{}()`) or
    /// `gemini-0.1.15` (0.1.15–0.10: the first word of every command `splitCommands` gives).
    pub rule: String,
    /// The harness's message; `{{command}}` stands for the refused text.
    pub message: String,
}

/// A harness's refusal of every text that holds one of some strings, as a plain substring test
/// (`command.includes('$(')`), not a shell reading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejectSubstrings {
    /// The strings; a text holding any of them is refused.
    pub substrings: Vec<String>,
    /// The harness's message; `{{command}}` stands for the refused text.
    pub message: String,
}

impl RejectSubstrings {
    /// The byte offset of the first of the strings in `text`, if any.
    pub fn find(&self, text: &str) -> Option<usize> {
        self.substrings
            .iter()
            .filter(|s| !s.is_empty())
            .filter_map(|s| text.find(s.as_str()))
            .min()
    }

    /// The harness's message for refusing `text`.
    pub fn message_for(&self, text: &str) -> String {
        self.message.replace("{{command}}", text)
    }
}

/// Harness rewriting before quoting.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rewrite {
    /// Named steps, applied in order (see [`render::rewrite_step`]).
    pub steps: Vec<String>,
}

/// The wrapper text around the command.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wrapper {
    /// Template with `{{payload}}`, `{{snapshot}}`, `{{tmp}}`.
    pub template: String,
    /// How the command is rendered into the slot (see [`render::payload`]).
    pub payload: String,
    /// True when the payload is handed to `eval` (a second shell parse).
    #[serde(default)]
    pub eval: bool,
    /// True when the payload words are the `-c` text of a new bash the wrapper execs
    /// (`exec '/bin/bash' -c PAYLOAD`, Codex's snapshot wrapper): a second shell parse, like
    /// `eval`'s, of exactly one argument.
    #[serde(default)]
    pub inner_shell: bool,
    /// Text the harness adds to what eval receives that the tool contract makes neutral
    /// (`" < /dev/null"`: the tool's stdin is empty by contract).
    pub stdin_suffix: Option<String>,
}

/// The process the harness starts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spawn {
    /// argv template: `{{wrapper}}` is the wrapper text; `["{{argv}}"]` is the call's own argv.
    pub argv: Vec<String>,
    /// Which shell parses it.
    pub shell: ShellId,
    /// True for login shells (profile files run first; not judged in check mode).
    #[serde(default)]
    pub login: bool,
}

/// Effects of a shell snapshot sourced before the command.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// Programs replaced by shell functions that run other tools.
    #[serde(default)]
    pub shadowed: Vec<String>,
    /// What the replacement does.
    pub note: Option<String>,
    /// The substitution table (`crates/iec-launches/launches/substitutes/<id>.toml`) that says, by option and
    /// operand, where the replacements behave as the programs they stand in for; without one,
    /// every call of a shadowed program is reported as diverging.
    #[serde(default)]
    pub substitutes: Option<String>,
    /// Shadowed programs the snapshot defines a function for only when no program of that name
    /// is on `PATH` (Claude Code 2.1.332: `if ! hash rg 2>/dev/null && ! typeset -f rg …; then
    /// function rg …`): whether a call runs the function is known only at run time.
    #[serde(default)]
    pub when_missing: Vec<String>,
}

/// How a Windows launch delivers the text (present only on Windows launches): the sender that
/// renders the harness's argv into one command line, the receiver that parses it, and the
/// receiver's options. Receivers and senders are the emulations of `iec-windows`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Windows {
    /// Sender id (`node`, `rust-std`, …) rendering `[spawn] argv` into a command line; absent
    /// when the text reaches the shell as its source (a PowerShell command typed or run as is).
    pub sender: Option<String>,
    /// Indices of `[spawn] argv` elements appended verbatim (Rust `CommandExt::raw_arg`).
    #[serde(default)]
    pub raw_args: Vec<usize>,
    /// Receiver: `msys2` (Git Bash `bash.exe`), `powershell` or `cmd`.
    pub receiver: String,
    /// PowerShell version: `5.1` (`powershell.exe`) or `7` (`pwsh.exe`).
    pub powershell: Option<String>,
    /// Native argument passing: `ps51`, `legacy`, `standard` or `windows` (default: `ps51` for
    /// 5.1, `windows` for 7).
    pub native_passing: Option<String>,
    /// MSYS2 globbing (`false` = `MSYS=noglob`); default on.
    pub msys2_glob: Option<bool>,
    /// MSYS2 root (Git for Windows: `C:/Program Files/Git`).
    pub msys2_root: Option<String>,
    /// Text the harness puts before the command in the shell script (a line of its own).
    pub script_prefix: Option<String>,
    /// Text the harness puts after the command in the shell script.
    pub script_suffix: Option<String>,
    /// cmd delayed expansion default (registry `DelayedExpansion`); default off.
    #[serde(default)]
    pub cmd_delayed_expansion: bool,
}

/// How a terminal-typing launch delivers the text: it types it with `tmux send-keys` into an
/// interactive bash that has been running in a tmux pane (Terminal-Bench's Terminus,
/// OpenHands). Present only on such launches.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Terminal {
    /// `key-names`: the text is one `send-keys` argument, looked up as a key name first
    /// (`Enter`, `C-c`, …); `literal`: sent with `send-keys -l`. tmux's own argument parser ends
    /// a command at an argument's trailing `;` (and turns a trailing `\;` into `;`) either way.
    pub send: String,
    /// Text typed after the command as its own `send-keys` argument (Terminus:
    /// `; tmux wait -S done`), empty for none.
    #[serde(default)]
    pub suffix: String,
    /// `same-call`: `Enter` is the last argument of the same `send-keys` call; `separate-call`:
    /// a second `send-keys Enter` (libtmux `send_keys(enter=True)`).
    pub enter: String,
    /// Trailing CR/LF characters are removed before sending (Terminus `_prevent_execution`).
    #[serde(default)]
    pub strip_trailing_newlines: bool,
    /// bash history expansion (`!`): on in interactive shells unless the harness sends `set +H`.
    #[serde(default = "yes")]
    pub history_expansion: bool,
    /// Pane size (`new-session -x -y`).
    #[serde(default = "default_width")]
    pub width: u32,
    /// Pane height.
    #[serde(default = "default_height")]
    pub height: u32,
    /// What the harness types once when it opens the session (documentation; its effects are
    /// the fields above).
    pub init: Option<String>,
}

fn yes() -> bool {
    true
}
fn default_width() -> u32 {
    160
}
fn default_height() -> u32 {
    40
}

/// `[terminal] send` values.
pub const TERMINAL_SENDS: &[&str] = &["key-names", "literal"];
/// `[terminal] enter` values.
pub const TERMINAL_ENTERS: &[&str] = &["same-call", "separate-call"];

/// Windows receivers a launch may name.
pub const WINDOWS_RECEIVERS: &[&str] = &["msys2", "powershell", "cmd"];
/// Windows senders a launch may name (the ids of `iec-windows`).
pub const WINDOWS_SENDERS: &[&str] = &["node", "node-verbatim", "rust-std", "cpython", "dotnet", "go"];

impl Default for Spawn {
    fn default() -> Self {
        Spawn {
            argv: vec![],
            shell: ShellId::FromArgv,
            login: false,
        }
    }
}

/// One launch, as written in its TOML file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    /// Launch id.
    pub id: String,
    /// Harness name.
    pub harness: String,
    /// Harness version (the one its facts were taken from).
    pub version: String,
    /// The published versions this launch holds for: inclusive ranges `[first, last]`, in
    /// semver order; a range means every published version between its ends (npm's version
    /// list is the universe). Empty: the launch is chosen by id only.
    #[serde(default)]
    pub versions: Vec<[String; 2]>,
    /// The versions inside `versions` that `iec harness learn` was run on (each learned this
    /// same launch); every other version of a range is held by its neighbours' agreement, and
    /// is what the catalog's agreement check runs (`crates/iec-harness/tests/catalog_ranges.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learned_on: Vec<String>,
    /// Operating system.
    pub os: String,
    /// Where the facts come from.
    pub source: String,
    /// Tool name calls carry on this launch.
    #[serde(default = "default_tool")]
    pub tool: String,
    /// Shape of the tool input.
    #[serde(default)]
    pub input: InputShape,
    /// The tool-input field that carries the command (default `command`; Codex's
    /// `exec_command` uses `cmd`).
    pub input_field: Option<String>,
    /// Input validation.
    #[serde(default)]
    pub validate: Validate,
    /// Rewriting.
    pub rewrite: Option<Rewrite>,
    /// Wrapper.
    pub wrapper: Option<Wrapper>,
    /// Process (a Windows launch without a sender has none).
    #[serde(default)]
    pub spawn: Spawn,
    /// Snapshot effects.
    pub snapshot: Option<Snapshot>,
    /// Windows delivery (sender, receiver and options); absent on POSIX launches.
    pub windows: Option<Windows>,
    /// Terminal typing (tmux `send-keys` into an interactive bash); absent on other launches.
    pub terminal: Option<Terminal>,
}

fn default_tool() -> String {
    "Bash".into()
}

/// A hop as listed by `iec launches`.
#[derive(Debug, Clone, Serialize)]
pub struct HopInfo {
    /// Hop name.
    pub name: &'static str,
    /// Hop kind (kebab-case).
    pub kind: &'static str,
}

impl Launch {
    /// Whether `iec harness learn` wrote this launch (it names the versions it was learned on);
    /// the others are written by hand from a harness's source.
    pub fn learned(&self) -> bool {
        !self.learned_on.is_empty()
    }

    /// The tool-input field that carries the command.
    pub fn command_field(&self) -> &str {
        self.input_field.as_deref().unwrap_or("command")
    }

    /// The command value of a tool input: the launch's field, else `command` (a bare
    /// `{"command": …}` call is accepted on every launch).
    pub fn command_of<'a>(&self, input: &'a serde_json::Value) -> Option<&'a serde_json::Value> {
        input.get(self.command_field()).or_else(|| input.get("command"))
    }

    /// The launch's hop plan: the hops a call crosses on it, in order. `iec check` reports
    /// these hops (a check stops at the first that diverges).
    pub fn plan(&self) -> Vec<Hop> {
        let mut h = vec![Hop::ToolInput];
        if let Some(w) = &self.windows {
            let (msys2, powershell) = (w.receiver == "msys2", w.receiver == "powershell");
            // Git Bash builds the wrapper as on POSIX; PowerShell puts statements around the
            // command; cmd gets the text as it is.
            if (msys2 && self.wrapper.is_some())
                || (powershell && (w.script_prefix.is_some() || w.script_suffix.is_some()))
            {
                h.push(Hop::Wrapper);
            }
            // Without a sender the text is PowerShell's script as written; bash.exe and cmd.exe
            // always read a command line.
            if w.sender.is_some() || !powershell {
                h.push(Hop::Spawn);
            }
            h.push(Hop::Shell);
            // Git Bash hands the wrapper's payload to eval (or an inner `bash -c`), as on POSIX;
            // then a snapshot's functions may stand in for programs.
            if let Some(x) = self
                .wrapper
                .as_ref()
                .filter(|x| msys2 && (x.eval || x.inner_shell))
            {
                h.push(if x.inner_shell { Hop::InnerShell } else { Hop::Eval });
                if self.snapshot.as_ref().is_some_and(|s| !s.shadowed.is_empty()) {
                    h.push(Hop::Program);
                }
            }
            if powershell {
                h.push(Hop::Native);
            }
            return h;
        }
        if self.rewrite.is_some() {
            h.push(Hop::HarnessRewrite);
        }
        if let Some(t) = &self.terminal {
            if !t.suffix.is_empty() {
                h.push(Hop::Wrapper);
            }
            h.extend([Hop::Terminal, Hop::Shell]);
            return h;
        }
        if self.wrapper.is_some() {
            h.push(Hop::Wrapper);
        }
        h.extend([Hop::Spawn, Hop::Shell]);
        if self.wrapper.as_ref().is_some_and(|w| w.eval) {
            h.push(Hop::Eval);
        }
        if self.wrapper.as_ref().is_some_and(|w| w.inner_shell) {
            h.push(Hop::InnerShell);
        }
        if self.snapshot.as_ref().is_some_and(|s| !s.shadowed.is_empty()) {
            h.push(Hop::Program);
        }
        h
    }

    /// [`Launch::plan`] as `iec launches` lists it: each hop's name and kind.
    pub fn hops(&self) -> Vec<HopInfo> {
        self.plan()
            .into_iter()
            .map(|h| HopInfo {
                name: h.name(),
                kind: h.kind().as_str(),
            })
            .collect()
    }

    /// Parses a launch file and checks that the renderings and steps it names exist.
    pub fn from_toml(text: &str) -> Result<Launch, LaunchError> {
        let l: Launch = toml::from_str(text).map_err(|e| LaunchError::Toml(e.to_string()))?;
        if let Some(c) = &l.validate.checked_text {
            if !["stripped", "raw", "both"].contains(&c.as_str()) {
                return Err(LaunchError::Unknown("checked text", c.clone()));
            }
        }
        if let Some(w) = &l.wrapper {
            if !render::PAYLOADS.contains(&w.payload.as_str()) {
                return Err(LaunchError::Unknown("payload rendering", w.payload.clone()));
            }
            if !w.template.contains("{{payload}}") {
                return Err(LaunchError::Invalid(
                    l.id,
                    "wrapper template has no {{payload}}".into(),
                ));
            }
        }
        if let Some(w) = &l.windows {
            if !WINDOWS_RECEIVERS.contains(&w.receiver.as_str()) {
                return Err(LaunchError::Unknown("Windows receiver", w.receiver.clone()));
            }
            if let Some(s) = &w.sender {
                if !WINDOWS_SENDERS.contains(&s.as_str()) {
                    return Err(LaunchError::Unknown("Windows sender", s.clone()));
                }
                if l.spawn.argv.is_empty() {
                    return Err(LaunchError::Invalid(l.id, "a sender needs [spawn] argv".into()));
                }
            }
            if let Some(p) = &w.native_passing {
                if !["ps51", "legacy", "standard", "windows"].contains(&p.as_str()) {
                    return Err(LaunchError::Unknown("native argument passing", p.clone()));
                }
            }
            if w.receiver == "powershell" && !matches!(w.powershell.as_deref(), Some("5.1" | "7")) {
                return Err(LaunchError::Invalid(
                    l.id,
                    "a PowerShell receiver needs powershell = \"5.1\" or \"7\"".into(),
                ));
            }
        } else if let Some(t) = &l.terminal {
            if !TERMINAL_SENDS.contains(&t.send.as_str()) {
                return Err(LaunchError::Unknown("terminal send mode", t.send.clone()));
            }
            if !TERMINAL_ENTERS.contains(&t.enter.as_str()) {
                return Err(LaunchError::Unknown("terminal enter mode", t.enter.clone()));
            }
            if l.wrapper.is_some() {
                return Err(LaunchError::Invalid(
                    l.id,
                    "a terminal launch types the text; its suffix is [terminal] suffix, not a [wrapper]"
                        .into(),
                ));
            }
        } else if l.spawn.argv.is_empty() {
            return Err(LaunchError::Invalid(l.id, "[spawn] argv is required".into()));
        }
        for r in &l.versions {
            match (resolve::Version::parse(&r[0]), resolve::Version::parse(&r[1])) {
                (Some(a), Some(b)) if a <= b => {}
                (Some(_), Some(_)) => {
                    return Err(LaunchError::Invalid(
                        l.id,
                        format!("version range [{:?}, {:?}] ends before it starts", r[0], r[1]),
                    ))
                }
                _ => {
                    return Err(LaunchError::Invalid(
                        l.id,
                        format!(
                            "version range [{:?}, {:?}] is not two versions (MAJOR.MINOR.PATCH)",
                            r[0], r[1]
                        ),
                    ))
                }
            }
        }
        for v in &l.learned_on {
            let inside = resolve::Version::parse(v).is_some_and(|v| {
                l.versions.iter().any(|r| {
                    resolve::Version::parse(&r[0]).is_some_and(|a| a <= v)
                        && resolve::Version::parse(&r[1]).is_some_and(|b| v <= b)
                })
            });
            if !inside {
                return Err(LaunchError::Invalid(
                    l.id,
                    format!("learned_on names {v:?}, which no range of versions holds"),
                ));
            }
        }
        if let Some(r) = &l.rewrite {
            for s in &r.steps {
                if !render::REWRITES.contains(&s.as_str()) {
                    return Err(LaunchError::Unknown("rewrite step", s.clone()));
                }
            }
        }
        Ok(l)
    }
}

/// The longest launch file read: 1 MiB (the built-in ones are a few KiB).
pub const MAX_LAUNCH_FILE: usize = 1 << 20;

/// Errors loading launches.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The TOML does not parse or has unknown fields.
    #[error("launch file: {0}")]
    Toml(String),
    /// A rendering or step name that this version does not implement.
    #[error("unknown {0} {1:?}")]
    Unknown(&'static str, String),
    /// A launch that is inconsistent.
    #[error("launch {0}: {1}")]
    Invalid(String, String),
    /// A file could not be read.
    #[error("cannot read {0}: {1}")]
    Io(String, std::io::Error),
    /// A launch file longer than [`MAX_LAUNCH_FILE`] (read no further than the limit and one
    /// byte: `--launch-file /dev/zero` stops there).
    #[error("launch file {0} is more than {MAX_LAUNCH_FILE} bytes; iec reads launch files of at most 1 MiB")]
    TooLarge(String),
    /// A launch file that is not UTF-8.
    #[error("launch file {0} is not UTF-8 (first bad byte at offset {1})")]
    NotUtf8(String, usize),
    /// No launch with this id.
    #[error("no launch {0:?}; `iec launches` lists them")]
    NotFound(String),
}

/// The launches: built-in ones plus any added from files.
#[derive(Debug, Clone)]
pub struct Catalog {
    launches: BTreeMap<String, Launch>,
}

impl Catalog {
    /// The launches shipped with iec.
    pub fn builtin() -> Catalog {
        let mut launches = BTreeMap::new();
        for (name, text) in BUILTIN {
            let l = Launch::from_toml(text).unwrap_or_else(|e| panic!("built-in {name}: {e}"));
            launches.insert(l.id.clone(), l);
        }
        Catalog { launches }
    }

    /// A catalog holding only the built-in launch `id` (files are named by their id), parsed
    /// alone: what a hook that runs once per call needs. Empty when there is no such file.
    pub fn builtin_only(id: &str) -> Catalog {
        let mut launches = BTreeMap::new();
        let file = format!("{id}.toml");
        if let Some((name, text)) = BUILTIN.iter().find(|(name, _)| *name == file) {
            let l = Launch::from_toml(text).unwrap_or_else(|e| panic!("built-in {name}: {e}"));
            launches.insert(l.id.clone(), l);
        }
        Catalog { launches }
    }

    /// The built-in launches written by hand (not learned by the catalog sweep): a catalog
    /// that does not grow when the sweep adds launches, for tests of resolution itself.
    pub fn hand_written() -> Catalog {
        let mut cat = Catalog::builtin();
        cat.launches.retain(|_, l| !l.learned());
        cat
    }

    /// Adds (or replaces) a launch from a file of at most [`MAX_LAUNCH_FILE`] bytes; a longer
    /// one (or an endless one such as `/dev/zero`) is read no further than the limit and one
    /// byte and refused.
    pub fn add_file(&mut self, path: &std::path::Path) -> Result<String, LaunchError> {
        let name = || path.display().to_string();
        let bytes = std::fs::File::open(path)
            .and_then(|f| iec_core::limits::read_at_most(f, MAX_LAUNCH_FILE))
            .map_err(|e| LaunchError::Io(name(), e))?;
        let bytes = match bytes {
            iec_core::limits::Bounded::Whole(b) => b,
            iec_core::limits::Bounded::Over { .. } => return Err(LaunchError::TooLarge(name())),
        };
        let text = String::from_utf8(bytes)
            .map_err(|e| LaunchError::NotUtf8(name(), e.utf8_error().valid_up_to()))?;
        let l = Launch::from_toml(&text)?;
        let id = l.id.clone();
        self.launches.insert(id.clone(), l);
        Ok(id)
    }

    /// The built-in launches of one harness (files that name it are parsed, the rest are not:
    /// what a hook that resolves a version needs).
    pub fn builtin_harness(harness: &str) -> Catalog {
        let needle = format!("harness = \"{harness}\"");
        let mut launches = BTreeMap::new();
        for (name, text) in BUILTIN.iter().filter(|(_, t)| t.contains(&needle)) {
            let l = Launch::from_toml(text).unwrap_or_else(|e| panic!("built-in {name}: {e}"));
            if l.harness == harness {
                launches.insert(l.id.clone(), l);
            }
        }
        Catalog { launches }
    }

    /// A launch by id.
    pub fn get(&self, id: &str) -> Result<&Launch, LaunchError> {
        self.launches
            .get(id)
            .ok_or_else(|| LaunchError::NotFound(id.to_string()))
    }

    /// All launches, ordered by id.
    pub fn iter(&self) -> impl Iterator<Item = &Launch> {
        self.launches.values()
    }
}
