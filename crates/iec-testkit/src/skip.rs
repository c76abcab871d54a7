//! Tests that need an npm package: an install that fails either skips the test, saying so, when
//! `IEC_SKIP_HARNESS=1` or `IEC_SKIP_NPM=1` is set, or fails it clearly.

use std::io::Write;

/// The variables that let a test skip when an npm install fails.
pub const NPM_SKIP: &[&str] = &["IEC_SKIP_HARNESS", "IEC_SKIP_NPM"];

/// `install()` succeeded (`what` names it in messages), or `false` after printing `SKIPPED: …`
/// to stderr when it failed and one of [`NPM_SKIP`] is `1`; panics otherwise.
pub fn installed<T, E: std::fmt::Display>(what: &str, install: impl FnOnce() -> Result<T, E>) -> bool {
    match install() {
        Ok(_) => true,
        Err(e) => {
            let why = format!("installing {what} with npm failed: {e:#}");
            let skip = NPM_SKIP.iter().find(|v| std::env::var(v).is_ok_and(|x| x == "1"));
            match skip {
                Some(var) => {
                    let _ = writeln!(std::io::stderr(), "SKIPPED: {why} ({var}=1)");
                    false
                }
                None => panic!("{why}\n(set IEC_SKIP_HARNESS=1 to skip the tests that need it)"),
            }
        }
    }
}
