//! GCM's arithmetic around the bulk pass (SP 800-38D): the pre-counter block J0, counters, and
//! the tag from per-segment GHASH sums.
//!
//! Every backend cuts the ciphertext into segments of `seg_blocks` blocks (the last may be
//! shorter) and returns, per segment s, `Y_s = Σ C_i · H^(len_s - i)` over its blocks i = 0..len_s
//! (the last block weighs H^1, as in GHASH). Segments are independent, so they run in parallel on
//! CPU threads or GPU thread blocks; [`combine`] weighs each by H^(blocks after it).

use super::gf128::{ghash, Gf128};
use super::Key;
use crate::error::{Error, Result};

/// The most plaintext one GCM invocation may take: 2^39 - 256 bits (SP 800-38D §5.2.1.1).
pub const MAX_BYTES: u64 = (1 << 36) - 32;

/// `block + n` in the last 32 bits only, wrapping (SP 800-38D's inc32 applied n times).
pub fn add32(block: &[u8; 16], n: u64) -> [u8; 16] {
    let mut b = *block;
    let low = u32::from_be_bytes(b[12..].try_into().unwrap()).wrapping_add(n as u32);
    b[12..].copy_from_slice(&low.to_be_bytes());
    b
}

/// `block + n` as a 128-bit big-endian integer, wrapping (SP 800-38A's counter).
pub fn add128(block: &[u8; 16], n: u64) -> [u8; 16] {
    u128::from_be_bytes(*block)
        .wrapping_add(n as u128)
        .to_be_bytes()
}

/// One GCM invocation's constants.
pub struct Gcm {
    pub key: Key,
    /// The hash subkey E_K(0^128).
    pub h: Gf128,
    pub j0: [u8; 16],
}

impl Gcm {
    pub fn new(key: &Key, iv: &[u8]) -> Result<Gcm> {
        if iv.is_empty() {
            return Err(Error::invalid(
                "GCM needs an IV of at least one byte (12 bytes is the standard choice)",
            ));
        }
        let h = Gf128::from_block(&key.encrypt_block([0; 16]));
        let j0 = if iv.len() == 12 {
            let mut j = [0u8; 16];
            j[..12].copy_from_slice(iv);
            j[15] = 1;
            j
        } else {
            // J0 = GHASH(IV || 0^s || [0]_64 || [len(IV)]_64).
            let mut lens = [0u8; 16];
            lens[8..].copy_from_slice(&(iv.len() as u64 * 8).to_be_bytes());
            let y = (ghash(h, iv) * h) ^ (Gf128::from_block(&lens) * h);
            y.to_block()
        };
        Ok(Gcm {
            key: key.clone(),
            h,
            j0,
        })
    }

    /// The counter block of plaintext block 0.
    pub fn first_counter(&self) -> [u8; 16] {
        add32(&self.j0, 1)
    }

    /// The tag over `aad` and a ciphertext of `c_bytes` bytes whose GHASH (alone) is `z`.
    /// The full GHASH input is A || C || [len(A)]_64 || [len(C)]_64, so
    /// S = (GHASH(A)·H^c ⊕ z ⊕ L)·H with c the ciphertext's block count.
    pub fn tag(&self, aad: &[u8], z: Gf128, c_bytes: u64) -> [u8; 16] {
        let h = self.h;
        let mut lens = [0u8; 16];
        lens[..8].copy_from_slice(&(aad.len() as u64 * 8).to_be_bytes());
        lens[8..].copy_from_slice(&(c_bytes * 8).to_be_bytes());
        let mut s = z ^ Gf128::from_block(&lens);
        if !aad.is_empty() {
            s ^= ghash(h, aad) * h.pow(c_bytes.div_ceil(16) as u128);
        }
        let s = s * h;
        let e = self.key.encrypt_block(self.j0);
        (Gf128::from_block(&e) ^ s).to_block()
    }
}

/// The GHASH of a whole ciphertext of `blocks` blocks from its segments' sums (see the module).
pub fn combine(h: Gf128, segs: &[Gf128], seg_blocks: u64, blocks: u64) -> Gf128 {
    debug_assert_eq!(segs.len() as u64, blocks.div_ceil(seg_blocks.max(1)));
    let Some((last, rest)) = segs.split_last() else {
        return Gf128(0);
    };
    // Horner's rule over the full segments, one product each: every one is H^seg_blocks apart
    // from the next, and the last (possibly short) segment's length apart from the end.
    let h_seg = h.pow(seg_blocks as u128);
    let z = rest.iter().fold(Gf128(0), |z, &y| (z * h_seg) ^ y);
    (z * h.pow((blocks - rest.len() as u64 * seg_blocks) as u128)) ^ *last
}

/// Checks `tag` (4..=16 bytes, SP 800-38D §5.2.1.2) against the computed one in constant time.
pub fn check_tag(want: &[u8; 16], tag: &[u8]) -> Result<()> {
    if !(tag.len() == 4 || tag.len() == 8 || (12..=16).contains(&tag.len())) {
        return Err(Error::invalid(format!(
            "a GCM tag has 4, 8 or 12 to 16 bytes, not {}",
            tag.len()
        )));
    }
    let diff = want.iter().zip(tag).fold(0u8, |d, (a, b)| d | (a ^ b));
    if std::hint::black_box(diff) == 0 {
        Ok(())
    } else {
        Err(Error::AuthenticationFailed)
    }
}

/// Checks a GCM message length.
pub fn check_len(bytes: usize) -> Result<()> {
    if bytes as u64 > MAX_BYTES {
        return Err(Error::invalid(format!(
            "GCM takes at most {MAX_BYTES} bytes per IV; split the data (the file format does)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_wrap_where_the_standards_say() {
        let b = [0xffu8; 16];
        assert_eq!(add128(&b, 1), [0u8; 16]);
        let mut w = [0xffu8; 16];
        w[12..].copy_from_slice(&[0, 0, 0, 0]);
        assert_eq!(add32(&b, 1), w);
        assert_eq!(add32(&[0; 16], 5)[15], 5);
    }

    #[test]
    fn combining_segments_is_ghash() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let h = Gf128(rng.gen());
        for (blocks, seg) in [(1u64, 4u64), (9, 4), (8, 4), (13, 1), (20, 32)] {
            let data: Vec<u8> = (0..blocks * 16).map(|_| rng.gen()).collect();
            let segs: Vec<Gf128> = data
                .chunks(16 * seg as usize)
                .map(|c| ghash(h, c))
                .collect();
            assert_eq!(
                combine(h, &segs, seg, blocks),
                ghash(h, &data),
                "{blocks} blocks in segments of {seg}"
            );
        }
    }
}
