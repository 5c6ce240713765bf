//! Loading a results directory: its index, its plan and the result of every
//! run the index lists as done. Every file is read with a bound; a result
//! that is missing, unreadable, not JSON or not a result of the sweep's
//! command is skipped with a warning, and its run shows as not done.

use crate::input::{read_text_limited, PLAN_MAX_BYTES};
use crate::store::{read_index, read_result, Index, RunEntry, Status, PLAN_FILE};
use anyhow::Result;
use serde_json::Value as Json;
use std::path::Path;

/// What a results directory holds, as read from disk.
pub(super) struct Loaded {
    pub(super) index: Index,
    pub(super) plan_text: String,
    /// Every planned run, in id order.
    pub(super) entries: Vec<RunEntry>,
    /// Done runs with their results, in id order.
    pub(super) results: Vec<(RunEntry, Json)>,
    /// One line per file that was skipped, saying why.
    pub(super) warnings: Vec<String>,
}

/// Reads DIR: the index, the plan as written and the done runs' results.
pub(super) fn load(dir: &Path) -> Result<Loaded> {
    let index = read_index(dir)?;
    let mut warnings = Vec::new();
    let plan_path = dir.join(PLAN_FILE);
    let plan_text = match read_text_limited(&plan_path, PLAN_MAX_BYTES) {
        Ok(text) => text,
        Err(_) if !plan_path.exists() => String::new(),
        Err(e) => {
            warnings.push(format!(
                "{}: {e}; the report shows no plan",
                plan_path.display()
            ));
            String::new()
        }
    };
    let mut entries = index.runs.clone();
    entries.sort_by(|a, b| a.id.cmp(&b.id));
    let command = index.command().to_string();
    let mut results = Vec::new();
    for e in entries.iter().filter(|e| e.status == Status::Done) {
        let path = dir.join(&e.result);
        match read_result(&path, &command) {
            Ok(v) => results.push((e.clone(), v)),
            Err(why) => warnings.push(format!(
                "skipped {} (run {} {}): {why}; it counts as not run (run the sweep again to redo it)",
                path.display(),
                e.id,
                e.label()
            )),
        }
    }
    Ok(Loaded {
        index,
        plan_text,
        entries,
        results,
        warnings,
    })
}
