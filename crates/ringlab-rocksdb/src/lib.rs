//! `ringlab rocksdb`: the first study's application experiment (thesis 000,
//! chapter 5) on the real RocksDB: `db_bench multireadrandom` with direct
//! reads, under RocksDB's own backend and under ringlab's io_uring
//! FileSystem plugin (`rocksdb-plugin/`) with its knobs chosen at run time
//! through `--fs_uri=ringlab://KNOBS`.

pub mod dbbench;
pub mod evidence;
pub mod matrix;
pub mod runner;

use std::path::PathBuf;

/// What to install when something is missing.
pub const INSTALL: &str = "apt-get install librocksdb-dev rocksdb-tools liburing-dev g++";
/// The plugin's file name.
pub const PLUGIN_FILE: &str = "libringlab_rocksdb_fs.so";

/// Where the build put the plugin, or why it did not build it.
pub fn built_plugin() -> Result<PathBuf, String> {
    let path = env!("RINGLAB_ROCKSDB_PLUGIN");
    if path.is_empty() {
        return Err(env!("RINGLAB_ROCKSDB_PLUGIN_PROBLEM").to_string());
    }
    Ok(PathBuf::from(path))
}

/// The plugin to load: `explicit` (--plugin), else one next to the running
/// binary, else the one the build made. The error says what to install.
pub fn find_plugin(explicit: Option<&std::path::Path>) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(format!("--plugin {}: no such file", p.display()))
        };
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.to_path_buf()))
    {
        let beside = dir.join(PLUGIN_FILE);
        if beside.is_file() {
            return Ok(beside);
        }
    }
    let built = built_plugin().map_err(|why| {
        let why = why.trim_end_matches(INSTALL).trim_end_matches(": ");
        format!("the RocksDB plugin was not built when ringlab was compiled: {why}; install the packages and rebuild: {INSTALL} && cargo build")
    })?;
    if built.is_file() {
        Ok(built)
    } else {
        Err(format!(
            "the RocksDB plugin {} is gone (cargo clean?): rebuild with cargo build, or pass --plugin PATH",
            built.display()
        ))
    }
}

pub use runner::{run_command, RocksdbArgs};

/// The checksum reader (`rocksdb-plugin/ringlab_fs_check.cc`) the build made
/// beside the plugin, for tests; `None` where the plugin was not built.
pub fn built_checker() -> Option<PathBuf> {
    let path = env!("RINGLAB_ROCKSDB_CHECK");
    (!path.is_empty()).then(|| PathBuf::from(path))
}
