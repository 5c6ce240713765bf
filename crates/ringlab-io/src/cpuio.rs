//! fio's cpuio engine, as a plan: how hard each job loads its CPU.
//!
//! fio 3.33 (engines/cpu.c): no data moves; each "I/O" burns the CPU for
//! `cpuchunks` microseconds (noop: a spin on the clock) or sorts 256K
//! 32-bit integers four times (qsort, whose measured time becomes the
//! cycle), then the job thinks (sleeps) cycle × (100 − load) / load µs
//! (thinktime_blocks=1, no spin), so a job loads its CPU at `cpuload`%.

use anyhow::Result;
use clap::{Args, ValueEnum};
use ringlab_core::usage_error;

/// fio's cpumode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CpuMode {
    /// Spin on the clock for the cycle (fio's usec_spin).
    Noop,
    /// Sort 256K 32-bit integers four times; the time it took is the cycle.
    Qsort,
}

impl CpuMode {
    pub fn name(self) -> &'static str {
        match self {
            CpuMode::Noop => "noop",
            CpuMode::Qsort => "qsort",
        }
    }
}

/// The cpuio engine's options (`--engine cpuio` only).
#[derive(Args, Debug, Clone)]
pub struct CpuioArgs {
    /// --engine cpuio: the share of its CPU each job burns, in percent
    /// (fio's cpuload; required, above 100 counts as 100).
    #[arg(long, value_name = "PCT", help_heading = "cpuio engine (fio's cpuio)")]
    pub cpuload: Option<u64>,

    /// --engine cpuio: noop spins, qsort sorts 256K integers four times per
    /// burn (fio's cpumode).
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        help_heading = "cpuio engine (fio's cpuio)"
    )]
    pub cpumode: Option<CpuMode>,

    /// --engine cpuio: microseconds of each burn (fio's cpuchunks)
    /// [default: 50000].
    #[arg(long, value_name = "US", help_heading = "cpuio engine (fio's cpuio)")]
    pub cpuchunks: Option<u64>,
}

/// fio's cpuchunks default (µs).
pub const DEFAULT_CYCLE_US: u64 = 50_000;

/// A cpuio job's load, resolved.
#[derive(Clone, Copy, Debug)]
pub struct CpuioPlan {
    /// Percent, 1 to 100.
    pub load: u64,
    pub mode: CpuMode,
    /// Microseconds of each burn (qsort: the first think time only).
    pub cycle_us: u64,
}

impl CpuioPlan {
    /// fio's think time after a burn of `cycle_us`: cycle × (100 − load) /
    /// load, in µs (integer arithmetic, as fio's).
    pub fn think_us(&self, cycle_us: u64) -> u64 {
        cycle_us * (100 - self.load) / self.load
    }

    /// fio's think time for the job, in µs after every burn, no spin
    /// (none at 100%: fio skips a zero pause); plan.rs makes it the job's
    /// thinktime.
    pub fn think_after_each_us(&self) -> Option<u64> {
        let us = self.think_us(self.cycle_us);
        (us > 0).then_some(us)
    }
}

/// The cpuio plan of `--engine cpuio`, or a refusal of its options with
/// another engine.
pub fn resolve(
    args: &CpuioArgs,
    engine: crate::engine_kind::EngineKind,
) -> Result<Option<CpuioPlan>> {
    if engine != crate::engine_kind::EngineKind::Cpuio {
        if args.cpuload.is_some() || args.cpumode.is_some() || args.cpuchunks.is_some() {
            return Err(usage_error(
                "--cpuload, --cpumode and --cpuchunks are the cpuio engine's: add --engine cpuio",
            ));
        }
        return Ok(None);
    }
    let load = match args.cpuload {
        None | Some(0) => {
            return Err(usage_error(
                "--engine cpuio: cpu thread needs rate (cpuload=), as fio says: give --cpuload PCT (fio's cpuload=PCT)",
            ))
        }
        Some(l) => l.min(100),
    };
    let cycle_us = args.cpuchunks.unwrap_or(DEFAULT_CYCLE_US);
    if cycle_us == 0 {
        return Err(usage_error(
            "--cpuchunks 0: a burn must last at least 1 microsecond",
        ));
    }
    Ok(Some(CpuioPlan {
        load,
        mode: args.cpumode.unwrap_or(CpuMode::Noop),
        cycle_us,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_time_loads_the_cpu_at_cpuload() {
        let p = CpuioPlan {
            load: 50,
            mode: CpuMode::Noop,
            cycle_us: 50_000,
        };
        assert_eq!(p.think_us(50_000), 50_000);
        let p = CpuioPlan { load: 25, ..p };
        assert_eq!(p.think_us(2000), 6000);
        assert!(CpuioPlan { load: 100, ..p }.think_after_each_us().is_none());
    }
}
