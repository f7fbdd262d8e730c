//! 16-lane multi-buffer SHA-256 on AVX-512 (F + BW): one message per 32-bit lane, one `__m512i`
//! per state word and per message-schedule word. Rotations are native (`vprord`) and every
//! three-input Boolean function (Ch, Maj, the XORs of the sigmas) is one `vpternlogd`. With 32
//! registers the 8 state words and the 16-word rolling schedule all stay in registers.

use crate::sha256::multibuffer::Padded;
use crate::sha256::{Compressor, Digest, IV, K};
use core::arch::x86_64::*;

/// Proof that the CPU has AVX-512 F and BW.
#[derive(Clone, Copy, Debug)]
pub struct Avx512(());

impl Avx512 {
    pub fn new() -> Option<Self> {
        crate::backend::cpu::features().avx512.then_some(Avx512(()))
    }
}

impl Compressor<16> for Avx512 {
    fn compress(&self, state: &mut [[u32; 16]; 8], blocks: &[&[u8; 64]; 16]) {
        // SAFETY: `Avx512` exists only when AVX-512 F and BW were detected.
        unsafe { compress16(state, blocks) }
    }

    fn compress_shared(&self, state: &mut [[u32; 16]; 8], kw: &[u32; 64]) {
        // SAFETY: as above.
        unsafe { compress16_shared(state, kw) }
    }

    fn hash_lanes(
        &self,
        data: &[&[u8]; 16],
        len: usize,
        pad_kw: Option<&[u32; 64]>,
        double: bool,
    ) -> [Digest; 16] {
        // SAFETY: as above; every lane holds `len` bytes.
        unsafe { hash_lanes16(data, len, pad_kw, double) }
    }
}

// `vpternlogd` truth tables: bit (a << 2 | b << 1 | c) of the immediate is f(a, b, c).
/// a ^ b ^ c
const XOR3: i32 = 0x96;
/// Ch: a ? b : c
const CH: i32 = 0xCA;
/// Maj: at least two of a, b, c
const MAJ: i32 = 0xE8;

/// Σ0(x) = ror2 ^ ror13 ^ ror22.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn big_sigma0(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi32::<XOR3>(
        _mm512_ror_epi32::<2>(x),
        _mm512_ror_epi32::<13>(x),
        _mm512_ror_epi32::<22>(x),
    )
}

/// Σ1(x) = ror6 ^ ror11 ^ ror25.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn big_sigma1(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi32::<XOR3>(
        _mm512_ror_epi32::<6>(x),
        _mm512_ror_epi32::<11>(x),
        _mm512_ror_epi32::<25>(x),
    )
}

/// σ0(x) = ror7 ^ ror18 ^ shr3.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn small_sigma0(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi32::<XOR3>(
        _mm512_ror_epi32::<7>(x),
        _mm512_ror_epi32::<18>(x),
        _mm512_srli_epi32::<3>(x),
    )
}

/// σ1(x) = ror17 ^ ror19 ^ shr10.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn small_sigma1(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi32::<XOR3>(
        _mm512_ror_epi32::<17>(x),
        _mm512_ror_epi32::<19>(x),
        _mm512_srli_epi32::<10>(x),
    )
}

/// Message words 4g..4g+3 of all sixteen lanes, as four vectors `W[4g + i]` (lane j in element j).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn load_group(blocks: &[&[u8; 64]; 16], g: usize) -> [__m512i; 4] {
    debug_assert!(g < 4);
    // r[i] holds, in its 128-bit quarters 0..4, the four words of lanes i, i + 4, i + 8, i + 12;
    // a 4x4 transpose inside each quarter then finishes the 16x4 transpose.
    let mut r = [_mm512_setzero_si512(); 4];
    for (i, r) in r.iter_mut().enumerate() {
        // SAFETY: bytes 16g..16g + 16 of 64-byte arrays, g < 4; unaligned loads.
        let q = unsafe {
            [
                _mm_loadu_si128(blocks[i].as_ptr().add(16 * g) as *const __m128i),
                _mm_loadu_si128(blocks[i + 4].as_ptr().add(16 * g) as *const __m128i),
                _mm_loadu_si128(blocks[i + 8].as_ptr().add(16 * g) as *const __m128i),
                _mm_loadu_si128(blocks[i + 12].as_ptr().add(16 * g) as *const __m128i),
            ]
        };
        let v = _mm512_castsi128_si512(q[0]);
        let v = _mm512_inserti32x4::<1>(v, q[1]);
        let v = _mm512_inserti32x4::<2>(v, q[2]);
        let v = _mm512_inserti32x4::<3>(v, q[3]);
        *r = _mm512_shuffle_epi8(v, bswap_words());
    }
    transpose4(r)
}

/// `vpshufb` mask that reverses the bytes of each 32-bit word (message and digest words are
/// big-endian).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn bswap_words() -> __m512i {
    _mm512_broadcast_i32x4(_mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203))
}

/// A 4x4 transpose of 32-bit words inside each 128-bit quarter: word `j` of row `i` becomes word
/// `i` of row `j`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn transpose4(r: [__m512i; 4]) -> [__m512i; 4] {
    let t0 = _mm512_unpacklo_epi32(r[0], r[1]); // a0 b0 a1 b1 (in each quarter)
    let t1 = _mm512_unpackhi_epi32(r[0], r[1]); // a2 b2 a3 b3
    let t2 = _mm512_unpacklo_epi32(r[2], r[3]); // c0 d0 c1 d1
    let t3 = _mm512_unpackhi_epi32(r[2], r[3]); // c2 d2 c3 d3
    [
        _mm512_unpacklo_epi64(t0, t2), // a0 b0 c0 d0
        _mm512_unpackhi_epi64(t0, t2), // a1 b1 c1 d1
        _mm512_unpacklo_epi64(t1, t3), // a2 b2 c2 d2
        _mm512_unpackhi_epi64(t1, t3), // a3 b3 c3 d3
    ]
}

/// One round. The variables are not moved: round `R` (mod 8) reads `a` from `s[(8 - R) % 8]`, and
/// writes the new `e` over `d` and the new `a` over `h`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn round<const R: usize>(s: &mut [__m512i; 8], kw: __m512i) {
    let (a, b, c, d) = (
        s[(8 - R) % 8],
        s[(9 - R) % 8],
        s[(10 - R) % 8],
        s[(11 - R) % 8],
    );
    let (e, f, g, h) = (
        s[(12 - R) % 8],
        s[(13 - R) % 8],
        s[(14 - R) % 8],
        s[(15 - R) % 8],
    );
    let ch = _mm512_ternarylogic_epi32::<CH>(e, f, g);
    let t1 = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(h, kw), ch), big_sigma1(e));
    let t2 = _mm512_add_epi32(big_sigma0(a), _mm512_ternarylogic_epi32::<MAJ>(a, b, c));
    s[(11 - R) % 8] = _mm512_add_epi32(d, t1);
    s[(15 - R) % 8] = _mm512_add_epi32(t1, t2);
}

/// Round `16i + J` of a 16-round chunk: extends the rolling schedule (`w[J]` becomes `W[16i + J]`)
/// when `SCHED`, then runs the round with role offset `R = J % 8`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn step<const J: usize, const R: usize, const SCHED: bool>(
    s: &mut [__m512i; 8],
    w: &mut [__m512i; 16],
    k: &[u32; 16],
) {
    const { assert!(J < 16 && R == J % 8) };
    if SCHED {
        // W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16]
        let x = _mm512_add_epi32(w[J], w[(J + 9) % 16]);
        let y = _mm512_add_epi32(
            small_sigma0(w[(J + 1) % 16]),
            small_sigma1(w[(J + 14) % 16]),
        );
        w[J] = _mm512_add_epi32(x, y);
    }
    let kw = _mm512_add_epi32(w[J], _mm512_set1_epi32(k[J] as i32));
    round::<R>(s, kw);
}

/// Sixteen rounds with round constants `k`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn rounds16<const SCHED: bool>(s: &mut [__m512i; 8], w: &mut [__m512i; 16], k: &[u32; 16]) {
    step::<0, 0, SCHED>(s, w, k);
    step::<1, 1, SCHED>(s, w, k);
    step::<2, 2, SCHED>(s, w, k);
    step::<3, 3, SCHED>(s, w, k);
    step::<4, 4, SCHED>(s, w, k);
    step::<5, 5, SCHED>(s, w, k);
    step::<6, 6, SCHED>(s, w, k);
    step::<7, 7, SCHED>(s, w, k);
    step::<8, 0, SCHED>(s, w, k);
    step::<9, 1, SCHED>(s, w, k);
    step::<10, 2, SCHED>(s, w, k);
    step::<11, 3, SCHED>(s, w, k);
    step::<12, 4, SCHED>(s, w, k);
    step::<13, 5, SCHED>(s, w, k);
    step::<14, 6, SCHED>(s, w, k);
    step::<15, 7, SCHED>(s, w, k);
}

/// One block's 64 rounds from the state `init` with the message words in `w` (overwritten by the
/// schedule), then the feed-forward.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn block(init: [__m512i; 8], w: &mut [__m512i; 16]) -> [__m512i; 8] {
    let mut s = init;
    let (k, _) = K.as_chunks::<16>();
    rounds16::<false>(&mut s, w, &k[0]);
    for k in &k[1..] {
        rounds16::<true>(&mut s, w, k);
    }
    std::array::from_fn(|i| _mm512_add_epi32(init[i], s[i]))
}

/// A block the same in every lane (the padding block of equal-length messages), given as
/// `W[t] + K[t]`: no schedule and no transpose, each round adds one broadcast word. For 64-byte
/// messages this block is half the work, and the schedule is a third of a block's operations.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn shared_block(init: [__m512i; 8], kw: &[u32; 64]) -> [__m512i; 8] {
    let mut s = init;
    let (kw, _) = kw.as_chunks::<8>();
    for kw in kw {
        round::<0>(&mut s, _mm512_set1_epi32(kw[0] as i32));
        round::<1>(&mut s, _mm512_set1_epi32(kw[1] as i32));
        round::<2>(&mut s, _mm512_set1_epi32(kw[2] as i32));
        round::<3>(&mut s, _mm512_set1_epi32(kw[3] as i32));
        round::<4>(&mut s, _mm512_set1_epi32(kw[4] as i32));
        round::<5>(&mut s, _mm512_set1_epi32(kw[5] as i32));
        round::<6>(&mut s, _mm512_set1_epi32(kw[6] as i32));
        round::<7>(&mut s, _mm512_set1_epi32(kw[7] as i32));
    }
    std::array::from_fn(|i| _mm512_add_epi32(init[i], s[i]))
}

/// The eight state vectors of `state`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn load_state(state: &[[u32; 16]; 8]) -> [__m512i; 8] {
    // SAFETY: each word is 64 bytes; unaligned loads.
    state.map(|word| unsafe { _mm512_loadu_si512(word.as_ptr().cast()) })
}

/// Stores the eight state vectors into `state`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn store_state(state: &mut [[u32; 16]; 8], s: [__m512i; 8]) {
    for (word, v) in state.iter_mut().zip(s) {
        // SAFETY: `word` is 64 bytes; unaligned store.
        unsafe { _mm512_storeu_si512(word.as_mut_ptr().cast(), v) };
    }
}

/// The message words of one block per lane.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn message(blocks: &[&[u8; 64]; 16]) -> [__m512i; 16] {
    let mut w = [_mm512_setzero_si512(); 16];
    for g in 0..4 {
        w[4 * g..4 * g + 4].copy_from_slice(&load_group(blocks, g));
    }
    w
}

#[target_feature(enable = "avx512f,avx512bw")]
fn compress16(state: &mut [[u32; 16]; 8], blocks: &[&[u8; 64]; 16]) {
    store_state(state, block(load_state(state), &mut message(blocks)));
}

#[target_feature(enable = "avx512f,avx512bw")]
fn compress16_shared(state: &mut [[u32; 16]; 8], kw: &[u32; 64]) {
    store_state(state, shared_block(load_state(state), kw));
}

/// Whole messages of `len` bytes, one per lane, with the state in registers throughout: the body
/// blocks, then the padding (the shared block `pad_kw` when `len` is a multiple of 64, else each
/// lane's own tail). SHA256d's second block is built in registers too: its first eight words are
/// the first hash's state words. The digests leave through a transpose in registers rather than
/// word by word.
#[target_feature(enable = "avx512f,avx512bw")]
fn hash_lanes16(
    data: &[&[u8]; 16],
    len: usize,
    pad_kw: Option<&[u32; 64]>,
    double: bool,
) -> [Digest; 16] {
    let iv = IV.map(|w| _mm512_set1_epi32(w as i32));
    let body = len / 64;
    let mut s = iv;
    for b in 0..body {
        let blocks = std::array::from_fn(|l| data[l][64 * b..64 * b + 64].try_into().unwrap());
        s = block(s, &mut message(&blocks));
    }
    match pad_kw {
        Some(kw) => s = shared_block(s, kw),
        None => {
            let rest = len % 64;
            // The padding is the same in every lane: the padded tail of `rest` zero bytes, into
            // which each lane's own bytes are OR-ed.
            let pad = Padded::tail_only(&[0u8; 64][..rest], len);
            // SAFETY: 64 bytes; unaligned load.
            let pad0 = unsafe { _mm512_loadu_si512(pad.block(0).as_ptr().cast()) };
            let mut tails = [[0u8; 64]; 16];
            for (tail, msg) in tails.iter_mut().zip(data) {
                // SAFETY: the mask selects the last `rest` bytes of the message, which start at
                // `64 * body <= len`; masked-off bytes are not read. The store is 64 bytes.
                unsafe {
                    let v = _mm512_maskz_loadu_epi8(
                        (1u64 << rest) - 1,
                        msg.as_ptr().add(64 * body).cast(),
                    );
                    _mm512_storeu_si512(tail.as_mut_ptr().cast(), _mm512_or_si512(v, pad0));
                }
            }
            s = block(s, &mut message(&std::array::from_fn(|l| &tails[l])));
            if pad.blocks() == 2 {
                s = block(s, &mut message(&[pad.block(1); 16]));
            }
        }
    }
    if double {
        // A 32-byte message: the digest, 0x80, zeros, and its length in bits (256).
        let mut w = [_mm512_setzero_si512(); 16];
        w[..8].copy_from_slice(&s);
        w[8] = _mm512_set1_epi32(0x8000_0000u32 as i32);
        w[15] = _mm512_set1_epi32(256);
        s = block(iv, &mut w);
    }
    digests(s)
}

/// The sixteen lanes' digests from the state vectors (word `i` of every lane in `s[i]`).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn digests(s: [__m512i; 8]) -> [Digest; 16] {
    let s = s.map(|v| _mm512_shuffle_epi8(v, bswap_words()));
    // Quarter q of lo[j] holds words 0-3 of lane 4q + j, of hi[j] words 4-7.
    let lo = transpose4([s[0], s[1], s[2], s[3]]);
    let hi = transpose4([s[4], s[5], s[6], s[7]]);
    let mut out = [[0u8; 32]; 16];
    for j in 0..4 {
        // Quarters (lo q0, hi q0, lo q1, hi q1): lanes j and 4 + j; then lanes 8 + j and 12 + j.
        let first =
            _mm512_permutex2var_epi64(lo[j], _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), hi[j]);
        let second =
            _mm512_permutex2var_epi64(lo[j], _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4), hi[j]);
        for (lane, v) in [
            (j, _mm512_castsi512_si256(first)),
            (4 + j, _mm512_extracti64x4_epi64::<1>(first)),
            (8 + j, _mm512_castsi512_si256(second)),
            (12 + j, _mm512_extracti64x4_epi64::<1>(second)),
        ] {
            // SAFETY: each digest is 32 bytes; unaligned store.
            unsafe { _mm256_storeu_si256(out[lane].as_mut_ptr().cast(), v) };
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::xorshift64 as xorshift;
    use crate::sha256::multibuffer;

    #[test]
    fn matches_portable() {
        let Some(c) = Avx512::new() else {
            println!("skipped: this CPU has no AVX-512 F + BW");
            return;
        };
        multibuffer::checks::compress_matches_portable(&c, 1000);
    }

    /// The shared-block path (broadcast `W[t] + K[t]`) against the ordinary one fed that block in
    /// every lane.
    #[test]
    fn shared_block_matches_compress() {
        let Some(c) = Avx512::new() else {
            println!("skipped: this CPU has no AVX-512 F + BW");
            return;
        };
        multibuffer::checks::shared_block_matches_compress(&c);
    }

    #[test]
    fn fused_lanes_match_generic() {
        let Some(c) = Avx512::new() else {
            println!("skipped: this CPU has no AVX-512 F + BW");
            return;
        };
        let mut rng = 0x0123_4567_89ab_cdefu64;
        for len in [
            0usize, 1, 32, 55, 56, 63, 64, 80, 119, 120, 128, 192, 1000, 1024,
        ] {
            let msgs: Vec<Vec<u8>> = (0..16)
                .map(|_| (0..len).map(|_| xorshift(&mut rng) as u8).collect())
                .collect();
            let data: [&[u8]; 16] = core::array::from_fn(|l| &msgs[l][..]);
            // As the batch driver passes it: the shared padding schedule when len is whole blocks.
            let kw = (len % 64 == 0)
                .then(|| crate::sha256::schedule_plus_k(&crate::sha256::pad_block(len as u64)));
            // Also without the shared schedule where one exists (the lanes' own padding).
            for (kw, double) in [(kw.as_ref(), false), (kw.as_ref(), true), (None, true)] {
                let want = multibuffer::hash_lanes_generic(&c, &data, len, kw, double);
                assert_eq!(c.hash_lanes(&data, len, kw, double), want, "len {len}");
            }
        }
    }

    #[test]
    fn abc_in_every_lane() {
        let Some(c) = Avx512::new() else {
            println!("skipped: this CPU has no AVX-512 F + BW");
            return;
        };
        multibuffer::checks::abc_in_every_lane(&c);
    }

    #[test]
    fn batch_matches_portable() {
        let Some(c) = Avx512::new() else {
            println!("skipped: this CPU has no AVX-512 F + BW");
            return;
        };
        multibuffer::checks::batch_matches_portable(&c);
    }
}
