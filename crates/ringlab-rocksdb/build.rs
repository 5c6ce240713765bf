//! Builds the RocksDB FileSystem plugin (`rocksdb-plugin/ringlab_fs.cc`) into
//! a shared library in OUT_DIR, when a C++ compiler, RocksDB's headers and
//! liburing are there. Without them the crate still builds, and `ringlab
//! rocksdb` says what to install (the reason is baked in as
//! RINGLAB_ROCKSDB_PLUGIN_PROBLEM).

use std::path::{Path, PathBuf};

const INSTALL: &str = "apt-get install librocksdb-dev rocksdb-tools liburing-dev g++";

fn main() {
    let src = PathBuf::from("../../rocksdb-plugin/ringlab_fs.cc");
    let check_src = PathBuf::from("../../rocksdb-plugin/ringlab_fs_check.cc");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-changed={}", check_src.display());
    println!("cargo:rerun-if-changed=build.rs");
    // A header that is missing now makes cargo rerun this script on every
    // build, so installing the packages later is picked up without `clean`.
    for h in [
        "/usr/include/rocksdb/file_system.h",
        "/usr/include/rocksdb/version.h",
        "/usr/include/liburing.h",
    ] {
        println!("cargo:rerun-if-changed={h}");
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let so = out.join("libringlab_rocksdb_fs.so");
    let check = out.join("ringlab_fs_check");
    let built = build(&src, &so, &["-fPIC", "-shared", "-luring"])
        .and_then(|()| build(&check_src, &check, &[]));
    match built {
        Ok(()) => {
            println!("cargo:rustc-env=RINGLAB_ROCKSDB_PLUGIN={}", so.display());
            println!("cargo:rustc-env=RINGLAB_ROCKSDB_CHECK={}", check.display());
            println!("cargo:rustc-env=RINGLAB_ROCKSDB_PLUGIN_PROBLEM=");
        }
        Err(why) => {
            println!("cargo:rustc-env=RINGLAB_ROCKSDB_CHECK=");
            println!("cargo:warning=ringlab-rocksdb: the RocksDB plugin is not built: {why}");
            println!("cargo:rustc-env=RINGLAB_ROCKSDB_PLUGIN=");
            println!("cargo:rustc-env=RINGLAB_ROCKSDB_PLUGIN_PROBLEM={why}");
        }
    }
}

/// Compiles `src` into `out` (a shared library or a program, by `extra`).
fn build(src: &Path, out: &Path, extra: &[&str]) -> Result<(), String> {
    let compiler = cc::Build::new()
        .cpp(true)
        .cargo_metadata(false)
        .try_get_compiler()
        .map_err(|e| format!("no C++ compiler found ({e}): {INSTALL}"))?;
    let mut cmd = compiler.to_command();
    cmd.args(["-std=c++17", "-O2", "-g", "-Wall", "-o"])
        .arg(out)
        .arg(src)
        .arg("-lrocksdb")
        .args(extra);
    let output = cmd.output().map_err(|e| {
        format!(
            "cannot run the C++ compiler {} ({e}): {INSTALL}",
            compiler.path().display()
        )
    })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let missing = if stderr.contains("rocksdb/") && stderr.contains("No such file") {
        "RocksDB's headers are missing (librocksdb-dev)"
    } else if stderr.contains("liburing.h") {
        "liburing's header is missing (liburing-dev)"
    } else if stderr.contains("-lrocksdb") {
        "librocksdb.so is missing (librocksdb-dev)"
    } else if stderr.contains("-luring") {
        "liburing.so is missing (liburing-dev)"
    } else {
        let first = stderr
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or("the C++ compiler failed")
            .to_string();
        return Err(format!("compiling {} failed: {first}", src.display()));
    };
    Err(format!("{missing}: {INSTALL}"))
}
