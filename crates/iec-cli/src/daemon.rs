//! `iec daemon`: the witness daemon the hook talks to (see `iec_hook::daemon`). The hook starts
//! it itself when it is not running; started by hand it serves in the foreground.

use std::time::Duration;

/// Serves until idle for `idle_exit` seconds (default `IEC_DAEMON_IDLE_SECS`, else 15 minutes),
/// SIGTERM or SIGINT. Exit 0 also when another daemon already serves the socket.
pub fn run(idle_exit: Option<u64>) -> anyhow::Result<i32> {
    let config = iec_core::config::Config::from_env()?;
    let idle = idle_exit.map_or(config.daemon_idle, Duration::from_secs);
    let socket = iec_hook::daemon::socket_path()?;
    if !iec_hook::daemon::serve(&socket, idle)? {
        eprintln!("iec daemon: another daemon serves {}", socket.display());
    }
    Ok(0)
}
