//! The advice for people (text), and the recommended setup stated three
//! ways: `ringlab io` flags, fio options, a liburing snippet.

use super::knobs;
use super::rank::{Range, SetupFigures};
use super::Advice;
use super::Goal;
use serde_json::Value as Json;

/// `ringlab io` command line of a setup with the shape.
pub fn ringlab_io_line(s: &SetupFigures, target: &str) -> String {
    let c = &s.config;
    let get = |k: &str| c.get(k).map(plain).unwrap_or_default();
    let mut parts = vec!["ringlab io".to_string()];
    if !target.is_empty() {
        parts.push(target.to_string());
    }
    parts.push(format!(
        "--rw {} --bs {} --iodepth {} --numjobs {}",
        get("rw"),
        get("bs"),
        get("iodepth"),
        get("numjobs")
    ));
    if c.get("direct") == Some(&Json::Bool(true)) {
        parts.push("--direct".into());
    }
    parts.extend(s.flags.iter().cloned());
    parts.join(" ")
}

fn plain(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// fio options of a setup; knobs fio cannot set are named in a comment.
pub fn fio_line(s: &SetupFigures) -> String {
    let c = &s.config;
    let get = |k: &str| c.get(k).map(plain).unwrap_or_default();
    let engine = match s.engine.as_str() {
        "uring" => "io_uring",
        "sync" => "psync",
        other => other,
    };
    let mut parts = vec![format!(
        "fio --name=advised --ioengine={engine} --rw={} --bs={} --iodepth={} --numjobs={} --thread",
        get("rw"),
        get("bs"),
        get("iodepth"),
        get("numjobs")
    )];
    if c.get("direct") == Some(&Json::Bool(true)) {
        parts.push("--direct=1".into());
    }
    let mut missing = Vec::new();
    for k in &s.knobs {
        match knobs::fio_option(k) {
            Some(o) => parts.push(o.to_string()),
            None => missing.push(k.as_str()),
        }
        if k == "sqpoll" {
            if let Some(cpu) = c.get("sqpoll-cpu").and_then(Json::as_u64) {
                parts.push(format!("--sqthread_poll_cpu={cpu}"));
            }
        }
    }
    if s.engine == "uring" {
        let ring = s
            .knobs
            .iter()
            .filter(|k| knobs::default_ring().contains(&k.as_str()))
            .count();
        let sqpoll = s.knobs.iter().any(|k| k == "sqpoll");
        missing.retain(|m| !knobs::default_ring().contains(m));
        if !sqpoll && ring != knobs::default_ring().len() {
            // fio (3.33+) sets its default ring up itself, with no option.
            missing.push("a ring without all of COOP_TASKRUN, SINGLE_ISSUER and DEFER_TASKRUN (fio 3.33+ sets them where the kernel has them)");
        }
    }
    let mut line = parts.join(" ");
    if !missing.is_empty() {
        line.push_str(&format!(
            "   # fio has no option for {}",
            missing
                .iter()
                .map(|k| if k.contains(' ') {
                    k.to_string()
                } else {
                    format!("--{k}")
                })
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    line
}

/// A liburing snippet that sets the ring up as the setup did.
pub fn liburing_snippet(s: &SetupFigures) -> String {
    if s.engine != "uring" {
        return format!("/* {} is not io_uring: no liburing setup */", s.engine);
    }
    let c = &s.config;
    let depth = c.get("iodepth").and_then(Json::as_u64).unwrap_or(32);
    let flags: Vec<&str> = s
        .knobs
        .iter()
        .filter(|k| knobs::is_setup_flag(k))
        .filter_map(|k| knobs::kernel_name(k).map(|n| n.0))
        .collect();
    let mut out = String::new();
    let sqpoll = s.knobs.iter().any(|k| k == "sqpoll");
    let cpu = c.get("sqpoll-cpu").and_then(Json::as_u64);
    let mut all_flags = flags.clone();
    if sqpoll && cpu.is_some() {
        all_flags.push("IORING_SETUP_SQ_AFF");
    }
    let flag_expr = if all_flags.is_empty() {
        "0".to_string()
    } else {
        all_flags.join(" | ")
    };
    out.push_str(&format!(
        "struct io_uring ring;\nstruct io_uring_params p = {{ .flags = {flag_expr}"
    ));
    if let Some(cpu) = cpu.filter(|_| sqpoll) {
        out.push_str(&format!(", .sq_thread_cpu = {cpu}"));
    }
    out.push_str(" };\n");
    if s.knobs.iter().any(|k| k == "attach-wq") {
        out.push_str("p.flags |= IORING_SETUP_ATTACH_WQ; p.wq_fd = first_ring.ring_fd; /* every ring after the first */\n");
    }
    out.push_str(&format!(
        "int ret = io_uring_queue_init_params({depth}, &ring, &p); /* one ring per thread */\n"
    ));
    if s.knobs.iter().any(|k| k == "fixed-files") {
        out.push_str("io_uring_register_files(&ring, fds, nr_fds); /* then sqe->fd = index, sqe->flags |= IOSQE_FIXED_FILE */\n");
    }
    if s.knobs.iter().any(|k| k == "fixed-buffers") {
        out.push_str("io_uring_register_buffers(&ring, iovecs, nr_bufs); /* then io_uring_prep_read_fixed(sqe, fd, buf, len, off, buf_index) */\n");
    }
    if s.knobs.iter().any(|k| k == "force-async") {
        out.push_str("io_uring_sqe_set_flags(sqe, IOSQE_ASYNC); /* on every request */\n");
    }
    if s.knobs.iter().any(|k| k == "defer-taskrun") {
        out.push_str("/* DEFER_TASKRUN + SINGLE_ISSUER: only the thread that set the ring up may submit and reap, and it must wait with io_uring_submit_and_wait()/io_uring_wait_cqe() for completions to appear */\n");
    }
    if s.knobs.iter().any(|k| k == "iopoll") {
        out.push_str("/* IOPOLL: open the file with O_DIRECT; completions are found by io_uring_wait_cqe() polling the device */\n");
    }
    let since: Vec<String> = s
        .knobs
        .iter()
        .filter_map(|k| knobs::kernel_name(k).map(|(n, v)| format!("{n} {v}")))
        .collect();
    if !since.is_empty() {
        out.push_str(&format!("/* needs Linux: {} */\n", since.join(", ")));
    }
    out
}

fn fmt_range(r: Option<Range>, scale: f64, digits: usize) -> String {
    match r {
        None => "n/a".to_string(),
        Some(r) => format!(
            "{:.d$} [{:.d$}-{:.d$}]",
            r.median / scale,
            r.min / scale,
            r.max / scale,
            d = digits
        ),
    }
}

/// The advice as text.
pub fn text(a: &Advice) -> String {
    let mut s = String::new();
    let varies = a.ranked.iter().any(|r| r.shape != a.ranked[0].shape);
    s.push_str(&format!(
        "ringlab advise: goal {}, shape {}{}\n",
        a.goal.name(),
        if varies {
            "(varies, first result's) "
        } else {
            ""
        },
        a.shape
            .iter()
            .map(|(k, v)| format!("{k}={}", plain(v)))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    if let Some(k) = &a.kernel {
        s.push_str(&format!("kernel {k}; results in {}\n", a.results_dir));
    }
    if let Some(c) = &a.calibration {
        s.push_str(&format!(
            "calibration: {} runs ({} repeats, shuffled) of {:.1} s each, jobs on CPUs {:?}, {:.0} s of a {:.0} s budget\n",
            c.runs, c.repeats, c.runtime_per_run_s, c.job_cpus, c.wall_s, c.budget_s
        ));
    }
    if !a.skipped.is_empty() {
        s.push_str("\nskipped:\n");
        for k in &a.skipped {
            s.push_str(&format!("  {:<14} {}\n", k.setup, k.reason));
        }
    }
    s.push_str(&format!(
        "\nranked by {} (median [min-max] over repeats; CPU includes kernel helper threads):\n",
        match a.goal {
            Goal::Iops => "IOPS",
            Goal::Latency => "p99 latency",
            Goal::Cpu => "CPU per I/O",
        }
    ));
    s.push_str(&format!(
        "  {:<3} {:<16} {:>26} {:>24} {:>24} {:>22}  {:>38}  flags\n",
        "#", "setup", "IOPS", "p50 µs", "p99 µs", "CPU µs/I/O", "vs #1 [95% interval] p"
    ));
    let (goal_scale, goal_digits) = match a.goal {
        Goal::Iops => (1.0, 0),
        Goal::Latency => (1e3, 1),
        Goal::Cpu => (1.0, 2),
    };
    for (i, r) in a.ranked.iter().enumerate() {
        let vs = match (&r.vs_best, r.goal_interval) {
            (Some(v), _) => v.text(),
            // The best itself: its median's own interval.
            (None, Some(iv)) if i == 0 => format!(
                "(best) median in [{:.d$}, {:.d$}]",
                iv.lo / goal_scale,
                iv.hi / goal_scale,
                d = goal_digits
            ),
            (None, None) if i == 0 => "(best)".to_string(),
            _ => "n/a".to_string(),
        };
        s.push_str(&format!(
            "  {:<3} {:<16} {:>26} {:>24} {:>24} {:>22}  {:>38}  {}\n",
            i + 1,
            r.setup,
            fmt_range(Some(r.iops), 1.0, 0),
            fmt_range(r.lat_ns_p50, 1e3, 1),
            fmt_range(r.lat_ns_p99, 1e3, 1),
            fmt_range(r.cpu_us_per_op, 1.0, 2),
            vs,
            r.flags.join(" ")
        ));
    }
    s.push_str(&format!(
        "  vs #1: the goal's figure against the best setup's, as a change with its 95% bootstrap interval over the repeats and the Mann-Whitney U p-value; {}\n",
        ringlab_stats::effect::TILDE_LEGEND
    ));
    let rec = &a.recommendation;
    s.push_str(&format!(
        "\nrecommended: {}\n  why: {}\n",
        rec.setup, rec.why
    ));
    if let Some(b) = &rec.baseline {
        if rec.evidence.is_empty() {
            s.push_str(&format!(
                "  evidence vs {b}: no per-I/O counter differs by more than 10%\n"
            ));
        } else {
            s.push_str(&format!("  evidence (per I/O, {} vs {b}):\n", rec.setup));
            for e in &rec.evidence {
                s.push_str(&format!(
                    "    {:<34} {:>9.3} vs {:>9.3}  {}\n",
                    e.counter, e.recommended, e.baseline, e.meaning
                ));
            }
        }
    }
    if let Some(chosen) = a.ranked.iter().find(|r| r.setup == rec.setup) {
        if !chosen.diagnoses.is_empty() {
            s.push_str(&format!(
                "  diagnoses on its runs: {} (see 'ringlab io' with these flags)\n",
                chosen.diagnoses.join(", ")
            ));
        }
    }
    s.push_str(&format!(
        "\n  ringlab io:  {}\n  fio:         {}\n  liburing:\n",
        rec.ringlab_io, rec.fio
    ));
    for line in rec.liburing.lines() {
        s.push_str(&format!("    {line}\n"));
    }
    s.push_str("\nthe studies' guidelines on this machine:\n");
    for g in &a.guidelines {
        s.push_str(&format!(
            "  [{}] {}: {} ({})\n      {}\n",
            g.verdict, g.id, g.guideline, g.study, g.detail
        ));
    }
    for w in &a.warnings {
        s.push_str(&format!("\nwarning: {w}\n"));
    }
    s
}
