//! 8-lane multi-buffer SHA-256 on AVX2: one message per 32-bit lane, one `__m256i` per state word
//! and per message-schedule word. AVX2 has no vector rotate, so every rotation is two shifts and an
//! OR (folded into the XOR trees of the sigma functions).

use crate::sha256::{Compressor, K};
use core::arch::x86_64::*;

/// Proof that the CPU has AVX2.
#[derive(Clone, Copy, Debug)]
pub struct Avx2(());

impl Avx2 {
    pub fn new() -> Option<Self> {
        crate::backend::cpu::features().avx2.then_some(Avx2(()))
    }
}

impl Compressor<8> for Avx2 {
    fn compress(&self, state: &mut [[u32; 8]; 8], blocks: &[&[u8; 64]; 8]) {
        // SAFETY: `Avx2` exists only when AVX2 was detected.
        unsafe { compress8(state, blocks) }
    }

    fn compress_shared(&self, state: &mut [[u32; 8]; 8], kw: &[u32; 64]) {
        // SAFETY: as above.
        unsafe { compress8_shared(state, kw) }
    }
}

/// `x >> n` on each lane (`$n` a literal; the left shift of the pair is `32 - n`).
macro_rules! shr {
    ($x:expr, $n:literal) => {
        _mm256_srli_epi32::<$n>($x)
    };
}
macro_rules! shl {
    ($x:expr, $n:literal) => {
        _mm256_slli_epi32::<$n>($x)
    };
}

#[inline]
#[target_feature(enable = "avx2")]
fn xor3(a: __m256i, b: __m256i, c: __m256i) -> __m256i {
    _mm256_xor_si256(_mm256_xor_si256(a, b), c)
}

/// Σ0(x) = ror2 ^ ror13 ^ ror22, as the right shifts XOR the left shifts.
#[inline]
#[target_feature(enable = "avx2")]
fn big_sigma0(x: __m256i) -> __m256i {
    _mm256_xor_si256(
        xor3(shr!(x, 2), shr!(x, 13), shr!(x, 22)),
        xor3(shl!(x, 30), shl!(x, 19), shl!(x, 10)),
    )
}

/// Σ1(x) = ror6 ^ ror11 ^ ror25.
#[inline]
#[target_feature(enable = "avx2")]
fn big_sigma1(x: __m256i) -> __m256i {
    _mm256_xor_si256(
        xor3(shr!(x, 6), shr!(x, 11), shr!(x, 25)),
        xor3(shl!(x, 26), shl!(x, 21), shl!(x, 7)),
    )
}

/// σ0(x) = ror7 ^ ror18 ^ shr3.
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma0(x: __m256i) -> __m256i {
    _mm256_xor_si256(
        xor3(shr!(x, 7), shr!(x, 18), shr!(x, 3)),
        _mm256_xor_si256(shl!(x, 25), shl!(x, 14)),
    )
}

/// σ1(x) = ror17 ^ ror19 ^ shr10.
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma1(x: __m256i) -> __m256i {
    _mm256_xor_si256(
        xor3(shr!(x, 17), shr!(x, 19), shr!(x, 10)),
        _mm256_xor_si256(shl!(x, 15), shl!(x, 13)),
    )
}

/// Message words 4g..4g+3 of all eight lanes, as four vectors `W[4g + i]` (lane j in element j).
#[inline]
#[target_feature(enable = "avx2")]
fn load_group(blocks: &[&[u8; 64]; 8], g: usize) -> [__m256i; 4] {
    debug_assert!(g < 4);
    // Reverses the bytes of each 32-bit word (message words are big-endian).
    let bswap = _mm256_set_epi64x(
        0x0c0d_0e0f_0809_0a0b,
        0x0405_0607_0001_0203,
        0x0c0d_0e0f_0809_0a0b,
        0x0405_0607_0001_0203,
    );
    // r[i] holds lane i's four words in its low half and lane i + 4's in its high half, so a 4x4
    // transpose inside each 128-bit half finishes the 8x4 transpose without cross-half shuffles.
    let mut r = [_mm256_setzero_si256(); 4];
    for (i, r) in r.iter_mut().enumerate() {
        // SAFETY: bytes 16g..16g + 16 of 64-byte arrays, g < 4; unaligned loads.
        let (lo, hi) = unsafe {
            (
                _mm_loadu_si128(blocks[i].as_ptr().add(16 * g) as *const __m128i),
                _mm_loadu_si128(blocks[i + 4].as_ptr().add(16 * g) as *const __m128i),
            )
        };
        *r = _mm256_shuffle_epi8(_mm256_set_m128i(hi, lo), bswap);
    }
    let t0 = _mm256_unpacklo_epi32(r[0], r[1]); // a0 b0 a1 b1
    let t1 = _mm256_unpackhi_epi32(r[0], r[1]); // a2 b2 a3 b3
    let t2 = _mm256_unpacklo_epi32(r[2], r[3]); // c0 d0 c1 d1
    let t3 = _mm256_unpackhi_epi32(r[2], r[3]); // c2 d2 c3 d3
    [
        _mm256_unpacklo_epi64(t0, t2), // a0 b0 c0 d0
        _mm256_unpackhi_epi64(t0, t2), // a1 b1 c1 d1
        _mm256_unpacklo_epi64(t1, t3), // a2 b2 c2 d2
        _mm256_unpackhi_epi64(t1, t3), // a3 b3 c3 d3
    ]
}

/// One round. The variables are not moved: round `R` (mod 8) reads `a` from `s[(8 - R) % 8]`, and
/// writes the new `e` over `d` and the new `a` over `h`. `bc` carries `b ^ c` from the previous
/// round (that round's `a ^ b`), so Maj costs two operations.
#[inline]
#[target_feature(enable = "avx2")]
fn round<const R: usize>(s: &mut [__m256i; 8], bc: &mut __m256i, kw: __m256i) {
    // c (s[(10 - R) % 8]) enters only through `bc`.
    let (a, b, d) = (s[(8 - R) % 8], s[(9 - R) % 8], s[(11 - R) % 8]);
    let (e, f, g, h) = (
        s[(12 - R) % 8],
        s[(13 - R) % 8],
        s[(14 - R) % 8],
        s[(15 - R) % 8],
    );
    // Ch(e, f, g) = (e & f) ^ (!e & g)
    let ch = _mm256_xor_si256(_mm256_and_si256(e, f), _mm256_andnot_si256(e, g));
    let t1 = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(h, kw), ch), big_sigma1(e));
    // Maj(a, b, c) = b ^ ((a ^ b) & (b ^ c))
    let ab = _mm256_xor_si256(a, b);
    let maj = _mm256_xor_si256(b, _mm256_and_si256(ab, *bc));
    *bc = ab;
    let t2 = _mm256_add_epi32(big_sigma0(a), maj);
    s[(11 - R) % 8] = _mm256_add_epi32(d, t1);
    s[(15 - R) % 8] = _mm256_add_epi32(t1, t2);
}

/// Round `16i + J` of a 16-round chunk: extends the rolling schedule (`w[J]` becomes `W[16i + J]`)
/// when `SCHED`, then runs the round with role offset `R = J % 8`.
#[inline]
#[target_feature(enable = "avx2")]
fn step<const J: usize, const R: usize, const SCHED: bool>(
    s: &mut [__m256i; 8],
    w: &mut [__m256i; 16],
    bc: &mut __m256i,
    k: &[u32; 16],
) {
    const { assert!(J < 16 && R == J % 8) };
    if SCHED {
        // W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16]
        let x = _mm256_add_epi32(w[J], w[(J + 9) % 16]);
        let y = _mm256_add_epi32(
            small_sigma0(w[(J + 1) % 16]),
            small_sigma1(w[(J + 14) % 16]),
        );
        w[J] = _mm256_add_epi32(x, y);
    }
    let kw = _mm256_add_epi32(w[J], _mm256_set1_epi32(k[J] as i32));
    round::<R>(s, bc, kw);
}

/// Sixteen rounds with round constants `k`.
#[inline]
#[target_feature(enable = "avx2")]
fn rounds16<const SCHED: bool>(
    s: &mut [__m256i; 8],
    w: &mut [__m256i; 16],
    bc: &mut __m256i,
    k: &[u32; 16],
) {
    step::<0, 0, SCHED>(s, w, bc, k);
    step::<1, 1, SCHED>(s, w, bc, k);
    step::<2, 2, SCHED>(s, w, bc, k);
    step::<3, 3, SCHED>(s, w, bc, k);
    step::<4, 4, SCHED>(s, w, bc, k);
    step::<5, 5, SCHED>(s, w, bc, k);
    step::<6, 6, SCHED>(s, w, bc, k);
    step::<7, 7, SCHED>(s, w, bc, k);
    step::<8, 0, SCHED>(s, w, bc, k);
    step::<9, 1, SCHED>(s, w, bc, k);
    step::<10, 2, SCHED>(s, w, bc, k);
    step::<11, 3, SCHED>(s, w, bc, k);
    step::<12, 4, SCHED>(s, w, bc, k);
    step::<13, 5, SCHED>(s, w, bc, k);
    step::<14, 6, SCHED>(s, w, bc, k);
    step::<15, 7, SCHED>(s, w, bc, k);
}

/// The eight state vectors of `state`.
#[inline]
#[target_feature(enable = "avx2")]
fn load_state(state: &[[u32; 8]; 8]) -> [__m256i; 8] {
    // SAFETY: each word is 32 bytes; unaligned loads.
    state.map(|word| unsafe { _mm256_loadu_si256(word.as_ptr() as *const __m256i) })
}

/// The feed-forward: `state = init + s`.
#[inline]
#[target_feature(enable = "avx2")]
fn add_store(state: &mut [[u32; 8]; 8], init: [__m256i; 8], s: [__m256i; 8]) {
    for ((word, v), x) in state.iter_mut().zip(init).zip(s) {
        // SAFETY: `word` is 32 bytes; unaligned store.
        unsafe { _mm256_storeu_si256(word.as_mut_ptr() as *mut __m256i, _mm256_add_epi32(v, x)) };
    }
}

#[target_feature(enable = "avx2")]
fn compress8(state: &mut [[u32; 8]; 8], blocks: &[&[u8; 64]; 8]) {
    let init = load_state(state);
    let mut w = [_mm256_setzero_si256(); 16];
    for g in 0..4 {
        w[4 * g..4 * g + 4].copy_from_slice(&load_group(blocks, g));
    }
    let mut s = init;
    let mut bc = _mm256_xor_si256(s[1], s[2]);
    let (k, _) = K.as_chunks::<16>();
    rounds16::<false>(&mut s, &mut w, &mut bc, &k[0]);
    for k in &k[1..] {
        rounds16::<true>(&mut s, &mut w, &mut bc, k);
    }
    add_store(state, init, s);
}

/// A block the same in every lane (the padding block of equal-length messages), given as
/// `W[t] + K[t]`: no schedule and no transpose, each round adds one broadcast word.
#[target_feature(enable = "avx2")]
fn compress8_shared(state: &mut [[u32; 8]; 8], kw: &[u32; 64]) {
    let init = load_state(state);
    let mut s = init;
    let mut bc = _mm256_xor_si256(s[1], s[2]);
    let (kw, _) = kw.as_chunks::<8>();
    for kw in kw {
        round::<0>(&mut s, &mut bc, _mm256_set1_epi32(kw[0] as i32));
        round::<1>(&mut s, &mut bc, _mm256_set1_epi32(kw[1] as i32));
        round::<2>(&mut s, &mut bc, _mm256_set1_epi32(kw[2] as i32));
        round::<3>(&mut s, &mut bc, _mm256_set1_epi32(kw[3] as i32));
        round::<4>(&mut s, &mut bc, _mm256_set1_epi32(kw[4] as i32));
        round::<5>(&mut s, &mut bc, _mm256_set1_epi32(kw[5] as i32));
        round::<6>(&mut s, &mut bc, _mm256_set1_epi32(kw[6] as i32));
        round::<7>(&mut s, &mut bc, _mm256_set1_epi32(kw[7] as i32));
    }
    add_store(state, init, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sha256::multibuffer;

    #[test]
    fn matches_portable() {
        let Some(c) = Avx2::new() else {
            println!("skipped: this CPU has no AVX2");
            return;
        };
        multibuffer::checks::compress_matches_portable(&c, 2000);
    }

    /// The shared-block path (broadcast `W[t] + K[t]`) against the ordinary one fed that block in
    /// every lane.
    #[test]
    fn shared_block_matches_compress() {
        let Some(c) = Avx2::new() else {
            println!("skipped: this CPU has no AVX2");
            return;
        };
        multibuffer::checks::shared_block_matches_compress(&c);
    }

    #[test]
    fn abc_in_every_lane() {
        let Some(c) = Avx2::new() else {
            println!("skipped: this CPU has no AVX2");
            return;
        };
        multibuffer::checks::abc_in_every_lane(&c);
    }

    #[test]
    fn batch_matches_portable() {
        let Some(c) = Avx2::new() else {
            println!("skipped: this CPU has no AVX2");
            return;
        };
        multibuffer::checks::batch_matches_portable(&c);
    }
}
