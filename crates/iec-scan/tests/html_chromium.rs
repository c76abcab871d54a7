//! The `--html` page in a real browser: Debian's headless Chromium, driven over the DevTools
//! protocol (`--remote-debugging-pipe`), loads the page of a scan of every real fixture with no
//! console message, no script exception and no log entry of level error, and a screenshot of each
//! chart shows its bars (pixels of the bar colours inside the chart's bar area).
//!
//! Chromium is installed with apt-get when missing (the test fails, saying why, when that is not
//! possible); `IEC_SKIP_CHROMIUM=1` skips the test, and says so.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

fn find(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The Chromium binary, installed with apt-get when missing; `None` when skipped.
fn chromium() -> Option<PathBuf> {
    if std::env::var("IEC_SKIP_CHROMIUM").as_deref() == Ok("1") {
        println!("SKIPPED: IEC_SKIP_CHROMIUM=1: the --html page is not rendered in Chromium");
        return None;
    }
    if let Some(p) = find("chromium") {
        return Some(p);
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    if !install() {
        let _ = Command::new("apt-get").args(["update", "-qq"]).status();
        install();
    }
    Some(find("chromium").unwrap_or_else(|| {
        panic!(
            "Chromium is not installed and `apt-get install chromium` failed (it needs root and \
             Debian's package lists); install Debian's `chromium` package, or set \
             IEC_SKIP_CHROMIUM=1 to skip this test"
        )
    }))
}

/// A headless Chromium spoken to over its DevTools pipe (fd 3 in, fd 4 out, messages ended by
/// NUL).
struct Browser {
    child: Child,
    to: std::fs::File,
    from: Receiver<Value>,
    next: u64,
    /// Events received while waiting for answers.
    events: Vec<Value>,
    _profile: tempfile::TempDir,
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `pipe2` fills two new descriptors, owned from here on.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: just created, not owned elsewhere.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

impl Browser {
    fn start(bin: &Path) -> Browser {
        use std::os::fd::AsRawFd;
        let profile = tempfile::tempdir().unwrap();
        let (cmd_r, cmd_w) = pipe();
        let (out_r, out_w) = pipe();
        let (a, b) = (cmd_r.as_raw_fd(), out_w.as_raw_fd());
        let mut c = Command::new(bin);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(profile.path().join("stderr.txt")).unwrap());
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            c.pre_exec(move || {
                // Moved above 4 first: either may be 3 or 4 already (dup2 onto itself would
                // keep its close-on-exec flag, and the first dup2 could close the other).
                let (a, b) = (
                    libc::fcntl(a, libc::F_DUPFD, 10),
                    libc::fcntl(b, libc::F_DUPFD, 10),
                );
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = c.spawn().expect("start chromium");
        drop((cmd_r, out_w));
        let (tx, rx) = channel();
        let mut from = std::fs::File::from(out_r);
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 1 << 16];
            while let Ok(n) = from.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|&b| b == 0) {
                    let msg: Vec<u8> = buf.drain(..=end).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg[..end]) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Browser {
            child,
            to: std::fs::File::from(cmd_w),
            from: rx,
            next: 0,
            events: Vec::new(),
            _profile: profile,
        }
    }

    /// Sends `method` (to `session`, if any) and returns its result.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        if let Err(e) = self.to.write_all(&bytes) {
            panic!("chromium: {method}: {e}; its stderr:\n{}", self.stderr());
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self.from.recv_timeout(left).unwrap_or_else(|e| {
                panic!(
                    "chromium: no answer to {method}: {e}; its stderr:\n{}",
                    self.stderr()
                )
            });
            if m["id"] == id {
                assert!(m.get("error").is_none(), "chromium: {method}: {m}");
                return m["result"].clone();
            }
            self.events.push(m);
        }
    }

    /// What Chromium wrote on stderr.
    fn stderr(&self) -> String {
        std::fs::read_to_string(self._profile.path().join("stderr.txt")).unwrap_or_default()
    }

    /// Waits for the event `method`.
    fn wait(&mut self, method: &str) {
        if self.events.iter().any(|e| e["method"] == method) {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("chromium: no {method}: {e}"));
            let done = m["method"] == method;
            self.events.push(m);
            if done {
                return;
            }
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What loading `page` showed: the console messages, exceptions and error log entries, the
/// charts' boxes (id → x, y, width, height in CSS pixels), and a screenshot of the whole page.
struct Rendered {
    complaints: Vec<String>,
    charts: Vec<(String, [f64; 4])>,
    png: Vec<u8>,
}

fn render(bin: &Path, page: &Path) -> Rendered {
    let mut b = Browser::start(bin);
    let target = b.call(None, "Target.createTarget", json!({"url": "about:blank"}));
    let attached = b.call(
        None,
        "Target.attachToTarget",
        json!({"targetId": target["targetId"], "flatten": true}),
    );
    let s = attached["sessionId"].as_str().unwrap().to_string();
    let s = Some(s.as_str());
    for m in ["Runtime.enable", "Log.enable", "Page.enable"] {
        b.call(s, m, json!({}));
    }
    b.call(
        s,
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1000, "height": 800, "deviceScaleFactor": 1, "mobile": false}),
    );
    b.call(
        s,
        "Page.navigate",
        json!({"url": format!("file://{}", page.display())}),
    );
    b.wait("Page.loadEventFired");
    let boxes = b.call(
        s,
        "Runtime.evaluate",
        json!({"returnByValue": true, "expression":
            "[...document.querySelectorAll('svg.chart')].map(e => { const r = e.getBoundingClientRect(); \
             return [e.id, r.x + scrollX, r.y + scrollY, r.width, r.height]; })"}),
    );
    let charts = boxes["result"]["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = |i: usize| c[i].as_f64().unwrap();
            (c[0].as_str().unwrap().to_string(), [n(1), n(2), n(3), n(4)])
        })
        .collect();
    let metrics = b.call(s, "Page.getLayoutMetrics", json!({}));
    let size = &metrics["cssContentSize"];
    let shot = b.call(
        s,
        "Page.captureScreenshot",
        json!({"format": "png", "captureBeyondViewport": true,
               "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}}),
    );
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    let complaints = b
        .events
        .iter()
        .filter_map(|e| match e["method"].as_str()? {
            "Runtime.consoleAPICalled" => Some(format!(
                "console.{}: {}",
                e["params"]["type"], e["params"]["args"]
            )),
            "Runtime.exceptionThrown" => Some(format!("exception: {}", e["params"]["exceptionDetails"])),
            "Log.entryAdded" if e["params"]["entry"]["level"] == "error" => {
                Some(format!("log: {}", e["params"]["entry"]))
            }
            _ => None,
        })
        .collect();
    Rendered {
        complaints,
        charts,
        png,
    }
}

/// The screenshot's pixels (RGBA rows).
fn pixels(png_bytes: &[u8]) -> (usize, usize, Vec<u8>) {
    let mut dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let ch = info.color_type.samples();
    let rgba: Vec<u8> = buf
        .chunks(ch)
        .flat_map(|p| match ch {
            4 => [p[0], p[1], p[2], p[3]],
            3 => [p[0], p[1], p[2], 255],
            _ => [p[0], p[0], p[0], 255],
        })
        .collect();
    (info.width as usize, info.height as usize, rgba)
}

/// The bar colours of `html.rs`.
const BAR_COLOURS: [[u8; 3]; 5] = [
    [0xc0, 0x39, 0x2b],
    [0xe6, 0x7e, 0x22],
    [0x2e, 0x86, 0xc1],
    [0x95, 0xa5, 0xa6],
    [0x27, 0xae, 0x60],
];

/// Pixels of a bar colour in the bar area of each chart (right of the 230-pixel label column,
/// below the 30-pixel title), by chart id.
fn bar_pixels(r: &Rendered) -> HashMap<String, usize> {
    let (w, h, px) = pixels(&r.png);
    r.charts
        .iter()
        .map(|(id, [x, y, cw, ch])| {
            let (x0, y0) = ((x + 230.0) as usize, (y + 30.0) as usize);
            let (x1, y1) = (((x + cw) as usize).min(w), ((y + ch) as usize).min(h));
            let mut n = 0;
            for yy in y0..y1 {
                for xx in x0..x1 {
                    let p = &px[(yy * w + xx) * 4..][..3];
                    if BAR_COLOURS.iter().any(|c| c == p) {
                        n += 1;
                    }
                }
            }
            (id.clone(), n)
        })
        .collect()
}

#[test]
fn the_html_page_renders_in_chromium_without_errors_and_with_its_charts_drawn() {
    let Some(bin) = chromium() else {
        return;
    };
    let (_, result) = common::scan_fixtures();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, iec_scan::html::page(&result)).unwrap();
    let r = render(&bin, &page);
    assert_eq!(r.complaints, Vec::<String>::new(), "console errors");
    let ids: Vec<&str> = r.charts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["rate", "mechanisms", "hops", "silent", "attribution"]);
    let drawn = bar_pixels(&r);
    let s = &result.summary;
    assert!(
        s.changed > 0 && s.failed > 0,
        "the fixtures have changed and failed calls"
    );
    for (id, _) in &r.charts {
        // Every chart has at least one bar of at least one pixel's width, 18 pixels high.
        assert!(
            drawn[id] >= 18,
            "chart {id}: {} bar pixels ({drawn:?})",
            drawn[id]
        );
    }
    // The silent and loud bars together span the full bar width (420 pixels, 18 high) once.
    let full = 420 * 18;
    assert!(
        drawn["silent"].abs_diff(full) <= 2 * 18,
        "silent + loud: {} pixels, a full bar is {full}",
        drawn["silent"]
    );
}

#[test]
fn the_browser_check_sees_console_errors_and_failed_loads() {
    // The same harness on a page that logs an error and loads a missing image: both are seen,
    // so an empty list above means the page raised none.
    let Some(bin) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><img src=\"missing.png\"><script>console.error('boom')</script>\
         <svg id=\"x\" class=\"chart\" width=\"700\" height=\"60\"><rect x=\"240\" y=\"32\" width=\"10\" height=\"18\" fill=\"#2e86c1\"/></svg></body></html>",
    )
    .unwrap();
    let r = render(&bin, &page);
    assert!(
        r.complaints
            .iter()
            .any(|c| c.contains("console.\"error\"") && c.contains("boom")),
        "{:?}",
        r.complaints
    );
    assert!(
        r.complaints
            .iter()
            .any(|c| c.starts_with("log:") && c.contains("missing.png")),
        "{:?}",
        r.complaints
    );
    assert_eq!(bar_pixels(&r)["x"], 10 * 18);
}
