//! `ringlab serve`: a minimal HTTP/1.1 keep-alive server on epoll or
//! io_uring, the other side of `ringlab http` in tests and comparisons. It
//! answers every request with 200 and a fixed body (nginx's `return 200`),
//! pipelined requests in one write, and counts what it served.
//!
//! [`request`] parses requests into responses, [`conn`] holds what both
//! event loops share (a connection's buffers, the slab, the tallies), and
//! [`epoll`] and [`uring`] are the two loops.

mod conn;
mod epoll;
mod request;
mod uring;

pub use conn::ServeCounts;

use crate::sys;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use conn::Tally;
use request::Responses;
use ringlab_core::usage;
use ringlab_core::usage_error;
use ringlab_stats::units::{format_bytes, parse_duration, parse_size};
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ServeIo {
    Epoll,
    Uring,
}

/// `ringlab serve`: answers every request with 200 and a fixed body.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Server")]
pub struct ServeArgs {
    /// Interface: epoll (non-blocking sockets) or uring (io_uring accept,
    /// recv and send).
    #[arg(long, value_enum, default_value_t = ServeIo::Epoll)]
    pub io: ServeIo,
    /// Server threads, each with its own event loop on the shared listener.
    #[arg(short, long, value_name = "N", default_value_t = 1)]
    pub threads: u32,
    /// Address to listen on; port 0 picks a free port (printed on stderr).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Size of the response body: 0, 128, 4k.
    #[arg(long, value_name = "BYTES", default_value = "0")]
    pub body_size: String,
    /// Stop after this long [default: until SIGINT or SIGTERM].
    #[arg(short, long, value_name = "TIME")]
    pub duration: Option<String>,
}

/// The end-of-run summary.
#[derive(Debug, Clone)]
pub struct ServeSummary {
    pub listen: SocketAddr,
    pub io: &'static str,
    pub threads: u32,
    pub elapsed_ns: u64,
    pub requests: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub connections: u64,
}

impl ServeSummary {
    pub fn text(&self) -> String {
        format!(
            "ringlab serve: {} requests on {} connections in {:.2}s, {} read, {} written ({}, {} thread{})\n",
            self.requests,
            self.connections,
            self.elapsed_ns as f64 / 1e9,
            format_bytes(self.bytes_read),
            format_bytes(self.bytes_written),
            self.io,
            self.threads,
            if self.threads == 1 { "" } else { "s" }
        )
    }

    pub fn json(&self) -> String {
        let v = serde_json::json!({
            "command": "serve",
            "listen": self.listen.to_string(),
            "io": self.io,
            "threads": self.threads,
            "elapsed_ns": self.elapsed_ns,
            "requests": self.requests,
            "connections": self.connections,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
        });
        format!("{v:#}\n")
    }
}

/// The validated settings of one `ringlab serve`.
struct Settings {
    body: u64,
    duration: Option<Duration>,
    addr: SocketAddr,
}

fn settings(args: &ServeArgs) -> Result<Settings> {
    if args.threads == 0 || args.threads > 1024 {
        usage!("--threads {}: must be between 1 and 1024", args.threads);
    }
    let body = parse_size(&args.body_size).map_err(|e| usage_error(format!("--body-size: {e}")))?;
    if body > 1 << 30 {
        usage!("--body-size {}: at most 1 GiB", args.body_size);
    }
    let duration = match &args.duration {
        Some(d) => Some(parse_duration(d).map_err(|e| usage_error(format!("--duration: {e}")))?),
        None => None,
    };
    let addr: SocketAddr = match args.listen.parse() {
        Ok(a) => a,
        Err(_) => usage!(
            "--listen {}: not an address; write it like 127.0.0.1:8080 or [::1]:8080",
            args.listen
        ),
    };
    Ok(Settings {
        body,
        duration,
        addr,
    })
}

/// One thread's event loop, with what it needs made before it starts.
enum Loop {
    Epoll,
    Uring(Box<io_uring::IoUring>),
}

impl Loop {
    fn new(io: ServeIo) -> io::Result<Loop> {
        Ok(match io {
            ServeIo::Epoll => Loop::Epoll,
            ServeIo::Uring => Loop::Uring(Box::new(uring::ring()?)),
        })
    }

    fn run(self, lfd: RawFd, resp: &Responses, stop: &AtomicBool) -> io::Result<Tally> {
        match self {
            Loop::Epoll => epoll::serve_epoll(lfd, resp, stop),
            Loop::Uring(ring) => uring::serve_uring(*ring, lfd, resp, stop),
        }
    }
}

/// Binds, runs until `stop` or --duration, returns the summary. `on_listen`
/// is told the bound address once the server accepts connections.
pub fn serve(
    args: &ServeArgs,
    stop: Arc<AtomicBool>,
    on_listen: impl FnOnce(SocketAddr),
) -> Result<ServeSummary> {
    let set = settings(args)?;
    let listener = match TcpListener::bind(set.addr) {
        Ok(l) => l,
        Err(e) => usage!("--listen {}: {e}; pick another address or port", set.addr),
    };
    let local = listener.local_addr().context("reading the bound address")?;
    if args.io == ServeIo::Epoll {
        listener
            .set_nonblocking(true)
            .context("making the listener non-blocking")?;
    }
    let _ = sys::ensure_fd_limit(65_536);
    let counts = Arc::new(ServeCounts::default());
    let resp = Arc::new(Responses::new(set.body));
    let handles = start_threads(args, listener.as_raw_fd(), &resp, &stop, &counts)?;
    on_listen(local);
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if set.duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::SeqCst);
    let joined = join(handles);
    drop(listener);
    if let Err(e) = joined {
        return Err(anyhow::Error::new(e).context(format!("ringlab serve --io {:?}", args.io)));
    }
    Ok(ServeSummary {
        listen: local,
        io: match args.io {
            ServeIo::Epoll => "epoll",
            ServeIo::Uring => "uring",
        },
        threads: args.threads,
        elapsed_ns: start.elapsed().as_nanos() as u64,
        requests: counts.requests.load(Ordering::Relaxed),
        bytes_read: counts.bytes_read.load(Ordering::Relaxed),
        bytes_written: counts.bytes_written.load(Ordering::Relaxed),
        connections: counts.connections.load(Ordering::Relaxed),
    })
}

type Handle = JoinHandle<io::Result<()>>;

/// Makes every thread's loop (so that a refused io_uring fails here, before
/// "listening"), then starts the threads.
fn start_threads(
    args: &ServeArgs,
    lfd: RawFd,
    resp: &Arc<Responses>,
    stop: &Arc<AtomicBool>,
    counts: &Arc<ServeCounts>,
) -> Result<Vec<Handle>> {
    let mut loops = Vec::with_capacity(args.threads as usize);
    for _ in 0..args.threads {
        match Loop::new(args.io) {
            Ok(l) => loops.push(l),
            Err(e) => match sys::io_uring_refused(&e, "serve --io uring", "--io epoll") {
                Some(why) => return Err(usage_error(why)),
                None => {
                    return Err(usage_error(format!(
                        "serve --io uring: io_uring_setup: {e}; use --io epoll"
                    )))
                }
            },
        }
    }
    let mut handles = Vec::new();
    for (t, lp) in loops.into_iter().enumerate() {
        let (stop_t, counts, resp) = (stop.clone(), counts.clone(), resp.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("ringlab-serve{t}"))
            .spawn(move || -> io::Result<()> {
                let r = lp.run(lfd, &resp, &stop_t).map(|t| t.add_to(&counts));
                if r.is_err() {
                    stop_t.store(true, Ordering::SeqCst);
                }
                r
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                let _ = join(handles);
                return Err(anyhow::Error::new(e).context("starting a server thread"));
            }
        }
    }
    Ok(handles)
}

/// Waits for every thread; the first error wins.
fn join(handles: Vec<Handle>) -> io::Result<()> {
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(io::Error::other("a server thread panicked"));
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// accept failed for want of descriptors (EMFILE, ENFILE): said once on
/// stderr, and the loop waits 10 ms before trying again, instead of
/// spinning on a listener that stays ready.
pub(crate) fn out_of_descriptors(errno: i32) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        let mut rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit fills the struct we own.
        let limit = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == 0 {
            rl.rlim_cur.to_string()
        } else {
            "allowed".to_string()
        };
        let what = if errno == libc::ENFILE {
            "the system's file table is full".to_string()
        } else {
            format!("the process has used its {limit} file descriptors (ulimit -n)")
        };
        eprintln!(
            "ringlab serve: cannot accept more connections: {what}; new clients wait in the listen backlog until some close. Raise the limit (ulimit -n) or use fewer client connections"
        );
    }
    std::thread::sleep(std::time::Duration::from_millis(10));
}
