//! Where the time of each request goes (`--evidence stages`): the kernel's
//! own timestamps of every request at `io_uring_submit_req`, the block
//! layer's `block_rq_issue` and `block_rq_complete` (where the device has a
//! request queue; zram has none) and `io_uring_complete`, joined with
//! ringlab's own submission and reap times, give one latency per stage and
//! request, kept in an HDR histogram per stage.
//!
//! Each tracepoint's events are copied by a BPF program
//! ([`crate::bpf_events`]) that keeps this process's io_uring events and
//! the target disk's block events, timestamped with CLOCK_MONOTONIC, the
//! clock ringlab's `Instant` reads, into a BPF ring buffer that a thread
//! of its own drains every few milliseconds; on a target with block
//! requests, only `block_rq_complete` is copied and the others are sampled
//! by perf (see [`Tracer::open`] why). Where a program does not
//! load, that tracepoint is sampled by `perf_event_open` on every CPU
//! instead (one ring buffer per CPU, the same clock): perf writes a sample
//! of every process's events and loses those raised on an idle CPU, so
//! the run says which tracepoints fell back. Each event is copied into a
//! buffer: this costs far more than counting, which is why it is not on by
//! default.

use crate::bpf_events::{Copier, Keep};
use crate::perf::{event_id, field_offset, online_cpus, page_size, SharedMapping};
use hdrhistogram::Histogram;
use perf_event_open_sys::{bindings, ioctls, perf_event_open};
use ringlab_stats::{StageLatency, StageReport};
use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The tracepoints read, in [`Kind`] order.
const TRACEPOINTS: [&str; 4] = [
    "io_uring:io_uring_submit_req",
    "io_uring:io_uring_complete",
    "block:block_rq_issue",
    "block:block_rq_complete",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Submit = 0,
    Complete = 1,
    BlockIssue = 2,
    BlockComplete = 3,
}

const KINDS: [Kind; 4] = [
    Kind::Submit,
    Kind::Complete,
    Kind::BlockIssue,
    Kind::BlockComplete,
];

/// One kernel event, as much of it as the join needs.
#[derive(Clone, Copy, Debug)]
struct Event {
    kind: Kind,
    time_ns: u64,
    /// user_data (io_uring events) or sector (block events).
    key: u64,
}

/// At most this many events are kept (32 bytes each): about 13 s of a
/// 150k IOPS run. Past it, events are dropped and counted.
const MAX_EVENTS: usize = 8_000_000;

/// Pages of each ring buffer (a power of two), 4 MiB: about 50,000
/// events, 100 ms of a 150k IOPS run on one CPU, for a reader thread that
/// may wait for a CPU on a busy machine.
const RING_PAGES: usize = 1024;

/// One request as ringlab saw it, in CLOCK_MONOTONIC nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub user_data: u64,
    /// Its first sector on the disk, where known (block stages need it).
    pub sector: Option<u64>,
    /// When ringlab issued it (queued it for the next submission).
    pub start_ns: u64,
    /// When ringlab reaped its completion.
    pub reap_ns: u64,
}

struct Ring {
    kind: Kind,
    /// Declared before `fd`, so unmapped before the event is closed.
    map: SharedMapping,
    fd: OwnedFd,
    /// Offset of the key (user_data or sector) in the raw record.
    key_at: usize,
    /// Offset of the device number (block events), to keep one disk's.
    dev_at: Option<usize>,
}

fn open_ring(kind: Kind, cpu: u32) -> Result<Ring, String> {
    let name = TRACEPOINTS[kind as usize];
    let mut attr = bindings::perf_event_attr {
        type_: bindings::PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<bindings::perf_event_attr>() as u32,
        config: event_id(name)?,
        sample_type: (bindings::PERF_SAMPLE_TID
            | bindings::PERF_SAMPLE_TIME
            | bindings::PERF_SAMPLE_RAW) as u64,
        clockid: libc::CLOCK_MONOTONIC,
        ..Default::default()
    };
    attr.__bindgen_anon_1.sample_period = 1;
    attr.set_use_clockid(1);
    attr.set_disabled(1);
    // SAFETY: attr is a fully initialised perf_event_attr.
    let fd = unsafe {
        perf_event_open(
            &mut attr,
            -1,
            cpu as i32,
            -1,
            bindings::PERF_FLAG_FD_CLOEXEC as _,
        )
    };
    if fd < 0 {
        return Err(format!(
            "{name} on cpu {cpu}: {}",
            io::Error::last_os_error()
        ));
    }
    // SAFETY: a new descriptor owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // A perf event's ring buffer as the man page lays it out: the
    // header page, then the data.
    let map = SharedMapping::new(fd.as_raw_fd(), page_size() * (RING_PAGES + 1), true, 0).map_err(
        |e| format!("mapping the ring buffer of {name}: {e} (raise kernel.perf_event_mlock_kb)"),
    )?;
    let (key_field, dev_at) = match kind {
        Kind::Submit | Kind::Complete => ("user_data", None),
        Kind::BlockIssue | Kind::BlockComplete => ("sector", Some(field_offset(name, "dev")?)),
    };
    Ok(Ring {
        kind,
        map,
        fd,
        key_at: field_offset(name, key_field)?,
        dev_at,
    })
}

/// What the reader thread collected.
#[derive(Default)]
struct Collected {
    events: Vec<Event>,
    lost: u64,
    dropped: u64,
}

/// Filters of the reader: this process's io_uring events, one disk's
/// block events.
#[derive(Clone, Copy)]
struct Filter {
    tgid: u32,
    /// The disk's device number as the block tracepoints give it
    /// (`MAJOR << 20 | MINOR`).
    dev: Option<u32>,
}

impl Ring {
    /// Moves every record written so far into `out`. Records are read in
    /// place; only one that wraps past the end of the data area is copied
    /// (records are 8-byte aligned, so a header never wraps).
    fn drain(&mut self, filter: Filter, out: &mut Collected, wrapped: &mut Vec<u8>) {
        let page = page_size();
        // SAFETY: the first page is the perf_event_mmap_page header.
        let meta = self.map.ptr().cast::<bindings::perf_event_mmap_page>();
        // SAFETY: reading the header the kernel updates; the acquire fence
        // orders the data reads after the head read.
        let head = unsafe { std::ptr::read_volatile(&(*meta).data_head) };
        std::sync::atomic::fence(Ordering::Acquire);
        // SAFETY: as above.
        let mut tail = unsafe { (*meta).data_tail };
        let size = RING_PAGES * page;
        // SAFETY: the data area follows the header page.
        let data = unsafe { self.map.ptr().add(page) };
        // Bytes `at..at + len` of the data area, all between tail and head,
        // which the kernel does not write until data_tail moves past them.
        let bytes = |at: usize, len: usize| -> &[u8] {
            debug_assert!(at + len <= size);
            // SAFETY: in bounds, and stable as said above.
            unsafe { std::slice::from_raw_parts(data.add(at), len) }
        };
        while tail < head {
            let at = (tail % size as u64) as usize;
            let hdr = bytes(at, 8);
            let rtype = u32::from_ne_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
            let rsize = u16::from_ne_bytes([hdr[6], hdr[7]]) as usize;
            if rsize < 8 || (tail + rsize as u64) > head {
                break;
            }
            tail += rsize as u64;
            // `at` is 8-aligned and below `size` (a multiple of 8), so the
            // record's body starts at most at the end of the data area.
            let (from, to) = (at + 8, at + rsize);
            let record: &[u8] = if to <= size {
                bytes(from, to - from)
            } else {
                wrapped.clear();
                wrapped.extend_from_slice(bytes(from, size - from));
                wrapped.extend_from_slice(bytes(0, to - size));
                wrapped
            };
            match rtype {
                bindings::PERF_RECORD_SAMPLE => self.parse_sample(record, filter, out),
                bindings::PERF_RECORD_LOST if record.len() >= 16 => {
                    out.lost += u64::from_ne_bytes(record[8..16].try_into().unwrap_or([0; 8]));
                }
                _ => {}
            }
        }
        std::sync::atomic::fence(Ordering::Release);
        // SAFETY: telling the kernel the space is free again.
        unsafe { std::ptr::write_volatile(&mut (*meta).data_tail, tail) };
    }

    /// A sample: pid, tid (u32 each), time (u64), raw size (u32), raw.
    fn parse_sample(&self, r: &[u8], filter: Filter, out: &mut Collected) {
        let u32_at = |i: usize| {
            r.get(i..i + 4)
                .map(|b| u32::from_ne_bytes(b.try_into().unwrap_or([0; 4])))
        };
        let u64_at = |i: usize| {
            r.get(i..i + 8)
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
        };
        let (Some(pid), Some(time_ns)) = (u32_at(0), u64_at(8)) else {
            return;
        };
        let raw = 20;
        let Some(key) = u64_at(raw + self.key_at) else {
            return;
        };
        let keep = match self.dev_at {
            // Block completions run in interrupts, on behalf of anyone:
            // kept by disk, and joined by sector.
            Some(dev_at) => filter.dev.is_some() && u32_at(raw + dev_at) == filter.dev,
            None => pid == filter.tgid,
        };
        if !keep {
            return;
        }
        out.push(Event {
            kind: self.kind,
            time_ns,
            key,
        });
    }
}

impl Collected {
    /// Keeps `e`, or counts it dropped past [`MAX_EVENTS`].
    fn push(&mut self, e: Event) {
        if self.events.len() >= MAX_EVENTS {
            self.dropped += 1;
        } else {
            self.events.push(e);
        }
    }
}

/// What the reader thread hands back when it ends: the rings and the
/// copiers (closed only after it stopped reading them) and the events.
type ReaderOutcome = (Vec<Ring>, Vec<(Kind, Copier)>, Collected);

/// The running tracer: per-CPU rings and the thread that reads them.
pub struct Tracer {
    stop: Arc<AtomicBool>,
    /// Set by [`Tracer::enable`]: the copiers copy from their attachment
    /// on (see `Copier::event_fd`), and what they copy before the
    /// measured run (a `--ramp-time`, say) is drained and dropped, so it
    /// neither fills [`MAX_EVENTS`] nor holds memory.
    armed: Arc<AtomicBool>,
    /// CLOCK_MONOTONIC ns of [`Tracer::enable`]: requests issued before it
    /// (in the ramp) are not the measured run's, and are left out of the
    /// join and its count.
    armed_at: std::sync::atomic::AtomicU64,
    reader: Option<JoinHandle<ReaderOutcome>>,
    fds: Vec<i32>,
    pub block_traced: bool,
    /// The tracepoints that could not be copied by BPF, with why: perf
    /// samples them instead, which writes a sample of every process's
    /// events (a cost to all of them) and loses those raised on an idle
    /// CPU (the disk's completions, mostly).
    pub by_perf: Vec<(&'static str, String)>,
}

/// Whether a disk has a request queue (blk-mq, `/sys/block/DISK/mq`),
/// and so raises `block_rq_issue` and `block_rq_complete`; a bio-based
/// device (zram, bio-based device-mapper) raises neither.
pub fn has_request_queue(disk: &str) -> bool {
    std::path::Path::new(&format!("/sys/block/{disk}/mq")).exists()
}

/// A disk's device number as block tracepoints give it, from its
/// `/sys/block/DISK/dev` ("253:0").
pub fn trace_dev_of_disk(disk: &str) -> Option<u32> {
    let text = fs::read_to_string(format!("/sys/block/{disk}/dev")).ok()?;
    let (major, minor) = text.trim().split_once(':')?;
    Some((major.parse::<u32>().ok()? << 20) | minor.parse::<u32>().ok()?)
}

impl Tracer {
    /// Opens the rings on every CPU (disabled). `disk` is the target's
    /// disk, whose block requests are joined to ringlab's by sector.
    pub fn open(disk: Option<&str>) -> Result<Tracer, String> {
        let filter = Filter {
            tgid: std::process::id(),
            // Block events come from a request queue (blk-mq); a
            // bio-based device (zram) raises none, and its target is
            // traced as one without a disk.
            dev: disk
                .filter(|d| has_request_queue(d))
                .and_then(trace_dev_of_disk),
        };
        let block_traced = filter.dev.is_some();
        let mut copiers = Vec::new();
        let mut by_perf = Vec::new();
        let mut rings = Vec::new();
        for kind in KINDS {
            // What copies each tracepoint: a BPF copier with what it
            // keeps and its key, or perf samples (`None`). Where the disk's
            // completions are copied, the events raised in the submitting
            // thread are sampled by perf, not copied: a tracepoint program
            // (a copier) holds the CPU's BPF slot while it runs, and the
            // disk's completion interrupt that comes meanwhile has its
            // copier skipped (`recursion_misses`). Copying all four lost 357
            // of 28108 completions at depth 4 on the virtio disk; with perf
            // for the other three, at most 5 in 10,000 (README, "where the
            // time goes"). perf costs more per event, but a disk request
            // takes a hundred microseconds.
            let copy = match (kind, filter.dev) {
                (Kind::BlockIssue | Kind::BlockComplete, None) => continue,
                (Kind::BlockComplete, Some(dev)) => Some((Keep::Dev(dev), "sector")),
                (Kind::BlockIssue | Kind::Submit | Kind::Complete, Some(_)) => None,
                (Kind::Submit | Kind::Complete, None) => {
                    Some((Keep::Tgid(filter.tgid), "user_data"))
                }
            };
            let name = TRACEPOINTS[kind as usize];
            if let Some((keep, key)) = copy {
                match Copier::open(name, keep, key) {
                    Ok(c) => {
                        copiers.push((kind, c));
                        continue;
                    }
                    Err(why) => by_perf.push((name, why)),
                }
            }
            for cpu in online_cpus() {
                rings.push(open_ring(kind, cpu)?);
            }
        }
        // The copiers' perf events stay disabled (see Copier::event_fd);
        // the reader thread keeps them open until it is joined.
        let fds: Vec<i32> = rings.iter().map(|r| r.fd.as_raw_fd()).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let armed = Arc::new(AtomicBool::new(false));
        let armed2 = armed.clone();
        let reader = std::thread::Builder::new()
            .name("ringlab-stages".into())
            .spawn(move || {
                let mut got = Collected::default();
                let mut wrapped = Vec::with_capacity(256);
                loop {
                    let last = stop2.load(Ordering::Acquire);
                    for r in &mut rings {
                        r.drain(filter, &mut got, &mut wrapped);
                    }
                    let keep = armed2.load(Ordering::Acquire);
                    for (kind, c) in &mut copiers {
                        let kind = *kind;
                        let mut push = |time_ns, key| {
                            if keep {
                                got.push(Event { kind, time_ns, key })
                            }
                        };
                        let busy = c.drain(&mut push);
                        // The last drain does not leave the records behind
                        // one a CPU is still writing (it is written within
                        // microseconds): they would be lost uncounted.
                        if last && busy {
                            let until = std::time::Instant::now() + Duration::from_millis(20);
                            while std::time::Instant::now() < until {
                                std::thread::yield_now();
                                if !c.drain(&mut push) {
                                    break;
                                }
                            }
                        }
                        if last {
                            // Unreadable, the count is left out: what the
                            // ring missed shows anyway, as requests
                            // without their events in the report.
                            got.lost += c.lost().unwrap_or(0);
                        }
                    }
                    if last {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                (rings, copiers, got)
            })
            .map_err(|e| format!("starting the stage reader thread: {e}"))?;
        Ok(Tracer {
            stop,
            armed,
            armed_at: std::sync::atomic::AtomicU64::new(0),
            reader: Some(reader),
            fds,
            block_traced,
            by_perf,
        })
    }

    fn each(&self, f: unsafe fn(libc::c_int, libc::c_uint) -> libc::c_int) {
        for &fd in &self.fds {
            // SAFETY: fd is a perf event descriptor the rings own, alive
            // until the reader is joined in finish.
            unsafe { f(fd, 0) };
        }
    }

    pub fn enable(&self) {
        self.armed_at
            .store(ringlab_core::clock::mono_ns(), Ordering::Relaxed);
        self.each(ioctls::ENABLE);
        self.armed.store(true, Ordering::Release);
    }

    /// Stops tracing and joins the kernel's events with `requests` (reaped
    /// in order).
    pub fn finish(mut self, requests: &[Request], truncated: bool) -> StageReport {
        self.each(ioctls::DISABLE);
        self.stop.store(true, Ordering::Release);
        let (rings, copiers, got) = match self.reader.take().map(|h| h.join()) {
            Some(Ok(x)) => x,
            _ => (Vec::new(), Vec::new(), Collected::default()),
        };
        drop(rings);
        drop(copiers);
        let from = self.armed_at.load(Ordering::Relaxed);
        let measured: Vec<Request> = requests
            .iter()
            .filter(|r| r.start_ns >= from)
            .copied()
            .collect();
        let mut report = join(&measured, &got.events, self.block_traced);
        report.events_lost = got.lost + got.dropped;
        report.requests_not_logged = truncated;
        report
    }
}

/// Per stage, its name and a histogram of nanoseconds.
struct Stages {
    names: Vec<&'static str>,
    hist: Vec<Histogram<u64>>,
}

impl Stages {
    fn new(names: &[&'static str]) -> Stages {
        Stages {
            names: names.to_vec(),
            hist: names
                .iter()
                .map(|_| Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds"))
                .collect(),
        }
    }
    fn record(&mut self, i: usize, from: u64, to: u64) {
        let _ = self.hist[i].record(to.saturating_sub(from).max(1));
    }
}

/// The join: for each request, the first submit_req of its user_data at
/// or after its start, the first io_uring_complete after that, and where
/// traced the block request of its sector in between.
fn join(requests: &[Request], events: &[Event], block: bool) -> StageReport {
    let mut by_key: HashMap<(u8, u64), Vec<u64>> = HashMap::new();
    for e in events {
        by_key
            .entry((e.kind as u8, e.key))
            .or_default()
            .push(e.time_ns);
    }
    for v in by_key.values_mut() {
        v.sort_unstable();
    }
    // Index of the next unused event per key.
    let mut next: HashMap<(u8, u64), usize> = HashMap::new();
    let mut take = |kind: Kind, key: u64, after: u64, before: u64| -> Option<u64> {
        let times = by_key.get(&(kind as u8, key))?;
        let i = next.entry((kind as u8, key)).or_insert(0);
        while *i < times.len() && times[*i] < after {
            *i += 1;
        }
        let t = *times.get(*i)?;
        if t > before {
            return None;
        }
        *i += 1;
        Some(t)
    };
    let names: &[&'static str] = if block {
        &[
            "ringlab issue -> io_uring_submit_req",
            "io_uring_submit_req -> block_rq_issue",
            "block_rq_issue -> block_rq_complete (device)",
            "block_rq_complete -> io_uring_complete",
            "io_uring_complete -> ringlab reap",
            "io_uring_submit_req -> io_uring_complete (in the kernel)",
        ]
    } else {
        &[
            "ringlab issue -> io_uring_submit_req",
            "io_uring_submit_req -> io_uring_complete (in the kernel)",
            "io_uring_complete -> ringlab reap",
        ]
    };
    let mut stages = Stages::new(names);
    let mut matched = 0u64;
    let mut block_matched = 0u64;
    let mut block_completed = 0u64;
    let mut sorted: Vec<&Request> = requests.iter().collect();
    sorted.sort_by_key(|r| r.start_ns);
    for r in sorted {
        // The issue time is taken before the request reaches the kernel;
        // a little slack covers clock reads of different CPUs.
        let Some(sub) = take(
            Kind::Submit,
            r.user_data,
            r.start_ns.saturating_sub(1_000),
            r.reap_ns,
        ) else {
            continue;
        };
        let Some(done) = take(Kind::Complete, r.user_data, sub, r.reap_ns) else {
            continue;
        };
        matched += 1;
        stages.record(0, r.start_ns, sub);
        if block {
            // From ringlab's issue on, not from submit_req: a request the
            // kernel dispatches inline can reach the block layer before
            // io_uring_submit_req's timestamp (seen: 84-88% of the block
            // events of a quiet run were missed with `sub` as the bound).
            let from = r.start_ns.saturating_sub(1_000);
            let issue = r.sector.and_then(|s| take(Kind::BlockIssue, s, from, done));
            let dev_done = issue.and_then(|i| take(Kind::BlockComplete, r.sector?, i, done));
            if let Some(i) = issue {
                block_matched += 1;
                stages.record(1, sub, i);
            }
            // The completions come from BPF (crate::bpf_events); where it
            // could not load, from perf samples, of which Linux 6.18
            // delivers none raised on an idle CPU: the device's stages are
            // then timed over the completions that arrived, the issue for
            // every request.
            if let (Some(i), Some(c)) = (issue, dev_done) {
                block_completed += 1;
                stages.record(2, i, c);
                stages.record(3, c, done);
            }
            stages.record(4, done, r.reap_ns);
            stages.record(5, sub, done);
        } else {
            stages.record(1, sub, done);
            stages.record(2, done, r.reap_ns);
        }
    }
    StageReport {
        requests_logged: requests.len() as u64,
        requests_matched: matched,
        requests_matched_block: block.then_some(block_matched),
        requests_block_completed: block.then_some(block_completed),
        events_lost: 0,
        requests_not_logged: false,
        stages: stages
            .names
            .iter()
            .zip(&stages.hist)
            .filter(|(_, h)| !h.is_empty())
            .map(|(name, h)| StageLatency {
                stage: name.to_string(),
                count: h.len(),
                mean_ns: h.mean(),
                p50_ns: h.value_at_quantile(0.5),
                p90_ns: h.value_at_quantile(0.9),
                p99_ns: h.value_at_quantile(0.99),
                p999_ns: h.value_at_quantile(0.999),
                max_ns: h.max(),
                hdr_v2_deflate_base64: encode(h),
            })
            .collect(),
    }
}

/// The histogram in HdrHistogram's V2 compressed encoding, base64: what
/// HdrHistogram's tools (and `ringlab merge`) read.
fn encode(h: &Histogram<u64>) -> Option<String> {
    use base64::Engine;
    use hdrhistogram::serialization::Serializer;
    let mut bytes = Vec::new();
    hdrhistogram::serialization::V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The sector on the disk of byte `offset` of an open file, from its
/// extents (FIEMAP) and the partition's start; for a block device, the
/// offset itself plus the partition's start.
pub struct SectorMap {
    /// (logical start, physical start, length) in bytes, sorted.
    extents: Vec<(u64, u64, u64)>,
    partition_start_bytes: u64,
    whole_device: bool,
}

impl SectorMap {
    /// For the file or device open as `fd`; `None` where the mapping
    /// cannot be read (then no block stage is joined).
    pub fn of(fd: i32, len: u64) -> Option<SectorMap> {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat on a descriptor the caller holds open.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return None;
        }
        let is_blk = st.st_mode & libc::S_IFMT == libc::S_IFBLK;
        let dev = if is_blk { st.st_rdev } else { st.st_dev };
        let start = fs::read_to_string(format!(
            "/sys/dev/block/{}:{}/start",
            libc::major(dev),
            libc::minor(dev)
        ))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0);
        let extents = if is_blk { Vec::new() } else { fiemap(fd, len)? };
        Some(SectorMap {
            extents,
            partition_start_bytes: start * 512,
            whole_device: is_blk,
        })
    }

    pub fn sector(&self, offset: u64) -> Option<u64> {
        let physical = if self.whole_device {
            offset
        } else {
            let i = self.extents.partition_point(|e| e.0 <= offset);
            let (logical, phys, len) = *self.extents.get(i.checked_sub(1)?)?;
            if offset >= logical + len {
                return None;
            }
            phys + (offset - logical)
        };
        Some((physical + self.partition_start_bytes) / 512)
    }
}

/// The extents of the first `len` bytes of a file (FS_IOC_FIEMAP).
fn fiemap(fd: i32, len: u64) -> Option<Vec<(u64, u64, u64)>> {
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const HEADER: usize = 32;
    const EXTENT: usize = 56;
    const PER_CALL: usize = 512;
    let mut out = Vec::new();
    let mut start = 0u64;
    while start < len {
        let mut buf = vec![0u64; (HEADER + EXTENT * PER_CALL) / 8];
        buf[0] = start;
        buf[1] = len - start;
        // fm_flags = FIEMAP_FLAG_SYNC (1), fm_extent_count at byte 24.
        buf[2] = 1;
        buf[3] = PER_CALL as u64;
        // SAFETY: buf is a struct fiemap with room for PER_CALL extents.
        if unsafe { libc::ioctl(fd, FS_IOC_FIEMAP, buf.as_mut_ptr()) } != 0 {
            return None;
        }
        let mapped = (buf[2] >> 32) as usize;
        if mapped == 0 {
            break;
        }
        let mut last_flags = 0u32;
        for i in 0..mapped.min(PER_CALL) {
            let at = (HEADER + i * EXTENT) / 8;
            let (logical, physical, length) = (buf[at], buf[at + 1], buf[at + 2]);
            last_flags = buf[at + 5] as u32;
            out.push((logical, physical, length));
            start = logical + length;
        }
        // FIEMAP_EXTENT_LAST
        if last_flags & 1 != 0 {
            break;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: Kind, time_ns: u64, key: u64) -> Event {
        Event { kind, time_ns, key }
    }

    #[test]
    fn joins_each_request_to_its_own_events() {
        // Two requests on the same slot, one after the other.
        let reqs = [
            Request {
                user_data: 3,
                sector: Some(80),
                start_ns: 1_000,
                reap_ns: 9_000,
            },
            Request {
                user_data: 3,
                sector: Some(16),
                start_ns: 10_000,
                reap_ns: 20_000,
            },
        ];
        let events = [
            ev(Kind::Submit, 1_500, 3),
            ev(Kind::BlockIssue, 2_000, 80),
            ev(Kind::BlockComplete, 7_000, 80),
            ev(Kind::Complete, 8_000, 3),
            ev(Kind::Submit, 10_100, 3),
            ev(Kind::BlockIssue, 10_300, 16),
            ev(Kind::BlockComplete, 18_300, 16),
            ev(Kind::Complete, 19_000, 3),
        ];
        let r = join(&reqs, &events, true);
        assert_eq!(r.requests_matched, 2);
        assert_eq!(r.requests_matched_block, Some(2));
        let device = r
            .stages
            .iter()
            .find(|s| s.stage.contains("(device)"))
            .unwrap();
        assert_eq!(device.count, 2);
        assert!(
            device.max_ns >= 7_990 && device.max_ns <= 8_010,
            "{}",
            device.max_ns
        );
        let reap = r.stages.iter().find(|s| s.stage.contains("reap")).unwrap();
        assert!(reap.max_ns >= 990 && reap.max_ns <= 1_010);
        assert!(device.hdr_v2_deflate_base64.is_some());
    }

    #[test]
    fn a_request_without_kernel_events_is_not_matched() {
        let reqs = [Request {
            user_data: 1,
            sector: None,
            start_ns: 0,
            reap_ns: 10,
        }];
        let r = join(&reqs, &[ev(Kind::Submit, 20, 1)], false);
        assert_eq!(r.requests_matched, 0);
        assert!(r.stages.is_empty());
    }
}
