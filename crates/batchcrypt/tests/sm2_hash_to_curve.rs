//! Hash-to-curve (RFC 9380, random-oracle `hash_to_curve` with `expand_message_xmd` and the
//! simplified SWU map) checked against a straight-line big-integer transcription of the RFC.
//! The transcription is generic over the curve and is first checked on P-256 against the `p256`
//! crate's RFC 9380 suite P256_XMD:SHA-256_SSWU_RO_ (itself tested on the RFC's vectors); then,
//! instantiated for SM2 with SM3 and Z = -9, it is the reference for our CPU path and for the
//! kernel code (run on the CPU under feature `emulation`).

use batchcrypt::sm2::{cpu, DEFAULT_DST};
use num_bigint::BigUint;
use sm2::elliptic_curve::hash2curve::{ExpandMsg, ExpandMsgXmd, Expander};
use sm2::elliptic_curve::sec1::ToEncodedPoint;

mod common;

/// A short Weierstrass curve y^2 = x^3 + a x + b over F_p with p = 3 mod 4, and its SSWU Z.
struct Curve {
    p: BigUint,
    a: BigUint,
    b: BigUint,
    z: BigUint,
}

impl Curve {
    fn new(p: &str, a_minus: u32, b: &str, z_minus: u32) -> Self {
        let p = BigUint::parse_bytes(p.as_bytes(), 16).unwrap();
        let a = &p - a_minus;
        let z = &p - z_minus;
        Curve {
            b: BigUint::parse_bytes(b.as_bytes(), 16).unwrap(),
            p,
            a,
            z,
        }
    }
    fn add(&self, x: &BigUint, y: &BigUint) -> BigUint {
        (x + y) % &self.p
    }
    fn sub(&self, x: &BigUint, y: &BigUint) -> BigUint {
        (x + &self.p - y % &self.p) % &self.p
    }
    fn mul(&self, x: &BigUint, y: &BigUint) -> BigUint {
        (x * y) % &self.p
    }
    fn inv0(&self, x: &BigUint) -> BigUint {
        x.modpow(&(&self.p - 2u32), &self.p)
    }
    fn is_square(&self, x: &BigUint) -> bool {
        let e = x.modpow(&((&self.p - 1u32) >> 1), &self.p);
        e == BigUint::from(0u32) || e == BigUint::from(1u32)
    }
    fn sqrt(&self, x: &BigUint) -> BigUint {
        x.modpow(&((&self.p + 1u32) >> 2), &self.p)
    }
    fn sgn0(x: &BigUint) -> bool {
        x.bit(0)
    }
    fn g(&self, x: &BigUint) -> BigUint {
        self.add(&self.mul(&self.add(&self.mul(x, x), &self.a), x), &self.b)
    }

    /// RFC 9380 §6.6.2, the straight-line description.
    fn map_to_curve(&self, u: &BigUint) -> (BigUint, BigUint) {
        let u2 = self.mul(u, u);
        let zu2 = self.mul(&self.z, &u2);
        let tv1 = self.inv0(&self.add(&self.mul(&zu2, &zu2), &zu2));
        let minus_b_over_a = self.mul(
            &self.sub(&BigUint::from(0u32), &self.b),
            &self.inv0(&self.a),
        );
        let mut x1 = self.mul(&minus_b_over_a, &self.add(&BigUint::from(1u32), &tv1));
        if tv1 == BigUint::from(0u32) {
            x1 = self.mul(&self.b, &self.inv0(&self.mul(&self.z, &self.a)));
        }
        let gx1 = self.g(&x1);
        let x2 = self.mul(&zu2, &x1);
        let (x, mut y) = if self.is_square(&gx1) {
            (x1, self.sqrt(&gx1))
        } else {
            let gx2 = self.g(&x2);
            (x2, self.sqrt(&gx2))
        };
        assert_eq!(self.mul(&y, &y), self.g(&x));
        if Self::sgn0(u) != Self::sgn0(&y) {
            y = self.sub(&BigUint::from(0u32), &y);
        }
        (x, y)
    }

    /// Affine addition of two distinct-x points (the two maps of random inputs never collide).
    fn add_points(&self, p: &(BigUint, BigUint), q: &(BigUint, BigUint)) -> (BigUint, BigUint) {
        assert_ne!(p.0, q.0);
        let l = self.mul(&self.sub(&q.1, &p.1), &self.inv0(&self.sub(&q.0, &p.0)));
        let x = self.sub(&self.sub(&self.mul(&l, &l), &p.0), &q.0);
        let y = self.sub(&self.mul(&l, &self.sub(&p.0, &x)), &p.1);
        (x, y)
    }

    /// hash_to_curve with the 96 uniform bytes given: two 48-byte field elements, two maps, a sum.
    fn hash_to_curve(&self, uniform: &[u8; 96]) -> [u8; 33] {
        let u0 = BigUint::from_bytes_be(&uniform[..48]) % &self.p;
        let u1 = BigUint::from_bytes_be(&uniform[48..]) % &self.p;
        let (x, y) = self.add_points(&self.map_to_curve(&u0), &self.map_to_curve(&u1));
        let mut out = [0u8; 33];
        out[0] = 2 | y.bit(0) as u8;
        let xb = x.to_bytes_be();
        out[33 - xb.len()..].copy_from_slice(&xb);
        out
    }
}

/// expand_message_xmd(msg, dst, 96) with the `elliptic-curve` crate's implementation.
macro_rules! expand {
    ($hash:ty, $msg:expr, $dst:expr) => {{
        let mut out = [0u8; 96];
        let dsts = [&$dst[..]];
        ExpandMsgXmd::<$hash>::expand_message(&[&$msg[..]], &dsts, 96)
            .unwrap()
            .fill_bytes(&mut out);
        out
    }};
}

fn sm2_curve() -> Curve {
    Curve::new(
        "FFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFFFFF",
        3,
        "28E9FA9E9D9F5E344D5A9E4BCF6509A7F39789F515AB8F92DDBCBD414D940E93",
        9,
    )
}

fn messages() -> Vec<Vec<u8>> {
    let mut rng = common::Rng(2024);
    let mut v: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"abc".to_vec(),
        b"abcdef0123456789".to_vec(),
        vec![b'a'; 512],
    ];
    v.extend((0..60).map(|i| rng.bytes(i * 3)));
    v
}

#[test]
fn transcription_matches_p256_suite() {
    use p256::elliptic_curve::hash2curve::GroupDigest;
    let p256 = Curve::new(
        "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff",
        3,
        "5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b",
        10,
    );
    let dst = b"QUUX-V01-CS02-with-P256_XMD:SHA-256_SSWU_RO_";
    for m in messages() {
        let want = p256::NistP256::hash_from_bytes::<
            p256::elliptic_curve::hash2curve::ExpandMsgXmd<sha2::Sha256>,
        >(&[&m], &[dst])
        .unwrap();
        let want: [u8; 33] = want
            .to_affine()
            .to_encoded_point(true)
            .as_bytes()
            .try_into()
            .unwrap();
        assert_eq!(
            p256.hash_to_curve(&expand!(sha2::Sha256, m, dst)),
            want,
            "message {m:?}"
        );
    }
}

#[test]
fn cpu_path_matches_transcription() {
    let sm2c = sm2_curve();
    let long_dst = vec![b'D'; 300];
    for dst in [DEFAULT_DST, b"X", &long_dst[..]] {
        let dst = batchcrypt::sm2::effective_dst(dst);
        for m in messages() {
            let want = sm2c.hash_to_curve(&expand!(sm3::Sm3, m, dst));
            let got = cpu::compress(&cpu::hash_to_curve(&m, &dst));
            assert_eq!(got, want, "message {m:?}");
        }
    }
}

#[test]
fn oversize_tag_is_hashed_as_rfc_9380_says() {
    // The `expand_message_xmd` of the `elliptic-curve` crate applies §5.3.3 itself: the same
    // bytes as our pre-hashed tag.
    let dst = vec![b'D'; 300];
    assert_eq!(
        expand!(sm3::Sm3, b"m", dst),
        expand!(sm3::Sm3, b"m", batchcrypt::sm2::effective_dst(&dst))
    );
}

#[cfg(feature = "emulation")]
#[test]
fn kernel_matches_transcription() {
    use batchcrypt::emulation::sm2 as kern;
    let sm2c = sm2_curve();
    let msgs = messages();
    let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
    let one = [1u32, 0, 0, 0, 0, 0, 0, 0];
    for (m, got) in msgs.iter().zip(kern::hash_mul(&one, &refs, DEFAULT_DST)) {
        let want = sm2c.hash_to_curve(&expand!(sm3::Sm3, m, DEFAULT_DST));
        let mut x = [0u8; 32];
        for (i, l) in got[..8].iter().enumerate() {
            x[28 - 4 * i..32 - 4 * i].copy_from_slice(&l.to_be_bytes());
        }
        assert_eq!(got[8] & 2, 2, "valid");
        assert_eq!(
            [&[2 | (got[8] & 1) as u8][..], &x].concat(),
            want.to_vec(),
            "message {m:?}"
        );
    }
}
