//! End-to-end runs of the lab: `ringlab sweep` on a small plan (two axes,
//! two repeats, sub-second `ringlab io` runs), its results store, resuming
//! after SIGINT and SIGKILL, `ringlab report` (tables checked against the
//! stored results, SVG parsed as XML, the HTML page) and `ringlab compare`.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// engine x iodepth, two repeats: 8 runs of 100 ms on an 8 MiB file.
fn plan_text(target: &Path, runtime: &str) -> String {
    format!(
        r#"# a small sweep for the tests
command = "io"
repeats = 2
shuffle = true
[options]
size = "8m"
runtime = "{runtime}"
target = "{}"
[axes]
engine = ["sync", "uring"]
iodepth = [1, 4]
"#,
        target.display()
    )
}

/// A temp dir with an 8 MiB target file and a plan file.
fn setup(runtime: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.dat");
    std::fs::write(&target, vec![0u8; 8 << 20]).unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, plan_text(&target, runtime)).unwrap();
    let out = dir.path().join("sweep");
    (dir, plan, out)
}

fn ringlab_args(args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    run_limited(cmd)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Result files in DIR/runs: name -> bytes.
fn stored(out: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .map(|(n, p)| (n, std::fs::read(p).unwrap()))
        .collect()
}

/// CSV (no quoted fields in these tests) as header -> column maps.
fn csv_rows(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text.lines();
    let head: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .map(|l| {
            head.iter()
                .cloned()
                .zip(l.split(',').map(str::to_string))
                .collect()
        })
        .collect()
}

fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("every SVG parses as XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

#[test]
fn sweep_stores_every_run_and_the_report_matches_the_results() {
    let (dir, plan, out) = setup("100ms");

    // --dry-run lists the 8 runs with their command lines, and runs nothing.
    let dry = ringlab_args(&["sweep", p(&plan), "--dry-run"]);
    assert_ok(&dry);
    let text = String::from_utf8(dry.stdout).unwrap();
    assert!(
        text.starts_with("sweep of 'ringlab io': 8 runs (4 combinations x 2 repeats), shuffled"),
        "{text}"
    );
    let listed: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(listed.len(), 8, "{text}");
    assert!(listed
        .iter()
        .all(|l| l.contains("pending") && l.contains("--size 8m --runtime 100ms")));
    assert!(text.contains("--engine uring --iodepth 4"), "{text}");
    assert!(!out.exists(), "a dry run writes nothing");

    let run = ringlab_args(&["sweep", p(&plan), "--output", p(&out)]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    // stderr is no terminal here: one line per run.
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("ringlab sweep: ["))
            .count(),
        8,
        "{err}"
    );
    let summary = String::from_utf8_lossy(&run.stdout);
    assert!(summary.contains("8 of 8 runs done"), "{summary}");

    // The index lists every run, done, with its result; each result follows
    // the schema and ran with the flags of its axis values.
    let index = read_json(&out.join("index.json"));
    let runs = index["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8);
    let validator = schema_validator();
    let mut seen = std::collections::BTreeSet::new();
    for r in runs {
        assert_eq!(r["status"], "done", "{r}");
        let result = read_json(&out.join(r["result"].as_str().unwrap()));
        let errors: Vec<String> = validator
            .iter_errors(&result)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(result["config"]["engine"], r["values"]["engine"]);
        assert_eq!(result["config"]["iodepth"], r["values"]["iodepth"]);
        assert_eq!(result["config"]["size"], 8 << 20);
        assert!(result["total"]["ops"].as_u64().unwrap() > 0);
        seen.insert((r["values"].to_string(), r["repeat"].as_u64().unwrap()));
    }
    assert_eq!(seen.len(), 8, "every combination and repeat once");
    assert_eq!(
        stored(&out).len(),
        8,
        "no temp files left: {:?}",
        stored(&out).keys()
    );

    // The report: its numbers are the medians of the stored results.
    let rep = dir.path().join("report");
    let r = ringlab_args(&["report", p(&out), "--output", p(&rep)]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let csv = std::fs::read_to_string(rep.join("summary.csv")).unwrap();
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 4, "{csv}");
    for row in &rows {
        let mine: Vec<Value> = runs
            .iter()
            .filter(|r| {
                r["values"]["engine"] == row["engine"].as_str()
                    && r["values"]["iodepth"].as_u64() == row["iodepth"].parse().ok()
            })
            .map(|r| read_json(&out.join(r["result"].as_str().unwrap())))
            .collect();
        assert_eq!(mine.len(), 2);
        assert_eq!(row["runs_done"], "2");
        for (col, get) in [
            (
                "iops",
                &(|v: &Value| v["total"]["iops"].as_f64().unwrap()) as &dyn Fn(&Value) -> f64,
            ),
            ("lat_ns_p99", &|v: &Value| {
                v["total"]["lat_ns"]["p99"].as_f64().unwrap()
            }),
            ("bw_bytes_per_s", &|v: &Value| {
                v["total"]["bw_bytes_per_s"].as_f64().unwrap()
            }),
        ] {
            let vals: Vec<f64> = mine.iter().map(get).collect();
            let want = median(vals.clone());
            let got: f64 = row[&format!("{col}_median")].parse().unwrap();
            assert!(
                (got - want).abs() <= want.abs() * 1e-12,
                "{col}: {got} vs {want}"
            );
            let min: f64 = row[&format!("{col}_min")].parse().unwrap();
            let max: f64 = row[&format!("{col}_max")].parse().unwrap();
            assert_eq!(min, vals.iter().copied().fold(f64::INFINITY, f64::min));
            assert_eq!(max, vals.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        }
    }
    let runs_csv = std::fs::read_to_string(rep.join("runs.csv")).unwrap();
    assert_eq!(runs_csv.lines().count(), 9, "{runs_csv}");
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(md.contains("| engine | iodepth | runs | IOPS |"), "{md}");
    assert!(md.contains("| uring | 4 | 2/2 |"), "{md}");
    // Every configuration against the first; 2 repeats a side can never
    // show a difference, so every comparison is `~`, and the CSV agrees.
    assert!(
        md.contains("## Against the first configuration") && md.contains("fewer than 3"),
        "{md}"
    );
    for row in rows.iter().skip(1) {
        assert_eq!(row["iops_vs_first_differs"], "false", "{csv}");
        assert!(
            row["iops_vs_first_ratio_lo"].parse::<f64>().is_ok(),
            "{csv}"
        );
    }
    assert_eq!(rows[0]["iops_vs_first_ratio"], "", "{csv}");

    // Every SVG is XML with its axis labels and one legend entry per
    // configuration; the x axis is the first numeric axis (iodepth).
    let html = std::fs::read_to_string(rep.join("report.html")).unwrap();
    let mut svgs: Vec<PathBuf> = std::fs::read_dir(&rep)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    svgs.sort();
    let names: Vec<String> = svgs
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    // One plot per generic figure, and one per kernel-evidence figure the
    // results hold that is not zero in every run (results carry `kstat`
    // once the kernel counters are in; without them the report says so).
    let mut kernel: Vec<String> = Vec::new();
    for r in runs {
        let v = read_json(&out.join(r["result"].as_str().unwrap()));
        if let Some(m) = v["kstat"]["per_op"].as_object() {
            for (k, x) in m {
                if x.as_f64().is_some_and(|x| x != 0.0) && !kernel.contains(k) {
                    kernel.push(k.clone());
                }
            }
        }
    }
    let mut want: Vec<String> = ["bw_bytes_per_s", "iops", "lat_ns_p50", "lat_ns_p99"]
        .iter()
        .map(|s| format!("{s}.svg"))
        .chain(kernel.iter().map(|k| format!("kstat_{k}.svg")))
        .collect();
    want.sort();
    assert_eq!(names, want);
    assert_eq!(
        html.contains("No kernel-evidence figures"),
        kernel.is_empty(),
        "the report says when there is no kernel evidence, and only then"
    );
    for path in &svgs {
        let svg = std::fs::read_to_string(path).unwrap();
        let texts = svg_texts(&svg);
        let has = |w: &str| texts.iter().any(|t| t.contains(w));
        assert!(
            has("iodepth (I/Os in flight per job)"),
            "{path:?}: {texts:?}"
        );
        assert!(
            texts.iter().any(|t| t == "engine=sync") && texts.iter().any(|t| t == "engine=uring"),
            "{path:?}: {texts:?}"
        );
        let name = path.file_name().unwrap().to_string_lossy();
        let y_label = match name.as_ref() {
            "iops.svg" => "IOPS",
            "bw_bytes_per_s.svg" => "bandwidth (",
            "lat_ns_p50.svg" => "p50 latency (",
            "lat_ns_p99.svg" => "p99 latency (",
            _ => "per operation",
        };
        assert!(has(y_label), "{path:?} lacks {y_label}: {texts:?}");
        assert!(
            html.contains(svg.trim()),
            "{path:?} is not inline in the HTML"
        );
    }
    // Self-contained: no external requests, no scripts.
    for needle in ["src=", "href=", "<script", "@import", "url("] {
        assert!(!html.contains(needle), "HTML holds {needle}");
    }
}

#[test]
fn kernel_evidence_figures_are_plotted_when_results_hold_them() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.dat");
    std::fs::write(&target, vec![0u8; 4 << 20]).unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "command = \"io\"\n[options]\nruntime = \"50ms\"\nsize = \"4m\"\ntarget = \"{}\"\n[axes]\niodepth = [1, 2, 4, 8]\n",
            target.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("sweep");
    let run = ringlab_args(&["sweep", p(&plan), "--output", p(&out)]);
    assert_ok(&run);
    // Add what issue 4's kstat object carries (measured figures only; an
    // unmeasured one is listed as unavailable).
    for (i, e) in std::fs::read_dir(out.join("runs")).unwrap().enumerate() {
        let path = e.unwrap().path();
        let mut v = read_json(&path);
        v["kstat"] = serde_json::json!({
            "per_op": {"syscalls_per_op": 1.0 + i as f64, "io_uring_queue_async_work_per_op": 0.5},
            "unavailable": {"ipis_per_op": "no permission for perf_event_open"}
        });
        std::fs::write(&path, v.to_string()).unwrap();
    }
    let rep = dir.path().join("report");
    let r = ringlab_args(&["report", p(&out), "--output", p(&rep)]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let html = std::fs::read_to_string(rep.join("report.html")).unwrap();
    for (file, y) in [
        ("kstat_syscalls_per_op.svg", "system calls per operation"),
        (
            "kstat_io_uring_queue_async_work_per_op.svg",
            "io-wq offloads per operation",
        ),
    ] {
        let svg = std::fs::read_to_string(rep.join(file)).unwrap();
        let texts = svg_texts(&svg);
        assert!(texts.iter().any(|t| t == y), "{file}: {texts:?}");
        // 1, 2, 4, 8 span 8x: a log2 axis with the values as ticks.
        assert!(texts.iter().any(|t| t.contains("log2 scale")), "{texts:?}");
        assert!(html.contains(svg.trim()));
    }
    assert!(
        !rep.join("kstat_ipis_per_op.svg").exists(),
        "no plot of an unmeasured figure"
    );
    assert!(!html.contains("No kernel-evidence figures"));
    let csv = std::fs::read_to_string(rep.join("summary.csv")).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .contains("kstat_syscalls_per_op_median"),
        "{csv}"
    );
}

fn spawn_sweep(plan: &Path, out: &Path) -> Child {
    Command::new(BIN)
        .args(["sweep", p(plan), "--output", p(out)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn results_done(out: &Path) -> usize {
    std::fs::read_dir(out.join("runs"))
        .map(|rd| {
            rd.filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                let n = n.to_string_lossy();
                n.ends_with(".json") && !n.starts_with('.')
            })
            .count()
        })
        .unwrap_or(0)
}

fn wait_for_results(out: &Path, n: usize, child: &mut Child) {
    let start = Instant::now();
    while results_done(out) < n {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before {n} results"
        );
        assert!(start.elapsed() < Duration::from_secs(30), "no results");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Resumes the sweep in `out` and checks that the runs stored before are
/// untouched and exactly the missing ones ran.
fn resume_and_check(plan: &Path, out: &Path, before: &BTreeMap<String, Vec<u8>>) {
    let again = ringlab_args(&["sweep", p(plan), "--output", p(out)]);
    let summary = String::from_utf8_lossy(&again.stdout);
    assert_ok(&again);
    let k = before.len();
    assert!(
        summary.contains("8 of 8 runs done")
            && summary.contains(&format!("({} now, {k} before)", 8 - k)),
        "{summary}"
    );
    let after = stored(out);
    assert_eq!(after.len(), 8, "{:?}", after.keys());
    for (name, bytes) in before {
        assert_eq!(&after[name], bytes, "{name} was run again");
    }
    let index = read_json(&out.join("index.json"));
    assert!(index["runs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["status"] == "done"));
}

#[test]
fn a_sweep_interrupted_by_sigint_resumes_without_repeating_or_losing_runs() {
    let (_dir, plan, out) = setup("150ms");
    let mut child = spawn_sweep(&plan, &out);
    wait_for_results(&out, 2, &mut child);
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("ringlab: sweep interrupted with ") && last.contains("resume"),
        "{err}"
    );
    let before = stored(&out);
    assert!(
        before
            .keys()
            .all(|n| n.ends_with(".json") && !n.starts_with('.')),
        "a cut-short run was stored: {:?}",
        before.keys()
    );
    assert!((2..8).contains(&before.len()), "{}", before.len());
    let index = read_json(&out.join("index.json"));
    let done = index["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "done")
        .count();
    assert_eq!(
        done,
        before.len(),
        "the index agrees with the stored results"
    );
    // A dry run against the directory shows what is done and what is left.
    let dry = ringlab_args(&["sweep", p(&plan), "--output", p(&out), "--dry-run"]);
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        text.contains(&format!("{done} of 8 already done")),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.contains(" done ")).count(),
        done,
        "{text}"
    );
    resume_and_check(&plan, &out, &before);
}

#[test]
fn a_sweep_killed_by_sigkill_resumes_without_repeating_or_losing_runs() {
    let (_dir, plan, out) = setup("150ms");
    let mut child = spawn_sweep(&plan, &out);
    wait_for_results(&out, 1, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    // The killed sweep's run gets SIGTERM (PDEATHSIG) and ends by itself.
    std::thread::sleep(Duration::from_millis(300));
    let before: BTreeMap<String, Vec<u8>> = stored(&out)
        .into_iter()
        .filter(|(n, _)| !n.starts_with('.'))
        .collect();
    assert!((1..8).contains(&before.len()), "{}", before.len());
    resume_and_check(&plan, &out, &before);
}

#[test]
fn invalid_plans_are_refused_with_their_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str]); 7] = [
        (
            "command = \"io\"\nrepeats = 2\n[axes]\niodepth = [1, 2\n",
            &["plan.toml:4:"],
        ),
        (
            "command = \"io\"\nrepeat = 2\n",
            &["plan.toml:2:", "repeat"],
        ),
        (
            "command = \"io\"\n[axes]\niodepth = 4\n",
            &["plan.toml:3:", "iodepth", "not a list"],
        ),
        (
            "command = \"io\"\n[axes]\nengine = [\"sync\"]\niodepth = []\n",
            &["plan.toml:4:", "iodepth", "empty"],
        ),
        (
            "command = \"fio\"\n",
            &["plan.toml:1:", "command", "\"io\" or \"http\""],
        ),
        (
            "command = \"io\"\nrepeats = 0\n",
            &["plan.toml:2:", "repeats"],
        ),
        (
            "command = \"io\"\n[options]\noutput = \"x.json\"\n",
            &["plan.toml:3:", "output"],
        ),
    ];
    for (text, wants) in cases {
        let plan = dir.path().join("plan.toml");
        std::fs::write(&plan, text).unwrap();
        let out = ringlab_args(&["sweep", p(&plan), "--output", p(&dir.path().join("o"))]);
        assert_fails(&out, 2, wants);
        assert!(
            !dir.path().join("o").exists(),
            "{text:?}: an invalid plan wrote a results directory"
        );
    }
    let plan = dir.path().join("missing.toml");
    assert_fails(
        &ringlab_args(&["sweep", p(&plan), "--output", "x"]),
        2,
        &["missing.toml"],
    );
    assert_fails(
        &ringlab_args(&["report", p(&dir.path().join("nothing"))]),
        2,
        &["index.json", "ringlab sweep"],
    );
}

#[test]
fn a_value_the_command_refuses_stops_the_sweep_naming_the_run() {
    let (dir, plan, out) = setup("50ms");
    let text = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("[1, 4]", "[1, \"deep\"]")
        .replace("shuffle = true", "shuffle = false");
    std::fs::write(&plan, text).unwrap();
    let run = ringlab_args(&["sweep", p(&plan), "--output", p(&out)]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    let last = err.lines().last().unwrap();
    for w in [
        "ringlab: run 0002",
        "iodepth=deep",
        "--iodepth",
        "fix that value",
    ] {
        assert!(last.contains(w), "{w:?} not in {last}");
    }
    // The run before it is stored; a different plan for the same directory
    // is refused, naming what differs.
    assert_eq!(results_done(&out), 2);
    std::fs::write(&plan, plan_text(&dir.path().join("target.dat"), "50ms")).unwrap();
    let other = ringlab_args(&["sweep", p(&plan), "--output", p(&out)]);
    assert_fails(&other, 2, &["different plan", "axes.iodepth", "shuffle"]);
    assert_fails(&ringlab_args(&["sweep", p(&plan)]), 2, &["--output DIR"]);
}

#[test]
fn compare_prints_two_results_side_by_side_with_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for (engine, file) in [("sync", &a), ("uring", &b)] {
        let out = ringlab(&format!(
            "io --directory {d} --size 4m --runtime 50ms --engine {engine} --output-format json --output {}",
            file.display()
        ));
        assert_ok(&out);
    }
    let out = ringlab_args(&["compare", p(&a), p(&b)]);
    assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("config differs: ") && l.contains("engine sync -> uring")),
        "{text}"
    );
    let (va, vb) = (read_json(&a), read_json(&b));
    let ratio = vb["total"]["iops"].as_f64().unwrap() / va["total"]["iops"].as_f64().unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("throughput (IOPS)"))
        .expect("throughput line");
    assert!(line.ends_with(&format!("{ratio:.3}")), "{line} vs {ratio}");
    assert!(
        text.lines().any(|l| l.starts_with("latency p99 ")),
        "{text}"
    );
    let j = ringlab_args(&["compare", p(&a), p(&b), "--output-format", "json"]);
    let v: Value = serde_json::from_slice(&j.stdout).unwrap();
    // Equal up to the last bits that a JSON round trip of a float may change.
    let got = v["figures"][0]["ratio_b_over_a"].as_f64().unwrap();
    assert!((got - ratio).abs() <= ratio * 1e-12, "{got} vs {ratio}");
    assert_fails(
        &ringlab_args(&["compare", p(&a), p(&dir.path().join("none.json"))]),
        2,
        &["none.json"],
    );
}

#[test]
fn http_sweep_against_serve_reports_requests_per_second() {
    let server = Server::start("--io epoll --body-size 10");
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "command = \"http\"\n[options]\nurl = \"{}\"\nthreads = 1\nduration = \"150ms\"\n[axes]\nconnections = [1, 4]\nio = [\"epoll\", \"uring\"]\n",
            server.url()
        ),
    )
    .unwrap();
    let out = dir.path().join("sweep");
    let run = ringlab_args(&["sweep", p(&plan), "--output", p(&out)]);
    assert_ok(&run);
    let index = read_json(&out.join("index.json"));
    let runs = index["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let mut answered = 0;
    for r in runs {
        assert_eq!(r["status"], "done", "{r}");
        let v = read_json(&out.join(r["result"].as_str().unwrap()));
        assert_schema_valid(&v);
        assert_eq!(v["command"], "http");
        assert_eq!(v["config"]["io"], r["values"]["io"]);
        assert_eq!(v["config"]["connections"], r["values"]["connections"]);
        let n = v["http"]["responses"].as_u64().unwrap();
        assert!(n > 0, "{r}: no responses");
        answered += n;
    }
    // The server answered at least every response the sweep counted (a
    // request cut off by the end of a run may be answered but not read).
    let served = server.stop();
    assert!(
        served["requests"].as_u64().unwrap() >= answered,
        "{served} vs {answered}"
    );

    let rep = dir.path().join("report");
    let r = ringlab_args(&["report", p(&out), "--output", p(&rep)]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(md.contains("requests/s"), "{md}");
    let rows = csv_rows(&std::fs::read_to_string(rep.join("summary.csv")).unwrap());
    assert_eq!(rows.len(), 4);
    let svg = std::fs::read_to_string(rep.join("iops.svg")).unwrap();
    let texts = svg_texts(&svg);
    assert!(texts.iter().any(|t| t.contains("requests/s")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("connections")), "{texts:?}");
    assert!(texts.iter().any(|t| t == "io=uring"), "{texts:?}");
}

/// A sweep of `repeats` runs of uring at `depth` on `target`.
fn depth_sweep(dir: &Path, target: &Path, depth: u32, direct: bool) -> PathBuf {
    let plan = dir.join(format!("depth{depth}.toml"));
    std::fs::write(
        &plan,
        format!(
            // --evidence full: the per-op counts cover each whole 100 ms run.
            // By default they are counted in a 100 ms window a second, and a
            // run over before its window attached has none (CI on 8c9da43:
            // 4 of 5 depth-32 runs had io_uring_enter_per_op).
            "command = \"io\"\nrepeats = 5\nshuffle = true\n[options]\ntarget = \"{}\"\nsize = \"8m\"\nengine = \"uring\"\nrw = \"randread\"\ndirect = {direct}\nruntime = \"100ms\"\niodepth = {depth}\nevidence = \"full\"\n",
            target.display()
        ),
    )
    .unwrap();
    let out = dir.join(format!("depth{depth}"));
    assert_ok(&ringlab_args(&["sweep", p(&plan), "--output", p(&out)]));
    out
}

#[test]
fn compare_of_a_directory_with_itself_finds_no_difference_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.dat");
    assert_ok(&ringlab_args(&[
        "io",
        p(&target),
        "--size",
        "8m",
        "--rw",
        "write",
        "--runtime",
        "20ms",
    ]));
    let s = depth_sweep(dir.path(), &target, 4, false);
    let out = ringlab_args(&["compare", p(&s), p(&s)]);
    assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("figure"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(rows.len() > 5, "{text}");
    for r in rows {
        assert!(r.contains(" ~  p=1.000 n=5+5"), "not ~: {r}\n{text}");
    }
    let j = ringlab_args(&["compare", p(&s), p(&s), "--output-format", "json"]);
    let v: Value = serde_json::from_slice(&j.stdout).unwrap();
    for f in v["comparisons"][0]["figures"].as_array().unwrap() {
        assert_eq!(f["significant"], false, "{f}");
    }
}

#[test]
fn compare_of_two_setups_that_truly_differ_is_significant() {
    // uring at depth 1 against depth 32: 32 requests share one
    // io_uring_enter, so submissions per I/O differ by design, and so does
    // throughput on any device that serves requests in parallel.
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.dat");
    assert_ok(&ringlab_args(&[
        "io",
        p(&target),
        "--size",
        "8m",
        "--rw",
        "write",
        "--runtime",
        "20ms",
    ]));
    // Buffered reads (any file system, tmpfs too): the difference in
    // submissions per I/O does not depend on the device.
    let a = depth_sweep(dir.path(), &target, 1, false);
    let b = depth_sweep(dir.path(), &target, 32, false);
    let out = ringlab_args(&["compare", p(&a), p(&b)]);
    assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    // io_uring_enter per I/O where the tracepoints are counted (root),
    // else the CPU per I/O from rusage: 32 requests per enter either way.
    let row = ["kstat io_uring_enter_per_op", "CPU per operation"]
        .iter()
        .find_map(|name| text.lines().find(|l| l.starts_with(name)))
        .expect("a per-operation row");
    assert!(!row.contains(" ~ "), "{row}\n{text}");
    assert!(row.contains("p=0.008 n=5+5"), "{row}");
    // Two single files still compare, with the note.
    let one = |d: &Path| d.join("runs").join("0000.json");
    let out = ringlab_args(&["compare", p(&one(&a)), p(&one(&b))]);
    assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("one run each cannot show"), "{text}");
}
