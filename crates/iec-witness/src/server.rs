//! One warm bash witness process (see `server.bash` for what it does and refuses to do).

use crate::WitnessError;
use std::io::PipeReader;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

const SCRIPT: &str = include_str!("server.bash");

/// bash's verdict on a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parse {
    /// It parses; `canonical` is bash's own printing of it (`declare -f` body).
    Ok {
        /// The function body as bash prints it, header and closing brace removed.
        canonical: String,
    },
    /// It parses on its own only because the end of input closes it (an unterminated
    /// here-document, a trailing backslash): `bash -c` accepts it, but it has no canonical form
    /// and any text appended after it changes its meaning.
    EndOnly {
        /// bash's warning or the wrapped-parse error.
        message: String,
    },
    /// It does not parse; `message` is bash's diagnostic.
    Error {
        /// bash's message.
        message: String,
    },
}

impl Parse {
    /// The canonical form, if the text parses.
    pub fn canonical(&self) -> Option<&str> {
        match self {
            Parse::Ok { canonical } => Some(canonical),
            Parse::Error { .. } | Parse::EndOnly { .. } => None,
        }
    }

    /// True unless bash rejects the text.
    pub fn parses(&self) -> bool {
        !matches!(self, Parse::Error { .. })
    }
}

/// What the outer shell hands to a command whose arguments are harness-rendered words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The words after expansion and quote removal.
    pub args: Vec<String>,
    /// Exit status of the expansion (non-zero: an expansion error such as `${x?}`).
    pub status: i32,
    /// bash's diagnostics while expanding.
    pub diagnostics: String,
    /// True when the words held more than one command (the rendering broke out of its word).
    pub broke_out: bool,
}

/// A warm bash witness process.
pub struct BashServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<PipeReader>,
    dir: tempfile::TempDir,
    req_file: PathBuf,
}

/// Whether this system lets us start the witness without network (`unshare -n`), probed once.
fn unshare_works() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        for args in [&["-n", "true"][..], &["-rn", "true"][..]] {
            let ok = Command::new(unshare_path())
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ok {
                return true;
            }
        }
        false
    })
}

fn unshare_args() -> Option<&'static [&'static str]> {
    static ARGS: OnceLock<Option<&'static [&'static str]>> = OnceLock::new();
    *ARGS.get_or_init(|| {
        if !unshare_works() {
            return None;
        }
        let root = Command::new(unshare_path())
            .args(["-n", "true"])
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        Some(if root { &["-n"] } else { &["-rn"] })
    })
}

fn unshare_path() -> &'static str {
    ["/usr/bin/unshare", "/bin/unshare"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("unshare")
}

/// True when witness servers run without network access on this system.
pub fn isolated_network() -> bool {
    unshare_args().is_some()
}

/// The bash program used by witnesses: `IEC_BASH` or `bash` from the usual places.
pub fn bash_path() -> PathBuf {
    if let Some(p) = std::env::var_os("IEC_BASH") {
        return PathBuf::from(p);
    }
    for p in ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"] {
        if std::path::Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    PathBuf::from("bash")
}

impl BashServer {
    /// Starts a witness process in a fresh private directory.
    pub fn start() -> Result<BashServer, WitnessError> {
        let dir = tempfile::Builder::new().prefix("iec-witness-").tempdir()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        let bash = bash_path();
        let mut cmd = match unshare_args() {
            Some(args) => {
                let mut c = Command::new(unshare_path());
                c.args(args).arg("--").arg(&bash);
                c
            }
            None => Command::new(&bash),
        };
        cmd.args(["--noprofile", "--norc", "-c", SCRIPT, "iec-witness"])
            .arg(dir.path())
            .env_clear()
            .env("PATH", "")
            .env("LANG", "C.UTF-8")
            .env("LC_ALL", "C.UTF-8")
            .env("HOME", dir.path())
            .current_dir(dir.path())
            .stdin(Stdio::piped());
        // stdout and stderr share one pipe so that bash's diagnostics arrive in order.
        let (reader, writer) = std::io::pipe()?;
        let writer2 = writer.try_clone()?;
        cmd.stdout(writer).stderr(writer2);
        let mut child = cmd.spawn().map_err(|source| WitnessError::Start {
            program: format!("{:?}", cmd.get_program()),
            source,
        })?;
        drop(cmd);
        let stdin = child.stdin.take().expect("piped stdin");
        let req_file = dir.path().join("request");
        let stdout = BufReader::with_capacity(1 << 16, reader);
        Ok(BashServer {
            child,
            stdin,
            stdout,
            dir,
            req_file,
        })
    }

    fn request(&mut self, mode: char, text: &[u8]) -> Result<(String, Vec<u8>, Vec<u8>), WitnessError> {
        if let Some(i) = text.iter().position(|&b| b == 0) {
            return Err(WitnessError::Nul(i));
        }
        std::fs::write(&self.req_file, text)?;
        writeln!(self.stdin, "{mode} {}", self.req_file.display())?;
        self.stdin.flush()?;
        let noise = self.read_field()?;
        let status = self.read_field()?;
        let body = self.read_field()?;
        Ok((String::from_utf8_lossy(&status).into_owned(), body, noise))
    }

    fn read_field(&mut self) -> Result<Vec<u8>, WitnessError> {
        let mut buf = Vec::new();
        let n = self.stdout.read_until(0, &mut buf)?;
        if n == 0 || buf.last() != Some(&0) {
            return Err(WitnessError::Protocol(format!(
                "witness ended early: {}",
                String::from_utf8_lossy(&buf)
            )));
        }
        buf.pop();
        Ok(buf)
    }

    /// Parses `text` as bash would, never running it. The caller must have passed the text
    /// through [`crate::gate`] (see [`crate::BashPool::parse`], which does).
    pub fn parse_unchecked(&mut self, text: &[u8], extglob: bool) -> Result<Parse, WitnessError> {
        let (status, body, noise) = self.request(if extglob { 'X' } else { 'P' }, text)?;
        match status.as_str() {
            "OK" => {
                let s = String::from_utf8_lossy(&body);
                let canonical = s
                    .strip_prefix("__iec_f () \n{ \n")
                    .and_then(|s| s.strip_suffix("\n}\n"))
                    .ok_or_else(|| WitnessError::Protocol(format!("unexpected declare -f: {s:?}")))?;
                Ok(Parse::Ok {
                    canonical: canonical.to_string(),
                })
            }
            "ERR" => {
                if body == b"1" {
                    return Err(WitnessError::Protocol(
                        "a command ran during parse (guard tripped); the gate let a break-out through".into(),
                    ));
                }
                Ok(Parse::Error {
                    message: String::from_utf8_lossy(&noise).trim_end().to_string(),
                })
            }
            other => Err(WitnessError::Protocol(format!("unexpected status {other:?}"))),
        }
    }

    /// Expands `words` (harness-rendered shell words) the way the outer shell would before
    /// handing them to a command such as `eval`, with every command skipped.
    pub fn expand_words(&mut self, words: &[u8]) -> Result<Expansion, WitnessError> {
        let (status, body, noise) = self.request('E', words)?;
        let status: i32 = status
            .parse()
            .map_err(|_| WitnessError::Protocol(format!("bad expansion status {status:?}")))?;
        let mut parts = body.split(|&b| b == 1);
        let skipped = parts.next().unwrap_or_default() == b"1";
        let args: Vec<String> = parts.map(|p| String::from_utf8_lossy(p).into_owned()).collect();
        let funcs = self.functions()?;
        let extra_functions = funcs.iter().any(|f| f != "__iec_rec");
        Ok(Expansion {
            args,
            status,
            diagnostics: String::from_utf8_lossy(&noise).trim_end().to_string(),
            broke_out: skipped || extra_functions,
        })
    }

    /// The functions defined in the server (only its own, unless something went wrong).
    pub fn functions(&mut self) -> Result<Vec<String>, WitnessError> {
        let (_, body, _) = self.request('F', b"")?;
        Ok(String::from_utf8_lossy(&body)
            .lines()
            .filter_map(|l| l.strip_prefix("declare -f ").map(str::to_string))
            .collect())
    }

    /// The private directory the server runs in (empty but for the request file).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Process id of the bash (or unshare) process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for BashServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
