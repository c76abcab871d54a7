//! The plain-text shortcut gives the same report as the real witnesses: for generated plain
//! texts on every launch, the JSON report with and without `full_witness` is identical (but for
//! the `shortcut` note).

use iec_check::{call_for_text, check, plain::is_plain, Options};
use iec_launches::Catalog;
use iec_testkit::gen::Rng;
use iec_witness::global;

const WORDS: &[&str] = &[
    "ls",
    "-la",
    "grep",
    "find",
    "rg",
    "echo",
    "printf",
    "make",
    "-j2",
    "src/main.rs",
    "a,b",
    "x:y",
    "k=v",
    "A=1",
    "user@host",
    "+x",
    "..",
    "/usr/bin/env",
    "git",
    "commit",
    "-m",
    "bash",
    "-c",
    "sh",
    "in",
    "do",
    "if",
    "true",
    "python3",
    "argvprobe",
    "0",
    "9",
    "_",
    "--",
    "-",
];

fn plain_text(r: &mut Rng) -> String {
    let n = 1 + r.below(8);
    let mut s = String::new();
    if r.pct(10) {
        s.push(' ');
    }
    for i in 0..n {
        if i > 0 {
            s.push_str(if r.pct(10) { "  " } else { " " });
        }
        s.push_str(r.pick::<&str>(WORDS));
    }
    s
}

#[test]
fn shortcut_equals_full_witness_on_every_launch() {
    let cat = Catalog::builtin();
    let launches = iec_testkit::rotation::launches_under_test(&cat);
    let mut r = Rng::new(31337);
    let mut compared = 0;
    let mut texts: Vec<String> = (0..300).map(|_| plain_text(&mut r)).collect();
    texts.extend([
        "grep -r TODO .".to_string(),
        "bash -c ls".into(),
        "A=1 make all".into(),
        "x".repeat(4096),
    ]);
    for text in texts.iter().filter(|t| is_plain(t)) {
        for l in launches.iter().copied() {
            let call = call_for_text(l, text);
            let fast = check(l, &call, global(), Options::default()).unwrap();
            let full = check(
                l,
                &call,
                global(),
                Options {
                    full_witness: true,
                    ..Default::default()
                },
            )
            .unwrap();
            assert!(full.shortcut.is_none());
            let mut a = serde_json::to_value(&fast).unwrap();
            a.as_object_mut().unwrap().remove("shortcut");
            let b = serde_json::to_value(&full).unwrap();
            assert_eq!(a, b, "{} {text:?}", l.id);
            compared += 1;
        }
    }
    println!("{compared} plain-text checks: shortcut report == real-witness report");
    assert!(compared > 5000);
}
