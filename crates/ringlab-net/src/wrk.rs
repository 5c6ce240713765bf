//! `ringlab wrk ARGS...` (and the binary invoked as `wrk`): wrk 4.1's
//! command line, read as wrk's getopt_long reads it (options anywhere
//! before `--`, bundled short options, `-c1k`, unique prefixes of long
//! options), with wrk's defaults (-t2 -c10 -d10s -T2s), and wrk2's `-R`/`-U`.
//! It becomes the same [`HttpPlan`] `ringlab http` runs, with
//! [`HttpPlan::wrk`] set: wrk's wall time, wrk's split of connections over
//! threads, wrk's bytes on stdout.

use crate::plan::{HttpArgs, HttpPlan, IoKind};
use anyhow::Result;
use ringlab_core::uring::cli::HttpKnobArgs;
use ringlab_core::usage;
use std::ffi::OsString;

/// wrk's usage text (wrk 4.1's, with wrk2's -R/-U and ringlab's own long
/// options under it).
pub const USAGE: &str = "Usage: wrk <options> <url>                            
  Options:                                            
    -c, --connections <N>  Connections to keep open   
    -d, --duration    <T>  Duration of test           
    -t, --threads     <N>  Number of threads to use   
                                                      
    -s, --script      <S>  Load Lua script file       
    -H, --header      <H>  Add header to request      
        --latency          Print latency statistics   
        --timeout     <T>  Socket/request timeout     
    -v, --version          Print version details      
                                                      
  Numeric arguments may include a SI unit (1k, 1M, 1G)
  Time arguments may include a time unit (2s, 2m, 2h)

  wrk2's options:
    -R, --rate        <T>  work rate (throughput) in requests/sec (total)
    -U, --u_latency        Print uncorrected latency statistics

  ringlab's options (none of them changes wrk's output on stdout):
        --io <KIND>        epoll (wrk's, the default), uring-nb, uring, uring-mshot
        --ringlab          after the run, ringlab's lines (driver, TLS path,
                           client cost per request) on stderr
";

/// What the command line asks for.
#[derive(Debug)]
pub enum WrkCommand {
    Run(Box<WrkRun>),
    /// -h/--help, or -v alone: print this and exit 0.
    Print(String),
}

#[derive(Debug)]
pub struct WrkRun {
    pub http: HttpArgs,
    /// --ringlab: ringlab's block on stderr after the run.
    pub ringlab_lines: bool,
    /// -v given with a URL: wrk prints its version line first, then runs.
    pub version_line: bool,
}

/// The version line, where wrk prints `wrk 4.1.0 [epoll] Copyright ...`.
pub fn version_line(io: IoKind) -> String {
    format!(
        "wrk 4.1.0 (ringlab {} speaking wrk's command line) [{}] Copyright (C) 2012 Will Glozer\n",
        env!("CARGO_PKG_VERSION"),
        io.name()
    )
}

/// wrk's `scan_units` over metric units: a whole number and an optional
/// unit of at most two letters, case-insensitive: k (1000), M, G, T, P.
pub fn scan_metric(flag: &str, s: &str) -> Result<u64> {
    let bad = || {
        ringlab_core::usage_error(format!(
            "{flag} {s}: not a number; wrk takes a whole number with an optional SI unit (10, 1k, 2M)"
        ))
    };
    let (num, unit) = split_number(s).ok_or_else(bad)?;
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" => 1_000_000_000,
        "t" => 1_000_000_000_000,
        "p" => 1_000_000_000_000_000,
        _ => return Err(bad()),
    };
    num.checked_mul(scale).ok_or_else(bad)
}

/// wrk's `scan_time`: whole seconds with an optional unit s, m, h; as an
/// extension ringlab also takes what `ringlab http` takes (500ms, 1.5s).
pub fn scan_time(flag: &str, s: &str) -> Result<String> {
    if let Some((num, unit)) = split_number(s) {
        let secs = match unit.to_ascii_lowercase().as_str() {
            "" | "s" => Some(num),
            "m" => num.checked_mul(60),
            "h" => num.checked_mul(3600),
            _ => None,
        };
        if let Some(secs) = secs {
            return Ok(secs.to_string());
        }
    }
    match ringlab_stats::units::parse_duration(s) {
        Ok(_) => Ok(s.to_string()),
        Err(_) => usage!(
            "{flag} {s}: not a time; wrk takes a whole number with an optional unit (10, 10s, 2m, 1h)"
        ),
    }
}

/// `sscanf("%lu%2s")`: the digits, then at most two more characters.
fn split_number(s: &str) -> Option<(u64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let num = s[..digits].parse::<u64>().ok()?;
    let unit = s[digits..].trim_end();
    (unit.len() <= 2).then_some((num, unit))
}

/// The long options, with whether each takes a value; getopt_long accepts
/// any unique prefix.
const LONG: &[(&str, bool)] = &[
    ("connections", true),
    ("duration", true),
    ("threads", true),
    ("script", true),
    ("header", true),
    ("latency", false),
    ("timeout", true),
    ("help", false),
    ("version", false),
    ("rate", true),
    ("u_latency", false),
    ("batch_latency", false),
    ("io", true),
    ("ringlab", false),
];

fn long_option(name: &str) -> Result<(&'static str, bool)> {
    if let Some(&(n, v)) = LONG.iter().find(|(n, _)| *n == name) {
        return Ok((n, v));
    }
    let hits: Vec<_> = LONG.iter().filter(|(n, _)| n.starts_with(name)).collect();
    match hits.as_slice() {
        [&(n, v)] => Ok((n, v)),
        [] => usage!("unrecognized option '--{name}'\n{USAGE}"),
        _ => usage!("option '--{name}' is ambiguous\n{USAGE}"),
    }
}

/// The short option of each letter wrk (and wrk2) take.
fn short_option(c: char) -> Option<(&'static str, bool)> {
    Some(match c {
        'c' => ("connections", true),
        'd' => ("duration", true),
        't' => ("threads", true),
        's' => ("script", true),
        'H' => ("header", true),
        'L' => ("latency", false),
        'T' => ("timeout", true),
        'v' => ("version", false),
        'h' | '?' => ("help", false),
        'R' => ("rate", true),
        'U' => ("u_latency", false),
        'B' => ("batch_latency", false),
        _ => return None,
    })
}

/// Reads wrk's command line (`args` without the program name).
pub fn parse(args: &[OsString]) -> Result<WrkCommand> {
    let mut words = Vec::with_capacity(args.len());
    for a in args {
        match a.to_str() {
            Some(s) => words.push(s.to_string()),
            None => usage!("argument {a:?} is not UTF-8"),
        }
    }
    let mut opts: Vec<(&'static str, Option<String>)> = Vec::new();
    let mut positional = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if w == "--" {
            positional.extend(words[i..].iter().cloned());
            break;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let (name, takes) = long_option(name)?;
            let value = match (takes, inline) {
                (true, Some(v)) => Some(v),
                (true, None) => match words.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => usage!("option '--{name}' requires an argument\n{USAGE}"),
                },
                (false, Some(_)) => usage!("option '--{name}' doesn't allow an argument"),
                (false, None) => None,
            };
            opts.push((name, value));
        } else if w.len() > 1 && w.starts_with('-') {
            let letters: Vec<char> = w[1..].chars().collect();
            let mut k = 0;
            while k < letters.len() {
                let c = letters[k];
                k += 1;
                let Some((name, takes)) = short_option(c) else {
                    usage!("invalid option -- '{c}'\n{USAGE}");
                };
                if !takes {
                    opts.push((name, None));
                    continue;
                }
                let rest: String = letters[k..].iter().collect();
                let value = if !rest.is_empty() {
                    rest
                } else {
                    match words.get(i) {
                        Some(v) => {
                            i += 1;
                            v.clone()
                        }
                        None => usage!("option requires an argument -- '{c}'\n{USAGE}"),
                    }
                };
                opts.push((name, Some(value)));
                break;
            }
        } else {
            positional.push(w.clone());
        }
    }

    let mut http = HttpArgs {
        url: String::new(),
        threads: 2,
        connections: 10,
        duration: "10".into(),
        timeout: "2".into(),
        latency: false,
        u_latency: false,
        percentile_list: Vec::new(),
        requests: None,
        script: None,
        script_args: Vec::new(),
        header: Vec::new(),
        method: "GET".into(),
        body: None,
        pipeline: 1,
        rate: None,
        io: IoKind::Epoll,
        ring: HttpKnobArgs::default(),
        no_kstat: true,
        evidence: ringlab_kstat::Level::Default,
        shard: Default::default(),
    };
    let mut version = false;
    let mut ringlab_lines = false;
    for (name, value) in opts {
        let v = value.unwrap_or_default();
        match name {
            "connections" => http.connections = u32_of("-c", scan_metric("-c", &v)?)?,
            "threads" => http.threads = u32_of("-t", scan_metric("-t", &v)?)?,
            "duration" => http.duration = scan_time("-d", &v)?,
            "timeout" => http.timeout = scan_time("--timeout", &v)?,
            "script" => http.script = Some(v),
            "header" => http.header.push(v),
            "latency" => http.latency = true,
            "u_latency" => {
                // wrk2: -U turns on -L too.
                http.latency = true;
                http.u_latency = true;
            }
            "rate" => http.rate = Some(scan_metric("-R", &v)? as f64),
            "batch_latency" => usage!(
                "-B (wrk2's batch latency) is not supported: ringlab records every response's latency (wrk2's default); drop -B"
            ),
            "version" => version = true,
            "help" => return Ok(WrkCommand::Print(USAGE.to_string())),
            "io" => {
                http.io = match v.as_str() {
                    "epoll" => IoKind::Epoll,
                    "uring-nb" => IoKind::UringNb,
                    "uring" => IoKind::Uring,
                    "uring-mshot" => IoKind::UringMshot,
                    _ => usage!("--io {v}: pick epoll, uring-nb, uring or uring-mshot"),
                }
            }
            "ringlab" => ringlab_lines = true,
            _ => usage!("option --{name} is not handled (a bug)"),
        }
    }
    let mut positional = positional.into_iter();
    let Some(url) = positional.next() else {
        if version {
            return Ok(WrkCommand::Print(version_line(http.io)));
        }
        usage!("no URL given\n{USAGE}");
    };
    http.url = url;
    // wrk hands every word after the URL to the script's init(args).
    http.script_args = positional.collect();
    if http.script.is_none() && !http.script_args.is_empty() {
        // wrk ignores them without a script; so does ringlab wrk.
        http.script_args.clear();
    }
    if http.threads == 0 {
        usage!("-t 0: wrk needs at least one thread\n{USAGE}");
    }
    if http.connections == 0 || http.connections < http.threads {
        usage!(
            "number of connections must be >= threads (-c {} -t {})",
            http.connections,
            http.threads
        );
    }
    Ok(WrkCommand::Run(Box::new(WrkRun {
        http,
        ringlab_lines,
        version_line: version,
    })))
}

fn u32_of(flag: &str, n: u64) -> Result<u32> {
    match u32::try_from(n) {
        Ok(v) => Ok(v),
        Err(_) => usage!("{flag} {n}: too large"),
    }
}

/// The plan of a `ringlab wrk` run.
pub fn plan(run: &WrkRun) -> Result<HttpPlan> {
    let mut plan = HttpPlan::from_args(&run.http)?;
    plan.wrk = true;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(words: &[&str]) -> WrkRun {
        let args: Vec<OsString> = words.iter().map(OsString::from).collect();
        match parse(&args).unwrap() {
            WrkCommand::Run(r) => *r,
            WrkCommand::Print(p) => panic!("printed {p}"),
        }
    }

    fn err(words: &[&str]) -> String {
        let args: Vec<OsString> = words.iter().map(OsString::from).collect();
        parse(&args).unwrap_err().to_string()
    }

    #[test]
    fn wrk_defaults() {
        let r = run(&["http://h/"]);
        assert_eq!(r.http.threads, 2);
        assert_eq!(r.http.connections, 10);
        assert_eq!(r.http.duration, "10");
        assert_eq!(r.http.timeout, "2");
        assert_eq!(r.http.io, IoKind::Epoll);
        assert!(!r.http.latency && r.http.rate.is_none());
    }

    #[test]
    fn suffixes_bundles_and_long_forms() {
        let r = run(&[
            "-c1k",
            "-t",
            "4",
            "-d2m",
            "--lat",
            "http://h/",
            "-H",
            "A: b",
        ]);
        assert_eq!(r.http.connections, 1000);
        assert_eq!(r.http.threads, 4);
        assert_eq!(r.http.duration, "120");
        assert!(r.http.latency);
        assert_eq!(r.http.header, vec!["A: b"]);
        let r = run(&["-Lt1", "-c", "1K", "--timeout=3s", "-d", "1h", "http://h/"]);
        assert!(r.http.latency);
        assert_eq!((r.http.threads, r.http.connections), (1, 1000));
        assert_eq!(
            (r.http.timeout.as_str(), r.http.duration.as_str()),
            ("3", "3600")
        );
        let r = run(&["-R", "2k", "-U", "http://h/", "-d", "500ms"]);
        assert_eq!(r.http.rate, Some(2000.0));
        assert!(r.http.u_latency && r.http.latency);
        assert_eq!(r.http.duration, "500ms");
    }

    #[test]
    fn words_after_the_url_go_to_the_script() {
        let r = run(&["-s", "x.lua", "http://h/", "a", "--", "-b"]);
        assert_eq!(r.http.script_args, vec!["a", "-b"]);
        assert_eq!(r.http.url, "http://h/");
    }

    #[test]
    fn bad_command_lines_say_why() {
        assert!(err(&["-c", "1.5k", "http://h/"]).contains("not a number"));
        assert!(err(&["-d", "10x", "http://h/"]).contains("not a time"));
        assert!(err(&["-c", "1", "-t", "2", "http://h/"]).contains("must be >= threads"));
        assert!(err(&["-x", "http://h/"]).contains("invalid option"));
        assert!(err(&["--t", "http://h/"]).contains("ambiguous"));
        assert!(err(&[]).contains("no URL"));
        assert!(err(&["-B", "http://h/"]).contains("-B"));
        let args = [OsString::from("-v")];
        assert!(
            matches!(parse(&args).unwrap(), WrkCommand::Print(v) if v.starts_with("wrk 4.1.0"))
        );
    }
}
