//! fio's file operation engines, as a plan and a file service: filecreate,
//! filestat and filedelete (fio 3.33 engines/fileoperations.c; the engines
//! themselves are engines/filecreate.rs, filestat.rs, filedelete.rs).
//!
//! What fio does with them, and so ringlab:
//!
//! - A job has `nrfiles` files, job J's file F named `NAME.J.F` in the
//!   directory (one file shared by every job when filename= names it: fio
//!   then ignores nrfiles). Each file is `filesize` long, so a job moves
//!   `nrfiles × filesize` bytes in one pass (`size`, when smaller, ends the
//!   pass early).
//! - The job serves its files round robin, one I/O each in turn (fio's
//!   file_service_type=roundrobin with file_service_nr=1), with at most
//!   `openfiles` of them open at once: a file is "opened" when the walk
//!   first reaches it while fewer than `openfiles` are open (else the walk
//!   passes it by, as fio's get_next_file_rr does on its EBUSY), and closed
//!   when the walk comes back to it after its last I/O. With openfiles=1
//!   the files are served one after the other.
//! - Opening a file is the engine's operation, timed: filecreate opens it
//!   with O_CREAT|O_RDWR, mode 0600 (and closes it when the file is done),
//!   filestat stat(2)s it (lstat or realpath + statx by stat_type),
//!   filedelete unlinks it. Each one is one completion-latency sample of
//!   the job's direction (reads when the job reads, else writes), fio's
//!   add_clat_sample in the hook.
//! - The I/Os are not done (FIO_FAKEIO): each counts as an I/O of its
//!   block size, and none is timed (FIO_NOSTATS): the operations' times
//!   are the only latencies, no total latency is recorded.
//! - Every new pass (loops, time_based) closes the files and opens them
//!   again as the walk reaches them: a new create, stat or unlink each.
//! - filestat's and filedelete's files are laid out before the run, as fio
//!   lays them out (real data for a job that reads, fallocate for one that
//!   only writes); filecreate lays out nothing.

use anyhow::Result;
use clap::{Args, ValueEnum};
use ringlab_stats::LatencyRecorder;
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const HEADING: &str = "File engines (fio's filecreate, filestat, filedelete)";

/// fio's stat_type (filestat).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StatType {
    /// stat(2), fio's default.
    Stat,
    /// lstat(2).
    Lstat,
    /// realpath(3), then statx(2) with STATX_ALL, as fio does.
    Statx,
}

impl StatType {
    pub fn name(self) -> &'static str {
        match self {
            StatType::Stat => "stat",
            StatType::Lstat => "lstat",
            StatType::Statx => "statx",
        }
    }
}

/// The file engines' options (`--engine filecreate|filestat|filedelete`).
#[derive(Args, Debug, Clone)]
pub struct FileOpsArgs {
    /// Files per job (fio's nrfiles): job J's file F is TARGET.J.F, J and
    /// F counted from 0, as fio names a job's files NAME.J.F. Without it
    /// every job works on TARGET itself (fio's filename=).
    #[arg(long, value_name = "N", help_heading = HEADING)]
    pub nrfiles: Option<u64>,

    /// At most N of a job's files open at once (fio's openfiles)
    /// [default: --nrfiles].
    #[arg(long, value_name = "N", help_heading = HEADING)]
    pub openfiles: Option<u64>,

    /// --engine filestat: stat, lstat or statx (fio's stat_type)
    /// [default: stat].
    #[arg(long, value_enum, value_name = "TYPE", help_heading = HEADING)]
    pub stat_type: Option<StatType>,
}

/// Where a job's files are.
#[derive(Clone, Debug)]
pub enum FileNaming {
    /// Every job works on this one file (fio's filename=).
    Shared(PathBuf),
    /// Job J's file F is `STEM.J.F` (fio's `NAME.J.F`).
    Numbered(PathBuf),
}

/// A file engine's files, resolved.
#[derive(Clone, Debug)]
pub struct FilePlan {
    pub naming: FileNaming,
    /// Files per job.
    pub nrfiles: u64,
    /// Files open at once per job (1 to nrfiles).
    pub openfiles: u64,
    /// Each file's size.
    pub file_size: u64,
    /// The I/Os each file takes in a pass (its size over the block size).
    pub ios_per_file: u64,
    pub stat_type: StatType,
}

impl FilePlan {
    /// Job `job`'s file `file`.
    pub fn path(&self, job: u32, file: u64) -> PathBuf {
        match &self.naming {
            FileNaming::Shared(p) => p.clone(),
            FileNaming::Numbered(stem) => {
                let mut s = stem.as_os_str().to_owned();
                s.push(format!(".{job}.{file}"));
                PathBuf::from(s)
            }
        }
    }

    /// The bytes of one pass over a job's files: the region its I/Os are
    /// counted over.
    pub fn region(&self) -> u64 {
        self.nrfiles * self.file_size
    }

    /// The jobs whose files are distinct: every job's under fio's names,
    /// one set for a shared file.
    pub fn file_jobs(&self, numjobs: u32) -> u32 {
        match self.naming {
            FileNaming::Shared(_) => 1,
            FileNaming::Numbered(_) => numjobs,
        }
    }

    /// The files as said to people: `STEM.J.F` or the shared path.
    pub fn describe(&self) -> String {
        match &self.naming {
            FileNaming::Shared(p) => p.display().to_string(),
            FileNaming::Numbered(stem) => format!("{}.J.F", stem.display()),
        }
    }
}

/// What resolving the file engines' options needs of the run.
pub struct Facts<'a> {
    pub engine: crate::engine_kind::EngineKind,
    pub target: Option<&'a Path>,
    /// --size: each file's size.
    pub size: Option<u64>,
    pub bs: u64,
}

/// The file plan of a file engine, or a refusal of the file engines'
/// options with another engine.
pub fn resolve(args: &FileOpsArgs, f: &Facts) -> Result<Option<FilePlan>> {
    use crate::engine_kind::EngineKind;
    use ringlab_core::usage;
    if !f.engine.is_file_op() {
        if args.nrfiles.is_some_and(|n| n != 1) || args.openfiles.is_some_and(|n| n != 1) {
            usage!("--nrfiles and --openfiles are the file engines' (filecreate, filestat, filedelete): ringlab's other engines share one file or device; add --engine filecreate, filestat or filedelete, or drop them");
        }
        if args.stat_type.is_some() {
            usage!("--stat-type is the filestat engine's (fio's stat_type): add --engine filestat");
        }
        return Ok(None);
    }
    if args.stat_type.is_some() && f.engine != EngineKind::Filestat {
        usage!(
            "--stat-type is the filestat engine's (fio's stat_type), not {}'s: drop it",
            f.engine.name()
        );
    }
    let Some(target) = f.target else {
        usage!(
            "--engine {} works on files it names: give TARGET, the file every job works on, or with --nrfiles N the stem of each job's files (TARGET.J.F, as fio's NAME.J.F)",
            f.engine.name()
        );
    };
    let Some(file_size) = f.size else {
        usage!(
            "--engine {}: give --size, each file's size (fio's filesize): its I/Os, counted but not done, are --size over --bs per file",
            f.engine.name()
        );
    };
    if file_size % f.bs != 0 {
        usage!(
            "--engine {}: --size {file_size} is not a whole number of --bs {} blocks; ringlab counts whole blocks per file",
            f.engine.name(),
            f.bs
        );
    }
    let nrfiles = args.nrfiles.unwrap_or(1);
    if nrfiles == 0 {
        usage!("--nrfiles 0: a job needs at least one file");
    }
    let openfiles = match args.openfiles {
        Some(0) => usage!("--openfiles 0: at least one file must be open"),
        // fio: more open files than files is all of them.
        Some(n) => n.min(nrfiles),
        None => nrfiles,
    };
    Ok(Some(FilePlan {
        naming: match args.nrfiles {
            Some(_) => FileNaming::Numbered(target.to_path_buf()),
            None => FileNaming::Shared(target.to_path_buf()),
        },
        nrfiles,
        openfiles,
        file_size,
        ios_per_file: file_size / f.bs,
        stat_type: args.stat_type.unwrap_or(StatType::Stat),
    }))
}

/// The times of a job's file operations (ns), filled by its engine and
/// moved into its measurements when it ends ([`record_times`]).
pub type OpTimes = Arc<Mutex<LatencyRecorder>>;

/// Puts a job's file operation times in its measurements as fio reports
/// them: the completion latencies of the job's direction (reads when it
/// reads, else writes), and no other latency (fio's FIO_NOSTATS: the
/// I/Os, counted, are not timed).
pub fn record_times(times: &OpTimes, m: &mut ringlab_stats::ThreadMeasurements, reads: bool) {
    for d in [&mut m.read, &mut m.write, &mut m.trim] {
        d.lat = LatencyRecorder::new();
        d.slat = None;
        d.clat = None;
    }
    let t = std::mem::take(&mut *times.lock().unwrap_or_else(|p| p.into_inner()));
    if t.count() > 0 {
        let d = if reads { &mut m.read } else { &mut m.write };
        d.clat = Some(t);
    }
}

/// A file engine's operation on the files the walk opens and closes.
pub trait FileOp {
    /// fio's name of the engine: "filecreate", "filestat", "filedelete".
    const ENGINE: &'static str;
    /// The operation's state for one job of `plan`.
    fn for_plan(plan: &FilePlan) -> Self;
    /// What the operation is, for errors: "create", "stat", "unlink".
    fn what(&self) -> &'static str;
    /// The operation on file `file` (its path `path`), the part fio times.
    fn open(&mut self, file: usize, path: &CStr) -> std::io::Result<()>;
    /// The file is done (or the pass is over): what open kept is let go.
    fn close(&mut self, _file: usize) {}
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Unopened,
    Open,
    Done,
}

/// One job's walk over its files (fio's get_next_file_rr and
/// set_io_u_file, see the module's text).
pub struct FileService {
    paths: Vec<CString>,
    shown: Vec<PathBuf>,
    state: Vec<State>,
    /// I/Os each file has left in this pass.
    left: Vec<u64>,
    ios_per_file: u64,
    openfiles: u64,
    nr_open: u64,
    /// The file the walk looks at next.
    next: usize,
    /// I/Os served in this pass, and in a whole pass.
    served: u64,
    per_pass: u64,
    times: OpTimes,
    job: u32,
}

impl FileService {
    pub fn new(plan: &FilePlan, job: u32, times: OpTimes) -> Result<FileService> {
        let shown: Vec<PathBuf> = (0..plan.nrfiles).map(|f| plan.path(job, f)).collect();
        let paths = shown
            .iter()
            .map(|p| {
                CString::new(p.as_os_str().as_bytes()).map_err(|_| {
                    ringlab_core::usage_error(format!(
                        "{}: a file name with a NUL byte",
                        p.display()
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let n = paths.len();
        Ok(FileService {
            paths,
            shown,
            state: vec![State::Unopened; n],
            left: vec![plan.ios_per_file; n],
            ios_per_file: plan.ios_per_file,
            openfiles: plan.openfiles,
            nr_open: 0,
            next: 0,
            served: 0,
            per_pass: plan.nrfiles * plan.ios_per_file,
            times,
            job,
        })
    }

    /// The file the next I/O goes to, opening (timed) and closing files
    /// as the walk passes them.
    pub fn serve(&mut self, op: &mut impl FileOp) -> Result<usize> {
        if self.served == self.per_pass {
            self.new_pass(op);
        }
        let n = self.paths.len();
        // Each file is looked at at most twice (once to close it).
        for _ in 0..2 * n + 1 {
            let i = self.next;
            self.next = (i + 1) % n;
            match self.state[i] {
                State::Done => {}
                State::Open if self.left[i] == 0 => {
                    // fio closes a file when the walk comes back to it
                    // after its last I/O (set_io_u_file).
                    op.close(i);
                    self.state[i] = State::Done;
                    self.nr_open -= 1;
                }
                State::Open => return Ok(self.take(i)),
                State::Unopened if self.nr_open < self.openfiles => {
                    let start = ringlab_core::clock::mono_ns();
                    if let Err(e) = op.open(i, &self.paths[i]) {
                        anyhow::bail!(
                            "job {}: {} of {} failed: {e}{}",
                            self.job,
                            op.what(),
                            self.shown[i].display(),
                            hint(op.what(), &e)
                        );
                    }
                    let ns = ringlab_core::clock::mono_ns().saturating_sub(start);
                    self.times
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .record(ns.max(1));
                    self.state[i] = State::Open;
                    self.nr_open += 1;
                    return Ok(self.take(i));
                }
                State::Unopened => {}
            }
        }
        anyhow::bail!(
            "job {}: no file left to serve ({} of {} I/Os of the pass done): a ringlab bug, please report it",
            self.job,
            self.served,
            self.per_pass
        )
    }

    fn take(&mut self, i: usize) -> usize {
        self.left[i] -= 1;
        self.served += 1;
        i
    }

    /// A new pass (fio's next loop): every file closed, served again from
    /// the first.
    fn new_pass(&mut self, op: &mut impl FileOp) {
        for i in 0..self.paths.len() {
            if self.state[i] == State::Open {
                op.close(i);
            }
            self.state[i] = State::Unopened;
            self.left[i] = self.ios_per_file;
        }
        self.nr_open = 0;
        self.next = 0;
        self.served = 0;
    }

    /// Lets go of every open file (the job's end).
    pub fn close_all(&mut self, op: &mut impl FileOp) {
        for i in 0..self.paths.len() {
            if self.state[i] == State::Open {
                op.close(i);
                self.state[i] = State::Done;
            }
        }
        self.nr_open = 0;
    }
}

/// The usual fix of a failed file operation.
fn hint(what: &str, e: &std::io::Error) -> &'static str {
    match (what, e.raw_os_error()) {
        ("unlink", Some(libc::ENOENT)) => " (the file is gone: fio's filedelete unlinks each file once, so a second pass over the files (loops, time_based) or another job deleting the same files fails too)",
        (_, Some(libc::ENOENT)) => " (a directory on the path does not exist: create it first)",
        (_, Some(libc::EMFILE)) | (_, Some(libc::ENFILE)) => " (too many open files: lower --openfiles, fio's openfiles)",
        (_, Some(libc::EACCES)) | (_, Some(libc::EPERM)) => " (no permission there: pick another directory)",
        (_, Some(libc::ENOSPC)) | (_, Some(libc::EDQUOT)) => " (the file system is out of space or inodes)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the walk: "o3" opened file 3, "c3" closed it.
    #[derive(Default)]
    struct Trace(Vec<String>);

    impl FileOp for Trace {
        const ENGINE: &'static str = "trace";
        fn for_plan(_plan: &FilePlan) -> Trace {
            Trace::default()
        }
        fn what(&self) -> &'static str {
            "trace"
        }
        fn open(&mut self, file: usize, _path: &CStr) -> std::io::Result<()> {
            self.0.push(format!("o{file}"));
            Ok(())
        }
        fn close(&mut self, file: usize) {
            self.0.push(format!("c{file}"));
        }
    }

    fn plan(nrfiles: u64, openfiles: u64, ios_per_file: u64) -> FilePlan {
        FilePlan {
            naming: FileNaming::Numbered(PathBuf::from("/tmp/x")),
            nrfiles,
            openfiles,
            file_size: ios_per_file * 4096,
            ios_per_file,
            stat_type: StatType::Stat,
        }
    }

    fn walk(p: &FilePlan, ios: u64) -> (Vec<usize>, Vec<String>, u64) {
        let times = OpTimes::default();
        let mut s = FileService::new(p, 0, times.clone()).unwrap();
        let mut t = Trace::default();
        let files = (0..ios).map(|_| s.serve(&mut t).unwrap()).collect();
        let n = times.lock().unwrap().count();
        (files, t.0, n)
    }

    #[test]
    fn round_robin_opens_each_file_once_per_pass() {
        // fio's filestat with openfiles = nrfiles: one I/O per file in turn.
        let (files, trace, ops) = walk(&plan(3, 3, 2), 12);
        assert_eq!(files, [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
        assert_eq!(ops, 6, "one open per file per pass, two passes");
        assert_eq!(trace[..3], ["o0", "o1", "o2"]);
        assert_eq!(trace.iter().filter(|t| t.starts_with('c')).count(), 3);
    }

    #[test]
    fn one_open_file_serves_the_files_one_after_the_other() {
        // fio's filecreate example: openfiles=1.
        let (files, trace, ops) = walk(&plan(3, 1, 2), 6);
        assert_eq!(files, [0, 0, 1, 1, 2, 2]);
        assert_eq!(trace, ["o0", "c0", "o1", "c1", "o2"]);
        assert_eq!(ops, 3);
    }

    #[test]
    fn names_are_fios() {
        let p = plan(2, 2, 1);
        assert_eq!(p.path(3, 1), PathBuf::from("/tmp/x.3.1"));
        assert_eq!(p.region(), 2 * 4096);
    }
}
