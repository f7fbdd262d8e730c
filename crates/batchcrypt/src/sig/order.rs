//! Integers modulo a curve's group order n, for the host's part of the GPU items (u1 = a/d,
//! u2 = b/d): Montgomery products over four 64-bit limbs. The curve crates' scalars are generic
//! and constant-time, and a product costs several times more than here; on a machine with several
//! GPUs these products bound the batch. Nothing here is secret: signatures, hashes and keys are
//! public, so the code may branch on values.

/// Four little-endian 64-bit limbs.
pub type Limbs = [u64; 4];

/// An odd 256-bit modulus n above 2^255 (every order this crate verifies against) and its
/// Montgomery constants for R = 2^256.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Order {
    n: Limbs,
    /// -n^-1 mod 2^64.
    n0: u64,
    /// R mod n: one in Montgomery form.
    r1: Limbs,
    /// R^2 mod n.
    r2: Limbs,
}

const fn from_be(b: &[u8; 32]) -> Limbs {
    let mut out = [0u64; 4];
    let mut i = 0;
    while i < 4 {
        let mut w = 0u64;
        let mut k = 0;
        while k < 8 {
            w = w << 8 | b[32 - 8 * (i + 1) + k] as u64;
            k += 1;
        }
        out[i] = w;
        i += 1;
    }
    out
}

/// `a - b` and the borrow out.
const fn sub_borrow(a: &Limbs, b: &Limbs) -> (Limbs, bool) {
    let mut out = [0u64; 4];
    let mut borrow = false;
    let mut i = 0;
    while i < 4 {
        let (d, b1) = a[i].overflowing_sub(b[i]);
        let (d, b2) = d.overflowing_sub(borrow as u64);
        out[i] = d;
        borrow = b1 | b2;
        i += 1;
    }
    (out, borrow)
}

/// `a + a mod n` for `a < n`.
const fn double_mod(a: &Limbs, n: &Limbs) -> Limbs {
    let mut d = [0u64; 4];
    let mut carry = 0u64;
    let mut i = 0;
    while i < 4 {
        d[i] = a[i] << 1 | carry;
        carry = a[i] >> 63;
        i += 1;
    }
    let (s, borrow) = sub_borrow(&d, n);
    if carry == 1 || !borrow {
        s
    } else {
        d
    }
}

impl Order {
    /// The constants of `n` (big-endian); n must be odd and above 2^255.
    pub(crate) const fn new(n_be: &[u8; 32]) -> Order {
        let n = from_be(n_be);
        assert!(n[0] & 1 == 1 && n[3] >> 63 == 1, "n odd and above 2^255");
        // Newton's iteration doubles the correct low bits of n^-1 mod 2^64 each step: 1, 2, ... 64.
        let mut inv = 1u64;
        let mut i = 0;
        while i < 6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(n[0].wrapping_mul(inv)));
            i += 1;
        }
        // R mod n = 2^256 - n, as n > 2^255; then R^2 mod n by 256 doublings.
        let (r1, _) = sub_borrow(&[0; 4], &n);
        let mut r2 = r1;
        let mut k = 0;
        while k < 256 {
            r2 = double_mod(&r2, &n);
            k += 1;
        }
        Order {
            n,
            n0: inv.wrapping_neg(),
            r1,
            r2,
        }
    }

    /// A big-endian 256-bit integer reduced mod n (one subtraction at most: n > 2^255).
    pub(crate) fn reduce_be(&self, b: &[u8; 32]) -> Limbs {
        let a = from_be(b);
        match sub_borrow(&a, &self.n) {
            (d, false) => d,
            (_, true) => a,
        }
    }

    /// `-a mod n` for `a < n`.
    pub(crate) fn neg(&self, a: &Limbs) -> Limbs {
        if *a == [0; 4] {
            return *a;
        }
        sub_borrow(&self.n, a).0
    }

    /// The Montgomery product `a b / R mod n` of `a, b < n`.
    #[inline]
    pub(crate) fn mul(&self, a: &Limbs, b: &Limbs) -> Limbs {
        let n = &self.n;
        // Coarsely integrated operand scanning: after each row t < 2n, in five limbs.
        let mut t = [0u64; 5];
        for &bi in b {
            let mut c = 0u128;
            for j in 0..4 {
                c += t[j] as u128 + a[j] as u128 * bi as u128;
                t[j] = c as u64;
                c >>= 64;
            }
            let top = t[4] as u128 + c;
            let m = t[0].wrapping_mul(self.n0);
            let mut c = (t[0] as u128 + m as u128 * n[0] as u128) >> 64;
            for j in 1..4 {
                c += t[j] as u128 + m as u128 * n[j] as u128;
                t[j - 1] = c as u64;
                c >>= 64;
            }
            let top = top + c;
            t[3] = top as u64;
            t[4] = (top >> 64) as u64;
        }
        let r = [t[0], t[1], t[2], t[3]];
        match sub_borrow(&r, n) {
            (d, false) => d,
            (d, true) if t[4] == 1 => d,
            _ => r,
        }
    }

    /// `a R mod n`: `a < n` in Montgomery form.
    #[inline]
    pub(crate) fn to_mont(&self, a: &Limbs) -> Limbs {
        self.mul(a, &self.r2)
    }

    /// One in Montgomery form.
    pub(crate) fn one(&self) -> Limbs {
        self.r1
    }

    /// The inverse of a non-zero `a` in Montgomery form, in Montgomery form: a^(n-2) (Fermat),
    /// once per block of items.
    pub(crate) fn invert_mont(&self, a: &Limbs) -> Limbs {
        let (e, _) = sub_borrow(&self.n, &[2, 0, 0, 0]);
        let mut acc = self.r1;
        for i in (0..256).rev() {
            acc = self.mul(&acc, &acc);
            if e[i / 64] >> (i % 64) & 1 == 1 {
                acc = self.mul(&acc, a);
            }
        }
        acc
    }

    /// The big-endian bytes of `a`.
    pub(crate) fn to_be(a: &Limbs) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, w) in a.iter().enumerate() {
            out[32 - 8 * (i + 1)..32 - 8 * i].copy_from_slice(&w.to_be_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elliptic_curve::bigint::U256;
    use elliptic_curve::consts::U32;
    use elliptic_curve::ff::Field;
    use elliptic_curve::generic_array::GenericArray;
    use elliptic_curve::ops::Reduce;
    use elliptic_curve::PrimeField;

    /// Products, inverses, reductions and negations against a curve crate's scalar field, on
    /// random values and the edges (0, 1, n - 1, and integers from n up to 2^256 - 1).
    fn against<S>(n_be: [u8; 32])
    where
        S: PrimeField<Repr = GenericArray<u8, U32>> + Reduce<U256, Bytes = GenericArray<u8, U32>>,
    {
        use rand::{Rng, SeedableRng};
        let o = Order::new(&n_be);
        let scalar = |b: &[u8; 32]| <S as Reduce<U256>>::reduce_bytes(&(*b).into());
        let be = |s: S| -> [u8; 32] { s.to_repr().into() };
        let n_minus = |k: u64| Order::to_be(&sub_borrow(&o.n, &[k, 0, 0, 0]).0);
        let n_plus = |k: u64| {
            let mut v = o.n;
            v[0] += k;
            Order::to_be(&v)
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut values: Vec<[u8; 32]> = vec![
            [0; 32],
            Order::to_be(&[1, 0, 0, 0]),
            n_minus(1),
            n_be,
            n_plus(1),
            [0xff; 32],
        ];
        values.extend((0..200).map(|_| rng.gen::<[u8; 32]>()));
        for x in &values {
            let a = o.reduce_be(x);
            assert_eq!(Order::to_be(&a), be(scalar(x)), "reduce {x:02x?}");
            assert_eq!(Order::to_be(&o.neg(&a)), be(-scalar(x)));
            let am = o.to_mont(&a);
            assert_eq!(o.mul(&am, &[1, 0, 0, 0]), a, "out of Montgomery form");
            for y in values.iter().step_by(7) {
                let b = o.reduce_be(y);
                assert_eq!(
                    Order::to_be(&o.mul(&am, &b)),
                    be(scalar(x) * scalar(y)),
                    "{x:02x?} * {y:02x?}"
                );
            }
            if a != [0; 4] {
                let inv = o.mul(&o.invert_mont(&am), &[1, 0, 0, 0]);
                assert_eq!(
                    Order::to_be(&inv),
                    be(Option::<S>::from(Field::invert(&scalar(x))).unwrap())
                );
            }
        }
        assert_eq!(o.mul(&o.one(), &[1, 0, 0, 0]), [1, 0, 0, 0]);
    }

    #[test]
    fn secp256k1_order() {
        against::<k256::Scalar>(crate::secp256k1::parse::N);
    }

    #[test]
    fn p256_order() {
        against::<::p256::Scalar>(crate::p256::N);
    }

    #[test]
    fn sm2_order() {
        against::<::sm2::Scalar>(crate::sm2::N);
    }
}
