//! The one `io_uring_enter` of ringlab's storage loops: the storage engine
//! and its completion thread enter the kernel through [`enter`], and each
//! caller inlines it into its loop. The HTTP client's driver does not: it
//! enters through the io-uring crate, which measured better there
//! (ringlab-net's `drivers/uring.rs` says by how much).
//!
//! Why not libc's `syscall()` (or the io-uring crate's `Submitter`, which
//! calls it): on this project's machine (AMD EPYC, KVM guest, Linux 6.18,
//! `spectre_v2: Retpolines; RSB filling`), function *returns* executed
//! after a system call in which the thread was switched out (a wait that
//! blocked) cost far more than mispredicted branches should: about 0.9 us
//! per I/O in ringlab's depth-1 loop, which returned through two functions
//! after each wait, and it shows up as every kernel phase of the next I/O
//! running slower, not as user time. Measured
//! (docs/benchmarks.md, "The qd1 gap to t/io_uring"): fio's t/io_uring,
//! which issues `syscall` inline, drops from 163k to 143k IOPS on zram at
//! depth 1 when built to call libc's `syscall()` instead; a 30-line C loop
//! goes the other way (142k to 161k); two threads ping-ponging over pipes
//! take 5.0 us per round trip with a call/return around `syscall` and
//! 4.0-4.4 us without (`bench/syscall-return.sh`). The kernel refills the
//! return stack buffer on every context switch, so the first return after
//! one is mispredicted; that this is the whole mechanism is likely but not
//! proven (no hardware counters here). A call that does not block
//! (getppid) pays about 45 ns.
//!
//! So on x86-64 the instruction is issued inline here, and [`enter`] is
//! `#[inline(always)]`: with the callers' enter paths inlined too, no
//! function returns between a wait and the loop that waited. It does not
//! make a loop immune to its code layout: an inline C loop moved by a few
//! bytes was fast in some layouts only (docs/benchmarks.md); re-measure
//! the t/io_uring rows of bench/io-vs-peers.sh after changing the job loop.

use std::io;

/// `io_uring_enter(fd, to_submit, min_complete, flags, arg, argsz)`:
/// the count the kernel returns, or its error (EINTR, EAGAIN, ... are the
/// caller's to handle).
///
/// # Safety
///
/// `arg` must be null with `argsz` 0, or point at what `flags` says it is
/// (a sigset, or with IORING_ENTER_EXT_ARG an `io_uring_getevents_arg`) for
/// the duration of the call; `fd` must be a ring (or, with
/// IORING_ENTER_REGISTERED_RING, a registered ring index) whose submission
/// entries the kernel may read.
#[inline(always)]
pub unsafe fn enter(
    fd: i32,
    to_submit: u32,
    min_complete: u32,
    flags: u32,
    arg: *const libc::c_void,
    argsz: usize,
) -> io::Result<u32> {
    #[cfg(target_arch = "x86_64")]
    let rc: i64 = {
        let rc: i64;
        // SAFETY: the caller upholds the contract above; the asm block is a
        // plain system call (rcx and r11 clobbered by `syscall`), and as an
        // asm! without `nomem` it orders every memory access around it, so
        // the submission entries and tail written before are visible to
        // the kernel and the completions it wrote are read after.
        unsafe {
            std::arch::asm!(
                "syscall",
                inlateout("rax") libc::SYS_io_uring_enter => rc,
                in("rdi") fd as i64,
                in("rsi") to_submit as u64,
                in("rdx") min_complete as u64,
                in("r10") flags as u64,
                in("r8") arg,
                in("r9") argsz,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        rc
    };
    #[cfg(target_arch = "x86_64")]
    if rc < 0 {
        return Err(io::Error::from_raw_os_error(-rc as i32));
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as above.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_io_uring_enter,
            fd,
            to_submit,
            min_complete,
            flags,
            arg,
            argsz,
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, IoUring};
    use std::os::fd::AsRawFd;

    #[test]
    fn submits_waits_and_reports_errors() {
        let mut ring = match IoUring::new(4) {
            Ok(r) => r,
            Err(e) => panic!("io_uring_setup failed: {e}"),
        };
        for i in 0..3u64 {
            let nop = opcode::Nop::new().build().user_data(i);
            // SAFETY: a NOP points at no memory.
            unsafe { ring.submission().push(&nop).unwrap() };
        }
        // SAFETY: null argument; the ring is ours.
        let n = unsafe {
            enter(
                ring.as_raw_fd(),
                3,
                3,
                io_uring::EnterFlags::GETEVENTS.bits(),
                std::ptr::null(),
                0,
            )
        }
        .unwrap();
        assert_eq!(n, 3);
        let got: Vec<u64> = ring.completion().map(|c| c.user_data()).collect();
        assert_eq!(got, vec![0, 1, 2]);
        // Not a ring: the kernel's error comes back as the io::Error.
        let null = std::fs::File::open("/dev/null").unwrap();
        // SAFETY: /dev/null is no ring; the kernel refuses before reading.
        let e = unsafe { enter(null.as_raw_fd(), 0, 0, 0, std::ptr::null(), 0) }.unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
    }
}
