//! fio's `verify=`: the block format fio 3.33 writes and checks, so that a
//! block written by `ringlab fio` verifies under fio and the other way
//! round.
//!
//! Every `verify_interval` bytes of a written block (the whole block by
//! default) start with fio's 40-byte header (little endian): magic `0xacca`
//! (u16), the verify type (u16), the interval's length (u32), the buffer
//! seed (u64; 0 with `verify_pattern`), the interval's file offset (u64),
//! the write's time (u32 s, u32 ns), the job's thread number (u16), the
//! write's number (u16), and a CRC32C of those 36 bytes (u32). The
//! checksum of the type follows (its own size), then the data it covers:
//! the rest of the interval. `verify=meta` has the header only (and checks
//! `verify_pattern` over the data when one is given); `verify=pattern`
//! has no header: the whole block is the pattern.
//!
//! fio's sha256 and sha512 are not the standard algorithms (their digest
//! field holds the hash's working buffer, and the bit count is appended
//! in host order), so they are refused rather than written differently.

use std::fmt::Write as _;

/// fio's header magic.
pub const MAGIC: u16 = 0xacca;
/// The size of fio 3.33's `struct verify_header`.
pub const HEADER_LEN: usize = 40;
const CRC_AT: usize = 36;

/// One of fio's verify types, with fio's number for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Meta,
    Md5,
    Crc64,
    Crc32,
    Crc32c,
    Crc32cIntel,
    Crc16,
    Crc7,
    Sha3_224,
    Sha3_256,
    Sha3_384,
    Sha3_512,
    Xxhash,
    Sha1,
    /// fio's `pattern`: no header, the block is `verify_pattern`.
    Pattern,
    /// fio's `null`: blocks are read back but not checked.
    Null,
}

impl Kind {
    /// fio's name (its `verify=` value) to the kind; `Err` says why not.
    pub fn parse(name: &str) -> Result<Kind, String> {
        Ok(match name {
            "meta" => Kind::Meta,
            "md5" => Kind::Md5,
            "crc64" => Kind::Crc64,
            "crc32" => Kind::Crc32,
            "crc32c" => Kind::Crc32c,
            "crc32c-intel" => Kind::Crc32cIntel,
            "crc16" => Kind::Crc16,
            "crc7" => Kind::Crc7,
            "sha3-224" => Kind::Sha3_224,
            "sha3-256" => Kind::Sha3_256,
            "sha3-384" => Kind::Sha3_384,
            "sha3-512" => Kind::Sha3_512,
            "xxhash" => Kind::Xxhash,
            "sha1" => Kind::Sha1,
            "pattern" => Kind::Pattern,
            "null" => Kind::Null,
            "sha256" | "sha512" => return Err(format!(
                "fio's {name} is not the standard {name} (fio stores the hash's working buffer as the digest and appends the bit count in host order), so ringlab cannot write blocks fio would accept: use crc32c, md5, sha1, sha3-256, xxhash or another of fio's types"
            )),
            _ => return Err(
                "fio's verify types are md5, crc64, crc32c, crc32c-intel, crc32, crc16, crc7, xxhash, sha1, sha3-224, sha3-256, sha3-384, sha3-512, meta, pattern, null (sha256 and sha512 are refused: see ringlab fio's notes)".to_string()
            ),
        })
    }

    /// fio's number of the type (its `enum` order).
    pub fn code(self) -> u16 {
        match self {
            Kind::Meta => 1,
            Kind::Md5 => 2,
            Kind::Crc64 => 3,
            Kind::Crc32 => 4,
            Kind::Crc32c => 5,
            Kind::Crc32cIntel => 6,
            Kind::Crc16 => 7,
            Kind::Crc7 => 8,
            Kind::Sha3_224 => 11,
            Kind::Sha3_256 => 12,
            Kind::Sha3_384 => 13,
            Kind::Sha3_512 => 14,
            Kind::Xxhash => 15,
            Kind::Sha1 => 16,
            Kind::Pattern => 18,
            Kind::Null => 19,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Meta => "meta",
            Kind::Md5 => "md5",
            Kind::Crc64 => "crc64",
            Kind::Crc32 => "crc32",
            Kind::Crc32c => "crc32c",
            Kind::Crc32cIntel => "crc32c-intel",
            Kind::Crc16 => "crc16",
            Kind::Crc7 => "crc7",
            Kind::Sha3_224 => "sha3-224",
            Kind::Sha3_256 => "sha3-256",
            Kind::Sha3_384 => "sha3-384",
            Kind::Sha3_512 => "sha3-512",
            Kind::Xxhash => "xxhash",
            Kind::Sha1 => "sha1",
            Kind::Pattern => "pattern",
            Kind::Null => "null",
        }
    }

    /// The size of the type's checksum field after the header.
    pub fn sum_len(self) -> usize {
        match self {
            Kind::Meta | Kind::Pattern | Kind::Null => 0,
            Kind::Md5 => 16,
            Kind::Crc64 => 8,
            Kind::Crc32 | Kind::Crc32c | Kind::Crc32cIntel | Kind::Xxhash => 4,
            Kind::Crc16 => 2,
            Kind::Crc7 => 1,
            Kind::Sha3_224 => 28,
            Kind::Sha3_256 => 32,
            Kind::Sha3_384 => 48,
            Kind::Sha3_512 => 64,
            Kind::Sha1 => 20,
        }
    }

    /// Header and checksum: where the checked data starts.
    pub fn hdr_size(self) -> usize {
        match self {
            Kind::Pattern => 0,
            _ => HEADER_LEN + self.sum_len(),
        }
    }

    /// The checksum of `data` as fio stores it.
    fn sum(self, data: &[u8]) -> Vec<u8> {
        use sha3::Digest;
        match self {
            Kind::Meta | Kind::Pattern | Kind::Null => Vec::new(),
            Kind::Md5 => md5::Md5::digest(data).to_vec(),
            Kind::Crc64 => crc::Crc::<u64>::new(&crc::CRC_64_REDIS)
                .checksum(data)
                .to_le_bytes()
                .to_vec(),
            Kind::Crc32 => crc::Crc::<u32>::new(&FIO_CRC32)
                .checksum(data)
                .to_le_bytes()
                .to_vec(),
            Kind::Crc32c | Kind::Crc32cIntel => fio_crc32c(data).to_le_bytes().to_vec(),
            Kind::Crc16 => crc::Crc::<u16>::new(&crc::CRC_16_ARC)
                .checksum(data)
                .to_le_bytes()
                .to_vec(),
            Kind::Crc7 => vec![crc::Crc::<u8>::new(&crc::CRC_7_MMC).checksum(data)],
            Kind::Sha3_224 => sha3::Sha3_224::digest(data).to_vec(),
            Kind::Sha3_256 => sha3::Sha3_256::digest(data).to_vec(),
            Kind::Sha3_384 => sha3::Sha3_384::digest(data).to_vec(),
            Kind::Sha3_512 => sha3::Sha3_512::digest(data).to_vec(),
            Kind::Xxhash => xxhash_rust::xxh32::xxh32(data, 1).to_le_bytes().to_vec(),
            // fio keeps SHA-1's five state words in host order.
            Kind::Sha1 => sha1::Sha1::digest(data)
                .chunks_exact(4)
                .flat_map(|w| [w[3], w[2], w[1], w[0]])
                .collect(),
        }
    }
}

/// fio's verify options of one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioVerify {
    pub kind: Kind,
    /// verify_interval in bytes (0: the whole block).
    pub interval: u32,
    /// verify_pattern, as bytes.
    pub pattern: Option<Vec<u8>>,
    /// verify_backlog: verify after every N writes (0: at the end only).
    pub backlog: u64,
    /// verify_backlog_batch (0: the backlog).
    pub backlog_batch: u64,
    /// do_verify: read back what a write job wrote.
    pub do_verify: bool,
    /// verify_dump: on a mismatch, the block as read is written beside.
    pub dump: bool,
}

impl FioVerify {
    /// Parses the hidden `--fio-verify` value: `kind=K,interval=N,
    /// pattern=0xHEX,backlog=N,batch=N,do_verify=0|1,dump=0|1`.
    pub fn parse(spec: &str) -> Result<FioVerify, String> {
        let mut v = FioVerify {
            kind: Kind::Crc32c,
            interval: 0,
            pattern: None,
            backlog: 0,
            backlog_batch: 0,
            do_verify: true,
            dump: false,
        };
        let num = |k: &str, x: &str| {
            x.parse::<u64>()
                .map_err(|_| format!("{k}={x}: a whole number"))
        };
        for part in spec.split(',').filter(|p| !p.is_empty()) {
            let (k, x) = part
                .split_once('=')
                .ok_or_else(|| format!("{part}: KEY=VALUE"))?;
            match k {
                "kind" => v.kind = Kind::parse(x)?,
                "interval" => {
                    v.interval =
                        u32::try_from(num(k, x)?).map_err(|_| format!("{k}={x}: too large"))?
                }
                "pattern" => v.pattern = Some(hex_bytes(x)?),
                "backlog" => v.backlog = num(k, x)?,
                "batch" => v.backlog_batch = num(k, x)?,
                "do_verify" => v.do_verify = x == "1",
                "dump" => v.dump = x == "1",
                _ => return Err(format!("{k}: not a --fio-verify key")),
            }
        }
        if v.kind == Kind::Pattern && v.pattern.is_none() {
            return Err("verify=pattern needs verify_pattern".to_string());
        }
        Ok(v)
    }

    /// The bytes covered by one header for a block of `len` bytes.
    pub fn hdr_inc(&self, len: usize) -> usize {
        if self.interval == 0 || self.interval as usize > len {
            len
        } else {
            self.interval as usize
        }
    }

    /// Checks the options against the smallest block: each interval must
    /// hold its header and the blocks must be whole intervals.
    pub fn check_block(&self, bs: u64) -> Result<(), String> {
        let inc = self.hdr_inc(bs as usize);
        if inc < self.kind.hdr_size() + 1 {
            return Err(format!(
                "verify={} needs {} bytes of header per verify_interval, and the interval is {inc} bytes: raise bs or verify_interval",
                self.kind.name(),
                self.kind.hdr_size()
            ));
        }
        if !(bs as usize).is_multiple_of(inc) {
            return Err(format!(
                "verify_interval={} does not divide bs={bs}: fio writes one header per interval",
                self.interval
            ));
        }
        Ok(())
    }

    /// Makes `buf` (one write of `buf.len()` bytes at `offset`) carry fio's
    /// headers and checksums. The data is what the buffer holds (refilled
    /// with the pattern when one is given).
    pub fn stamp(&self, buf: &mut [u8], offset: u64, seed: u64, numberio: u16, thread: u16) {
        if let Some(p) = &self.pattern {
            fill_repeated(buf, p);
        }
        if matches!(self.kind, Kind::Pattern) {
            return;
        }
        let inc = self.hdr_inc(buf.len());
        let seed = if self.pattern.is_some() { 0 } else { seed };
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let hs = self.kind.hdr_size();
        for (i, chunk) in buf.chunks_exact_mut(inc).enumerate() {
            let sum = self.kind.sum(&chunk[hs..]);
            chunk[HEADER_LEN..HEADER_LEN + sum.len()].copy_from_slice(&sum);
            let h = &mut chunk[..HEADER_LEN];
            h[0..2].copy_from_slice(&MAGIC.to_le_bytes());
            h[2..4].copy_from_slice(&self.kind.code().to_le_bytes());
            h[4..8].copy_from_slice(&(inc as u32).to_le_bytes());
            h[8..16].copy_from_slice(&seed.to_le_bytes());
            h[16..24].copy_from_slice(&(offset + (i * inc) as u64).to_le_bytes());
            h[24..28].copy_from_slice(&(now.tv_sec as u32).to_le_bytes());
            h[28..32].copy_from_slice(&(now.tv_nsec as u32).to_le_bytes());
            h[32..34].copy_from_slice(&thread.to_le_bytes());
            h[34..36].copy_from_slice(&numberio.to_le_bytes());
            let crc = fio_crc32c(&h[..CRC_AT]);
            h[CRC_AT..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        }
    }

    /// Checks one block read at `offset` as fio does; the error is fio's
    /// message (without the file name, which the caller adds).
    pub fn check(&self, buf: &[u8], offset: u64) -> Result<(), String> {
        if self.kind == Kind::Null {
            return Ok(());
        }
        if self.kind == Kind::Pattern {
            return self.check_pattern(buf, 0, offset, buf.len());
        }
        let inc = self.hdr_inc(buf.len());
        let hs = self.kind.hdr_size();
        for (i, chunk) in buf.chunks_exact(inc).enumerate() {
            let at = offset + (i * inc) as u64;
            // Formatted only for a message: a check that passes allocates nothing.
            let where_ = || {
                format!(
                    " at offset {at}, length {inc} (requested block: offset={offset}, length={})",
                    buf.len()
                )
            };
            let u16_at = |o: usize| u16::from_le_bytes([chunk[o], chunk[o + 1]]);
            let u32_at =
                |o: usize| u32::from_le_bytes([chunk[o], chunk[o + 1], chunk[o + 2], chunk[o + 3]]);
            let magic = u16_at(0);
            if magic != MAGIC {
                return Err(format!(
                    "verify: bad magic header {magic:x}, wanted {MAGIC:x}{}",
                    where_()
                ));
            }
            let len = u32_at(4);
            if len as usize != inc {
                return Err(format!(
                    "verify: bad header length {len}, wanted {inc}{}",
                    where_()
                ));
            }
            let hoff = u64::from_le_bytes(chunk[16..24].try_into().unwrap_or([0; 8]));
            if hoff != at {
                return Err(format!(
                    "verify: bad header offset {hoff}, wanted {at}{}",
                    where_()
                ));
            }
            let crc = fio_crc32c(&chunk[..CRC_AT]);
            let stored = u32_at(CRC_AT);
            if crc != stored {
                return Err(format!(
                    "verify: bad header crc {stored:x}, calculated {crc:x}{}",
                    where_()
                ));
            }
            let media = u16_at(2);
            if media != self.kind.code() {
                return Err(format!(
                    "fio: verify type mismatch ({media} media, {} given){}",
                    self.kind.code(),
                    where_()
                ));
            }
            if self.kind == Kind::Meta {
                if self.pattern.is_some() {
                    self.check_pattern(chunk, HEADER_LEN, at, inc)?;
                }
                continue;
            }
            let want = &chunk[HEADER_LEN..hs];
            let got = self.kind.sum(&chunk[hs..]);
            if want != got.as_slice() {
                return Err(format!(
                    "{}: verify failed{}\n       Expected CRC: {}\n       Received CRC: {}",
                    self.kind.name(),
                    where_(),
                    hex(want),
                    hex(&got)
                ));
            }
        }
        Ok(())
    }

    /// The pattern over `buf[from..]`, repeated from the start of `buf`.
    fn check_pattern(&self, buf: &[u8], from: usize, at: u64, inc: usize) -> Result<(), String> {
        let Some(p) = &self.pattern else {
            return Ok(());
        };
        // The first period against the pattern, then each byte against
        // the one a period before it (one memcmp); the byte loop below
        // only runs to name a mismatch.
        let n = p.len();
        let head = buf.len().min(from + n);
        if from < buf.len()
            && (from..head).all(|i| buf[i] == p[i % n])
            && buf[from + n.min(buf.len() - from)..]
                == buf[from..buf.len().saturating_sub(n).max(from)]
        {
            return Ok(());
        }
        for (i, b) in buf.iter().enumerate().skip(from) {
            let want = p[i % p.len()];
            if *b != want {
                return Err(format!(
                    "pattern: verify failed at offset {at}, length {inc}: byte {i} of the block is {b:#04x}, wanted {want:#04x} (verify_pattern)"
                ));
            }
        }
        Ok(())
    }
}

/// `p` repeated over `buf` from its first byte, by doubling copies.
fn fill_repeated(buf: &mut [u8], p: &[u8]) {
    let first = buf.len().min(p.len());
    buf[..first].copy_from_slice(&p[..first]);
    let mut filled = first;
    while filled < buf.len() {
        let k = filled.min(buf.len() - filled);
        buf.copy_within(0..k, filled);
        filled += k;
    }
}

/// fio's crc32: the CRC-32 polynomial, not reflected, from 0 with no
/// final inversion (not in the crc catalog under this form).
const FIO_CRC32: crc::Algorithm<u32> = crc::Algorithm {
    width: 32,
    poly: 0x04c1_1db7,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
    check: 0x89a1_897f,
    residue: 0,
};

/// fio's crc32c: CRC-32C without the final inversion.
pub fn fio_crc32c(data: &[u8]) -> u32 {
    !crc32c::crc32c(data)
}

/// One job's verify bookkeeping: the writes done and not verified yet
/// (in the order they completed), fio's backlog batches, and whether the
/// read-back phase after the writes has begun.
pub struct VerifyRun {
    pub spec: FioVerify,
    /// Written blocks waiting for their verify read: (block, length).
    pub queue: std::collections::VecDeque<(u64, u32)>,
    /// Writes completed since the last backlog batch began.
    since: u64,
    /// Verify reads left in the current backlog batch.
    batch_left: u64,
    /// The read-back after the writes (fio's do_verify phase).
    pub phase: bool,
    /// fio's numberio: writes issued (16 bits in fio 3.33's header).
    pub numberio: u16,
    /// fio's thread number of the job (1-based).
    pub thread: u16,
    /// Verify reads done (during the writes and after).
    pub verified: u64,
}

impl VerifyRun {
    pub fn new(spec: &FioVerify, job: u32) -> VerifyRun {
        VerifyRun {
            spec: spec.clone(),
            queue: std::collections::VecDeque::new(),
            since: 0,
            batch_left: 0,
            phase: false,
            numberio: 0,
            thread: (job + 1) as u16,
            verified: 0,
        }
    }

    /// Whether completed writes are kept for a verify read.
    pub fn logs_writes(&self) -> bool {
        self.spec.do_verify || self.spec.backlog > 0
    }

    /// A write completed.
    pub fn written(&mut self, block: u64, len: u32) {
        if !self.logs_writes() {
            return;
        }
        self.queue.push_back((block, len));
        if self.spec.backlog > 0 {
            self.since += 1;
            if self.since >= self.spec.backlog && self.batch_left == 0 {
                self.since = 0;
                self.batch_left = if self.spec.backlog_batch == 0 {
                    self.spec.backlog
                } else {
                    self.spec.backlog_batch
                };
            }
        }
    }

    /// The next verify read due now, if any: during a backlog batch, or in
    /// the read-back phase.
    pub fn next_read(&mut self) -> Option<(u64, u32)> {
        if self.phase || self.batch_left > 0 {
            let r = self.queue.pop_front()?;
            self.batch_left = self.batch_left.saturating_sub(1);
            return Some(r);
        }
        None
    }

    /// Starts the read-back phase; false when there is nothing to read.
    pub fn start_phase(&mut self) -> bool {
        self.phase = self.spec.do_verify && !self.queue.is_empty();
        self.phase
    }
}

/// fio's verify_dump: the block as read, written as `NAME.OFFSET.received`
/// in the current directory (NAME: the target's file name); returns the
/// line fio prints.
pub fn dump(target: &std::path::Path, offset: u64, buf: &[u8]) -> String {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "target".to_string());
    let fname = format!("{name}.{offset}.received");
    match std::fs::write(&fname, buf) {
        Ok(()) => format!("\n       received data dumped as {fname}"),
        Err(e) => format!("\n       could not dump the received data as {fname}: {e}"),
    }
}

fn hex(b: &[u8]) -> String {
    // fio prints the sum as the number it is (little endian words).
    let mut s = String::new();
    for x in b.iter().rev() {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// `0xHEX` (or hex digits) to bytes.
fn hex_bytes(x: &str) -> Result<Vec<u8>, String> {
    let h = x.trim_start_matches("0x").trim_start_matches("0X");
    let h = if h.len() % 2 == 1 {
        format!("0{h}")
    } else {
        h.to_string()
    };
    let out: Option<Vec<u8>> = (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok())
        .collect();
    match out {
        Some(b) if !b.is_empty() => Ok(b),
        _ => Err(format!("pattern={x}: hex digits")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> FioVerify {
        FioVerify::parse(s).unwrap()
    }

    #[test]
    fn every_type_checks_what_it_stamped_and_catches_a_flipped_bit() {
        for k in [
            "meta",
            "md5",
            "crc64",
            "crc32",
            "crc32c",
            "crc32c-intel",
            "crc16",
            "crc7",
            "sha3-224",
            "sha3-256",
            "sha3-384",
            "sha3-512",
            "xxhash",
            "sha1",
        ] {
            let v = spec(&format!("kind={k}"));
            let mut b = vec![0u8; 4096];
            crate::verify::fill_payload(&mut b, 7);
            v.stamp(&mut b, 8192, 99, 3, 1);
            assert_eq!(v.check(&b, 8192), Ok(()), "{k}");
            assert!(
                v.check(&b, 4096).unwrap_err().contains("bad header offset"),
                "{k}"
            );
            if k != "meta" {
                let mut bad = b.clone();
                bad[3000] ^= 1;
                let e = v.check(&bad, 8192).unwrap_err();
                assert!(e.contains("verify failed"), "{k}: {e}");
            }
        }
    }

    #[test]
    fn a_crc32c_block_is_laid_out_as_fio_writes_it() {
        let v = spec("kind=crc32c");
        let mut b = vec![0u8; 4096];
        v.stamp(&mut b, 4096, 5, 1, 1);
        assert_eq!(&b[0..4], &[0xca, 0xac, 5, 0]);
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 4096);
        assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), 4096);
        assert_eq!(
            u32::from_le_bytes(b[36..40].try_into().unwrap()),
            fio_crc32c(&b[..36])
        );
        assert_eq!(
            u32::from_le_bytes(b[40..44].try_into().unwrap()),
            fio_crc32c(&b[44..])
        );
    }

    #[test]
    fn intervals_carry_their_own_headers_and_meta_checks_the_pattern() {
        let v = spec("kind=meta,interval=512,pattern=aa555aa5");
        let mut b = vec![0u8; 4096];
        v.stamp(&mut b, 0, 0, 0, 1);
        for i in 0..8 {
            assert_eq!(&b[i * 512..i * 512 + 2], &[0xca, 0xac]);
            assert_eq!(b[i * 512 + 40..i * 512 + 44], [0xaa, 0x55, 0x5a, 0xa5]);
        }
        assert_eq!(v.check(&b, 0), Ok(()));
        b[1000] ^= 0xff;
        assert!(v.check(&b, 0).unwrap_err().contains("pattern"));
    }

    #[test]
    fn the_pattern_is_filled_and_checked_over_any_length() {
        for (plen, len) in [(4, 512), (3, 512), (5, 7), (4, 3), (1, 100), (7, 4096)] {
            let p: Vec<u8> = (1..=plen as u8).collect();
            let mut b = vec![0u8; len];
            fill_repeated(&mut b, &p);
            assert!(b.iter().enumerate().all(|(i, x)| *x == p[i % plen]));
            let v = FioVerify {
                pattern: Some(p.clone()),
                ..spec("kind=meta")
            };
            for from in [0, 1, len / 2, len.saturating_sub(1), len] {
                assert_eq!(v.check_pattern(&b, from, 0, len), Ok(()));
                for bad in [from, (from + len) / 2, len.saturating_sub(1)] {
                    if bad < from || bad >= len {
                        continue;
                    }
                    let mut c = b.clone();
                    c[bad] ^= 0xff;
                    let e = v.check_pattern(&c, from, 0, len).unwrap_err();
                    assert!(e.contains(&format!("byte {bad} ")), "{e}");
                }
            }
        }
    }

    #[test]
    fn sha256_is_refused_with_the_reason() {
        assert!(Kind::parse("sha256")
            .unwrap_err()
            .contains("not the standard"));
        assert!(Kind::parse("sha9").is_err());
    }
}

#[cfg(test)]
mod against_fio {
    use super::*;

    /// Blocks fio 3.33 writes verify here, for every type (skipped
    /// without fio).
    #[test]
    fn blocks_written_by_fio_check_here() {
        if std::process::Command::new("fio")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipped: fio is not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        for k in [
            "meta", "md5", "crc64", "crc32", "crc32c", "crc16", "crc7", "sha3-256", "sha3-512",
            "xxhash", "sha1",
        ] {
            let f = dir.path().join(k);
            let st = std::process::Command::new("fio")
                .args([
                    "--name=w",
                    "--size=16k",
                    "--bs=4k",
                    "--rw=write",
                    "--do_verify=0",
                ])
                .arg(format!("--verify={k}"))
                .arg(format!("--filename={}", f.display()))
                .output()
                .unwrap();
            assert!(st.status.success(), "{k}: {st:?}");
            let data = std::fs::read(&f).unwrap();
            let v = FioVerify::parse(&format!("kind={k}")).unwrap();
            for (i, b) in data.chunks(4096).enumerate() {
                assert_eq!(v.check(b, (i * 4096) as u64), Ok(()), "{k} block {i}");
            }
        }
    }
}
