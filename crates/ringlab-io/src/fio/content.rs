//! fio's options about what the blocks hold: `verify=` and its family
//! (written in fio's block format, checked on read, read back after the
//! writes or every `verify_backlog` writes, counted as reads as fio counts
//! them), and the dedupe and compress shares of the written buffers.
//! Gathered while a job's options are translated, then turned into the
//! hidden `--fio-verify` and `--fio-buffers` of `ringlab io`.

use anyhow::Result;
use ringlab_core::usage_error;

/// The options gathered here.
pub const NAMES: &[&str] = &[
    "verify",
    "do_verify",
    "verify_interval",
    "verify_pattern",
    "verify_backlog",
    "verify_backlog_batch",
    "verify_dump",
    "verify_fatal",
    "verify_offset",
    "verify_async",
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    "dedupe_global",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "prioclass",
    "prio",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_bssplit",
    "log_prio",
];

/// One option as written: its key, value, and its name with its place
/// (`file:line: [section] key` or `--key`) for messages.
pub struct Opt {
    pub key: String,
    pub value: Option<String>,
    pub named: String,
}

fn refuse(o: &Opt, hint: &str) -> anyhow::Error {
    let shown = match &o.value {
        Some(v) => format!("{}={v}", o.named),
        None => o.named.clone(),
    };
    usage_error(format!("{shown}: {hint}"))
}

fn value(o: &Opt) -> Result<String> {
    match o.value.as_deref().map(str::trim) {
        Some(v) if !v.is_empty() => Ok(v.to_string()),
        _ => Err(refuse(o, "needs a value")),
    }
}

fn boolean(o: &Opt) -> Result<bool> {
    match o.value.as_deref().map(str::trim) {
        None | Some("1") | Some("true") | Some("on") | Some("yes") => Ok(true),
        Some("0") | Some("false") | Some("off") | Some("no") => Ok(false),
        Some(_) => Err(refuse(o, "fio's booleans are 1 or 0")),
    }
}

/// A size as fio reads it (k, m, g; powers of 1024).
fn size(o: &Opt) -> Result<u64> {
    let v = value(o)?;
    crate::fio::value::size(&v, 1024).map_err(|e| refuse(o, &e))
}

fn number(o: &Opt, max: u64) -> Result<u64> {
    let v = value(o)?;
    v.parse::<u64>()
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| refuse(o, &format!("a whole number up to {max}")))
}

/// fio's verify_pattern as hex: 0xHEX or a quoted string.
fn pattern_hex(o: &Opt) -> Result<String> {
    let v = value(o)?;
    let bytes: Vec<u8> = if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        let h = if h.len() % 2 == 1 {
            format!("0{h}")
        } else {
            h.to_string()
        };
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok())
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| refuse(o, "0x and hex digits"))?
    } else if v.len() >= 2
        && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')))
    {
        v.as_bytes()[1..v.len() - 1].to_vec()
    } else {
        return Err(refuse(o, "ringlab takes fio's 0xHEX or a quoted string here; fio's decimal numbers, %o offsets and '|' combinations are not built"));
    };
    if bytes.is_empty() {
        return Err(refuse(o, "an empty pattern"));
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Turns the gathered options into `--fio-verify` / `--fio-buffers`.
/// `time_based`: the job runs for its run time (fio never reaches its
/// read-back phase then, which ringlab has not matched).
/// `args`: the ringlab io arguments so far (for the pattern); returns the
/// arguments to add and the notes.
pub fn finish(
    content: &[Opt],
    args: &[String],
    time_based: bool,
) -> Result<(Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    if content.is_empty() {
        return Ok((out, notes));
    }
    let mut verify: Option<(&Opt, String)> = None;
    let mut v = Vec::new();
    let mut b = Vec::new();
    let mut do_verify = true;
    let mut verify_extra: Option<&Opt> = None;
    let mut prio: Vec<String> = Vec::new();
    for o in content {
        let key = o.key.replace('-', "_");
        match key.as_str() {
            "verify" => {
                let k = value(o)?;
                if k == "0" || k == "none" {
                    verify = None;
                    continue;
                }
                crate::fio_verify::Kind::parse(&k).map_err(|e| refuse(o, &e))?;
                verify = Some((o, k));
            }
            "do_verify" => do_verify = boolean(o)?,
            "verify_interval" => {
                verify_extra.get_or_insert(o);
                v.push(format!("interval={}", size(o)?));
            }
            "verify_pattern" => {
                verify_extra.get_or_insert(o);
                v.push(format!("pattern={}", pattern_hex(o)?));
            }
            "verify_backlog" => {
                verify_extra.get_or_insert(o);
                v.push(format!("backlog={}", number(o, u64::MAX)?));
            }
            "verify_backlog_batch" => v.push(format!("batch={}", number(o, u64::MAX)?)),
            "verify_dump" => v.push(format!("dump={}", u8::from(boolean(o)?))),
            // A failed check ends the job either way (fio's verify_fatal=0
            // only goes on checking the other intervals of that block).
            "verify_fatal" => {
                boolean(o)?;
            }
            // Verification in helper threads: the same reads and checks.
            "verify_async" => {
                number(o, 1024)?;
            }
            "verify_offset" => {
                if size(o)? != 0 {
                    return Err(refuse(o, "ringlab writes fio's verify header at the start of each interval; a moved header (verify_offset) is not built"));
                }
            }
            "dedupe_percentage" => b.push(format!("dedupe={}", number(o, 100)?)),
            "dedupe_mode" => match value(o)?.as_str() {
                "repeat" => b.push("mode=repeat".to_string()),
                "working_set" => b.push("mode=working_set".to_string()),
                _ => return Err(refuse(o, "fio's modes are repeat and working_set")),
            },
            "dedupe_working_set_percentage" => b.push(format!("ws={}", number(o, 100)?)),
            "dedupe_global" => b.push(format!("global={}", u8::from(boolean(o)?))),
            "buffer_compress_percentage" => b.push(format!("compress={}", number(o, 100)?)),
            "buffer_compress_chunk" => b.push(format!("chunk={}", size(o)?)),
            "prioclass" | "prio" | "cmdprio_percentage" | "cmdprio_class" | "cmdprio"
            | "cmdprio_bssplit" => {
                let v = value(o)?;
                // Checked here, so that a bad value names its line.
                crate::fio_prio::PrioPlan::parse(&format!("{key}={v}"))
                    .map_err(|e| refuse(o, &e))?;
                prio.push(format!("{key}={v}"));
            }
            "log_prio" => prio.push(format!("log_prio={}", u8::from(boolean(o)?))),
            _ => return Err(refuse(o, "ringlab has no equivalent")),
        }
    }
    if !prio.is_empty() {
        out.extend(["--fio-prio".to_string(), prio.join(";")]);
    }
    if let Some((o, kind)) = verify {
        let writes = args
            .windows(2)
            .rfind(|w| w[0] == "--rw")
            .is_some_and(|w| w[1].contains("write") || w[1] == "rw" || w[1] == "randrw");
        if time_based && writes && do_verify {
            return Err(refuse(o, "on a time_based write job fio ends by its run time before its read-back: ringlab has not matched that; drop time_based or set do_verify=0"));
        }
        let mut spec = vec![
            format!("kind={kind}"),
            format!("do_verify={}", u8::from(do_verify)),
        ];
        spec.extend(v);
        out.extend(["--fio-verify".to_string(), spec.join(",")]);
    } else if let Some(o) = verify_extra {
        // fio takes these without verify= and does nothing with them.
        notes.push(format!(
            "{}: without verify= fio verifies nothing, and neither does ringlab",
            o.named
        ));
    }
    if !b.is_empty() {
        out.extend(["--fio-buffers".to_string(), b.join(",")]);
    }
    Ok((out, notes))
}

/// One line of `ringlab fio --help` (and the README's table) per option.
pub fn help(name: &str) -> &'static str {
    match name {
        "verify" => "fio's block format (fio 3.33's header and checksum, so each tool verifies the other's blocks): md5, crc64, crc32c, crc32c-intel, crc32, crc16, crc7, xxhash, sha1, sha3-*, meta, pattern, null; sha256/sha512 refused (fio's are not the standard algorithms)",
        "do_verify" => "=1 (fio's default): a write job reads back and checks every block it wrote, counted as reads; =0: no read-back",
        "verify_interval" => "one header and checksum per N bytes of each block",
        "verify_pattern" => "the data of every written block (0xHEX or a quoted string), checked on read (with verify=meta or pattern)",
        "verify_backlog" => "check after every N writes (verify reads interleaved with the writes)",
        "verify_backlog_batch" => "how many blocks each backlog check reads (default: verify_backlog)",
        "verify_dump" => "on a mismatch, the block as read is written to FILE.OFFSET.received",
        "verify_fatal" => "accepted: a mismatch ends the job either way",
        "verify_offset" => "only 0 (the header at the start of each interval)",
        "verify_async" => "accepted: the same reads and checks, in the job's thread",
        "dedupe_percentage" => "that share of written blocks repeats an earlier block (a new buffer per write, as fio)",
        "dedupe_mode" => "repeat (the last unique block) or working_set (fio's set of unique pages)",
        "dedupe_working_set_percentage" => "the working set: N% of the job's size",
        "dedupe_global" => "the working set spans every job of the file",
        "buffer_compress_percentage" => "that share of each buffer_compress_chunk is zero (or buffer_pattern)",
        "buffer_compress_chunk" => "the unit of buffer_compress_percentage (fio's default 512)",
        "prioclass" => "the I/O priority class of the job's thread and of each request",
        "prio" => "the I/O priority level of the job's thread and of each request",
        "cmdprio_percentage" => "io_uring/libaio: that share of requests at cmdprio_class/cmdprio (SQE ioprio, aio_reqprio)",
        "cmdprio_class" => "the class of the cmdprio requests (default 1, real time)",
        "cmdprio" => "the level of the cmdprio requests",
        "cmdprio_bssplit" => "io_uring/libaio: a cmdprio share per block size (BS/PCT or BS/PCT/CLASS/LEVEL, R,W)",
        "log_prio" => "the latency log's last column is each request's ioprio value (else fio's 0/1 cmdprio flag)",
        _ => "",
    }
}
