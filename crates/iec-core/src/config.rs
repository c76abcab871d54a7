//! Every environment variable the product reads, parsed in one place into one typed [`Config`].
//!
//! `docs/environment.md` is the table of these variables (and of the ones only tests, benchmarks
//! and scripts read); a test fails when the code reads a variable the table does not list, or
//! the table lists one no code reads. Nothing needs to be set for normal use.
//!
//! A bad value is an error that names the variable, its value and what is expected
//! ([`ConfigError`]), never a silent default. The binaries parse the environment before they
//! do anything else (`iec` exits 2, the hook answers `ask` with the error, `iec-bash` exits
//! 127, `iec-mcp` exits 1). Library code asks [`current`] where it needs a value: the
//! environment as it is at that moment (tests change it in-process), parsed by the same code.
//!
//! An empty value counts as unset for every variable. `IEC_DAEMON` keeps its documented
//! leniency: a value other than `0`, `off` and `only` means the default mode.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

/// Every product variable: the names [`Config::from_lookup`] reads, in the order of its fields.
pub const VARS: &[&str] = &[
    "IEC_DAEMON",
    "IEC_DAEMON_SOCKET",
    "IEC_DAEMON_TRIM_SECS",
    "IEC_DAEMON_REQUEST_SECS",
    "IEC_DAEMON_IDLE_SECS",
    "IEC_INTENT_DIR",
    "IEC_INTENT_TTL_SECS",
    "IEC_REAL_BASH",
    "IEC_BASH",
    "IEC_TMUX",
    "IEC_JAIL_HELPER",
    "IEC_ALLOW_UNJAILED",
    "IEC_WITNESS_TIMEOUT_SECS",
    "IEC_WITNESS_PIN",
    "IEC_WITNESS_MAX_SERVERS",
    "IEC_WITNESS_LOADER_FILES",
    "IEC_MCP_RUNTIME",
    "IEC_ARGVPROBE",
    "IEC_ARGVPROBE_LOG",
    "HOME",
    "XDG_RUNTIME_DIR",
    "XDG_CACHE_HOME",
    "TMPDIR",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
];

/// Default of `IEC_DAEMON_TRIM_SECS`.
pub const DEFAULT_DAEMON_TRIM: Duration = Duration::from_secs(30);
/// Default, and upper bound, of `IEC_DAEMON_REQUEST_SECS`.
pub const DEFAULT_DAEMON_REQUEST: Duration = Duration::from_secs(10);
/// Default of `IEC_DAEMON_IDLE_SECS`.
pub const DEFAULT_DAEMON_IDLE: Duration = Duration::from_secs(15 * 60);
/// Default of `IEC_INTENT_TTL_SECS`.
pub const DEFAULT_INTENT_TTL: Duration = Duration::from_secs(3600);
/// Default of `IEC_WITNESS_TIMEOUT_SECS`.
pub const DEFAULT_WITNESS_TIMEOUT: Duration = Duration::from_secs(20);

/// How the hook uses the witness daemon (`IEC_DAEMON`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DaemonMode {
    /// `0` or `off`: decide every call in the hook process.
    Off,
    /// Unset or any other value: plain texts in the hook process, the rest by the daemon
    /// (started when missing), falling back to the hook process when it cannot answer.
    #[default]
    Auto,
    /// `only`: every call by the daemon; no fallback, no start.
    Only,
}

impl DaemonMode {
    /// The mode `IEC_DAEMON` asks for. A bad value of another variable gives the default here;
    /// the hook reports it when it runs.
    pub fn from_env() -> DaemonMode {
        Config::from_env().map(|c| c.daemon).unwrap_or_default()
    }
}

/// How `iec-mcp` builds its tokio runtime (`IEC_MCP_RUNTIME`; the tests try each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpRuntime {
    /// `multi_thread` (or unset): what `#[tokio::main]` builds.
    #[default]
    MultiThread,
    /// `block_on`: `Runtime::new()?.block_on(..)`.
    BlockOn,
    /// `current_thread`: a current-thread runtime.
    CurrentThread,
}

/// One field per variable; `None` is "unset" where the default is computed by the code that
/// uses it (a path found on disk, a directory derived from another variable).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    /// `IEC_DAEMON`: how the hook uses the daemon.
    pub daemon: DaemonMode,
    /// `IEC_DAEMON_SOCKET`: the daemon's socket path (default derived from `XDG_RUNTIME_DIR`
    /// or `HOME` and the build id).
    pub daemon_socket: Option<PathBuf>,
    /// `IEC_DAEMON_TRIM_SECS` (whole seconds): an unused witness slot beyond the first of each
    /// CPU ends its witnesses after this long.
    pub daemon_trim: Duration,
    /// `IEC_DAEMON_REQUEST_SECS` (decimal seconds, at most 10): how long a client may take to
    /// send its whole request line.
    pub daemon_request: Duration,
    /// `IEC_DAEMON_IDLE_SECS` (whole seconds): the daemon exits after this long without a
    /// request (`--idle-exit` overrides).
    pub daemon_idle: Duration,
    /// `IEC_INTENT_DIR`: the shim's intent store; when set, the hook records intents.
    pub intent_dir: Option<PathBuf>,
    /// `IEC_INTENT_TTL_SECS` (whole seconds): an unmatched intent expires after this long.
    pub intent_ttl: Duration,
    /// `IEC_REAL_BASH`: the bash the shim runs (checked by the shim: absolute, not itself).
    pub real_bash: Option<PathBuf>,
    /// `IEC_BASH`: the bash the witnesses run.
    pub bash: Option<PathBuf>,
    /// `IEC_TMUX`: the tmux of the terminal witness.
    pub tmux: Option<PathBuf>,
    /// `IEC_JAIL_HELPER`: the program tmux runs as the terminal witness's jailed pane command.
    pub jail_helper: Option<PathBuf>,
    /// `IEC_ALLOW_UNJAILED` (`1` or `0`): witnesses may start without the seccomp jail where
    /// the kernel has none.
    pub allow_unjailed: bool,
    /// `IEC_WITNESS_TIMEOUT_SECS` (decimal seconds): how long one witness request may take.
    pub witness_timeout: Duration,
    /// `IEC_WITNESS_PIN` (`1` or `0`, default `1`): pin warm witness servers to one CPU.
    pub witness_pin: bool,
    /// `IEC_WITNESS_MAX_SERVERS` (a count; 0 counts as 1): the most bash witness servers one
    /// pool runs at once (default four per CPU, 8 to 64).
    pub witness_max_servers: Option<usize>,
    /// `IEC_WITNESS_LOADER_FILES` (set by `iec` for its jail helper, not by users): the
    /// terminal witness's bash and its loader files, for the Landlock rules.
    pub witness_loader_files: Option<OsString>,
    /// `IEC_MCP_RUNTIME`: how `iec-mcp` builds its runtime.
    pub mcp_runtime: McpRuntime,
    /// `IEC_ARGVPROBE`: the argv probe of real harness runs.
    pub argvprobe: Option<PathBuf>,
    /// `IEC_ARGVPROBE_LOG` (set by the harness driver): the file the argv probe appends to.
    pub argvprobe_log: Option<PathBuf>,
    /// `HOME`: `~/.cache/iec`, `~/.claude`, the daemon's socket when `XDG_RUNTIME_DIR` is unset.
    pub home: Option<PathBuf>,
    /// `XDG_RUNTIME_DIR`: the daemon's socket and the intent store.
    pub xdg_runtime_dir: Option<PathBuf>,
    /// `XDG_CACHE_HOME`: the cached loader-file lists of the terminal witness (else
    /// `~/.cache`).
    pub xdg_cache_home: Option<PathBuf>,
    /// `TMPDIR`: the intent store when `XDG_RUNTIME_DIR` is unset (else `/tmp`).
    pub tmpdir: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR`: where `iec install claude-code` writes `settings.json` (else
    /// `~/.claude`).
    pub claude_config_dir: Option<PathBuf>,
    /// `CODEX_HOME`: where `iec scan` looks for Codex's session logs (`sessions/`; else
    /// `~/.codex`).
    pub codex_home: Option<PathBuf>,
}

/// A variable with a value the code cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {var}={value:?}: expected {expected}; fix or unset it")]
pub struct ConfigError {
    /// The variable's name.
    pub var: &'static str,
    /// Its value (lossy UTF-8).
    pub value: String,
    /// What it must hold.
    pub expected: &'static str,
}

impl Config {
    /// The configuration of this process's environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|k| std::env::var_os(k))
    }

    /// The configuration `get` describes (`get(name)` is the variable's value, if set).
    pub fn from_lookup(get: impl Fn(&str) -> Option<OsString>) -> Result<Config, ConfigError> {
        let r = Reader(&get);
        Ok(Config {
            daemon: match r.text("IEC_DAEMON")?.as_deref() {
                Some("0") | Some("off") => DaemonMode::Off,
                Some("only") => DaemonMode::Only,
                _ => DaemonMode::Auto,
            },
            daemon_socket: r.path("IEC_DAEMON_SOCKET"),
            daemon_trim: r.whole_secs("IEC_DAEMON_TRIM_SECS", DEFAULT_DAEMON_TRIM)?,
            daemon_request: r
                .decimal_secs("IEC_DAEMON_REQUEST_SECS", DEFAULT_DAEMON_REQUEST)?
                .min(DEFAULT_DAEMON_REQUEST),
            daemon_idle: r.whole_secs("IEC_DAEMON_IDLE_SECS", DEFAULT_DAEMON_IDLE)?,
            intent_dir: r.path("IEC_INTENT_DIR"),
            intent_ttl: r.whole_secs("IEC_INTENT_TTL_SECS", DEFAULT_INTENT_TTL)?,
            real_bash: r.path("IEC_REAL_BASH"),
            bash: r.path("IEC_BASH"),
            tmux: r.path("IEC_TMUX"),
            jail_helper: r.path("IEC_JAIL_HELPER"),
            allow_unjailed: r.flag("IEC_ALLOW_UNJAILED", false)?,
            witness_timeout: r.decimal_secs("IEC_WITNESS_TIMEOUT_SECS", DEFAULT_WITNESS_TIMEOUT)?,
            witness_pin: r.flag("IEC_WITNESS_PIN", true)?,
            witness_max_servers: r.count("IEC_WITNESS_MAX_SERVERS")?,
            witness_loader_files: r.raw("IEC_WITNESS_LOADER_FILES"),
            mcp_runtime: match r.text("IEC_MCP_RUNTIME")?.as_deref() {
                None | Some("multi_thread") => McpRuntime::MultiThread,
                Some("block_on") => McpRuntime::BlockOn,
                Some("current_thread") => McpRuntime::CurrentThread,
                Some(v) => {
                    return Err(r.error(
                        "IEC_MCP_RUNTIME",
                        v.as_ref(),
                        "multi_thread, block_on or current_thread",
                    ))
                }
            },
            argvprobe: r.path("IEC_ARGVPROBE"),
            argvprobe_log: r.path("IEC_ARGVPROBE_LOG"),
            home: r.path("HOME"),
            xdg_runtime_dir: r.path("XDG_RUNTIME_DIR"),
            xdg_cache_home: r.path("XDG_CACHE_HOME"),
            tmpdir: r.path("TMPDIR"),
            claude_config_dir: r.path("CLAUDE_CONFIG_DIR"),
            codex_home: r.path("CODEX_HOME"),
        })
    }
}

/// The configuration of the environment as it is now.
///
/// # Panics
/// On a bad value, with the [`ConfigError`] (which names the variable). The binaries check
/// [`Config::from_env`] before anything else runs, so only a library user who set a bad value
/// can reach this.
pub fn current() -> Config {
    Config::from_env().unwrap_or_else(|e| panic!("{e}"))
}

/// [`Config::witness_pin`] of the environment as it is now, read alone: the witness pool asks
/// it in every hook process, where reading the whole configuration (some forty variables) a
/// second time cost 13,000 of the unexposed hook's 470,000 instructions (issue 18).
///
/// # Panics
/// On a bad `IEC_WITNESS_PIN`, as [`current`].
pub fn witness_pin() -> bool {
    let get = |k: &str| std::env::var_os(k);
    Reader(&get)
        .flag("IEC_WITNESS_PIN", true)
        .unwrap_or_else(|e| panic!("{e}"))
}

struct Reader<'a>(&'a dyn Fn(&str) -> Option<OsString>);

impl Reader<'_> {
    /// The value, with an empty one counted as unset.
    fn raw(&self, var: &str) -> Option<OsString> {
        (self.0)(var).filter(|v| !v.is_empty())
    }

    fn error(&self, var: &'static str, value: &OsStr, expected: &'static str) -> ConfigError {
        ConfigError {
            var,
            value: value.to_string_lossy().into_owned(),
            expected,
        }
    }

    fn path(&self, var: &str) -> Option<PathBuf> {
        self.raw(var).map(PathBuf::from)
    }

    fn text(&self, var: &'static str) -> Result<Option<String>, ConfigError> {
        match self.raw(var) {
            None => Ok(None),
            Some(v) => match v.into_string() {
                Ok(s) => Ok(Some(s)),
                Err(v) => Err(self.error(var, &v, "UTF-8 text")),
            },
        }
    }

    fn whole_secs(&self, var: &'static str, default: Duration) -> Result<Duration, ConfigError> {
        match self.text(var)? {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map(Duration::from_secs)
                .map_err(|_| self.error(var, v.as_ref(), "a whole number of seconds")),
        }
    }

    fn decimal_secs(&self, var: &'static str, default: Duration) -> Result<Duration, ConfigError> {
        match self.text(var)? {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e12)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| self.error(var, v.as_ref(), "a number of seconds above 0 (decimals allowed)")),
        }
    }

    fn flag(&self, var: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.text(var)?.as_deref().map(str::trim) {
            None => Ok(default),
            Some("1") => Ok(true),
            Some("0") => Ok(false),
            Some(v) => Err(self.error(var, v.as_ref(), "1 or 0")),
        }
    }

    fn count(&self, var: &'static str) -> Result<Option<usize>, ConfigError> {
        match self.text(var)? {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<usize>()
                .map(|n| Some(n.max(1)))
                .map_err(|_| self.error(var, v.as_ref(), "a whole number")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_lookup(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| OsString::from(v)))
    }

    #[test]
    fn nothing_set_is_every_default() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.daemon, DaemonMode::Auto);
        assert_eq!(c.daemon_trim, Duration::from_secs(30));
        assert_eq!(c.daemon_request, Duration::from_secs(10));
        assert_eq!(c.daemon_idle, Duration::from_secs(900));
        assert_eq!(c.intent_ttl, Duration::from_secs(3600));
        assert_eq!(c.witness_timeout, Duration::from_secs(20));
        assert!(c.witness_pin);
        assert!(!c.allow_unjailed);
        assert_eq!(c.witness_max_servers, None);
        assert_eq!(c.mcp_runtime, McpRuntime::MultiThread);
        assert_eq!(c.bash, None);
    }

    #[test]
    fn witness_pin_alone_reads_as_the_whole_configuration() {
        assert_eq!(witness_pin(), current().witness_pin);
        for (v, want) in [
            ("0", Some(false)),
            ("1", Some(true)),
            (" 1 ", Some(true)),
            ("", Some(true)),
            ("yes", None),
        ] {
            let c = Config::from_lookup(|k| (k == "IEC_WITNESS_PIN").then(|| OsString::from(v)));
            let alone = Reader(&|k: &str| (k == "IEC_WITNESS_PIN").then(|| OsString::from(v)))
                .flag("IEC_WITNESS_PIN", true)
                .ok();
            assert_eq!(c.map(|c| c.witness_pin).ok(), want, "{v:?}");
            assert_eq!(alone, want, "{v:?}");
        }
    }

    #[test]
    fn values_are_read_into_their_types() {
        let c = parse(&[
            ("IEC_DAEMON", "only"),
            ("IEC_DAEMON_SOCKET", "/run/s.sock"),
            ("IEC_DAEMON_TRIM_SECS", " 2 "),
            ("IEC_DAEMON_REQUEST_SECS", "60"),
            ("IEC_WITNESS_TIMEOUT_SECS", "1.5"),
            ("IEC_WITNESS_PIN", "0"),
            ("IEC_ALLOW_UNJAILED", "1"),
            ("IEC_WITNESS_MAX_SERVERS", "0"),
            ("IEC_MCP_RUNTIME", "current_thread"),
            ("IEC_BASH", ""),
        ])
        .unwrap();
        assert_eq!(c.daemon, DaemonMode::Only);
        assert_eq!(c.daemon_socket, Some(PathBuf::from("/run/s.sock")));
        assert_eq!(c.daemon_trim, Duration::from_secs(2));
        assert_eq!(c.daemon_request, Duration::from_secs(10), "capped at 10 s");
        assert_eq!(c.witness_timeout, Duration::from_millis(1500));
        assert!(!c.witness_pin);
        assert!(c.allow_unjailed);
        assert_eq!(c.witness_max_servers, Some(1), "0 counts as 1");
        assert_eq!(c.mcp_runtime, McpRuntime::CurrentThread);
        assert_eq!(c.bash, None, "empty is unset");
        for (v, mode) in [
            ("0", DaemonMode::Off),
            ("off", DaemonMode::Off),
            ("auto", DaemonMode::Auto),
        ] {
            assert_eq!(parse(&[("IEC_DAEMON", v)]).unwrap().daemon, mode, "{v}");
        }
    }

    #[test]
    fn a_bad_value_is_an_error_naming_the_variable() {
        for (var, value, expected) in [
            (
                "IEC_WITNESS_TIMEOUT_SECS",
                "abc",
                "a number of seconds above 0 (decimals allowed)",
            ),
            (
                "IEC_WITNESS_TIMEOUT_SECS",
                "0",
                "a number of seconds above 0 (decimals allowed)",
            ),
            (
                "IEC_WITNESS_TIMEOUT_SECS",
                "inf",
                "a number of seconds above 0 (decimals allowed)",
            ),
            ("IEC_DAEMON_TRIM_SECS", "1.5", "a whole number of seconds"),
            ("IEC_DAEMON_IDLE_SECS", "-1", "a whole number of seconds"),
            ("IEC_INTENT_TTL_SECS", "1h", "a whole number of seconds"),
            ("IEC_WITNESS_PIN", "no", "1 or 0"),
            ("IEC_ALLOW_UNJAILED", "yes", "1 or 0"),
            ("IEC_WITNESS_MAX_SERVERS", "many", "a whole number"),
            (
                "IEC_MCP_RUNTIME",
                "tokio",
                "multi_thread, block_on or current_thread",
            ),
        ] {
            let e = parse(&[(var, value)]).unwrap_err();
            assert_eq!(
                e,
                ConfigError {
                    var,
                    value: value.into(),
                    expected
                }
            );
            assert_eq!(
                e.to_string(),
                format!("environment variable {var}={value:?}: expected {expected}; fix or unset it")
            );
        }
    }

    #[test]
    fn a_value_that_is_not_utf8_is_an_error_where_text_is_expected() {
        use std::os::unix::ffi::OsStringExt;
        let e =
            Config::from_lookup(|k| (k == "IEC_DAEMON_IDLE_SECS").then(|| OsString::from_vec(vec![0xff])))
                .unwrap_err();
        assert_eq!((e.var, e.expected), ("IEC_DAEMON_IDLE_SECS", "UTF-8 text"));
        // A path may be any bytes.
        let c =
            Config::from_lookup(|k| (k == "IEC_BASH").then(|| OsString::from_vec(vec![b'/', 0xff]))).unwrap();
        assert_eq!(c.bash.unwrap().as_os_str().len(), 2);
    }
}
