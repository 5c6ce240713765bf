//! `--output FILE`: checked before anything runs, written whole or not at
//! all.
//!
//! The path is refused (a usage error) when writing it could destroy data:
//! a directory, a block or character device, a FIFO or socket, or the very
//! file the command works on. Otherwise an unnamed file is opened in the
//! destination's directory at once (`O_TMPFILE`, so a bad directory fails
//! before the run, and a killed run leaves nothing), filled at the end, and
//! only then given a name and renamed over the destination. A run that
//! fails leaves any existing file as it was.

use crate::files::NewFile;
use anyhow::{Context, Result};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where a command's result goes.
#[derive(Debug)]
pub enum Output {
    Stdout,
    File(NewFile),
}

impl Output {
    /// Checks `path` (`None` or `-`: standard output) and prepares it.
    /// `avoid` lists files the command reads or writes (its target): the
    /// output may not be one of them.
    pub fn open(path: Option<&Path>, avoid: &[&Path]) -> Result<Output> {
        let Some(named) = path else {
            return Ok(Output::Stdout);
        };
        if named.as_os_str() == "-" {
            return Ok(Output::Stdout);
        }
        Ok(Output::File(NewFile::create(named, "--output", avoid)?))
    }

    /// Writes `bytes` as the whole output: to standard output, or to the
    /// file, which then replaces the destination in one rename.
    pub fn finish(self, bytes: &[u8]) -> Result<()> {
        match self {
            Output::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(bytes)?;
                out.flush()?;
                Ok(())
            }
            Output::File(mut f) => {
                f.write_all(bytes)
                    .with_context(|| format!("writing --output {}", f.named().display()))?;
                f.commit()
            }
        }
    }
}

/// Refuses a destination whose overwriting could destroy data; returns
/// the file to replace (a symlink's target, so the link stays).
pub fn check_path(named: &Path, avoid: &[&Path]) -> Result<PathBuf> {
    crate::files::check_dest(named, "--output", avoid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ringlab-output-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn replaces_the_file_only_when_finished() {
        let d = scratch("replace");
        let f = d.join("out.json");
        Output::open(Some(&f), &[]).unwrap().finish(b"old").unwrap();
        let out = Output::open(Some(&f), &[]).unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "old");
        drop(out); // a failed run
        assert_eq!(fs::read_to_string(&f).unwrap(), "old");
        let out = Output::open(Some(&f), &[]).unwrap();
        fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        out.finish(b"new").unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&fs::metadata(&f).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_what_is_not_a_regular_file_or_is_the_target() {
        let d = scratch("refuse");
        let err = |p: &Path, avoid: &[&Path]| format!("{:#}", check_path(p, avoid).unwrap_err());
        assert!(err(&d, &[]).contains("a directory"));
        assert!(err(Path::new("/dev/null"), &[]).contains("a character device"));
        let t = d.join("target");
        fs::write(&t, "data").unwrap();
        let link = d.join("link");
        fs::hard_link(&t, &link).unwrap();
        assert!(err(&link, &[&t]).contains("is the target"));
        assert_eq!(fs::read_to_string(&t).unwrap(), "data");
        assert!(matches!(
            Output::open(Some(Path::new("-")), &[]).unwrap(),
            Output::Stdout
        ));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_symlink_keeps_pointing_at_the_new_result() {
        let d = scratch("symlink");
        let real = d.join("real.json");
        Output::open(Some(&real), &[])
            .unwrap()
            .finish(b"old")
            .unwrap();
        let link = d.join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        Output::open(Some(&link), &[])
            .unwrap()
            .finish(b"new")
            .unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        fs::remove_dir_all(&d).unwrap();
    }
}
