//! bytes as str → shell-quote 1.8.3 port (parse_no_env, quote_str) and Claude Code 2.1.72's
//! eval-payload builder. No-panic only: the round trip `parse(quote([s])) == [s]` does NOT hold
//! in the real npm shell-quote 1.8.3 (e.g. `*` quotes to `\*`, which parses back as a glob
//! token; `'!` quotes to `"'\!"`, which parses back as `'\!`), so it is not asserted here.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = iec_shellquote::parse_no_env(s);
    let q = iec_shellquote::quote_str(s);
    let _ = iec_shellquote::parse_no_env(&q);
    let _ = iec_shellquote::claude_code_2_1_72::build_eval_payload(s);
});
