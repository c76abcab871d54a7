//! The driver without a real harness: a stand-in `bin` that hangs (and leaves a detached
//! grandchild) is killed at the timeout, and the direct `bash -c` reference still runs.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use iec_harness::{run_claude_code_with, RunOptions};

#[test]
fn a_hanging_harness_is_killed_at_the_timeout_with_its_detached_children() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let fake = dir.path().join("fake-claude");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nsetsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! > '{}'\nexec sleep 300\n",
            pidfile.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();

    let mut opts = RunOptions::new("fake", Some(fake), &["argvprobe 'a != b'"]);
    opts.launch.timeout = Duration::from_secs(2);
    opts.launch.probe = Some(PathBuf::from(env!("CARGO_BIN_EXE_iec-argvprobe")));
    let t = Instant::now();
    let run = run_claude_code_with(&opts).unwrap();
    assert!(run.timed_out);
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let r = &run.results[0];
    assert!(r.tool_result.is_none());
    assert!(r.probe.is_empty());
    // The reference run still happened.
    assert_eq!(r.direct.probe[0].argv, ["a != b"]);
    assert_eq!(r.direct.bash_strings, ["argvprobe 'a != b'"]);

    // The setsid grandchild (another process group) is gone too.
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false);
        if !alive {
            break;
        }
        assert!(Instant::now() < deadline, "grandchild {pid} survived");
        std::thread::sleep(Duration::from_millis(50));
    }
}
