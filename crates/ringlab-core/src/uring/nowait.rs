//! Whether a file takes non-blocking I/O: the kernel's FMODE_NOWAIT, which
//! decides where io_uring does a read or write. With it, io_uring tries
//! the request inline, in the submitting thread, and hands it to an io-wq
//! worker only if it would block. Without it (a bio-based block device
//! such as zram, procfs, some file systems), io_uring hands every request
//! to io-wq, after preparing and issuing it inline only to learn that
//! (io_uring/rw.c: `!io_file_supports_nowait()` returns -EAGAIN before
//! any I/O). IOSQE_ASYNC sends the request to io-wq at once: the same
//! worker does the same I/O, and the inline try is not paid.
//!
//! No interface tells user space the flag; preadv2(2) with RWF_NOWAIT
//! does: the kernel refuses it with EOPNOTSUPP on a file without
//! FMODE_NOWAIT (`kiocb_set_rw_flags`), before any I/O.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Whether `path`, opened for reading (`O_DIRECT` with `direct`), takes
/// non-blocking I/O: `Some(false)` if the kernel refused a non-blocking
/// read of `block` bytes at offset 0 (EOPNOTSUPP), `Some(true)` if it took
/// it (it read, or said it would block), `None` if that could not be
/// asked (the file does not open for reading, or another error). The read
/// changes nothing; with `direct` it bypasses the page cache, and a file
/// without FMODE_NOWAIT is refused before any I/O.
pub fn takes_nowait(path: &Path, direct: bool, block: usize) -> Option<bool> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    if direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    let file = opts.open(path).ok()?;
    // O_DIRECT wants the buffer, length and offset aligned to the logical
    // block; a page-aligned buffer of whole pages is aligned for any.
    let len = block.max(4096).next_multiple_of(4096);
    let layout = std::alloc::Layout::from_size_align(len, 4096).ok()?;
    // SAFETY: a non-zero size and a valid alignment.
    let buf = unsafe { std::alloc::alloc(layout) };
    if buf.is_null() {
        return None;
    }
    let iov = libc::iovec {
        iov_base: buf.cast(),
        iov_len: len,
    };
    // SAFETY: one iovec naming `len` writable bytes, alive for the call.
    let r = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, 0, libc::RWF_NOWAIT) };
    let err = (r < 0).then(std::io::Error::last_os_error);
    // SAFETY: allocated above with this layout; the kernel is done with it.
    unsafe { std::alloc::dealloc(buf, layout) };
    match err.and_then(|e| e.raw_os_error()) {
        None => Some(true),
        Some(libc::EAGAIN) => Some(true),
        Some(libc::EOPNOTSUPP) => Some(false),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::takes_nowait;
    use std::path::Path;

    #[test]
    fn procfs_takes_none_and_a_regular_file_does() {
        // procfs files have no FMODE_NOWAIT.
        assert_eq!(
            takes_nowait(Path::new("/proc/self/stat"), false, 512),
            Some(false)
        );
        let dir = std::env::temp_dir().join(format!("ringlab-nowait-{}", std::process::id()));
        std::fs::write(&dir, vec![7u8; 8192]).unwrap();
        // ext4, xfs, btrfs and tmpfs set FMODE_NOWAIT on regular files.
        let got = takes_nowait(&dir, false, 4096);
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(got, Some(true));
        assert_eq!(
            takes_nowait(Path::new("/nonexistent/ringlab"), false, 512),
            None
        );
    }
}
