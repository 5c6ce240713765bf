//! fio's INI job files: `[global]` and job sections, `;`/`#` comments,
//! `${VAR}` from the environment (empty when unset, as fio does), fio's
//! `$ncpus`, `$pagesize` and `$mb_memory`, and groups: a job with
//! `stonewall` (`wait_for_previous`) or `new_group` starts a new group.

use super::options::{self, Origin, Written};
use anyhow::Result;
use ringlab_core::usage_error;
use std::path::Path;

/// Largest job file read (a job file is a few lines; this bounds a wrong
/// file named by mistake).
pub const JOB_FILE_MAX_BYTES: u64 = 1 << 20;

/// The most job sections one file may hold (each section's result, with
/// its latency histograms, about 1.6 MB, is kept until the report).
pub const JOB_SECTIONS_MAX: usize = 128;

/// One job section, with the `[global]` options in force where it stands
/// first and its own after them.
#[derive(Clone, Debug)]
pub struct Section {
    pub name: String,
    /// Line of the `[name]` header (1-based).
    pub line: usize,
    pub options: Vec<Written>,
    /// Reporting group: 0 for the first, one more at each stonewall or
    /// new_group.
    pub group: u32,
}

#[derive(Clone, Debug, Default)]
pub struct JobFile {
    /// The `[global]` options as written (fio's "global options").
    pub global: Vec<(String, String)>,
    pub jobs: Vec<Section>,
}

/// Reads a job file named on the command line: a regular file of at most
/// [`JOB_FILE_MAX_BYTES`] (a larger one is refused before it is read).
pub fn read_capped(path: &Path, shown: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let max = JOB_FILE_MAX_BYTES;
    let cannot = |e: std::io::Error| usage_error(format!("cannot read job file {shown}: {e}"));
    // Checked before the open, which would block on a FIFO.
    let mut meta = std::fs::metadata(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    if meta.is_file() {
        let file = std::fs::File::open(path).map_err(cannot)?;
        meta = file.metadata().map_err(cannot)?;
        if meta.is_file() {
            file.take(max + 1).read_to_end(&mut bytes).map_err(cannot)?;
        }
    }
    if !meta.is_file() || bytes.len() as u64 > max {
        return Err(usage_error(format!(
            "job file {shown}: not a regular file of at most {max} bytes ({} bytes): fio job files are small text files",
            meta.len()
        )));
    }
    Ok(bytes)
}

/// Whether `path` names an existing regular file that reads as a fio job
/// file (see [`looks_like_job_file`]).
pub fn is_job_file_path(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() || meta.len() > JOB_FILE_MAX_BYTES || meta.len() == 0 {
        return false;
    }
    std::fs::read(path).is_ok_and(|b| looks_like_job_file(&b))
}

/// Whether `bytes` are a fio job file: text whose first line that is not
/// blank or a comment is a `[section]` header, followed by at least one
/// line naming an option fio and ringlab both know.
pub fn looks_like_job_file(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let mut lines = text.lines().map(strip_comment).filter(|l| !l.is_empty());
    let Some(first) = lines.next() else {
        return false;
    };
    if !(first.starts_with('[') && first.ends_with(']') && first.len() > 2) {
        return false;
    }
    lines.any(|l| {
        let key = l.split('=').next().unwrap_or("").trim();
        options::find(key).is_some()
    })
}

/// The line without its comment (`;` or `#` at its start, or after a blank)
/// and surrounding blanks.
fn strip_comment(line: &str) -> &str {
    let t = line.trim();
    if t.starts_with(';') || t.starts_with('#') {
        return "";
    }
    let mut cut = t.len();
    let b = t.as_bytes();
    for i in 1..b.len() {
        if (b[i] == b';' || b[i] == b'#') && (b[i - 1] == b' ' || b[i - 1] == b'\t') {
            cut = i;
            break;
        }
    }
    t[..cut].trim()
}

/// Expands `${VAR}` (from `env`, empty when unset) and fio's reserved
/// `$ncpus`, `$pagesize`, `$mb_memory`.
pub fn expand(value: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        match rest[at + 2..].find('}') {
            Some(end) => {
                let name = &rest[at + 2..at + 2 + end];
                out.push_str(&env(name).unwrap_or_default());
                rest = &rest[at + 2 + end + 1..];
            }
            None => {
                return Err(format!(
                    "'{}' opens an environment variable with ${{ but has no closing }}: write ${{NAME}}",
                    &rest[at..]
                ));
            }
        }
    }
    out.push_str(rest);
    for (word, value) in reserved() {
        out = out.replace(word, &value);
    }
    Ok(out)
}

fn reserved() -> [(&'static str, String); 3] {
    // SAFETY: sysconf has no preconditions.
    let ncpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1);
    // SAFETY: as above.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1);
    // SAFETY: as above.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) }.max(0);
    let mb = (pages as u64).saturating_mul(page as u64) >> 20;
    [
        ("$mb_memory", mb.to_string()),
        ("$pagesize", page.to_string()),
        ("$ncpus", ncpus.to_string()),
    ]
}

fn is_group_start(o: &Written) -> bool {
    let k = o.key.replace('-', "_");
    matches!(k.as_str(), "stonewall" | "wait_for_previous" | "new_group")
        && !matches!(o.value.as_deref().map(str::trim), Some("0"))
}

/// How deep `include` may nest (fio has no limit; a chain this deep is a
/// mistake, and a loop is refused before it).
const INCLUDE_DEPTH_MAX: usize = 16;

/// One line of a job file after `include`s are expanded: the file it
/// comes from (as shown in messages), its number there and its text.
struct Line {
    shown: String,
    no: usize,
    text: String,
}

/// The lines of `text` (read from `shown`) with every `include FILE`
/// replaced by FILE's lines, as fio does; FILE is relative to the
/// including file's directory. `stack`: the files being included, to
/// refuse a loop.
fn expand_includes(
    shown: &str,
    text: &str,
    stack: &mut Vec<std::path::PathBuf>,
    out: &mut Vec<Line>,
) -> Result<()> {
    for (n, raw) in text.lines().enumerate() {
        let line_no = n + 1;
        let line = strip_comment(raw);
        let Some(rest) = line
            .strip_prefix("include")
            .filter(|r| r.is_empty() || r.starts_with([' ', '\t']))
        else {
            out.push(Line {
                shown: shown.to_string(),
                no: line_no,
                text: raw.to_string(),
            });
            continue;
        };
        let name = rest.trim();
        if name.is_empty() {
            return Err(usage_error(format!(
                "{shown}:{line_no}: include needs a file: include FILE (relative to this job file's directory)"
            )));
        }
        let dir = Path::new(shown).parent().unwrap_or(Path::new(""));
        let path = dir.join(name);
        let real = std::fs::canonicalize(&path).map_err(|e| {
            usage_error(format!(
                "{shown}:{line_no}: include {name}: cannot open {}: {e}",
                path.display()
            ))
        })?;
        if stack.contains(&real) {
            return Err(usage_error(format!(
                "{shown}:{line_no}: include {name}: {} is already being included (a loop of includes); include each file once",
                path.display()
            )));
        }
        if stack.len() >= INCLUDE_DEPTH_MAX {
            return Err(usage_error(format!(
                "{shown}:{line_no}: include {name}: more than {INCLUDE_DEPTH_MAX} nested includes"
            )));
        }
        let meta = std::fs::metadata(&real)
            .map_err(|e| usage_error(format!("{shown}:{line_no}: include {name}: {e}")))?;
        if !meta.is_file() || meta.len() > JOB_FILE_MAX_BYTES {
            return Err(usage_error(format!(
                "{shown}:{line_no}: include {name}: not a regular file of at most {JOB_FILE_MAX_BYTES} bytes"
            )));
        }
        let bytes = std::fs::read(&real)
            .map_err(|e| usage_error(format!("{shown}:{line_no}: include {name}: {e}")))?;
        let inner = std::str::from_utf8(&bytes).map_err(|_| {
            usage_error(format!(
                "{shown}:{line_no}: include {name}: not text (a job file is UTF-8 text)"
            ))
        })?;
        stack.push(real);
        expand_includes(&path.display().to_string(), inner, stack, out)?;
        stack.pop();
    }
    Ok(())
}

/// Parses a job file. `shown` names it in error messages and is the path
/// it was read from: `include FILE` is read relative to its directory.
pub fn parse(shown: &str, text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<JobFile> {
    let mut lines = Vec::new();
    let mut stack: Vec<std::path::PathBuf> = std::fs::canonicalize(shown).into_iter().collect();
    expand_includes(shown, text, &mut stack, &mut lines)?;
    let mut file = JobFile::default();
    let mut global: Vec<Written> = Vec::new();
    // (name, header line, options, in [global])
    let mut current: Option<(String, usize, Vec<Written>, bool)> = None;
    let mut finished: Vec<(String, usize, Vec<Written>)> = Vec::new();
    let close = |cur: Option<(String, usize, Vec<Written>, bool)>,
                 global: &mut Vec<Written>,
                 finished: &mut Vec<(String, usize, Vec<Written>)>| {
        if let Some((name, line, opts, is_global)) = cur {
            if is_global {
                global.extend(opts);
            } else {
                let mut all = global.clone();
                all.extend(opts);
                finished.push((name, line, all));
            }
        }
    };
    for Line {
        shown,
        no: line_no,
        text: raw,
    } in &lines
    {
        let shown = shown.as_str();
        let line = strip_comment(raw);
        if line.is_empty() {
            continue;
        }
        if let Some(inner) = line.strip_prefix('[') {
            let Some(name) = inner.strip_suffix(']').map(str::trim) else {
                return Err(usage_error(format!(
                    "{shown}:{line_no}: '{line}' opens a section but has no closing ']'"
                )));
            };
            if name.is_empty() {
                return Err(usage_error(format!(
                    "{shown}:{line_no}: a section needs a name: [name]"
                )));
            }
            close(current.take(), &mut global, &mut finished);
            current = Some((name.to_string(), *line_no, Vec::new(), name == "global"));
            continue;
        }
        let Some((section, _, opts, _)) = current.as_mut() else {
            return Err(usage_error(format!(
                "{shown}:{line_no}: '{line}' stands before any [section]; fio's options belong in [global] or a job section"
            )));
        };
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (
                k.trim().to_string(),
                Some(
                    expand(v.trim(), env)
                        .map_err(|e| usage_error(format!("{shown}:{line_no}: {e}")))?,
                ),
            ),
            None => (line.trim().to_string(), None),
        };
        opts.push(Written {
            key,
            value,
            origin: Origin::File {
                path: shown.to_string(),
                section: section.clone(),
                line: *line_no,
            },
        });
    }
    close(current.take(), &mut global, &mut finished);
    file.global = global
        .iter()
        .map(|o| (o.key.clone(), o.value.clone().unwrap_or_default()))
        .collect();
    if finished.len() > JOB_SECTIONS_MAX {
        return Err(usage_error(format!(
            "{shown}: {} job sections, more than the {JOB_SECTIONS_MAX} ringlab runs from one file (each run's result, with its latency histograms, is kept for the report at the end): split the file",
            finished.len()
        )));
    }
    if finished.is_empty() {
        return Err(usage_error(format!(
            "{shown}: no job section: fio's job files name each job in [brackets] after [global]"
        )));
    }
    let mut group = 0u32;
    let mut names: Vec<String> = Vec::new();
    for (i, (name, line, options)) in finished.into_iter().enumerate() {
        if i > 0 && options.iter().any(is_group_start) {
            group += 1;
        }
        for o in &options {
            if o.key.replace('-', "_") == "wait_for" {
                let want = o.value.clone().unwrap_or_default();
                if !names.contains(&want) {
                    return Err(usage_error(format!(
                        "{}: wait_for={want} names no job before this one (ringlab runs a job file's jobs in order, so a job can only wait for an earlier one)",
                        o.origin.name("wait_for")
                    )));
                }
            }
        }
        names.push(name.clone());
        file.jobs.push(Section {
            name,
            line,
            options,
            group,
        });
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn sections_globals_groups_and_comments() {
        let text = "; a comment\n[global]\nbs=4k\nsize=1m\t; trailing\n\n[one]\nrw=read\n\n# another\n[two]\nrw=write\nstonewall\n[three]\nrw=randread\n";
        let f = parse("j.fio", text, &no_env).unwrap();
        assert_eq!(
            f.global,
            vec![("bs".into(), "4k".into()), ("size".into(), "1m".into())]
        );
        let names: Vec<_> = f.jobs.iter().map(|j| (j.name.as_str(), j.group)).collect();
        assert_eq!(names, [("one", 0), ("two", 1), ("three", 1)]);
        assert_eq!(f.jobs[0].options.len(), 3);
        assert_eq!(f.jobs[1].options[2].key, "rw");
        assert_eq!(
            f.jobs[1].options[2].origin,
            Origin::File {
                path: "j.fio".into(),
                section: "two".into(),
                line: 11
            }
        );
    }

    #[test]
    fn env_expansion_as_fio_does() {
        let env = |k: &str| (k == "SIZE").then(|| "64m".to_string());
        assert_eq!(expand("${SIZE}", &env).unwrap(), "64m");
        assert_eq!(expand("a${NOPE}b", &env).unwrap(), "ab");
        assert!(expand("${SIZE", &env).unwrap_err().contains("no closing"));
        assert!(expand("$ncpus", &env).unwrap().parse::<u32>().unwrap() >= 1);
    }

    #[test]
    fn recognised_by_content() {
        assert!(looks_like_job_file(b"# x\n[job]\nrw=read\n"));
        assert!(!looks_like_job_file(b"hello\n[job]\nrw=read\n"));
        assert!(!looks_like_job_file(b"[section]\nkey=value\n"));
        assert!(!looks_like_job_file(b"\x7fELF\x02\x01"));
        assert!(!looks_like_job_file(b""));
    }

    #[test]
    fn errors_name_line_and_section() {
        let e = parse("j.fio", "rw=read\n", &no_env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("j.fio:1") && e.contains("before any [section]"),
            "{e}"
        );
        let e = parse("j.fio", "[a]\nwait_for=b\n", &no_env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("j.fio:2: [a] wait_for"), "{e}");
        let e = parse("j.fio", "[global]\nbs=4k\n", &no_env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no job section"), "{e}");
    }

    #[test]
    fn include_inserts_a_file_relative_to_the_job_file_and_refuses_loops() {
        let dir = std::env::temp_dir().join(format!("ringlab-include-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/common.fio"), "bs=8k\nsize=1m\n").unwrap();
        let main = dir.join("main.fio");
        let shown = main.display().to_string();
        let f = parse(
            &shown,
            "[global]\ninclude sub/common.fio\n[a]\nrw=read\n",
            &no_env,
        )
        .unwrap();
        assert_eq!(
            f.global,
            vec![("bs".into(), "8k".into()), ("size".into(), "1m".into())]
        );
        // Options from the included file name it and its line.
        match &f.jobs[0].options[0].origin {
            Origin::File { path, line, .. } => {
                assert!(path.ends_with("sub/common.fio"), "{path}");
                assert_eq!(*line, 1);
            }
            o => panic!("{o:?}"),
        }
        // A loop: the main file includes itself through another file.
        std::fs::write(dir.join("loop.fio"), "include main.fio\n").unwrap();
        std::fs::write(&main, "[a]\ninclude loop.fio\n").unwrap();
        let e = parse(&shown, "[a]\ninclude loop.fio\n", &no_env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("loop of includes"), "{e}");
        let e = parse(&shown, "[a]\ninclude nope.fio\n", &no_env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("main.fio:2: include nope.fio: cannot open"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
