//! SHA-256 with the x86 SHA extensions. `sha256rnds2` has a multi-cycle latency, so two
//! independent messages interleaved (the 2-lane compressor) keep the unit busier than one.

use crate::sha256::{Compressor, Digest, IV, K};
use core::arch::x86_64::*;

/// Proof that the CPU has SHA-NI, SSSE3 and SSE4.1.
#[derive(Clone, Copy, Debug)]
pub struct ShaNi(());

impl ShaNi {
    pub fn new() -> Option<Self> {
        crate::backend::cpu::features().sha_ni.then_some(ShaNi(()))
    }
}

/// (ABEF, CDGH): the register layout the round instructions expect.
#[inline(always)]
unsafe fn load_state(s: &[u32; 8]) -> (__m128i, __m128i) {
    let dcba = _mm_loadu_si128(s.as_ptr() as *const __m128i);
    let hgfe = _mm_loadu_si128(s.as_ptr().add(4) as *const __m128i);
    let cdab = _mm_shuffle_epi32(dcba, 0xB1);
    let efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    (
        _mm_alignr_epi8(cdab, efgh, 8),
        _mm_blend_epi16(efgh, cdab, 0xF0),
    )
}

#[inline(always)]
unsafe fn store_state(abef: __m128i, cdgh: __m128i, s: &mut [u32; 8]) {
    let feba = _mm_shuffle_epi32(abef, 0x1B);
    let dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128(
        s.as_mut_ptr() as *mut __m128i,
        _mm_blend_epi16(feba, dchg, 0xF0),
    );
    _mm_storeu_si128(
        s.as_mut_ptr().add(4) as *mut __m128i,
        _mm_alignr_epi8(dchg, feba, 8),
    );
}

/// Four rounds from `m` = W[4g..4g+4] + K[4g..4g+4].
#[inline(always)]
unsafe fn rounds4(abef: &mut __m128i, cdgh: &mut __m128i, m: __m128i) {
    *cdgh = _mm_sha256rnds2_epu32(*cdgh, *abef, m);
    *abef = _mm_sha256rnds2_epu32(*abef, *cdgh, _mm_shuffle_epi32(m, 0x0E));
}

/// Message words 0..16 of a block in memory, as four vectors (big-endian loads).
#[inline(always)]
unsafe fn load_words(block: *const u8) -> [__m128i; 4] {
    let bswap = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
    std::array::from_fn(|g| {
        _mm_shuffle_epi8(_mm_loadu_si128(block.add(16 * g) as *const __m128i), bswap)
    })
}

/// One block in each of `N` lanes given as message words, instructions interleaved across lanes.
#[inline(always)]
unsafe fn block_n<const N: usize>(
    abef: &mut [__m128i; N],
    cdgh: &mut [__m128i; N],
    words: [[__m128i; 4]; N],
) {
    let (save0, save1) = (*abef, *cdgh);
    // w[j][g % 4] holds message words 4g..4g+3 of lane j.
    let mut w = words;
    for g in 0..16 {
        let k = _mm_loadu_si128(K.as_ptr().add(4 * g) as *const __m128i);
        for j in 0..N {
            if g >= 4 {
                let m1 = _mm_sha256msg1_epu32(w[j][g % 4], w[j][(g + 1) % 4]);
                let t = _mm_add_epi32(m1, _mm_alignr_epi8(w[j][(g + 3) % 4], w[j][(g + 2) % 4], 4));
                w[j][g % 4] = _mm_sha256msg2_epu32(t, w[j][(g + 3) % 4]);
            }
            rounds4(&mut abef[j], &mut cdgh[j], _mm_add_epi32(w[j][g % 4], k));
        }
    }
    for j in 0..N {
        abef[j] = _mm_add_epi32(abef[j], save0[j]);
        cdgh[j] = _mm_add_epi32(cdgh[j], save1[j]);
    }
}

/// A block whose `W + K` is precomputed, in each lane: rounds only.
#[inline(always)]
unsafe fn shared_block_n<const N: usize>(
    abef: &mut [__m128i; N],
    cdgh: &mut [__m128i; N],
    kw: &[u32; 64],
) {
    let (save0, save1) = (*abef, *cdgh);
    for g in 0..16 {
        let m = _mm_loadu_si128(kw.as_ptr().add(4 * g) as *const __m128i);
        for j in 0..N {
            rounds4(&mut abef[j], &mut cdgh[j], m);
        }
    }
    for j in 0..N {
        abef[j] = _mm_add_epi32(abef[j], save0[j]);
        cdgh[j] = _mm_add_epi32(cdgh[j], save1[j]);
    }
}

/// Whole messages of `len` bytes in each of `N` lanes, the state in registers throughout.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
unsafe fn hash_lanes_n<const N: usize>(
    data: [&[u8]; N],
    len: usize,
    pad_kw: Option<&[u32; 64]>,
    double: bool,
) -> [[u8; 32]; N] {
    let (iv0, iv1) = load_state(&IV);
    let (mut abef, mut cdgh) = ([iv0; N], [iv1; N]);
    let body = len / 64;
    for b in 0..body {
        block_n(
            &mut abef,
            &mut cdgh,
            std::array::from_fn(|j| load_words(data[j].as_ptr().add(64 * b))),
        );
    }
    match pad_kw {
        Some(kw) => shared_block_n(&mut abef, &mut cdgh, kw),
        None => {
            let rest = len - 64 * body;
            let blocks = if rest + 9 <= 64 { 1 } else { 2 };
            let mut tail = [[0u8; 128]; N];
            for j in 0..N {
                tail[j][..rest].copy_from_slice(&data[j][64 * body..]);
                tail[j][rest] = 0x80;
                tail[j][64 * blocks - 8..64 * blocks]
                    .copy_from_slice(&(len as u64 * 8).to_be_bytes());
            }
            for b in 0..blocks {
                block_n(
                    &mut abef,
                    &mut cdgh,
                    std::array::from_fn(|j| load_words(tail[j].as_ptr().add(64 * b))),
                );
            }
        }
    }
    let mut s = [[0u32; 8]; N];
    for j in 0..N {
        store_state(abef[j], cdgh[j], &mut s[j]);
    }
    if double {
        // Second block: the digest words, then 0x80 and the 256-bit length.
        let pad_hi = _mm_set_epi32(0, 0, 0, 0x8000_0000u32 as i32);
        let pad_lo = _mm_set_epi32(256, 0, 0, 0);
        let words: [[__m128i; 4]; N] = std::array::from_fn(|j| {
            [
                _mm_loadu_si128(s[j].as_ptr() as *const __m128i),
                _mm_loadu_si128(s[j].as_ptr().add(4) as *const __m128i),
                pad_hi,
                pad_lo,
            ]
        });
        let (mut abef, mut cdgh) = ([iv0; N], [iv1; N]);
        block_n(&mut abef, &mut cdgh, words);
        for j in 0..N {
            store_state(abef[j], cdgh[j], &mut s[j]);
        }
    }
    std::array::from_fn(|j| {
        let mut d = [0u8; 32];
        for (w, c) in d.chunks_exact_mut(4).enumerate() {
            c.copy_from_slice(&s[j][w].to_be_bytes());
        }
        d
    })
}

/// `blocks` consecutive blocks per lane with the state kept in registers.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
unsafe fn run_n<const N: usize>(states: &mut [[u32; 8]; N], data: [*const u8; N], blocks: usize) {
    let mut abef = [_mm_setzero_si128(); N];
    let mut cdgh = [_mm_setzero_si128(); N];
    for j in 0..N {
        (abef[j], cdgh[j]) = load_state(&states[j]);
    }
    for b in 0..blocks {
        block_n(
            &mut abef,
            &mut cdgh,
            std::array::from_fn(|j| load_words(data[j].add(64 * b))),
        );
    }
    for j in 0..N {
        store_state(abef[j], cdgh[j], &mut states[j]);
    }
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
unsafe fn shared_n<const N: usize>(states: &mut [[u32; 8]; N], kw: &[u32; 64]) {
    let mut abef = [_mm_setzero_si128(); N];
    let mut cdgh = [_mm_setzero_si128(); N];
    for j in 0..N {
        (abef[j], cdgh[j]) = load_state(&states[j]);
    }
    shared_block_n(&mut abef, &mut cdgh, kw);
    for j in 0..N {
        store_state(abef[j], cdgh[j], &mut states[j]);
    }
}

fn untranspose<const L: usize>(state: &[[u32; L]; 8]) -> [[u32; 8]; L] {
    std::array::from_fn(|j| std::array::from_fn(|w| state[w][j]))
}

fn transpose<const L: usize>(s: &[[u32; 8]; L], state: &mut [[u32; L]; 8]) {
    for (j, lane) in s.iter().enumerate() {
        for w in 0..8 {
            state[w][j] = lane[w];
        }
    }
}

macro_rules! impl_lanes {
    ($($l:literal),*) => {$(
        impl Compressor<$l> for ShaNi {
            fn compress(&self, state: &mut [[u32; $l]; 8], blocks: &[&[u8; 64]; $l]) {
                let mut s = untranspose(state);
                // SAFETY: `ShaNi` exists only when the features were detected; blocks are 64 bytes.
                unsafe { run_n::<$l>(&mut s, std::array::from_fn(|j| blocks[j].as_ptr()), 1) };
                transpose(&s, state);
            }

            fn compress_run(&self, state: &mut [[u32; $l]; 8], data: &[&[u8]; $l], blocks: usize) {
                assert!(data.iter().all(|d| d.len() >= 64 * blocks));
                let mut s = untranspose(state);
                // SAFETY: as above; every lane holds `blocks` whole blocks (checked).
                unsafe { run_n::<$l>(&mut s, std::array::from_fn(|j| data[j].as_ptr()), blocks) };
                transpose(&s, state);
            }

            fn compress_shared(&self, state: &mut [[u32; $l]; 8], kw: &[u32; 64]) {
                let mut s = untranspose(state);
                // SAFETY: features detected (see `ShaNi::new`).
                unsafe { shared_n::<$l>(&mut s, kw) };
                transpose(&s, state);
            }

            fn hash_lanes(&self, data: &[&[u8]; $l], len: usize, pad_kw: Option<&[u32; 64]>, double: bool) -> [Digest; $l] {
                assert!(data.iter().all(|d| d.len() == len));
                // SAFETY: features detected; every lane holds exactly `len` bytes (checked).
                unsafe { hash_lanes_n::<$l>(*data, len, pad_kw, double) }
            }
        }
    )*};
}
impl_lanes!(1, 2);
