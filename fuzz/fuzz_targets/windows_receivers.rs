//! bytes as str → every receiver of `iec_windows::receive` (default options), and every sender
//! of `iec_windows::render` on a split of the input into args (split at U+001F, so arguments can
//! still carry NUL, quotes, blanks and newlines). Each rendered command line is fed back into the
//! argv receivers to reach deeper states. Never panic.
#![no_main]
use iec_windows::cmd::CmdOptions;
use iec_windows::powershell::PassingMode;
use iec_windows::{receive, render};
use libfuzzer_sys::fuzz_target;

fn argv_receivers(s: &str) {
    let _ = receive::msvcrt(s);
    let _ = receive::msvcrt_pre2008(s);
    let _ = receive::commandlinetoargvw(s);
    let _ = receive::msys2(s);
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };

    // Receivers.
    argv_receivers(s);
    let co = CmdOptions::default();
    let _ = receive::cmd(s, &co);
    let _ = receive::cmd_batch_line(s, &co);
    let _ = receive::powershell51_native(s, &[]);
    for m in [PassingMode::Ps51, PassingMode::Legacy, PassingMode::Standard, PassingMode::Windows] {
        let _ = receive::pwsh_native(s, m, &[]);
    }

    // Senders.
    let args: Vec<String> = if s.is_empty() {
        Vec::new()
    } else {
        s.split('\u{1f}').map(str::to_owned).collect()
    };
    let _ = receive::msys2_pathconv(&args);
    let all: Vec<usize> = (0..args.len()).collect();
    let odd: Vec<usize> = (0..args.len()).filter(|i| i % 2 == 1).collect();
    let rendered = [
        render::node(&args),
        render::node_verbatim(&args),
        render::rust_std(&args),
        render::rust_std_with(&args, true, &[]),
        render::rust_std_with(&args, false, &all),
        render::rust_std_with(&args, true, &odd),
        render::rust_std_bat(&args),
        render::rust_std_bat_with(&args, true),
        render::cpython(&args),
        render::dotnet(&args),
        render::dotnet_with(&args, false),
        render::go(&args),
        render::powershell51(&args),
    ];
    for a in &args {
        let _ = render::argv_quote(a, false);
        let _ = render::argv_quote(a, true);
        let _ = render::dotnet_arg(a);
        let _ = render::go_escape_arg(a);
    }
    for cl in rendered.iter().flatten() {
        argv_receivers(cl);
    }
});
