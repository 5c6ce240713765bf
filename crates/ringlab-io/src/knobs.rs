//! The io_uring knobs of `ringlab io`: the rules that refuse combinations
//! the kernel rejects or that make no sense for a storage run. The knobs
//! themselves (flags, kernel names, releases, help) are the table in
//! [`ringlab_core::uring::knobs`].

use crate::engine_kind::EngineKind;
use anyhow::Result;
pub use ringlab_core::uring::cli::IoKnobArgs as UringArgs;
use ringlab_core::uring::knobs::{apply_default_ring, RingUse};
pub use ringlab_core::uring::knobs::{
    since, Mode, ReapMode, UringOptions, CQ_SIZE_MAX, MAX_REGISTERED_BUFFERS,
};
use ringlab_core::usage;

/// The knobs that also apply to the libaio engine: how many requests go to
/// the kernel per submission, and how many completions a reap waits for.
const BATCH_KNOBS: &[&str] = &["submit-batch", "complete-batch", "complete-max"];

/// What the knob rules need to know about the rest of the plan.
pub struct PlanFacts {
    pub engine: EngineKind,
    pub iodepth: u32,
    pub direct: bool,
    /// Whether the kernel accepts a setup flag (for the default ring).
    pub kernel_has: fn(&str) -> bool,
}

/// The resolved knobs, and which of them were chosen by default.
pub struct Resolved {
    pub options: UringOptions,
    pub defaults: Vec<&'static str>,
    /// IOSQE_ASYNC is left to the target: on every request if it takes no
    /// non-blocking I/O (decided once it is open, [`auto_force_async`]).
    /// Not with `--force-async` given (`=0`: never), not with `--mode iou`
    /// (the bare kernel ring chooses nothing).
    pub force_async_auto: bool,
}

/// The default IOSQE_ASYNC for a target that takes non-blocking I/O or not
/// (`None`: unknown): on every request only where io_uring would hand
/// every request to io-wq anyway, after trying it inline (see
/// [`crate::target::Target::takes_nowait`]). There it saves the inline try, and
/// it lets io-wq run the requests side by side: the kernel marks
/// IOSQE_ASYNC work concurrent (`io_prep_async_work`), and io-wq starts a
/// worker for such work when none is free, where other punted work waits
/// for the one worker to block, which on zram it never does. Measured on
/// /dev/zram0 (randread 4 KiB, O_DIRECT, co-runs with t/io_uring on one
/// CPU, 8 pairs), reads against t/io_uring's, without and with it: depth 1
/// 0.9832 -> 0.9911, depth 8 in batches of 8 0.9892 -> 1.0031, depth 32
/// 1.0330 -> 1.5606 (one worker -> 6-7; context switches 1.4 -> 0.29 per
/// read). Elsewhere it would hand requests that complete inline (page
/// cache hits, a disk's queue) to a worker thread: never there.
pub fn auto_force_async(takes_nowait: Option<bool>) -> u32 {
    u32::from(takes_nowait == Some(false))
}

/// Expands the preset, chooses the default ring, fills defaults and
/// refuses what the kernel would refuse or what makes no sense, with the
/// reason and the fix.
pub fn resolve(a: &UringArgs, facts: &PlanFacts) -> Result<Resolved> {
    if facts.engine != EngineKind::Uring {
        return Ok(Resolved {
            options: resolve_other_engine(a, facts)?,
            defaults: Vec::new(),
            force_async_auto: false,
        });
    }
    let mut o = a.apply()?;
    if !a.has("complete-batch") {
        o.complete_batch = 1;
    }
    let mode = o.mode;
    match mode {
        Some(Mode::Iou) | None => {}
        Some(Mode::IouP) => o.iopoll = true,
        Some(Mode::IouK) => o.sqpoll = true,
        Some(Mode::Enhanced) => {
            o.fixed_files = true;
            o.fixed_buffers = true;
        }
    }
    let via = |flag: &str| -> String {
        match (flag, mode) {
            ("sqpoll", Some(Mode::IouK)) if !a.has("sqpoll") => "--mode iou+k (SQPOLL)".to_string(),
            ("iopoll", Some(Mode::IouP)) if !a.has("iopoll") => "--mode iou+p (IOPOLL)".to_string(),
            _ => format!("--{flag}"),
        }
    };
    let given = a.given();
    let ring_use = RingUse {
        given: &given,
        completion_thread: o.completion_thread.is_some(),
        spins: o.reap == Some(ReapMode::Spin),
        defer_pays: true,
    };
    let defaults = apply_default_ring(&mut o, &ring_use, &facts.kernel_has);
    ringlab_core::uring::knobs::check_combinations(&o, &via)?;
    if let Some(cpu) = o.sqpoll_cpu {
        check_cpu("sqpoll-cpu", cpu)?;
    }
    if o.iopoll && !facts.direct {
        usage!(
            "{} needs --direct: the kernel polls only for O_DIRECT I/O (buffered I/O gets EOPNOTSUPP)",
            via("iopoll")
        );
    }
    if let Some(cpu) = o.completion_thread {
        if o.defer_taskrun || o.single_issuer {
            let flag = if o.defer_taskrun {
                "defer-taskrun"
            } else {
                "single-issuer"
            };
            usage!(
                "--completion-thread cannot be combined with --{flag}: that ring may only be entered by the thread that submits, and the completion thread must enter it to wait; drop one of them"
            );
        }
        check_cpu("completion-thread", cpu)?;
    }
    let entries = facts.iodepth.max(1).next_power_of_two();
    check_batches(&o, facts.iodepth)?;
    if let Some(cq) = o.cq_size {
        if cq < entries || cq > CQ_SIZE_MAX {
            usage!(
                "--cq-size {cq}: must be between the submission ring's {entries} entries (--iodepth rounded up to a power of two) and {CQ_SIZE_MAX}"
            );
        }
    }
    if o.fixed_buffers && facts.iodepth > MAX_REGISTERED_BUFFERS {
        usage!(
            "--fixed-buffers registers one buffer per request in flight, and the kernel takes at most {MAX_REGISTERED_BUFFERS}: lower --iodepth"
        );
    }
    let default_reap = if o.sqpoll {
        ReapMode::Spin
    } else {
        ReapMode::Wait
    };
    let reap = o.reap.unwrap_or(default_reap);
    if reap == ReapMode::Spin && o.completion_thread.is_none() {
        if o.defer_taskrun {
            usage!("--reap spin never sees a completion with --defer-taskrun: its completion work runs only inside io_uring_enter; use --reap wait or peek");
        }
        if o.iopoll && !o.sqpoll {
            usage!(
                "--reap spin never sees a completion with {} alone: the device is polled only inside io_uring_enter (or by an SQPOLL thread); use --reap wait or peek, or add --sqpoll",
                via("iopoll")
            );
        }
    }
    if o.completion_thread.is_some() && o.complete_max != 0 {
        usage!("--complete-max applies to the job thread's own reaping; with --completion-thread that thread hands over what it reaped: drop --complete-max");
    }
    if o.completion_thread.is_some() && a.has("reap") {
        usage!("--reap applies to the job thread's own reaping; with --completion-thread that thread waits in io_uring_enter: drop --reap");
    }
    // With a completion thread the job thread does not reap at all.
    o.reap = o.completion_thread.is_none().then_some(reap);
    Ok(Resolved {
        force_async_auto: !a.has("force-async") && mode != Some(Mode::Iou),
        options: o,
        defaults,
    })
}

/// Engines other than uring: refuse io_uring knobs; libaio takes the batch
/// sizes.
fn resolve_other_engine(a: &UringArgs, facts: &PlanFacts) -> Result<UringOptions> {
    // Batch sizes are a property of any queue of requests, and fio applies
    // its iodepth_batch_* options to libaio too; the other knobs exist
    // only in io_uring.
    let batches = facts.engine == EngineKind::Libaio;
    let refused = a
        .given()
        .into_iter()
        .find(|k| !(batches && BATCH_KNOBS.contains(k)));
    if let Some(first) = refused {
        let also = if batches {
            " (libaio takes --submit-batch, --complete-batch and --complete-max)"
        } else {
            ""
        };
        usage!(
            "--{first} is an io_uring knob and --engine {} does not use io_uring{also}: drop it or use --engine uring",
            facts.engine.name()
        );
    }
    if !batches {
        return Ok(UringOptions::default());
    }
    let mut o = a.apply()?;
    if !a.has("complete-batch") {
        o.complete_batch = 1;
    }
    if !a.has("submit-batch") {
        // One io_submit per request, as fio's default (iodepth_batch 1).
        // Measured on the virtio disk (256 MiB file, O_DIRECT, depth 32,
        // CPU 0, 3 pairs): 77-83k IOPS against 62-69k with one io_submit
        // per loop turn. On this single-queue device, a request handed
        // over at once keeps the device busy, where a batch waits for the
        // turn's reaping; on zram (inline completion) both are the same.
        o.submit_batch = 1;
    }
    check_batches(&o, facts.iodepth)?;
    Ok(o)
}

/// Refuses batch sizes a queue of `iodepth` requests can never reach.
fn check_batches(o: &UringOptions, iodepth: u32) -> Result<()> {
    if o.submit_batch > iodepth {
        usage!(
            "--submit-batch {} is larger than --iodepth {iodepth}: a batch can never fill; lower it",
            o.submit_batch
        );
    }
    if o.complete_batch == 0 || o.complete_batch > iodepth {
        usage!(
            "--complete-batch {} must be between 1 and --iodepth {iodepth}",
            o.complete_batch
        );
    }
    if o.complete_max != 0 && (o.complete_max < o.complete_batch || o.complete_max > iodepth) {
        usage!(
            "--complete-max {} must be between --complete-batch ({}) and --iodepth {iodepth}: a reap waits for --complete-batch completions and takes at most --complete-max",
            o.complete_max,
            o.complete_batch
        );
    }
    Ok(())
}

fn check_cpu(flag: &str, cpu: u32) -> Result<()> {
    let allowed = ringlab_core::cpus::allowed_cpus();
    if !allowed.is_empty() && !allowed.contains(&cpu) {
        usage!(
            "--{flag} {cpu}: CPU {cpu} is not available to this process (it may run on {}); pick from those",
            ringlab_core::cpus::format_cpu_list(&allowed)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> PlanFacts {
        PlanFacts {
            engine: EngineKind::Uring,
            iodepth: 8,
            direct: true,
            kernel_has: |_| true,
        }
    }

    fn args(given: &[(&'static str, Option<&str>)]) -> UringArgs {
        UringArgs::of(given)
    }

    fn resolve_args(given: &[(&'static str, Option<&str>)]) -> Result<UringOptions> {
        resolve(&args(given), &facts()).map(|r| r.options)
    }

    #[test]
    fn presets_expand_and_add_to_explicit_knobs() {
        let o = resolve_args(&[("mode", Some("enhanced")), ("register-ring", None)]).unwrap();
        assert!(
            o.defer_taskrun,
            "presets other than iou get the default ring"
        );
        assert!(o.fixed_files && o.fixed_buffers && o.register_ring && !o.sqpoll);
        let k = resolve_args(&[("mode", Some("iou+k"))]).unwrap();
        assert!(k.sqpoll);
        assert_eq!(k.reap, Some(ReapMode::Spin), "SQPOLL reaps by spinning");
        let p = resolve_args(&[("mode", Some("iou+p"))]).unwrap();
        assert!(p.iopoll);
        assert_eq!(p.reap, Some(ReapMode::Wait));
    }

    #[test]
    fn refusals_name_the_flags() {
        type Case = (
            &'static [(&'static str, Option<&'static str>)],
            &'static str,
        );
        let cases: &[Case] = &[
            (&[("defer-taskrun", None)], "--single-issuer"),
            (&[("sqpoll", None), ("coop-taskrun", None)], "EINVAL"),
            (
                &[
                    ("mode", Some("iou+k")),
                    ("single-issuer", None),
                    ("defer-taskrun", None),
                ],
                "--mode iou+k",
            ),
            (&[("attach-wq", None)], "add --sqpoll"),
            (
                &[("taskrun-flag", None)],
                "--coop-taskrun or --defer-taskrun",
            ),
            (&[("hybrid-iopoll", None)], "add --iopoll"),
            (
                &[("completion-thread", Some("0")), ("single-issuer", None)],
                "--single-issuer",
            ),
            (
                &[
                    ("single-issuer", None),
                    ("defer-taskrun", None),
                    ("reap", Some("spin")),
                ],
                "never sees a completion",
            ),
            (&[("submit-batch", Some("9"))], "larger than --iodepth 8"),
            (&[("cq-size", Some("4"))], "--cq-size 4"),
            (&[("iowq-max-workers", Some("4"))], "like 4,4"),
        ];
        for (given, want) in cases {
            let err = resolve_args(given).expect_err(&format!("{given:?} accepted"));
            assert!(
                err.is::<crate::UsageError>(),
                "{given:?}: not a usage error"
            );
            assert!(err.to_string().contains(want), "{given:?}: {err}");
        }
    }

    #[test]
    fn force_async_is_left_to_the_target_unless_given() {
        let auto = |given: &[(&'static str, Option<&str>)]| {
            crate::knobs::resolve(&args(given), &facts())
                .map(|r| (r.force_async_auto, r.options.force_async))
                .unwrap()
        };
        assert_eq!(auto(&[]), (true, 0));
        // =0 is fio's force_async=0: never, and not chosen by default.
        assert_eq!(auto(&[("force-async", Some("0"))]), (false, 0));
        assert_eq!(auto(&[("force-async", Some("1"))]), (false, 1));
        assert_eq!(auto(&[("mode", Some("iou"))]), (false, 0));
        let libaio = PlanFacts {
            engine: EngineKind::Libaio,
            ..facts()
        };
        assert!(
            !crate::knobs::resolve(&args(&[]), &libaio)
                .unwrap()
                .force_async_auto
        );
        assert_eq!(auto_force_async(Some(false)), 1);
        assert_eq!(auto_force_async(Some(true)), 0);
        assert_eq!(auto_force_async(None), 0);
    }

    #[test]
    fn iopoll_needs_direct_and_knobs_need_uring() {
        let buffered = PlanFacts {
            direct: false,
            ..facts()
        };
        for given in [
            &[("iopoll", None)][..],
            &[("iopoll", None), ("hybrid-iopoll", None)][..],
        ] {
            let err = resolve(&args(given), &buffered).err().unwrap();
            assert!(err.to_string().contains("needs --direct"), "{err}");
        }
        let sync = PlanFacts {
            engine: EngineKind::Sync,
            ..facts()
        };
        let err = resolve(&args(&[("fixed-buffers", None)]), &sync)
            .err()
            .unwrap();
        assert!(err
            .to_string()
            .contains("--fixed-buffers is an io_uring knob"));
    }

    #[test]
    fn the_default_ring_is_recorded_and_mode_iou_is_bare() {
        let r = resolve(&args(&[]), &facts()).unwrap();
        assert_eq!(
            r.defaults,
            ["coop-taskrun", "single-issuer", "defer-taskrun"]
        );
        assert!(r.options.defer_taskrun);
        let bare = resolve(&args(&[("mode", Some("iou"))]), &facts()).unwrap();
        assert!(bare.defaults.is_empty() && !bare.options.coop_taskrun);
        let ct = resolve(&args(&[("completion-thread", Some("0"))]), &facts()).unwrap();
        assert_eq!(ct.defaults, ["coop-taskrun"]);
        let sq = resolve(&args(&[("sqpoll", None)]), &facts()).unwrap();
        assert!(sq.defaults.is_empty());
    }

    #[test]
    fn describe_and_config_use_flag_names() {
        let o = resolve_args(&[
            ("sqpoll", None),
            ("sqpoll-idle", Some("50")),
            ("force-async", Some("4")),
            ("iowq-max-workers", Some("2, 0")),
        ])
        .unwrap();
        assert_eq!(
            o.describe(),
            "--sqpoll --sqpoll-idle 50 --force-async=4 --reap spin --iowq-max-workers 2,0"
        );
        let cfg = o.config_entries();
        assert!(cfg
            .iter()
            .any(|(k, v)| *k == "iowq-max-workers" && *v == serde_json::json!([2, 0])));
        assert_eq!(since("defer-taskrun"), "6.1");
    }
}
