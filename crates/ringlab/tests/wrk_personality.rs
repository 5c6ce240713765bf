//! `ringlab wrk` (and the binary run as `wrk`): wrk's output for every
//! ending, read by a strict wrk-output regex (the whole stdout must match,
//! each stats line wrk's 50 columns); thread:stop(), no response, socket
//! errors and non-2xx answers, `-c1k`, the order of a script's print() on a
//! pipe, and https:// on every driver against a TLS server made here
//! (rustls, with a certificate rcgen makes for the test).

mod common;

use common::{run_limited, Server, BIN};
use regex::Regex;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

const IOS: [&str; 4] = ["epoll", "uring-nb", "uring", "uring-mshot"];

fn wrk(args: &str) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.arg("wrk").args(args.split_whitespace());
    run_limited(cmd)
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "ringlab wrk failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// What a wrk-output parser takes out of wrk 4.1's stdout.
#[derive(Debug)]
struct Wrk {
    threads: u64,
    connections: u64,
    latency: [String; 4],
    req_sec: [String; 4],
    distribution: Vec<(String, String)>,
    requests: u64,
    runtime_us: f64,
    socket_errors: Option<[u64; 4]>,
    non_2xx: Option<u64>,
    req_per_s: f64,
}

fn time_us(s: &str) -> f64 {
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap();
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().unwrap();
    n * match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        u => panic!("unit {u}"),
    }
}

/// The whole of stdout must be wrk's layout, line for line (the lines a
/// script prints before and after are cut off by the caller).
fn parse(text: &str) -> Wrk {
    let cell = r"\s*(\S+)";
    let re = Regex::new(&format!(
        concat!(
            r"\ARunning \d+m?s test @ \S+\n",
            r"  (\d+) threads and (\d+) connections\n",
            r"  Thread Stats   Avg      Stdev     Max   \+/- Stdev\n",
            r"(    Latency {c}{c}{c}{c}%\n)",
            r"(    Req/Sec {c}{c}{c}{c}%\n)",
            r"(  Latency Distribution\n(?:(?: {{5}}\d\d%) +\S+\n){{4}})?",
            r"  (\d+) requests in (\S+), \S+B read\n",
            r"(?:  Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)\n)?",
            r"(?:  Non-2xx or 3xx responses: (\d+)\n)?",
            r"Requests/sec: +([0-9.]+)\n",
            r"Transfer/sec: +\S+B\n\z"
        ),
        c = cell
    ))
    .unwrap();
    let m = re
        .captures(text)
        .unwrap_or_else(|| panic!("not wrk's layout:\n{text}"));
    let g = |i: usize| m.get(i).map(|x| x.as_str().to_string());
    let n = |i: usize| g(i).map(|s| s.parse::<u64>().unwrap());
    // wrk's print_stats: "    %-10s" and cells of 8, 10, 9 and 8 columns
    // and '%': 50 bytes.
    for line in [g(3).unwrap(), g(8).unwrap()] {
        assert_eq!(line.len(), 51, "wrk's widths: {line:?}");
    }
    let distribution = g(13)
        .map(|b| {
            b.lines()
                .skip(1)
                .map(|l| {
                    assert_eq!(l.len(), 18, "wrk's widths: {l:?}");
                    let mut w = l.split_whitespace();
                    (w.next().unwrap().into(), w.next().unwrap().into())
                })
                .collect()
        })
        .unwrap_or_default();
    let errors = n(16).map(|c| [c, n(17).unwrap(), n(18).unwrap(), n(19).unwrap()]);
    Wrk {
        threads: n(1).unwrap(),
        connections: n(2).unwrap(),
        latency: [g(4).unwrap(), g(5).unwrap(), g(6).unwrap(), g(7).unwrap()],
        req_sec: [
            g(9).unwrap(),
            g(10).unwrap(),
            g(11).unwrap(),
            g(12).unwrap(),
        ],
        distribution,
        requests: n(14).unwrap(),
        runtime_us: time_us(&g(15).unwrap()),
        socket_errors: errors,
        non_2xx: n(20),
        req_per_s: g(21).unwrap().parse().unwrap(),
    }
}

fn script(name: &str, body: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, body).unwrap();
    let path = p.display().to_string();
    (dir, path)
}

/// wrk's scripts/stop.lua: the thread stops after 100 responses. wrk's
/// main thread still sleeps out -d, and reports that wall time and the
/// rate over it.
#[test]
fn a_run_ended_by_stop_reports_its_wall_time_and_rate() {
    let s = Server::start("");
    let (_d, stop) = script(
        "stop.lua",
        "local counter = 1\nfunction response()\n  if counter == 100 then\n    wrk.thread:stop()\n  end\n  counter = counter + 1\nend\n",
    );
    let out = ok(&wrk(&format!("-t1 -c1 -d300ms -s {stop} {}", s.url())));
    let w = parse(&out);
    assert_eq!(w.requests, 100, "{out}");
    assert!(
        w.runtime_us >= 300_000.0,
        "the run lasted -d, not until stop(): {out}"
    );
    let rate = w.requests as f64 / (w.runtime_us / 1e6);
    assert!(
        (w.req_per_s - rate).abs() / rate < 0.05,
        "Requests/sec is over the printed time: {out}"
    );
    // No rate window of 100 ms completed before stop(): wrk's zeros.
    assert_eq!(
        w.req_sec,
        ["0.00", "0.00", "0.00", "-nan"].map(String::from)
    );
}

/// A server that accepts and never answers.
fn silent_server() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().flatten() {
            held.push(s);
        }
    });
    format!("http://{addr}/")
}

#[test]
fn a_run_without_a_response_prints_wrks_zeros_and_nan() {
    let url = silent_server();
    let out = ok(&wrk(&format!("-t1 -c2 -d200ms --latency {url}")));
    let w = parse(&out);
    assert_eq!(w.requests, 0);
    assert_eq!(
        w.latency,
        ["0.00us", "0.00us", "0.00us", "-nan"].map(String::from)
    );
    assert_eq!(
        w.req_sec,
        ["0.00", "0.00", "0.00", "-nan"].map(String::from)
    );
    assert_eq!(
        w.distribution,
        ["50%", "75%", "90%", "99%"].map(|p| (p.to_string(), "0.00us".to_string()))
    );
    // wrk's timeout closes nothing: no request was answered late.
    assert_eq!(w.socket_errors, None, "{out}");
    assert!(out.contains("  0 requests in "), "{out}");
    assert!(out.ends_with("Requests/sec:      0.00\nTransfer/sec:       0.00B\n"));
}

/// Answers every request with `status`, or with half a response and a
/// close when `status` is 0.
fn answering_server(status: u16) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || answer(s, status));
        }
    });
    format!("http://{addr}/")
}

fn answer(mut s: TcpStream, status: u16) {
    let mut buf = [0u8; 4096];
    let mut pending = Vec::new();
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            pending.drain(..end + 4);
            if status == 0 {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort");
                return;
            }
            let r = format!("HTTP/1.1 {status} X\r\nContent-Length: 2\r\n\r\nno");
            if s.write_all(r.as_bytes()).is_err() {
                return;
            }
        }
    }
}

#[test]
fn errors_and_non_2xx_lines_are_wrks() {
    let out = ok(&wrk(&format!("-t1 -c1 -d200ms {}", answering_server(404))));
    let w = parse(&out);
    assert!(w.requests > 0);
    assert_eq!(w.non_2xx, Some(w.requests), "{out}");
    assert_eq!(w.socket_errors, None);

    let out = ok(&wrk(&format!("-t1 -c1 -d200ms {}", answering_server(0))));
    let w = parse(&out);
    let e = w
        .socket_errors
        .unwrap_or_else(|| panic!("no errors line: {out}"));
    assert_eq!(e[0], 0, "connect");
    assert!(e[1] > 0, "a close mid-response is a read error: {out}");
    assert_eq!((e[2], e[3]), (0, 0));
}

#[test]
fn wrks_suffixes_and_defaults() {
    let s = Server::start("");
    let out = ok(&wrk(&format!("-t1 -c1k -d200ms {}", s.url())));
    let w = parse(&out);
    // (How many of the 1000 answered within 200 ms depends on the load of
    // the machine: not asserted.)
    assert_eq!((w.threads, w.connections), (1, 1000));
    // wrk's defaults: 2 threads, 10 connections, 10s (only parsed here).
    let out = ringlab_wrk_bad("http://127.0.0.1:1/ -d 10x");
    assert!(out.contains("not a time"), "{out}");
}

fn ringlab_wrk_bad(args: &str) -> String {
    let out = wrk(args);
    assert_eq!(out.status.code(), Some(2));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// setup()/init() print before "Running", response() prints before the
/// report and done() after it, on a pipe (C stdio fully buffered), in
/// wrk's order: setup and init of one thread, then of the next.
#[test]
fn script_prints_keep_wrks_order_on_a_pipe() {
    let s = Server::start("");
    let (_d, p) = script(
        "p.lua",
        concat!(
            "local n = 0\n",
            "function setup(thread) print('setup ' .. thread.id) end\n",
            "function init(args) print('init') end\n",
            "function response() n = n + 1; if n == 1 then print('response') end end\n",
            "function done(summary) print('done ' .. summary.duration) end\n"
        ),
    );
    let out = ok(&wrk(&format!("-t2 -c2 -d200ms -s {p} {}", s.url())));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..4],
        ["setup id", "init", "setup id", "init"],
        "{out}"
    );
    assert!(lines[4].starts_with("Running 200ms test @ "), "{out}");
    let report_start = out.find("  Thread Stats").unwrap();
    let first_response = out.find("response\n").unwrap();
    assert!(first_response < report_start, "{out}");
    let done = lines.last().unwrap();
    let us: u64 = done.strip_prefix("done ").unwrap().parse().unwrap();
    assert!(us >= 200_000, "summary.duration is measured: {done}");
    // Without the script's lines, wrk's layout. The two threads' first
    // response() may print at the same moment: Lua's print writes the text
    // and the newline apart (in wrk too), so "responseresponse" and an
    // empty line can come out.
    let body: String = out
        .lines()
        .filter(|l| {
            !["setup id", "init"].contains(l)
                && !l.replace("response", "").is_empty()
                && !l.starts_with("done ")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    parse(&body);
}

/// The binary under the name `wrk` is `ringlab wrk`.
#[test]
fn invoked_as_wrk() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("wrk");
    std::os::unix::fs::symlink(BIN, &link).unwrap();
    let s = Server::start("");
    let mut cmd = Command::new(&link);
    cmd.args(["-t1", "-c1", "-d200ms", &s.url()]);
    let w = parse(&ok(&run_limited(cmd)));
    assert!(w.requests > 0);
    let mut cmd = Command::new(&link);
    cmd.arg("-v");
    let out = ok(&run_limited(cmd));
    assert!(out.starts_with("wrk 4.1.0 "), "{out}");
}

/// A TLS keep-alive server: rustls with a self-signed certificate made by
/// rcgen, a thread per connection, 200 and "ok" to every request; with
/// `close_notify`, an HTTP/1.0 answer whose body ends with the server's
/// close_notify while the TCP connection stays open (as `openssl s_server
/// -www` does).
fn tls_server(close_notify: bool) -> String {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.cert.der().clone()], key)
    .unwrap();
    let config = Arc::new(config);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, s);
                let mut buf = [0u8; 4096];
                let mut pending = Vec::new();
                loop {
                    let n = match tls.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        if close_notify {
                            let _ = tls.write_all(b"HTTP/1.0 200 OK\r\n\r\nclose-delimited");
                            tls.conn.send_close_notify();
                            let _ = tls.flush();
                            std::thread::sleep(Duration::from_secs(3));
                            return;
                        }
                        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                        if tls.write_all(r).and_then(|_| tls.flush()).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    format!("https://localhost:{}/", addr.port())
}

#[test]
fn https_on_every_driver() {
    let url = tls_server(false);
    for io in IOS {
        let out = wrk(&format!("-t1 -c2 -d200ms --io {io} --ringlab {url}"));
        let text = ok(&out);
        let w = parse(&text);
        assert!(w.requests > 0, "{io}: {text}");
        assert_eq!(w.socket_errors, None, "{io}: {text}");
        assert_eq!(w.non_2xx, None, "{io}: {text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("ringlab: io {io}")) && err.contains("TLS: rustls in user space"),
            "{io}: which driver and TLS path ran: {err}"
        );
        // 2 bytes of body per response, plus the head: bytes are the
        // plain text, as wrk counts them.
        assert!(text.contains("B read"));
    }
    // wrk's timeouts keep a slow TLS server's connections; a plain-HTTP
    // server spoken to in TLS fails each handshake: connect errors.
    let s = Server::start("");
    let url = format!("https://{}/", s.addr);
    let text = ok(&wrk(&format!("-t1 -c1 -d200ms {url}")));
    let w = parse(&text);
    assert_eq!(w.requests, 0, "{text}");
}

/// The server's close_notify ends a close-delimited body even when the
/// server keeps the TCP connection open.
#[test]
fn tls_close_notify_ends_the_response() {
    let url = tls_server(true);
    for io in ["epoll", "uring"] {
        let text = ok(&wrk(&format!("-t1 -c1 -d200ms --io {io} {url}")));
        let w = parse(&text);
        assert!(w.requests > 1, "{io}: one response per connection: {text}");
        assert_eq!(w.socket_errors, None, "{io}: {text}");
    }
}
