//! `ringlab report` of a stored results directory, byte for byte against
//! the stored outputs: a refactoring of the report cannot change what it
//! writes without this test saying so.
//!
//! The fixture (`tests/fixtures/sweep-partial`) is a real 8-run io sweep
//! with one run failed and one pending, its results given kernel figures
//! that cover every case of the report: headline and other figures, one
//! zero in every run, and an unavailable counter whose reason needs
//! escaping. After an intended change of the output, regenerate the
//! expected files with `RINGLAB_BLESS=1 cargo test -p ringlab-lab --test
//! report_golden` and review their diff.

use std::path::Path;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sweep-partial");
const EXPECTED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/sweep-partial-report"
);

#[test]
fn the_report_of_a_stored_sweep_is_what_it_was() {
    let out = tempfile::tempdir().unwrap();
    let mut warnings = Vec::new();
    let written = ringlab_lab::report::write_report(Path::new(FIXTURE), out.path(), |w| {
        warnings.push(w.to_string())
    })
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut names: Vec<String> = written
        .files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let bless = std::env::var_os("RINGLAB_BLESS").is_some();
    if bless {
        std::fs::create_dir_all(EXPECTED).unwrap();
    }
    let mut expected: Vec<String> = std::fs::read_dir(EXPECTED)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    expected.sort();
    for name in &names {
        // The HTML names the results directory: the fixture's place here.
        let got = std::fs::read_to_string(out.path().join(name))
            .unwrap()
            .replace(FIXTURE, "FIXTURE");
        let want_path = Path::new(EXPECTED).join(name);
        if bless {
            std::fs::write(&want_path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&want_path)
            .unwrap_or_else(|e| panic!("{}: {e}", want_path.display()));
        if let Some((n, (g, w))) = got
            .lines()
            .zip(want.lines())
            .enumerate()
            .find(|(_, (g, w))| g != w)
        {
            panic!(
                "{name} differs from the stored output at line {}:\n got: {g}\nwant: {w}",
                n + 1
            );
        }
        assert_eq!(got, want, "{name} differs in its length");
    }
    if !bless {
        assert_eq!(names, expected, "the files written");
    }
}
