//! One run over many processes or hosts: which shard this process is
//! (`--shard I/N`, or `--shard auto` from the launcher's environment), when
//! every shard starts (`--start-at`), and whether the result carries its
//! histograms for `ringlab merge`. Every command that runs a load flattens
//! [`ShardArgs`] into its flags (one line) and asks the resolved
//! [`ShardPlan`] for its share of the work.
//!
//! Launching is left to engines people already run: Slurm (`srun`), MPI
//! (`mpirun`) or a Kubernetes Indexed Job set the variables read here.
//!
//! A command adopts it in one line, `#[command(flatten)] shard: ShardArgs`
//! in its flags, then `args.shard.plan()?` into its plan: the runner calls
//! [`ShardPlan::wait`] just before `Harness::start`, takes its share with
//! [`ShardPlan::share`] / [`ShardPlan::span`], and puts
//! [`ShardPlan::info`] and (if [`ShardPlan::histograms`]) the histograms in
//! the result. `ringlab io` and `ringlab http` do; a personality that
//! translates into their flags only passes `--shard`, `--shards`,
//! `--start-at` and `--histograms` through.

use crate::usage;
use anyhow::Result;
use clap::Args;
use ringlab_stats::{ClockInfo, ShardInfo};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A shard that began measuring more than this after --start-at is
/// flagged late: it did not run over the same window as the others.
pub const LATE_TOLERANCE: Duration = Duration::from_millis(10);
/// A --start-at further away than this is a typo, not a plan.
pub const START_AT_MAX_AHEAD: Duration = Duration::from_secs(24 * 3600);
/// Shards in one run at most.
pub const SHARDS_MAX: u32 = 1_000_000;

/// The launchers' variables `--shard auto` reads, first match wins: MPI's
/// before Slurm's, since `mpirun` inside an `sbatch` allocation leaves the
/// batch step's SLURM_PROCID (0 in every rank) in the environment.
const LAUNCHERS: &[(&str, &str, &str)] = &[
    // (index variable, count variable, job id variable)
    (
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "PMIX_NAMESPACE",
    ),
    ("PMI_RANK", "PMI_SIZE", "PMI_JOBID"),
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID"),
];
/// A Kubernetes Indexed Job gives the index only; the count comes from
/// --shards or this variable.
pub const SHARDS_ENV: &str = "RINGLAB_SHARDS";
/// The experiment's id where the launcher gives none (Kubernetes: the Job's
/// name, set by the manifest).
pub const JOB_ID_ENV: &str = "RINGLAB_JOB_ID";

/// The flags of a sharded run, shared by `ringlab io`, `http` and the
/// personalities that translate into them.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Shards (one run over many processes or hosts)")]
pub struct ShardArgs {
    /// This process is shard I of N of one run, 0-based (0/4 .. 3/4):
    /// `http -R` runs R/N on a schedule interleaved with the others', `io`
    /// on a shared target uses its own N-th of the region; threads,
    /// connections and jobs are per shard. `auto`: from the launcher
    /// (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, SLURM_PROCID/NTASKS, or
    /// JOB_COMPLETION_INDEX with --shards). `{shard}` in --output becomes
    /// the index. Add the results with 'ringlab merge'.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// With --shard auto where the environment gives only an index (a
    /// Kubernetes Indexed Job's JOB_COMPLETION_INDEX): how many shards
    /// [default: $RINGLAB_SHARDS].
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// Wait until TIME, then start measuring: RFC 3339
    /// (2026-11-24T23:00:00Z) or Unix seconds (1795561200.5). Give every
    /// shard the same TIME; one that begins late records by how much.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Put the whole latency histograms in the JSON result (HdrHistogram
    /// V2 + DEFLATE, base64), so that 'ringlab merge' can add results;
    /// always on for a shard.
    #[arg(long)]
    pub histograms: bool,
}

/// Which shard this process is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
    /// `--shard`, or the variables it came from.
    pub source: String,
    pub job_id: Option<String>,
}

/// The resolved shard flags of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardPlan {
    pub shard: Option<Shard>,
    pub start_at: Option<SystemTime>,
    histograms: bool,
}

impl ShardArgs {
    /// Resolves the flags, reading the launcher's environment for `auto`.
    pub fn plan(&self) -> Result<ShardPlan> {
        self.plan_with(&|k| std::env::var(k).ok(), SystemTime::now())
    }

    /// As [`ShardArgs::plan`], with the environment and the time given.
    pub fn plan_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        now: SystemTime,
    ) -> Result<ShardPlan> {
        let shard = match self.shard.as_deref() {
            None => {
                if self.shards.is_some() {
                    usage!("--shards counts the shards of --shard auto: add --shard auto (or give --shard I/N)");
                }
                None
            }
            Some("auto") => Some(from_env(env, self.shards)?),
            Some(text) => {
                if self.shards.is_some() {
                    usage!("--shard {text} already says how many shards; --shards is for --shard auto: drop it");
                }
                Some(parse_shard(text)?)
            }
        };
        let start_at = match &self.start_at {
            Some(t) => Some(parse_start_at(t, now)?),
            None => None,
        };
        Ok(ShardPlan {
            shard,
            start_at,
            histograms: self.histograms,
        })
    }
}

/// `I/N`, 0-based.
fn parse_shard(text: &str) -> Result<Shard> {
    let Some((i, n)) = text.split_once('/') else {
        usage!("--shard {text}: expected I/N (this process is shard I of N, 0-based: 0/4 .. 3/4) or auto");
    };
    let (Ok(index), Ok(count)) = (i.trim().parse::<u32>(), n.trim().parse::<u32>()) else {
        usage!("--shard {text}: I and N must be whole numbers (0/4 .. 3/4)");
    };
    check(index, count, &format!("--shard {text}"))?;
    Ok(Shard {
        index,
        count,
        source: "--shard".into(),
        job_id: None,
    })
}

fn check(index: u32, count: u32, what: &str) -> Result<()> {
    if count == 0 || count > SHARDS_MAX {
        usage!("{what}: the number of shards must be between 1 and {SHARDS_MAX}");
    }
    if index >= count {
        usage!(
            "{what}: shard {index} of {count} does not exist (shards are numbered from 0 to {})",
            count - 1
        );
    }
    Ok(())
}

fn number(env: &dyn Fn(&str) -> Option<String>, var: &str) -> Result<Option<u32>> {
    match env(var) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<u32>() {
            Ok(n) => Ok(Some(n)),
            Err(_) => usage!("--shard auto: {var}={v:?} is not a whole number"),
        },
    }
}

fn from_env(env: &dyn Fn(&str) -> Option<String>, shards: Option<u32>) -> Result<Shard> {
    for (index_var, count_var, job_var) in LAUNCHERS {
        let Some(index) = number(env, index_var)? else {
            continue;
        };
        let Some(count) = number(env, count_var)? else {
            usage!("--shard auto: {index_var} is set but {count_var} is not; give --shard I/N");
        };
        if let Some(n) = shards.filter(|&n| n != count) {
            usage!("--shard auto: --shards {n} but {count_var}={count}: drop --shards (the launcher says how many)");
        }
        let what = format!("--shard auto ({index_var}={index}, {count_var}={count})");
        check(index, count, &what)?;
        return Ok(Shard {
            index,
            count,
            source: format!("{index_var}/{count_var}"),
            job_id: env(job_var).or_else(|| env(JOB_ID_ENV)),
        });
    }
    if let Some(index) = number(env, "JOB_COMPLETION_INDEX")? {
        let count = match (shards, number(env, SHARDS_ENV)?) {
            (Some(n), _) => n,
            (None, Some(n)) => n,
            (None, None) => usage!(
                "--shard auto: JOB_COMPLETION_INDEX={index} (a Kubernetes Indexed Job) gives no count: add --shards N or set {SHARDS_ENV} (the Job's completions)"
            ),
        };
        check(
            index,
            count,
            &format!("--shard auto (JOB_COMPLETION_INDEX={index}, {count} shards)"),
        )?;
        return Ok(Shard {
            index,
            count,
            source: format!(
                "JOB_COMPLETION_INDEX/{}",
                if shards.is_some() {
                    "--shards"
                } else {
                    SHARDS_ENV
                }
            ),
            job_id: env(JOB_ID_ENV),
        });
    }
    usage!("--shard auto: no launcher variables found (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, JOB_COMPLETION_INDEX); start it with srun, mpirun or a Kubernetes Indexed Job, or give --shard I/N")
}

/// RFC 3339 (`Z` or no zone: UTC) or Unix seconds with an optional fraction.
fn parse_start_at(text: &str, now: SystemTime) -> Result<SystemTime> {
    let t = text.trim();
    let at = if let Some(at) = unix_seconds(t) {
        at
    } else {
        let (local, offset_s) = split_utc_offset(t);
        match humantime::parse_rfc3339_weak(local) {
            Ok(at) if offset_s >= 0 => at - Duration::from_secs(offset_s as u64),
            Ok(at) => at + Duration::from_secs(offset_s.unsigned_abs()),
            Err(e) => usage!("--start-at {text}: {e}; give RFC 3339 (2026-11-24T23:00:00Z, as 'date -u +%FT%TZ -d +30sec' prints, or with an offset as 'date -Iseconds' does) or Unix seconds ('date +%s')"),
        }
    };
    if at.duration_since(now).is_ok_and(|d| d > START_AT_MAX_AHEAD) {
        usage!(
            "--start-at {text} is more than {} hours away: a typo? (times are UTC)",
            START_AT_MAX_AHEAD.as_secs() / 3600
        );
    }
    Ok(at)
}

/// `2026-11-25T01:00:00+01:00` -> (`2026-11-25T01:00:00`, 3600): the
/// numeric offset `date -Iseconds` prints, which humantime does not read.
fn split_utc_offset(t: &str) -> (&str, i64) {
    let b = t.as_bytes();
    if b.len() > 6 && t.contains('T') {
        let (head, tail) = t.split_at(t.len() - 6);
        let tb = tail.as_bytes();
        if (tb[0] == b'+' || tb[0] == b'-') && tb[3] == b':' {
            if let (Ok(h), Ok(m)) = (tail[1..3].parse::<i64>(), tail[4..6].parse::<i64>()) {
                let secs = h * 3600 + m * 60;
                return (head, if tb[0] == b'-' { -secs } else { secs });
            }
        }
    }
    (t, 0)
}

/// `SECONDS[.FRACTION]` exactly (no float rounding), or `None`.
fn unix_seconds(t: &str) -> Option<SystemTime> {
    let (secs, frac) = t.split_once('.').unwrap_or((t, ""));
    if secs.is_empty() || !secs.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let digits: String = frac.chars().chain("000000000".chars()).take(9).collect();
    let nanos: u32 = digits.parse().ok()?;
    Some(UNIX_EPOCH + Duration::new(secs, nanos))
}

impl ShardPlan {
    /// Whether the result carries its histograms.
    pub fn histograms(&self) -> bool {
        self.histograms || self.shard.is_some()
    }

    /// `--output` with `{shard}` replaced by this shard's index (0 when not
    /// sharded), so that one command line gives each shard its own file.
    pub fn output_path(&self, p: Option<&std::path::Path>) -> Option<std::path::PathBuf> {
        let p = p?;
        let text = p.to_string_lossy();
        if !text.contains("{shard}") {
            return Some(p.to_path_buf());
        }
        Some(text.replace("{shard}", &self.index().to_string()).into())
    }

    /// Shards in the run (1 when not sharded).
    pub fn count(&self) -> u32 {
        self.shard.as_ref().map_or(1, |s| s.count)
    }

    pub fn index(&self) -> u32 {
        self.shard.as_ref().map_or(0, |s| s.index)
    }

    /// This shard's part of `total` things (requests of -n): as equal as
    /// whole numbers allow, the first shards taking one more.
    pub fn share(&self, total: u64) -> u64 {
        let (i, n) = (self.index() as u64, self.count() as u64);
        total / n + u64::from(i < total % n)
    }

    /// This shard's span of `items` (blocks of a shared target): `(first,
    /// count)`, disjoint from every other shard's; the remainder of an
    /// uneven split is left unused, so that every shard has the same size.
    pub fn span(&self, items: u64) -> (u64, u64) {
        let per = items / self.count() as u64;
        (self.index() as u64 * per, per)
    }

    /// Sleeps until --start-at (at once without it, or if it has passed),
    /// waking early on `stop`.
    pub fn wait(&self, stop: &AtomicBool) {
        let Some(at) = self.start_at else { return };
        while let Ok(left) = at.duration_since(SystemTime::now()) {
            if stop.load(Ordering::Relaxed) || left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }

    /// How long after --start-at `started` is; `None` without it (or if it
    /// began early, which only a moved clock makes).
    pub fn late_ns(&self, started: SystemTime) -> Option<u64> {
        let at = self.start_at?;
        Some(
            started
                .duration_since(at)
                .map_or(0, |d| d.as_nanos() as u64),
        )
    }

    /// A warning for the result when measuring began late.
    pub fn late_warning(&self, started: SystemTime) -> Option<String> {
        let late = self.late_ns(started)?;
        (late > LATE_TOLERANCE.as_nanos() as u64).then(|| {
            format!(
                "started {:.1} ms after --start-at (more than {} ms): the process or its setup was not ready in time; give the shards a later --start-at",
                late as f64 / 1e6,
                LATE_TOLERANCE.as_millis()
            )
        })
    }

    /// The shard's record for its result; `None` when not sharded.
    pub fn info(&self, host: &str, started: SystemTime, elapsed_ns: u64) -> Option<ShardInfo> {
        let s = self.shard.as_ref()?;
        let started_unix_ns = unix_ns(started);
        let late = self.late_ns(started);
        Some(ShardInfo {
            index: s.index,
            count: s.count,
            source: s.source.clone(),
            job_id: s.job_id.clone(),
            host: host.to_string(),
            start_at: self
                .start_at
                .map(|t| humantime::format_rfc3339_nanos(t).to_string()),
            started_unix_ns,
            ended_unix_ns: started_unix_ns.saturating_add(elapsed_ns),
            start_late_ns: late,
            late: late.is_some_and(|l| l > LATE_TOLERANCE.as_nanos() as u64),
            clock: clock_info(),
            region_offset_bytes: None,
            region_bytes: None,
            rate: None,
            phase_ns: None,
        })
    }
}

/// Nanoseconds since the Unix epoch (0 before it).
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// This host's clock as the kernel's NTP discipline sees it (adjtimex,
/// read only); `None` if the call fails.
pub fn clock_info() -> Option<ClockInfo> {
    // SAFETY: adjtimex with modes 0 only reads the kernel's clock state
    // into the zeroed struct we own.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `tx` is a valid, writable timex; modes 0 changes nothing.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    // STA_NANO: offset in ns, else in µs; errors are always µs.
    let nano = tx.status & libc::STA_NANO != 0;
    Some(ClockInfo {
        synchronized: state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0,
        offset_ns: if nano { tx.offset } else { tx.offset * 1000 },
        maxerror_ns: (tx.maxerror.max(0) as u64) * 1000,
        esterror_ns: (tx.esterror.max(0) as u64) * 1000,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn plan(args: ShardArgs, env: &[(&str, &str)]) -> Result<ShardPlan> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        args.plan_with(
            &|k| env.get(k).cloned(),
            UNIX_EPOCH + Duration::from_secs(1_000),
        )
    }

    fn auto() -> ShardArgs {
        ShardArgs {
            shard: Some("auto".into()),
            ..Default::default()
        }
    }

    #[test]
    fn explicit_shard_and_its_errors() {
        let p = plan(
            ShardArgs {
                shard: Some("2/4".into()),
                ..Default::default()
            },
            &[],
        )
        .unwrap();
        let s = p.shard.clone().unwrap();
        assert_eq!((s.index, s.count, s.source.as_str()), (2, 4, "--shard"));
        assert!(p.histograms());
        for bad in ["4/4", "1", "a/b", "0/0"] {
            let e = plan(
                ShardArgs {
                    shard: Some(bad.into()),
                    ..Default::default()
                },
                &[],
            )
            .unwrap_err();
            assert!(e.to_string().contains("--shard"), "{e}");
        }
    }

    #[test]
    fn auto_reads_each_launcher() {
        let slurm = [
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_ID", "77"),
        ];
        let s = plan(auto(), &slurm).unwrap().shard.unwrap();
        assert_eq!((s.index, s.count), (3, 4));
        assert_eq!(s.source, "SLURM_PROCID/SLURM_NTASKS");
        assert_eq!(s.job_id.as_deref(), Some("77"));
        // mpirun inside an sbatch allocation: MPI's rank wins.
        let both = [
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
        ];
        let s = plan(auto(), &both).unwrap().shard.unwrap();
        assert_eq!((s.index, s.count), (1, 2));
        let pmi = [("PMI_RANK", "0"), ("PMI_SIZE", "8")];
        assert_eq!(plan(auto(), &pmi).unwrap().shard.unwrap().count, 8);
        // Kubernetes: the index, and the count from --shards or the env.
        let k8s = [("JOB_COMPLETION_INDEX", "5")];
        let e = plan(auto(), &k8s).unwrap_err().to_string();
        assert!(
            e.contains("--shards") && e.contains("RINGLAB_SHARDS"),
            "{e}"
        );
        let s = plan(
            auto(),
            &[("JOB_COMPLETION_INDEX", "5"), ("RINGLAB_SHARDS", "6")],
        )
        .unwrap()
        .shard
        .unwrap();
        assert_eq!((s.index, s.count), (5, 6));
        let mut a = auto();
        a.shards = Some(8);
        assert_eq!(plan(a.clone(), &k8s).unwrap().shard.unwrap().count, 8);
        // --shards disagreeing with a launcher's count is refused.
        assert!(plan(a, &slurm).is_err());
        let e = plan(auto(), &[]).unwrap_err().to_string();
        assert!(e.contains("no launcher variables"), "{e}");
        assert!(plan(auto(), &[("SLURM_PROCID", "1")]).is_err());
    }

    #[test]
    fn start_at_in_both_forms() {
        let at = |t: &str| {
            plan(
                ShardArgs {
                    start_at: Some(t.into()),
                    ..Default::default()
                },
                &[],
            )
        };
        let p = at("1000.5").unwrap();
        assert_eq!(
            p.start_at.unwrap(),
            UNIX_EPOCH + Duration::from_millis(1_000_500)
        );
        assert!(!p.histograms(), "--start-at alone is no shard");
        let p = at("1970-01-01T00:16:40Z").unwrap();
        assert_eq!(p.start_at.unwrap(), UNIX_EPOCH + Duration::from_secs(1000));
        // date -Iseconds: a numeric offset.
        for t in ["1970-01-01T01:16:40+01:00", "1970-01-01T00:16:40+00:00"] {
            let p = at(t).unwrap();
            assert_eq!(
                p.start_at.unwrap(),
                UNIX_EPOCH + Duration::from_secs(1000),
                "{t}"
            );
        }
        let p = at("1970-01-01T00:00:40-00:16").unwrap();
        assert_eq!(p.start_at.unwrap(), UNIX_EPOCH + Duration::from_secs(1000));
        assert!(at("tomorrow").is_err());
        assert!(at("9999999999").is_err(), "more than a day away");
        // Lateness.
        let started = UNIX_EPOCH + Duration::from_millis(1_000_520);
        let p = at("1000.5").unwrap();
        assert_eq!(p.late_ns(started), Some(20_000_000));
        assert!(p.late_warning(started).unwrap().contains("20.0 ms"));
        assert!(p
            .late_warning(UNIX_EPOCH + Duration::from_millis(1_000_501))
            .is_none());
    }

    #[test]
    fn shares_and_spans_cover_without_overlap() {
        let total: u64 = (0..3)
            .map(|i| {
                ShardPlan {
                    shard: Some(Shard {
                        index: i,
                        count: 3,
                        source: String::new(),
                        job_id: None,
                    }),
                    ..Default::default()
                }
                .share(10)
            })
            .sum();
        assert_eq!(total, 10);
        let spans: Vec<(u64, u64)> = (0..4)
            .map(|i| {
                ShardPlan {
                    shard: Some(Shard {
                        index: i,
                        count: 4,
                        source: String::new(),
                        job_id: None,
                    }),
                    ..Default::default()
                }
                .span(1030)
            })
            .collect();
        assert_eq!(spans, vec![(0, 257), (257, 257), (514, 257), (771, 257)]);
        assert_eq!(ShardPlan::default().span(1030), (0, 1030));
    }

    #[test]
    fn the_clock_can_be_read() {
        assert!(clock_info().is_some());
    }
}
