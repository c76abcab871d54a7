//! The launch files' wrapper templates reproduce the harness code they cite.

use iec_launches::{render, Catalog};

#[test]
fn claude_code_2_1_72_template_matches_the_cli_js_port() {
    let cat = Catalog::builtin();
    let l = cat.get("claude-code-2.1.72-linux").unwrap();
    let w = l.wrapper.as_ref().unwrap();
    for cmd in [
        "ls",
        "printf '%s' 'a != b'",
        "echo \"PID=$$\" | cat",
        "cat <<'EOF'\nx\nEOF",
        "a\nb",
        "echo >nul",
    ] {
        let p = render::payload(&w.payload, cmd, w.stdin_suffix.as_deref());
        let ours = render::fill(&w.template, &p.words);
        let port = iec_shellquote::claude_code_2_1_72::wrapper(
            Some(render::SNAPSHOT_PATH),
            &format!("{}/claude-0a1b-cwd", render::TMP_DIR),
            cmd,
        );
        assert_eq!(ours, port, "{cmd:?}");
    }
}

#[test]
fn every_builtin_launch_loads_and_lists_hops() {
    let cat = Catalog::builtin();
    assert_eq!(
        cat.iter()
            .filter(|l| l.windows.is_none() && l.terminal.is_none())
            .count(),
        79
    );
    // 66 of them learned by the catalog sweep, each on the versions it names.
    assert_eq!(cat.iter().filter(|l| l.learned()).count(), 66);
    assert_eq!(cat.iter().filter(|l| l.terminal.is_some()).count(), 2);
    assert_eq!(cat.iter().filter(|l| l.windows.is_some()).count(), 9);
    for l in cat.iter() {
        let hops = l.hops();
        assert_eq!(hops[0].name, "tool-input");
        assert!(hops.iter().any(|h| h.kind == "shell-parse"), "{}", l.id);
        assert!(!l.source.is_empty());
    }
}

#[test]
fn launch_files_are_named_by_their_id() {
    let cat = Catalog::builtin();
    for l in cat.iter() {
        let one = Catalog::builtin_only(&l.id);
        assert_eq!(one.get(&l.id).unwrap().id, l.id, "launches/{}.toml", l.id);
    }
    assert!(Catalog::builtin_only("nope").get("nope").is_err());
}

#[test]
fn codex_exec_command_template_ends_in_the_observed_exec_line() {
    // The last line of the wrapper real Codex 0.171.0 handed `/bin/bash -c` for this `cmd`
    // (BASH_ENV witness, replay-server run of crates/iec-harness/tests/codex.rs).
    let cmd = r#"argvprobe 'MARK it'\''s "q" $HOME'"#;
    let observed = r#"exec '/bin/bash' -c 'argvprobe '"'"'MARK it'"'"'\'"'"''"'"'s "q" $HOME'"'"''"#;
    let cat = Catalog::builtin();
    let l = cat.get("codex-exec-command-linux").unwrap();
    let w = l.wrapper.as_ref().unwrap();
    let p = render::payload(&w.payload, cmd, w.stdin_suffix.as_deref());
    let ours = render::fill(&w.template, &p.words);
    assert_eq!(ours.lines().last(), Some(observed));
    assert!(ours.starts_with("if . '"), "{ours}");
}
