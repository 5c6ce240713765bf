//! Tracepoint events copied out by BPF into a ring buffer map, one
//! (CLOCK_MONOTONIC time, key) record per event kept: what `--evidence
//! stages` joins with ringlab's requests. A copier keeps either one disk's
//! block events (`block_rq_issue`, `block_rq_complete`, by device, keyed
//! by first sector) or this process's io_uring events
//! (`io_uring_submit_req`, `io_uring_complete`, by thread group, keyed by
//! user_data).
//!
//! Why not perf samples of the tracepoints (the way the stages were first
//! read, and still the fallback where BPF does not load):
//!
//! - **Cost, to every process.** A perf event on a tracepoint with a sample
//!   period of 1 writes a sample of every hit, of every process, into the
//!   CPU's ring: the reader filters afterwards. On zram at depth 1 a
//!   stages run made 98.6k IOPS against 140.1k by default (medians of 3;
//!   `perf_swevent_event` 9.7% of the CPU in a profile), and a t/io_uring
//!   beside it spent 7.9 us of CPU a read against 4.3 (docs/benchmarks.md,
//!   2026-12-02); with the copiers, 109.7k against 136.6k. A
//!   copier drops another process's event in a few instructions and writes
//!   16 bytes of its own.
//! - **Loss.** On Linux 6.18 a perf sample of a tracepoint raised on an
//!   idle CPU does not reach the ring, although the event is counted
//!   (`perf stat` counts as many `block_rq_complete` as `block_rq_issue`;
//!   `perf record` got 35-166 of 15k while the CPU the virtio disk
//!   interrupts idled, and every one with a process spinning on it;
//!   ftrace's own buffer got all 15749). The BPF program runs where the
//!   tracepoint is hit, before perf's sample path, and writes to a BPF
//!   ring buffer, which does not go through it.
//!
//! The program is a `BPF_PROG_TYPE_TRACEPOINT` one, attached through a
//! perf event of the tracepoint (`PERF_EVENT_IOC_SET_BPF`): it reads the
//! tracepoint's own record, whose field offsets the format file gives, so
//! no kernel structure layout (BTF) is needed. Assembled by hand as the
//! counters of [`crate::bpf`] are, for the same reason.
//!
//! **Hits the program never saw.** On this project's 6.18 VM the kernel
//! sometimes runs no BPF program at all for a tracepoint hit, and counts
//! no skip: `block_rq_complete` hits raised in a softirq while a thread of
//! PID 1 (the VM's agent) was the current task reached neither this
//! program nor a raw-tracepoint program, while ftrace's buffer and a perf
//! counting event of the tracepoint had every one (2026-12-08: over 30 s
//! of O_DIRECT reads beside a dd writer, ftrace 98887, perf count 98887,
//! both BPF programs 98851; the 36 missing were exactly ftrace's hits in
//! that thread's context). So a disk's copier keeps a perf counting event
//! of its tracepoint on each CPU beside a count of its program's runs;
//! hits counted there and not run are in [`Copier::lost`].

use crate::bpf::{
    add_one, bpf_error, insn, load_program, own_fd, percpu_sum, possible_cpus, recursion_misses,
    sys_bpf, Insn, Slot, ADD64_IMM, BPF_MAP_CREATE, BPF_MAP_TYPE_PERCPU_ARRAY, CALL, EXIT,
    FN_GET_CURRENT_PID_TGID, JEQ_IMM, JNE_IMM, LDX_DW, LDX_W, LD_IMM64, MOV64_IMM, MOV64_REG,
    PSEUDO_MAP_FD, RSH64_IMM, STX_DW,
};
use crate::perf::{event_id, SharedMapping, TracepointCounter};
use perf_event_open_sys::{bindings, ioctls, perf_event_open};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

const BPF_MAP_TYPE_RINGBUF: u32 = 27;
const BPF_PROG_TYPE_TRACEPOINT: u32 = 5;
const FN_KTIME_GET_NS: i32 = 5;
const FN_RINGBUF_OUTPUT: i32 = 130;

/// A record's header: its length, with these two bits (linux/bpf.h).
const RINGBUF_BUSY_BIT: u32 = 1 << 31;
const RINGBUF_DISCARD_BIT: u32 = 1 << 30;
const RINGBUF_HDR: usize = 8;

/// Bytes of the ring (a power of two, pages): 24 bytes an event, so
/// about 700,000 of them, several seconds of the fastest device here for a
/// reader that drains every few milliseconds.
const RING_BYTES: usize = 16 << 20;

/// Which of a tracepoint's events a copier keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Those of one disk (the record's `dev` field, as the block
    /// tracepoints give it: `MAJOR << 20 | MINOR`). Block completions run
    /// in interrupts, on behalf of anyone, so the disk, not the process,
    /// says whose they are.
    Dev(u32),
    /// Those raised by a thread of this thread group: the io_uring events
    /// of its rings, raised by its own threads, io-wq workers and SQPOLL
    /// poller included (all threads of the process).
    Tgid(u32),
}

/// The copier's per-CPU counters: records the ring had no room for, and
/// (a disk's copier only) runs of the program, every hit it saw.
const RING_FULL: Slot = Slot(0);
const RUNS: Slot = Slot(1);

/// The program: `[runs += 1;] if (KEEP fails) return 1; out =
/// {ktime_get_ns(), rec->KEY}; if (bpf_ringbuf_output(ring, &out, 16, 0))
/// lost += 1; return 1`. `dev_at` is read for [`Keep::Dev`] only, and
/// runs are counted for it only (see [`Copier::lost`]).
///
/// Why 1: a tracepoint's BPF programs run before its perf events, and a
/// 0 from any of them drops the hit for every perf event of that
/// tracepoint on the machine (`perf_trace_run_bpf_submit`): a `perf
/// record` of it, or another ringlab's fallback to perf samples, would
/// get nothing while this copier is attached (seen: a stage run that fell
/// back to perf joined 0 of 9616 requests while another test's copiers
/// were attached). With 1 the hit goes on to the CPU's perf events: a
/// disk copier's counting events (one count each, no sample), never the
/// event the program hangs on, which is never enabled (see
/// [`Copier::event_fd`]).
fn assemble(ring_fd: i32, lost_fd: i32, keep: Keep, dev_at: i16, key_at: i16) -> Vec<Insn> {
    let mut out = Vec::with_capacity(32);
    // r6 = ctx: the tracepoint's record (its first 8 bytes are not
    // readable; the fields after them are).
    out.push(insn(MOV64_REG, 6, 1, 0, 0));
    if let Keep::Dev(_) = keep {
        add_one(&mut out, lost_fd, RUNS);
    }
    let skip_keep = out.len()
        + match keep {
            Keep::Dev(_) => 1,
            Keep::Tgid(_) => 2,
        };
    match keep {
        Keep::Dev(dev) => {
            out.push(insn(LDX_W, 1, 6, dev_at, 0));
            out.push(insn(JNE_IMM, 1, 0, 0, dev as i32));
        }
        Keep::Tgid(tgid) => {
            out.push(insn(CALL, 0, 0, 0, FN_GET_CURRENT_PID_TGID));
            out.push(insn(RSH64_IMM, 0, 0, 0, 32));
            out.push(insn(JNE_IMM, 0, 0, 0, tgid as i32));
        }
    }
    out.push(insn(CALL, 0, 0, 0, FN_KTIME_GET_NS));
    out.push(insn(STX_DW, 10, 0, -16, 0));
    out.push(insn(LDX_DW, 1, 6, key_at, 0));
    out.push(insn(STX_DW, 10, 1, -8, 0));
    out.push(insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, ring_fd));
    out.push(insn(0, 0, 0, 0, 0));
    out.push(insn(MOV64_REG, 2, 10, 0, 0));
    out.push(insn(ADD64_IMM, 2, 0, 0, -16));
    out.push(insn(MOV64_IMM, 3, 0, 0, 16));
    out.push(insn(MOV64_IMM, 4, 0, 0, 0));
    out.push(insn(CALL, 0, 0, 0, FN_RINGBUF_OUTPUT));
    let skip_ok = out.len();
    out.push(insn(JEQ_IMM, 0, 0, 0, 0));
    add_one(&mut out, lost_fd, RING_FULL);
    let exit_at = out.len();
    out[skip_keep].off = (exit_at - skip_keep - 1) as i16;
    out[skip_ok].off = (exit_at - skip_ok - 1) as i16;
    out.push(insn(MOV64_IMM, 0, 0, 0, 1));
    out.push(insn(EXIT, 0, 0, 0, 0));
    out
}

/// Attaches `prog` (a `BPF_PROG_TYPE_TRACEPOINT` program) to `tracepoint`
/// through one perf event of it, on any CPU: a program attached to it runs
/// on every CPU's hits (the program list is the tracepoint's), so one
/// attachment sees each hit once. The event is created disabled; closing
/// it detaches the program. `what` names the program in errors.
fn attach_to_tracepoint(tracepoint: &str, prog: &OwnedFd, what: &str) -> Result<OwnedFd, String> {
    let mut pattr = bindings::perf_event_attr {
        type_: bindings::PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<bindings::perf_event_attr>() as u32,
        config: event_id(tracepoint)?,
        ..Default::default()
    };
    pattr.__bindgen_anon_1.sample_period = 1;
    pattr.set_disabled(1);
    let cpu = crate::perf::online_cpus().first().copied().unwrap_or(0);
    // SAFETY: pattr is a fully initialised perf_event_attr.
    let fd = unsafe {
        perf_event_open(
            &mut pattr,
            -1,
            cpu as i32,
            -1,
            bindings::PERF_FLAG_FD_CLOEXEC as _,
        )
    };
    if fd < 0 {
        return Err(format!("{tracepoint}: {}", io::Error::last_os_error()));
    }
    // SAFETY: a new descriptor owned by nobody else.
    let event = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: the perf event and program descriptors are open.
    if unsafe { ioctls::SET_BPF(event.as_raw_fd(), prog.as_raw_fd() as u32) } < 0 {
        return Err(bpf_error(
            &format!("attaching {what} to {tracepoint}"),
            io::Error::last_os_error(),
        ));
    }
    Ok(event)
}

/// Events a copier lost: those the ring had no room for, the runs the
/// kernel skipped and counted, and hits the tracepoint's perf count has
/// that the program never ran for (`hits` over `runs`, both since the
/// counting started; more runs than hits, where another tool's program
/// on the tracepoint held hits back from perf, count nothing).
fn lost_events(ring_full: u64, skipped: u64, hits: u64, runs: u64) -> u64 {
    ring_full + skipped + hits.saturating_sub(runs)
}

/// The running copy of one tracepoint's kept events.
pub struct Copier {
    /// The perf event the program hangs on (closing it detaches it).
    event: OwnedFd,
    prog: OwnedFd,
    _ring: OwnedFd,
    lost_map: OwnedFd,
    /// A disk copier's count of its tracepoint's hits on every CPU (every
    /// hit whose BPF programs all let it through, run or not), and its
    /// runs when that count started.
    hits: Option<TracepointCounter>,
    runs_at_start: u64,
    /// The consumer page (read-write) and the producer page with the data
    /// mapped twice after it (read-only), as the kernel lays them out.
    consumer: SharedMapping,
    producer: SharedMapping,
    page: usize,
}

impl Copier {
    /// The copier of one disk's block completions (`block_rq_complete`,
    /// keyed by first sector).
    pub fn block_completions(dev: u32) -> Result<Copier, String> {
        Copier::open("block:block_rq_complete", Keep::Dev(dev), "sector")
    }

    /// Loads and attaches the program that copies `tracepoint`'s events
    /// that `keep` keeps, each as its time and its record's `key_field`
    /// (a u64); see [`Self::event_fd`] for when it copies.
    pub fn open(tracepoint: &'static str, keep: Keep, key_field: &str) -> Result<Copier, String> {
        let offset = |field: &str| -> Result<i16, String> {
            let at = crate::perf::field_offset(tracepoint, field)?;
            i16::try_from(at).map_err(|_| format!("{tracepoint}: {field} at offset {at}"))
        };
        let dev_at = match keep {
            Keep::Dev(_) => offset("dev")?,
            Keep::Tgid(_) => 0,
        };
        let key_at = offset(key_field)?;
        let mut attr = [0u64; 16];
        attr[0] = u64::from(BPF_MAP_TYPE_RINGBUF);
        attr[1] = (RING_BYTES as u64) << 32;
        let ring = own_fd(
            sys_bpf(BPF_MAP_CREATE, &mut attr).map_err(|e| bpf_error("BPF ring buffer", e))?,
        );
        let mut attr = [0u64; 16];
        attr[0] = u64::from(BPF_MAP_TYPE_PERCPU_ARRAY) | (4u64 << 32);
        attr[1] = 8 | (2u64 << 32);
        let lost_map =
            own_fd(sys_bpf(BPF_MAP_CREATE, &mut attr).map_err(|e| bpf_error("BPF map", e))?);
        let insns = assemble(ring.as_raw_fd(), lost_map.as_raw_fd(), keep, dev_at, key_at);
        let prog = load_program(
            BPF_PROG_TYPE_TRACEPOINT,
            &insns,
            &format!("loading the copier of {tracepoint}"),
        )?;
        let event = attach_to_tracepoint(tracepoint, &prog, "the copier")?;
        // Counting starts after the program is attached, and the runs so
        // far are read after that: a hit in between is counted by both
        // or, at worst, as lost without being lost.
        let (hits, runs_at_start) = match keep {
            Keep::Dev(_) => {
                let hits = TracepointCounter::open(tracepoint, true)
                    .map_err(|e| format!("counting {tracepoint}: {e}"))?;
                hits.enable();
                let runs = percpu_sum(&lost_map, RUNS.0, possible_cpus())
                    .map_err(|e| bpf_error("reading the copier's run count", e))?;
                (Some(hits), runs)
            }
            Keep::Tgid(_) => (None, 0),
        };
        let page = crate::perf::page_size();
        // A BPF ring buffer as the kernel lays it out: the consumer page
        // read-write at 0, the producer page and twice the data read-only
        // after it.
        let map = |len, writable, offset| {
            SharedMapping::new(ring.as_raw_fd(), len, writable, offset)
                .map_err(|e| format!("mapping the BPF ring buffer: {e}"))
        };
        let consumer = map(page, true, 0)?;
        let producer = map(page + 2 * RING_BYTES, false, page)?;
        Ok(Copier {
            event,
            prog,
            _ring: ring,
            lost_map,
            hits,
            runs_at_start,
            consumer,
            producer,
            page,
        })
    }

    /// The perf event the program hangs on, created disabled and never
    /// to be enabled by the tracer: the program runs from its attachment
    /// until the descriptors close, enabled or not (the kernel runs a
    /// tracepoint's programs once its perf probe is registered; on 6.18
    /// the copier recorded every read of the test in tests/kstat_runs.rs
    /// with its event never enabled), and an enabled event would take a
    /// sample of every hit on its CPU, to no buffer, since the program
    /// lets hits through (see `assemble`). The stage join takes only
    /// events that fall inside their own request's time, so one copied
    /// outside the run is never used.
    pub fn event_fd(&self) -> i32 {
        self.event.as_raw_fd()
    }

    /// Hands every event copied so far to `f(time_ns, key)`. Returns true
    /// where it stopped at a record a CPU has reserved and not yet written
    /// (the records after it wait for the next drain).
    pub fn drain(&mut self, mut f: impl FnMut(u64, u64)) -> bool {
        let cons = self.consumer.ptr().cast::<u64>();
        let prod = self.producer.ptr().cast::<u64>();
        // SAFETY: the data area follows the producer page.
        let data = unsafe { self.producer.ptr().add(self.page) };
        let mask = RING_BYTES as u64 - 1;
        // SAFETY: reading the positions the kernel and this reader keep in
        // the mapped pages; the fences order them against the records.
        let mut at = unsafe { std::ptr::read_volatile(cons) };
        loop {
            let head = unsafe { std::ptr::read_volatile(prod) };
            fence(Ordering::Acquire);
            if at >= head {
                break;
            }
            while at < head {
                // SAFETY: `at & mask` is inside the data area; the data is
                // mapped twice, so a record never runs past the mapping.
                let rec = unsafe { data.add((at & mask) as usize) };
                // SAFETY: an aligned header the producer published.
                let len = unsafe { std::ptr::read_volatile(rec.cast::<u32>()) };
                fence(Ordering::Acquire);
                if len & RINGBUF_BUSY_BIT != 0 {
                    // Reserved, not yet written: the next drain takes it.
                    // SAFETY: as above.
                    unsafe { std::ptr::write_volatile(cons, at) };
                    return true;
                }
                let body = (len & !(RINGBUF_BUSY_BIT | RINGBUF_DISCARD_BIT)) as usize;
                if len & RINGBUF_DISCARD_BIT == 0 && body >= 16 {
                    // SAFETY: 16 bytes of the record's body, 8-aligned.
                    let (t, s) = unsafe {
                        (
                            std::ptr::read_volatile(rec.add(RINGBUF_HDR).cast::<u64>()),
                            std::ptr::read_volatile(rec.add(RINGBUF_HDR + 8).cast::<u64>()),
                        )
                    };
                    f(t, s);
                }
                at += ((body + RINGBUF_HDR + 7) & !7) as u64;
                fence(Ordering::Release);
                // SAFETY: telling the kernel the space is free again.
                unsafe { std::ptr::write_volatile(cons, at) };
            }
        }
        false
    }

    /// Events not copied: those the ring had no room for, those the
    /// kernel skipped the program for and counted (see
    /// [`crate::bpf::recursion_misses`]: an event raised, say by an
    /// interrupt, while another BPF program, or a map lookup of `bpf(2)`,
    /// held that CPU), and, for a disk's copier, hits of the tracepoint
    /// the program never ran for, which the kernel does not count (see
    /// the module's notes): the perf count of hits less the program's
    /// runs. A skipped run or an unseen hit may have been an event the
    /// program would have passed over (another disk's, another
    /// process's): the count is an upper bound.
    pub fn lost(&self) -> io::Result<u64> {
        let cpus = possible_cpus();
        let ring_full = percpu_sum(&self.lost_map, RING_FULL.0, cpus)?;
        let skipped = recursion_misses(&self.prog)?;
        let Some(counter) = &self.hits else {
            return Ok(lost_events(ring_full, skipped, 0, 0));
        };
        // The runs first: a hit between the two reads is then counted as
        // lost, never a lost one as run (the count stays an upper bound).
        let runs = percpu_sum(&self.lost_map, RUNS.0, cpus)?.saturating_sub(self.runs_at_start);
        let hits = counter.read()?;
        Ok(lost_events(ring_full, skipped, hits, runs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::{EXIT, FN_GET_CURRENT_PID_TGID, RSH64_IMM};

    /// The kernel's count of the runs it skipped is read (and so counted
    /// in [`Copier::lost`]), in the copier's own situation: an
    /// interrupt hits a tracepoint while another BPF program runs on that
    /// CPU. A slow program (thousands of clock reads) on this process's
    /// `getppid` calls holds the CPU for over 100 ms in all; the timer
    /// interrupts that come meanwhile hit `timer:hrtimer_expire_entry`,
    /// whose program the kernel skips and counts.
    #[test]
    fn runs_the_kernel_skipped_are_counted() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped runs_the_kernel_skipped_are_counted: needs root");
            return;
        }
        let mut slow = vec![
            insn(CALL, 0, 0, 0, FN_GET_CURRENT_PID_TGID),
            insn(RSH64_IMM, 0, 0, 0, 32),
            insn(JNE_IMM, 0, 0, 4000, std::process::id() as i32),
        ];
        slow.extend((0..4000).map(|_| insn(CALL, 0, 0, 0, FN_KTIME_GET_NS)));
        slow.push(insn(MOV64_IMM, 0, 0, 0, 0));
        slow.push(insn(EXIT, 0, 0, 0, 0));
        let idle = [insn(MOV64_IMM, 0, 0, 0, 0), insn(EXIT, 0, 0, 0, 0)];
        let slow = load_program(BPF_PROG_TYPE_TRACEPOINT, &slow, "slow").unwrap();
        let skipped = load_program(BPF_PROG_TYPE_TRACEPOINT, &idle, "skipped").unwrap();
        assert_eq!(recursion_misses(&skipped).unwrap(), 0, "a new program");
        let inner =
            attach_to_tracepoint("timer:hrtimer_expire_entry", &skipped, "the skipped").unwrap();
        let outer = attach_to_tracepoint("syscalls:sys_enter_getppid", &slow, "the slow").unwrap();
        for fd in [&inner, &outer] {
            // SAFETY: an open perf event descriptor.
            assert_eq!(unsafe { ioctls::ENABLE(fd.as_raw_fd(), 0) }, 0);
        }
        let start = std::time::Instant::now();
        let mut calls = 0;
        while start.elapsed() < std::time::Duration::from_millis(150) {
            std::hint::black_box(rustix::process::getppid());
            calls += 1;
        }
        drop(outer);
        let n = recursion_misses(&skipped).unwrap();
        assert!(
            n >= 1,
            "{calls} slow runs over 150 ms, and no timer interrupt's run skipped"
        );
        assert_eq!(recursion_misses(&slow).unwrap(), 0, "the slow program ran");
    }

    #[test]
    fn every_skip_lands_on_the_exit() {
        for (keep, runs_counted) in [(Keep::Dev(0x0fe0_0000), true), (Keep::Tgid(4242), false)] {
            let code = assemble(3, 4, keep, 8, 16);
            let exit = code.len() - 2;
            let mut jumps: Vec<usize> = (0..code.len())
                .filter(|&i| matches!(code[i].code, JNE_IMM | JEQ_IMM))
                .collect();
            if runs_counted {
                // The run count's add comes first, and its lookup's test
                // skips only the add: it falls through to the device test.
                let add = jumps.remove(0);
                assert_eq!(code[add].code, JEQ_IMM);
                assert_eq!(add as i64 + 1 + i64::from(code[add].off), add as i64 + 4);
                assert_eq!(code[add + 4].code, LDX_W, "the device field's load");
            }
            // The keep test, the ring's answer, and the lookup's test in
            // the lost counter's add.
            assert_eq!(jumps.len(), 3, "{keep:?}");
            for i in jumps {
                let to = i as i64 + 1 + i64::from(code[i].off);
                assert_eq!(
                    to, exit as i64,
                    "{keep:?}: insn {i} jumps to {to}, not the exit"
                );
            }
        }
        // The thread-group test compares the upper half of
        // bpf_get_current_pid_tgid() with this tgid.
        let code = assemble(3, 4, Keep::Tgid(4242), 8, 16);
        assert_eq!(code[1].code, CALL);
        assert_eq!(code[1].imm, FN_GET_CURRENT_PID_TGID);
        assert_eq!((code[2].code, code[2].imm), (RSH64_IMM, 32));
        assert_eq!((code[3].code, code[3].imm), (JNE_IMM, 4242));
    }

    #[test]
    fn hits_the_program_never_ran_for_are_lost() {
        // Nothing unseen: what the ring and the kernel counted.
        assert_eq!(lost_events(2, 3, 100, 100), 5);
        // 36 hits counted by perf that the program never ran for.
        assert_eq!(lost_events(0, 0, 98887, 98851), 36);
        // More runs than perf hits (another program held some back from
        // perf): nothing is made up.
        assert_eq!(lost_events(1, 0, 90, 100), 1);
    }
}
