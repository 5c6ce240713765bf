//! The results store: one directory per sweep.
//!
//! ```text
//! DIR/index.json        every planned run: id, axis values, repeat, status
//! DIR/plan.toml         the plan as written
//! DIR/runs/<id>.json    one result each (schema/result.schema.json)
//! DIR/.lock             held (flock) while a sweep writes
//! DIR/.scratch/         data files of runs that name no target, removed
//!                       after each run and when a sweep opens DIR
//! ```
//!
//! Every file is written to a temporary name and renamed, so a file that
//! exists is complete. A result file on disk is the proof that its run is
//! done: a sweep killed between storing a result and updating the index
//! loses nothing on resume.

use crate::input::{read_limited, read_text_limited, INDEX_MAX_BYTES, RESULT_MAX_BYTES};
use crate::plan::{Plan, PlannedRun};
use anyhow::{Context, Result};
use ringlab_core::usage_error;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::fs::File;
use std::path::{Path, PathBuf};

pub const INDEX_FILE: &str = "index.json";
pub const PLAN_FILE: &str = "plan.toml";
pub const RUNS_DIR: &str = "runs";
const LOCK_FILE: &str = ".lock";
pub const SCRATCH_DIR: &str = ".scratch";
pub const INDEX_FORMAT: &str = "ringlab-sweep-index";
const INDEX_VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Done,
    Failed,
}

/// One planned run as the index records it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunEntry {
    pub id: String,
    /// Axis name -> value.
    pub values: serde_json::Map<String, Json>,
    /// 1-based.
    pub repeat: u32,
    pub status: Status,
    /// The result file, relative to DIR.
    pub result: String,
    /// `ringlab` arguments of the run (without --output and --output-format).
    pub args: Vec<String>,
    /// Why the last attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the child process, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
}

impl RunEntry {
    /// `iodepth=4 engine=uring repeat 2`.
    pub fn label(&self) -> String {
        let mut parts: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| match v {
                Json::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        parts.push(format!("repeat {}", self.repeat));
        parts.join(" ")
    }
}

/// `DIR/index.json`: the plan's identity and its runs in execution order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Index {
    pub format: String,
    pub version: u32,
    /// [`Plan::identity`] of the plan that made these runs.
    pub plan: Json,
    /// Runs in the order the sweep executes them.
    pub runs: Vec<RunEntry>,
}

impl Index {
    fn new(plan: &Plan, runs: &[PlannedRun]) -> Index {
        let entries = runs
            .iter()
            .map(|r| RunEntry {
                id: r.id.clone(),
                values: r
                    .values
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
                repeat: r.repeat,
                status: Status::Pending,
                result: format!("{RUNS_DIR}/{}.json", r.id),
                args: r.args.clone(),
                error: None,
                wall_s: None,
            })
            .collect();
        Index {
            format: INDEX_FORMAT.to_string(),
            version: INDEX_VERSION,
            plan: plan.identity(),
            runs: entries,
        }
    }

    /// The swept axes, in plan order.
    pub fn axes(&self) -> Vec<String> {
        self.plan["axes"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    pub fn command(&self) -> &str {
        self.plan["command"].as_str().unwrap_or("io")
    }

    pub fn done(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| r.status == Status::Done)
            .count()
    }
}

/// Reads `DIR/index.json` (for reports and dry runs; takes no lock).
pub fn read_index(dir: &Path) -> Result<Index> {
    let path = dir.join(INDEX_FILE);
    let text = read_text_limited(&path, INDEX_MAX_BYTES).map_err(|e| {
        usage_error(format!(
            "{}: {e}: name a directory written by 'ringlab sweep PLAN --output DIR'",
            path.display()
        ))
    })?;
    let index: Index = serde_json::from_str(&text).map_err(|e| {
        usage_error(format!(
            "{}: not a sweep index ({e}); was it written by 'ringlab sweep'?",
            path.display()
        ))
    })?;
    if index.format != INDEX_FORMAT || index.version != INDEX_VERSION {
        return Err(usage_error(format!(
            "{}: format {} version {}, this ringlab reads {INDEX_FORMAT} version {INDEX_VERSION}",
            path.display(),
            index.format,
            index.version
        )));
    }
    Ok(index)
}

/// A results directory opened for writing by one sweep.
pub struct Store {
    pub dir: PathBuf,
    pub index: Index,
    // Held for the life of the store: a second sweep on DIR is refused.
    _lock: File,
}

impl Store {
    /// Opens DIR for `plan`: creates it, or resumes the runs of the same plan.
    /// A directory holding another plan's sweep, or other files, is refused.
    pub fn open(dir: &Path, plan: &Plan, runs: &[PlannedRun]) -> Result<Store> {
        // Refused before anything is created in it: a refused directory is
        // left as it was (no runs/, .scratch/ or .lock added).
        if dir.is_dir() {
            existing_index(dir, plan)?;
        }
        let made = std::fs::create_dir_all(dir.join(RUNS_DIR))
            .and_then(|()| std::fs::create_dir_all(dir.join(SCRATCH_DIR)));
        made.map_err(|e| {
            usage_error(format!(
                "--output {}: cannot create the results directory: {e}",
                dir.display()
            ))
        })?;
        let lock = lock_dir(dir)?;
        let mut index = match existing_index(dir, plan)? {
            Some(index) => index,
            None => Index::new(plan, runs),
        };
        for entry in &mut index.runs {
            // The result file decides: it is renamed into place only when
            // complete. Refresh args from the plan (same plan, same args).
            let path = dir.join(&entry.result);
            if read_result(&path, &plan.command).is_ok() {
                entry.status = Status::Done;
            } else if entry.status == Status::Done {
                entry.status = Status::Pending;
            }
        }
        remove_temp_files(&dir.join(RUNS_DIR));
        clean_scratch(&dir.join(SCRATCH_DIR));
        write_atomic(&dir.join(PLAN_FILE), plan.text.as_bytes())?;
        let store = Store {
            dir: dir.to_path_buf(),
            index,
            _lock: lock,
        };
        store.save()?;
        Ok(store)
    }

    pub fn save(&self) -> Result<()> {
        let mut text = serde_json::to_string_pretty(&self.index)?;
        text.push('\n');
        write_atomic(&self.dir.join(INDEX_FILE), text.as_bytes())
    }

    pub fn result_path(&self, entry: &RunEntry) -> PathBuf {
        self.dir.join(&entry.result)
    }

    /// Removes the data files runs left in the scratch directory (a run
    /// killed by a signal cannot remove its own).
    pub fn clean_scratch(&self) {
        clean_scratch(&scratch_dir(&self.dir));
    }
}

/// The index of DIR if it holds a sweep of `plan`; `None` for a new or
/// empty directory; a usage error for anything else.
pub fn existing_index(dir: &Path, plan: &Plan) -> Result<Option<Index>> {
    if !dir.join(INDEX_FILE).exists() {
        let foreign: Vec<String> = match std::fs::read_dir(dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| ![RUNS_DIR, LOCK_FILE, PLAN_FILE, SCRATCH_DIR].contains(&n.as_str()))
                .collect(),
            Err(_) => Vec::new(),
        };
        if !foreign.is_empty() {
            return Err(usage_error(format!(
                "--output {}: the directory holds other files ({}) and no sweep index: name a new or empty directory",
                dir.display(),
                foreign.join(", ")
            )));
        }
        return Ok(None);
    }
    let index = read_index(dir)?;
    let ours = plan.identity();
    if index.plan != ours {
        return Err(usage_error(format!(
            "--output {} holds the sweep of a different plan (differs in {}): use a new --output directory, or the plan that made it (its copy is {}/{PLAN_FILE})",
            dir.display(),
            differences(&index.plan, &ours).join(", "),
            dir.display()
        )));
    }
    Ok(Some(index))
}

/// Names of the plan fields that differ (`axes.iodepth`, `repeats`).
fn differences(a: &Json, b: &Json) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["command", "repeats", "shuffle", "seed", "options", "axes"] {
        let (x, y) = (&a[key], &b[key]);
        if x == y {
            continue;
        }
        match (x.as_object(), y.as_object()) {
            (Some(mx), Some(my)) => {
                let mut names: Vec<&String> = mx.keys().chain(my.keys()).collect();
                names.dedup();
                let mut seen = std::collections::BTreeSet::new();
                for n in names {
                    if mx.get(n) != my.get(n) && seen.insert(n) {
                        out.push(format!("{key}.{n}"));
                    }
                }
                if seen.is_empty() {
                    out.push(format!("{key} (order)"));
                }
            }
            _ => out.push(key.to_string()),
        }
    }
    out
}

/// A result of `command` that a report can read: JSON with the `total`
/// figures, of the sweep's command. The error says what the bytes are
/// instead.
pub fn parse_result(bytes: &[u8], command: &str) -> std::result::Result<Json, String> {
    let v: Json = serde_json::from_slice(bytes).map_err(|e| format!("not JSON ({e})"))?;
    if !v["total"].is_object() {
        return Err("JSON without 'total' figures: not a ringlab result".to_string());
    }
    if v["command"].as_str() != Some(command) {
        return Err(format!(
            "a result of command {}, the sweep's is {command}",
            v["command"]
        ));
    }
    if let Some(bad) = crate::input::absurd_figure(&v) {
        return Err(format!(
            "{bad}, which no run measures (figures are from 0 to 1e18): not a ringlab result, or an edited one"
        ));
    }
    Ok(v)
}

/// The result stored at `path` (bounded read, see [`parse_result`]).
pub fn read_result(path: &Path, command: &str) -> std::result::Result<Json, String> {
    parse_result(&read_limited(path, RESULT_MAX_BYTES)?, command)
}

fn remove_temp_files(runs: &Path) {
    if let Ok(rd) = std::fs::read_dir(runs) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.ends_with(".tmp") {
                // A leftover of a killed sweep; a failure to remove it only
                // leaves a hidden file behind.
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Where `io` runs of the sweep in `dir` that name no target create their
/// data file.
pub fn scratch_dir(dir: &Path) -> PathBuf {
    dir.join(SCRATCH_DIR)
}

/// Removes `ringlab-io-*.dat` files (what `ringlab io` creates without a
/// target) from the scratch directory, and nothing else.
fn clean_scratch(scratch: &Path) {
    if let Ok(rd) = std::fs::read_dir(scratch) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let is_file = e.file_type().is_ok_and(|t| t.is_file());
            if is_file && name.starts_with("ringlab-io-") && name.ends_with(".dat") {
                // A failure to remove it leaves it for the next sweep.
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

fn lock_dir(dir: &Path) -> Result<File> {
    use rustix::fs::{flock, FlockOperation};
    let path = dir.join(LOCK_FILE);
    let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(usage_error(format!(
            "--output {}: another sweep is writing to this directory; wait for it or use another directory",
            dir.display()
        ))),
        Err(e) => Err(anyhow::Error::new(std::io::Error::from(e))
            .context(format!("locking {}", path.display()))),
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, so that
/// readers see the old file or the whole new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut f = ringlab_core::files::NewFile::create_own(path)?;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    const PLAN: &str = "command = \"io\"\nrepeats = 2\nshuffle = true\n[axes]\niodepth = [1, 4]\n";

    fn open(dir: &Path, text: &str) -> Result<Store> {
        let plan = parse_plan(text, "p").unwrap();
        Store::open(dir, &plan, &plan.runs())
    }

    #[test]
    fn a_new_store_lists_every_run_pending() {
        let tmp = tempfile::tempdir().unwrap();
        let store = open(tmp.path(), PLAN).unwrap();
        assert_eq!(store.index.runs.len(), 4);
        assert!(store.index.runs.iter().all(|r| r.status == Status::Pending));
        let back = read_index(tmp.path()).unwrap();
        assert_eq!(back.runs.len(), 4);
        assert_eq!(back.axes(), ["iodepth"]);
        assert!(tmp.path().join(PLAN_FILE).exists());
    }

    #[test]
    fn result_files_decide_what_is_done_on_reopen() {
        let tmp = tempfile::tempdir().unwrap();
        let store = open(tmp.path(), PLAN).unwrap();
        let first = store.index.runs[0].clone();
        std::fs::write(
            store.result_path(&first),
            "{\"command\": \"io\", \"total\": {}}",
        )
        .unwrap();
        // A torn write (not JSON) does not count.
        let second = store.index.runs[1].clone();
        std::fs::write(store.result_path(&second), "{\"tot").unwrap();
        let temp = tmp.path().join("runs/.0001.json.4242.tmp");
        std::fs::write(&temp, "partial").unwrap();
        let data = tmp.path().join(".scratch/ringlab-io-4243.dat");
        std::fs::write(&data, "data").unwrap();
        drop(store);
        let store = open(tmp.path(), PLAN).unwrap();
        assert_eq!(store.index.runs[0].status, Status::Done);
        assert_eq!(store.index.runs[1].status, Status::Pending);
        assert_eq!(store.index.done(), 1);
        assert!(!temp.exists(), "stale temp removed");
        assert!(!data.exists(), "a killed run's data file removed");
    }

    #[test]
    fn another_plan_is_refused_with_what_differs() {
        let tmp = tempfile::tempdir().unwrap();
        drop(open(tmp.path(), PLAN).unwrap());
        let e = open(tmp.path(), &PLAN.replace("[1, 4]", "[1, 8]"))
            .err()
            .unwrap();
        assert!(e.downcast_ref::<ringlab_core::UsageError>().is_some());
        let msg = format!("{e:#}");
        assert!(msg.contains("different plan"), "{msg}");
        assert!(msg.contains("axes.iodepth"), "{msg}");
    }

    #[test]
    fn a_foreign_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("thesis.tex"), "x").unwrap();
        let msg = format!("{:#}", open(tmp.path(), PLAN).err().unwrap());
        assert!(msg.contains("thesis.tex"), "{msg}");
    }

    #[test]
    fn a_second_writer_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let _first = open(tmp.path(), PLAN).unwrap();
        let msg = format!("{:#}", open(tmp.path(), PLAN).err().unwrap());
        assert!(msg.contains("another sweep"), "{msg}");
    }
}
