//! fio's exitall at the start of a group: which job reaches its first I/O
//! first.
//!
//! fio releases a group's jobs together, and only then does each set up
//! its I/O: a write job allocates and fills its buffers (iodepth x bs
//! bytes of random data: 16 MiB for enospc-pressure.fio's dio-raicer), a
//! trim job fills none. A trim job whose first trim cannot succeed (fio
//! 3.33 trims with BLKDISCARD, which a regular file refuses with ENOTTY)
//! therefore fails, and under exitall ends the others, before they issue
//! their first I/O: in 25 runs of enospc-pressure.fio fio's dio-raicer
//! never wrote, and aio-dio-verifier (512 KiB of buffers) wrote in 7.
//!
//! ringlab sets its jobs up before the group's start, so every job would
//! issue at once. Under exitall, a job whose first I/O is known to end it
//! goes first; the others start once it has ended, and the ones its exit
//! stopped start without an I/O, as fio's do.

use ringlab_io::plan::IoPlan;

/// Whether the job's first I/O ends it for certain: a trim (BLKDISCARD,
/// fio 3.33's way) of a target that is not a block device, with an error
/// continue_on_error does not cover, and no startdelay.
pub fn ends_at_first_io(plan: &IoPlan, start_delay: std::time::Duration) -> bool {
    if !plan.rw.trims() || !plan.trim_blkdiscard || !start_delay.is_zero() {
        return false;
    }
    let Some(path) = plan.target.as_deref() else {
        return false;
    };
    // fio counts a failed trim as a write error (continue_on_error=write).
    ringlab_io::trim::discard_refused(path).is_some_and(|errno| {
        !plan.continue_errnos[ringlab_io::workload::Dir::Trim.size_index()].contains(&errno)
    })
}

/// Under exitall, marks the members of a group (their plans and start
/// delays) whose first I/O ends them as going first.
pub fn order(gate: &ringlab_core::gate::GroupGate, members: &[(&IoPlan, std::time::Duration)]) {
    let first: Vec<bool> = members
        .iter()
        .map(|(plan, delay)| ends_at_first_io(plan, *delay))
        .collect();
    // Nobody to go ahead of: every job starts at once.
    if first.iter().all(|&f| f) {
        return;
    }
    for (k, f) in first.iter().enumerate() {
        if *f {
            gate.go_first(k);
        }
    }
}
