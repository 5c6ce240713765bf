//! The floor of a read loop on the io-uring crate: what ringlab's loop is
//! measured against when the question is "how much do its timing,
//! accounting and checks cost, and can any Rust loop on this crate match
//! t/io_uring?" (bench/uring-floor.sh).
//!
//! It does what t/io_uring does with `-p0 -B0 -F0 -n1 -O1 -X0 -R1 -t0` and
//! nothing more: one thread, 4 KiB random reads with O_DIRECT|O_NOATIME,
//! t/io_uring's ring flags (CQSIZE = depth, COOP_TASKRUN, SINGLE_ISSUER,
//! DEFER_TASKRUN, NO_SQARRAY), refill every free slot, one io_uring_enter
//! that submits them and waits for `--complete-batch` completions (at most
//! what is in flight), reap every completion that is there. No clock read
//! per request, no latency, no histogram, no per-request check beyond the
//! result's length.
//!
//! It takes the command line bench/zram-cost.sh gives ringlab (`io TARGET
//! --iodepth N [--complete-batch C] --runtime Ns`, other flags ignored), so
//! that script can run it in ringlab's place; its job thread is named
//! `ringlab-job0` for that script's per-thread accounting. It prints the
//! reads per second, as JSON when `--output-format json` is given.
//!
//! `floor http ...` is the same floor for an HTTP client (src/http.rs).
//!
//! `FLOOR_ICACHE_KB=N` (an experiment, off by default) runs through N KiB
//! of code after each reap: one jump per 64-byte line to the next, so N
//! KiB of instruction cache are touched for N * 16 instructions. It asks
//! what a bigger job loop costs the io-wq worker that shares its CPU
//! (docs/benchmarks.md, 2026-11-29, fourth machine).
//!
//! `FLOOR_ASYNC=1` (an experiment, off by default) sets IOSQE_ASYNC on
//! every read, as ringlab's default does on a target that takes no
//! non-blocking I/O (zram): what that flag is worth to a bare loop
//! (docs/benchmarks.md, 2026-12-07, seventh VM).

mod http;

use io_uring::{opcode, types, IoUring};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::process::exit;

const BS: u64 = 4096;

struct Args {
    target: String,
    depth: u32,
    batch: u32,
    secs: f64,
    json: bool,
    /// FLOOR_ICACHE_KB (see the module's doc); 0: off.
    icache_kb: usize,
    /// FLOOR_ASYNC=1 (see the module's doc): IOSQE_ASYNC on every read.
    force_async: bool,
}

fn usage(why: &str) -> ! {
    eprintln!("floor: {why}\nusage: floor io TARGET --iodepth N [--complete-batch C] --runtime SECONDSs [--output-format json]\n       floor http -cN -dSECONDSs [--output-format json] http://HOST:PORT/PATH");
    exit(2)
}

fn parse() -> Args {
    let mut a = Args {
        target: String::new(),
        depth: 1,
        batch: 1,
        secs: 0.0,
        json: false,
        force_async: std::env::var_os("FLOOR_ASYNC").is_some_and(|v| v == "1"),
        icache_kb: match std::env::var("FLOOR_ICACHE_KB") {
            Err(_) => 0,
            Ok(v) => v
                .parse()
                .unwrap_or_else(|_| usage(&format!("FLOOR_ICACHE_KB={v}: give whole KiB"))),
        },
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let value = |i: usize| -> &str {
        argv.get(i + 1)
            .map(String::as_str)
            .unwrap_or_else(|| usage("a flag without its value"))
    };
    while i < argv.len() {
        match argv[i].as_str() {
            "io" => {}
            "--iodepth" => {
                a.depth = value(i)
                    .parse()
                    .unwrap_or_else(|_| usage("--iodepth takes a number"));
                i += 1;
            }
            "--complete-batch" => {
                a.batch = value(i)
                    .parse()
                    .unwrap_or_else(|_| usage("--complete-batch takes a number"));
                i += 1;
            }
            "--runtime" => {
                let v = value(i);
                a.secs = v
                    .trim_end_matches('s')
                    .parse()
                    .unwrap_or_else(|_| usage("--runtime takes seconds, e.g. 7s"));
                i += 1;
            }
            "--output-format" => {
                a.json = value(i) == "json";
                i += 1;
            }
            // ringlab flags with a value that the floor does not vary.
            "--rw" | "--bs" | "--cpus" => i += 1,
            s if s.starts_with("--") => {}
            s => a.target = s.to_string(),
        }
        i += 1;
    }
    if a.target.is_empty() || a.secs <= 0.0 || a.depth == 0 || a.batch == 0 || a.batch > a.depth {
        usage("needs a TARGET, --runtime > 0, and 1 <= --complete-batch <= --iodepth");
    }
    a
}

/// xorshift64: a cheap uniform generator (t/io_uring uses taus258; both
/// cost a few nanoseconds).
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn run(a: &Args) -> Result<(u64, f64), String> {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"ringlab-job0".as_ptr()) };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT | libc::O_NOATIME)
        .open(&a.target)
        .map_err(|e| format!("opening {}: {e}", a.target))?;
    let fd = file.as_raw_fd();
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64; on a regular file it fails and
    // the length is taken instead.
    if unsafe { libc::ioctl(fd, 0x80081272, &mut size) } != 0 {
        size = file.metadata().map_err(|e| e.to_string())?.len();
    }
    let blocks = size / BS;
    if blocks == 0 {
        return Err(format!("{} holds less than one 4 KiB block", a.target));
    }
    let mut ring: IoUring = IoUring::builder()
        .setup_cqsize(a.depth)
        .setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_no_sqarray()
        .build(a.depth)
        .map_err(|e| format!("io_uring_setup: {e}"))?;
    let layout = std::alloc::Layout::from_size_align((BS * a.depth as u64) as usize, 4096).unwrap();
    // SAFETY: a non-zero size; freed below, after every read completed.
    let base = unsafe { std::alloc::alloc_zeroed(layout) };
    if base.is_null() {
        return Err("out of memory for the buffers".into());
    }
    let mut free: Vec<u32> = (0..a.depth).collect();
    let mut inflight = 0u32;
    let mut reads = 0u64;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let icache = icache_walk(a.icache_kb)?;
    let start = std::time::Instant::now();
    let mut stopping = false;
    let flags = if a.force_async {
        io_uring::squeue::Flags::ASYNC
    } else {
        io_uring::squeue::Flags::empty()
    };
    loop {
        if !stopping {
            let mut sq = ring.submission();
            while let Some(slot) = free.pop() {
                let off = (next(&mut x) % blocks) * BS;
                // SAFETY: slot < depth, inside the allocation.
                let buf = unsafe { base.add((slot as u64 * BS) as usize) };
                let e = opcode::Read::new(types::Fd(fd), buf, BS as u32)
                    .offset(off)
                    .build()
                    .flags(flags)
                    .user_data(u64::from(slot));
                // SAFETY: the buffer stays allocated until the read completes.
                unsafe { sq.push(&e) }.map_err(|_| "submission ring full".to_string())?;
                inflight += 1;
            }
        }
        if inflight == 0 {
            break;
        }
        ring.submit_and_wait(a.batch.min(inflight) as usize)
            .map_err(|e| format!("io_uring_enter: {e}"))?;
        for c in ring.completion() {
            if c.result() != BS as i32 {
                return Err(format!("a read returned {} (expected {BS})", c.result()));
            }
            free.push(c.user_data() as u32);
            inflight -= 1;
            reads += 1;
        }
        if let Some(walk) = icache {
            walk();
        }
        if !stopping && reads % 4096 < u64::from(a.depth) && start.elapsed().as_secs_f64() >= a.secs
        {
            stopping = true;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    // SAFETY: nothing is in flight; allocated above with this layout.
    unsafe { std::alloc::dealloc(base, layout) };
    Ok((reads, secs))
}

/// FLOOR_ICACHE_KB's code (see the module's doc): N KiB of 64-byte lines,
/// each starting with a jump to the next (`jmp rel32` +59, five bytes),
/// the last followed by `ret`. Never freed: it lives as long as the run.
fn icache_walk(kb: usize) -> Result<Option<extern "C" fn()>, String> {
    if kb == 0 {
        return Ok(None);
    }
    if !cfg!(target_arch = "x86_64") {
        return Err("FLOOR_ICACHE_KB writes x86-64 code".into());
    }
    let len = kb * 1024;
    // SAFETY: an anonymous private mapping, checked for MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + 64,
            libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!(
            "FLOOR_ICACHE_KB: mmap: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the mapping holds len + 64 bytes; every line gets a jump to
    // the next line and the byte after the last line a ret, so the code
    // runs from the start to that ret whatever else the lines hold.
    unsafe {
        let code = std::slice::from_raw_parts_mut(p as *mut u8, len + 64);
        for line in code[..len].chunks_exact_mut(64) {
            line[0] = 0xE9;
            line[1..5].copy_from_slice(&59i32.to_le_bytes());
        }
        code[len] = 0xC3;
        Ok(Some(std::mem::transmute::<
            *mut libc::c_void,
            extern "C" fn(),
        >(p)))
    }
}

/// `http ... -cN -dSECONDSs ... URL` (ringlab http's and wrk's spelling).
fn parse_http(argv: &[String]) -> http::Args {
    let mut a = http::Args {
        conns: 0,
        secs: 0.0,
        url: String::new(),
        json: false,
    };
    let mut i = 0;
    while i < argv.len() {
        let s = argv[i].as_str();
        let mut val = |flag: &str| -> Option<String> {
            let rest = s.strip_prefix(flag)?;
            if rest.is_empty() {
                i += 1;
                argv.get(i).cloned()
            } else {
                Some(rest.to_string())
            }
        };
        if let Some(v) = val("-c") {
            a.conns = v
                .parse()
                .unwrap_or_else(|_| usage("-c takes a number of connections"));
        } else if let Some(v) = val("-d") {
            a.secs = v
                .trim_end_matches('s')
                .parse()
                .unwrap_or_else(|_| usage("-d takes seconds, e.g. 6s"));
        } else if s == "--output-format" {
            i += 1;
            a.json = argv.get(i).is_some_and(|v| v == "json");
        } else if s == "--io" || s == "-t" {
            i += 1;
        } else if s.starts_with("http://") {
            a.url = s.to_string();
        }
        i += 1;
    }
    if a.conns == 0 || a.secs <= 0.0 || a.url.is_empty() {
        usage("http needs -cN, -dSECONDSs and an http:// URL");
    }
    a
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().is_some_and(|a| a == "http") {
        let a = parse_http(&argv[1..]);
        match http::run(&a) {
            Ok(n) if a.json => {
                println!("{{\"tool\":\"ringlab-floor\",\"http\":{{\"responses\":{n}}}}}")
            }
            Ok(n) => println!("{n} responses"),
            Err(e) => {
                eprintln!("floor: {e}");
                exit(1)
            }
        }
        return;
    }
    let a = parse();
    let t = std::thread::spawn(move || run(&a).map(|r| (r, a.json)));
    match t.join() {
        Ok(Ok(((reads, secs), json))) => {
            let iops = reads as f64 / secs;
            if json {
                println!("{{\"tool\":\"ringlab-floor\",\"total\":{{\"ops\":{reads},\"elapsed_s\":{secs:.3},\"iops\":{iops:.0}}}}}");
            } else {
                println!("{reads} reads in {secs:.2}s: {iops:.0} reads/s");
            }
        }
        Ok(Err(e)) => {
            eprintln!("floor: {e}");
            exit(1)
        }
        Err(_) => exit(1),
    }
}
