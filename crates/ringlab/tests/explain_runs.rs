//! The explain step on real runs: `ringlab http` proves its ring knobs
//! (SQPOLL, registered sockets, multishot receive) in its text and its
//! JSON, as `ringlab io` does. Verdicts are asserted as root, where every
//! counter can be read; otherwise the lines must be there, with a verdict
//! or the reason why none can be given.

mod common;

use common::*;
use serde_json::Value;

/// The evidence line of `knob` in a JSON result.
fn evidence<'a>(r: &'a Value, knob: &str) -> &'a Value {
    r["kstat"]["evidence"]
        .as_array()
        .unwrap_or_else(|| panic!("no kstat.evidence: {r}"))
        .iter()
        .find(|e| e["knob"] == knob)
        .unwrap_or_else(|| panic!("no evidence line for {knob}: {}", r["kstat"]["evidence"]))
}

#[test]
fn http_sqpoll_prints_its_evidence() {
    let server = Server::start("");
    let out = ringlab(&format!(
        "http {} -t 1 -c 4 -d 300ms --io uring --sqpoll",
        server.url()
    ));
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("  ringlab: --sqpoll "))
        .unwrap_or_else(|| panic!("no --sqpoll evidence line:\n{text}"));
    // The closing lines stay wrk's.
    let last: Vec<&str> = text.lines().rev().take(2).collect();
    assert!(last[1].starts_with("Requests/sec:"), "{text}");
    assert!(last[0].starts_with("Transfer/sec:"), "{text}");
    if is_root() {
        assert!(
            line.starts_with("  ringlab: --sqpoll in effect: 1 poller thread used"),
            "{line}"
        );
        assert!(line.contains("io_uring_enter"), "{line}");
    }

    let r = json_run(&format!(
        "http {} -t 1 -c 4 -d 300ms --io uring --sqpoll",
        server.url()
    ));
    assert_schema_valid(&r);
    let e = evidence(&r, "--sqpoll");
    if is_root() {
        assert_eq!(e["in_effect"], true, "{e}");
    }
}

#[test]
fn http_proves_registered_sockets_and_multishot_receive() {
    let server = Server::start("");
    let r = json_run(&format!(
        "http {} -t 1 -c 2 -d 300ms --io uring-mshot",
        server.url()
    ));
    assert_schema_valid(&r);
    let fixed = evidence(&r, "--fixed-files");
    let mshot = evidence(&r, "--io uring-mshot (multishot receive)");
    for (e, name, counter) in [
        (
            fixed,
            "io_uring_file_get_per_op",
            "io_uring:io_uring_file_get",
        ),
        (
            mshot,
            "io_uring_poll_arm_per_op",
            "io_uring:io_uring_poll_arm",
        ),
    ] {
        match kstat_per_op(&r, name, counter) {
            Some(_) => assert_eq!(e["in_effect"], true, "{e}"),
            // Not counted: no verdict, and the line says why.
            None => {
                assert!(e["in_effect"].is_null(), "{e}");
                assert!(e["detail"].as_str().unwrap().contains(counter), "{e}");
            }
        }
    }
    // --io epoll drives no ring: no knob line.
    let epoll = json_run(&format!(
        "http {} -t 1 -c 2 -d 200ms --io epoll",
        server.url()
    ));
    assert_eq!(epoll["kstat"]["evidence"], serde_json::json!([]));
}
