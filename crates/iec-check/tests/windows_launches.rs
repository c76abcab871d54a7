//! Windows launches: each row pins a fact of the spec in docs/spec/ (section named in the row) as
//! call × launch → verdict, first divergent hop, kind, mechanism, silence.

use iec_check::{call_for_text, check, Options};
use iec_core::{CheckReport, HopKind, Mechanism, Verdict, WitnessKind};
use iec_launches::Catalog;
use iec_witness::global;

const WINDOWS: &[&str] = &[
    "claude-code-git-bash-windows",
    "opencode-windows-git-bash",
    "codex-windows-powershell",
    "claude-code-powershell-windows",
    "gemini-cli-windows",
    "goose-windows-cmd",
    "cline-windows-cmd",
    "powershell51-native",
    "pwsh-native",
];

fn report(launch: &str, text: &str) -> CheckReport {
    let cat = Catalog::builtin();
    let l = cat.get(launch).unwrap();
    check(l, &call_for_text(l, text), global(), Options::default()).unwrap()
}

fn ctx(r: &CheckReport) -> String {
    serde_json::to_string_pretty(r).unwrap()
}

fn diverges(launch: &str, text: &str, hop: &str, kind: HopKind, m: Mechanism, silent: bool) -> CheckReport {
    let r = report(launch, text);
    assert_eq!(r.verdict, Verdict::Diverges, "{launch} {text:?}: {}", ctx(&r));
    let fd = r.first_divergence.as_ref().unwrap();
    assert_eq!(
        (fd.hop_name.as_str(), fd.kind, fd.mechanism, fd.silent),
        (hop, kind, m, silent),
        "{launch} {text:?}: {}",
        ctx(&r)
    );
    assert_eq!(r.hops[fd.hop].corresponds, Some(false));
    assert!(r.hops[..fd.hop].iter().all(|h| h.corresponds == Some(true)));
    r
}

/// docs/spec/claude-code.md §2.3: `n` backslashes arrive as `ceil(n/2)` (MSVCRT-style quoting by
/// libuv, MSYS2 globify halving inside quotes); bash still parses the result, so it is silent.
#[test]
fn git_bash_halves_backslashes_silently() {
    let r = diverges(
        "claude-code-git-bash-windows",
        r"printf '%s' 'M\\\\N'",
        "spawn",
        HopKind::ProcessInterface,
        Mechanism::QuoteConsumption,
        true,
    );
    let fd = r.first_divergence.unwrap();
    assert!(fd.intended.contains(r"'M\\\\N'"), "{}", fd.intended);
    assert!(fd.received.contains(r"'M\\N'"), "{}", fd.received);
    assert_eq!(r.hops[fd.hop].witness, WitnessKind::Emulated);
    // The real bash witness parsed what MSYS2 delivered.
    let shell = &r.hops[fd.hop + 1];
    assert_eq!((shell.name.as_str(), shell.witness), ("shell", WitnessKind::Real));
    // Same mechanism on opencode's Git Bash path (docs/spec/harnesses.md §9, M4; V1).
    diverges(
        "opencode-windows-git-bash",
        r"printf '%s\n' 'a\\b'",
        "spawn",
        HopKind::ProcessInterface,
        Mechanism::QuoteConsumption,
        true,
    );
}

/// docs/spec/claude-code.md §2.3 matrix (CC#89392): 1→1, 2→1, 4→2, 8→4 backslashes.
#[test]
fn halving_is_ceil_n_over_2() {
    for (n, want) in [(2usize, 1usize), (3, 2), (4, 2), (8, 4)] {
        let text = format!("printf '%s' 'a{}b'", "\\".repeat(n));
        let r = report("opencode-windows-git-bash", &text);
        let fd = r.first_divergence.expect("diverges");
        assert!(
            fd.received.contains(&format!("a{}b", "\\".repeat(want)))
                && !fd.received.contains(&format!("a{}b", "\\".repeat(want + 1))),
            "{n}: {}",
            fd.received
        );
    }
    // One backslash survives.
    assert_eq!(
        report("opencode-windows-git-bash", r"printf '%s' 'a\b'").verdict,
        Verdict::Corresponds
    );
}

/// docs/spec/claude-code.md §2.4 / docs/spec/windows-receivers.md §6.1: the `-c` word is cut at
/// 8,186 characters; bash then reports an unterminated quote (loud).
#[test]
fn git_bash_truncates_a_long_quoted_payload() {
    let text = format!("printf '%s' '{}'", "x".repeat(9000 - 14));
    assert_eq!(text.chars().count(), 9000);
    let r = diverges(
        "claude-code-git-bash-windows",
        &text,
        "spawn",
        HopKind::ProcessInterface,
        Mechanism::Truncation,
        false,
    );
    let fd = r.first_divergence.unwrap();
    assert_eq!(fd.received.chars().count(), 8186);
    diverges(
        "opencode-windows-git-bash",
        &text,
        "spawn",
        HopKind::ProcessInterface,
        Mechanism::Truncation,
        false,
    );
}

/// docs/spec/harnesses.md §4.1 and M3(a) (goose#11259): cmd runs only the first line and returns
/// its exit code, so the cut is silent (goose before PR #11537, which rejects newlines).
#[test]
fn cmd_runs_only_the_first_line() {
    for l in ["goose-windows-cmd", "cline-windows-cmd"] {
        let r = diverges(
            l,
            "echo one\necho TAIL_RAN",
            "shell",
            HopKind::ShellParse,
            Mechanism::Truncation,
            true,
        );
        assert_eq!(r.first_divergence.unwrap().received, "echo one");
    }
    // Through PowerShell the second line arrives (Gemini CLI on Windows runs pwsh, §3.5).
    assert_eq!(
        report("gemini-cli-windows", "echo one\necho two").verdict,
        Verdict::Corresponds
    );
}

/// docs/spec/harnesses.md §2.3 + M1 (oh-my-codex#2811), docs/spec/windows-receivers.md §5.2:
/// Windows PowerShell 5.1 passes `console.log("test")` to node as `console.log(test)`.
#[test]
fn powershell51_consumes_embedded_quotes_of_native_arguments() {
    let r = diverges(
        "codex-windows-powershell",
        r#"node -e 'console.log("test")'"#,
        "native",
        HopKind::ChildArgv,
        Mechanism::QuoteConsumption,
        true,
    );
    let native = &r.hops[r.first_divergence.as_ref().unwrap().hop];
    assert_eq!(
        native.receipt["argv"],
        serde_json::json!(["-e", "console.log(test)"])
    );
    diverges(
        "powershell51-native",
        r#"node -e 'console.log("test")'"#,
        "native",
        HopKind::ChildArgv,
        Mechanism::QuoteConsumption,
        true,
    );
    // 5.1 drops empty arguments (§5.2 `1, '', 2` row).
    diverges(
        "powershell51-native",
        "testexe 1 '' 2",
        "native",
        HopKind::ChildArgv,
        Mechanism::ArityChange,
        true,
    );
    // pwsh 7.3+ in Windows mode quotes them (Standard for node.exe): it corresponds.
    for l in [
        "pwsh-native",
        "gemini-cli-windows",
        "claude-code-powershell-windows",
    ] {
        let r = report(l, r#"node -e 'console.log("test")'"#);
        assert_eq!(r.verdict, Verdict::Corresponds, "{l}: {}", ctx(&r));
    }
}

/// cmd has no `\"` escape (docs/spec/harnesses.md M2): Node's quoting of a command with quotes
/// reaches cmd with backslashes in it.
#[test]
fn node_quoting_into_cmd_changes_quoted_commands() {
    let r = report("cline-windows-cmd", r#"echo "hello world" a"b"c"#);
    let fd = r.first_divergence.expect("diverges");
    assert_eq!(
        (fd.hop_name.as_str(), fd.kind),
        ("spawn", HopKind::ProcessInterface)
    );
    assert_eq!(fd.received, r#"echo \"hello world\" a\"b\"c"#);
    // goose's raw_arg passes it verbatim.
    assert_eq!(
        report("goose-windows-cmd", r#"echo "hello world" a"b"c"#).verdict,
        Verdict::Corresponds
    );
}

/// Controls: plain commands correspond on every Windows launch.
#[test]
fn plain_commands_correspond_everywhere() {
    for l in WINDOWS {
        for text in ["ls -la", "echo hi"] {
            let r = report(l, text);
            assert_eq!(r.verdict, Verdict::Corresponds, "{l} {text:?}: {}", ctx(&r));
            assert!(
                r.hops.iter().all(|h| h.corresponds == Some(true)),
                "{l}: {}",
                ctx(&r)
            );
            let cat = Catalog::builtin();
            let names: Vec<&str> = cat.get(l).unwrap().hops().iter().map(|h| h.name).collect();
            let got: Vec<&str> = r.hops.iter().map(|h| h.name.as_str()).collect();
            assert_eq!(got, names, "{l}: the hops run are the hops listed");
        }
    }
}

/// What the grammar or the emulator cannot judge is `unknown` with a reason, and PowerShell text
/// that does not parse is the agent's (generation) error.
#[test]
fn powershell_unknowns() {
    let r = report("powershell51-native", "git commit -m $msg");
    assert_eq!(r.verdict, Verdict::Unknown, "{}", ctx(&r));
    assert!(r.reason.unwrap().contains("variable"));
    let r = report("pwsh-native", "node -e (Get-Content x.js)");
    assert_eq!(r.verdict, Verdict::Unknown, "{}", ctx(&r));
    // docs/spec/harnesses.md §18 V11 (codex#30473): `@{u}` is a hashtable literal → ParserError.
    let r = report(
        "codex-windows-powershell",
        "git rev-parse --symbolic-full-name @{u}",
    );
    assert_eq!(r.verdict, Verdict::Unknown, "{}", ctx(&r));
    assert_eq!(r.attribution.as_deref(), Some("generation"));
}

/// Every Windows launch is in the catalog with its source and a shell-parse hop.
#[test]
fn windows_launches_are_listed() {
    let cat = Catalog::builtin();
    for l in WINDOWS {
        let launch = cat.get(l).unwrap();
        assert_eq!(launch.os, "windows");
        assert!(!launch.source.is_empty());
        assert!(launch.hops().iter().any(|h| h.kind == "shell-parse"), "{l}");
    }
}
