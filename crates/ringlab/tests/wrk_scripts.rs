//! wrk's example scripts (auth, counter, delay, pipeline, post, report,
//! setup, stop), written here to behave as wrk's do, run on every --io
//! driver; a recording server checks what they made ringlab send.

mod common;

use common::{ringlab, Server};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const IOS: [&str; 4] = ["epoll", "uring-nb", "uring", "uring-mshot"];

/// A request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A keep-alive server that records every request; /authenticate answers
/// with an X-Token header.
struct Recorder {
    addr: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl Recorder {
    fn start() -> Recorder {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((s, _)) => {
                        let (seen3, stop3) = (seen2.clone(), stop2.clone());
                        std::thread::spawn(move || serve(s, &seen3, &stop3));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        Recorder { addr, seen, stop }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(mut s: TcpStream, seen: &Mutex<Vec<Seen>>, stop: &AtomicBool) {
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(_) => return,
        }
        let mut out = Vec::new();
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            let Ok(httparse::Status::Complete(head)) = req.parse(&buf) else {
                break;
            };
            let hs: Vec<(String, String)> = req
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_string(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect();
            let len: usize = hs
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                .map_or(0, |(_, v)| v.parse().unwrap());
            if buf.len() < head + len {
                break;
            }
            let path = req.path.unwrap_or("").to_string();
            let r = Seen {
                method: req.method.unwrap_or("").to_string(),
                path: path.clone(),
                headers: hs,
                body: buf[head..head + len].to_vec(),
            };
            buf.drain(..head + len);
            seen.lock().unwrap().push(r);
            if path == "/authenticate" {
                out.extend_from_slice(
                    b"HTTP/1.1 200 OK\r\nX-Token: t0k3n\r\nContent-Length: 4\r\n\r\nauth",
                );
            } else {
                out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            }
        }
        if !out.is_empty() && s.write_all(&out).is_err() {
            return;
        }
    }
}

/// Writes `src` to a script file and returns its path.
fn script(dir: &tempfile::TempDir, name: &str, src: &str) -> String {
    let p = dir.path().join(format!("{name}.lua"));
    std::fs::write(&p, src).unwrap();
    p.display().to_string()
}

/// Runs `ringlab http URL ARGS` with the script on driver `io`; stdout.
fn run(url: &str, args: &str, path: &str, io: &str) -> String {
    let out = ringlab(&format!("http {url} {args} --no-kstat --io {io} -s {path}"));
    assert!(
        out.status.success(),
        "{io} {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn requests_line(text: &str) -> u64 {
    let line = text.lines().find(|l| l.contains(" requests in ")).unwrap();
    line.split_whitespace().next().unwrap().parse().unwrap()
}

const POST: &str = r#"
-- POST with a form body and its content type.
wrk.method = "POST"
wrk.body   = "foo=bar&baz=quux"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
"#;

const COUNTER: &str = r#"
-- A new path and X-Counter header for each request (one counter per thread).
counter = 0
request = function()
   path = "/" .. counter
   wrk.headers["X-Counter"] = counter
   counter = counter + 1
   return wrk.format(nil, path)
end
"#;

const AUTH: &str = r#"
-- Fetch a token once, then send it with every request to /resource.
token = nil
path  = "/authenticate"
request = function()
   return wrk.format("GET", path)
end
response = function(status, headers, body)
   if not token and status == 200 then
      token = headers["X-Token"]
      path  = "/resource"
      wrk.headers["X-Token"] = token
   end
end
"#;

const PIPELINE: &str = r#"
-- Three requests in one string: sent together, answered in order.
init = function(args)
   local r = {}
   r[1] = wrk.format(nil, "/?foo")
   r[2] = wrk.format(nil, "/?bar")
   r[3] = wrk.format(nil, "/?baz")
   req = table.concat(r)
end
request = function()
   return req
end
"#;

const DELAY: &str = r#"
-- Wait a random 10 to 50 ms before each request.
function delay()
   return math.random(10, 50)
end
"#;

const REPORT: &str = r#"
-- Latency percentiles as CSV after the run.
done = function(summary, latency, requests)
   io.write("------------------------------\n")
   for _, p in pairs({ 50, 90, 99, 99.999 }) do
      n = latency:percentile(p)
      io.write(string.format("%g%%,%d\n", p, n))
   end
end
"#;

const SETUP: &str = r#"
-- setup() numbers the threads; done() reads their counts back.
local counter = 1
local threads = {}
function setup(thread)
   thread:set("id", counter)
   table.insert(threads, thread)
   counter = counter + 1
end
function init(args)
   requests  = 0
   responses = 0
   local msg = "thread %d created"
   print(msg:format(id))
end
function request()
   requests = requests + 1
   return wrk.request()
end
function response(status, headers, body)
   responses = responses + 1
end
function done(summary, latency, requests)
   for index, thread in ipairs(threads) do
      local id        = thread:get("id")
      local requests  = thread:get("requests")
      local responses = thread:get("responses")
      local msg = "thread %d made %d requests and got %d responses"
      print(msg:format(id, requests, responses))
   end
end
"#;

const STOP: &str = r#"
-- Stop each thread after its 100th response.
local counter = 1
function response()
   if counter == 100 then
      wrk.thread:stop()
   end
   counter = counter + 1
end
"#;

#[test]
fn post_sends_method_body_and_headers() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(&dir, "post", POST);
    for io in IOS {
        let srv = Recorder::start();
        let text = run(&srv.url(), "-t 1 -c 2 -d 200ms", &path, io);
        let seen = srv.seen();
        assert!(!seen.is_empty() && requests_line(&text) > 0, "{io}");
        for r in &seen {
            assert_eq!(r.method, "POST", "{io}");
            assert_eq!(r.path, "/");
            assert_eq!(r.body, b"foo=bar&baz=quux", "{io}");
            assert_eq!(r.header("Content-Length"), Some("16"));
            assert_eq!(
                r.header("Content-Type"),
                Some("application/x-www-form-urlencoded")
            );
            assert_eq!(r.header("Host"), Some(srv.addr.as_str()));
        }
    }
}

#[test]
fn counter_rotates_paths_and_headers() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(&dir, "counter", COUNTER);
    for io in IOS {
        let srv = Recorder::start();
        run(&srv.url(), "-t 1 -c 2 -d 200ms", &path, io);
        let seen = srv.seen();
        let mut nums: Vec<u64> = seen
            .iter()
            .map(|r| {
                let n: u64 = r.path.trim_start_matches('/').parse().unwrap();
                assert_eq!(r.header("X-Counter"), Some(n.to_string().as_str()), "{io}");
                n
            })
            .collect();
        nums.sort();
        let len = nums.len();
        nums.dedup();
        assert_eq!(nums.len(), len, "{io}: a path was sent twice");
        assert!(len > 2 && nums[..3] == [0, 1, 2], "{io}: {nums:?}");
    }
}

#[test]
fn auth_takes_the_token_from_the_first_response() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(&dir, "auth", AUTH);
    for io in IOS {
        let srv = Recorder::start();
        run(&srv.url(), "-t 1 -c 1 -d 200ms", &path, io);
        let seen = srv.seen();
        assert!(seen.len() > 2, "{io}");
        assert_eq!(seen[0].path, "/authenticate", "{io}");
        assert_eq!(seen[0].header("X-Token"), None);
        for r in &seen[1..] {
            assert_eq!(r.path, "/resource", "{io}");
            assert_eq!(r.header("X-Token"), Some("t0k3n"), "{io}");
        }
    }
}

#[test]
fn pipeline_sends_three_requests_per_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(&dir, "pipeline", PIPELINE);
    for io in IOS {
        let srv = Recorder::start();
        let text = run(&srv.url(), "-t 1 -c 1 -d 200ms", &path, io);
        let seen = srv.seen();
        let paths: Vec<&str> = seen.iter().map(|r| r.path.as_str()).collect();
        assert!(paths.len() >= 3, "{io}");
        for (i, p) in paths.iter().enumerate() {
            assert_eq!(*p, ["/?foo", "/?bar", "/?baz"][i % 3], "{io}: {paths:?}");
        }
        // Every response of a pipelined write is counted.
        let n = requests_line(&text);
        assert!(n >= 3 && n <= paths.len() as u64, "{io}: {n}");
    }
}

#[test]
fn delay_waits_before_each_request() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(&dir, "delay", DELAY);
    for io in IOS {
        let srv = Recorder::start();
        run(&srv.url(), "-t 1 -c 2 -d 300ms", &path, io);
        let n = srv.seen().len();
        // At least 10 ms before each request: at most 31 per connection.
        assert!(n > 0 && n <= 2 * 31, "{io}: {n} requests");
    }
}

#[test]
fn report_prints_after_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(&dir, "report", REPORT);
    let srv = Server::start("");
    for io in IOS {
        let text = run(&srv.url(), "-t 2 -c 2 -d 200ms", &path, io);
        let i = text.find("Transfer/sec:").expect("summary");
        let tail: Vec<&str> = text[i..].lines().skip(1).collect();
        assert_eq!(tail[0], "------------------------------", "{io}: {text}");
        let ps: Vec<&str> = tail[1..]
            .iter()
            .map(|l| l.split(',').next().unwrap())
            .collect();
        assert_eq!(ps, ["50%", "90%", "99%", "99.999%"], "{io}: {text}");
        let us: Vec<u64> = tail[1..]
            .iter()
            .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
            .collect();
        assert!(
            us[0] > 0 && us.windows(2).all(|w| w[0] <= w[1]),
            "{io}: {us:?}"
        );
    }
}

#[test]
fn setup_passes_data_to_and_from_the_threads() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(&dir, "setup", SETUP);
    let srv = Server::start("");
    for io in IOS {
        let text = run(&srv.url(), "-t 2 -c 2 -d 200ms", &path, io);
        assert!(text.contains("thread 1 created\n"), "{io}: {text}");
        assert!(text.contains("thread 2 created\n"), "{io}: {text}");
        let mut total = 0;
        for id in 1..=2 {
            let prefix = format!("thread {id} made ");
            let line = text
                .lines()
                .find(|l| l.starts_with(&prefix))
                .unwrap_or_else(|| panic!("{io}: {text}"));
            let w: Vec<&str> = line.split_whitespace().collect();
            let (req, resp): (u64, u64) = (w[3].parse().unwrap(), w[7].parse().unwrap());
            assert!(req >= resp && resp > 0 && req - resp <= 1, "{io}: {line}");
            total += resp;
        }
        assert_eq!(total, requests_line(&text), "{io}");
    }
}

#[test]
fn stop_ends_each_thread_after_100_responses() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(&dir, "stop", STOP);
    let srv = Server::start("");
    for io in IOS {
        let text = run(&srv.url(), "-t 2 -c 4 -d 20s", &path, io);
        let n = requests_line(&text);
        // 100 per thread, plus what its other connection had in flight.
        assert!((200..=204).contains(&n), "{io}: {n} responses\n{text}");
    }
}

#[test]
fn script_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = script(&dir, "bad", "this is not lua");
    let srv = Server::start("");
    let out = ringlab(&format!("http {} -d 100ms -s {bad}", srv.url()));
    common::assert_fails(&out, 2, &["--script", "bad.lua"]);
    let out = ringlab(&format!("http {} -d 100ms -s /nonexistent.lua", srv.url()));
    common::assert_fails(&out, 2, &["--script /nonexistent.lua"]);
    let out = ringlab(&format!("http {} -d 100ms -- a b", srv.url()));
    common::assert_fails(&out, 2, &["add -s FILE"]);
    let broken = script(&dir, "broken", "function request() return 'nope' end");
    let out = ringlab(&format!("http {} -d 100ms -s {broken}", srv.url()));
    common::assert_fails(&out, 2, &["request() returned"]);
    let failing = script(&dir, "failing", "function response() error('boom') end");
    let out = ringlab(&format!("http {} -d 2s -s {failing}", srv.url()));
    common::assert_fails(&out, 1, &["boom"]);
    // init(args): the URL at 0, then what follows --.
    let args = script(
        &dir,
        "args",
        "function init(a) print('args ' .. a[0] .. ' ' .. a[1] .. ' ' .. a[2]) end",
    );
    let out = ringlab(&format!(
        "http {} -t 1 -c 1 -d 100ms -s {args} -- x y",
        srv.url()
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("args {} x y\n", srv.url())),
        "{text}"
    );
}
