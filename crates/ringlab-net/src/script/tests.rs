use super::*;

#[test]
fn counts_pipelined_requests_and_refuses_broken_ones() {
    let one = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    assert_eq!(count_requests(one), Ok(1));
    let post = b"POST /p HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
    assert_eq!(count_requests(&[&one[..], post, one].concat()), Ok(3));
    assert!(count_requests(b"").is_err());
    assert!(count_requests(b"GET / HTTP/1.1\r\nHost: h\r\n").is_err());
    assert!(count_requests(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc").is_err());
    assert!(count_requests(b"garbage\r\n\r\n").is_err());
}

fn table(url: &str) -> WrkTable {
    WrkTable {
        url: url.to_string(),
        scheme: "http".into(),
        host: "127.0.0.1".into(),
        port: Some("8080".into()),
        path: "/p?q".into(),
        method: "GET".into(),
        body: None,
        headers: vec!["X-A: 1".into()],
        addr: "127.0.0.1:8080".parse().unwrap(),
    }
}

fn spec(src: &str, args: &[&str]) -> ScriptSpec {
    ScriptSpec {
        path: PathBuf::from("test.lua"),
        source: src.to_string(),
        args: args.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn wrk_table_format_and_static_request() {
    let s = spec(
        r#"wrk.method = "POST"; wrk.body = "a=b"
        assert(wrk.scheme == "http" and wrk.host == "127.0.0.1" and wrk.port == "8080")
        assert(wrk.path == "/p?q" and wrk.headers["X-A"] == "1")
        assert(require("wrk") == wrk)"#,
        &[],
    );
    let mut run = ScriptRun::prepare(&table("http://127.0.0.1:8080/p?q"), &s, 1).unwrap();
    let t = run.threads[0].take().unwrap();
    let req = String::from_utf8(t.static_request().unwrap().to_vec()).unwrap();
    assert!(req.starts_with("POST /p?q HTTP/1.1\r\n"), "{req}");
    assert!(req.contains("Host: 127.0.0.1:8080\r\n"), "{req}");
    assert!(req.contains("Content-Length: 3\r\n"), "{req}");
    assert!(req.ends_with("\r\n\r\na=b"), "{req}");
    assert_eq!(t.per_write, 1);
    assert!(!t.dynamic() && !t.has_delay() && !t.wants_response());
}

#[test]
fn setup_init_args_get_set_and_stop() {
    let s = spec(
        r#"
        local n = 0
        threads = {}
        function setup(thread)
            n = n + 1
            thread:set("id", n)
            thread:set("tbl", { a = 1, b = { "x" } })
            table.insert(threads, thread)
            assert(tostring(thread.addr) == "127.0.0.1:8080")
            local addrs = wrk.lookup("127.0.0.1", "9")
            thread.addr = addrs[1]
        end
        function init(args)
            got = args[0] .. "|" .. args[1] .. "|" .. args[2]
            assert(tbl.b[1] == "x")
        end
        function request()
            calls = (calls or 0) + 1
            if calls == 3 then wrk.thread:stop() end
            return wrk.format(nil, "/" .. id)
        end
        function delay() return 1.5 end
        "#,
        &["a", "b"],
    );
    let mut run = ScriptRun::prepare(&table("http://127.0.0.1:8080/"), &s, 2).unwrap();
    assert_eq!(run.addr_of(1).unwrap().port(), 9);
    let mut t = run.threads[1].take().unwrap();
    assert!(t.dynamic() && t.has_delay());
    assert_eq!(t.delay_ns(), 1_500_000);
    let first = t.next_request().unwrap().to_vec();
    assert!(first.starts_with(b"GET /2 HTTP/1.1"));
    assert!(!t.halted());
    t.next_request().unwrap();
    t.next_request().unwrap();
    assert!(t.halted(), "thread:stop() in request() stops the thread");
    run.threads[1] = Some(t);
    let got: String = run
        .main
        .load(r#"return threads[2]:get("got")"#)
        .eval()
        .unwrap();
    assert_eq!(got, "http://127.0.0.1:8080/|a|b");
}

#[test]
fn errors_are_usage_errors_with_the_script_name() {
    let bad = spec("this is not lua", &[]);
    let e = ScriptRun::prepare(&table("http://h:1/"), &bad, 1)
        .err()
        .unwrap();
    assert!(e.is::<ringlab_core::UsageError>());
    assert!(e.to_string().contains("test.lua"), "{e}");
    let bad_req = spec("function request() return 'nonsense' end", &[]);
    let e = ScriptRun::prepare(&table("http://h:1/"), &bad_req, 1)
        .err()
        .unwrap();
    assert!(e.to_string().contains("request() returned"), "{e}");
    let mut run = ScriptRun::prepare(
        &table("http://h:1/"),
        &spec("function response() error('boom') end", &[]),
        1,
    )
    .unwrap();
    let mut t = run.threads[0].take().unwrap();
    t.response(200, &Captured::default());
    assert!(t.halted());
    assert!(t.error.as_deref().unwrap().contains("boom"));
}
