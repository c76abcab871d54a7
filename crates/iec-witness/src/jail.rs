//! The kernel-enforced layer under every process that sees a text (parse and expansion servers,
//! the `bash -n`/`dash -n` and `BASH_ENV` witnesses, the terminal witness's bash). Whatever the
//! text makes the shell do, the kernel refuses the syscalls by which a process acts on the
//! world, with `EPERM`:
//!
//! * starting a program: `execve` is allowed only for the jail's own exec of the witness
//!   program (its path is passed from a page mapped at a random address that the new program's
//!   address space does not have; `execveat` always fails), so a command substitution that
//!   forks can still not run anything;
//! * opening for writing or creating, renaming, removing, linking, changing modes or owners,
//!   truncating: a witness only reads (it writes to the pipes it inherited);
//! * sockets, signals to other processes, tracing, new namespaces, `setsid`/`setpgid` (so no
//!   process leaves the witness's process group), terminal input injection (`TIOCSTI`),
//!   System V IPC, `pidfd_getfd`;
//! * `fork`/`clone` for parse witnesses; expansion and terminal witnesses may fork (a command
//!   substitution forks) but not more than [`MAX_PROCESSES`] processes at once.
//!
//! Where the system allows it the witness also gets a private network namespace and a private
//! PID namespace: the witness program is the namespace's first process (an intermediate process
//! outside waits for it), so when it ends, or when `iec` kills the intermediate, the kernel ends
//! every process the witness started. Everything runs in a process group of its own, which the
//! owner kills as a whole ([`kill_group`]). As root, the witness drops to an unprivileged user
//! id of its own (so the process limit counts only its processes and it reads only what any
//! user may read); as another user, the limit is counted in a user namespace of its own.
//!
//! Everything here runs in the forked child before `execve` (async-signal-safe syscalls only;
//! the filter, the strings and the pointer arrays are built before the fork).

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// What a witness process may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// No new processes at all.
    Parse,
    /// `fork` allowed (command substitutions in expanded words, the prompt of an interactive
    /// shell), never `exec`.
    Expand,
}

/// Most processes a forking witness may have at once (`RLIMIT_NPROC`).
pub const MAX_PROCESSES: u64 = 32;

/// Address space a witness may use (`RLIMIT_AS`); bash itself needs a few MiB.
pub const MAX_MEMORY: u64 = 2 << 30;

/// A filter, namespace and exec plan, built before the fork.
pub(crate) struct Jail {
    filter: seccompiler::BpfProgram,
    uid_map: CString,
    gid_map: CString,
    /// The user id to drop to (as root), with its group.
    drop_to: Option<(libc::uid_t, libc::gid_t)>,
    cpu: Option<usize>,
    exec: Exec,
    /// The Landlock ruleset the witness restricts itself to before its exec (see [`Reads`]).
    reads: Option<Reads>,
}

/// What a witness may read, enforced by Landlock (Linux 5.13+): its program and the libraries
/// the loader maps for it, the locale, `/dev/null` (see [`system_rules`]), and its own
/// directory. Nothing else:
/// a text that gets bash to read a file (`$(<file)`, which bash performs without a command the
/// DEBUG trap could skip) gets a permission error, so no file of the user's, of `/etc` or of
/// `/proc` can reach a report. Where the kernel has no Landlock the witness runs without it
/// (the other layers hold; `iec check` cannot then promise that reads are confined).
pub(crate) struct Reads {
    ruleset: std::os::fd::OwnedFd,
}

/// What every witness may read of the system: the program and the files the loader maps for it
/// (found with `ldd` before the witness starts), the loader cache, the C.UTF-8 locale and its
/// aliases, the character-set modules and `/dev/null` (the terminal witness adds readline's
/// `/etc/inputrc` and the terminal descriptions). Nothing else of `/usr` or `/lib`: a text that gets bash to
/// read a file (`$(<file)`) reads none of the system's other files either. Where `ldd` gives no
/// answer, the system's program and library directories as a whole.
fn system_rules(program: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    use std::path::PathBuf;
    let exe = LL_EXECUTE | LL_READ_FILE;
    let tree = LL_READ_FILE | LL_READ_DIR;
    let mut rules: Vec<(PathBuf, u64)> = vec![];
    match loaded_files(program) {
        Some(files) => {
            rules.push((program.to_path_buf(), exe));
            for f in &files {
                rules.push((f.clone(), exe));
                if let Some(dir) = f.parent() {
                    rules.push((dir.join("gconv"), tree));
                }
            }
        }
        None => {
            for d in ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"] {
                rules.push((d.into(), exe | LL_READ_DIR));
            }
        }
    }
    for f in ["/etc/ld.so.cache", "/dev/null", "/usr/share/locale/locale.alias"] {
        rules.push((f.into(), LL_READ_FILE));
    }
    rules.push(("/usr/lib/locale".into(), tree));
    rules
}

/// The files the dynamic loader maps for `program` (its interpreter and libraries), from the
/// system's `ldd`: asked once per program and kept, per process and on disk
/// (`~/.cache/iec/loader-*.txt`, keyed by the program's path, size, inode and change time), since
/// `ldd` costs a few milliseconds a process such as the hook cannot spend on every call. A
/// helper started for a witness gets the list from its parent in [`LIBS_ENV`].
fn loaded_files(program: &std::path::Path) -> Option<Vec<std::path::PathBuf>> {
    use std::collections::HashMap;
    use std::path::PathBuf;
    static SEEN: std::sync::Mutex<Option<HashMap<PathBuf, Option<Vec<PathBuf>>>>> =
        std::sync::Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let seen = seen.get_or_insert_with(HashMap::new);
    if let Some(v) = seen.get(program) {
        return v.clone();
    }
    let key = loader_key(program);
    let found = from_env(&key).or_else(|| from_disk(&key)).or_else(|| {
        let f = from_ldd(program)?;
        to_disk(&key, &f);
        Some(f)
    });
    seen.insert(program.to_path_buf(), found.clone());
    found
}

/// The environment variable through which a parent hands a witness helper its program's
/// loader files (`KEY` NUL `path` NUL `path`…).
pub const LIBS_ENV: &str = "IEC_WITNESS_LOADER_FILES";

/// [`LIBS_ENV`]'s value for `program`, when its files are known.
pub fn loader_files_env(program: &std::path::Path) -> Option<std::ffi::OsString> {
    let files = loaded_files(program)?;
    let mut v = loader_key(program).into_bytes();
    for f in files {
        v.push(b'\n');
        v.extend_from_slice(f.as_os_str().as_bytes());
    }
    Some(std::ffi::OsString::from_vec(v))
}

fn loader_key(program: &std::path::Path) -> String {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(program) {
        Ok(m) => format!(
            "{} {} {} {}.{}",
            program.display(),
            m.len(),
            m.ino(),
            m.ctime(),
            m.ctime_nsec()
        ),
        Err(_) => format!("{} ?", program.display()),
    }
}

fn parse_list(text: &[u8], key: &str) -> Option<Vec<std::path::PathBuf>> {
    let mut lines = text.split(|&b| b == b'\n');
    if lines.next()? != key.as_bytes() {
        return None;
    }
    let files: Vec<std::path::PathBuf> = lines
        .filter(|l| l.starts_with(b"/"))
        .map(|l| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(l)))
        .collect();
    (!files.is_empty()).then_some(files)
}

fn from_env(key: &str) -> Option<Vec<std::path::PathBuf>> {
    // The jail helper's parent checked this environment; should another variable be bad here,
    // the list is computed again instead (from disk or `ldd`).
    let files = iec_core::config::Config::from_env().ok()?.witness_loader_files?;
    parse_list(files.as_bytes(), key)
}

fn cache_file(key: &str) -> Option<std::path::PathBuf> {
    use std::hash::{Hash, Hasher};
    let config = iec_core::config::current();
    let base = config
        .xdg_cache_home
        .or_else(|| config.home.map(|h| h.join(".cache")))?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    Some(base.join("iec").join(format!("loader-{:016x}.txt", h.finish())))
}

fn from_disk(key: &str) -> Option<Vec<std::path::PathBuf>> {
    let f = cache_file(key)?;
    let mut buf = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(f).ok()?, 1 << 16),
        &mut buf,
    )
    .ok()?;
    parse_list(&buf, key)
}

fn to_disk(key: &str, files: &[std::path::PathBuf]) {
    let Some(f) = cache_file(key) else { return };
    let Some(dir) = f.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let mut text = key.as_bytes().to_vec();
    for p in files {
        text.push(b'\n');
        text.extend_from_slice(p.as_os_str().as_bytes());
    }
    let tmp = dir.join(format!(".loader-{}.tmp", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, &f);
    }
}

fn from_ldd(program: &std::path::Path) -> Option<Vec<std::path::PathBuf>> {
    use std::path::PathBuf;
    let ldd = ["/usr/bin/ldd", "/bin/ldd"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())?;
    let out = std::process::Command::new(ldd)
        .arg(program)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = l.split("=> ").nth(1).unwrap_or(l);
            let path = path.split(" (").next()?.trim();
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect();
    (!files.is_empty()).then_some(files)
}

const LL_EXECUTE: u64 = 1 << 0;
const LL_READ_FILE: u64 = 1 << 2;
const LL_READ_DIR: u64 = 1 << 3;

impl Reads {
    /// The ruleset, or `None` where the kernel has no Landlock.
    fn new(program: &std::path::Path, own: &[&std::path::Path]) -> Option<Reads> {
        use std::os::fd::{AsRawFd, FromRawFd};
        let handled: u64 = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR;
        // SAFETY: landlock_create_ruleset reads `size` bytes of the attribute (its first field,
        // handled_access_fs, is all an ABI-1 kernel knows).
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &handled as *const u64,
                std::mem::size_of::<u64>(),
                0u32,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor of our own.
        let low = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) };
        let ruleset = above_child_descriptors(low)?;
        let mut rules = system_rules(program);
        for d in own {
            // (A file among them gets only the file rights below.)
            rules.push((d.to_path_buf(), LL_READ_FILE | LL_READ_DIR));
        }
        for (path, access) in rules {
            use rustix::fs::{Mode, OFlags};
            let Ok(pfd) = rustix::fs::open(&path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) else {
                continue;
            };
            let meta = std::fs::metadata(&path);
            // A file takes only file rights.
            let access = match meta {
                Ok(m) if !m.is_dir() => access & (LL_EXECUTE | LL_READ_FILE),
                _ => access,
            };
            #[repr(C, packed)]
            struct PathBeneath {
                allowed_access: u64,
                parent_fd: i32,
            }
            let attr = PathBeneath {
                allowed_access: access,
                parent_fd: pfd.as_raw_fd(),
            };
            // SAFETY: landlock_add_rule with a path-beneath attribute (type 1) on our ruleset.
            unsafe {
                libc::syscall(
                    libc::SYS_landlock_add_rule,
                    ruleset.as_raw_fd(),
                    1u32,
                    &attr as *const PathBeneath,
                    0u32,
                )
            };
        }
        Some(Reads { ruleset })
    }
}

/// The lowest descriptor number a ruleset may have: the child's set-up writes onto 0–2 (its
/// standard streams), 3 (a script handed to the shell) and 8–9 (the terminal witness's rc file
/// and log) before it enters the jail, and would replace a ruleset that had one of those numbers
/// (`landlock_restrict_self` then fails with EBADFD: CI saw it when descriptor 3 was free).
pub(crate) const MIN_RULESET_FD: i32 = 16;

/// `fd` moved to a number at or above [`MIN_RULESET_FD`] (close-on-exec).
fn above_child_descriptors(fd: std::os::fd::OwnedFd) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::AsRawFd;
    if fd.as_raw_fd() >= MIN_RULESET_FD {
        return Some(fd);
    }
    rustix::io::fcntl_dupfd_cloexec(&fd, MIN_RULESET_FD).ok()
}

/// The program, argv and environment of the jail's own exec, as C arrays.
struct Exec {
    path: CString,
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
}

// SAFETY: the raw pointers point into the CStrings owned by the same struct, never mutated.
unsafe impl Send for Exec {}
unsafe impl Sync for Exec {}

impl Exec {
    fn new(program: &OsStr, args: &[&OsStr], env: &[(&str, &OsStr)]) -> std::io::Result<Exec> {
        let c = |b: &[u8]| {
            CString::new(b).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in a witness argument")
            })
        };
        let path = c(program.as_bytes())?;
        if path.as_bytes_with_nul().len() > MAGIC_LEN {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "witness program path too long",
            ));
        }
        let argv: Vec<CString> = std::iter::once(Ok(path.clone()))
            .chain(args.iter().map(|a| c(a.as_bytes())))
            .collect::<Result<_, _>>()?;
        let envp: Vec<CString> = env
            .iter()
            .map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                c(&kv)
            })
            .collect::<Result<_, _>>()?;
        let ptrs = |v: &[CString]| {
            v.iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect::<Vec<_>>()
        };
        Ok(Exec {
            argv_ptrs: ptrs(&argv),
            envp_ptrs: ptrs(&envp),
            path,
            _argv: argv,
            _envp: envp,
        })
    }
}

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;
const RET_ENOSYS: u32 = 0x0005_0000 | libc::ENOSYS as u32;
const LD_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET: u16 = 0x06; // BPF_RET | BPF_K
const JA: u16 = 0x05; // BPF_JMP | BPF_JA

#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xC000_00B7;

fn ins(code: u16, jt: u8, jf: u8, k: u32) -> seccompiler::sock_filter {
    seccompiler::sock_filter { code, jt, jf, k }
}

/// Syscalls that fail in every witness.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn denied(kind: Kind) -> Vec<libc::c_long> {
    use libc::*;
    let mut v = vec![
        SYS_socket,
        SYS_socketpair,
        SYS_connect,
        SYS_bind,
        SYS_listen,
        SYS_accept,
        SYS_accept4,
        SYS_sendto,
        SYS_sendmsg,
        SYS_sendmmsg,
        SYS_ptrace,
        SYS_kill,
        SYS_tkill,
        SYS_tgkill,
        SYS_rt_sigqueueinfo,
        SYS_rt_tgsigqueueinfo,
        SYS_pidfd_send_signal,
        SYS_pidfd_open,
        SYS_pidfd_getfd,
        SYS_process_vm_writev,
        SYS_process_vm_readv,
        SYS_process_madvise,
        SYS_unlinkat,
        SYS_renameat,
        SYS_renameat2,
        SYS_mkdirat,
        SYS_linkat,
        SYS_symlinkat,
        SYS_fchmod,
        SYS_fchmodat,
        SYS_fchown,
        SYS_fchownat,
        SYS_truncate,
        SYS_ftruncate,
        SYS_mknodat,
        SYS_mount,
        SYS_umount2,
        SYS_openat2,
        SYS_open_tree,
        SYS_move_mount,
        SYS_fsopen,
        SYS_io_uring_setup,
        SYS_memfd_create,
        SYS_utimensat,
        SYS_execveat,
        SYS_chroot,
        SYS_pivot_root,
        SYS_setxattr,
        SYS_lsetxattr,
        SYS_fsetxattr,
        SYS_removexattr,
        SYS_lremovexattr,
        SYS_fremovexattr,
        SYS_fallocate,
        SYS_name_to_handle_at,
        SYS_open_by_handle_at,
        SYS_unshare,
        SYS_setns,
        SYS_setsid,
        SYS_setpgid,
        SYS_msgget,
        SYS_msgsnd,
        SYS_semget,
        SYS_semop,
        SYS_semtimedop,
        SYS_shmget,
        SYS_shmat,
        SYS_mq_open,
        SYS_bpf,
        SYS_perf_event_open,
        SYS_userfaultfd,
        SYS_keyctl,
        SYS_add_key,
        SYS_request_key,
        SYS_fanotify_init,
        SYS_seccomp,
        SYS_clone3,
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        SYS_unlink,
        SYS_rename,
        SYS_mkdir,
        SYS_rmdir,
        SYS_link,
        SYS_symlink,
        SYS_chmod,
        SYS_chown,
        SYS_lchown,
        SYS_mknod,
        SYS_creat,
        SYS_utime,
        SYS_utimes,
        SYS_futimesat,
    ]);
    if kind == Kind::Parse {
        v.push(SYS_clone);
        #[cfg(target_arch = "x86_64")]
        v.extend([SYS_fork, SYS_vfork]);
    }
    #[cfg(target_arch = "x86_64")]
    if kind == Kind::Expand {
        // vfork shares memory with the parent until exec, which never comes; fork is fine.
        v.push(SYS_vfork);
    }
    v
}

/// Opens with any of these flags fail: a witness only reads.
const WRITE_FLAGS: u32 =
    (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND) as u32;

/// `clone` flags that make new namespaces (and `CLONE_NEWTIME`, 0x80).
const NEW_NAMESPACES: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWCGROUP) as u32
    | 0x80;

/// `ioctl` requests that act on a terminal beyond the process: pushing input (`TIOCSTI`), the
/// console's `TIOCLINUX`, and choosing the terminal's foreground process group (`TIOCSPGRP`:
/// an interactive bash in the PID namespace would hand the terminal to a group that does not
/// exist outside it, and then fail to read; refused, bash runs without job control).
const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541C;
const TIOCSPGRP: u32 = 0x5410;

/// Size of the page that holds the path of the jail's own exec.
const MAGIC_LEN: usize = 4096;

/// The address of a page mapped once per process at a random address far from where a program
/// maps anything: the filter allows `execve` only with its first argument pointing there. The
/// exec'd program's address space does not have the page, and its allocations (under the
/// address-space limit) cannot reach that address.
fn magic_page() -> std::io::Result<usize> {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    if let Some(p) = PAGE.get() {
        return Ok(*p);
    }
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    // Between 64 GiB and 256 GiB: below every x86_64 and aarch64 (39-bit) user space top, far
    // above a program's brk heap and below its mmap area.
    let hint = (1usize << 36) + (h.finish() as usize % ((3usize << 36) / MAGIC_LEN)) * MAGIC_LEN;
    // SAFETY: a fresh anonymous mapping; MAP_FIXED_NOREPLACE never replaces an existing one.
    let p = unsafe {
        let p = libc::mmap(
            hint as *mut libc::c_void,
            MAGIC_LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            libc::mmap(
                std::ptr::null_mut(),
                MAGIC_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        } else {
            p
        }
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(*PAGE.get_or_init(|| p as usize))
}

/// A user id of its own for a witness started by root: above the usual ranges, different for
/// every witness of this process (so `RLIMIT_NPROC` counts one witness's processes).
fn private_id() -> libc::uid_t {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 4096;
    let k = (std::process::id() % 200_000) * 4096 + n;
    3_000_000_000 + k % 1_000_000_000
}

impl Jail {
    /// The plan for a witness of `kind` that runs `program` with `args` (argv[0] is the
    /// program's path) and exactly the environment `env`. `None` on an architecture without a
    /// filter here.
    pub(crate) fn new(
        kind: Kind,
        program: &OsStr,
        args: &[&OsStr],
        env: &[(&str, &OsStr)],
        cpu: Option<usize>,
    ) -> std::io::Result<Option<Jail>> {
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = (kind, program, args, env, cpu);
            return Ok(None);
        }
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let magic = magic_page()? as u64;
            let exec = Exec::new(program, args, env)?;
            let filter = filter(kind, magic)?;
            use rustix::process::{geteuid, getgid, getuid};
            let (uid, gid, euid) = (getuid().as_raw(), getgid().as_raw(), geteuid().as_raw());
            let drop_to = (euid == 0).then(|| {
                let id = private_id();
                (id, id)
            });
            Ok(Some(Jail {
                filter,
                uid_map: CString::new(format!("{uid} {uid} 1")).unwrap(),
                gid_map: CString::new(format!("{gid} {gid} 1")).unwrap(),
                drop_to,
                cpu,
                exec,
                reads: None,
            }))
        }
    }

    /// Confines the witness's reads (see [`Reads`]) to the system's programs and libraries and
    /// `own`, its directories.
    pub(crate) fn reading(mut self, own: &[&std::path::Path]) -> Jail {
        let program = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(self.exec.path.as_bytes()));
        self.reads = Reads::new(&program, own);
        self
    }

    /// The user and group the witness runs as, when it drops privileges: its private
    /// directory must belong to them.
    pub(crate) fn owner(&self) -> Option<(libc::uid_t, libc::gid_t)> {
        self.drop_to
    }

    /// In the child, before exec: namespaces, the intermediate process, the user id, limits,
    /// the filter, then the exec of the witness program. Returns only on failure.
    ///
    /// # Safety
    /// Call only in a freshly forked child (async-signal-safe syscalls on memory built before
    /// the fork).
    pub(crate) unsafe fn enter_and_exec(&self) -> std::io::Error {
        let err = std::io::Error::last_os_error;
        let (pidns, userns) = enter_namespaces(self);
        if pidns {
            let pid = libc::fork();
            if pid < 0 {
                return err();
            }
            if pid > 0 {
                intermediate(pid);
            }
        }
        if let Some((uid, gid)) = self.drop_to.filter(|_| !userns) {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(gid, gid, gid) != 0
                || libc::setresuid(uid, uid, uid) != 0
            {
                return err();
            }
            // A change of user makes the process undumpable, and /proc/self/fd (through which
            // a shell reads a script handed to it as a descriptor) then belongs to root.
            libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        }
        if pidns && libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            return err();
        }
        let limits = [
            (libc::RLIMIT_AS, MAX_MEMORY),
            (libc::RLIMIT_NPROC, MAX_PROCESSES),
            (libc::RLIMIT_CORE, 0),
        ];
        for (which, n) in limits {
            // Without a user id or a user namespace of its own the process count would be the
            // whole user's: keep theirs (the filter and the process group still hold).
            if which == libc::RLIMIT_NPROC && !userns && (self.drop_to.is_none()) {
                continue;
            }
            let l = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(which, &l) != 0 {
                return err();
            }
        }
        if let Some(c) = self.cpu {
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(c, &mut one);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return err();
        }
        if let Some(r) = &self.reads {
            use std::os::fd::AsRawFd;
            if libc::syscall(libc::SYS_landlock_restrict_self, r.ruleset.as_raw_fd(), 0u32) != 0 {
                return err();
            }
        }
        let magic = match magic_page() {
            Ok(m) => m as *mut u8,
            Err(e) => return e,
        };
        let path = self.exec.path.as_bytes_with_nul();
        std::ptr::copy_nonoverlapping(path.as_ptr(), magic, path.len());
        // (No allocation: its errors carry the OS error.)
        match seccompiler::apply_filter(&self.filter) {
            Ok(()) => {}
            Err(seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e)) => return e,
            Err(_) => return std::io::Error::from_raw_os_error(libc::EINVAL),
        }
        libc::execve(
            magic as *const libc::c_char,
            self.exec.argv_ptrs.as_ptr(),
            self.exec.envp_ptrs.as_ptr(),
        );
        err()
    }
}

/// A private network and PID namespace, as root or in a user namespace of our own; returns
/// (PID namespace made, user namespace made).
unsafe fn enter_namespaces(jail: &Jail) -> (bool, bool) {
    let both = libc::CLONE_NEWNET | libc::CLONE_NEWPID;
    for (flags, pid) in [(both, true), (libc::CLONE_NEWNET, false)] {
        if libc::unshare(flags) == 0 {
            return (pid, false);
        }
        if libc::unshare(libc::CLONE_NEWUSER | flags) == 0 {
            write_file(c"/proc/self/setgroups", c"deny");
            write_file(c"/proc/self/uid_map", &jail.uid_map);
            write_file(c"/proc/self/gid_map", &jail.gid_map);
            return (pid, true);
        }
    }
    (false, false)
}

/// The process outside the PID namespace: holds no file but the standard three, waits for the
/// witness (the namespace's first process) and exits as it did. Killing it kills the witness
/// (its parent-death signal), and with it the whole namespace.
unsafe fn intermediate(pid: libc::pid_t) -> ! {
    libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    let mut status = 0;
    loop {
        let r = libc::waitpid(pid, &mut status, 0);
        if r == pid {
            break;
        }
        if r < 0 && *libc::__errno_location() != libc::EINTR {
            libc::_exit(125);
        }
    }
    if libc::WIFEXITED(status) {
        libc::_exit(libc::WEXITSTATUS(status));
    }
    libc::_exit(128 + libc::WTERMSIG(status));
}

/// System calls that the filter allows without looking further (see [`filter`]), most frequent
/// first (bash serving parse and expansion requests, counted with strace).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const HOT: &[libc::c_long] = &[
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_fcntl,
    libc::SYS_close,
    libc::SYS_rt_sigprocmask,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_dup2,
    libc::SYS_dup3,
    libc::SYS_newfstatat,
    libc::SYS_lseek,
    libc::SYS_rt_sigaction,
    libc::SYS_pread64,
    libc::SYS_pwrite64,
    libc::SYS_brk,
];

/// The witness filter. Its head is written by hand, for what `seccompiler` cannot say (see the
/// crate README): a wrong architecture and the x32 system call range fail with `EPERM` (a
/// `seccompiler` program kills the process there), the [`HOT`] calls are allowed before
/// anything else is looked at (a `seccompiler` program tests system calls in the order of
/// their numbers), `clone3` fails with `ENOSYS` (a `seccompiler` program has one action
/// for every rule that matches: here `EPERM`), and the calls denied whatever their arguments
/// ([`denied`]) take one instruction each, a jump to one shared `EPERM` (a `seccompiler`
/// program spends five instructions on each: the kernel converts and JIT-compiles the whole
/// program at every witness start, and 594 instructions against 248 cost the in-process hook
/// about 0.1 ms per call, issue 18). The rest, the argument checks, is the program
/// `seccompiler` compiles from [`rules`]; its own architecture check comes after ours and
/// always passes.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn filter(kind: Kind, magic: u64) -> std::io::Result<seccompiler::BpfProgram> {
    let mut f = vec![
        ins(LD_ABS, 0, 0, 4), // seccomp_data.arch
        ins(JEQ, 1, 0, ARCH),
        ins(RET, 0, 0, RET_EPERM),
        ins(LD_ABS, 0, 0, 0), // seccomp_data.nr
        // x32 system calls on x86_64 (and anything out of range) are refused.
        ins(JGE, 0, 1, 0x4000_0000),
        ins(RET, 0, 0, RET_EPERM),
    ];
    // The system calls bash makes most while it serves a request, allowed first: every other
    // one walks the whole list below (with a filter of some 200 instructions each of bash's
    // few dozen calls per request paid for it). Nothing here is denied or has its arguments
    // read below (a test holds that).
    for &nr in HOT {
        f.push(ins(JEQ, 0, 1, nr as u32));
        f.push(ins(RET, 0, 0, RET_ALLOW));
    }
    // clone3 is refused as "not implemented", so that a C library falls back to clone, whose
    // flags the filter can read.
    f.push(ins(JEQ, 0, 1, libc::SYS_clone3 as u32));
    f.push(ins(RET, 0, 0, RET_ENOSYS));
    // The calls denied whatever their arguments: one jump each to the `EPERM` after the list
    // (a jump's offset has 8 bits: the list is far shorter than 255).
    let plain: Vec<libc::c_long> = denied(kind)
        .into_iter()
        .filter(|&nr| nr != libc::SYS_clone3)
        .collect();
    let n = plain.len();
    for (i, &nr) in plain.iter().enumerate() {
        let to_eperm = u8::try_from(n - i).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("witness filter: {n} denied system calls, too many for one jump"),
            )
        })?;
        f.push(ins(JEQ, to_eperm, 0, nr as u32));
    }
    f.push(ins(JA, 0, 0, 1));
    f.push(ins(RET, 0, 0, RET_EPERM));
    let invalid = |e: seccompiler::BackendError| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("witness filter: {e}"))
    };
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH).map_err(invalid)?;
    let body: seccompiler::BpfProgram = seccompiler::SeccompFilter::new(
        rules(kind, magic).map_err(invalid)?,
        seccompiler::SeccompAction::Allow,
        seccompiler::SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .and_then(seccompiler::BpfProgram::try_from)
    .map_err(invalid)?;
    f.extend(body);
    Ok(f)
}

/// What fails with `EPERM` in a witness of `kind` beyond the calls of [`denied`] (which
/// [`filter`] refuses in its head; every other system call is allowed): these calls when a
/// rule holds:
///
/// * `execve(path, …)` unless the path pointer is the magic page's address;
/// * `clone(flags, …)` (expansion witnesses; parse witnesses are denied it) when the flags
///   (low word; argument 0 on x86_64 and aarch64) ask for a new namespace;
/// * `ioctl(fd, request)` for `TIOCSTI`, `TIOCLINUX`, `TIOCSPGRP` (low word of the request);
/// * `open(path, flags)`, `openat(dirfd, path, flags)` with any of [`WRITE_FLAGS`] (low word).
///
/// `seccompiler` compares an argument with a mask only for equality, so "any of these bits" is
/// one rule per bit.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn rules(
    kind: Kind,
    magic: u64,
) -> Result<std::collections::BTreeMap<i64, Vec<seccompiler::SeccompRule>>, seccompiler::BackendError> {
    use seccompiler::{SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition, SeccompRule};
    let rule = |arg: u8, len: Len, op: Op, value: u64| {
        SeccompRule::new(vec![SeccompCondition::new(arg, len, op, value)?])
    };
    let any_bit = |arg: u8, mask: u32| {
        (0..32)
            .map(|b| 1u64 << b)
            .filter(|&bit| u64::from(mask) & bit != 0)
            .map(|bit| rule(arg, Len::Dword, Op::MaskedEq(bit), bit))
            .collect::<Result<Vec<_>, _>>()
    };
    let mut m = std::collections::BTreeMap::new();
    m.insert(libc::SYS_execve, vec![rule(0, Len::Qword, Op::Ne, magic)?]);
    if kind == Kind::Expand {
        m.insert(libc::SYS_clone, any_bit(0, NEW_NAMESPACES)?);
    }
    m.insert(
        libc::SYS_ioctl,
        [TIOCSTI, TIOCLINUX, TIOCSPGRP]
            .into_iter()
            .map(|r| rule(1, Len::Dword, Op::Eq, r.into()))
            .collect::<Result<_, _>>()?,
    );
    #[cfg(target_arch = "x86_64")]
    m.insert(libc::SYS_open, any_bit(1, WRITE_FLAGS)?);
    m.insert(libc::SYS_openat, any_bit(2, WRITE_FLAGS)?);
    Ok(m)
}

/// Kills every process of the process group `pgid` (the witness and whatever it started).
pub fn kill_group(pgid: u32) {
    if pgid > 1 {
        // A process group this process created.
        if let Some(pgid) = rustix::process::Pid::from_raw(pgid as i32) {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }
}

/// The witness's own pid when it runs under an intermediate process `pid` (its only child),
/// else `pid`.
pub fn witness_pid(pid: u32) -> u32 {
    if let Ok(c) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
        return c
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(pid);
    }
    // Without CONFIG_PROC_CHILDREN: the process whose parent is `pid`.
    let parent_of = |p: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|&p| parent_of(p) == Some(pid))
        .unwrap_or(pid)
}

/// Best effort: a failed map write leaves the namespace unusable only for the child's ids.
unsafe fn write_file(path: &std::ffi::CStr, text: &std::ffi::CStr) {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
    if fd >= 0 {
        libc::write(fd, text.as_ptr().cast(), text.to_bytes().len());
        libc::close(fd);
    }
}

/// Runs `program` with `args` and `env` under the jail of `kind` in the calling process (the
/// entry point of a helper that a program such as tmux starts in place of the witness): never
/// returns on success.
/// Its reads are confined to the system and `readable` (directories and files).
pub fn exec_jailed(
    kind: Kind,
    program: &OsStr,
    args: &[&OsStr],
    env: &[(&str, &OsStr)],
    readable: &[&std::path::Path],
) -> std::io::Error {
    match Jail::new(kind, program, args, env, None).map(|j| j.map(|j| j.reading(readable))) {
        // SAFETY: the calling process is single-threaded at this point by contract of a helper
        // entry point; everything the jail touches was built above.
        Ok(Some(j)) => unsafe { j.enter_and_exec() },
        Ok(None) => std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "no witness filter for this architecture",
        ),
        Err(e) => e,
    }
}

#[cfg(test)]
#[path = "jail_filter_test.rs"]
mod filter_test;

#[cfg(test)]
mod tests {
    use super::{Jail, Kind};
    use std::ffi::OsStr;

    /// Starts bash in the jail with a script that tries each action and reports which ones
    /// succeeded as bits of its exit status.
    fn probe(kind: Kind, script: &str) -> (i32, String) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("own"), "mine\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let bash = crate::bash_path();
        let script = script.replace("DIR", &dir.path().display().to_string());
        let jail = Jail::new(
            kind,
            bash.as_os_str(),
            &[OsStr::new("--norc"), OsStr::new("-c"), OsStr::new(&script)],
            &[("PATH", OsStr::new("/usr/bin:/bin"))],
            None,
        )
        .unwrap()
        .expect("a filter for this architecture")
        .reading(&[dir.path()]);
        assert!(
            jail.reads.is_some(),
            "this kernel has no Landlock: reads would not be confined"
        );
        let mut cmd = std::process::Command::new(&bash);
        // SAFETY: the closure only enters the jail (see enter_and_exec).
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || Err(jail.enter_and_exec()));
        }
        let out = cmd.output().unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, ["own"], "something was written");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// CI: `cannot start /bin/bash: File descriptor in bad state` when the ruleset had number 3
    /// and the child's set-up put the shell's script descriptor there before entering the jail.
    #[test]
    fn the_ruleset_descriptor_is_above_those_the_child_sets_up() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..4 {
            let jail = Jail::new(
                Kind::Parse,
                crate::bash_path().as_os_str(),
                &[OsStr::new("-n")],
                &[],
                None,
            )
            .unwrap()
            .expect("a filter for this architecture")
            .reading(&[dir.path()]);
            let fd = jail.reads.as_ref().expect("Landlock").ruleset.as_raw_fd();
            assert!(fd >= super::MIN_RULESET_FD, "ruleset on descriptor {fd}");
        }
    }

    const ACTIONS: &str = r#"r=0
trap 'exit $r' EXIT
shopt -s execfail
exec /usr/bin/true
{ : > DIR/f; } && r=$((r|4))
{ exec 3<>/dev/tcp/127.0.0.1/9; } && r=$((r|8))
kill -0 1 && r=$((r|16))
{ read -r x < /proc/self/status; } && r=$((r|32))
{ read -r x < /etc/hostname; } && r=$((r|32))
{ read -r x < /usr/bin/env; } && r=$((r|32))
[[ -n $(</etc/hostname) ]] && r=$((r|32))
{ read -r x < DIR/own && [[ $x == mine ]]; } || r=$((r|64))
r=$((r|1))
x=$(/usr/bin/true && echo ran)
r=$((r&~1))
[[ $x == ran ]] && r=$((r|1))
( exit 0 ) && r=$((r|2))"#;

    /// The early allowances must not open a way round the filter: no hot system call is one it
    /// denies or whose arguments it reads.
    #[test]
    fn hot_system_calls_are_neither_denied_nor_inspected() {
        let inspected = [
            libc::SYS_execve,
            libc::SYS_clone,
            libc::SYS_ioctl,
            libc::SYS_openat,
        ];
        for kind in [Kind::Parse, Kind::Expand] {
            let denied = super::denied(kind);
            for nr in super::HOT {
                assert!(
                    !denied.contains(nr) && !inspected.contains(nr),
                    "system call {nr} in HOT for {kind:?}"
                );
            }
        }
        #[cfg(target_arch = "x86_64")]
        assert!(!super::HOT.contains(&libc::SYS_open));
    }

    #[test]
    fn parse_jail_forbids_exec_fork_writes_sockets_and_signals() {
        let (code, err) = probe(Kind::Parse, ACTIONS);
        eprintln!("stderr: {err}");
        assert_eq!(code, 1, "bits: 1 exec (or stopped before the fork), 2 fork, 4 write-open, 8 socket, 16 kill, 32 a file outside its directory read, 64 its own file not read");
    }

    #[test]
    fn expand_jail_allows_fork_only() {
        let (code, err) = probe(Kind::Expand, ACTIONS);
        eprintln!("stderr: {err}");
        assert_eq!(code, 2, "bits: 1 exec, 2 fork, 4 write-open, 8 socket, 16 kill, 32 a file outside its directory read, 64 its own file not read");
    }

    #[test]
    fn expand_jail_limits_processes() {
        // Background subshells that wait on an inherited pipe: count how many start.
        let bash = crate::bash_path();
        let script = "exec 5<&0; for i in {1..100}; do (read -t 30 -u 5) & echo $i; done";
        let jail = Jail::new(
            Kind::Expand,
            bash.as_os_str(),
            &[OsStr::new("--norc"), OsStr::new("-c"), OsStr::new(script)],
            &[],
            None,
        )
        .unwrap()
        .unwrap();
        let mut cmd = std::process::Command::new(&bash);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        cmd.stderr(std::process::Stdio::null());
        // SAFETY: the closure only enters the jail (see enter_and_exec).
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
            cmd.pre_exec(move || Err(jail.enter_and_exec()));
        }
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_secs(2));
        super::kill_group(child.id());
        let _ = child.kill();
        let mut out = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
        let _ = child.wait();
        let started = out
            .lines()
            .filter_map(|l| l.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        assert!(
            started > 3 && started < super::MAX_PROCESSES,
            "started {started}: {out}"
        );
    }
}
