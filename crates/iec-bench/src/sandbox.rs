//! Throwaway sandboxes: a temporary directory that is the working directory and `HOME` of every
//! process an item runs, with its setup files, its tools on `PATH` and a fixed git identity;
//! and the observation of the final state the check compares.

use crate::data::Observable;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one delivered call may run before it is killed (the item then fails).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The file in the sandbox where the tools log their calls (left out of `tree`).
pub const TOOL_LOG: &str = ".iec-bench-calls";

/// The environment every sandboxed process gets beyond `HOME`, `PATH` and the tool log: no
/// system git config, a fixed git identity and date, a UTF-8 locale (harness mode passes it to
/// the harness, whose shells inherit it).
pub const FIXED_ENV: [(&str, &str); 8] = [
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_AUTHOR_NAME", "IEC Bench"),
    ("GIT_AUTHOR_EMAIL", "bench@iec.invalid"),
    ("GIT_COMMITTER_NAME", "IEC Bench"),
    ("GIT_COMMITTER_EMAIL", "bench@iec.invalid"),
    ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
    ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
    ("LC_ALL", "C.UTF-8"),
];

/// The folder of tool programs one run shares: each a copy of [`crate::chain::TOOL_PROGRAM`].
/// Written once, before any sandbox runs, and each program started once until it runs: a
/// program written while another thread forks can fail to start with `ETXTBSY` (the forked child
/// holds the writing descriptor until it execs), and a call that silently fails to start would
/// pass for a changed call.
pub struct Tools {
    dir: tempfile::TempDir,
}

impl Tools {
    /// Programs named `names`.
    pub fn new<'n>(names: impl IntoIterator<Item = &'n str>) -> std::io::Result<Tools> {
        Tools::with_program(names, crate::chain::TOOL_PROGRAM)
    }

    /// Programs named `names`, each a copy of `program` (replay mode's
    /// [`crate::chain::TOOL_PROGRAM`], or harness mode's [`crate::chain::HARNESS_TOOL_PROGRAM`]).
    pub fn with_program<'n>(
        names: impl IntoIterator<Item = &'n str>,
        program: &str,
    ) -> std::io::Result<Tools> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new().prefix("iec-bench-tools-").tempdir()?;
        let names: std::collections::BTreeSet<&str> = names.into_iter().collect();
        for t in &names {
            if !crate::data::safe_name(t) || t.contains('/') {
                return Err(std::io::Error::other(format!(
                    "tool name {t:?} is not a file name"
                )));
            }
            let p = dir.path().join(t);
            std::fs::write(&p, program)?;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
        }
        for t in &names {
            let p = dir.path().join(t);
            let mut tries = 0;
            loop {
                // Run where the harness program's log goes nowhere that matters.
                let status = Command::new(&p)
                    .env("IEC_BENCH_TOOL_LOG", "/dev/null")
                    .current_dir(dir.path())
                    .status();
                match status {
                    Ok(s) if s.success() => break,
                    Err(e) if e.raw_os_error() == Some(libc_etxtbsy()) && tries < 200 => {
                        tries += 1;
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Ok(s) => return Err(std::io::Error::other(format!("tool program {t} exits {s}"))),
                    Err(e) => return Err(e),
                }
            }
        }
        // The start-up runs of the harness program logged here.
        let _ = std::fs::remove_file(dir.path().join(TOOL_LOG));
        Ok(Tools { dir })
    }

    /// The folder (put first on `PATH`).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// `ETXTBSY` on Linux.
const fn libc_etxtbsy() -> i32 {
    26
}

/// What one process run in a sandbox did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    /// Its exit code (-1: killed by a signal); `None`: killed after [`CALL_TIMEOUT`].
    pub status: Option<i32>,
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error (empty unless asked for).
    pub stderr: Vec<u8>,
}

impl RunOutput {
    /// It exited 0.
    pub fn ok(&self) -> bool {
        self.status == Some(0)
    }
}

/// A sandbox.
pub struct Sandbox {
    dir: tempfile::TempDir,
    tools: Option<PathBuf>,
    stdout: Vec<u8>,
}

impl Sandbox {
    /// A fresh sandbox with `setup` files, and `tools` first on `PATH`.
    pub fn new(setup: &BTreeMap<String, String>, tools: Option<&Tools>) -> std::io::Result<Sandbox> {
        Sandbox::with_dir(
            tempfile::Builder::new().prefix("iec-bench-").tempdir()?,
            setup,
            tools,
        )
    }

    /// A fresh sandbox inside `parent` (a real harness's working directory, whose calls `cd`
    /// into it), named `name…`, with `setup` files.
    pub fn new_in(parent: &Path, name: &str, setup: &BTreeMap<String, String>) -> std::io::Result<Sandbox> {
        Sandbox::with_dir(
            tempfile::Builder::new().prefix(name).tempdir_in(parent)?,
            setup,
            None,
        )
    }

    fn with_dir(
        dir: tempfile::TempDir,
        setup: &BTreeMap<String, String>,
        tools: Option<&Tools>,
    ) -> std::io::Result<Sandbox> {
        for (name, content) in setup {
            let p = dir.path().join(name);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(p, content)?;
        }
        Ok(Sandbox {
            dir,
            tools: tools.map(|t| t.path().to_path_buf()),
            stdout: vec![],
        })
    }

    /// The sandbox folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join(TOOL_LOG)
    }

    /// Runs `argv` in the sandbox (stdin empty, stderr dropped, killed after
    /// [`CALL_TIMEOUT`]); its stdout is kept for the `stdout` observable. Returns whether it
    /// exited 0.
    pub fn run(&mut self, argv: &[String]) -> std::io::Result<bool> {
        Ok(self.run_captured(argv, false)?.ok())
    }

    /// [`Sandbox::run`], returning what the process wrote: its stdout (also kept for the
    /// `stdout` observable) and, with `stderr`, its stderr (else dropped).
    pub fn run_captured(&mut self, argv: &[String], stderr: bool) -> std::io::Result<RunOutput> {
        let inherited = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        let path = match &self.tools {
            Some(t) => format!("{}:{inherited}", t.display()),
            None => inherited,
        };
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("PATH", path)
            .env("IEC_BENCH_TOOL_LOG", self.log())
            .envs(FIXED_ENV)
            .env_remove("BASH_ENV")
            .env_remove("ENV")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if stderr { Stdio::piped() } else { Stdio::null() })
            .spawn()?;
        let read_all = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut buf = vec![];
                let _ = r.read_to_end(&mut buf);
                buf
            })
        };
        let reader = read_all(Box::new(child.stdout.take().expect("piped stdout")));
        let err_reader = child
            .stderr
            .take()
            .map(|e| read_all(Box::new(e) as Box<dyn Read + Send>));
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break Some(s);
            }
            if start.elapsed() > CALL_TIMEOUT {
                child.kill()?;
                child.wait()?;
                break None;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        // A background child that keeps stdout open would hold the reader: the timeout ends
        // only the shell, so the reader is given up on after the call's own time.
        let buf = reader.join().unwrap_or_default();
        self.stdout.extend_from_slice(&buf);
        Ok(RunOutput {
            status: status.map(|s| s.code().unwrap_or(-1)),
            stdout: buf,
            stderr: err_reader
                .map(|r| r.join().unwrap_or_default())
                .unwrap_or_default(),
        })
    }

    /// Records `bytes` as the standard output of the actions (for the `stdout` observable),
    /// when they ran elsewhere than through [`Sandbox::run`] (a real harness reports it in its
    /// tool result).
    pub fn push_stdout(&mut self, bytes: &[u8]) {
        self.stdout.extend_from_slice(bytes);
    }

    /// The tool log (what every tool received).
    pub fn tool_log(&self) -> Vec<u8> {
        std::fs::read(self.log()).unwrap_or_default()
    }

    /// The value of each observable now.
    pub fn observe(&self, what: &[Observable]) -> BTreeMap<String, String> {
        what.iter().map(|o| (o.key(), self.value(o))).collect()
    }

    fn value(&self, o: &Observable) -> String {
        match o {
            Observable::Stdout => String::from_utf8_lossy(&self.stdout).into_owned(),
            Observable::File(n) => match std::fs::read(self.dir.path().join(n)) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(_) => "<absent>".into(),
            },
            Observable::GitMessage => {
                // The message as stored: the commit object after its header's blank line.
                let out = Command::new("git")
                    .args(["cat-file", "commit", "HEAD"])
                    .current_dir(self.dir.path())
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("HOME", self.dir.path())
                    .stderr(Stdio::null())
                    .output();
                match out {
                    Ok(o) if o.status.success() => {
                        let c = String::from_utf8_lossy(&o.stdout).into_owned();
                        c.split_once("\n\n").map_or(String::new(), |(_, m)| m.to_string())
                    }
                    _ => "<no commit>".into(),
                }
            }
            Observable::Tree => {
                let mut names = vec![];
                walk(self.dir.path(), self.dir.path(), &mut names);
                names.sort();
                names.join("\n")
            }
        }
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().into_owned();
        if rel == ".git" || rel == TOOL_LOG {
            continue;
        }
        if p.is_dir() {
            out.push(format!("{rel}/"));
            walk(root, &p, out);
        } else {
            out.push(rel);
        }
    }
}
