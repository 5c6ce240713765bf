//! fio's spellings on the `ringlab io` command line, turned into ringlab's
//! before clap sees them.
//!
//! ringlab's own options pass through untouched (a boolean of ringlab's may
//! be written `=1` or `=0` as fio users do); an option that is only fio's is
//! translated by [`super::options::translate`]; a job file, named with
//! `--fio FILE` or recognised by its content, is handed back to be run as
//! such and never becomes a target.

use super::jobfile;
use super::options::{self, is_boolean, Origin, Translated, Written};
use anyhow::Result;
use ringlab_core::usage_error;
use std::ffi::OsString;
use std::path::PathBuf;

/// ringlab's own options that apply to every job of a job file.
const BESIDE_JOB_FILE: &[&str] = &[
    "output",
    "output-format",
    "no-kstat",
    "allow-destructive",
    "status-interval",
    "parse-only",
    "overwrite-files",
];

/// What the command line asks for once fio's spellings are translated.
#[derive(Debug)]
pub enum Preprocessed {
    /// One `ringlab io` run: the argv for clap, and what was said with fio's
    /// words (job name, options, notes) for fio-json output.
    Run {
        args: Vec<OsString>,
        fio: Box<Translated>,
    },
    /// `ringlab io --fio JOBFILE` (or a job file as the TARGET): run it;
    /// `rest` holds ringlab's own options given with it.
    JobFile { path: PathBuf, rest: Vec<OsString> },
}

/// A long option of `ringlab io` as clap knows it: its name and whether it
/// takes a value.
pub struct Native {
    pub long: String,
    pub takes_value: bool,
    /// The value must follow `=` (an optional value, as --force-async[=N]).
    pub require_equals: bool,
}

/// The long options of the `io` subcommand (its flags, aliases included).
pub fn natives(io: &clap::Command) -> Vec<Native> {
    let mut out = Vec::new();
    for a in io.get_arguments() {
        let takes_value = a.get_action().takes_values();
        let require_equals = a.is_require_equals_set();
        let mut names: Vec<String> = a.get_long().map(str::to_string).into_iter().collect();
        if let Some(aliases) = a.get_all_aliases() {
            names.extend(aliases.into_iter().map(str::to_string));
        }
        for long in names {
            out.push(Native {
                long,
                takes_value,
                require_equals,
            });
        }
    }
    for long in ["help", "version"] {
        out.push(Native {
            long: long.to_string(),
            takes_value: false,
            require_equals: false,
        });
    }
    out
}

/// Rewrites `ringlab io ...` (argv[0] and argv[1] included); any other
/// command is returned as it is.
pub fn preprocess(argv: Vec<OsString>, io: &clap::Command) -> Result<Preprocessed> {
    let not_io = argv.get(1).and_then(|a| a.to_str()) != Some("io");
    if not_io {
        return Ok(Preprocessed::Run {
            args: argv,
            fio: Box::default(),
        });
    }
    let natives = natives(io);
    let mut out: Vec<OsString> = argv[..2].to_vec();
    let mut fio: Vec<Written> = Vec::new();
    let mut job_file: Option<PathBuf> = None;
    let mut positional = 0usize;
    let mut i = 2;
    while i < argv.len() {
        let tok = argv[i].clone();
        i += 1;
        let Some(s) = tok.to_str() else {
            out.push(tok);
            positional += 1;
            continue;
        };
        if s == "--" {
            positional += argv.len() - i;
            out.push(tok);
            out.extend(argv[i..].iter().cloned());
            break;
        }
        let Some(body) = s.strip_prefix("--") else {
            if !s.starts_with('-') && job_file.is_none() && jobfile::is_job_file_path(s.as_ref()) {
                job_file = Some(PathBuf::from(s));
            } else {
                if !s.starts_with('-') {
                    positional += 1;
                }
                out.push(tok);
            }
            continue;
        };
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (body.to_string(), None),
        };
        let next_value = |i: &mut usize, want: &dyn Fn(&str) -> bool| -> Option<String> {
            let v = argv.get(*i)?.to_str()?;
            if want(v) {
                *i += 1;
                Some(v.to_string())
            } else {
                None
            }
        };
        if key == "fio" {
            let v = value.or_else(|| next_value(&mut i, &|_| true));
            match v {
                Some(p) if job_file.is_none() => job_file = Some(PathBuf::from(p)),
                Some(_) => return Err(usage_error("--fio: give one job file")),
                None => return Err(usage_error("--fio needs a job file: --fio JOBFILE")),
            }
            continue;
        }
        // fio's ioengine takes fio's engine names; ringlab's alias of
        // --engine would not.
        let native = natives.iter().find(|n| n.long == key && key != "ioengine");
        if let Some(n) = native {
            // ringlab's options that fio's rules combine with others (size
            // and runtime with time_based, the target with name and
            // directory, batches with iodepth) go through the same table.
            if options::ROUTED.contains(&key.as_str()) {
                let value = match value {
                    Some(v) => Some(v),
                    None if !n.takes_value => None,
                    None => next_value(&mut i, &|_| true),
                };
                fio.push(Written {
                    key,
                    value,
                    origin: Origin::Cli,
                });
                continue;
            }
            if n.require_equals {
                out.push(tok);
                continue;
            }
            if n.takes_value {
                let v = match value {
                    Some(v) => Some(v),
                    None => next_value(&mut i, &|_| true),
                };
                let Some(v) = v else {
                    return Err(usage_error(format!("--{key} needs a value")));
                };
                let v = if key == "output-format" {
                    output_format(&v)?
                } else {
                    v
                };
                out.push(format!("--{key}").into());
                out.push(v.into());
                continue;
            }
            match value.as_deref() {
                None | Some("1") | Some("true") => out.push(format!("--{key}").into()),
                Some("0") | Some("false") => {}
                Some(_) if options::find(&key).is_some() => fio.push(Written {
                    key,
                    value,
                    origin: Origin::Cli,
                }),
                Some(v) => {
                    return Err(usage_error(format!(
                        "--{key}={v}: --{key} is a switch; write it bare, =1 or =0"
                    )))
                }
            }
            continue;
        }
        match options::find(&key) {
            Some(rec) => {
                let value = match value {
                    Some(v) => Some(v),
                    None if is_boolean(rec) => next_value(&mut i, &|v| v == "0" || v == "1"),
                    None => next_value(&mut i, &|v| !v.starts_with("--")),
                };
                fio.push(Written {
                    key,
                    value,
                    origin: Origin::Cli,
                });
            }
            None => return Err(unknown(&key, &natives)),
        }
    }
    if let Some(path) = job_file {
        // fio's --status-interval is a command-line option: it applies to
        // every job of the file.
        let mut beside = Vec::new();
        fio.retain(|o| {
            let is = o.key.replace('-', "_") == "status_interval";
            if is {
                beside.push(o.value.clone().unwrap_or_default());
            }
            !is
        });
        if let Some(o) = fio.first() {
            return Err(usage_error(format!(
                "--{} with a job file: write it in the job file (ringlab takes only its own options beside --fio)",
                o.key
            )));
        }
        let mut rest = out.split_off(2);
        for v in beside {
            rest.extend(["--status-interval".into(), v.into()]);
        }
        for a in &rest {
            let a = a.to_string_lossy();
            let key = a.trim_start_matches('-').split('=').next().unwrap_or("");
            if a.starts_with("--") && !BESIDE_JOB_FILE.contains(&key) {
                return Err(usage_error(format!(
                    "--{key} with a job file: write it in the job file (beside --fio ringlab takes only --{})",
                    BESIDE_JOB_FILE.join(", --")
                )));
            }
        }
        return Ok(Preprocessed::JobFile { path, rest });
    }
    let names = fio.iter().filter(|o| o.key == "name").count();
    if names > 1 {
        return Err(usage_error(
            "--name given more than once: fio starts a job at each --name, and ringlab runs several jobs from a job file (ringlab io --fio JOBFILE)",
        ));
    }
    let t = options::translate(&fio, false, None)?;
    if let Some(why) = t.io_refusal() {
        return Err(usage_error(why.clone()));
    }
    out.extend(t.args.iter().map(OsString::from));
    if let Some(target) = &t.target {
        if positional == 0 {
            out.push(target.into());
        }
    }
    if let Some(o) = &t.output {
        out.extend(["--output".into(), o.into()]);
    }
    if let Some(f) = &t.output_format {
        out.extend(["--output-format".into(), output_format(f)?.into()]);
    }
    Ok(Preprocessed::Run {
        args: out,
        fio: Box::new(t),
    })
}

/// fio's output formats as ringlab's: normal is text; json stays ringlab's
/// own schema (fio's shape is fio-json, or json+ with histogram bins).
fn output_format(v: &str) -> Result<String> {
    Ok(match v {
        "normal" => "text".to_string(),
        "terse" => {
            return Err(usage_error(
                "--output-format terse: ringlab has no equivalent; use text, json (ringlab's schema), fio-json or json+ (fio's shape)",
            ))
        }
        other => other.to_string(),
    })
}

/// An option neither ringlab nor its fio table knows: the nearest name of
/// either, or the plain statement that ringlab has no equivalent.
fn unknown(key: &str, natives: &[Native]) -> anyhow::Error {
    if options::is_fio_name(key) {
        return options::unknown(key, &Origin::Cli);
    }
    let native_near = options::suggest(key, natives.iter().map(|n| n.long.as_str()));
    let fio_near = options::suggest(
        key,
        options::FIO_OPTIONS
            .iter()
            .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied())),
    );
    let k = key.replace('-', "_");
    let dist = |n: &str| {
        let n = n.replace('-', "_");
        // Prefer the closer name; ties go to fio's, whose spelling a user
        // with underscores was reaching for.
        strsim_like(&k, &n)
    };
    match (native_near, fio_near) {
        (Some(n), Some(f)) if dist(n) <= dist(f) => {
            usage_error(format!("--{key}: unknown option; did you mean --{n}?"))
        }
        (Some(n), None) => usage_error(format!("--{key}: unknown option; did you mean --{n}?")),
        (None, None) => usage_error(format!(
            "unexpected argument '--{key}': ringlab has no equivalent of this option (it knows ringlab's options and the fio options listed in 'ringlab io --help')"
        )),
        _ => options::unknown(key, &Origin::Cli),
    }
}

fn strsim_like(a: &str, b: &str) -> usize {
    options::distance(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, Command};

    fn io_cmd() -> Command {
        crate::IoArgs::augment_args(Command::new("io"))
            .arg(clap::Arg::new("output").long("output").num_args(1))
            .arg(
                clap::Arg::new("output-format")
                    .long("output-format")
                    .num_args(1),
            )
    }

    fn run(line: &str) -> Result<String> {
        let argv: Vec<OsString> = format!("ringlab io {line}")
            .split_whitespace()
            .map(OsString::from)
            .collect();
        match preprocess(argv, &io_cmd())? {
            Preprocessed::Run { args, .. } => Ok(args[2..]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")),
            Preprocessed::JobFile { path, .. } => Ok(format!("JOBFILE {}", path.display())),
        }
    }

    #[test]
    fn the_first_fio_command_runs() {
        let a = run("--filename=x.dat --size=64M --rw=randread --bs=4k --ioengine=io_uring --iodepth=32 --direct=1 --runtime=2 --time_based --name=test --numjobs=2 --group_reporting").unwrap();
        assert_eq!(a, "--rw randread --bs 4k --numjobs 2 --engine uring --iodepth 32 --direct --runtime 2 --size 64M x.dat");
    }

    #[test]
    fn both_forms_and_switch_values() {
        assert_eq!(
            run("--direct=0 --verify=1 --bs 8k").unwrap(),
            "--verify --bs 8k"
        );
        assert_eq!(
            run("--hipri --sqthread_poll 1 --registerfiles=1 --ioengine psync --keep").unwrap(),
            "--keep --iopoll --sqpoll --fixed-files --engine sync"
        );
        assert_eq!(
            run("--output-format normal").unwrap(),
            "--output-format text"
        );
        assert_eq!(run("t.dat --name=j").unwrap(), "t.dat");
        assert_eq!(run("--name=j").unwrap(), "./j.0.0");
    }

    #[test]
    fn wrong_hints_are_fixed() {
        let e = run("--registerfile").unwrap_err().to_string();
        assert!(
            e.contains("--registerfiles") && e.contains("--fixed-files"),
            "{e}"
        );
        let e = run("--randrepeat=0").unwrap();
        assert!(e.starts_with("--seed "), "{e}");
        let e = run("--iodepth_batch_complete_mi=2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--iodepth_batch_complete_min"), "{e}");
        let e = run("--iodeptj 2").unwrap_err().to_string();
        assert!(e.contains("did you mean --iodepth"), "{e}");
        // fio's verify types are fio's block format; fio's sha256 is not
        // the standard one.
        let e = run("--verify=md5").unwrap();
        assert!(e.contains("--fio-verify kind=md5"), "{e}");
        let e = run("--verify=sha256").unwrap_err().to_string();
        assert!(e.contains("not the standard"), "{e}");
        let e = run("--name=a --name=b").unwrap_err().to_string();
        assert!(e.contains("job file"), "{e}");
        let e = run("--rate_min=2").unwrap_err().to_string();
        assert!(e.contains("not yet supported by ringlab"), "{e}");
    }
}
