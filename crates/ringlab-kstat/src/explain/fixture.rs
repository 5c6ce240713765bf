//! A made-up result for the explain step's tests.

use ringlab_stats::RunResult;
use serde_json::{json, Value as Json};

/// A made-up io result: `config` and `per_op` over defaults.
pub fn result(config: Json, per_op: Json, p50: u64, p99: u64) -> RunResult {
    let mut cfg = json!({"engine": "uring", "iodepth": 8, "numjobs": 1, "cpus": []});
    for (k, v) in config.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    let lat = json!({"min": 1, "mean": 1.0, "stdev": 0.0, "p50": p50, "p90": p50,
        "p99": p99, "p99_9": p99, "p99_99": p99, "max": p99});
    let dir = json!({"ops": 0, "bytes": 0, "iops": 0.0, "bw_bytes_per_s": 0.0, "lat_ns": null});
    serde_json::from_value(json!({
        "schema_version": 1,
        "tool": {"name": "ringlab", "version": "0"},
        "command": "io",
        "started_at": "2026-11-23T00:00:00Z",
        "host": {"hostname": "h", "kernel": "6.8", "cpu_model": null, "cpus_online": 2, "io_uring_disabled": 0},
        "config": cfg,
        "target": null,
        "jobs": [],
        "total": {"elapsed_ns": 1_000_000_000u64, "ops": 1000, "bytes": 0, "iops": 1000.0,
            "bw_bytes_per_s": 0.0, "lat_ns": lat, "read": dir, "write": dir,
            "cpu_user_ns": 0, "cpu_sys_ns": 0, "ctx_voluntary": 0, "ctx_involuntary": 0,
            "verified_blocks": null},
        "warnings": [],
        "kstat": {"counters": {}, "sampled_counters": {}, "sampled_ops": 0, "unavailable": [],
            "per_op": per_op, "interrupts": null, "helper_threads": [],
            "helper_threads_created": 0, "evidence": []}
    }))
    .unwrap()
}
