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

use crate::error::usage_error;
use anyhow::{Context, Result};
use rustix::fs::{AtFlags, Mode, OFlags, CWD};
use rustix::io::Errno;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where a command's result goes.
#[derive(Debug)]
pub enum Output {
    Stdout,
    File(PendingFile),
}

/// A destination file being prepared: nothing is visible under its name
/// until [`Output::finish`].
#[derive(Debug)]
pub struct PendingFile {
    /// The file the result replaces or creates (a symlink resolved).
    dest: PathBuf,
    /// What the user named, for messages.
    named: PathBuf,
    file: File,
    /// A named temporary file (only where O_TMPFILE is not supported),
    /// removed unless renamed.
    temp_name: Option<PathBuf>,
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
        let dest = check_path(named, avoid)?;
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let (file, temp_name) = match open_unnamed(&dir) {
            Ok(f) => (f, None),
            Err(e)
                if [Errno::OPNOTSUPP, Errno::ISDIR, Errno::INVAL]
                    .iter()
                    .any(|n| e.raw_os_error() == Some(n.raw_os_error())) =>
            {
                let name = temp_path(&dest);
                let f = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o666)
                    .open(&name)
                    .map_err(|e| cannot_write(named, &dir, e))?;
                (f, Some(name))
            }
            Err(e) => return Err(cannot_write(named, &dir, e)),
        };
        Ok(Output::File(PendingFile {
            dest,
            named: named.to_path_buf(),
            file,
            temp_name,
        }))
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
            Output::File(p) => p.finish(bytes),
        }
    }
}

impl PendingFile {
    fn finish(mut self, bytes: &[u8]) -> Result<()> {
        let what = || format!("writing --output {}", self.named.display());
        self.file.write_all(bytes).with_context(what)?;
        // A file replaced keeps its permissions (a private result stays
        // private).
        if let Ok(old) = fs::metadata(&self.dest) {
            self.file
                .set_permissions(old.permissions())
                .with_context(what)?;
        }
        self.file.sync_all().with_context(what)?;
        let from = match self.temp_name.take() {
            Some(name) => name,
            None => {
                // Give the unnamed file a name beside the destination, then
                // rename it over the destination.
                let name = temp_path(&self.dest);
                link_fd(&self.file, &name).with_context(what)?;
                name
            }
        };
        if let Err(e) = fs::rename(&from, &self.dest) {
            let _ = fs::remove_file(&from);
            return Err(e).with_context(what);
        }
        Ok(())
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if let Some(name) = &self.temp_name {
            let _ = fs::remove_file(name);
        }
    }
}

/// Refuses a destination whose overwriting could destroy data; returns
/// the file to replace (a symlink's target, so the link stays).
pub fn check_path(named: &Path, avoid: &[&Path]) -> Result<PathBuf> {
    let meta = match fs::metadata(named) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if fs::symlink_metadata(named).is_ok() {
                return Err(usage_error(format!(
                    "--output {}: a symbolic link to a file that does not exist: name the file itself",
                    named.display()
                )));
            }
            return Ok(named.to_path_buf());
        }
        Err(e) => {
            return Err(usage_error(format!(
                "--output {}: cannot inspect it: {e}",
                named.display()
            )))
        }
    };
    let ft = meta.file_type();
    let refuse = |what: &str| {
        Err(usage_error(format!(
            "--output {}: refusing to write the result over {what}: name a regular file (or - for standard output)",
            named.display()
        )))
    };
    if ft.is_dir() {
        return refuse("a directory");
    }
    if ft.is_block_device() {
        return refuse("a block device");
    }
    if ft.is_char_device() {
        return refuse("a character device");
    }
    if ft.is_fifo() {
        return refuse("a FIFO");
    }
    if ft.is_socket() {
        return refuse("a socket");
    }
    if !ft.is_file() {
        return refuse("something that is not a regular file");
    }
    for a in avoid {
        if let Ok(m) = fs::metadata(a) {
            if m.dev() == meta.dev() && m.ino() == meta.ino() {
                return Err(usage_error(format!(
                    "--output {} is the target {} itself: writing the result would destroy it; name another file",
                    named.display(),
                    a.display()
                )));
            }
        }
    }
    // Replace the file a symlink points at, not the link.
    Ok(fs::canonicalize(named).unwrap_or_else(|_| named.to_path_buf()))
}

fn cannot_write(named: &Path, dir: &Path, e: io::Error) -> anyhow::Error {
    usage_error(format!(
        "--output {}: cannot create a file in {}: {e}",
        named.display(),
        dir.display()
    ))
}

/// A temporary name beside `dest`: `.NAME.ringlab-PID.tmp`.
fn temp_path(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".to_string());
    dest.with_file_name(format!(".{name}.ringlab-{}.tmp", std::process::id()))
}

/// An unnamed regular file in `dir` (O_TMPFILE): it vanishes with the
/// process unless [`link_fd`] names it.
fn open_unnamed(dir: &Path) -> io::Result<File> {
    let fd = rustix::fs::open(
        dir,
        OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
    )?;
    Ok(File::from(fd))
}

/// Gives the unnamed file `file` the name `to`: linkat follows the
/// /proc magic link to the open file (AT_SYMLINK_FOLLOW).
fn link_fd(file: &File, to: &Path) -> io::Result<()> {
    let from = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(CWD, from.as_str(), CWD, to, AtFlags::SYMLINK_FOLLOW)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        fs::write(&f, "old").unwrap();
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
        fs::write(&real, "old").unwrap();
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
