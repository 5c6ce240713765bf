//! Tracepoint counting with BPF: one tiny program per raw tracepoint adds
//! one to a per-CPU counter when the task that hit it belongs to the
//! counted process (thread group).
//!
//! Why not `perf_event_open` per task, as before: a per-task perf event
//! makes every context switch of every counted thread switch perf contexts
//! too, and on a CPU-bound run with two switches per request (zram at depth
//! 1, io-wq workers) that cost 34-45% of the IOPS. A raw-tracepoint program
//! is attached globally, so context switches cost nothing extra; a hit costs
//! the program (about ten instructions, JIT-compiled), and a hit of another
//! process stops at the thread-group test.
//!
//! Why by hand: the programs are nine to twelve instructions, assembled
//! here from the kernel's instruction encoding (`linux/bpf.h`) and loaded
//! with the `bpf(2)` system call. libbpf-rs and aya would need clang/LLVM
//! at build time (libbpf-cargo) or a nightly toolchain and bpf-linker
//! (aya-bpf) to compile a C or Rust program to BPF: far more machinery for
//! a counter than the counter itself.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `bpf(2)` commands (linux/bpf.h).
pub(crate) const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const BPF_RAW_TRACEPOINT_OPEN: libc::c_long = 17;

pub(crate) const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
const BPF_PROG_TYPE_RAW_TRACEPOINT: u32 = 17;

/// Helper function ids.
const FN_MAP_LOOKUP_ELEM: i32 = 1;
pub(crate) const FN_GET_CURRENT_PID_TGID: i32 = 14;

/// `__NR_io_uring_enter` on every architecture with the generic table.
const NR_IO_URING_ENTER: i32 = 426;

/// One instruction: opcode, destination and source registers, offset,
/// immediate.
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct Insn {
    pub(crate) code: u8,
    regs: u8,
    pub(crate) off: i16,
    pub(crate) imm: i32,
}

pub(crate) fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

// Opcodes (class | op | source).
pub(crate) const MOV64_REG: u8 = 0xbf;
pub(crate) const MOV64_IMM: u8 = 0xb7;
pub(crate) const RSH64_IMM: u8 = 0x77;
pub(crate) const ADD64_IMM: u8 = 0x07;
pub(crate) const JNE_IMM: u8 = 0x55;
pub(crate) const CALL: u8 = 0x85;
pub(crate) const EXIT: u8 = 0x95;
pub(crate) const LDX_DW: u8 = 0x79;
pub(crate) const LDX_W: u8 = 0x61;
pub(crate) const STX_DW: u8 = 0x7b;
const ST_W: u8 = 0x62;
pub(crate) const LD_IMM64: u8 = 0x18;
pub(crate) const PSEUDO_MAP_FD: u8 = 1;
pub(crate) const JEQ_IMM: u8 = 0x15;

/// Where a counted hit adds one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slot(pub u32);

/// What one program counts: every hit of the tracepoint into `slot`, and,
/// for `sys_enter`, the hits whose system call number is
/// `io_uring_enter` into `enter_slot` as well.
struct Program {
    tracepoint: &'static str,
    slot: Slot,
    enter_slot: Option<Slot>,
}

/// Instructions (ten slots) that add one to `slot` of map `map_fd` and
/// fall through. Uses r1-r3 and r0; the stack word at r10-4 holds the key.
pub(crate) fn add_one(out: &mut Vec<Insn>, map_fd: i32, slot: Slot) {
    out.push(insn(ST_W, 10, 0, -4, slot.0 as i32));
    out.push(insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map_fd));
    out.push(insn(0, 0, 0, 0, 0));
    out.push(insn(MOV64_REG, 2, 10, 0, 0));
    out.push(insn(ADD64_IMM, 2, 0, 0, -4));
    out.push(insn(CALL, 0, 0, 0, FN_MAP_LOOKUP_ELEM));
    // A per-CPU array always has the slot; the verifier wants the test.
    out.push(insn(JEQ_IMM, 0, 0, 3, 0));
    out.push(insn(LDX_DW, 1, 0, 0, 0));
    out.push(insn(ADD64_IMM, 1, 0, 0, 1));
    out.push(insn(STX_DW, 0, 1, 0, 0));
}

/// The program: `if tgid != TGID return 0; counts[slot] += 1` (plain add:
/// the array is per CPU and a program does not run nested into itself).
fn assemble(p: &Program, map_fd: i32, tgid: u32) -> Vec<Insn> {
    let mut out = Vec::with_capacity(32);
    // r6 = ctx (raw tracepoint arguments, u64 each).
    out.push(insn(MOV64_REG, 6, 1, 0, 0));
    out.push(insn(CALL, 0, 0, 0, FN_GET_CURRENT_PID_TGID));
    out.push(insn(RSH64_IMM, 0, 0, 0, 32));
    let skip_at = out.len();
    out.push(insn(JNE_IMM, 0, 0, 0, tgid as i32)); // offset patched below
    add_one(&mut out, map_fd, p.slot);
    if let Some(enter) = p.enter_slot {
        // sys_enter(struct pt_regs *regs, long id): args[1] is the number.
        out.push(insn(LDX_DW, 2, 6, 8, 0));
        out.push(insn(JNE_IMM, 2, 0, 10, NR_IO_URING_ENTER));
        add_one(&mut out, map_fd, enter);
    }
    let exit_at = out.len();
    out[skip_at].off = (exit_at - skip_at - 1) as i16;
    out.push(insn(MOV64_IMM, 0, 0, 0, 0));
    out.push(insn(EXIT, 0, 0, 0, 0));
    out
}

pub(crate) fn sys_bpf(cmd: libc::c_long, attr: &mut [u64; 16]) -> io::Result<i64> {
    let mut tries = 0;
    loop {
        // SAFETY: attr is a zero-padded bpf_attr of 128 bytes, larger than
        // every command used here needs; the kernel reads what it knows.
        let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), 128u32) };
        if r >= 0 {
            return Ok(r);
        }
        let e = io::Error::last_os_error();
        // The verifier answers EAGAIN when it was interrupted or short of
        // memory for a moment (seen while other processes loaded programs).
        tries += 1;
        if e.raw_os_error() != Some(libc::EAGAIN) || tries == 5 {
            return Err(e);
        }
        std::thread::sleep(std::time::Duration::from_millis(2 << tries));
    }
}

pub(crate) fn own_fd(fd: i64) -> OwnedFd {
    // SAFETY: a new descriptor returned by bpf(2), owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

fn open_link(name: &CString, prog: &OwnedFd) -> Result<OwnedFd, String> {
    let mut attr = [0u64; 16];
    attr[0] = name.as_ptr() as u64;
    attr[1] = prog.as_raw_fd() as u64;
    let link = sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &mut attr)
        .map_err(|e| bpf_error(&format!("attaching to {}", name.to_string_lossy()), e))?;
    Ok(own_fd(link))
}

/// Why BPF refused, in words a user can act on.
pub(crate) fn bpf_error(what: &str, e: io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => format!(
            "{what}: no permission ({e}): counting with BPF needs root (CAP_BPF and CAP_PERFMON)"
        ),
        Some(libc::ENOSYS) => format!(
            "{what}: bpf(2) is not available ({e}): kernel without CONFIG_BPF_SYSCALL, or a seccomp filter"
        ),
        Some(libc::ENOENT) => format!("{what}: tracepoint missing, this kernel lacks it ({e})"),
        _ => format!("{what}: {e}"),
    }
}

/// Loads a GPL program of `prog_type`; `what` names it in the error.
pub(crate) fn load_program(prog_type: u32, insns: &[Insn], what: &str) -> Result<OwnedFd, String> {
    let license = c"GPL";
    let mut attr = [0u64; 16];
    attr[0] = u64::from(prog_type) | ((insns.len() as u64) << 32);
    attr[1] = insns.as_ptr() as u64;
    attr[2] = license.as_ptr() as u64;
    Ok(own_fd(
        sys_bpf(BPF_PROG_LOAD, &mut attr).map_err(|e| bpf_error(what, e))?,
    ))
}

/// `struct bpf_prog_info`'s `recursion_misses` (linux/bpf.h, Linux 5.12
/// on): its offset, and the size of the info up to and including it.
const RECURSION_MISSES_AT: usize = 208;
const INFO_WITH_MISSES: usize = RECURSION_MISSES_AT + 8;

/// How often the kernel skipped `prog` instead of running it: a program
/// of a tracepoint's perf event is not run while any other such program,
/// or a `bpf(2)` map lookup from user space, holds the CPU's
/// `bpf_prog_active` (an interrupt's tracepoint hit while one runs); a raw
/// tracepoint program is not run nested into itself. Each skip is a hit
/// the program did not see, which the kernel counts here. An error where
/// the kernel's program info has no such field (before Linux 5.12).
pub(crate) fn recursion_misses(prog: &OwnedFd) -> io::Result<u64> {
    let mut info = [0u64; 32];
    let mut attr = [0u64; 16];
    // bpf_fd, info_len; info.
    attr[0] = prog.as_raw_fd() as u64 | ((std::mem::size_of_val(&info) as u64) << 32);
    attr[1] = info.as_mut_ptr() as u64;
    sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr)?;
    // The kernel writes back how much of the info it filled.
    let filled = (attr[0] >> 32) as usize;
    if filled < INFO_WITH_MISSES {
        return Err(io::Error::other(format!(
            "this kernel's BPF program info ({filled} bytes) does not count skipped runs (recursion_misses, Linux 5.12)"
        )));
    }
    Ok(info[RECURSION_MISSES_AT / 8])
}

/// The sum over `cpus` CPUs of entry `key` of a per-CPU array of u64.
pub(crate) fn percpu_sum(map: &OwnedFd, key: u32, cpus: usize) -> io::Result<u64> {
    let mut values = vec![0u64; cpus];
    let mut attr = [0u64; 16];
    attr[0] = map.as_raw_fd() as u64;
    attr[1] = &key as *const u32 as u64;
    attr[2] = values.as_mut_ptr() as u64;
    sys_bpf(BPF_MAP_LOOKUP_ELEM, &mut attr)?;
    Ok(values.iter().sum())
}

/// The CPUs a per-CPU map has a value for.
pub(crate) fn possible_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| {
            // "0-1", "0,2-7": the highest number is the last CPU.
            s.trim()
                .split([',', '-'])
                .filter_map(|n| n.parse::<usize>().ok())
                .max()
        })
        .map_or(1, |m| m + 1)
}

/// Counters of one thread group on a set of raw tracepoints.
pub struct TgidCounters {
    map: OwnedFd,
    /// The loaded programs, each with the tracepoint it counts
    /// (`system:event`) and its raw tracepoint, to attach again.
    progs: Vec<(&'static str, CString, OwnedFd)>,
    /// Attached programs (closing a link detaches it).
    links: Vec<OwnedFd>,
    slots: u32,
    cpus: usize,
}

/// One tracepoint to count: `system:event` (the raw tracepoint is the
/// event name).
#[derive(Clone, Debug)]
pub struct Counted {
    pub tracepoint: &'static str,
    /// For `raw_syscalls:sys_enter`: count `io_uring_enter` too.
    pub with_io_uring_enter: bool,
}

impl Counted {
    /// One counter per tracepoint; `raw_syscalls:sys_enter` counts
    /// `io_uring_enter` calls too.
    pub fn named(tracepoints: &[&'static str]) -> Vec<Counted> {
        tracepoints
            .iter()
            .map(|&tracepoint| Counted {
                tracepoint,
                with_io_uring_enter: tracepoint == "raw_syscalls:sys_enter",
            })
            .collect()
    }
}

impl TgidCounters {
    /// Attaches a counter to each tracepoint in `points` for thread group
    /// `tgid`; counting starts at once. Returns the counters and, for each
    /// tracepoint that could not be attached, why.
    #[allow(clippy::type_complexity)]
    pub fn attach(
        tgid: u32,
        points: &[Counted],
    ) -> Result<(TgidCounters, Vec<(&'static str, String)>), String> {
        let slots = points.len() as u32 + 1;
        let mut attr = [0u64; 16];
        // map_type, key_size | value_size, max_entries | map_flags.
        attr[0] = u64::from(BPF_MAP_TYPE_PERCPU_ARRAY) | (4u64 << 32);
        attr[1] = 8 | (u64::from(slots) << 32);
        let map = own_fd(sys_bpf(BPF_MAP_CREATE, &mut attr).map_err(|e| bpf_error("BPF map", e))?);
        let mut counters = TgidCounters {
            map,
            progs: Vec::new(),
            links: Vec::new(),
            slots,
            cpus: possible_cpus(),
        };
        let mut failed = Vec::new();
        for (i, c) in points.iter().enumerate() {
            let event = c.tracepoint.split(':').nth(1).unwrap_or(c.tracepoint);
            let p = Program {
                tracepoint: event,
                slot: Slot(i as u32),
                enter_slot: c.with_io_uring_enter.then_some(Slot(points.len() as u32)),
            };
            if let Err(e) = counters.load_and_attach(&p, c.tracepoint, tgid) {
                failed.push((c.tracepoint, e));
            }
        }
        if failed.len() == points.len() && !points.is_empty() {
            return Err(failed.swap_remove(0).1);
        }
        Ok((counters, failed))
    }

    fn load_and_attach(
        &mut self,
        p: &Program,
        counted: &'static str,
        tgid: u32,
    ) -> Result<(), String> {
        let insns = assemble(p, self.map.as_raw_fd(), tgid);
        let prog = load_program(
            BPF_PROG_TYPE_RAW_TRACEPOINT,
            &insns,
            &format!("loading the counter for {}", p.tracepoint),
        )?;
        let name = CString::new(p.tracepoint).map_err(|e| e.to_string())?;
        self.links.push(open_link(&name, &prog)?);
        self.progs.push((counted, name, prog));
        Ok(())
    }

    /// Attaches every program again after [`TgidCounters::detach`] (for
    /// counting in windows); the counts go on from where they were.
    pub fn reattach(&mut self) -> Result<(), String> {
        if !self.links.is_empty() {
            return Ok(());
        }
        for (_, name, prog) in &self.progs {
            self.links.push(open_link(name, prog)?);
        }
        Ok(())
    }

    /// The sum over CPUs of slot `i` (`points[i]`, or `points.len()` for
    /// the io_uring_enter count of `sys_enter`).
    pub fn read(&self, slot: u32) -> io::Result<u64> {
        if slot >= self.slots {
            return Err(io::Error::other(format!("no counter slot {slot}")));
        }
        percpu_sum(&self.map, slot, self.cpus)
    }

    /// Detaches every program; counts stay readable.
    pub fn detach(&mut self) {
        self.links.clear();
    }

    /// For each attached counter (by `system:event`), how often the kernel
    /// skipped its program since it was loaded: a raw tracepoint program is
    /// not run nested into itself on a CPU (the tracepoint hit again from an
    /// interrupt while the program ran), and each skip is counted in the
    /// program's `recursion_misses` ([`recursion_misses`]). A skipped hit
    /// may have been another process's, which the program would have passed
    /// over, so a skip is at most one event this count is short. The
    /// `io_uring_enter` count rides on `raw_syscalls:sys_enter`'s program
    /// and shares its skips. `Err`: why the kernel cannot tell.
    pub fn skipped(&self) -> SkipCounts {
        let mut out = BTreeMap::new();
        for (counted, _, prog) in &self.progs {
            let n = recursion_misses(prog).map_err(|e| {
                format!("reading how often the kernel skipped the counter of {counted}: {e}")
            })?;
            out.insert(*counted, n);
        }
        Ok(out)
    }
}

/// Skips of a set of counters at one moment ([`TgidCounters::skipped`]),
/// or why they cannot be read.
pub type SkipCounts = Result<BTreeMap<&'static str, u64>, String>;

/// The skips between two readings of the same counters, nonzero ones only.
pub fn skips_between(start: &SkipCounts, end: SkipCounts) -> SkipCounts {
    let (start, end) = match (start, end) {
        (Err(e), _) => return Err(e.clone()),
        (_, Err(e)) => return Err(e),
        (Ok(a), Ok(b)) => (a, b),
    };
    Ok(end
        .into_iter()
        .map(|(name, n)| {
            (
                name,
                n.saturating_sub(start.get(name).copied().unwrap_or(0)),
            )
        })
        .filter(|&(_, n)| n > 0)
        .collect())
}

/// Puts skips into a report's fields: the counts by tracepoint, or, where
/// the kernel cannot say, why, under `unavailable` (a count is then not
/// known to be whole).
pub fn report_skips(
    skips: SkipCounts,
    into: &mut BTreeMap<String, u64>,
    unavailable: &mut Vec<ringlab_stats::UnavailableCounter>,
) {
    match skips {
        Ok(m) => {
            for (name, n) in m {
                *into.entry(name.to_string()).or_insert(0) += n;
            }
        }
        Err(reason) => {
            if !unavailable.iter().any(|u| u.counter == SKIPS_COUNTER) {
                unavailable.push(ringlab_stats::UnavailableCounter {
                    counter: SKIPS_COUNTER.into(),
                    reason,
                });
            }
        }
    }
}

/// The name `unavailable` gives the counters' skips when they cannot be
/// read.
pub const SKIPS_COUNTER: &str = "counter runs the kernel skipped";

/// The count of `io_uring_enter` calls, taken by the `sys_enter` program.
pub const IO_URING_ENTER: &str = "syscalls:sys_enter_io_uring_enter";

/// Counters of one thread group on named tracepoints (`system:event`),
/// with what could not be attached and why. `raw_syscalls:sys_enter` also
/// counts `io_uring_enter` calls, as [`IO_URING_ENTER`].
pub struct NamedCounters {
    counters: Option<TgidCounters>,
    /// Slot `i` counts `requested[i]`.
    requested: Vec<&'static str>,
    attached: Vec<&'static str>,
    /// Tracepoints that could not be attached, with the reason.
    pub unavailable: Vec<(String, String)>,
}

impl NamedCounters {
    /// Attaches to each of `tracepoints` for thread group `tgid`; counting
    /// starts at once.
    pub fn attach(tgid: u32, tracepoints: &[&'static str]) -> NamedCounters {
        let points = Counted::named(tracepoints);
        let mut unavailable = Vec::new();
        let mut attached = Vec::new();
        let counters = match TgidCounters::attach(tgid, &points) {
            Ok((c, failed)) => {
                for p in &points {
                    match failed.iter().find(|(name, _)| *name == p.tracepoint) {
                        Some((name, reason)) => {
                            unavailable.push((name.to_string(), reason.clone()))
                        }
                        None => attached.push(p.tracepoint),
                    }
                }
                Some(c)
            }
            Err(reason) => {
                for p in &points {
                    unavailable.push((p.tracepoint.to_string(), reason.clone()));
                }
                None
            }
        };
        NamedCounters {
            counters,
            requested: tracepoints.to_vec(),
            attached,
            unavailable,
        }
    }

    /// Detaches the programs in the background: detaching waits for an RCU
    /// grace period per program (tens of milliseconds each), and the counts
    /// taken so far need no one to wait for that.
    pub fn detach_in_background(&mut self) {
        if let Some(mut c) = self.counters.take() {
            std::thread::spawn(move || c.detach());
        }
    }

    /// How often the kernel skipped each attached counter's program so far
    /// ([`TgidCounters::skipped`]); empty when nothing is attached.
    pub fn skipped(&self) -> SkipCounts {
        match &self.counters {
            Some(c) => c.skipped(),
            None => Ok(BTreeMap::new()),
        }
    }

    /// Every count now, by tracepoint ([`IO_URING_ENTER`] included where
    /// `sys_enter` is counted); a counter that cannot be read is left out.
    pub fn snapshot(&self) -> BTreeMap<&'static str, u64> {
        let mut out = BTreeMap::new();
        let Some(c) = &self.counters else {
            return out;
        };
        for (slot, &name) in (0u32..).zip(&self.requested) {
            if !self.attached.contains(&name) {
                continue;
            }
            if let Ok(v) = c.read(slot) {
                out.insert(name, v);
            }
            if name == "raw_syscalls:sys_enter" {
                if let Ok(v) = c.read(self.requested.len() as u32) {
                    out.insert(IO_URING_ENTER, v);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_land_on_the_exit() {
        for enter in [None, Some(Slot(1))] {
            let p = Program {
                tracepoint: "sys_enter",
                slot: Slot(0),
                enter_slot: enter,
            };
            let code = assemble(&p, 3, 42);
            let exit = code.len() - 2;
            for (i, ins) in code.iter().enumerate() {
                if matches!(ins.code, JNE_IMM | JEQ_IMM) {
                    let to = i as i64 + 1 + i64::from(ins.off);
                    assert!(to <= exit as i64, "insn {i} jumps past the exit to {to}");
                }
            }
            assert_eq!(
                code[3].off as usize,
                exit - 4,
                "the tgid test skips to the exit"
            );
        }
    }

    #[test]
    fn skips_between_keeps_the_nonzero_growth_and_any_error() {
        let at = |v: &[(&'static str, u64)]| -> SkipCounts { Ok(v.iter().copied().collect()) };
        let d = skips_between(
            &at(&[("a:x", 2), ("a:y", 5)]),
            at(&[("a:x", 2), ("a:y", 9), ("a:z", 1)]),
        )
        .unwrap();
        assert_eq!(d.into_iter().collect::<Vec<_>>(), [("a:y", 4), ("a:z", 1)]);
        let broken: SkipCounts = Err("old kernel".into());
        assert_eq!(skips_between(&broken, at(&[])).unwrap_err(), "old kernel");
        assert_eq!(skips_between(&at(&[]), broken).unwrap_err(), "old kernel");
        // Into a report: counts add up by name; an error becomes one entry
        // under unavailable, however often it comes.
        let mut into = BTreeMap::new();
        let mut unavailable = Vec::new();
        report_skips(at(&[("a:y", 4)]), &mut into, &mut unavailable);
        report_skips(at(&[("a:y", 1)]), &mut into, &mut unavailable);
        report_skips(Err("no".into()), &mut into, &mut unavailable);
        report_skips(Err("no".into()), &mut into, &mut unavailable);
        assert_eq!(into.get("a:y"), Some(&5));
        assert_eq!(unavailable.len(), 1);
        assert_eq!(unavailable[0].counter, SKIPS_COUNTER);
    }

    #[test]
    fn counts_own_system_calls_as_root() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped counts_own_system_calls_as_root: needs root");
            return;
        }
        let points = [Counted {
            tracepoint: "raw_syscalls:sys_enter",
            with_io_uring_enter: true,
        }];
        let (mut c, failed) = TgidCounters::attach(std::process::id(), &points).unwrap();
        assert!(failed.is_empty(), "{failed:?}");
        let before = c.read(0).unwrap();
        for _ in 0..1000 {
            std::hint::black_box(rustix::process::getppid());
        }
        let after = c.read(0).unwrap();
        c.detach();
        assert!(after - before >= 1000, "counted {} of 1000", after - before);
        assert_eq!(c.read(1).unwrap(), 0, "no io_uring_enter was made");
        // Its program's skips are readable, by the tracepoint it counts
        // (io_uring_enter shares sys_enter's program, so has no entry).
        let skipped = c.skipped().unwrap();
        assert_eq!(
            skipped.keys().copied().collect::<Vec<_>>(),
            ["raw_syscalls:sys_enter"]
        );
    }
}
