/*!
The launch catalog. A launch (execution path) is an ordered list of hops for one harness,
version and OS, written as a TOML file (see `launches/` in the repository); this crate loads
them and implements the harness renderings they name (sender side: what the harness builds).
Receivers live elsewhere: real ones in `iec-witness`, emulated ones in `iec-windows`.
*/
#![deny(missing_docs)]

pub mod render;

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
    /// Reject texts with a line break; the value is the message.
    pub reject_newlines: Option<String>,
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
}

/// One launch, as written in its TOML file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    /// Launch id.
    pub id: String,
    /// Harness name.
    pub harness: String,
    /// Harness version.
    pub version: String,
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
    /// Input validation.
    #[serde(default)]
    pub validate: Validate,
    /// Rewriting.
    pub rewrite: Option<Rewrite>,
    /// Wrapper.
    pub wrapper: Option<Wrapper>,
    /// Process.
    pub spawn: Spawn,
    /// Snapshot effects.
    pub snapshot: Option<Snapshot>,
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
    /// The hops of this launch, in order. The names are the ones `iec check` reports.
    pub fn hops(&self) -> Vec<HopInfo> {
        let mut h = vec![HopInfo {
            name: "tool-input",
            kind: "structured-decode",
        }];
        if self.rewrite.is_some() {
            h.push(HopInfo {
                name: "harness-rewrite",
                kind: "wrapper",
            });
        }
        if self.wrapper.is_some() {
            h.push(HopInfo {
                name: "wrapper",
                kind: "wrapper",
            });
        }
        h.push(HopInfo {
            name: "spawn",
            kind: "process-interface",
        });
        h.push(HopInfo {
            name: "shell",
            kind: "shell-parse",
        });
        if self.wrapper.as_ref().is_some_and(|w| w.eval) {
            h.push(HopInfo {
                name: "eval",
                kind: "eval-parse",
            });
        }
        if self.snapshot.as_ref().is_some_and(|s| !s.shadowed.is_empty()) {
            h.push(HopInfo {
                name: "program",
                kind: "child-argv",
            });
        }
        h
    }

    /// Parses a launch file and checks that the renderings and steps it names exist.
    pub fn from_toml(text: &str) -> Result<Launch, LaunchError> {
        let l: Launch = toml::from_str(text).map_err(|e| LaunchError::Toml(e.to_string()))?;
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

    /// Adds (or replaces) a launch from a file.
    pub fn add_file(&mut self, path: &std::path::Path) -> Result<String, LaunchError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| LaunchError::Io(path.display().to_string(), e))?;
        let l = Launch::from_toml(&text)?;
        let id = l.id.clone();
        self.launches.insert(id.clone(), l);
        Ok(id)
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
