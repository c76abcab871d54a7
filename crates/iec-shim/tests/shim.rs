//! `iec-bash` with real bash: pass-through is byte-exact (argv0 included), a wrapper that
//! carries a recorded intent runs the intended command intact with the harness's parts kept,
//! and a wrapper that carries something else is refused with exit 126.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use iec_shellquote::claude_code_2_1_72 as cc72;
use iec_shim::intent::{self, Intent, Store};

const SHIM: &str = env!("CARGO_BIN_EXE_iec-bash");

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        Env {
            store: root.join("intents"),
            root,
            _tmp: tmp,
        }
    }

    fn store(&self) -> Store {
        Store::create(&self.store).unwrap()
    }

    /// Records `cmd` scoped to this test process (the shim's parent).
    fn record(&self, cmd: &str) -> PathBuf {
        self.store().record(cmd, intent::scope_of_self(), "test").unwrap()
    }

    fn intents(&self) -> Vec<String> {
        match std::fs::read_dir(&self.store) {
            Ok(rd) => rd
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => vec![],
        }
    }

    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("LANG", "C.UTF-8")
            .env(intent::DIR_ENV, &self.store)
            .current_dir(&self.root)
            .stdin(Stdio::null());
        c
    }

    fn shim<I: IntoIterator<Item = OsString>>(&self, args: I) -> Output {
        self.cmd(SHIM).args(args).output().unwrap()
    }

    /// The 2.1.72 wrapper for `cmd` with a snapshot and a cwd file in this environment.
    fn wrapper(&self, cmd: &str) -> (String, PathBuf) {
        let snap = self.root.join("snapshot.sh");
        std::fs::write(&snap, "snapshot_loaded=yes\n").unwrap();
        let cwd = self.root.join("claude-1a2b-cwd");
        (
            cc72::wrapper(Some(snap.to_str().unwrap()), cwd.to_str().unwrap(), cmd),
            cwd,
        )
    }
}

fn os(s: &str) -> OsString {
    OsString::from(s)
}

/// `bash -c CMD` directly: the reference.
fn direct(env: &Env, cmd: &str) -> Output {
    env.cmd("/bin/bash").arg("-c").arg(cmd).output().unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn pass_through_is_byte_exact() {
    let env = Env::new();
    // What bash itself received, from the kernel: its whole argv, argv0 included.
    let script = "cat /proc/$$/cmdline; true";
    let args: Vec<OsString> = vec![
        os("-c"),
        os(script),
        os("name"),
        os("a != b"),
        os("x \\! y"),
        OsString::from_vec(b"\xff\xfe raw".to_vec()),
        os("$HOME `id` $(id)"),
        os(""),
        os("tab\there\nnl"),
        os("日本 ✓"),
    ];
    let mut expected: Vec<u8> = Vec::new();
    expected.extend_from_slice(SHIM.as_bytes());
    expected.push(0);
    for a in &args {
        expected.extend_from_slice(a.as_bytes());
        expected.push(0);
    }
    // No store at all.
    let out = env.shim(args.clone());
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, expected);
    // A store with a pending intent: not a wrapper, so still unchanged.
    env.record("something else");
    let out = env.shim(args.clone());
    assert_eq!(out.stdout, expected);
    assert_eq!(env.intents().len(), 1);
    // Login and other options: unchanged too.
    let out = env.shim(vec![os("-l"), os("-c"), os(script)]);
    let mut e = SHIM.as_bytes().to_vec();
    e.extend_from_slice(b"\0-l\0-c\0cat /proc/$$/cmdline; true\0");
    assert_eq!(out.stdout, e);
    // Not a -c call (a script on stdin).
    let out = env
        .cmd(SHIM)
        .arg("-s")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"echo from-stdin\n")?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.stdout, b"from-stdin\n");
}

#[test]
fn wrapper_without_intent_passes_through_changed() {
    let env = Env::new();
    let cmd = "printf '[%s]\\n' 'a != b'";
    let (w, cwd) = env.wrapper(cmd);
    // What real bash makes of the harness's wrapper: the `\!` stays.
    let plain = env.cmd("/bin/bash").arg("-c").arg(&w).output().unwrap();
    assert_eq!(plain.stdout, b"[a \\!= b]\n");
    let out = env.shim([os("-c"), os(&w)]);
    assert_eq!(out.stdout, plain.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&cwd).unwrap(),
        format!("{}\n", env.root.display())
    );
}

/// Commands with hazards for the 2.1.72 wrapper, each printing its argv NUL-separated.
const COMMANDS: &[&str] = &[
    r#"printf '%s\0' 'a != b'"#,
    r#"printf '%s\0' "x ! y" '!!' "!foo""#,
    r#"printf '%s\0' 'it'"'"'s!' "it's done!""#,
    r#"printf '%s\0' 'select(.x != 1)' '.[] | select(.name != "x")'"#,
    r#"printf '%s\0' 'M\\N' "a\\b" 'end\'"#,
    r#"printf '%s\0' '$HOME' "\$HOME" '%PATH%' '`date`' '$(id -u)'"#,
    r#"printf '%s\0' $'tab\there' $'nl\nline' 'grüße ñ 日本 ✓ !'"#,
    r#"printf '%s\0' 'a != b' | cat"#,
    r#"printf '%s\0' "x ! y" 2>&1 | cat"#,
    r#"printf '%s\0' 'one !' && printf '%s\0' 'two !'"#,
    r#"printf '%s\0' 'one' ; printf '%s\0' "two ! ""#,
    "cat <<'EOF'\nheredoc with ! and $HOME and \\\nEOF",
    "printf '%s\\0' 'multi\nline !'",
    "printf '%s\\0' a \\\n  'continued !'",
    r#"printf '%s\0' "$$" | tr -c '\0' x"#,
    r#"printf '%s\0' >nul 'file named nul'; cat nul; rm -f nul"#,
    r#"printf '%s\0' 'trailing newline'
"#,
    r#"x='a != b'; printf '%s\0' "$x" "${x/!/?}""#,
    r#"printf '%s\0' '#not a comment' # a comment < /dev/null"#,
];

#[test]
fn recorded_intent_is_delivered_intact_with_the_wrapper_parts_kept() {
    let env = Env::new();
    let mut changed_without = 0;
    for cmd in COMMANDS {
        let reference = direct(&env, cmd);
        assert!(reference.status.success(), "{cmd:?}: {reference:?}");
        let (w, cwd) = env.wrapper(cmd);
        let _ = std::fs::remove_file(&cwd);
        let plain = env.cmd("/bin/bash").arg("-c").arg(&w).output().unwrap();
        if plain.stdout != reference.stdout {
            changed_without += 1;
        }
        env.record(cmd);
        let out = env.shim([os("-c"), os(&w)]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&reference.stdout),
            "{cmd:?} through the shim; stderr {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{cmd:?}: {out:?}");
        assert!(env.intents().is_empty(), "{cmd:?}: intent not consumed");
        // The harness's cwd file is written as before.
        assert_eq!(
            std::fs::read_to_string(&cwd).unwrap(),
            format!("{}\n", env.root.display()),
            "{cmd:?}"
        );
    }
    // The set does exercise the wrapper: most of it arrives changed without the shim.
    assert!(
        changed_without >= 10,
        "only {changed_without} changed without the shim"
    );
}

#[test]
fn delivery_keeps_snapshot_stdin_cwd_and_status_and_leaks_no_descriptor() {
    let env = Env::new();
    let sub = env.root.join("sub dir");
    std::fs::create_dir(&sub).unwrap();
    let cmd = format!(
        "printf '%s|' \"$snapshot_loaded\" 'a != b'; cat; ls /proc/self/fd | tr '\\n' ' '; cd '{}' && exit_me() {{ return 3; }}; exit_me",
        sub.display()
    );
    let (w, cwd) = env.wrapper(&cmd);
    env.record(&cmd);
    let mut child = env
        .cmd(SHIM)
        .arg("-c")
        .arg(&w)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The harness's stdin is a pipe that nobody writes; the wrapper gives the command /dev/null.
    let _keep_open = child.stdin.take();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("yes|a != b|"), "{text:?} {out:?}");
    if Path::new("/proc/self/fd").exists() {
        // The same descriptors as a direct run (the test's own inherited ones, ls's): the
        // descriptor that carried the command is closed for it.
        let fds = &text["yes|a != b|".len()..];
        let reference = env
            .cmd("/bin/bash")
            .args(["-c", "ls /proc/self/fd | tr '\\n' ' '"])
            .output()
            .unwrap();
        assert_eq!(fds, String::from_utf8_lossy(&reference.stdout));
    }
    // The command's status is the call's; `&&` then skips `pwd -P`, as without the shim.
    assert_eq!(out.status.code(), Some(3));
    assert!(!cwd.exists());

    // cd in the command moves the harness's cwd file.
    let cmd = format!("cd '{}'", sub.display());
    let (w, cwd) = env.wrapper(&cmd);
    env.record(&cmd);
    let out = env.shim([os("-c"), os("-l"), os(&w)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&cwd).unwrap(),
        format!("{}\n", sub.display())
    );
}

#[test]
fn two_identical_calls_are_two_intents() {
    let env = Env::new();
    let cmd = "printf '%s' 'a != b'";
    let (w, _) = env.wrapper(cmd);
    env.record(cmd);
    env.record(cmd);
    assert_eq!(env.intents().len(), 2);
    for left in [1, 0] {
        let out = env.shim([os("-c"), os(&w)]);
        assert_eq!(out.stdout, b"a != b");
        assert_eq!(env.intents().len(), left);
    }
}

#[test]
fn single_quote_eval_wrapper_is_recognised() {
    let env = Env::new();
    let cmd = r#"printf '%s\0' "it's !" 'a != b'"#;
    let w = format!(
        "source /nonexistent 2>/dev/null || true && \\builtin shopt -u extglob 2>/dev/null || true && eval '{}' < /dev/null && pwd -P >| {}/c",
        cmd.replace('\'', "'\"'\"'"),
        env.root.display()
    );
    env.record(cmd);
    let out = env.shim([os("-c"), os(&w)]);
    assert_eq!(out.stdout, direct(&env, cmd).stdout);
    assert!(env.intents().is_empty());
}

#[test]
fn a_wrapper_that_carries_another_command_is_refused() {
    let env = Env::new();
    let marker = env.root.join("ran");
    let intended = "printf '%s' 'a != b'";
    let other = format!("touch '{}'", marker.display());
    env.record(intended);
    let (w, cwd) = env.wrapper(&other);
    let out = env.shim([os("-c"), os(&w)]);
    assert_eq!(out.status.code(), Some(iec_shim::EXIT_REFUSED), "{out:?}");
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("iec-bash: refused at hop `wrapper`"), "{err}");
    assert!(err.contains("nothing was run"), "{err}");
    assert!(!marker.exists(), "the refused command ran");
    assert!(!cwd.exists());
    // The recorded intent stays for its own call.
    assert_eq!(env.intents().len(), 1);
    let (w, _) = env.wrapper(intended);
    assert_eq!(env.shim([os("-c"), os(&w)]).stdout, b"a != b");
}

#[test]
fn a_stale_unmatched_intent_is_dropped_by_the_refusal() {
    let env = Env::new();
    // Recorded a minute ago for a call that never reached the shell (denied at the prompt).
    env.store()
        .write(&Intent {
            command: "printf denied".into(),
            created_ms: intent::now_ms() - 60_000,
            scope: intent::scope_of_self(),
            source: "test".into(),
        })
        .unwrap();
    let (w, _) = env.wrapper("printf '%s' 'a != b'");
    let out = env.shim([os("-c"), os(&w)]);
    assert_eq!(out.status.code(), Some(iec_shim::EXIT_REFUSED));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("1 of the intents were older than 10 s and are dropped"));
    assert!(env.intents().is_empty());
    // The repeat is not refused for it (nothing recorded: passed through as the harness built it).
    assert_eq!(env.shim([os("-c"), os(&w)]).stdout, b"a \\!= b");
}

#[test]
fn intents_of_other_sessions_and_expired_ones_do_not_apply() {
    let env = Env::new();
    let cmd = "printf '%s' 'a != b'";
    let (w, _) = env.wrapper(cmd);
    // Scoped to another harness process: this shim (child of the test) passes through.
    env.store().record(cmd, vec![u32::MAX], "test").unwrap();
    assert_eq!(env.shim([os("-c"), os(&w)]).stdout, b"a \\!= b");
    assert_eq!(env.intents().len(), 1);
    // Expired: ignored and deleted.
    let s = env.store();
    s.write(&Intent {
        command: cmd.into(),
        created_ms: 1,
        scope: vec![],
        source: "test".into(),
    })
    .unwrap();
    assert_eq!(env.intents().len(), 2);
    assert_eq!(env.shim([os("-c"), os(&w)]).stdout, b"a \\!= b");
    assert_eq!(env.intents().len(), 1);
    // Unscoped and fresh: applies.
    s.record(cmd, vec![], "test").unwrap();
    assert_eq!(env.shim([os("-c"), os(&w)]).stdout, b"a != b");
}

#[test]
fn a_store_others_can_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let cmd = "printf '%s' 'a != b'";
    env.record(cmd);
    std::fs::set_permissions(&env.store, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (w, _) = env.wrapper(cmd);
    let out = env.shim([os("-c"), os(&w)]);
    assert_eq!(out.stdout, b"a \\!= b");
    assert!(String::from_utf8_lossy(&out.stderr).contains("it must be 0700"));
    assert!(Store::create(&env.store).is_err());
}

#[test]
fn real_bash_is_never_looked_up_on_path() {
    let env = Env::new();
    // A PATH whose `bash` is the shim itself changes nothing.
    let bin = env.root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(SHIM, bin.join("bash")).unwrap();
    let out = env
        .cmd(SHIM)
        .env("PATH", &bin)
        .args(["-c", "echo $BASH_VERSION"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!out.stdout.is_empty());
    // $IEC_REAL_BASH must be absolute and not the shim.
    for bad in ["bash", SHIM] {
        let out = env
            .cmd(SHIM)
            .env(iec_shim::REAL_BASH_ENV, bad)
            .args(["-c", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(iec_shim::EXIT_NO_BASH), "{bad}: {out:?}");
    }
    // A variable with a bad value: nothing runs, and the message names it.
    let out = env
        .cmd(SHIM)
        .env("IEC_INTENT_TTL_SECS", "1h")
        .args(["-c", "echo ran"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(iec_shim::EXIT_NO_BASH), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "iec-bash: environment variable IEC_INTENT_TTL_SECS=\"1h\": expected a whole number of seconds; fix or unset it\n"
    );
}
