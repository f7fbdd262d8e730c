//! Integers modulo a curve's group order n, for the host's part of the GPU items: reductions and
//! negations (ECDSA's inversion of s runs on the device). Nothing here is secret: signatures,
//! hashes and keys are public, so the code may branch on values.

/// Four little-endian 64-bit limbs.
pub type Limbs = [u64; 4];

/// An odd 256-bit modulus n above 2^255 (every order this crate verifies against).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Order {
    n: Limbs,
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

impl Order {
    /// The order `n` (big-endian); n must be odd and above 2^255.
    pub(crate) const fn new(n_be: &[u8; 32]) -> Order {
        let n = from_be(n_be);
        assert!(n[0] & 1 == 1 && n[3] >> 63 == 1, "n odd and above 2^255");
        Order { n }
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
    use elliptic_curve::generic_array::GenericArray;
    use elliptic_curve::ops::Reduce;
    use elliptic_curve::PrimeField;

    /// Reductions and negations against a curve crate's scalar field, on random values and the
    /// edges (0, 1, n - 1, and integers from n up to 2^256 - 1).
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
        }
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
