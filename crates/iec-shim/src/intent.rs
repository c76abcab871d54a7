//! The intent store: the hook writes the command it saw (the intended call) here, out of band;
//! the shim reads it back and compares it with what arrived.
//!
//! One private directory per user (mode 0700, owned by the user; anything else is not used):
//! `$IEC_INTENT_DIR`, else `$XDG_RUNTIME_DIR/iec/intents`, else `$TMPDIR/iec-$UID/intents`, else
//! `/tmp/iec-$UID/intents`. One JSON file per intent, named `<sha256 of the command>-<pid>-<ns>.json`
//! (two identical calls in flight are two intents), written atomically (temporary file + rename).
//! An intent expires after `$IEC_INTENT_TTL_SECS` seconds (default 3600: a permission prompt may
//! sit between the hook and the spawn) and is deleted by the next scan.
//!
//! Scope: the recorder stores its own pid and its ancestors' pids (Linux `/proc`). The shim only
//! considers intents whose list holds its parent, the harness process that spawned it, so two
//! harness sessions of one user do not see each other's intents. Where the ancestors cannot be
//! read the list is empty and the intent applies to every shim of the user.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Overrides the store directory.
pub const DIR_ENV: &str = "IEC_INTENT_DIR";
/// Overrides the expiry, in seconds.
pub const TTL_ENV: &str = "IEC_INTENT_TTL_SECS";
/// Default expiry.
pub const DEFAULT_TTL: Duration = iec_core::config::DEFAULT_INTENT_TTL;

/// One recorded intent as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// The command exactly as the hook received it (`tool_input.command`).
    pub command: String,
    /// Milliseconds since the Unix epoch when it was recorded.
    pub created_ms: u64,
    /// The recorder's pid and its ancestors' (empty: applies to any shim of this user).
    pub scope: Vec<u32>,
    /// Where the hook got it from (e.g. `claude-code`), for messages.
    #[serde(default)]
    pub source: String,
}

/// A pending intent and its file.
#[derive(Debug, Clone)]
pub struct Pending {
    pub path: PathBuf,
    pub intent: Intent,
}

/// Errors of the store (messages name the directory).
#[derive(Debug)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// The store directory for this process's environment (not created).
pub fn default_dir() -> PathBuf {
    let config = iec_core::config::current();
    if let Some(d) = config.intent_dir {
        return d;
    }
    if let Some(d) = config.xdg_runtime_dir {
        return d.join("iec").join("intents");
    }
    let tmp = config.tmpdir.unwrap_or_else(|| PathBuf::from("/tmp"));
    tmp.join(format!("iec-{}", uid())).join("intents")
}

/// The expiry from the environment.
pub fn ttl() -> Duration {
    iec_core::config::current().intent_ttl
}

/// Lower-case hex SHA-256 of the command's bytes.
pub fn key(command: &str) -> String {
    Sha256::digest(command.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// This process's pid followed by its ancestors' (Linux `/proc`); empty where `/proc` is
/// missing, which makes the intent unscoped.
pub fn scope_of_self() -> Vec<u32> {
    let mut v = Vec::new();
    if !Path::new("/proc/self/stat").exists() {
        return v;
    }
    let mut pid = std::process::id();
    for _ in 0..64 {
        v.push(pid);
        match parent_of(pid) {
            Some(p) if p > 1 && !v.contains(&p) => pid = p,
            _ => break,
        }
    }
    v
}

/// The parent pid from `/proc/PID/stat` (the field after the `)` that ends the command name).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// An opened, checked store directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    ttl: Duration,
}

impl Store {
    /// The default store, created if missing (the recorder side).
    pub fn create_default() -> Result<Store, StoreError> {
        Store::create(&default_dir())
    }

    /// Creates `dir` (and missing parents, each 0700) if needed, then checks it.
    pub fn create(dir: &Path) -> Result<Store, StoreError> {
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| StoreError(format!("cannot create {}: {e}", dir.display())))?;
        }
        Store::open(dir)
    }

    /// Opens an existing store; `Ok(None)` when it does not exist (nothing recorded).
    pub fn open_existing(dir: &Path) -> Result<Option<Store>, StoreError> {
        match std::fs::symlink_metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            _ => Store::open(dir).map(Some),
        }
    }

    /// Checks that `dir` is a real directory owned by this user with no group/other access:
    /// anyone else able to write there could add or remove intents.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let md = std::fs::symlink_metadata(dir)
            .map_err(|e| StoreError(format!("cannot read {}: {e}", dir.display())))?;
        if !md.file_type().is_dir() {
            return Err(StoreError(format!(
                "{} is not a directory (a symlink is not accepted)",
                dir.display()
            )));
        }
        if md.uid() != uid() {
            return Err(StoreError(format!(
                "{} belongs to uid {}, not to this user ({})",
                dir.display(),
                md.uid(),
                uid()
            )));
        }
        if md.permissions().mode() & 0o077 != 0 {
            return Err(StoreError(format!(
                "{} has mode {:o}; it must be 0700",
                dir.display(),
                md.permissions().mode() & 0o777
            )));
        }
        Ok(Store {
            dir: dir.to_path_buf(),
            ttl: ttl(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records `command` with `scope`; returns the intent's file.
    pub fn record(&self, command: &str, scope: Vec<u32>, source: &str) -> Result<PathBuf, StoreError> {
        if command.len() > iec_core::MAX_TEXT {
            let e = iec_core::limits::TooLong {
                what: "the command text".into(),
                bytes: command.len(),
                at_least: false,
            };
            return Err(StoreError(format!("not recorded: {e}")));
        }
        let intent = Intent {
            command: command.to_string(),
            created_ms: now_ms(),
            scope,
            source: source.to_string(),
        };
        self.write(&intent)
    }

    /// Writes `intent` atomically (temporary name, then rename into place).
    pub fn write(&self, intent: &Intent) -> Result<PathBuf, StoreError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!("{}-{}-{nanos}.json", key(&intent.command), std::process::id());
        let path = self.dir.join(&name);
        let tmp = self.dir.join(format!(".tmp-{name}"));
        let err = |e: std::io::Error| StoreError(format!("cannot write {}: {e}", tmp.display()));
        let body = serde_json::to_vec(intent).map_err(|e| StoreError(e.to_string()))?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(err)?;
        f.write_all(&body).map_err(err)?;
        drop(f);
        std::fs::rename(&tmp, &path)
            .map_err(|e| StoreError(format!("cannot rename into {}: {e}", path.display())))?;
        Ok(path)
    }

    /// The unexpired intents that apply to a shim whose parent is `parent` (oldest first);
    /// expired and unreadable intent files are deleted on the way.
    pub fn pending(&self, parent: u32) -> Vec<Pending> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return vec![];
        };
        let now = now_ms();
        let ttl_ms = self.ttl.as_millis() as u64;
        let mut out = Vec::new();
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            let path = e.path();
            // Read no more than an intent of the longest text can take; an intent over the
            // text limit (the hook records none) is not one.
            let intent: Option<Intent> = std::fs::File::open(&path)
                .ok()
                .and_then(
                    |f| match iec_core::limits::read_at_most(f, iec_core::MAX_CALL_JSON) {
                        Ok(iec_core::limits::Bounded::Whole(b)) => Some(b),
                        _ => None,
                    },
                )
                .and_then(|b| serde_json::from_slice::<Intent>(&b).ok())
                .filter(|i| i.command.len() <= iec_core::MAX_TEXT);
            let Some(intent) = intent else {
                let _ = std::fs::remove_file(&path);
                continue;
            };
            if now.saturating_sub(intent.created_ms) > ttl_ms {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            if !intent.scope.is_empty() && !intent.scope.contains(&parent) {
                continue;
            }
            out.push(Pending { path, intent });
        }
        out.sort_by(|a, b| (a.intent.created_ms, &a.path).cmp(&(b.intent.created_ms, &b.path)));
        out
    }

    /// Deletes the expired intents (the recorder calls this: without a shim nothing else would).
    pub fn prune(&self) {
        let _ = self.pending(0);
    }

    /// Claims (removes) a pending intent; `false` when another shim claimed it first.
    pub fn claim(&self, p: &Pending) -> bool {
        std::fs::remove_file(&p.path).is_ok()
    }
}
