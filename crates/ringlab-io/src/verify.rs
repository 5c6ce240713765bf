//! Block verification: every block written carries its offset and a
//! CRC32C; every block read is checked against them.
//!
//! Layout of a block of `bs` bytes (little endian):
//! `[0..8)` magic `RLVERIFY`, `[8..16)` offset, `[16..24)` generation (random
//! per write), `[24..28)` block length, `[28..32)` CRC32C of the whole block
//! with these four bytes zero, `[32..bs)` pseudo-random payload derived from
//! offset and generation.

use std::fmt;

pub const MAGIC: &[u8; 8] = b"RLVERIFY";
pub const HEADER_LEN: usize = 32;
const CRC_AT: usize = 28;

/// Why a block failed verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyFailure {
    /// No ringlab header: the block was never written with --verify.
    NoHeader,
    /// The header names another offset: data landed in the wrong place.
    WrongOffset { found: u64 },
    /// Written with another block size.
    WrongBlockSize { found: u32 },
    /// Content changed after it was written.
    Checksum { stored: u32, computed: u32 },
}

impl fmt::Display for VerifyFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyFailure::NoHeader => write!(
                f,
                "no ringlab verify header (the block was never written with --verify: \
                 write the target first with --rw write --verify, or let ringlab create its file)"
            ),
            VerifyFailure::WrongOffset { found } => {
                write!(f, "the block holds the data written for offset {found}")
            }
            VerifyFailure::WrongBlockSize { found } => write!(
                f,
                "the block was written with --bs {found}; verify with the same --bs"
            ),
            VerifyFailure::Checksum { stored, computed } => write!(
                f,
                "checksum mismatch: stored crc32c {stored:#010x}, computed {computed:#010x}"
            ),
        }
    }
}

/// Fills `block` with the pattern for `offset` and `generation`.
pub fn stamp(block: &mut [u8], offset: u64, generation: u64) {
    assert!(block.len() >= HEADER_LEN, "verify blocks hold a header");
    fill_payload(
        &mut block[HEADER_LEN..],
        offset ^ generation.rotate_left(17),
    );
    block[0..8].copy_from_slice(MAGIC);
    block[8..16].copy_from_slice(&offset.to_le_bytes());
    block[16..24].copy_from_slice(&generation.to_le_bytes());
    let len = block.len() as u32;
    block[24..28].copy_from_slice(&len.to_le_bytes());
    block[CRC_AT..HEADER_LEN].fill(0);
    let crc = crc32c::crc32c(block);
    block[CRC_AT..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
}

/// Checks that `block` holds a valid pattern for `offset`.
pub fn check(block: &[u8], offset: u64) -> Result<(), VerifyFailure> {
    if block.len() < HEADER_LEN || &block[0..8] != MAGIC {
        return Err(VerifyFailure::NoHeader);
    }
    let found = u64::from_le_bytes(block[8..16].try_into().expect("8 bytes"));
    let len = u32::from_le_bytes(block[24..28].try_into().expect("4 bytes"));
    let stored = u32::from_le_bytes(block[CRC_AT..HEADER_LEN].try_into().expect("4 bytes"));
    if len as usize != block.len() {
        return Err(VerifyFailure::WrongBlockSize { found: len });
    }
    let computed = crc32c::crc32c_append(
        crc32c::crc32c_append(crc32c::crc32c(&block[..CRC_AT]), &[0u8; 4]),
        &block[HEADER_LEN..],
    );
    if computed != stored {
        return Err(VerifyFailure::Checksum { stored, computed });
    }
    if found != offset {
        return Err(VerifyFailure::WrongOffset { found });
    }
    Ok(())
}

/// Fills `buf` with a fast pseudo-random stream (SplitMix64) from `seed`.
pub fn fill_payload(buf: &mut [u8], seed: u64) {
    let mut state = seed;
    let mut chunks = buf.chunks_exact_mut(8);
    for chunk in &mut chunks {
        chunk.copy_from_slice(&splitmix64(&mut state).to_le_bytes());
    }
    let rest = chunks.into_remainder();
    let last = splitmix64(&mut state).to_le_bytes();
    let n = rest.len();
    rest.copy_from_slice(&last[..n]);
}

#[inline]
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamped_block_checks() {
        let mut b = vec![0u8; 4096];
        stamp(&mut b, 8192, 77);
        assert_eq!(check(&b, 8192), Ok(()));
    }

    #[test]
    fn every_kind_of_damage_is_named() {
        let mut b = vec![0u8; 512];
        stamp(&mut b, 1024, 5);
        assert_eq!(
            check(&b, 2048),
            Err(VerifyFailure::WrongOffset { found: 1024 })
        );
        assert_eq!(
            check(&b[..256], 1024),
            Err(VerifyFailure::WrongBlockSize { found: 512 })
        );
        let mut flipped = b.clone();
        flipped[300] ^= 1;
        assert!(matches!(
            check(&flipped, 1024),
            Err(VerifyFailure::Checksum { .. })
        ));
        let mut offset_forged = b.clone();
        offset_forged[8] ^= 1; // header damage is caught by the checksum too
        assert!(matches!(
            check(&offset_forged, 1024),
            Err(VerifyFailure::Checksum { .. })
        ));
        assert_eq!(check(&vec![0u8; 512], 0), Err(VerifyFailure::NoHeader));
    }

    #[test]
    fn generations_differ_in_payload() {
        let mut a = vec![0u8; 256];
        let mut b = vec![0u8; 256];
        stamp(&mut a, 0, 1);
        stamp(&mut b, 0, 2);
        assert_ne!(a[HEADER_LEN..], b[HEADER_LEN..]);
        assert!(check(&a, 0).is_ok() && check(&b, 0).is_ok());
    }

    #[test]
    fn payload_fills_odd_lengths() {
        let mut buf = vec![0u8; 13];
        fill_payload(&mut buf, 9);
        assert!(buf.iter().any(|&x| x != 0));
    }
}
