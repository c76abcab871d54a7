//! Every receiver and sender must return (never panic) on arbitrary input.

use iec_windows::{receive_json, receiver_ids, render_json, sender_ids, ReceiveOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "Z",
            "0",
            " ",
            "\t",
            "\n",
            "\r",
            "\"",
            "'",
            "\\",
            "/",
            ":",
            ";",
            ",",
            "=",
            "%",
            "!",
            "^",
            "&",
            "|",
            "<",
            ">",
            "(",
            ")",
            "{",
            "}",
            "[",
            "]",
            "*",
            "?",
            "~",
            "@",
            "$",
            "`",
            "-",
            ".",
            "/c",
            "/s",
            "/v:on",
            "cmd",
            "call ",
            "echo ",
            "set ",
            "for /L %i in (1,1,3) do ",
            "x.bat",
            "--%",
            "é",
            "日",
            "😅",
            "\0",
            "%x:~1,2%",
            "%x:a=b%",
            "!x!",
            "//",
            "C:",
        ]),
        0..30,
    )
    .prop_map(|v| v.concat())
}

#[test]
fn receivers_and_senders_never_panic() {
    let mut opts = ReceiveOptions::default();
    opts.files
        .insert("x.bat".into(), "@echo %1 %* & call x.bat".into());
    opts.files.insert("a.exe".into(), String::new());
    opts.files.insert("resp".into(), "@resp".into());
    opts.env.push(("x".into(), "abc".into()));
    opts.env.push(("HOME".into(), "/home/u".into()));
    opts.ps_vars.push(("a".into(), "v".into()));
    let config = Config {
        cases: 3_000,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[5u8; 32]));
    runner
        .run(&(text(), prop::collection::vec(text(), 0..4)), |(t, args)| {
            for id in receiver_ids() {
                let input = if *id == "msys2-pathconv" {
                    serde_json::to_string(&args).unwrap()
                } else {
                    t.clone()
                };
                let modes: &[Option<&str>] = match *id {
                    "cmd" => &[None, Some("batch")],
                    "msys2" => &[None, Some("noglob")],
                    "pwsh-native" => &[Some("Legacy"), Some("Standard"), Some("Windows")],
                    _ => &[None],
                };
                for m in modes {
                    let _ = receive_json(id, *m, &opts, &input);
                }
            }
            for id in sender_ids() {
                let _ = render_json(id, None, &args);
            }
            let _ = iec_windows::powershell::cli_command(&args, true);
            let _ = iec_windows::powershell::decode_encoded_command(&t);
            Ok(())
        })
        .unwrap();
}

/// Found by `cargo fuzz` (fuzz/regressions/windows_receivers): a `)` before the `(` of a
/// `for /L` set sliced backwards.
#[test]
fn for_l_with_closing_paren_first_fails_instead_of_panicking() {
    for input in [" /cfor/L%%in)(", "cmd /c for /L %i in )( do echo"] {
        let r = iec_windows::receive::cmd(input, &Default::default());
        assert!(r.error, "{input:?} should be a cmd error");
    }
}
