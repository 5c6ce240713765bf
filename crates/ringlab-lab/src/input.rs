//! Reading the lab's input files (plans, sweep indexes, results) with a
//! bound: only regular files, and no more than a file of its kind can hold,
//! so that `/dev/zero`, a FIFO or a runaway file named by mistake is refused
//! in a moment with a message instead of filling memory or blocking.

use rustix::fs::OFlags;
use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// A plan is a short TOML file (at most 100,000 runs, each a few values).
pub(crate) const PLAN_MAX_BYTES: u64 = 4 << 20;
/// A sweep index lists at most 100,000 runs of a few hundred bytes each.
pub(crate) const INDEX_MAX_BYTES: u64 = 256 << 20;
/// One run's result: a few KiB, more with many threads or connections.
pub(crate) const RESULT_MAX_BYTES: u64 = 64 << 20;

/// Reads the whole of `path`, a regular file of at most `limit` bytes. The
/// error says why not, without the path (callers name the file and what it
/// should have been).
pub(crate) fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    // Refuse before opening what is not a file: opening a FIFO blocks, and
    // opening a device can act on it.
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    check_kind(&meta, limit)?;
    // O_NONBLOCK: should the path have become a FIFO since, open() does not
    // wait for a writer; on a regular file it changes nothing.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(|e| e.to_string())?;
    check_kind(&file.metadata().map_err(|e| e.to_string())?, limit)?;
    read_at_most(file, limit)
}

/// Like [`read_limited`], as UTF-8 text.
pub(crate) fn read_text_limited(path: &Path, limit: u64) -> Result<String, String> {
    String::from_utf8(read_limited(path, limit)?)
        .map_err(|e| format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
}

fn check_kind(meta: &Metadata, limit: u64) -> Result<(), String> {
    let t = meta.file_type();
    let kind = if t.is_file() {
        return if meta.len() > limit {
            Err(too_big(meta.len(), limit))
        } else {
            Ok(())
        };
    } else if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(format!("is {kind}, not a regular file"))
}

/// Reads at most `limit` bytes; a file that grew past it while being read
/// is refused like one that was too big from the start.
fn read_at_most(file: File, limit: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64, limit));
    }
    Ok(bytes)
}

fn too_big(len: u64, limit: u64) -> String {
    format!(
        "is {} bytes, more than the {} MiB such a file can be",
        len,
        limit >> 20
    )
}

/// The largest figure a result may hold: 1e18 (31 years in ns, an exabyte,
/// 1e18 operations); more is no measurement.
pub(crate) const FIGURE_MAX: f64 = 1e18;

/// The first figure in a result's `total` that no run measures: negative,
/// not finite, or above [`FIGURE_MAX`]; named by its path and value.
pub(crate) fn absurd_figure(v: &serde_json::Value) -> Option<String> {
    fn walk(v: &serde_json::Value, path: &mut Vec<String>) -> Option<String> {
        match v {
            serde_json::Value::Number(n) => {
                let x = n.as_f64()?;
                (!x.is_finite() || !(0.0..=FIGURE_MAX).contains(&x))
                    .then(|| format!("{} is {n}", path.join(".")))
            }
            serde_json::Value::Object(m) => m.iter().find_map(|(k, x)| {
                path.push(k.clone());
                let r = walk(x, path);
                path.pop();
                r
            }),
            serde_json::Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| {
                path.push(i.to_string());
                let r = walk(x, path);
                path.pop();
                r
            }),
            _ => None,
        }
    }
    walk(&v["total"], &mut vec!["total".to_string()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_figures_are_named() {
        let ok = serde_json::json!({"total": {"iops": 1000.5, "lat": {"p99": 12}}});
        assert_eq!(absurd_figure(&ok), None);
        let neg = serde_json::json!({"total": {"iops": -1.0}});
        assert_eq!(absurd_figure(&neg).unwrap(), "total.iops is -1.0");
        let huge = serde_json::json!({"total": {"lat": {"p99": 1e308}}});
        assert!(absurd_figure(&huge).unwrap().starts_with("total.lat.p99"));
    }

    #[test]
    fn devices_directories_and_fifos_are_refused_before_reading() {
        let zero = read_limited(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(zero, "is a character device, not a regular file");
        let dir = tempfile::tempdir().unwrap();
        let d = read_limited(dir.path(), 1 << 20).unwrap_err();
        assert!(d.contains("a directory"), "{d}");
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        // Would block forever if it were opened for reading without a writer.
        let f = read_limited(&fifo, 1 << 20).unwrap_err();
        assert!(f.contains("a FIFO"), "{f}");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_at_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        std::fs::write(&p, vec![b' '; 2 << 20]).unwrap();
        let e = read_limited(&p, 1 << 20).unwrap_err();
        assert_eq!(
            e,
            "is 2097152 bytes, more than the 1 MiB such a file can be"
        );
        assert_eq!(read_limited(&p, 2 << 20).unwrap().len(), 2 << 20);
        assert!(read_limited(&dir.path().join("none"), 10)
            .unwrap_err()
            .contains("No such file"));
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(read_text_limited(&p, 10).unwrap_err().contains("UTF-8"));
    }
}
