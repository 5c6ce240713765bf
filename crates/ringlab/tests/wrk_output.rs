//! Parsers written for wrk's and wrk2's output read ringlab's unchanged:
//! the parser below is shaped like the common ones (regexes on the header,
//! the Latency row, the percentiles, Requests/sec, Transfer/sec), is first
//! checked against outputs in wrk's and wrk2's formats, then fed ringlab's.
//! Also: every driver's open-loop corrected latency is never below its
//! uncorrected one.

mod common;

use common::{ringlab, Server};
use regex::Regex;

const IOS: [&str; 4] = ["epoll", "uring-nb", "uring", "uring-mshot"];

/// What a wrk parser extracts; times in microseconds, sizes in bytes.
#[derive(Debug, Default)]
struct Parsed {
    duration: String,
    url: String,
    threads: u64,
    connections: u64,
    lat_avg_us: f64,
    lat_stdev_us: f64,
    lat_max_us: f64,
    lat_within_pct: f64,
    req_avg: f64,
    requests: u64,
    elapsed_us: f64,
    read_bytes: f64,
    socket_errors: Option<[u64; 4]>,
    non_2xx: Option<u64>,
    req_per_s: f64,
    transfer_per_s: f64,
    /// wrk's "Latency Distribution" (percent, us).
    percentiles: Vec<(f64, f64)>,
    /// wrk2's blocks: recorded, uncorrected.
    hdr_recorded: Vec<(f64, f64)>,
    hdr_uncorrected: Vec<(f64, f64)>,
    /// wrk2's spectrum rows: value ms, percentile, total count.
    spectrum: Vec<(f64, f64, u64)>,
}

/// Runs ringlab with `args`, which must succeed, and parses its output as
/// a wrk parser would; returns the text with it.
fn run_parsed(args: &str) -> (String, Parsed) {
    let out = ringlab(args);
    assert!(out.status.success(), "{args}: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let p = parse(&text);
    (text, p)
}

fn time_us(n: &str, unit: &str) -> f64 {
    let n: f64 = n.parse().unwrap();
    n * match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        u => panic!("not a wrk time unit: {u}"),
    }
}

fn bytes(n: &str, unit: &str) -> f64 {
    let n: f64 = n.parse().unwrap();
    n * match unit {
        "B" => 1.0,
        "KB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        "TB" => 1024f64.powi(4),
        u => panic!("not a wrk size unit: {u}"),
    }
}

fn metric(n: &str) -> f64 {
    let (num, mul) = match n.chars().last().unwrap() {
        'k' => (&n[..n.len() - 1], 1e3),
        'M' => (&n[..n.len() - 1], 1e6),
        _ => (n, 1.0),
    };
    num.parse::<f64>().unwrap() * mul
}

fn dist(block: &str) -> Vec<(f64, f64)> {
    let re = Regex::new(r"(?m)^\s*([\d.]+)%\s+([\d.]+)(us|ms|s|m)\s*$").unwrap();
    re.captures_iter(block)
        .map(|c| (c[1].parse().unwrap(), time_us(&c[2], &c[3])))
        .collect()
}

/// Parses wrk (and wrk2) output as the usual scripts do; panics on any
/// line a wrk parser needs and cannot find.
fn parse(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let head =
        Regex::new(r"Running (\S+) test @ (\S+)\n  (\d+) threads and (\d+) connections\n").unwrap();
    let c = head.captures(text).expect("header lines");
    p.duration = c[1].to_string();
    p.url = c[2].to_string();
    p.threads = c[3].parse().unwrap();
    p.connections = c[4].parse().unwrap();
    let lat = Regex::new(
        r"Latency\s+([\d.]+)(us|ms|s|m)\s+([\d.]+)(us|ms|s|m)\s+([\d.]+)(us|ms|s|m)\s+([\d.]+)%",
    )
    .unwrap();
    let c = lat.captures(text).expect("Latency row");
    p.lat_avg_us = time_us(&c[1], &c[2]);
    p.lat_stdev_us = time_us(&c[3], &c[4]);
    p.lat_max_us = time_us(&c[5], &c[6]);
    p.lat_within_pct = c[7].parse().unwrap();
    let rs =
        Regex::new(r"Req/Sec\s+([\d.]+[kM]?)\s+([\d.]+[kM]?)\s+([\d.]+[kM]?)\s+([\d.]+)%").unwrap();
    p.req_avg = metric(&rs.captures(text).expect("Req/Sec row")[1]);
    let total =
        Regex::new(r"(\d+) requests in ([\d.]+)(us|ms|s|m), ([\d.]+)(B|KB|MB|GB|TB) read").unwrap();
    let c = total.captures(text).expect("requests line");
    p.requests = c[1].parse().unwrap();
    p.elapsed_us = time_us(&c[2], &c[3]);
    p.read_bytes = bytes(&c[4], &c[5]);
    let se = Regex::new(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
        .unwrap();
    p.socket_errors = se
        .captures(text)
        .map(|c| [1, 2, 3, 4].map(|i| c[i].parse().unwrap()));
    let nx = Regex::new(r"Non-2xx or 3xx responses: (\d+)").unwrap();
    p.non_2xx = nx.captures(text).map(|c| c[1].parse().unwrap());
    let rps = Regex::new(r"Requests/sec:\s+([\d.]+)").unwrap();
    p.req_per_s = rps.captures(text).expect("Requests/sec")[1]
        .parse()
        .unwrap();
    let tps = Regex::new(r"Transfer/sec:\s+([\d.]+)(B|KB|MB|GB|TB)").unwrap();
    let c = tps.captures(text).expect("Transfer/sec");
    p.transfer_per_s = bytes(&c[1], &c[2]);
    if let Some(i) = text.find("  Latency Distribution\n") {
        p.percentiles = dist(&text[i..]);
    }
    let hdr = |what: &str| -> Vec<(f64, f64)> {
        let start = format!("  Latency Distribution (HdrHistogram - {what}");
        match text.find(&start) {
            Some(i) => {
                let block = &text[i..];
                let end = block.find("\n\n").unwrap();
                dist(&block[..end])
            }
            None => Vec::new(),
        }
    };
    p.hdr_recorded = hdr("Recorded Latency)");
    p.hdr_uncorrected = hdr("Uncorrected Latency");
    let spec = Regex::new(r"(?m)^\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+([\d.]+|inf)$").unwrap();
    if let Some(i) = text.find("Detailed Percentile spectrum") {
        let block = &text[i..text[i..].find("#[Mean").map_or(text.len(), |e| i + e)];
        p.spectrum = spec
            .captures_iter(block)
            .map(|c| {
                (
                    c[1].parse().unwrap(),
                    c[2].parse().unwrap(),
                    c[3].parse().unwrap(),
                )
            })
            .collect();
    }
    // wrk's last two lines.
    let last: Vec<&str> = text.trim_end().lines().rev().take(2).collect();
    assert!(last[0].starts_with("Transfer/sec:"), "last line: {text}");
    assert!(
        last[1].starts_with("Requests/sec:"),
        "second to last: {text}"
    );
    p
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn the_parser_reads_wrk_and_wrk2_outputs() {
    let p = parse(&fixture("wrk.txt"));
    assert_eq!(p.duration, "10s");
    assert_eq!(p.url, "http://127.0.0.1:8080/index.html");
    assert_eq!((p.threads, p.connections), (2, 100));
    assert_eq!(p.lat_avg_us, 1280.0);
    assert_eq!(p.lat_stdev_us, 412.66);
    assert_eq!(p.lat_max_us, 12730.0);
    assert_eq!(p.lat_within_pct, 81.27);
    assert_eq!(p.req_avg, 39380.0);
    assert_eq!(p.requests, 783612);
    assert_eq!(p.elapsed_us, 10e6);
    assert_eq!(p.read_bytes, 634.65 * 1024.0 * 1024.0);
    assert_eq!(p.socket_errors, Some([0, 12, 0, 3]));
    assert_eq!(p.non_2xx, Some(41));
    assert_eq!(p.req_per_s, 78354.73);
    assert_eq!(p.transfer_per_s, 63.46 * 1024.0 * 1024.0);
    assert_eq!(
        p.percentiles,
        vec![
            (50.0, 1220.0),
            (75.0, 1450.0),
            (90.0, 1710.0),
            (99.0, 2610.0)
        ]
    );

    let p = parse(&fixture("wrk2.txt"));
    assert_eq!(p.lat_avg_us, 823.54);
    assert_eq!(p.req_avg, 2110.0);
    assert_eq!(p.hdr_recorded.len(), 8);
    assert_eq!(p.hdr_recorded[0], (50.0, 796.0));
    assert_eq!(p.hdr_recorded[7], (100.0, 3110.0));
    assert_eq!(p.hdr_uncorrected[0], (50.0, 702.0));
    assert_eq!(p.spectrum.len(), 5, "{:?}", p.spectrum);
    assert_eq!(p.spectrum[4], (3.111, 1.0, 19998));
    assert_eq!(p.requests, 20000);
    assert_eq!(p.transfer_per_s, 255.84 * 1024.0);
}

#[test]
fn a_wrk_parser_reads_ringlabs_closed_loop_output() {
    let srv = Server::start("--body-size 1k");
    for io in IOS {
        let (text, p) = run_parsed(&format!(
            "http {} -t 2 -c 4 -d 300ms -L -T 2s --io {io}",
            srv.url()
        ));
        assert_eq!(p.duration, "300ms");
        assert_eq!(p.url, srv.url());
        assert_eq!((p.threads, p.connections), (2, 4), "{io}");
        assert!(p.requests > 0, "{io}: {text}");
        assert!(
            p.lat_avg_us > 0.0 && p.lat_max_us >= p.lat_avg_us,
            "{io}: {text}"
        );
        assert!(p.req_avg > 0.0, "{io}");
        // Requests/sec is the count over the elapsed time, to print rounding.
        let rate = p.requests as f64 / (p.elapsed_us / 1e6);
        assert!(
            (rate / p.req_per_s - 1.0).abs() < 0.02,
            "{io}: {rate} vs {}",
            p.req_per_s
        );
        // Each response is a little over 1 KiB: the size units are wrk's.
        assert!(
            p.read_bytes >= p.requests as f64 * 1024.0 * 0.99,
            "{io}: {text}"
        );
        assert!(p.transfer_per_s > 0.0);
        let ps: Vec<f64> = p.percentiles.iter().map(|x| x.0).collect();
        assert_eq!(ps, vec![50.0, 75.0, 90.0, 99.0], "{io}: {text}");
        assert!(p.percentiles.windows(2).all(|w| w[0].1 <= w[1].1), "{text}");
        assert!(!text.contains("MiB") && !text.contains(", io "), "{text}");
        assert!(p.socket_errors.is_none() && p.non_2xx.is_none(), "{text}");
        // ringlab's own lines come before Requests/sec.
        let rl = text.find("  ringlab: io ").expect("ringlab block");
        assert!(rl < text.find("Requests/sec:").unwrap(), "{text}");
    }
    // --percentile-list chooses the percentiles (and implies --latency).
    let out = ringlab(&format!(
        "http {} -t 1 -c 2 -d 200ms --percentile-list 50,95,99.9",
        srv.url()
    ));
    let p = parse(&String::from_utf8_lossy(&out.stdout));
    let ps: Vec<f64> = p.percentiles.iter().map(|x| x.0).collect();
    assert_eq!(ps, vec![50.0, 95.0, 99.9]);
}

#[test]
fn a_wrk2_parser_reads_ringlabs_open_loop_output() {
    let srv = Server::start("");
    let out = ringlab(&format!(
        "http {} -t 1 -c 2 -d 500ms -R 400 --latency -U",
        srv.url()
    ));
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let p = parse(&text);
    let ps: Vec<f64> = p.hdr_recorded.iter().map(|x| x.0).collect();
    assert_eq!(
        ps,
        vec![50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0],
        "{text}"
    );
    assert_eq!(p.hdr_uncorrected.len(), 8, "{text}");
    assert!(text.contains("\n 50.000% "), "{text}");
    // The spectrum climbs to 100% and counts every response.
    let (_, q, n) = *p.spectrum.last().expect("spectrum rows");
    assert_eq!(q, 1.0, "{text}");
    assert_eq!(n, p.requests, "{text}");
    assert!(p
        .spectrum
        .windows(2)
        .all(|w| w[0].0 <= w[1].0 && w[0].2 <= w[1].2));
    // The 100% row is the Latency row's max, to print rounding.
    let max = p.hdr_recorded[7].1;
    assert!(
        (max / p.lat_max_us - 1.0).abs() < 0.01,
        "{max} vs {}",
        p.lat_max_us
    );
    // Without -R there is no uncorrected latency to print.
    let out = ringlab(&format!("http {} -d 100ms -U", srv.url()));
    common::assert_fails(&out, 2, &["--u_latency needs -R"]);
}

/// Open loop on every driver: the corrected latency (from when each
/// request was due) is never below the uncorrected one (from when it was
/// sent), percentile by percentile, over the same percentiles. That the
/// drivers wait to the nanosecond, not to a rounded
/// millisecond, is checked where the waits are (the drivers' unit tests,
/// by their lower bound): how much later than its deadline a shared
/// machine wakes a thread is the machine's, so no test here bounds it.
#[test]
fn open_loop_corrected_latency_is_never_below_uncorrected() {
    let srv = Server::start("");
    for io in IOS {
        let (text, p) = run_parsed(&format!(
            "http {} -t 1 -c 2 -d 400ms -R 1000 --latency -U --no-kstat --io {io}",
            srv.url()
        ));
        assert!(p.requests > 0, "{io}: {text}");
        assert_eq!(p.hdr_recorded.len(), p.hdr_uncorrected.len(), "{io}");
        for (c, u) in p.hdr_recorded.iter().zip(&p.hdr_uncorrected) {
            assert_eq!(c.0, u.0, "{io}: the same percentiles");
            // Printed to 0.001 ms: equal values may print a hair apart.
            assert!(
                c.1 + 1.0 >= u.1,
                "{io}: corrected below uncorrected at {}%: {text}",
                c.0
            );
        }
    }
}

#[test]
fn json_alias_and_n_total_requests() {
    let srv = Server::start("");
    for io in IOS {
        let out = ringlab(&format!(
            "http {} -t 2 -c 4 -d 10s -n 301 --json --io {io}",
            srv.url()
        ));
        assert!(out.status.success(), "{io}: {out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        common::assert_schema_valid(&v);
        assert_eq!(v["total"]["ops"], 301, "{io}");
        assert_eq!(v["config"]["requests"], 301);
    }
    // --percentile-list reaches the JSON too (oha's p95).
    let out = ringlab(&format!(
        "http {} -t 1 -c 2 -d 200ms --percentile-list 50,95,99.9 --json",
        srv.url()
    ));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    common::assert_schema_valid(&v);
    let ps = &v["http"]["lat_ns_percentiles"];
    let (p50, p95, p999) = (
        ps["50"].as_u64().unwrap(),
        ps["95"].as_u64().unwrap(),
        ps["99.9"].as_u64().unwrap(),
    );
    assert!(p50 > 0 && p50 <= p95 && p95 <= p999, "{ps}");
    assert_eq!(v["total"]["lat_ns"]["p50"].as_u64().unwrap(), p50);
    let out = ringlab(&format!(
        "http {} -d 100ms --json --output-format text",
        srv.url()
    ));
    assert_eq!(out.status.code(), Some(2));
}
