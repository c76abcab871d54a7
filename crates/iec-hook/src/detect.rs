//! Which Claude Code is calling the hook, when no `--launch` is given: the version from the
//! hook document's transcript (`transcript_path`: Claude Code writes `"version"` into its JSONL
//! records), else from the harness process that started the hook (an ancestor whose argv or
//! executable lies under `node_modules/@anthropic-ai/claude-code/`, whose `package.json` names
//! the version, or a native install under `…/claude/versions/VERSION`), and this OS. The hook
//! runs once per call, so the transcript is read from its end, at most [`TAIL`] bytes.

use iec_launches::resolve::{self, How};
use iec_launches::Catalog;
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The most bytes read from the end of a transcript.
pub const TAIL: u64 = 256 << 10;

/// How many ancestors of the hook are looked at for the harness process.
const ANCESTORS: usize = 8;

const PACKAGE: &str = "node_modules/@anthropic-ai/claude-code";

/// The version Claude Code wrote into the last records of the transcript at `path` that carry
/// one (reading at most [`TAIL`] bytes from its end; a first, cut-off line is skipped).
pub fn transcript_version(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let start = len.saturating_sub(TAIL);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    f.take(TAIL).read_to_end(&mut buf).ok()?;
    let mut lines: Vec<&[u8]> = buf.split(|b| *b == b'\n').collect();
    if start > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    lines.iter().rev().find_map(|line| {
        if !line.windows(9).any(|w| w == b"\"version\"") {
            return None;
        }
        let v: Value = serde_json::from_slice(line).ok()?;
        let s = v.get("version")?.as_str()?;
        resolve::Version::parse(s).map(|_| s.to_string())
    })
}

/// The version of a Claude Code install named by a path (an argument or executable of the
/// harness process): `…/node_modules/@anthropic-ai/claude-code/…` (its `package.json`), or a
/// native build `…/claude/versions/VERSION`.
pub fn path_version(p: &str) -> Option<String> {
    if let Some(i) = p.find(PACKAGE) {
        let pkg = Path::new(&p[..i + PACKAGE.len()]).join("package.json");
        let mut text = Vec::new();
        std::fs::File::open(pkg)
            .ok()?
            .take(1 << 16)
            .read_to_end(&mut text)
            .ok()?;
        let v: Value = serde_json::from_slice(&text).ok()?;
        if v.get("name")?.as_str()? != "@anthropic-ai/claude-code" {
            return None;
        }
        let s = v.get("version")?.as_str()?;
        return resolve::Version::parse(s).map(|_| s.to_string());
    }
    let (_, rest) = p.rsplit_once("/claude/versions/")?;
    let s = rest.split('/').next()?;
    resolve::Version::parse(s).map(|_| s.to_string())
}

/// The version of the Claude Code process among this process's ancestors, and its pid.
#[cfg(target_os = "linux")]
pub fn process_version() -> Option<(String, u32)> {
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..ANCESTORS {
        if pid <= 1 {
            return None;
        }
        let proc_ = format!("/proc/{pid}");
        let exe = std::fs::read_link(format!("{proc_}/exe")).ok();
        let cmdline = std::fs::read(format!("{proc_}/cmdline")).unwrap_or_default();
        let found = exe
            .iter()
            .map(|e| e.to_string_lossy().into_owned())
            .chain(
                cmdline
                    .split(|b| *b == 0)
                    .map(|a| String::from_utf8_lossy(a).into_owned()),
            )
            .find_map(|a| path_version(&a));
        if let Some(v) = found {
            return Some((v, pid));
        }
        let stat = std::fs::read_to_string(format!("{proc_}/stat")).ok()?;
        // `PID (COMM) STATE PPID …`; COMM may hold spaces and parentheses.
        pid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
    }
    None
}

/// Without `/proc`, no harness process is read.
#[cfg(not(target_os = "linux"))]
pub fn process_version() -> Option<(String, u32)> {
    None
}

/// The launch for the Claude Code that sent `doc`, with a note for stderr when it was decided
/// on neighbours; `Err` says why none was chosen (the hook then passes the call through).
pub fn launch_for(cat: &Catalog, doc: &Value) -> Result<(String, Option<String>), String> {
    let transcript = doc.get("transcript_path").and_then(Value::as_str);
    let (version, from) = match transcript.and_then(|p| transcript_version(Path::new(p))) {
        Some(v) => (v, "its transcript".to_string()),
        None => match process_version() {
            Some((v, pid)) => (v, format!("process {pid}")),
            None => {
                return Err(match transcript {
                    Some(p) => format!(
                        "no Claude Code version in the last {} KiB of the transcript {p} nor in the processes that started the hook",
                        TAIL >> 10
                    ),
                    None => "the hook document has no transcript_path and no process that started the hook is a Claude Code install".into(),
                })
            }
        },
    };
    let os = resolve::default_os();
    match resolve::resolve(cat, "claude-code", os, &version, Some("Bash")) {
        Ok((l, How::InRange)) => Ok((l.id.clone(), None)),
        Ok((l, How::Between { below, above })) => Ok((
            l.id.clone(),
            Some(format!(
                "iec hook: Claude Code {version} (from {from}) was not learned; {below} and {above} on both sides are {}, so it is used\n",
                l.id
            )),
        )),
        Err(e) => Err(format!("Claude Code {version} (from {from}): {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_record_with_a_version_wins_and_a_cut_line_is_skipped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.jsonl");
        let filler = format!(
            "{{\"type\":\"user\",\"version\":\"9.9.9\",\"x\":\"{}\"}}\n",
            "a".repeat(TAIL as usize)
        );
        let text = format!(
            "{filler}{{\"type\":\"assistant\",\"version\":\"2.1.72\"}}\n{{\"type\":\"summary\"}}\n{{\"type\":\"user\",\"message\":\"\\\"version\\\":\\\"1.0.0\\\"\"}}\n"
        );
        std::fs::write(&p, text).unwrap();
        assert_eq!(transcript_version(&p).as_deref(), Some("2.1.72"));
        // Only the filler's cut-off tail is within reach: no version.
        std::fs::write(&p, &filler[..filler.len() - 30]).unwrap();
        assert_eq!(transcript_version(&p), None);
        assert_eq!(transcript_version(&d.path().join("missing")), None);
    }

    #[test]
    fn install_paths_name_their_version() {
        let d = tempfile::tempdir().unwrap();
        let pkg = d.path().join("lib/node_modules/@anthropic-ai/claude-code");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name":"@anthropic-ai/claude-code","version":"2.0.76"}"#,
        )
        .unwrap();
        let cli = format!("{}/cli.js", pkg.display());
        assert_eq!(path_version(&cli).as_deref(), Some("2.0.76"));
        assert_eq!(
            path_version("/home/u/.local/share/claude/versions/2.1.332").as_deref(),
            Some("2.1.332")
        );
        assert_eq!(path_version("/usr/bin/node"), None);
        assert_eq!(path_version("/x/claude/versions/latest"), None);
    }
}
