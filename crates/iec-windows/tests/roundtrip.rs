//! Round-trip property tests: `msvcrt(render(S, argv)) == argv` for the MSVC-targeting senders.
//!
//! argv[0] is generated as a program path (no `"`, not ending in `\`, non-empty), because
//! argv[0] cannot be escaped (spec §3.1): UCRT only toggles on quotes there, so no sender can
//! deliver a `"`, and a quoted trailing backslash is read back doubled by the argv[0] rule.
//! Other elements draw from printable ASCII, `"`, backslash runs, spaces, tabs, LF, non-ASCII
//! (BMP and astral) and empty strings. Every rendering is also checked under
//! CommandLineToArgvW and pre-2008 msvcrt, which the spec says parse these encodings identically.
//!
//! Case count: `IEC_ROUNDTRIP_CASES` (default 2,000 per sender); the ignored test runs 10^6
//! per sender (`cargo test -p iec-windows --release -- --ignored`).

use iec_windows::{argv, render, RenderError};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

type Sender = fn(&[String]) -> Result<String, RenderError>;

const SENDERS: [(&str, Sender); 5] = [
    ("rust-std", render::rust_std),
    ("node", render::node),
    ("cpython", render::cpython),
    ("dotnet", render::dotnet),
    ("go", render::go),
];

fn arg_char() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => proptest::char::range(' ', '~').prop_map(|c| c.to_string()),
        3 => Just("\"".to_string()),
        3 => (1usize..5).prop_map(|n| "\\".repeat(n)),
        2 => Just(" ".to_string()),
        1 => Just("\t".to_string()),
        1 => Just("\n".to_string()),
        1 => prop::sample::select(vec!["é", "日本", "😅", "\u{a0}", "Я", "\u{2028}"]).prop_map(String::from),
    ]
}

fn arg() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        8 => prop::collection::vec(arg_char(), 1..12).prop_map(|v| v.concat()),
    ]
}

fn program() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_.:\\\\ -]{0,20}[A-Za-z0-9_.]".prop_map(|s| s)
}

fn argv_strategy() -> impl Strategy<Value = Vec<String>> {
    (program(), prop::collection::vec(arg(), 0..6)).prop_map(|(p, mut rest)| {
        rest.insert(0, p);
        rest
    })
}

fn run(cases: u32) {
    for (i, (name, sender)) in SENDERS.iter().enumerate() {
        let config = Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        };
        let mut seed = [0x1e_u8; 32];
        seed[0] = i as u8;
        let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
        let start = std::time::Instant::now();
        let result = runner.run(&argv_strategy(), |a| {
            let cl = sender(&a).map_err(|e| TestCaseError::fail(format!("{name} refused {a:?}: {e}")))?;
            prop_assert_eq!(&argv::ucrt(&cl, "TEST.EXE"), &a, "{} UCRT: {}", name, cl);
            prop_assert_eq!(
                &argv::commandlinetoargvw(&cl, "TEST.EXE"),
                &a,
                "{} CL2A: {}",
                name,
                cl
            );
            prop_assert_eq!(&argv::pre2008(&cl, "TEST.EXE"), &a, "{} pre-2008: {}", name, cl);
            Ok(())
        });
        println!("{name}: {cases} cases in {:.2?}", start.elapsed());
        if let Err(e) = result {
            panic!("{name}: {e}");
        }
    }
}

fn cases_from_env(default: u32) -> u32 {
    std::env::var("IEC_ROUNDTRIP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn roundtrip_msvcrt() {
    run(cases_from_env(2_000));
}

#[test]
#[ignore = "10^6 cases per sender; run with --release -- --ignored"]
fn roundtrip_msvcrt_million() {
    run(cases_from_env(1_000_000));
}

#[test]
fn powershell_standard_is_dotnet() {
    // Standard mode hands each value to PasteArguments, so a UCRT child sees the values.
    let vals = ["a\"b c\"d", "", "C:\\path with space\\", "{\"k\": \"v\"}"];
    for v in vals {
        let cl = format!("\"testexe.exe\" {}", render::dotnet_arg(v));
        assert_eq!(argv::ucrt(&cl, "X")[1], v);
    }
}

#[test]
fn generator_has_teeth() {
    // Senders that are NOT MSVC-correct must be caught by the same generator.
    for (name, sender) in [
        ("node-verbatim", render::node_verbatim as Sender),
        ("powershell51", render::powershell51),
    ] {
        let config = Config {
            cases: 2_000,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[9u8; 32]));
        let result = runner.run(&argv_strategy(), |a| {
            let cl = sender(&a).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(argv::ucrt(&cl, "TEST.EXE"), a);
            Ok(())
        });
        assert!(result.is_err(), "{name} unexpectedly round-trips");
    }
}
