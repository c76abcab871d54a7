//! The terminal witness's jail helper: tmux runs it as the pane's command, and it becomes the
//! witness's interactive bash inside the kernel jail (see `iec_witness::tmux::jail_helper_main`).
//! `iec __jail …` does the same, for installations with only the `iec` program.

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::exit(iec_witness::tmux::jail_helper_main(&args));
}
