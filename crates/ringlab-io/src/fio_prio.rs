//! fio's per-request I/O priority: `prioclass`/`prio` (every request of
//! the job), `cmdprio_percentage` with `cmdprio_class`/`cmdprio` (that
//! share of requests at that priority), `cmdprio_bssplit` (a share per
//! block size, with its own class and level in fio's advanced form), and
//! `log_prio` (the latency log's priority column as fio's ioprio value
//! instead of fio's 0/1 "high priority" flag).
//!
//! The priority rides on each request: the io_uring SQE's `ioprio`, the
//! libaio iocb's `aio_reqprio` with `IOCB_FLAG_IOPRIO`. With a sync engine
//! fio sets prioclass/prio on the job's thread (ioprio_set), and so does
//! ringlab; fio's cmdprio options exist only for io_uring and libaio.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// fio's ioprio value: class in the top 3 of 16 bits, level below.
pub fn ioprio_value(class: u16, level: u16) -> u16 {
    (class << 13) | (level & 0x1fff)
}

/// One entry of cmdprio_bssplit: requests of `bs` bytes get `class`/`level`
/// `pct`% of the time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitEntry {
    pub bs: u64,
    pub pct: u32,
    pub class: u16,
    pub level: u16,
}

/// One direction's command priorities.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirPrio {
    /// cmdprio_percentage (0: none) at cmdprio_class/cmdprio.
    pub pct: u32,
    pub class: u16,
    pub level: u16,
    /// cmdprio_bssplit (replaces the percentage).
    pub split: Vec<SplitEntry>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrioPlan {
    /// prioclass/prio: every other request's priority (0: none).
    pub default: u16,
    /// The (class, level) set on a sync job's thread.
    pub thread: Option<(u16, u16)>,
    pub dirs: [DirPrio; 2],
    /// log_prio.
    pub log_prio: bool,
}

impl PrioPlan {
    /// The hidden `--fio-prio` value: `;`-separated `key=value` of fio's
    /// own options: prioclass, prio, cmdprio_percentage, cmdprio_class,
    /// cmdprio, cmdprio_bssplit (each `R,W` or one value for both),
    /// log_prio.
    pub fn parse(spec: &str) -> Result<PrioPlan, String> {
        let mut class: Option<u16> = None;
        let mut level: Option<u16> = None;
        let mut pct = [0u32; 2];
        let mut cclass = [1u16; 2];
        let mut clevel = [0u16; 2];
        let mut split: [Option<String>; 2] = [None, None];
        let mut log_prio = false;
        let two = |k: &str, v: &str| -> Result<[String; 2], String> {
            let parts: Vec<&str> = v.split(',').collect();
            match parts.as_slice() {
                [one] => Ok([one.trim().to_string(), one.trim().to_string()]),
                [r, w] => Ok([r.trim().to_string(), w.trim().to_string()]),
                _ => Err(format!("{k}={v}: one value, or READ,WRITE")),
            }
        };
        let num = |k: &str, v: &str, max: u64| -> Result<u64, String> {
            v.parse::<u64>()
                .ok()
                .filter(|n| *n <= max)
                .ok_or_else(|| format!("{k}={v}: a whole number up to {max}"))
        };
        for part in spec.split(';').filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("{part}: KEY=VALUE"))?;
            match k {
                "prioclass" => class = Some(num(k, v, 3)? as u16),
                "prio" => level = Some(num(k, v, 7)? as u16),
                "log_prio" => log_prio = v == "1",
                "cmdprio_percentage" => {
                    let [r, w] = two(k, v)?;
                    pct = [num(k, &r, 100)? as u32, num(k, &w, 100)? as u32];
                }
                "cmdprio_class" => {
                    let [r, w] = two(k, v)?;
                    cclass = [num(k, &r, 3)? as u16, num(k, &w, 3)? as u16];
                }
                "cmdprio" => {
                    let [r, w] = two(k, v)?;
                    clevel = [num(k, &r, 7)? as u16, num(k, &w, 7)? as u16];
                }
                "cmdprio_bssplit" => {
                    let [r, w] = two(k, v)?;
                    split = [Some(r), Some(w)];
                }
                _ => return Err(format!("{k}: not a --fio-prio key")),
            }
        }
        // fio: prio alone is best-effort; prioclass alone has level 0
        // (fio 3.33 logs prioclass=3 as 0x6000).
        let default = match (class, level) {
            (None, None) => None,
            (c, l) => Some((c.unwrap_or(2), l.unwrap_or(0))),
        };
        let mut dirs = [DirPrio::default(), DirPrio::default()];
        for d in 0..2 {
            dirs[d] = DirPrio {
                pct: pct[d],
                class: cclass[d],
                level: clevel[d],
                split: match &split[d] {
                    Some(s) => parse_split(s, cclass[d], clevel[d])?,
                    None => Vec::new(),
                },
            };
        }
        Ok(PrioPlan {
            default: default.map_or(0, |(c, l)| ioprio_value(c, l)),
            thread: default,
            dirs,
            log_prio,
        })
    }

    /// Whether any request carries a priority of its own.
    pub fn per_request(&self) -> bool {
        self.default != 0 || self.dirs.iter().any(|d| d.pct > 0 || !d.split.is_empty())
    }
}

/// fio's cmdprio_bssplit of one direction: `BS/PCT[/CLASS/LEVEL]:...`.
fn parse_split(s: &str, class: u16, level: u16) -> Result<Vec<SplitEntry>, String> {
    let mut out = Vec::new();
    for e in s.split(':').filter(|e| !e.trim().is_empty()) {
        let f: Vec<&str> = e.split('/').map(str::trim).collect();
        let bs =
            crate::fio::value::size(f[0], 1024).map_err(|x| format!("cmdprio_bssplit {e}: {x}"))?;
        let n = |i: usize, max: u64| -> Result<u64, String> {
            f[i].parse::<u64>()
                .ok()
                .filter(|n| *n <= max)
                .ok_or_else(|| {
                    format!(
                        "cmdprio_bssplit {e}: '{}' is not a number up to {max}",
                        f[i]
                    )
                })
        };
        let entry = match f.len() {
            2 => SplitEntry {
                bs,
                pct: n(1, 100)? as u32,
                class,
                level,
            },
            4 => SplitEntry {
                bs,
                pct: n(1, 100)? as u32,
                class: n(2, 3)? as u16,
                level: n(3, 7)? as u16,
            },
            _ => {
                return Err(format!(
                    "cmdprio_bssplit {e}: fio's entries are BS/PCT or BS/PCT/CLASS/LEVEL"
                ))
            }
        };
        out.push(entry);
    }
    Ok(out)
}

/// One job's priority choices.
pub struct PrioRun {
    plan: PrioPlan,
    rng: Xoshiro256PlusPlus,
}

impl PrioRun {
    pub fn new(plan: &PrioPlan, seed: u64, job: u32) -> PrioRun {
        PrioRun {
            plan: plan.clone(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x9710 ^ ((job as u64) << 36)),
        }
    }

    /// The priority of a request of `len` bytes in direction `d` (0 read,
    /// 1 write), and whether it is one of the cmdprio requests (fio's
    /// "high priority" flag).
    pub fn pick(&mut self, d: usize, len: u64) -> (u16, bool) {
        let dp = &self.plan.dirs[d.min(1)];
        let mut hit: Option<(u32, u16, u16)> = None;
        if dp.split.is_empty() {
            if dp.pct > 0 {
                hit = Some((dp.pct, dp.class, dp.level));
            }
        } else {
            // fio: the first entry of the request's size.
            let mut acc = 0;
            let draw = self.rng.random_range(0..100u32);
            for e in dp.split.iter().filter(|e| e.bs == len) {
                acc += e.pct;
                if draw < acc {
                    return (ioprio_value(e.class, e.level), true);
                }
            }
            return (self.plan.default, false);
        }
        if let Some((pct, class, level)) = hit {
            if pct >= 100 || self.rng.random_range(0..100u32) < pct {
                return (ioprio_value(class, level), true);
            }
        }
        (self.plan.default, false)
    }

    /// The latency log's priority column (fio: the ioprio value with
    /// log_prio, else 1 for a cmdprio request and 0 for the others).
    pub fn column(&self, ioprio: u16, high: bool) -> String {
        if self.plan.log_prio {
            format!("0x{ioprio:04x}")
        } else {
            u8::from(high).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_of_requests_gets_the_class() {
        let p = PrioPlan::parse("prioclass=3;cmdprio_percentage=20;cmdprio_class=1").unwrap();
        let mut r = PrioRun::new(&p, 1, 0);
        let n = 10_000;
        let high = (0..n).filter(|_| r.pick(0, 4096).1).count();
        assert!((1800..2200).contains(&high), "{high}");
        for _ in 0..100 {
            let (prio, high) = r.pick(0, 4096);
            assert_eq!(prio >> 13, if high { 1 } else { 3 });
        }
        assert_eq!(p.default, 0x6000);
        assert_eq!(r.column(0x2000, true), "1");
    }

    #[test]
    fn bssplit_gives_each_size_its_share_class_and_level() {
        let p = PrioPlan::parse(
            "cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0;prioclass=2;prio=7;log_prio=1",
        )
        .unwrap();
        let mut r = PrioRun::new(&p, 1, 0);
        let mut seen = std::collections::HashMap::new();
        for _ in 0..4000 {
            *seen.entry(r.pick(0, 65536).0).or_insert(0) += 1;
        }
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!((800..1200).contains(&seen[&ioprio_value(1, 1)]), "{seen:?}");
        assert!(seen.contains_key(&ioprio_value(3, 2)));
        assert_eq!(r.pick(0, 1 << 20), (ioprio_value(2, 7), false));
        assert_eq!(r.pick(1, 1 << 20), (ioprio_value(2, 7), false));
        assert_eq!(r.column(0x2001, true), "0x2001");
    }
}
