// Links the `iec-hook` binary statically (static-pie) on Linux with glibc, and only that binary:
// the library, its tests and the crates that depend on it are linked as usual.
//
// Why: the hook runs once per tool call, and a dynamically linked Rust binary spends most of its
// start in the dynamic loader (loading libgcc_s and libc, binding symbols): measured in
// BENCHMARKS.md ("Hook wall time per call"). rustc's own switch for this
// (`-C target-feature=+crt-static`) can only be given to every crate of a build (RUSTFLAGS) or
// through `cargo rustc`; a build script can only add link arguments. So this script adds
// `-static-pie` and a directory, searched before the system's, in which the libraries rustc
// names for a dynamic link (`-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc`) are their static
// archives (`libgcc_s` is `libgcc_eh.a`, the unwinder that a static rustc link uses too).
//
// Skipped (a normal dynamic link) when the target is not linux-gnu, when the build is already
// static, when any archive is missing (no libc6-dev static libraries), or when
// IEC_HOOK_DYNAMIC=1.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=IEC_HOOK_DYNAMIC");
    println!("cargo:rerun-if-env-changed=CC");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("IEC_HOOK_DYNAMIC") == "1"
        || var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("CARGO_CFG_TARGET_FEATURE")
            .split(',')
            .any(|f| f == "crt-static")
    {
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let archive = |name: &str| -> Option<PathBuf> {
        let out = Command::new(&cc)
            .arg(format!("-print-file-name={name}"))
            .output()
            .ok()?;
        let p = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        (p.is_absolute() && p.is_file()).then_some(p)
    };
    let dir = Path::new(&var("OUT_DIR")).join("static-libs");
    let _ = std::fs::remove_dir_all(&dir);
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let libs = [
        ("libgcc_s.a", "libgcc_eh.a"),
        ("libc.a", "libc.a"),
        ("libm.a", "libm.a"),
        ("librt.a", "librt.a"),
        ("libpthread.a", "libpthread.a"),
        ("libdl.a", "libdl.a"),
        ("libutil.a", "libutil.a"),
    ];
    for (as_name, real) in libs {
        let Some(p) = archive(real) else {
            println!(
                "cargo:warning=iec-hook: {real} not found; iec-hook is linked dynamically (slower start)"
            );
            return;
        };
        if std::os::unix::fs::symlink(&p, dir.join(as_name)).is_err() {
            return;
        }
    }
    println!("cargo:rustc-link-arg-bin=iec-hook=-L{}", dir.display());
    println!("cargo:rustc-link-arg-bin=iec-hook=-static-pie");
}
