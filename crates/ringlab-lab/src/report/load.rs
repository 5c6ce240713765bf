//! Loading a results directory: its index, its plan and the result of every
//! run the index lists as done.

use crate::store::{read_index, Index, RunEntry, Status, PLAN_FILE};
use anyhow::{Context, Result};
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
}

/// Reads DIR: the index, the plan as written and the done runs' results.
pub(super) fn load(dir: &Path) -> Result<Loaded> {
    let index = read_index(dir)?;
    let plan_text = std::fs::read_to_string(dir.join(PLAN_FILE)).unwrap_or_default();
    let mut entries = index.runs.clone();
    entries.sort_by(|a, b| a.id.cmp(&b.id));
    let mut results = Vec::new();
    for e in &entries {
        if e.status != Status::Done {
            continue;
        }
        let path = dir.join(&e.result);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            // Listed done but gone: the table shows it as not done.
            Err(_) => continue,
        };
        let v: Json = serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a JSON result", path.display()))?;
        results.push((e.clone(), v));
    }
    Ok(Loaded {
        index,
        plan_text,
        entries,
        results,
    })
}
