//! The cleaner: what removes ringlab's temporary files and directories when
//! ringlab itself cannot, because it was killed with SIGKILL (or by the OOM
//! killer).
//!
//! The first time a run creates a named temporary file or directory (a
//! `.NAME.ringlab-PID.tmp` beside `--output` on a file system without
//! O_TMPFILE, a named layout, a recipe's data file, a database being
//! filled), ringlab starts itself once more in a hidden mode
//! (`ringlab-cleaner`, [`serve_if_asked`]) with a pipe on its standard
//! input. Each temporary name is sent down the pipe before it is created
//! ([`watch`]) and released once it was renamed into place or removed
//! ([`release`]). When the pipe reaches its end (ringlab exited, however:
//! the kernel closes the pipe of a killed process), the cleaner removes
//! every name still watched and exits. A run that ends normally has
//! released all of them, so the cleaner removes nothing.
//!
//! The cleaner ignores SIGINT, SIGTERM and SIGHUP and runs in its own
//! process group, so that a Ctrl-C meant for the run does not end it first;
//! it holds no terminal and writes nothing. Its cost is one process per
//! run that creates a named temporary, and one pipe write per name created
//! or released (never on the I/O path).
//!
//! Only the ringlab binary has the hidden mode: it calls [`enable`]; a
//! library user (the unit tests) gets no cleaner, and a SIGKILL then leaves
//! names for the next run to remove.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The name the cleaner runs under (its `argv[0]`), which `ps` shows.
const ARG0: &str = "ringlab-cleaner";
/// Set, to the parent's pid, in the cleaner's environment only.
const ENV: &str = "RINGLAB_CLEANER_OF";

/// What a watched name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A file: unlinked.
    File,
    /// A directory: removed with everything in it.
    Dir,
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static NEXT: AtomicU64 = AtomicU64::new(1);

/// The pipe to the cleaner: `None` before the first [`watch`]; `Err` once
/// starting it failed (said once, not retried).
static PIPE: Mutex<Option<Result<ChildStdin, ()>>> = Mutex::new(None);

/// This binary can run as the cleaner ([`serve_if_asked`] is called at the
/// top of its `main`): [`watch`] may start it.
pub fn enable() {
    ENABLED.store(true, Ordering::SeqCst);
}

/// In `main`, first: when this process was started as the cleaner, serves
/// until ringlab's end and returns `true` (main then exits 0).
pub fn serve_if_asked() -> bool {
    let is_cleaner = std::env::var_os(ENV).is_some()
        && std::env::args_os()
            .next()
            .is_some_and(|a| a.as_bytes() == ARG0.as_bytes());
    if !is_cleaner {
        return false;
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: setting a signal's disposition to "ignore", at start-up,
        // before any thread exists.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    let watched = serve(io::stdin().lock());
    clean(&watched);
    true
}

/// Watches `path` (absolute or relative to the current directory) until
/// [`release`]: if ringlab ends before that, the cleaner removes it.
/// Call it before creating the file. Returns the id to release, or `None`
/// where no cleaner runs (a note said why, once).
pub fn watch(path: &Path, kind: Kind) -> Option<u64> {
    if !ENABLED.load(Ordering::SeqCst) {
        return None;
    }
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let id = NEXT.fetch_add(1, Ordering::SeqCst);
    let mut msg = Vec::with_capacity(14 + abs.as_os_str().len());
    msg.push(b'W');
    msg.push(match kind {
        Kind::File => b'f',
        Kind::Dir => b'd',
    });
    msg.extend_from_slice(&id.to_le_bytes());
    msg.extend_from_slice(&(abs.as_os_str().len() as u32).to_le_bytes());
    msg.extend_from_slice(abs.as_os_str().as_bytes());
    send(&msg, Some(&abs)).then_some(id)
}

/// Stops watching `id`: its name was renamed into place or removed.
pub fn release(id: u64) {
    let mut msg = Vec::with_capacity(14);
    msg.extend_from_slice(b"R-");
    msg.extend_from_slice(&id.to_le_bytes());
    msg.extend_from_slice(&0u32.to_le_bytes());
    send(&msg, None);
}

/// Writes one message, starting the cleaner first if need be (only for a
/// watch: `start_for`). Returns whether the cleaner has it.
fn send(msg: &[u8], start_for: Option<&Path>) -> bool {
    let mut pipe = PIPE.lock().unwrap_or_else(|p| p.into_inner());
    if pipe.is_none() {
        let Some(first) = start_for else {
            return false;
        };
        *pipe = Some(start().map_err(|e| {
            eprintln!(
                "ringlab: note: cannot start the cleaner process ({e}): if this run is killed with SIGKILL, {} stays behind until the next run",
                first.display()
            );
        }));
    }
    match pipe.as_mut() {
        Some(Ok(p)) => match p.write_all(msg) {
            Ok(()) => true,
            Err(e) => {
                eprintln!(
                    "ringlab: note: the cleaner process is gone ({e}): a SIGKILL now leaves temporary files behind until the next run"
                );
                *pipe = Some(Err(()));
                false
            }
        },
        _ => false,
    }
}

fn start() -> io::Result<ChildStdin> {
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0(ARG0)
        .env(ENV, std::process::id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: a Ctrl-C at the terminal is not for it.
        .process_group(0)
        .current_dir("/");
    // SAFETY: only sigaction(2) (through signal(3)) between fork and exec,
    // async-signal-safe; an ignored disposition survives exec, so a signal
    // before the cleaner's own main cannot end it.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("no pipe to the cleaner"))
    // The child is not waited for: it ends after this process does.
}

/// Reads messages until the end of the pipe; returns what is still watched.
pub fn serve(mut r: impl Read) -> BTreeMap<u64, (Kind, PathBuf)> {
    let mut watched = BTreeMap::new();
    loop {
        let mut head = [0u8; 14];
        if r.read_exact(&mut head).is_err() {
            return watched;
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&head[2..10]);
        let id = u64::from_le_bytes(id);
        let mut len = [0u8; 4];
        len.copy_from_slice(&head[10..14]);
        let len = u32::from_le_bytes(len) as usize;
        let mut name = vec![0u8; len];
        if r.read_exact(&mut name).is_err() {
            return watched;
        }
        match (head[0], head[1]) {
            (b'W', k) => {
                let kind = if k == b'd' { Kind::Dir } else { Kind::File };
                watched.insert(id, (kind, PathBuf::from(OsString::from_vec(name))));
            }
            (b'R', _) => {
                watched.remove(&id);
            }
            _ => return watched,
        }
    }
}

/// Removes what is still watched: files first, then directories. A
/// directory is removed again while something (a child ringlab started,
/// dying of its parent-death signal) still writes into it, for up to 10 s.
pub fn clean(watched: &BTreeMap<u64, (Kind, PathBuf)>) {
    for (kind, path) in watched.values() {
        if *kind == Kind::File {
            let _ = std::fs::remove_file(path);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut quiet_since = Instant::now();
    loop {
        let mut any = false;
        for (kind, path) in watched.values() {
            if *kind == Kind::Dir && std::fs::symlink_metadata(path).is_ok() {
                any = true;
                let _ = std::fs::remove_dir_all(path);
            }
        }
        if any {
            quiet_since = Instant::now();
        }
        // Gone, and still gone a moment later (no writer recreated it).
        if quiet_since.elapsed() > Duration::from_millis(300) || Instant::now() > deadline {
            return;
        }
        if !watched.values().any(|(k, _)| *k == Kind::Dir) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(op: u8, kind: u8, id: u64, path: &Path) -> Vec<u8> {
        let mut m = vec![op, kind];
        m.extend_from_slice(&id.to_le_bytes());
        m.extend_from_slice(&(path.as_os_str().len() as u32).to_le_bytes());
        m.extend_from_slice(path.as_os_str().as_bytes());
        m
    }

    #[test]
    fn what_is_still_watched_at_the_end_is_removed() {
        let d = tempfile_dir("cleaner");
        let kept = d.join("kept");
        let lost = d.join("lost");
        let dir = d.join("fill");
        std::fs::write(&kept, "x").unwrap();
        std::fs::write(&lost, "x").unwrap();
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/f"), "x").unwrap();
        let mut stream = Vec::new();
        stream.extend(msg(b'W', b'f', 1, &kept));
        stream.extend(msg(b'W', b'f', 2, &lost));
        stream.extend(msg(b'W', b'd', 3, &dir));
        stream.extend(msg(b'R', b'-', 1, Path::new("")));
        // A message cut short by the end (the parent died mid-write).
        stream.extend(&msg(b'W', b'f', 4, &kept)[..7]);
        let watched = serve(&stream[..]);
        assert_eq!(watched.len(), 2);
        clean(&watched);
        assert!(kept.exists());
        assert!(!lost.exists());
        assert!(!dir.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn tempfile_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ringlab-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
