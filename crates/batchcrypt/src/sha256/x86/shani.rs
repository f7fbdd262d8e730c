//! SHA-256 with the x86 SHA extensions. `sha256rnds2` has a multi-cycle latency, so two
//! independent messages interleaved (the 2-lane compressor) keep the unit busier than one.

use crate::sha256::{Compressor, K};
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
    (_mm_alignr_epi8(cdab, efgh, 8), _mm_blend_epi16(efgh, cdab, 0xF0))
}

#[inline(always)]
unsafe fn store_state(abef: __m128i, cdgh: __m128i, s: &mut [u32; 8]) {
    let feba = _mm_shuffle_epi32(abef, 0x1B);
    let dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128(s.as_mut_ptr() as *mut __m128i, _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128(s.as_mut_ptr().add(4) as *mut __m128i, _mm_alignr_epi8(dchg, feba, 8));
}

/// Compresses `N` independent (state, block) pairs with their instructions interleaved.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
unsafe fn compress_n<const N: usize>(states: &mut [[u32; 8]; N], blocks: &[&[u8; 64]; N]) {
    let bswap = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
    let mut abef = [_mm_setzero_si128(); N];
    let mut cdgh = [_mm_setzero_si128(); N];
    for j in 0..N {
        (abef[j], cdgh[j]) = load_state(&states[j]);
    }
    let (save0, save1) = (abef, cdgh);
    // w[j][g % 4] holds message words 4g..4g+3 of lane j.
    let mut w = [[_mm_setzero_si128(); 4]; N];
    for g in 0..16 {
        let k = _mm_loadu_si128(K.as_ptr().add(4 * g) as *const __m128i);
        for j in 0..N {
            let x = if g < 4 {
                _mm_shuffle_epi8(_mm_loadu_si128(blocks[j].as_ptr().add(16 * g) as *const __m128i), bswap)
            } else {
                let m1 = _mm_sha256msg1_epu32(w[j][g % 4], w[j][(g + 1) % 4]);
                let t = _mm_add_epi32(m1, _mm_alignr_epi8(w[j][(g + 3) % 4], w[j][(g + 2) % 4], 4));
                _mm_sha256msg2_epu32(t, w[j][(g + 3) % 4])
            };
            w[j][g % 4] = x;
            let m = _mm_add_epi32(x, k);
            cdgh[j] = _mm_sha256rnds2_epu32(cdgh[j], abef[j], m);
            abef[j] = _mm_sha256rnds2_epu32(abef[j], cdgh[j], _mm_shuffle_epi32(m, 0x0E));
        }
    }
    for j in 0..N {
        store_state(_mm_add_epi32(abef[j], save0[j]), _mm_add_epi32(cdgh[j], save1[j]), &mut states[j]);
    }
}

macro_rules! impl_lanes {
    ($($l:literal),*) => {$(
        impl Compressor<$l> for ShaNi {
            fn compress(&self, state: &mut [[u32; $l]; 8], blocks: &[&[u8; 64]; $l]) {
                let mut s: [[u32; 8]; $l] = std::array::from_fn(|j| std::array::from_fn(|w| state[w][j]));
                // SAFETY: `ShaNi` exists only when the features were detected.
                unsafe { compress_n::<$l>(&mut s, blocks) };
                for j in 0..$l {
                    for w in 0..8 {
                        state[w][j] = s[j][w];
                    }
                }
            }
        }
    )*};
}
impl_lanes!(1, 2);
