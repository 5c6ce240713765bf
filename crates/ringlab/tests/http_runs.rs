//! End-to-end runs of `ringlab http` against `ringlab serve` and against an
//! in-test server that misbehaves on purpose. Counts and error kinds are
//! asserted, never speed.

mod common;

use common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DRIVERS: [&str; 4] = ["epoll", "uring-nb", "uring", "uring-mshot"];

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Responses, errors and status counts that agree with each other.
fn check_consistent(r: &Value, what: &str) {
    assert_schema_valid(r);
    // The runner compares /proc/self/fd before and after the run.
    let warnings = r["warnings"].to_string();
    assert!(!warnings.contains("descriptors"), "{what}: {warnings}");
    let h = &r["http"];
    let responses = u(&h["responses"]);
    assert_eq!(u(&r["total"]["ops"]), responses, "{what}");
    assert_eq!(u(&r["total"]["read"]["ops"]), responses, "{what}");
    assert_eq!(u(&r["total"]["bytes"]), u(&h["bytes_read"]), "{what}");
    assert_eq!(
        u(&r["total"]["write"]["ops"]),
        u(&h["requests_sent"]),
        "{what}"
    );
    let by_status: u64 = h["status"].as_object().unwrap().values().map(u).sum();
    assert_eq!(by_status, responses, "{what}");
    let jobs: u64 = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| u(&j["ops"]))
        .sum();
    assert_eq!(jobs, responses, "{what}");
}

fn errors(r: &Value) -> [u64; 6] {
    let e = &r["http"]["errors"];
    ["connect", "read", "write", "timeout", "parse", "closed"].map(|k| u(&e[k]))
}

#[test]
fn every_driver_against_serve_counts_agree_with_the_server() {
    for serve_io in ["epoll", "uring"] {
        let server = Server::start(&format!("--io {serve_io} --body-size 100"));
        let url = server.url();
        let (mut sent_bytes, mut responses, mut requests, mut read_bytes) = (0, 0, 0, 0);
        for io in DRIVERS {
            let r = json_run(&format!("http {url} -t 2 -c 6 -d 300ms --io {io}"));
            let what = format!("{io} against serve --io {serve_io}");
            check_consistent(&r, &what);
            let h = &r["http"];
            let n = u(&h["responses"]);
            assert!(n > 0, "{what}: no responses");
            assert_eq!(errors(&r), [0; 6], "{what}: {h}");
            assert_eq!(u(&h["status"]["200"]), n, "{what}");
            assert_eq!(u(&h["connects"]), 6, "{what}: keep-alive reconnected");
            let sent = u(&h["requests_sent"]);
            assert!(
                sent >= n && sent - n <= 6,
                "{what}: {sent} sent, {n} answered"
            );
            // Every response is head + 100 bytes; a cut-off one may follow.
            let resp_len = u(&h["bytes_read"]) / n;
            assert!(resp_len > 100, "{what}: {resp_len}");
            assert_eq!(r["config"]["io"], io);
            assert_eq!(r["jobs"].as_array().unwrap().len(), 2);
            sent_bytes += u(&h["bytes_written"]);
            read_bytes += u(&h["bytes_read"]);
            responses += n;
            requests += sent;
        }
        std::thread::sleep(Duration::from_millis(200));
        let s = server.stop();
        // The server read every byte the clients wrote, answered every
        // request it read, and wrote at least what the clients read.
        assert_eq!(
            u(&s["bytes_read"]),
            sent_bytes,
            "serve --io {serve_io}: {s}"
        );
        let served = u(&s["requests"]);
        assert!(
            served >= responses && served <= requests,
            "serve --io {serve_io}: served {served}, clients sent {requests} and got {responses}"
        );
        assert!(u(&s["bytes_written"]) >= read_bytes);
    }
}

/// Responses larger than the receive buffers the io_uring drivers keep
/// offered to the kernel at first (16 of 4 KiB a ring at one connection):
/// the kernel runs out of buffers mid-response, the receive is armed again
/// and more are offered; every byte is still counted, no error. More than
/// 4 responses (the 1 MiB a ring has in all) means parsed buffers went back.
#[test]
fn responses_larger_than_the_offered_buffers_arrive_whole() {
    let server = Server::start("--body-size 256k");
    for io in DRIVERS {
        let r = json_run(&format!(
            "http {} -t 1 -c 1 -d 300ms --io {io}",
            server.url()
        ));
        check_consistent(&r, io);
        let h = &r["http"];
        let n = u(&h["responses"]);
        assert!(n >= 16, "{io}: {n} responses");
        assert_eq!(errors(&r), [0; 6], "{io}: {h}");
        assert_eq!(u(&h["status"]["200"]), n, "{io}");
        let resp_len = u(&h["bytes_read"]) / n;
        assert!(resp_len > 256 * 1024, "{io}: {resp_len} bytes a response");
    }
}

#[test]
fn pipelining_keeps_n_requests_in_flight() {
    let server = Server::start("");
    for io in DRIVERS {
        let r = json_run(&format!(
            "http {} -t 1 -c 2 -d 300ms --pipeline 8 --io {io}",
            server.url()
        ));
        check_consistent(&r, io);
        let h = &r["http"];
        let n = u(&h["responses"]);
        assert!(n > 16, "{io}: {n}");
        assert_eq!(errors(&r), [0; 6], "{io}");
        let sent = u(&h["requests_sent"]);
        assert!(sent - n <= 16, "{io}: {sent} sent, {n} answered");
        assert_eq!(r["config"]["pipeline"], 8);
    }
}

#[test]
fn ring_knobs_run_and_are_recorded() {
    let server = Server::start("");
    for (io, knobs) in [
        ("uring", "--sqpoll"),
        ("uring", "--coop-taskrun --fixed-files"),
        ("uring", "--single-issuer --defer-taskrun"),
        ("uring-nb", "--fixed-files --single-issuer"),
    ] {
        let r = json_run(&format!(
            "http {} -t 1 -c 4 -d 200ms --io {io} {knobs}",
            server.url()
        ));
        check_consistent(&r, knobs);
        assert!(u(&r["http"]["responses"]) > 0, "{io} {knobs}");
        assert_eq!(errors(&r), [0; 6]);
        for k in knobs.split_whitespace() {
            assert_eq!(r["config"][k.trim_start_matches("--")], true, "{k}");
        }
        if knobs.contains("sqpoll") {
            assert!(r["http"]["syscalls_per_request"].is_null());
        } else {
            assert!(r["http"]["syscalls_per_request"].as_f64().unwrap() > 0.0);
        }
    }
    let r = json_run(&format!(
        "http {} -t 1 -c 2 -d 300ms --io uring-mshot",
        server.url()
    ));
    for k in ["single-issuer", "defer-taskrun", "fixed-files"] {
        assert_eq!(r["config"][k], true, "uring-mshot always uses {k}");
    }
    // Where the kernel's tracepoints can be read, they show the design:
    // registered sockets need no file lookup and a multishot receive arms
    // no poll per request; the plain ring looks its files up.
    let plain = json_run(&format!(
        "http {} -t 1 -c 2 -d 300ms --io uring --evidence full",
        server.url()
    ));
    let file_get =
        |r: &Value| kstat_per_op(r, "io_uring_file_get_per_op", "io_uring:io_uring_file_get");
    if let (Some(m), Some(p)) = (file_get(&r), file_get(&plain)) {
        assert!(m < 0.01, "uring-mshot looked files up: {m}");
        // About one lookup a request; requests sent inside the measured
        // window and answered after it (or the reverse) move it by a few.
        assert!(p >= 0.95, "plain uring: {p}");
    }
    if let Some(arms) = kstat_per_op(&r, "io_uring_poll_arm_per_op", "io_uring:io_uring_poll_arm") {
        assert!(arms < 0.1, "uring-mshot armed poll per request: {arms}");
    }
}

#[test]
fn open_loop_holds_the_rate_and_reports_both_latencies() {
    let server = Server::start("");
    for io in ["epoll", "uring"] {
        let r = json_run(&format!(
            "http {} -t 1 -c 4 -d 1s -R 400 --io {io}",
            server.url()
        ));
        check_consistent(&r, io);
        let n = u(&r["http"]["responses"]) as f64;
        assert!(
            (n - 400.0).abs() <= 20.0,
            "{io}: {n} responses at -R 400 for 1 s"
        );
        let corrected = &r["total"]["lat_ns"];
        let raw = &r["http"]["lat_ns_uncorrected"];
        assert!(raw.is_object(), "{io}: no uncorrected latency");
        assert!(u(&corrected["max"]) >= u(&raw["min"]));
        assert_eq!(r["config"]["rate"], 400.0);
    }
    let closed = json_run(&format!("http {} -t 1 -c 1 -d 100ms", server.url()));
    assert!(closed["http"]["lat_ns_uncorrected"].is_null());
}

/// How the in-test server answers each request.
#[derive(Clone, Copy, Debug)]
enum Misbehave {
    Chunked,
    ConnectionClose,
    BodyUntilClose,
    CloseMidResponse,
    Reset,
    Garbage,
    OversizedHeader,
    NeverAnswers,
}

/// A server on 127.0.0.1 that answers as `how` says, one thread per
/// connection; stops when dropped.
struct Misbehaving {
    addr: String,
    stop: Arc<AtomicBool>,
}

impl Misbehaving {
    fn start(how: Misbehave) -> Misbehaving {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((s, _)) => {
                        let stop3 = stop2.clone();
                        std::thread::spawn(move || serve_conn(s, how, &stop3));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        Misbehaving { addr, stop }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for Misbehaving {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads one request head; false at end of stream.
fn read_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..p + 4);
            return true;
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn serve_conn(mut s: TcpStream, how: Misbehave, stop: &AtomicBool) {
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buf = Vec::new();
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if !read_request(&mut s, &mut buf) {
            // A read timeout: look at the stop flag, then keep waiting,
            // unless the peer has gone.
            let mut probe = [0u8; 1];
            s.set_nonblocking(true).unwrap();
            let gone = matches!(s.peek(&mut probe), Ok(0));
            s.set_nonblocking(false).unwrap();
            if gone {
                return;
            }
            continue;
        }
        let reply: Vec<u8> = match how {
            Misbehave::Chunked => {
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n3;e=1\r\nxyz\r\n0\r\n\r\n"
                    .to_vec()
            }
            Misbehave::ConnectionClose => {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
                return;
            }
            Misbehave::BodyUntilClose => {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\nuntil the end");
                return;
            }
            Misbehave::CloseMidResponse => {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..");
                return;
            }
            Misbehave::Reset => {
                // SO_LINGER 0: close sends RST instead of FIN.
                linger_zero(&s);
                drop(s);
                return;
            }
            Misbehave::Garbage => b"SSH-2.0-nope\r\n\r\n".to_vec(),
            Misbehave::OversizedHeader => {
                let mut r = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
                r.resize(100 * 1024, b'a');
                r.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
                r
            }
            Misbehave::NeverAnswers => continue,
        };
        if s.write_all(&reply).is_err() {
            return;
        }
    }
}

/// Sets SO_LINGER {on, 0} so that dropping the stream resets it.
fn linger_zero(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `l` outlives the call; the length matches its type.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
}

/// Runs every driver against `how` for 300 ms with --timeout 200ms and
/// checks that the run ended (a guard against a hang on a misbehaving
/// server, generous enough for a loaded machine: not a speed claim);
/// returns the results.
fn against(how: Misbehave) -> Vec<(String, Value)> {
    let srv = Misbehaving::start(how);
    DRIVERS
        .iter()
        .map(|io| {
            let start = Instant::now();
            let out = ringlab(&format!(
                "http {} -t 1 -c 2 -d 300ms --timeout 200ms --io {io} --output-format json",
                srv.url()
            ));
            // A run in which not one response completed failed (exit 1);
            // its JSON is still written.
            let r: Value = serde_json::from_slice(&out.stdout).expect("one JSON result");
            let ok = out.status.success() || u(&r["http"]["responses"]) == 0;
            assert!(ok, "{io} {how:?}: {}", String::from_utf8_lossy(&out.stderr));
            let took = start.elapsed();
            assert!(
                took < Duration::from_secs(10),
                "{io} {how:?}: the run took {took:?}"
            );
            check_consistent(&r, &format!("{io} {how:?}"));
            (io.to_string(), r)
        })
        .collect()
}

#[test]
fn chunked_close_delimited_and_connection_close_responses_are_counted() {
    for how in [
        Misbehave::Chunked,
        Misbehave::ConnectionClose,
        Misbehave::BodyUntilClose,
    ] {
        for (io, r) in against(how) {
            let h = &r["http"];
            let n = u(&h["responses"]);
            assert!(n > 0, "{io} {how:?}: no responses");
            assert_eq!(u(&h["status"]["200"]), n, "{io} {how:?}");
            assert_eq!(errors(&r), [0; 6], "{io} {how:?}: {h}");
            if !matches!(how, Misbehave::Chunked) {
                // One connection per response: each one was reopened.
                assert!(u(&h["connects"]) >= n, "{io} {how:?}: {h}");
            }
        }
    }
}

#[test]
fn faults_are_counted_by_kind_and_the_run_goes_on() {
    for (how, kind) in [
        (Misbehave::CloseMidResponse, 5usize),
        (Misbehave::Garbage, 4),
        (Misbehave::OversizedHeader, 4),
        (Misbehave::NeverAnswers, 3),
    ] {
        for (io, r) in against(how) {
            let e = errors(&r);
            assert!(e[kind] > 0, "{io} {how:?}: {e:?}");
            assert_eq!(u(&r["http"]["responses"]), 0, "{io} {how:?}");
            assert!(
                u(&r["http"]["connects"]) > 2 || matches!(how, Misbehave::NeverAnswers),
                "{io} {how:?}: connections were not reopened"
            );
        }
    }
    // A reset shows as a read error (ECONNRESET), or as a write error when
    // it lands on the next request.
    for (io, r) in against(Misbehave::Reset) {
        let e = errors(&r);
        assert!(e[1] + e[2] + e[5] > 0, "{io}: {e:?}");
    }
}

#[test]
fn text_output_is_wrk_layout_with_errors_and_cost() {
    let srv = Misbehaving::start(Misbehave::Garbage);
    let out = ringlab(&format!("http {} -t 1 -c 1 -d 200ms --latency", srv.url()));
    // Not one response: the run failed (exit 1), its report still out.
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "Running 200ms test @ http://",
        "\n  1 threads and 1 connections\n",
        "Thread Stats   Avg      Stdev     Max   +/- Stdev",
        "0 requests in ",
        "Socket errors: connect 0, read ",
        "ringlab: io epoll",
        "ringlab: socket errors in detail: read 0, parse ",
        "Requests/sec:",
        "ringlab: Client CPU/request: unavailable",
    ] {
        assert!(text.contains(want), "{want:?} missing in:\n{text}");
    }
    let server = Server::start("");
    let out = ringlab(&format!(
        "http {} -t 1 -c 2 -d 200ms --latency",
        server.url()
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "Latency Distribution",
        "\n     99%",
        "Req/Sec",
        "Syscalls/request: ",
        "counted by ringlab",
    ] {
        assert!(text.contains(want), "{want:?} missing in:\n{text}");
    }
    assert!(!text.contains("Socket errors"), "{text}");
}

#[test]
fn descriptor_limit_is_raised_for_many_connections() {
    use std::os::unix::process::CommandExt;
    let server = Server::start("");
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(argv(&format!(
        "http {} -t 1 -c 300 -d 200ms --output-format json",
        server.url()
    )));
    // SAFETY: setrlimit is async-signal-safe; it runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 100,
                rlim_max: 100,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        });
    }
    let out = run_limited(cmd);
    if out.status.success() {
        // Root (CAP_SYS_RESOURCE) raised the limit and held every connection.
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        check_consistent(&r, "300 connections under a limit of 100");
        assert_eq!(u(&r["http"]["errors"]["connect"]), 0);
        assert!(u(&r["http"]["connects"]) >= 300);
    } else {
        assert_fails(&out, 2, &["--connections 300", "ulimit -n"]);
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    for (line, wants) in [
        ("http ftp://127.0.0.1/", vec!["scheme 'ftp'"]),
        ("http 127.0.0.1:80", vec!["not a URL"]),
        (
            "http http://no-such-host.invalid/",
            vec!["cannot resolve host"],
        ),
        (
            &format!("http http://{refused}/ -d 100ms") as &str,
            vec!["cannot connect", "refused"],
        ),
        (
            "http http://127.0.0.1:1/ --sqpoll",
            vec!["--sqpoll", "epoll"],
        ),
        (
            "http http://127.0.0.1:1/ --io uring --defer-taskrun",
            vec!["--single-issuer"],
        ),
        (
            "http http://127.0.0.1:1/ --io uring --sqpoll --coop-taskrun",
            vec!["--sqpoll"],
        ),
        (
            "http http://127.0.0.1:1/ --io uring-mshot --sqpoll",
            vec!["DEFER_TASKRUN"],
        ),
        (
            "http http://127.0.0.1:1/ -t 4 -c 2",
            vec!["--connections 2", "--threads 4"],
        ),
        ("http http://127.0.0.1:1/ --pipeline 0", vec!["--pipeline"]),
        ("http http://127.0.0.1:1/ -d 0s", vec!["--duration"]),
        ("http http://127.0.0.1:1/ -R 0", vec!["--rate"]),
        ("http http://127.0.0.1:1/ -H nocolon", vec!["--header"]),
        ("serve --listen nonsense", vec!["--listen"]),
        ("serve --body-size lots", vec!["--body-size"]),
    ] {
        let out = ringlab(line);
        assert_fails(&out, 2, &wants);
    }
}
