//! `ringlab fio`: a job without size whose file an earlier group writes
//! (surface-scan.fio's verify-phase reads what its write-phase wrote until
//! the file system was full). fio sizes a job's file when the job starts,
//! so the job moves the file as it is then, not as it was (or was not)
//! when the job file was read.

use anyhow::Result;
use ringlab_core::usage_error;
use ringlab_io::fio::options::Written;
use ringlab_io::IoPlan;
use std::path::Path;

/// Whether a job without a size of its own (no size, filesize, io_size or
/// number_ios; not time based) on `target` is sized when it starts: an
/// earlier batch writes that target.
pub fn sized_at_start<'a>(
    opts: &[Written],
    target: &Path,
    batch: u32,
    earlier: impl IntoIterator<Item = (u32, &'a IoPlan)>,
) -> bool {
    let own_size = opts.iter().any(|o| {
        matches!(
            o.key.replace('-', "_").as_str(),
            "size" | "filesize" | "io_size" | "io_limit" | "number_ios" | "time_based"
        )
    });
    !own_size
        && earlier
            .into_iter()
            .any(|(b, p)| b < batch && p.writes() && p.target.as_deref() == Some(target))
}

/// Sets the job's bytes from its file as it is now (its group starts):
/// the file from --offset, in whole blocks, times --loops; a run time
/// only if one was given.
pub fn size_now(plan: &mut IoPlan, argv: &[String], name: &str) -> Result<()> {
    use std::io::Seek;
    let Some(path) = plan.target.clone() else {
        return Ok(());
    };
    let len = std::fs::File::open(&path)
        .and_then(|mut f| f.seek(std::io::SeekFrom::End(0)))
        .map_err(|e| {
            usage_error(format!(
                "[{name}] has no size and its file {} cannot be opened when its group starts ({e}): give size=",
                path.display()
            ))
        })?;
    let bytes = len.saturating_sub(plan.offset) / plan.bs * plan.bs;
    if bytes == 0 {
        return Err(usage_error(format!(
            "[{name}] has no size and its file {} holds no whole block (--bs {}) after offset {} when its group starts: give size=",
            path.display(),
            plan.bs,
            plan.offset
        )));
    }
    plan.io_size = Some(bytes.saturating_mul(plan.loops));
    if !argv.iter().any(|a| a == "--runtime") {
        plan.runtime = None;
    }
    Ok(())
}
