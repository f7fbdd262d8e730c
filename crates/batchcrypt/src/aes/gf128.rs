//! GF(2^128) as GCM defines it (SP 800-38D §6.3): a block's first bit is the coefficient of x^0,
//! reduction by x^128 + x^7 + x^2 + x + 1. An element is held as the `u128` whose big-endian bytes
//! are the block, so the most significant bit is x^0 and multiplying by x is a right shift.
//!
//! Products use the carry-less multiply instruction (PCLMULQDQ) where the CPU has it, directly
//! on the reflected representation; elsewhere they go through the `ghash` crate (GHASH of the
//! single block `a` under key `b` is exactly `a·b`), whose set-up per key would cost more than the
//! product itself. The bit-serial `mul_x` builds the tables the GPU kernel multiplies with.

use ghash::universal_hash::{KeyInit, UniversalHash};
use ghash::GHash;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gf128(pub u128);

/// x^128 reduced: x^7 + x^2 + x + 1, in the reflected order (0xE1 in the top byte).
const R: u128 = 0xE1 << 120;

#[cfg(target_arch = "x86_64")]
mod clmul {
    use std::arch::x86_64::{__m128i, _mm_clmulepi64_si128, _mm_set_epi64x};

    #[target_feature(enable = "pclmulqdq")]
    fn clmul64(a: u64, b: u64) -> u128 {
        let r = _mm_clmulepi64_si128(_mm_set_epi64x(0, a as i64), _mm_set_epi64x(0, b as i64), 0);
        // SAFETY: both are 128 bits of plain data; lane 0 is the low half on x86.
        unsafe { std::mem::transmute::<__m128i, u128>(r) }
    }

    /// The GCM product of two reflected elements. The carry-less product of bit-reversed
    /// operands is the bit-reversed product shifted right by one (see [`reduce`]).
    #[target_feature(enable = "pclmulqdq")]
    pub(super) fn mul(a: u128, b: u128) -> u128 {
        let (a1, a0, b1, b0) = ((a >> 64) as u64, a as u64, (b >> 64) as u64, b as u64);
        let (lo, hi) = (clmul64(a0, b0), clmul64(a1, b1));
        let mid = clmul64(a0, b1) ^ clmul64(a1, b0);
        reduce(lo ^ (mid << 64), hi ^ (mid >> 64))
    }

    /// The square: the cross terms of a carry-less square cancel, so two products.
    #[target_feature(enable = "pclmulqdq")]
    pub(super) fn square(a: u128) -> u128 {
        reduce(
            clmul64(a as u64, a as u64),
            clmul64((a >> 64) as u64, (a >> 64) as u64),
        )
    }

    /// Reduces the 256-bit carry-less product `c_hi:c_lo` of two reflected elements. After the
    /// shift by one its low half holds the reversed high part H of the product, reduced by
    /// x^128 = x^7 + x^2 + x + 1: reversed, H·(1 + x + x^2 + x^7) is h ⊕ h>>1 ⊕ h>>2 ⊕ h>>7,
    /// and the bits that fall off the end (o) are folded back the same way.
    #[inline(always)]
    fn reduce(c_lo: u128, c_hi: u128) -> u128 {
        let (d_lo, d_hi) = (c_lo << 1, (c_hi << 1) | (c_lo >> 127));
        let h = d_lo;
        let o = (h << 127) ^ (h << 126) ^ (h << 121);
        d_hi ^ h ^ (h >> 1) ^ (h >> 2) ^ (h >> 7) ^ o ^ (o >> 1) ^ (o >> 2) ^ (o >> 7)
    }
}

impl Gf128 {
    pub const ONE: Gf128 = Gf128(1 << 127);

    pub fn from_block(b: &[u8; 16]) -> Gf128 {
        Gf128(u128::from_be_bytes(*b))
    }

    pub fn to_block(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// `self · x`.
    pub fn mul_x(self) -> Gf128 {
        Gf128((self.0 >> 1) ^ if self.0 & 1 == 1 { R } else { 0 })
    }

    /// `self^e` by square-and-multiply.
    pub fn pow(self, mut e: u128) -> Gf128 {
        let (mut acc, mut base) = (Gf128::ONE, self);
        while e != 0 {
            if e & 1 == 1 {
                acc = acc * base;
            }
            base = base.square();
            e >>= 1;
        }
        acc
    }

    pub fn square(self) -> Gf128 {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("pclmulqdq") {
            // SAFETY: the instruction was just detected.
            return Gf128(unsafe { clmul::square(self.0) });
        }
        self * self
    }

    /// The multiplicative inverse, `self^(2^128 - 2)` = `(self^(2^127 - 1))^2`; zero maps to
    /// zero. Itoh–Tsujii: `a_k = self^(2^k - 1)` gives `a_2k = a_k^(2^k) · a_k` and
    /// `a_(k+1) = a_k^2 · self`, so k = 1, 2, 3, 6, 7, … 126, 127 takes 12 products and 127
    /// squarings where the plain power takes 126 and 127 (a GCM call on all cores waits for it).
    pub fn inv(self) -> Gf128 {
        let (mut a, mut k) = (self, 1);
        while k < 127 {
            let mut t = a;
            for _ in 0..k {
                t = t.square();
            }
            a = t * a;
            a = a.square() * self;
            k = 2 * k + 1;
        }
        a.square()
    }
}

impl std::ops::Mul for Gf128 {
    type Output = Gf128;

    fn mul(self, b: Gf128) -> Gf128 {
        if self.0 == 0 || b.0 == 0 {
            return Gf128(0);
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("pclmulqdq") {
            // SAFETY: the instruction was just detected.
            return Gf128(unsafe { clmul::mul(self.0, b.0) });
        }
        let mut g = GHash::new(&b.to_block().into());
        g.update(&[self.to_block().into()]);
        Gf128::from_block(&g.finalize().into())
    }
}

impl std::ops::BitXor for Gf128 {
    type Output = Gf128;
    fn bitxor(self, o: Gf128) -> Gf128 {
        Gf128(self.0 ^ o.0)
    }
}

impl std::ops::BitXorAssign for Gf128 {
    fn bitxor_assign(&mut self, o: Gf128) {
        self.0 ^= o.0;
    }
}

/// GHASH of `data` (zero-padded to whole blocks) under `h`: Σ X_i · h^(n-i+1).
pub fn ghash(h: Gf128, data: &[u8]) -> Gf128 {
    let mut g = GHash::new(&h.to_block().into());
    g.update_padded(data);
    Gf128::from_block(&g.finalize().into())
}

/// Shoup's 8-bit table for multiplying by a fixed `k`: `m[b] = b·k` for each byte value `b` in a
/// block's first byte. A product takes the other factor a byte at a time, from the last: multiply
/// by x^8 (a shift, plus the reduction of the byte shifted out) and add the next byte's entry.
pub fn shoup_table(k: Gf128) -> [Gf128; 256] {
    let mut m = [Gf128(0); 256];
    let mut bit = k;
    // The first byte's most significant bit is x^0: 0x80 ↦ k, 0x40 ↦ k·x, … 0x01 ↦ k·x^7.
    for j in 0..8 {
        let b = 0x80usize >> j;
        m[b] = bit;
        bit = bit.mul_x();
    }
    for b in 1..256usize {
        let low = b & b.wrapping_neg();
        if low != b {
            m[b] = m[low] ^ m[b ^ low];
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-serial product straight from SP 800-38D Algorithm 1.
    fn mul_ref(x: Gf128, y: Gf128) -> Gf128 {
        let (mut z, mut v) = (Gf128(0), y);
        for i in 0..128 {
            if (x.0 >> (127 - i)) & 1 == 1 {
                z ^= v;
            }
            v = v.mul_x();
        }
        z
    }

    /// What the byte `v` shifted out past x^127 adds when an element is multiplied by x^8, as the
    /// top 16 bits: bit j of `v` is x^(7-j)·x^128, and x^128 = 1 + x + x^2 + x^7 (0xE1 in this
    /// bit order), so it is `v`·0xE1 carry-less, shifted left by one. The GPU kernel computes the
    /// same.
    fn reduce8(v: u8) -> u16 {
        let v = v as u16;
        (v ^ (v << 5) ^ (v << 6) ^ (v << 7)) << 1
    }

    /// A product as the GPU kernel forms it.
    fn mul_shoup(x: Gf128, m: &[Gf128; 256]) -> Gf128 {
        let b = x.to_block();
        let mut z = m[b[15] as usize];
        for i in (0..15).rev() {
            let out = z.0 as u8;
            z = Gf128((z.0 >> 8) ^ ((reduce8(out) as u128) << 112)) ^ m[b[i] as usize];
        }
        z
    }

    #[test]
    fn products_agree() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let edges = [0u128, 1, 1 << 127, u128::MAX, R];
        let mut vals: Vec<u128> = (0..40).map(|_| rng.gen()).collect();
        vals.extend(edges);
        for &a in &vals {
            let m = shoup_table(Gf128(a));
            for &b in &vals {
                let want = mul_ref(Gf128(a), Gf128(b));
                assert_eq!(Gf128(a) * Gf128(b), want);
                // The crate's path, which machines without the instruction take.
                let mut g = GHash::new(&Gf128(b).to_block().into());
                g.update(&[Gf128(a).to_block().into()]);
                assert_eq!(Gf128::from_block(&g.finalize().into()), want);
                assert_eq!(mul_shoup(Gf128(b), &m), want);
            }
        }
    }

    #[test]
    fn inverse_and_powers() {
        let h = Gf128(0x66e94bd4ef8a2c3b884cfa59ca342b2e);
        assert_eq!(h * h.inv(), Gf128::ONE);
        assert_eq!(h.inv(), h.pow(u128::MAX - 1));
        assert_eq!(h.square(), h * h);
        assert_eq!(Gf128::ONE.inv(), Gf128::ONE);
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for _ in 0..200 {
            let a = Gf128(rng.gen::<u128>() | 1);
            assert_eq!(a * a.inv(), Gf128::ONE, "{a:?}");
            assert_eq!(a.square(), a * a);
        }
        assert_eq!(h.pow(5), h * h * h * h * h);
        assert_eq!(Gf128(0).inv(), Gf128(0));
    }
}
