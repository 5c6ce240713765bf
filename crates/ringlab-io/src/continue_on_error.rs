//! fio's continue_on_error and ignore_error (fio 3.33: options.c
//! `str_ignore_error_cb`, io_u.c `td_non_fatal_error`): which I/O errors a
//! job counts and goes on after, per direction.

/// fio's non-fatal errors when ignore_error lists none: EIO and EILSEQ.
const NON_FATAL: [i32; 2] = [libc::EIO, libc::EILSEQ];

/// errno names fio's users write in ignore_error.
const NAMES: &[(&str, i32)] = &[
    ("EIO", libc::EIO),
    ("EILSEQ", libc::EILSEQ),
    ("ENOSPC", libc::ENOSPC),
    ("EDQUOT", libc::EDQUOT),
    ("EFBIG", libc::EFBIG),
    ("EINVAL", libc::EINVAL),
    ("EAGAIN", libc::EAGAIN),
    ("EBUSY", libc::EBUSY),
    ("ENOMEM", libc::ENOMEM),
    ("ENXIO", libc::ENXIO),
    ("ENODEV", libc::ENODEV),
    ("EROFS", libc::EROFS),
    ("ETIMEDOUT", libc::ETIMEDOUT),
    ("ENODATA", libc::ENODATA),
    ("EBADMSG", libc::EBADMSG),
    ("EOPNOTSUPP", libc::EOPNOTSUPP),
    ("ECANCELED", libc::ECANCELED),
    ("EPERM", libc::EPERM),
    ("EACCES", libc::EACCES),
];

/// The errnos a job goes on after, for reads and writes: `class` is fio's
/// continue_on_error (none, read, write, io, verify, all, 0, 1), `ignore`
/// fio's ignore_error (`READ,WRITE[,VERIFY]`, each `E1:E2`; an empty list
/// keeps the default EIO and EILSEQ).
pub fn errnos(class: Option<&str>, ignore: Option<&str>) -> Result<[Vec<i32>; 2], String> {
    let (read, write) = match class.map(str::trim) {
        None | Some("none") | Some("0") | Some("") => (false, false),
        Some("read") => (true, false),
        Some("write") => (false, true),
        Some("io") | Some("all") | Some("1") => (true, true),
        Some("verify") => {
            return Err(
                "continue_on_error=verify: ringlab ends a job at a verify failure; going on after it is not supported by ringlab (read, write, io take I/O errors)"
                    .to_string(),
            )
        }
        Some(c) => {
            return Err(format!(
                "continue_on_error={c}: fio's classes are none, read, write, io, verify, all (or 0, 1)"
            ))
        }
    };
    let mut lists: [Vec<i32>; 2] = [NON_FATAL.to_vec(), NON_FATAL.to_vec()];
    if let Some(text) = ignore {
        for (d, part) in text.split(',').take(2).enumerate() {
            let mut v = Vec::new();
            for name in part.split(':').map(str::trim).filter(|n| !n.is_empty()) {
                let e = match name.parse::<i32>() {
                    Ok(n) if n > 0 => n,
                    _ => NAMES
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(name))
                        .map(|(_, e)| *e)
                        .ok_or_else(|| {
                            format!(
                                "ignore_error={text}: {name} is not an errno ringlab knows: give its number or one of {}",
                                NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                            )
                        })?,
                };
                v.push(e);
            }
            if !v.is_empty() {
                lists[d] = v;
            }
        }
    }
    Ok([
        if read { lists[0].clone() } else { Vec::new() },
        if write { lists[1].clone() } else { Vec::new() },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_lists_as_fio_reads_them() {
        assert!(errnos(None, None).unwrap().iter().all(|v| v.is_empty()));
        let [r, w] = errnos(Some("write"), Some(",ENOSPC")).unwrap();
        assert!(r.is_empty());
        assert_eq!(w, vec![libc::ENOSPC]);
        let [r, w] = errnos(Some("io"), None).unwrap();
        assert_eq!(r, vec![libc::EIO, libc::EILSEQ]);
        assert_eq!(r, w);
        assert!(errnos(Some("verify"), None).is_err());
        assert!(errnos(Some("write"), Some(",EWHAT")).is_err());
    }
}
