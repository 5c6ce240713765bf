//! libblkid, loaded at run time: the same probe `blkid -p` and `wipefs` use,
//! with every file system, RAID, LVM, crypto and partition-table signature
//! util-linux knows (well over a hundred).
//!
//! Loaded with dlopen rather than linked, so that ringlab builds without
//! libblkid's headers and runs where the library is missing; there the
//! `signature` table in target.rs is used, and the caller
//! says so.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;
use std::sync::OnceLock;

type Probe = *mut c_void;

type NewProbe = unsafe extern "C" fn(*const c_char) -> Probe;
type Enable = unsafe extern "C" fn(Probe, c_int) -> c_int;
type DoProbe = unsafe extern "C" fn(Probe) -> c_int;
type LookupValue =
    unsafe extern "C" fn(Probe, *const c_char, *mut *const c_char, *mut usize) -> c_int;
type FreeProbe = unsafe extern "C" fn(Probe);

struct Lib {
    new_probe: NewProbe,
    enable_partitions: Enable,
    enable_superblocks: Enable,
    do_safeprobe: DoProbe,
    lookup_value: LookupValue,
    free_probe: FreeProbe,
}

fn lib() -> Option<&'static Lib> {
    static LIB: OnceLock<Option<Lib>> = OnceLock::new();
    LIB.get_or_init(load).as_ref()
}

fn load() -> Option<Lib> {
    // SAFETY: dlopen of a shared library by its soname; the handle is never
    // closed, so the symbols stay valid for the life of the process.
    let handle =
        unsafe { libc::dlopen(c"libblkid.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return None;
    }
    let sym = |name: &CStr| -> Option<*mut c_void> {
        // SAFETY: a valid handle and a NUL-terminated name.
        let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    // SAFETY: each symbol is transmuted to the prototype libblkid's
    // blkid.h declares for it.
    unsafe {
        Some(Lib {
            new_probe: std::mem::transmute::<*mut c_void, NewProbe>(sym(
                c"blkid_new_probe_from_filename",
            )?),
            enable_partitions: std::mem::transmute::<*mut c_void, Enable>(sym(
                c"blkid_probe_enable_partitions",
            )?),
            enable_superblocks: std::mem::transmute::<*mut c_void, Enable>(sym(
                c"blkid_probe_enable_superblocks",
            )?),
            do_safeprobe: std::mem::transmute::<*mut c_void, DoProbe>(sym(c"blkid_do_safeprobe")?),
            lookup_value: std::mem::transmute::<*mut c_void, LookupValue>(sym(
                c"blkid_probe_lookup_value",
            )?),
            free_probe: std::mem::transmute::<*mut c_void, FreeProbe>(sym(c"blkid_free_probe")?),
        })
    }
}

/// What libblkid found on a device.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Nothing: no known signature.
    Nothing,
    /// A signature, in blkid's words: `ext4`, `minix`, `swap`, a partition
    /// table `dos` or `gpt`...
    Signature(String),
    /// Several signatures that contradict each other (blkid's "ambivalent"
    /// result): something is there.
    Ambivalent,
}

/// Probes `path` for file systems, volumes and partition tables; `None`
/// when libblkid is not available or could not open the device.
pub fn probe(path: &Path) -> Option<Found> {
    use std::os::unix::ffi::OsStrExt;
    let lib = lib()?;
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: a valid NUL-terminated path; the probe is freed below.
    let pr = unsafe { (lib.new_probe)(c.as_ptr()) };
    if pr.is_null() {
        return None;
    }
    // SAFETY: pr is a live probe; lookup_value's out-pointers point at
    // locals, and the string it returns lives until the probe is freed.
    let found = unsafe {
        (lib.enable_superblocks)(pr, 1);
        (lib.enable_partitions)(pr, 1);
        match (lib.do_safeprobe)(pr) {
            0 => {
                let value = |key: &CStr| {
                    let mut data: *const c_char = std::ptr::null();
                    let mut len = 0usize;
                    if (lib.lookup_value)(pr, key.as_ptr(), &mut data, &mut len) == 0
                        && !data.is_null()
                    {
                        Some(CStr::from_ptr(data).to_string_lossy().into_owned())
                    } else {
                        None
                    }
                };
                let found = value(c"TYPE")
                    .or_else(|| value(c"PTTYPE").map(|t| format!("{t} partition table")));
                Some(found.map_or(Found::Ambivalent, Found::Signature))
            }
            1 => Some(Found::Nothing),
            -2 => Some(Found::Ambivalent),
            _ => None,
        }
    };
    // SAFETY: pr came from new_probe and is freed once.
    unsafe { (lib.free_probe)(pr) };
    found
}
