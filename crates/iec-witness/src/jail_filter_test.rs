//! The filter before `seccompiler`, kept as it was written by hand, and a classic-BPF
//! interpreter that runs both programs on every system call number and on the argument values
//! the rules look at: their decisions must be the same.

use super::*;

const JSET: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const AND: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K

/// Offset of syscall argument `i` (low word) in `seccomp_data`.
fn arg(i: u32) -> u32 {
    16 + 8 * i
}

/// The witness filter as it was before `seccompiler` compiled its rules (kept unchanged).
fn hand_written(kind: Kind, magic: u64) -> Vec<seccompiler::sock_filter> {
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
    for nr in denied(kind) {
        // clone3 is refused as "not implemented", so that a C library falls back to clone,
        // whose flags the filter can read.
        let ret = if nr == libc::SYS_clone3 {
            RET_ENOSYS
        } else {
            RET_EPERM
        };
        f.push(ins(JEQ, 0, 1, nr as u32));
        f.push(ins(RET, 0, 0, ret));
    }
    // execve(path, …): only with the magic page's address as the path pointer.
    f.extend([
        ins(JEQ, 0, 6, libc::SYS_execve as u32),
        ins(LD_ABS, 0, 0, arg(0)),
        ins(JEQ, 0, 3, magic as u32),
        ins(LD_ABS, 0, 0, arg(0) + 4),
        ins(JEQ, 0, 1, (magic >> 32) as u32),
        ins(RET, 0, 0, RET_ALLOW),
        ins(RET, 0, 0, RET_EPERM),
        ins(LD_ABS, 0, 0, 0),
    ]);
    if kind == Kind::Expand {
        // clone(flags, …) without new namespaces (aarch64 and x86_64: flags are argument 0).
        f.extend([
            ins(JEQ, 0, 4, libc::SYS_clone as u32),
            ins(LD_ABS, 0, 0, arg(0)),
            ins(JSET, 0, 1, NEW_NAMESPACES),
            ins(RET, 0, 0, RET_EPERM),
            ins(RET, 0, 0, RET_ALLOW),
        ]);
    }
    // ioctl(fd, request): no terminal input injection, no foreground-group change.
    f.extend([
        ins(JEQ, 0, 6, libc::SYS_ioctl as u32),
        ins(LD_ABS, 0, 0, arg(1)),
        ins(JEQ, 2, 0, TIOCSTI),
        ins(JEQ, 1, 0, TIOCLINUX),
        ins(JEQ, 0, 1, TIOCSPGRP),
        ins(RET, 0, 0, RET_EPERM),
        ins(RET, 0, 0, RET_ALLOW),
    ]);
    // open(path, flags) and openat(dirfd, path, flags): low word of the flags argument.
    #[cfg(target_arch = "x86_64")]
    let opens: &[(libc::c_long, u32)] = &[(libc::SYS_open, 1), (libc::SYS_openat, 2)];
    #[cfg(target_arch = "aarch64")]
    let opens: &[(libc::c_long, u32)] = &[(libc::SYS_openat, 2)];
    for &(nr, a) in opens {
        f.push(ins(JEQ, 0, 5, nr as u32));
        f.push(ins(LD_ABS, 0, 0, arg(a)));
        f.push(ins(AND, 0, 0, WRITE_FLAGS));
        f.push(ins(JEQ, 0, 1, 0));
        f.push(ins(RET, 0, 0, RET_ALLOW));
        f.push(ins(RET, 0, 0, RET_EPERM));
    }
    f.push(ins(RET, 0, 0, RET_ALLOW));
    f
}

/// Runs a seccomp classic-BPF program on `data` (`seccomp_data`: nr, arch, instruction pointer,
/// six arguments) and returns its action. Panics on an instruction seccomp filters do not use
/// here, on a jump out of the program, and on a program that runs off its end.
fn run(prog: &[seccompiler::sock_filter], data: &[u32; 16]) -> u32 {
    const JA: u16 = 0x05; // BPF_JMP | BPF_JA
    const JGT: u16 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
    let mut a: u32 = 0;
    let mut pc = 0usize;
    loop {
        let i = prog
            .get(pc)
            .unwrap_or_else(|| panic!("ran off the program at {pc}"));
        pc += 1;
        let jump = |cond: bool| usize::from(if cond { i.jt } else { i.jf });
        match i.code {
            LD_ABS => {
                assert!(i.k & 3 == 0 && i.k < 64, "load at offset {}", i.k);
                a = data[i.k as usize / 4];
            }
            AND => a &= i.k,
            JA => pc += i.k as usize,
            JEQ => pc += jump(a == i.k),
            JGT => pc += jump(a > i.k),
            JGE => pc += jump(a >= i.k),
            JSET => pc += jump(a & i.k != 0),
            RET => return i.k,
            c => panic!("instruction {c:#x} at {}", pc - 1),
        }
    }
}

/// `seccomp_data` for system call `nr` of architecture `arch` with `args`.
fn data(arch: u32, nr: u32, args: [u64; 6]) -> [u32; 16] {
    let mut d = [0u32; 16];
    d[0] = nr;
    d[1] = arch;
    d[2] = 0x5555_1234; // instruction pointer: read by neither filter
    for (i, v) in args.iter().enumerate() {
        d[4 + 2 * i] = *v as u32;
        d[5 + 2 * i] = (*v >> 32) as u32;
    }
    d
}

/// Every system call number up to 1023 and the x32 and out-of-range numbers, on this
/// architecture and on others, with the arguments a rule reads in turn set to every value a
/// rule compares
/// (the magic address and its near misses in either word, each ioctl request the filter knows
/// and its neighbours, each single bit of both words, the flag and namespace masks, and
/// pseudo-random words): the seccompiler filter decides as the hand-written one did.
#[test]
fn seccompiler_filter_decides_as_the_hand_written_one() {
    let magics = [0x0000_003f_ffff_f000u64, magic_page().unwrap() as u64];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let randoms: Vec<u64> = (0..24).map(|_| next()).collect();
    let arches = [ARCH, 0x4000_0003 /* i386 */, 0xC000_003E, 0xC000_00B7, 0];
    let mut numbers: Vec<u32> = (0..1024).collect();
    numbers.extend([
        0x4000_0000,
        0x4000_0001,
        0x4000_0000 + libc::SYS_execve as u32,
        0x7fff_ffff,
        u32::MAX,
    ]);
    let mut compared = 0u64;
    for kind in [Kind::Parse, Kind::Expand] {
        for magic in magics {
            let old = hand_written(kind, magic);
            let new = filter(kind, magic).unwrap();
            assert!(new.len() < 4096, "{} instructions", new.len());
            let mut values = vec![0u64, u64::MAX, 0xffff_ffff, 1 << 32];
            for m in [
                magic,
                magic ^ 1,
                magic ^ (1 << 32),
                magic & 0xffff_ffff,
                magic >> 32,
                magic << 32,
            ] {
                values.push(m);
            }
            for r in [TIOCSTI, TIOCLINUX, TIOCSPGRP] {
                let r = u64::from(r);
                values.extend([r, r - 1, r + 1, r | 1 << 32, r | 0xffff_0000]);
            }
            values.extend((0..64).map(|b| 1u64 << b));
            for mask in [WRITE_FLAGS, NEW_NAMESPACES] {
                let m = u64::from(mask);
                values.extend([m, !m, !m & 0xffff_ffff, m << 32]);
            }
            let o = |f: libc::c_int| f as u32 as u64;
            values.extend([
                o(libc::O_RDONLY | libc::O_CLOEXEC),
                o(libc::O_RDONLY | libc::O_NONBLOCK | libc::O_DIRECTORY),
                o(libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC),
                o(libc::O_RDWR),
                o(libc::O_APPEND),
            ]);
            let c = |f: libc::c_int| f as u32 as u64;
            values.extend([
                c(libc::SIGCHLD),
                c(libc::CLONE_CHILD_CLEARTID | libc::CLONE_CHILD_SETTID | libc::SIGCHLD),
                c(libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD),
                c(libc::CLONE_NEWUSER | libc::SIGCHLD),
            ]);
            values.extend(&randoms);
            // Every value in every argument at once, and alone in each argument a rule reads
            // (0–2); a foreign architecture is refused whatever the arguments.
            let mut cases: Vec<[u64; 6]> = vec![[0; 6]];
            for &v in &values {
                cases.push([v; 6]);
                for i in 0..3 {
                    let mut args = [0u64; 6];
                    args[i] = v;
                    cases.push(args);
                }
            }
            for &arch in &arches {
                let cases = if arch == ARCH { &cases[..] } else { &cases[..8] };
                for &nr in &numbers {
                    for &args in cases {
                        let d = data(arch, nr, args);
                        assert_eq!(
                            run(&old, &d),
                            run(&new, &d),
                            "{kind:?}, arch {arch:#x}, system call {nr}, arguments {args:x?}"
                        );
                        compared += 1;
                    }
                }
            }
        }
    }
    assert!(compared > 1_500_000, "{compared} cases");
}

/// The interpreter reads the decisions the filters are known to make (so that agreement above
/// is agreement on something): a denied call, `clone3`, a foreign architecture, the magic exec
/// and any other, a read-only and a writing open, a namespace clone in an expansion witness.
#[test]
fn the_interpreter_reads_known_decisions() {
    let magic = 0x0000_0012_3456_7000u64;
    for f in [
        hand_written(Kind::Expand, magic),
        filter(Kind::Expand, magic).unwrap(),
    ] {
        let call = |nr: libc::c_long, args: [u64; 6]| run(&f, &data(ARCH, nr as u32, args));
        assert_eq!(call(libc::SYS_socket, [0; 6]), RET_EPERM);
        assert_eq!(call(libc::SYS_clone3, [0; 6]), RET_ENOSYS);
        assert_eq!(call(libc::SYS_getpid, [0; 6]), RET_ALLOW);
        assert_eq!(call(libc::SYS_execve, [magic, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_execve, [magic + 4096, 0, 0, 0, 0, 0]), RET_EPERM);
        let ro = (libc::O_RDONLY | libc::O_CLOEXEC) as u64;
        let wr = (libc::O_WRONLY | libc::O_CREAT) as u64;
        assert_eq!(call(libc::SYS_openat, [0, 0, ro, 0, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_openat, [0, 0, wr, 0, 0, 0]), RET_EPERM);
        assert_eq!(
            call(libc::SYS_clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]),
            RET_ALLOW
        );
        let newns = (libc::CLONE_NEWNET | libc::SIGCHLD) as u64;
        assert_eq!(call(libc::SYS_clone, [newns, 0, 0, 0, 0, 0]), RET_EPERM);
        assert_eq!(call(libc::SYS_ioctl, [0, TIOCSTI.into(), 0, 0, 0, 0]), RET_EPERM);
        assert_eq!(run(&f, &data(0x4000_0003, 0, [0; 6])), RET_EPERM);
    }
}

/// Issue 18: the kernel converts and JIT-compiles the whole program at every witness start, so
/// its length is paid by every hook that starts witnesses (`seccompiler`'s five instructions
/// per denied call made it 594 for a parse witness, and the in-process hook ~0.1 ms slower per
/// call). The filter is within a tenth of the hand-written one's length (`seccompiler` spends
/// four instructions per flag bit where the hand-written one tested all bits at once), and
/// each denied call costs one instruction.
#[test]
fn witness_filter_is_about_as_long_as_the_hand_written_one() {
    for kind in [Kind::Parse, Kind::Expand] {
        let magic = magic_page().unwrap() as u64;
        let (new, old) = (filter(kind, magic).unwrap(), hand_written(kind, magic));
        eprintln!(
            "{kind:?}: {} instructions ({} written by hand)",
            new.len(),
            old.len()
        );
        assert!(
            new.len() * 10 <= old.len() * 11,
            "{kind:?}: {} instructions against {} written by hand",
            new.len(),
            old.len()
        );
        let denied = super::denied(kind).len();
        let jumps = new
            .iter()
            .filter(|i| i.code == JEQ && i.jf == 0 && i.jt > 0)
            .count();
        assert!(
            jumps >= denied - 1,
            "{kind:?}: {jumps} one-instruction denials of {denied}"
        );
    }
}
