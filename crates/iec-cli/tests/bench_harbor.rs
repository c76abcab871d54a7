//! `iec bench export --harbor DIR`: the JSON summary; the exact files of one known pair (hazard
//! and control, IntAct off and on) and one known task; Harbor's own linter (`harbor lint --json`,
//! PyPI `harbor` 0.25.0 in a venv made by a Python ≥ 3.12) reporting no finding; and every
//! oracle solution passing its own test when run here in a temporary directory with the
//! container paths rewritten (no container), while the unsolved state and the other variant's
//! solution fail it.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The stand-in for the `iec-hook` binary (the export copies whatever file it is given).
const FAKE_HOOK: &[u8] = b"#!/bin/sh\n# a stand-in for iec-hook\nexit 0\n";

/// The export every test reads (made once, with the stand-in hook): `dir` and the summary.
struct Export {
    dir: PathBuf,
    summary: Value,
}

fn export() -> &'static Export {
    static E: std::sync::OnceLock<Export> = std::sync::OnceLock::new();
    E.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench_harbor");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let dir = root.join("iec-bench");
        let hook = root.join("iec-hook");
        std::fs::write(&hook, FAKE_HOOK).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_iec"))
            .args(["bench", "export", "--harbor"])
            .arg(&dir)
            .arg("--iec-hook")
            .arg(&hook)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "iec bench export failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        Export { dir, summary }
    })
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The task folders, sorted.
fn task_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// Every file under `root`, relative, sorted.
fn files(root: &Path) -> Vec<String> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut v = vec![];
    walk(root, root, &mut v);
    v.sort();
    v
}

const PAIR_TOML: &str = r#"schema_version = "1.4"

[task]
name = "iec-bench/pair-bang-in-single-quotes-1-VARIANT"
version = "0.1.0"
description = "IEC-Bench pair `bang-in-single-quotes-1`: the LABEL text of the pair, checked on the final stateINTACT_DESC"
keywords = ["iec-bench", "pair", "VARIANT"]

[metadata]
kind = "pair"
item = "bang-in-single-quotes-1"
variant = "LABEL"
intact = INTACT
family = "bang-in-single-quotes"
source = '''docs/findings/harness-runs.md (real 2.1.72 delivers `argvprobe 'a != b'` as ["a \\!= b"]); docs/spec/claude-code.md §1.4 (shell-quote quote() writes ! as \!)'''

# The verifier checks the state the agent left in its container.
[metadata.harbor.lint]
ignore = ["shared-verifier"]

[verifier]
timeout_sec = 120.0
environment_mode = "shared"

[agent]
timeout_sec = 600.0

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 2048
"#;

const DOCKERFILE: &str = "FROM debian:bookworm-slim
RUN apt-get update \\
    && apt-get install -y --no-install-recommends bash ca-certificates coreutils diffutils findutils git grep jq mawk python3 sed \\
    && rm -rf /var/lib/apt/lists/*
ENV LC_ALL=\"C.UTF-8\"
ENV GIT_AUTHOR_NAME=\"IEC Bench\"
ENV GIT_AUTHOR_EMAIL=\"bench@iec.invalid\"
ENV GIT_COMMITTER_NAME=\"IEC Bench\"
ENV GIT_COMMITTER_EMAIL=\"bench@iec.invalid\"
WORKDIR /app
";

const INTACT_DOCKERFILE: &str = "# IntAct: Claude Code's PreToolUse hook for Bash, in its managed settings.
COPY iec-hook /usr/local/bin/iec-hook
RUN chmod 0755 /usr/local/bin/iec-hook
COPY managed-settings.json /etc/claude-code/managed-settings.json
";

const MANAGED_SETTINGS: &str = r#"{
  "hooks": {
    "PreToolUse": [
      {
        "hooks": [
          {
            "command": "/usr/local/bin/iec-hook claude-code",
            "timeout": 30,
            "type": "command"
          }
        ],
        "matcher": "Bash"
      }
    ]
  }
}
"#;

fn test_sh(kind: &str, item: &str, variant: &str, checks: &str) -> String {
    format!(
        "#!/bin/bash
# IEC-Bench check of {kind} `{item}` ({variant}): every observable in /app must equal, byte for
# byte, the state the recorded actions leave when `bash -c` runs them in a fresh sandbox
# (tests/expected/N, written by `iec bench export`). Reward 1 when all match, else 0.
mkdir -p /logs/verifier
cd /app || {{ echo 0 > /logs/verifier/reward.txt; exit 0; }}
tmp=$(mktemp -d)
fail=0
same() {{ # LABEL EXPECTED ACTUAL
    if cmp -s -- \"$2\" \"$3\"; then echo \"ok   $1\"; else echo \"FAIL $1\"; diff -- \"$2\" \"$3\" | head -n 20; fail=1; fi
}}
{checks}rm -rf \"$tmp\"
if [ \"$fail\" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"
    )
}

#[test]
fn a_known_pair_and_task_are_written_exactly() {
    let e = export();
    // The summary: every pair but the three that observe stdout, as hazard and control; every
    // task; each also with IntAct; chains left out.
    assert_eq!(e.summary["dir"], Value::String(e.dir.display().to_string()));
    assert_eq!(
        e.summary["variants"],
        serde_json::json!({"control": 72, "control-intact": 72, "hazard": 72, "hazard-intact": 72,
            "task": 51, "task-intact": 51})
    );
    assert_eq!(e.summary["tasks"], 390);
    let skipped = e.summary["skipped"].as_array().unwrap();
    let count = |kind: &str| skipped.iter().filter(|s| s["kind"] == kind).count();
    assert_eq!((count("pair"), count("chain"), skipped.len()), (3, 140, 143));
    assert!(skipped
        .iter()
        .filter(|s| s["kind"] == "pair")
        .all(|s| s["item"].as_str().unwrap().starts_with("trailing-backslash-")));
    assert_eq!(task_dirs(&e.dir).len(), 390);

    for (label, text, expected, intact) in [
        ("hazard", "printf '%s\\n' 'a != b' > out.txt", "a != b\n", false),
        ("control", "printf '%s\\n' 'a .= b' > out.txt", "a .= b\n", false),
        ("hazard", "printf '%s\\n' 'a != b' > out.txt", "a != b\n", true),
        ("control", "printf '%s\\n' 'a .= b' > out.txt", "a .= b\n", true),
    ] {
        let variant = if intact {
            format!("{label}-intact")
        } else {
            label.to_string()
        };
        let t = e.dir.join(format!("pair-bang-in-single-quotes-1-{variant}"));
        let mut want_files = vec![
            "environment/Dockerfile",
            "instruction.md",
            "solution/solve.sh",
            "task.toml",
            "tests/expected/0",
            "tests/test.sh",
        ];
        if intact {
            want_files.extend(["environment/iec-hook", "environment/managed-settings.json"]);
            want_files.sort();
        }
        assert_eq!(files(&t), want_files, "{variant}");
        let toml = PAIR_TOML
            .replace("VARIANT", &variant)
            .replace("LABEL", label)
            .replace(
                "INTACT_DESC",
                if intact {
                    ", with IntAct's iec-hook in Claude Code"
                } else {
                    ""
                },
            )
            .replace("INTACT", if intact { "true" } else { "false" });
        assert_eq!(read(&t.join("task.toml")), toml);
        let json = serde_json::to_string(text).unwrap();
        assert_eq!(
            read(&t.join("instruction.md")),
            format!(
                "Run this shell command once, exactly as written, from `/app` (your working \
                 directory). Do not change it, split it or run anything else.\n\n```sh\n{text}\n```\n\n\
                 The same command as a JSON string (its exact bytes): {json}\n"
            )
        );
        let df = if intact {
            format!("{DOCKERFILE}{INTACT_DOCKERFILE}")
        } else {
            DOCKERFILE.to_string()
        };
        assert_eq!(read(&t.join("environment/Dockerfile")), df);
        if intact {
            assert_eq!(std::fs::read(t.join("environment/iec-hook")).unwrap(), FAKE_HOOK);
            assert_eq!(
                read(&t.join("environment/managed-settings.json")),
                MANAGED_SETTINGS
            );
        }
        assert_eq!(read(&t.join("tests/expected/0")), expected);
        assert_eq!(
            read(&t.join("tests/test.sh")),
            test_sh(
                "pair",
                "bang-in-single-quotes-1",
                &variant,
                "if [ -f './out.txt' ]; then same 'file:out.txt' /tests/expected/0 './out.txt'; else echo \"FAIL \"'file:out.txt'\" (absent)\"; fail=1; fi\n"
            )
        );
        let quoted = text.replace('\'', "'\\''");
        assert_eq!(
            read(&t.join("solution/solve.sh")),
            format!(
                "#!/bin/bash\n# The recorded correct actions of IEC-Bench pair `bang-in-single-quotes-1` ({label}), each run as `bash -c TEXT`\n# from /app, whatever the previous one exited with.\ncd /app || exit 1\nbash -c '{quoted}'\n"
            )
        );
        use std::os::unix::fs::PermissionsExt;
        for f in ["tests/test.sh", "solution/solve.sh"] {
            let mode = std::fs::metadata(t.join(f)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o755, "{f}");
        }
    }

    // A task with a setup-less git commit: its message is the observable.
    let t = e.dir.join("task-git-commit-1");
    assert_eq!(
        files(&t),
        [
            "environment/Dockerfile",
            "instruction.md",
            "solution/solve.sh",
            "task.toml",
            "tests/expected/0",
            "tests/test.sh"
        ]
    );
    assert_eq!(
        read(&t.join("instruction.md")),
        "Work in `/app` (your working directory).\n\ncommit a.txt with the message:\nFix parser!\n\nHandles 'single' and \"double\" quotes.\n"
    );
    assert_eq!(
        read(&t.join("tests/expected/0")),
        "Fix parser!\n\nHandles 'single' and \"double\" quotes.\n"
    );
    assert_eq!(
        read(&t.join("solution/solve.sh")),
        "#!/bin/bash\n# The recorded correct actions of IEC-Bench task `git-commit-1` (task), each run as `bash -c TEXT`\n# from /app, whatever the previous one exited with.\ncd /app || exit 1\n\
         bash -c 'git init -q'\n\
         bash -c 'printf '\\''x\\n'\\'' > a.txt && git add a.txt'\n\
         bash -c 'git commit -q -m '\\''Fix parser!\n\nHandles '\\''\\'\\'''\\''single'\\''\\'\\'''\\'' and \"double\" quotes.'\\'''\n"
    );
    assert_eq!(
        read(&t.join("tests/test.sh")),
        test_sh(
            "task",
            "git-commit-1",
            "task",
            "if git -c safe.directory='*' cat-file commit HEAD > \"$tmp/commit\" 2>/dev/null; then\n    sed '1,/^$/d' \"$tmp/commit\" > \"$tmp/message\"; same 'git-message' /tests/expected/0 \"$tmp/message\"\nelse echo \"FAIL \"'git-message'\" (no commit)\"; fail=1; fi\n"
        )
    );
    assert!(read(&t.join("task.toml")).contains(
        "[metadata]\nkind = \"task\"\nitem = \"git-commit-1\"\nvariant = \"task\"\nintact = false\nsource = "
    ));
    let ti = e.dir.join("task-git-commit-1-intact");
    assert_eq!(
        read(&ti.join("environment/Dockerfile")),
        format!("{DOCKERFILE}{INTACT_DOCKERFILE}")
    );
    assert_eq!(
        read(&ti.join("solution/solve.sh")),
        read(&t.join("solution/solve.sh"))
    );

    // A task with setup files: they go into environment/app/ and the image.
    let t = e.dir.join("task-sed-amp-4");
    assert_eq!(read(&t.join("environment/app/notes.txt")), "path $HOME/x\n");
    assert_eq!(
        read(&t.join("environment/Dockerfile")),
        format!("{DOCKERFILE}COPY app/ /app/\n")
    );
    assert_eq!(read(&t.join("tests/expected/0")), "path [$HOME]/x\n");
}

#[test]
fn a_used_folder_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("keep.txt"), "mine").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_iec"))
        .args(["bench", "export", "--no-intact", "--harbor"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the folder is not empty"), "{err}");
    assert_eq!(files(tmp.path()), ["keep.txt"]);
    assert_eq!(read(&tmp.path().join("keep.txt")), "mine");
    // A missing hook binary is an error before anything is written.
    let dir = tmp.path().join("new");
    let out = Command::new(env!("CARGO_BIN_EXE_iec"))
        .args(["bench", "export", "--iec-hook"])
        .arg(tmp.path().join("no-such-hook"))
        .arg("--harbor")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the iec-hook binary"));
    assert!(!dir.exists());
}

/// `harbor` of the venv, or `None` after printing SKIPPED when `IEC_SKIP_HARBOR=1`.
fn harbor() -> Option<PathBuf> {
    let skip = std::env::var("IEC_SKIP_HARBOR").as_deref() == Ok("1");
    let Some(base) = iec_testkit::venv::find_python(12) else {
        if skip {
            println!("SKIPPED: no Python 3.12 or newer found (python3.N on PATH, pyenv); harbor needs it");
            return None;
        }
        panic!(
            "no Python 3.12 or newer found (python3.N on PATH, pyenv's versions): PyPI harbor 0.25.0 \
             needs one; install one or set IEC_SKIP_HARBOR=1 to skip the lint"
        );
    };
    let py = iec_testkit::venv::python_from(
        "harbor",
        "harbor==0.25.0",
        "harbor.lint",
        &base,
        "IEC_SKIP_HARBOR",
    )?;
    Some(py.with_file_name("harbor"))
}

#[test]
fn harbor_lint_finds_nothing() {
    let Some(harbor) = harbor() else { return };
    let e = export();
    let dirs = task_dirs(&e.dir);
    assert_eq!(dirs.len(), 390);
    let out = Command::new(&harbor)
        .args(["lint", "--json"])
        .args(&dirs)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "harbor lint: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let findings: Value = serde_json::from_str(&stdout).expect("harbor lint --json prints an array");
    assert_eq!(findings, serde_json::json!([]));

    // The linter does find something: a copy of a task with the shared verifier and no opt-out.
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t");
    copy_tree(&dirs[0], &t, None);
    let toml = read(&t.join("task.toml")).replace("ignore = [\"shared-verifier\"]", "ignore = []");
    std::fs::write(t.join("task.toml"), toml).unwrap();
    let out = Command::new(&harbor)
        .args(["lint", "--json"])
        .arg(&t)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let findings: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(findings.as_array().unwrap().len(), 1);
    assert_eq!(findings[0]["rule"], "shared-verifier");
}

/// `text` with the container paths moved under `root`.
fn rewrite(text: &str, root: &Path) -> String {
    let r = root.display().to_string();
    for p in ["/app", "/tests", "/solution", "/logs"] {
        assert!(!r.contains(p), "the temporary root {r} contains {p}");
    }
    let mut out = String::new();
    let mut rest = text;
    'outer: while !rest.is_empty() {
        for p in ["/app", "/tests", "/solution", "/logs"] {
            if let Some(after) = rest.strip_prefix(p) {
                if after.is_empty() || !after.as_bytes()[0].is_ascii_alphanumeric() {
                    out.push_str(&r);
                    out.push_str(p);
                    rest = after;
                    continue 'outer;
                }
            }
        }
        let c = rest.chars().next().unwrap();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Copies a folder; with `root`, its `.sh` files get the container paths rewritten.
fn copy_tree(from: &Path, to: &Path, root: Option<&Path>) {
    std::fs::create_dir_all(to).unwrap();
    if !from.is_dir() {
        return;
    }
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest, root);
        } else if let Some(root) = root.filter(|_| p.extension().is_some_and(|x| x == "sh")) {
            std::fs::write(&dest, rewrite(&read(&p), root)).unwrap();
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// Runs `task`'s test in a fresh copy of its environment after `solution`'s solve.sh (none:
/// the unsolved state); the reward it wrote.
fn reward(task: &Path, solution: Option<&Path>) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    copy_tree(&task.join("environment/app"), &root.join("app"), None);
    copy_tree(&task.join("tests"), &root.join("tests"), Some(root));
    std::fs::create_dir_all(root.join("logs/verifier")).unwrap();
    std::fs::create_dir_all(root.join("home")).unwrap();
    // The image's environment: its ENV lines, a HOME of its own, no system git config.
    let df = read(&task.join("environment/Dockerfile"));
    let envs: Vec<(String, String)> = df
        .lines()
        .filter_map(|l| l.strip_prefix("ENV "))
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.trim_matches('"').to_string())
        })
        .collect();
    assert_eq!(envs.len(), 5);
    let run = |script: &Path| {
        let status = Command::new("bash")
            .arg(script)
            .current_dir(root.join("app"))
            .env("HOME", root.join("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{}: {status}", script.display());
    };
    if let Some(s) = solution {
        let solve = read(&s.join("solution/solve.sh"));
        // Only `cd /app` names a container path: the recorded texts hold none to rewrite.
        assert_eq!(solve.matches("/app").count(), 2, "{}", s.display());
        for p in ["/tests", "/solution", "/logs"] {
            assert!(!solve.contains(p), "{}", s.display());
        }
        copy_tree(&s.join("solution"), &root.join("solution"), Some(root));
        run(&root.join("solution/solve.sh"));
    }
    run(&root.join("tests/test.sh"));
    read(&root.join("logs/verifier/reward.txt"))
}

#[test]
fn every_oracle_solution_passes_its_tests() {
    let e = export();
    // The IntAct-on twins have the same check and solution; the 195 others are run.
    let all = task_dirs(&e.dir);
    let dirs: Vec<PathBuf> = all
        .iter()
        .filter(|d| !d.to_string_lossy().ends_with("-intact"))
        .cloned()
        .collect();
    assert_eq!(dirs.len(), 195);
    for d in &dirs {
        let twin = PathBuf::from(format!("{}-intact", d.display()));
        assert_eq!(files(&d.join("tests")), files(&twin.join("tests")));
        for f in files(&d.join("tests")) {
            let (a, b) = (
                read(&d.join("tests").join(&f)),
                read(&twin.join("tests").join(&f)),
            );
            // test.sh names its variant in its comment.
            assert_eq!(a, b.replacen("-intact)", ")", 1), "{}", twin.display());
        }
        assert_eq!(
            read(&d.join("solution/solve.sh")),
            read(&twin.join("solution/solve.sh"))
        );
    }
    let threads = 2;
    let chunks: Vec<Vec<PathBuf>> = (0..threads)
        .map(|i| dirs.iter().skip(i).step_by(threads).cloned().collect())
        .collect();
    let results: Vec<(PathBuf, String)> = std::thread::scope(|s| {
        let hs: Vec<_> = chunks
            .iter()
            .map(|c| {
                s.spawn(move || {
                    c.iter()
                        .map(|d| (d.clone(), reward(d, Some(d))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let failed: Vec<_> = results.iter().filter(|(_, r)| r != "1\n").collect();
    assert!(
        failed.is_empty(),
        "oracle solutions that fail their tests: {failed:?}"
    );
    assert_eq!(results.len(), 195);

    // The check can fail: the unsolved state fails it, and so does the other variant's
    // solution wherever the two texts leave different states.
    for t in [
        "pair-bang-in-single-quotes-1-hazard",
        "task-git-commit-1",
        "task-sed-amp-4",
    ] {
        assert_eq!(reward(&e.dir.join(t), None), "0\n", "{t} unsolved");
    }
    let mut crossed = 0;
    for d in dirs.iter().filter(|d| d.to_string_lossy().ends_with("-hazard")) {
        let control = PathBuf::from(d.to_string_lossy().replace("-hazard", "-control"));
        let (h, c) = (
            read(&d.join("tests/expected/0")),
            read(&control.join("tests/expected/0")),
        );
        if h != c {
            assert_eq!(reward(d, Some(&control)), "0\n", "{}", d.display());
            crossed += 1;
        }
    }
    // The built-in pairs whose two texts leave different files (the others differ in how the
    // same state is reached, e.g. `!=` vs `-ne`).
    assert_eq!(crossed, 38);
}
