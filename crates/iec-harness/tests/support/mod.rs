//! Test support shared by the real-harness tests of this crate (each test file includes it with
//! `mod support;`): the one way they skip when npm cannot install a harness.
#![allow(dead_code)]

use std::io::Write;

/// The variables that let the real-harness tests skip when npm cannot install a harness.
pub const HARNESS_SKIP: &[&str] = &["IEC_SKIP_HARNESS", "IEC_SKIP_NPM"];

/// The first of `vars` set to `1`.
pub fn skip_reason(vars: &[&'static str]) -> Option<&'static str> {
    vars.iter()
        .copied()
        .find(|var| std::env::var(var).is_ok_and(|v| v == "1"))
}

/// After an install failed with `why`: prints `SKIPPED: why (VAR=1)` (to the real stderr, which
/// the test harness does not capture, and to stdout) and returns when one of `vars` is set;
/// fails the test, naming the first variable, otherwise.
pub fn skip_or_panic(why: &str, vars: &[&'static str]) {
    if let Some(var) = skip_reason(vars) {
        let _ = writeln!(std::io::stderr(), "SKIPPED: {why} ({var}=1)");
        println!("SKIPPED: {why} ({var}=1)");
        return;
    }
    panic!(
        "{why}\n(set {}=1 to skip the tests that need it when npm cannot install)",
        vars[0]
    );
}
