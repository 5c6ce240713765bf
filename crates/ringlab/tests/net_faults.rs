//! Faults on the HTTP side: clients and servers that misbehave, a kernel
//! without io_uring, closed output pipes. Each case asserts the exit code,
//! the message and bounded memory or time (bounds far from what a correct
//! build needs, never a speed).

mod common;

use common::*;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The resident set of process `pid` in KiB, from /proc/PID/status.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status"))
}

/// One request, its response read whole: the server still answers.
fn one_request(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).unwrap();
    got
}

/// Serve's memory stays bounded under clients that pipeline requests and
/// never read, and is given back when they leave.
#[test]
fn serve_memory_is_bounded_under_pipelining_clients_that_never_read() {
    const LIMIT_KIB: u64 = 64 * 1024;
    for io in ["epoll", "uring"] {
        let server = Server::start(&format!("--io {io} --body-size 4k"));
        let pid = server.pid();
        let idle = rss_kib(pid);
        let request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(256);
        let mut clients: Vec<TcpStream> = (0..4)
            .map(|_| {
                let s = TcpStream::connect(&server.addr).unwrap();
                s.set_nonblocking(true).unwrap();
                s
            })
            .collect();
        let (start, mut sent, mut peak) = (Instant::now(), 0u64, 0);
        while start.elapsed() < Duration::from_secs(1) {
            for s in &mut clients {
                match s.write(&request) {
                    Ok(n) => sent += n as u64,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => panic!("{io}: the server dropped a client: {e}"),
                }
            }
            peak = peak.max(rss_kib(pid));
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(sent > 0, "{io}: nothing was sent");
        assert!(
            peak < LIMIT_KIB,
            "{io}: serve grew to {peak} KiB (idle {idle} KiB) under {sent} request bytes never read"
        );
        drop(clients);
        // Gone clients leave no backlog behind: memory stays bounded and
        // the server answers the next client.
        let got = one_request(&server.addr);
        assert!(got.starts_with("HTTP/1.1 200 OK"), "{io}: {got:?}");
        let after = rss_kib(pid);
        assert!(
            after < LIMIT_KIB,
            "{io}: {after} KiB after the clients left"
        );
        eprintln!("serve --io {io}: idle {idle} KiB, peak {peak} KiB, after {after} KiB, {sent} request bytes sent");
        let summary = server.stop();
        assert!(summary["requests"].as_u64().unwrap() > 0, "{io}: {summary}");
    }
}

/// RFC 9112 §6.3 and §3.2: framing serve cannot trust is 400, then close.
#[test]
fn serve_answers_400_and_closes_on_bad_framing() {
    for io in ["epoll", "uring"] {
        let server = Server::start(&format!("--io {io}"));
        for req in [
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\na",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x1\r\n\r\na",
            "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        ] {
            let mut s = TcpStream::connect(&server.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            // A second request behind it must not be answered.
            s.write_all(format!("{req}GET / HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .unwrap();
            let mut got = String::new();
            // read_to_string returns once the server closes.
            let _ = s.read_to_string(&mut got);
            assert!(
                got.starts_with("HTTP/1.1 400 Bad Request"),
                "{io} {req:?}: {got:?}"
            );
            assert_eq!(got.matches("HTTP/1.1").count(), 1, "{io} {req:?}: {got:?}");
        }
        let got = one_request(&server.addr);
        assert!(got.starts_with("HTTP/1.1 200 OK"), "{io}: {got:?}");
        server.stop();
    }
}

const DRIVERS: [&str; 4] = ["epoll", "uring-nb", "uring", "uring-mshot"];

/// A port that accepts one connection (the client's probe) and is then
/// closed: every later connect is refused, as when a server dies.
fn port_that_dies() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let _ = l.accept();
    });
    addr
}

/// A dead server costs a few connects per connection and second (an
/// exponential back-off), not a hot loop of them; the errors are named.
#[test]
fn dead_server_makes_the_client_back_off_and_name_the_errors() {
    for io in DRIVERS {
        let addr = port_that_dies();
        let start = Instant::now();
        // No response: the run failed (exit 1), and its JSON is still out.
        let out = ringlab(&format!(
            "http http://{addr}/ -t 2 -c 10 -d 1s --io {io} --output-format json"
        ));
        assert_eq!(out.status.code(), Some(1), "{io}");
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{io}: took {:?}",
            start.elapsed()
        );
        assert_schema_valid(&r);
        let h = &r["http"];
        let connects = h["connects"].as_u64().unwrap();
        let refused = h["errors"]["connect"].as_u64().unwrap();
        assert!(refused > 0, "{io}: {h}");
        assert!(connects < 2000, "{io}: {connects} connects in 1 s: {h}");
        assert_eq!(h["responses"], 0, "{io}");
        let warnings = r["warnings"].to_string();
        assert!(
            warnings.contains(&format!(
                "no response completed: socket errors connect {refused}"
            )),
            "{io}: {warnings}"
        );
        eprintln!("{io}: {connects} connects, {refused} connect errors in 1 s");
    }
    // The text names them too.
    let addr = port_that_dies();
    let out = ringlab(&format!("http http://{addr}/ -t 1 -c 2 -d 200ms"));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Socket errors: connect "), "{text}");
    assert!(
        text.contains("warning: no response completed: socket errors connect "),
        "{text}"
    );
}

/// Zero responses and zero errors: the warning says so instead of pointing
/// at socket errors that are not there, and the run failed (exit 1).
#[test]
fn a_run_without_responses_or_errors_says_what_happened() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept() {
            held.push(s);
        }
    });
    let out = ringlab(&format!(
        "http http://{addr}/ -t 1 -c 2 -d 200ms --timeout 10s"
    ));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing was measured (the run failed)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("warning: no response completed and no socket error: 2 requests were sent and are still unanswered"),
        "{text}"
    );
}

/// Headers that would corrupt the request framing are refused, saying how.
#[test]
fn framing_headers_are_refused_with_exit_2() {
    for (header, want) in [
        ("Content-Length: 5", "--body"),
        ("Transfer-Encoding: chunked", "--body"),
    ] {
        let mut cmd = std::process::Command::new(BIN);
        cmd.args(["http", "http://127.0.0.1:9/", "-d", "100ms", "-H", header]);
        let out = run_limited(cmd);
        assert_fails(&out, 2, &[header, want]);
    }
}

/// Without io_uring, serve --io uring and the http uring drivers stop with
/// exit 2 before anything runs ("listening" is never printed), naming the
/// sysctl or seccomp and --io epoll.
#[cfg(target_arch = "x86_64")]
#[test]
fn io_uring_refused_is_exit_2_with_the_fix() {
    let sysctl_open = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .is_ok_and(|v| v.trim() == "0");
    let why = if sysctl_open {
        "seccomp"
    } else {
        "io_uring_disabled"
    };
    let serve = ringlab_without_io_uring(
        "serve --io uring --listen 127.0.0.1:0 --duration 10s",
        libc::EPERM as u32,
    );
    assert_fails(&serve, 2, &["serve --io uring", why, "--io epoll"]);
    let serve = ringlab_without_io_uring(
        "serve --io uring --listen 127.0.0.1:0 --duration 10s",
        libc::ENOSYS as u32,
    );
    assert_fails(&serve, 2, &["ENOSYS", "--io epoll"]);
    let server = Server::start("--io epoll");
    for io in ["uring-nb", "uring", "uring-mshot"] {
        let line = format!("http {} -t 2 -c 2 -d 200ms --io {io}", server.url());
        let out = ringlab_without_io_uring(&line, libc::EPERM as u32);
        assert_fails(&out, 2, &[io, why, "--io epoll"]);
        assert!(out.stdout.is_empty(), "{io}: printed a result");
    }
    // epoll does not need io_uring.
    let line = format!("http {} -t 1 -c 1 -d 100ms --io epoll", server.url());
    let out = ringlab_without_io_uring(&line, libc::EPERM as u32);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.stop();
}

/// The JSON of serve and features follows the schema their --help cites.
#[test]
fn serve_and_features_json_follow_the_schemas_their_help_cites() {
    for (command, schema) in [
        ("serve", "serve.schema.json"),
        ("features", "features.schema.json"),
    ] {
        let help = ringlab(&format!("{command} --help"));
        let help = String::from_utf8_lossy(&help.stdout).replace(char::is_whitespace, "");
        assert!(
            help.contains(&format!("(schema/{schema})")),
            "{command}: {help}"
        );
    }
    for io in ["epoll", "uring"] {
        let server = Server::start(&format!("--io {io}"));
        let got = one_request(&server.addr);
        assert!(got.starts_with("HTTP/1.1 200 OK"));
        let v = server.stop();
        assert_valid_against("serve.schema.json", &v);
        assert_eq!(v["requests"], 1, "{v}");
    }
    // A temporary directory (tmpfs: no device) and the source tree (most
    // often on a block device: its queues and interrupts).
    let dir = tempfile::tempdir().unwrap();
    for line in [
        "features".to_string(),
        format!("features {}", dir.path().display()),
        format!("features {}", env!("CARGO_MANIFEST_DIR")),
    ] {
        let v = json_run(&line);
        assert_valid_against("features.schema.json", &v);
        assert!(
            !v["setup_flags"].as_array().unwrap().is_empty(),
            "{line}: {v}"
        );
    }
}

/// A pipe whose reading end is already closed: every write to the other
/// end fails with EPIPE, as when the reader of `ringlab ... | head` left.
fn closed_pipe() -> std::process::Stdio {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned here only.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    write.into()
}

/// Closed stdout and stderr end any command with its exit code or 1,
/// never a panic (101), and leave nothing behind.
#[test]
fn closed_stdout_and_stderr_never_panic() {
    let server = Server::start("--io epoll");
    let dir = tempfile::tempdir().unwrap();
    for (line, want) in [
        ("features".to_string(), 1),
        ("features --output-format json".to_string(), 1),
        ("http http://127.0.0.1:1/ -d 100ms".to_string(), 2),
        ("http --bogus".to_string(), 2),
        (format!("http {} -t 1 -c 1 -d 100ms", server.url()), 1),
        ("serve --listen 127.0.0.1:0 -d 100ms".to_string(), 1),
        (
            format!(
                "io --directory {} --size 1m --runtime 100ms",
                dir.path().display()
            ),
            1,
        ),
    ] {
        let mut cmd = std::process::Command::new(BIN);
        cmd.args(argv(&line))
            .stdin(std::process::Stdio::null())
            .stdout(closed_pipe())
            .stderr(closed_pipe());
        let mut child = cmd.spawn().unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "{line}: hangs");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(want), "{line}: {status:?}");
    }
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
    server.stop();
}

/// A script that never returns is stopped once the run could have ended
/// (-d plus --timeout), naming the function; os.exit ends the run with the
/// script's code, named; delay() must give a sane number of milliseconds.
#[test]
fn scripts_that_hang_exit_or_return_nonsense_are_named() {
    let server = Server::start("");
    let dir = tempfile::tempdir().unwrap();
    // A state that allocates without end: the script's error (the limit
    // is reached long before -d 10s ends).
    let script = dir.path().join("alloc.lua");
    std::fs::write(
        &script,
        "function request() local t = {} while true do t[#t + 1] = string.rep('x', 1e8) .. #t end end",
    )
    .unwrap();
    let out = ringlab(&format!(
        "http {} -t 1 -c 1 -d 10s -s {}",
        server.url(),
        script.display()
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not enough memory"), "{err}");
    let cases: [(&str, i32, &str); 7] = [
        (
            "function request() while true do end end",
            1,
            "request() has run for",
        ),
        (
            "init = function(a) while true do end end",
            1,
            "init() has run for",
        ),
        ("while true do end", 1, "the script's top level has run for"),
        ("function init(a) os.exit(3) end", 3, "os.exit(3) in init()"),
        (
            "function delay() return 'x' end",
            1,
            "delay(): returned string",
        ),
        (
            "function delay() return 0/0 end",
            1,
            "delay(): returned NaN",
        ),
        (
            "function delay() return 2^63 end",
            1,
            "a delay is a number of milliseconds",
        ),
    ];
    for (i, (body, code, want)) in cases.iter().enumerate() {
        let script = dir.path().join(format!("s{i}.lua"));
        std::fs::write(&script, body).unwrap();
        let started = Instant::now();
        let out = ringlab(&format!(
            "http {} -t 1 -c 1 -d 300ms --timeout 300ms -s {}",
            server.url(),
            script.display()
        ));
        let err = String::from_utf8_lossy(&out.stderr);
        eprintln!("{body}: {:?} {}", out.status.code(), err.trim());
        assert_eq!(out.status.code(), Some(*code), "{body}: {err}");
        assert!(err.contains(want), "{body}: {err}");
        assert!(started.elapsed() < Duration::from_secs(20));
    }
}

/// The watchdog also stops response() and done() when they overrun the
/// run (-d plus --timeout), naming them; done() runs after the report, so
/// the results are out.
#[test]
fn endless_response_and_done_are_stopped_and_named() {
    let server = Server::start("");
    let dir = tempfile::tempdir().unwrap();
    for (body, want, results) in [
        (
            "function response(s, h, b) while true do end end",
            "response() has run for",
            false,
        ),
        (
            "function done(s, l, r) while true do end end",
            "done() has run for",
            true,
        ),
    ] {
        let script = dir.path().join("s.lua");
        std::fs::write(&script, body).unwrap();
        for cmd in ["http", "wrk"] {
            let line = if cmd == "http" {
                format!(
                    "http {} -t 1 -c 1 -d 300ms --timeout 300ms -s {}",
                    server.url(),
                    script.display()
                )
            } else {
                format!(
                    "wrk -t 1 -c 1 -d 1s --timeout 300ms -s {} {}",
                    script.display(),
                    server.url()
                )
            };
            let out = ringlab(&line);
            let err = String::from_utf8_lossy(&out.stderr);
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(1), "{line}: {err}");
            assert!(err.contains(want), "{line}: {err}");
            assert!(err.contains("longer than the whole run may last"), "{err}");
            assert_eq!(text.contains("requests in"), results, "{line}: {text}");
        }
    }
}

/// os.exit(N) anywhere in a script (the first request() included, before
/// anything was measured) ends the run with its results, possibly empty,
/// and a line naming the code and the function; the exit code is N.
#[test]
fn os_exit_ends_the_run_with_its_results_and_code() {
    let server = Server::start("");
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, i32, &str, bool); 5] = [
        ("function request() os.exit(3) end", 3, "request()", false),
        (
            "n = 0 function request() n = n + 1 if n > 20 then os.exit(4) end return wrk.format() end",
            4,
            "request()",
            true,
        ),
        ("function init(a) os.exit(7) end", 7, "init()", false),
        ("function response(s, h, b) os.exit(5) end", 5, "response()", true),
        ("function done(s, l, r) os.exit(6) end", 6, "done()", true),
    ];
    for (i, (body, code, hook, measured)) in cases.iter().enumerate() {
        let script = dir.path().join(format!("x{i}.lua"));
        std::fs::write(&script, body).unwrap();
        for cmd in ["http", "wrk"] {
            let line = if cmd == "http" {
                format!(
                    "http {} -t 1 -c 1 -d 2s -s {}",
                    server.url(),
                    script.display()
                )
            } else {
                format!(
                    "wrk -t 1 -c 1 -d 2s -s {} {}",
                    script.display(),
                    server.url()
                )
            };
            let out = ringlab(&line);
            let err = String::from_utf8_lossy(&out.stderr);
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(*code), "{line}: {err}");
            assert!(
                err.contains(&format!("os.exit({code}) in {hook}"))
                    && err.contains(&format!("exit code {code}")),
                "{line}: {err}"
            );
            // The results block, empty or not.
            assert!(text.contains("requests in"), "{line}: {text}");
            assert_eq!(
                !text.contains(" 0 requests in"),
                *measured,
                "{line}: {text}"
            );
        }
        // JSON: one result, whose warning names the code.
        let out = ringlab(&format!(
            "http {} -t 1 -c 1 -d 2s -s {} --output-format json",
            server.url(),
            script.display()
        ));
        assert_eq!(out.status.code(), Some(*code));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON result");
        if *hook != "done()" {
            assert!(
                v["warnings"]
                    .to_string()
                    .contains(&format!("os.exit({code}) in {hook}")),
                "{v}"
            );
        }
    }
}

/// A URL's #fragment is never sent; user:pass@ is refused with the header
/// to use instead.
#[test]
fn url_fragments_are_dropped_and_credentials_refused() {
    let server = Server::start("");
    let out = ringlab(&format!("http {}#frag -t 1 -c 1 -d 200ms", server.url()));
    assert_ok(&out);
    let out = ringlab("http http://user:pw@127.0.0.1:1/ -t 1 -c 1 -d 200ms");
    assert_fails(&out, 2, &["credentials", "Authorization: Basic"]);
}

/// `serve` out of file descriptors says so once and waits, instead of
/// spinning on a listener that stays ready.
#[test]
fn serve_out_of_descriptors_says_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("ulimit -n 24 && exec {BIN} serve --listen 127.0.0.1:{port}"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut held = Vec::new();
    while held.len() < 40 {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => held.push(s),
            Err(_) => {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "serve never listened"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let _ = child.wait();
    assert!(err.contains("cannot accept more connections"), "{err}");
    assert_eq!(err.matches("cannot accept").count(), 1, "{err}");
}
