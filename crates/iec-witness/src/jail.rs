//! The kernel-enforced layer under every witness server: a private network namespace where the
//! system allows one, and a seccomp filter that makes the syscalls by which a shell acts on the
//! world fail with `EPERM`: sockets, signals to other processes, creating, writing, renaming or
//! removing files, mounts, tracing. Parse servers also lose `fork`/`clone`: bash cannot start any
//! process at all, so they need no DEBUG-trap guard (which cost more than the parse itself).
//! Expansion servers keep `fork` (a command substitution in a word forks; the trap skips what it
//! would run) and keep the trap.
//!
//! Everything here runs in the forked child before `execve` (async-signal-safe syscalls only;
//! the filter and the strings are built before the fork).

use std::ffi::CString;

/// What a child may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// No new processes at all.
    Parse,
    /// `fork` allowed (for command substitutions that the DEBUG trap then skips).
    Expand,
}

/// A filter and namespace plan, built before the fork.
pub(crate) struct Jail {
    filter: Vec<libc::sock_filter>,
    uid_map: CString,
    gid_map: CString,
}

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;
const LD_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const AND: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const RET: u16 = 0x06; // BPF_RET | BPF_K

#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xC000_00B7;

fn ins(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
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
        SYS_pidfd_send_signal,
        SYS_process_vm_writev,
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
        v.extend([SYS_clone, SYS_clone3]);
        #[cfg(target_arch = "x86_64")]
        v.extend([SYS_fork, SYS_vfork]);
    }
    v
}

/// Opens with any of these flags fail: a witness only reads.
const WRITE_FLAGS: u32 =
    (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND) as u32;

impl Jail {
    /// The plan for a child of `kind`, or `None` on an architecture without a filter here.
    pub(crate) fn new(kind: Kind) -> Option<Jail> {
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = kind;
            return None;
        }
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let mut f = vec![
                ins(LD_ABS, 0, 0, 4), // seccomp_data.arch
                ins(JEQ, 1, 0, ARCH),
                ins(RET, 0, 0, RET_EPERM),
                ins(LD_ABS, 0, 0, 0), // seccomp_data.nr
                // x32 system calls on x86_64 (and anything out of range) are refused.
                ins(JGE, 0, 1, 0x4000_0000),
                ins(RET, 0, 0, RET_EPERM),
            ];
            for nr in denied(kind) {
                f.push(ins(JEQ, 0, 1, nr as u32));
                f.push(ins(RET, 0, 0, RET_EPERM));
            }
            // open(path, flags) and openat(dirfd, path, flags): low word of the flags argument.
            #[cfg(target_arch = "x86_64")]
            let opens: &[(libc::c_long, u32)] = &[(libc::SYS_open, 1), (libc::SYS_openat, 2)];
            #[cfg(target_arch = "aarch64")]
            let opens: &[(libc::c_long, u32)] = &[(libc::SYS_openat, 2)];
            for &(nr, arg) in opens {
                f.push(ins(JEQ, 0, 5, nr as u32));
                f.push(ins(LD_ABS, 0, 0, 16 + 8 * arg));
                f.push(ins(AND, 0, 0, WRITE_FLAGS));
                f.push(ins(JEQ, 0, 1, 0));
                f.push(ins(RET, 0, 0, RET_ALLOW));
                f.push(ins(RET, 0, 0, RET_EPERM));
            }
            f.push(ins(RET, 0, 0, RET_ALLOW));
            // SAFETY: getuid/getgid cannot fail.
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            Some(Jail {
                filter: f,
                uid_map: CString::new(format!("{uid} {uid} 1")).unwrap(),
                gid_map: CString::new(format!("{gid} {gid} 1")).unwrap(),
            })
        }
    }

    /// In the child, before exec: a private network namespace if the system allows one (as a
    /// user without privileges, inside a new user namespace mapping only the own ids), then the
    /// filter. Only the filter is required.
    pub(crate) fn enter(&self) -> std::io::Result<()> {
        // SAFETY: async-signal-safe syscalls on memory built before the fork.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNET) != 0
                && libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) == 0
            {
                write_file(c"/proc/self/setgroups", c"deny");
                write_file(c"/proc/self/uid_map", &self.uid_map);
                write_file(c"/proc/self/gid_map", &self.gid_map);
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let prog = libc::sock_fprog {
                len: self.filter.len() as u16,
                filter: self.filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const _) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Best effort: a failed map write leaves the namespace unusable only for the child's ids.
unsafe fn write_file(path: &std::ffi::CStr, text: &std::ffi::CStr) {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
    if fd >= 0 {
        libc::write(fd, text.as_ptr().cast(), text.to_bytes().len());
        libc::close(fd);
    }
}

#[cfg(test)]
mod tests {
    use super::{Jail, Kind};

    /// Forks, enters the jail in the child, tries each action and reports which succeeded as
    /// bits of the exit status.
    fn probe(kind: Kind) -> i32 {
        let jail = Jail::new(kind).expect("a filter for this architecture");
        let dir = tempfile::tempdir().unwrap();
        let file = std::ffi::CString::new(dir.path().join("f").display().to_string()).unwrap();
        // SAFETY: the child makes only raw syscalls and leaves with _exit.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                if jail.enter().is_err() {
                    libc::_exit(100);
                }
                let mut acted = 0;
                let child = libc::fork();
                if child == 0 {
                    libc::_exit(0);
                }
                if child > 0 {
                    acted |= 1;
                }
                if libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CREAT, 0o600) >= 0 {
                    acted |= 2;
                }
                if libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) >= 0 {
                    acted |= 4;
                }
                if libc::kill(1, 0) == 0 {
                    acted |= 8;
                }
                if libc::open(c"/proc/self/status".as_ptr(), libc::O_RDONLY) < 0 {
                    acted |= 64; // reading must still work
                }
                libc::_exit(acted);
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            assert!(!dir.path().join("f").exists() || libc::WEXITSTATUS(status) & 2 != 0);
            libc::WEXITSTATUS(status)
        }
    }

    #[test]
    fn parse_jail_forbids_processes_writes_sockets_and_signals() {
        assert_eq!(
            probe(Kind::Parse),
            0,
            "bits: 1 fork, 2 write-open, 4 socket, 8 kill, 64 read failed"
        );
    }

    #[test]
    fn expand_jail_allows_fork_only() {
        assert_eq!(
            probe(Kind::Expand),
            1,
            "bits: 1 fork, 2 write-open, 4 socket, 8 kill, 64 read failed"
        );
    }
}
