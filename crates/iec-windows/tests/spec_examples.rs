//! Worked examples from `docs/spec/windows-receivers.md`, and the documented CommandLineToArgvW /
//! pre-2008 differences from UCRT.

use iec_windows::cmd::CmdOptions;
use iec_windows::powershell::{self, PassingMode};
use iec_windows::{receive, receive_json, render, render_json, ReceiveOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::BTreeMap;

fn v(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

#[test]
fn ucrt_worked_examples() {
    let cases: &[(&str, &[&str])] = &[
        (r#"EXE "abc" d e"#, &["EXE", "abc", "d", "e"]),
        (r#"EXE a\\\b d"e f"g h"#, &["EXE", r"a\\\b", "de fg", "h"]),
        (r#"EXE a\\\"b c d"#, &["EXE", r#"a\"b"#, "c", "d"]),
        (r#"EXE a\\\\"b c" d e"#, &["EXE", r"a\\b c", "d", "e"]),
        (r#"EXE "a"" a"#, &["EXE", r#"a" a"#]),
        (r#"EXE "" """"#, &["EXE", "", "\""]),
        (r#"E"X"E test"#, &["EXE", "test"]),
        (r#""a b"c d"#, &["a bc", "d"]),
        (r#"prog "C:\dir\" next"#, &["prog", r#"C:\dir" next"#]),
        (" test", &["", "test"]),
    ];
    for (cl, want) in cases {
        assert_eq!(receive::msvcrt(cl), v(want), "{cl}");
    }
}

/// §2 table: rows where CommandLineToArgvW and UCRT differ, and rows where they agree.
#[test]
fn cl2a_vs_ucrt_documented() {
    let rows: &[(&str, &[&str], &[&str])] = &[
        (
            r#"exe "two"" next"#,
            &["exe", "two\"", "next"],
            &["exe", "two\" next"],
        ),
        (
            r#"exe three"""quotes next"#,
            &["exe", "three\"quotes", "next"],
            &["exe", "three\"quotes next"],
        ),
        (
            r#""exe"arg" one" argtwo"#,
            &["exe", "arg one", "argtwo"],
            &["exearg one", "argtwo"],
        ),
        (r#""two"" arg1"#, &["two", " arg1"], &["two arg1"]),
        (
            r#"exe"file"path arg1"#,
            &["exe\"file\"path", "arg1"],
            &["exefilepath", "arg1"],
        ),
        (
            r#""spaced exe\"arg1 arg2"#,
            &["spaced exe\\", "arg1", "arg2"],
            &["spaced exe\\arg1", "arg2"],
        ),
        (
            r#"x.exe "echo ""a  b""""#,
            &["x.exe", "echo \"a", "b\""],
            &["x.exe", "echo \"a  b\""],
        ),
        (
            "exe arg=1 three\tfour\rfour\nfour",
            &["exe", "arg=1", "three", "four\rfour\nfour"],
            &["exe", "arg=1", "three", "four\rfour\nfour"],
        ),
        (
            r#"exe "one^" "arg"&two three|four"#,
            &["exe", "one^", "arg&two", "three|four"],
            &["exe", "one^", "arg&two", "three|four"],
        ),
        (
            "exe %TMPDIR% %2",
            &["exe", "%TMPDIR%", "%2"],
            &["exe", "%TMPDIR%", "%2"],
        ),
    ];
    for (cl, cl2a, ucrt) in rows {
        assert_eq!(receive::commandlinetoargvw(cl), v(cl2a), "CL2A {cl}");
        assert_eq!(receive::msvcrt(cl), v(ucrt), "UCRT {cl}");
    }
    // #15942: powershell.exe (CL2A) vs pwsh (UCRT) on the same command line
    let cl = r#"powershell -C "'powershell ""function f(){2}f'""| out-default""#;
    assert_eq!(
        receive::commandlinetoargvw(cl)[2..],
        v(&["'powershell \"function", "f(){2}f'|", "out-default"])
    );
    assert_eq!(
        receive::msvcrt(cl)[2..],
        v(&["'powershell \"function f(){2}f'\"| out-default"])
    );
}

/// Outside the documented differences (argv[0] with quotes or backslashes, and runs of two or
/// more quote characters) the two parsers agree.
#[test]
fn cl2a_agrees_with_ucrt_without_quote_runs() {
    let strat = prop::collection::vec(
        prop::sample::select(vec!['a', 'b', ' ', '\t', '"', '\\', '\\', 'é', '\n']),
        0..24,
    )
    .prop_map(|v| format!("exe {}", v.into_iter().collect::<String>()))
    .prop_filter("no quote runs", |s| !s.contains("\"\""));
    let config = Config {
        cases: 20_000,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[3u8; 32]));
    runner
        .run(&strat, |cl| {
            prop_assert_eq!(receive::commandlinetoargvw(&cl), receive::msvcrt(&cl), "{:?}", cl);
            prop_assert_eq!(receive::msvcrt_pre2008(&cl), receive::msvcrt(&cl), "{:?}", cl);
            Ok(())
        })
        .unwrap();
}

#[test]
fn pre2008_differences() {
    // "" inside quotes: literal quote and leave quoted mode (like CL2A)
    assert_eq!(
        receive::msvcrt_pre2008(r#"exe "a""b c""#),
        v(&["exe", "a\"b", "c"])
    );
    assert_eq!(receive::msvcrt(r#"exe "a""b c""#), v(&["exe", "a\"b c"]));
    // argv[0]: to the next quote, or to the first char <= ' '
    assert_eq!(receive::msvcrt_pre2008("\"a b\"c d"), v(&["a b", "c", "d"]));
    assert_eq!(receive::msvcrt_pre2008("ab\u{1}c d"), v(&["ab", "c", "d"]));
    assert_eq!(receive::msvcrt_pre2008(""), v(&["TEST.EXE"]));
}

#[test]
fn sender_worked_examples() {
    // arg, ArgvQuote, Rust/CPython/Go, .NET/libuv (§3.2 table; .NET and libuv agree except LF)
    let rows: &[(&str, &str, &str, &str)] = &[
        ("", r#""""#, r#""""#, r#""""#),
        ("a b", r#""a b""#, r#""a b""#, r#""a b""#),
        ("a\"b", r#""a\"b""#, r#"a\"b"#, r#""a\"b""#),
        (r"C:\dir\", r"C:\dir\", r"C:\dir\", r"C:\dir\"),
        (
            r"C:\my dir\",
            r#""C:\my dir\\""#,
            r#""C:\my dir\\""#,
            r#""C:\my dir\\""#,
        ),
        (
            "say \"hi\"",
            r#""say \"hi\"""#,
            r#""say \"hi\"""#,
            r#""say \"hi\"""#,
        ),
        (
            r#"back\\"q"#,
            r#""back\\\\\"q""#,
            r#"back\\\\\"q"#,
            r#""back\\\\\"q""#,
        ),
        ("\\\"", r#""\\\"""#, r#"\\\""#, r#""\\\"""#),
    ];
    for (arg, aq, rust, net) in rows {
        assert_eq!(render::argv_quote(arg, false), *aq, "ArgvQuote {arg}");
        let a = v(&["p", arg]);
        assert_eq!(
            render::rust_std(&a).unwrap(),
            format!("\"p\" {rust}"),
            "rust {arg}"
        );
        assert_eq!(render::cpython(&a).unwrap(), format!("p {rust}"), "cpython {arg}");
        assert_eq!(render::go(&a).unwrap(), format!("p {rust}"), "go {arg}");
        assert_eq!(render::dotnet(&a).unwrap(), format!("p {net}"), "dotnet {arg}");
        assert_eq!(render::node(&a).unwrap(), format!("p {net}"), "node {arg}");
    }
    let lf = v(&["p", "x\ny"]);
    assert_eq!(render::dotnet(&lf).unwrap(), "p \"x\ny\"");
    assert_eq!(render::node(&lf).unwrap(), "p x\ny");
    assert_eq!(render::rust_std(&lf).unwrap(), "\"p\" x\ny");
    assert_eq!(
        render::node_verbatim(&v(&["cmd.exe", "/d", "/s", "/c", "\"a b\""])).unwrap(),
        "cmd.exe /d /s /c \"a b\""
    );
    assert!(render::rust_std(&v(&["a\"b"])).is_err());
    assert!(render::rust_std(&v(&["p", "a\0"])).is_err());
}

#[test]
fn rust_bat_worked_examples() {
    let rows: &[(&[&str], &str)] = &[
        (&["a", "b"], r#"cmd.exe /e:ON /v:OFF /d /c ""C:\t\x.bat" a b""#),
        (
            &["c is for cat"],
            r#"cmd.exe /e:ON /v:OFF /d /c ""C:\t\x.bat" "c is for cat"""#,
        ),
        (
            &["\"", " \""],
            r#"cmd.exe /e:ON /v:OFF /d /c ""C:\t\x.bat" """" " """""#,
        ),
        (
            &["&whoami"],
            r#"cmd.exe /e:ON /v:OFF /d /c ""C:\t\x.bat" "&whoami"""#,
        ),
        (
            &["%PATH%"],
            r#"cmd.exe /e:ON /v:OFF /d /c ""C:\t\x.bat" "%%cd:~,%PATH%%cd:~,%"""#,
        ),
        (&["!TMP!"], r#"cmd.exe /e:ON /v:OFF /d /c ""C:\t\x.bat" "!TMP!"""#),
        (
            &["key=\"&whoami\""],
            r#"cmd.exe /e:ON /v:OFF /d /c ""C:\t\x.bat" "key=""&whoami"""""#,
        ),
        (
            &["C:\\dir\\"],
            r#"cmd.exe /e:ON /v:OFF /d /c ""C:\t\x.bat" "C:\dir\\"""#,
        ),
        (&[""], r#"cmd.exe /e:ON /v:OFF /d /c ""C:\t\x.bat" """"#),
    ];
    for (args, want) in rows {
        let mut a = vec![r"C:\t\x.bat".to_string()];
        a.extend(v(args));
        assert_eq!(render::rust_std_bat(&a).unwrap(), *want);
    }
    assert!(render::rust_std_bat(&v(&[r"C:\t\x.bat", "a\nb"])).is_err());
    assert!(render::rust_std_bat(&v(&[r"C:\t\", "a"])).is_err());
    assert!(render::rust_std_bat(&v(&["C:\\t\\\"x.bat", "a"])).is_err());
}

fn files(items: &[(&str, &str)]) -> BTreeMap<String, String> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn cmd_extraction_and_phases() {
    let say = files(&[
        ("say.bat", "@echo 0 "),
        ("say one.bat", "@echo 1 "),
        ("say (3).bat", "@echo 3 "),
    ]);
    let o = CmdOptions {
        files: say,
        ..Default::default()
    };
    for (cl, out) in [
        (r#"cmd /c "say one""#, "1 \n"),
        (r#"cmd /s/c "say one""#, "0 \n"),
        (r#"cmd /s/c ""say one"""#, "1 \n"),
        (r#"cmd /c "say"" one""#, "0 \n"),
        (r#"cmd /c ""say (3)"""#, "3 \n"),
        (r#"cmd /c " echo passed2 ""#, "passed2 \n"),
    ] {
        assert_eq!(receive::cmd(cl, &o).stdout, out, "{cl}");
    }
    // phase 1, command-line mode
    let env = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    let o = CmdOptions {
        env: env(&[("b", "a")]),
        ..Default::default()
    };
    assert_eq!(receive::cmd("cmd /c echo %a %b% c%", &o).stdout, "%a a c%\n");
    let o = CmdOptions {
        env: env(&[("a ", "b")]),
        ..Default::default()
    };
    assert_eq!(receive::cmd("cmd /c echo %a %b% c%", &o).stdout, "bb% c%\n");
    let o = CmdOptions {
        env: env(&[("PATH", "C:\\bin")]),
        ..Default::default()
    };
    assert_eq!(receive::cmd("cmd /c echo %Q%", &o).stdout, "%Q%\n");
    assert_eq!(receive::cmd("cmd /c echo 100%", &o).stdout, "100%\n");
    assert_eq!(
        receive::cmd("cmd /c echo %%cd:~,%PATH%%cd:~,%", &o).stdout,
        "%PATH%\n"
    );
    assert_eq!(receive::cmd("cmd /c echo %PATH^%", &o).stdout, "%PATH%\n");
    assert_eq!(receive::cmd("cmd /c echo %PATH%", &o).stdout, "C:\\bin\n");
    assert_eq!(receive::cmd("cmd /c echo %PATH:~3%", &o).stdout, "bin\n");
    assert_eq!(
        receive::cmd("cmd /c echo %PATH:bin=sbin%", &o).stdout,
        "C:\\sbin\n"
    );
    // carets, operators, first LF
    assert_eq!(receive::cmd("cmd /c echo a ^& echo b", &o).stdout, "a & echo b\n");
    assert_eq!(receive::cmd("cmd /c echo a & echo b", &o).stdout, "a \nb\n");
    let r = receive::cmd("cmd /c \"echo one\necho two\"", &o);
    assert_eq!(r.stdout, "one\n");
    assert!(r.truncated);
    // delayed expansion
    let d = CmdOptions {
        env: env(&[("X", "1")]),
        ..Default::default()
    };
    assert_eq!(
        receive::cmd("cmd /v:on /c echo !X! ^^!X^^! \"!X!\"", &d).stdout,
        "1 !X! \"1\"\n"
    );
    // phase 2 already ate one caret level: a single ^! outside quotes does not protect
    assert_eq!(receive::cmd("cmd /v:on /c echo ^!X^!", &d).stdout, "1\n");
    assert_eq!(receive::cmd("cmd /v:off /c echo !X!", &d).stdout, "!X!\n");
}

#[test]
fn cmd_external_programs() {
    let o = CmdOptions {
        files: files(&[("node.exe", ""), ("git.exe", "")]),
        ..Default::default()
    };
    let r = receive::cmd(r#"cmd /c node -e "console.log(1)" > out.txt"#, &o);
    assert_eq!(r.launches.len(), 1);
    assert_eq!(r.files_written, v(&["out.txt"]));
    // redirection breaks out of an unbalanced quote (BatBadBut shape) without Rust's escaping
    let bat = CmdOptions {
        files: files(&[("x.bat", "@a.exe %*"), ("a.exe", "")]),
        ..Default::default()
    };
    let r2 = receive::cmd(r#"cmd.exe /d /c "x.bat "123">file.txt""#, &bat);
    assert_eq!(r2.files_written, v(&["file.txt"]));
    assert_eq!(
        receive::msvcrt(&r.launches[0].command_line),
        v(&["node", "-e", "console.log(1)"])
    );
    let r = receive::cmd(r#"cmd /c node -e "a&b" ^| more"#, &o);
    assert_eq!(r.launches[0].command_line, r#"node -e "a&b" | more"#);
    // Node shell:true example (§4.7)
    let r = receive::cmd(
        r#"C:\WINDOWS\system32\cmd.exe /d /s /c "git log --format=%H %s""#,
        &o,
    );
    assert_eq!(
        receive::msvcrt(&r.launches[0].command_line),
        v(&["git", "log", "--format=%H", "%s"])
    );
    // not found, too long
    assert!(receive::cmd("cmd /c nosuchprog", &o).error);
    let long = format!("cmd /c echo {}", "x".repeat(8200));
    let r = receive::cmd(&long, &o);
    assert!(r.too_long && r.error && r.stdout.is_empty());
    let ok = format!("cmd /c echo {}", "x".repeat(8191 - 12));
    assert!(!receive::cmd(&ok, &o).too_long);
}

#[test]
fn cmd_json_shape() {
    let j = receive_json("cmd", None, &ReceiveOptions::default(), "cmd /c echo hi").unwrap();
    assert_eq!(j["receiver"], "cmd");
    assert_eq!(j["executes"], "echo hi");
    assert_eq!(j["truncated"], false);
    assert_eq!(j["stdout"], "hi\n");
    assert_eq!(j["error"], false);
}

#[test]
fn msys2_worked_examples() {
    let none = ReceiveOptions::default();
    let rows: &[(&str, &[&str], &[&str])] = &[
        (
            r#"bash.exe -c "echo \"hi\"""#,
            &["-c", "echo \"hi\""],
            &["-c", r"echo \hi\"],
        ),
        (
            r#"bash.exe -c "printf %s\\n \"C:\\\\Users\"""#,
            &["-c", r#"printf %s\n "C:\\Users""#],
            &["-c", r#"printf %s\\n \C:\\\\Users\"#],
        ),
        (r#"bash.exe -c "a""b""#, &["-c", "a\"b"], &["-c", "ab"]),
        (
            r#"bash.exe -c 'echo \"x\"'"#,
            &["-c", r#"echo \"x\""#],
            &["-c", r#"echo \"x\""#],
        ),
        (
            r"bash.exe -c echo\ hi",
            &["-c", r"echo\", "hi"],
            &["-c", r"echo\", "hi"],
        ),
        (
            r"bash.exe a\b a\b* C:\x\*.txt",
            &[r"a\b", "ab*", r"C:\x\*.txt"],
            &[r"a\b", r"a\b*", r"C:\x\*.txt"],
        ),
        (
            r#"bash.exe {a,b} "{a,b}" x{1,2}y"#,
            &["a", "b", "{a,b}", "x1y", "x2y"],
            &["{a,b}", "{a,b}", "x{1,2}y"],
        ),
        ("bash.exe line1\nline2", &["line1", "line2"], &["line1", "line2"]),
    ];
    for (cl, glob, noglob) in rows {
        assert_eq!(receive::msys2_with(cl, true, &none)[1..], v(glob), "glob {cl}");
        assert_eq!(
            receive::msys2_with(cl, false, &none)[1..],
            v(noglob),
            "noglob {cl}"
        );
    }
    // @response files (virtual)
    let o = ReceiveOptions {
        files: files(&[("resp", "x y")]),
        ..Default::default()
    };
    assert_eq!(
        receive::msys2_with(r#"bash.exe "@resp" @resp"#, true, &o)[1..],
        v(&["@resp", "x", "y"])
    );
    // 8,186 code points for quoted words, none for plain words or noglob
    let long = "é".repeat(9000);
    let cl = format!("bash.exe -c \"{long}\"");
    assert_eq!(receive::msys2(&cl)[2].chars().count(), 8186);
    assert_eq!(receive::msys2_with(&cl, false, &none)[2].chars().count(), 9000);
    assert_eq!(
        receive::msys2(&format!("bash.exe {long}"))[1].chars().count(),
        9000
    );
    let cl = format!("bash.exe -c \"{}\"", "x".repeat(8186));
    assert_eq!(receive::msys2(&cl)[2].len(), 8186);
    // globbing against the virtual file list
    let o = ReceiveOptions {
        files: files(&[("b.txt", ""), ("a.txt", ""), (".h.txt", ""), ("c.md", "")]),
        ..Default::default()
    };
    assert_eq!(
        receive::msys2_with("bash.exe *.txt '*.txt' *.rs [ab].txt", true, &o)[1..],
        v(&["a.txt", "b.txt", "*.txt", "*.rs", "a.txt", "b.txt"])
    );
    // tilde with HOME
    let o = ReceiveOptions {
        env: vec![("HOME".into(), "/home/u".into())],
        ..Default::default()
    };
    assert_eq!(
        receive::msys2_with("bash.exe ~/x \"~/x\"", true, &o)[1..],
        v(&["/home/u/x", "~/x"])
    );
    // argv[0] becomes POSIX
    assert_eq!(
        receive::msys2(r"C:\msys64\usr\bin\bash.exe -l")[0],
        "/usr/bin/bash.exe"
    );
}

#[test]
fn msys2_quoting_recipe_roundtrips() {
    // §6.1: glob mode: "\"" + s.replace('\\', "\\\\").replace('"', "\\\"") + "\""
    for s in [
        "a b",
        "x\\y\\",
        "say \"hi\"",
        "*.txt",
        "{a,b}",
        "~",
        "@x",
        "it's",
        "a\nb",
        "",
    ] {
        let q = format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
        assert_eq!(receive::msys2(&format!("bash.exe {q}"))[1], s, "{q}");
    }
}

#[test]
fn pathconv_examples() {
    let conv = |a: &str| receive::msys2_pathconv(&v(&[a]))[0].clone();
    assert_eq!(conv("/c"), "C:/");
    assert_eq!(conv("hello /usr/bin"), "hello /usr/bin");
    assert_eq!(conv("/usr/bin hello"), "C:/msys64/usr/bin hello");
    assert_eq!(conv("/bin/sh"), "C:/msys64/usr/bin/sh");
    assert_eq!(conv("*.txt"), "*.txt");
    assert_eq!(conv("--prefix=/usr"), "--prefix=C:/msys64/usr");
    let git = ReceiveOptions {
        msys2_root: Some("C:/Program Files/Git".into()),
        ..Default::default()
    };
    assert_eq!(
        receive::msys2_pathconv_with(&v(&["/tmp/x"]), &git),
        v(&["C:/Program Files/Git/tmp/x"])
    );
    let off = ReceiveOptions {
        env: vec![("MSYS_NO_PATHCONV".into(), "1".into())],
        ..Default::default()
    };
    assert_eq!(
        receive::msys2_pathconv_with(&v(&["/tmp/x"]), &off),
        v(&["/tmp/x"])
    );
    let excl = ReceiveOptions {
        env: vec![("MSYS2_ARG_CONV_EXCL".into(), "/tmp;--x=".into())],
        ..Default::default()
    };
    assert_eq!(
        receive::msys2_pathconv_with(&v(&["/tmp/x", "--x=/a", "/ab"]), &excl),
        v(&["/tmp/x", "--x=/a", "C:/msys64/ab"])
    );
    // base64 payload starting with '/' is mangled (§5.1)
    assert_eq!(conv("/wBoAG8A"), "C:/msys64/wBoAG8A");
}

#[test]
fn powershell_native_examples() {
    let ps51 = |t: &str| receive::powershell51_native(t, &[]);
    let std = |t: &str| receive::pwsh_native(t, PassingMode::Standard, &[]);
    let leg = |t: &str| receive::pwsh_native(t, PassingMode::Legacy, &[]);
    assert_eq!(
        ps51(r#"-e 'console.log("test")'"#),
        v(&["-e", "console.log(test)"])
    );
    assert_eq!(
        std(r#"-e 'console.log("test")'"#),
        v(&["-e", "console.log(\"test\")"])
    );
    assert_eq!(ps51(r#"-e 'console.log("a b")'"#), v(&["-e", "console.log(a b)"]));
    assert_eq!(ps51(r"'C:\path with space\'"), v(&["C:\\path with space\""]));
    assert_eq!(leg(r"'C:\path with space\'"), v(&["C:\\path with space\\"]));
    assert_eq!(std(r"'C:\path with space\'"), v(&["C:\\path with space\\"]));
    assert_eq!(ps51(r#"'a"b c"d'"#), v(&["ab cd"]));
    assert_eq!(ps51(r#"'a\"b c\"d'"#), v(&["a\"b", "c\"d"]));
    assert_eq!(leg(r#"'a\"b c\"d'"#), v(&["a\"b c\"d"]));
    assert_eq!(std(r#"'a\"b c\"d'"#), v(&["a\\\"b c\\\"d"]));
    assert_eq!(ps51("1 '' 2"), v(&["1", "2"]));
    assert_eq!(ps51(r#"'{"k": "v"}'"#), v(&["{k: v}"]));
    assert_eq!(std(r#"'{"k": "v"}'"#), v(&["{\"k\": \"v\"}"]));
    assert_eq!(ps51(r#"'a "b c" d'"#), v(&["a b", "c d"]));
    assert_eq!(std(r#"'a "b c" d'"#), v(&["a \"b c\" d"]));
    // --% passes the rest raw after %VAR% expansion
    let (cl, _) = powershell::native(
        "--% a \"b c\" %X% %Y%",
        PassingMode::Standard,
        "t.exe",
        &[],
        &[("X".into(), "1".into())],
    );
    assert_eq!(cl, "\"t.exe\" a \"b c\" 1 %Y%");
    // Windows mode picks Legacy for the listed targets
    assert!(powershell::windows_mode_is_legacy(r"C:\x\y.CMD"));
    assert!(powershell::windows_mode_is_legacy("cscript.exe"));
    assert!(!powershell::windows_mode_is_legacy("node.exe"));
}

#[test]
fn powershell_cli() {
    let cli = |a: &[&str], pwsh| powershell::cli_command(&v(a), pwsh);
    assert_eq!(cli(&["pwsh", "-c", "echo", "a b"], true).unwrap(), "echo a b");
    assert_eq!(cli(&["pwsh", "-c", "echo 'a b'"], true).unwrap(), "echo 'a b'");
    assert_eq!(
        cli(
            &["pwsh", "-NoProfile", "-Command", "Write-Output", "\"x  y\""],
            true
        )
        .unwrap(),
        "Write-Output \"x  y\""
    );
    assert_eq!(cli(&["powershell", "echo", "1"], false).unwrap(), "echo 1");
    assert_eq!(
        cli(&["pwsh", "-EncodedCommand", "dwBoAG8AYQBtAGkA"], true).unwrap(),
        "whoami"
    );
    assert_eq!(
        cli(&["pwsh", "--ec", "dwBoAG8AYQBtAGkA"], true).unwrap(),
        "whoami"
    );
    assert_eq!(
        cli(&["pwsh", "-ExecutionPolicy", "Bypass", "/c", "x"], true).unwrap(),
        "x"
    );
    assert!(cli(&["pwsh", "script.ps1"], true).is_err());
    // 5.1 reads its argv with CL2A: "" collapses whitespace (§5.1)
    let argv = receive::commandlinetoargvw(r#"powershell -c "Write-Output ""x  y""""#);
    assert_eq!(
        cli(&argv.iter().map(String::as_str).collect::<Vec<_>>(), false).unwrap(),
        "Write-Output \"x y\""
    );
    for s in ["whoami", "Get-ChildItem 'C:\\é 日本' | % { $_ }", ""] {
        assert_eq!(
            powershell::decode_encoded_command(&powershell::encode_command(s)).unwrap(),
            s
        );
    }
    assert_eq!(powershell::encode_command("whoami"), "dwBoAG8AYQBtAGkA");
}

#[test]
fn registry() {
    assert_eq!(
        iec_windows::receiver_ids(),
        [
            "msvcrt",
            "msvcrt-pre2008",
            "commandlinetoargvw",
            "msys2",
            "msys2-pathconv",
            "cmd",
            "powershell51-native",
            "pwsh-native"
        ]
    );
    assert_eq!(
        iec_windows::sender_ids(),
        [
            "node",
            "node-verbatim",
            "rust-std",
            "rust-std-bat",
            "cpython",
            "dotnet",
            "go",
            "powershell51"
        ]
    );
    let o = ReceiveOptions::default();
    for id in iec_windows::receiver_ids() {
        let input = if *id == "msys2-pathconv" {
            "[\"/x\"]"
        } else {
            "a b"
        };
        assert!(receive_json(id, None, &o, input).is_ok(), "{id}");
    }
    for id in iec_windows::sender_ids() {
        let j = render_json(id, None, &v(&["prog", "a b"]));
        assert!(j.get("command_line").is_some(), "{id}: {j}");
        assert_eq!(j["sender"], *id);
    }
    assert!(receive_json("nope", None, &o, "").is_err());
    assert!(receive_json("msvcrt", Some("bogus"), &o, "").is_err());
    assert_eq!(render_json("nope", None, &[])["error"], "unknown sender `nope`");
    let j = receive_json("msys2-pathconv", None, &o, "[\"/usr\"]").unwrap();
    assert_eq!(
        j,
        serde_json::json!({"receiver": "msys2-pathconv", "argv": ["C:/msys64/usr"]})
    );
    let j = receive_json("msvcrt", None, &o, "a b").unwrap();
    assert_eq!(
        j,
        serde_json::json!({"receiver": "msvcrt", "mode": null, "argv": ["a", "b"]})
    );
}
