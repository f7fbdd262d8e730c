//! The CPU backend: RustCrypto's `sm2` group arithmetic, parallel over the batch; hash-to-curve
//! (RFC 9380) with `elliptic-curve`'s `expand_message_xmd` over SM3 and the simplified SWU map in
//! `crypto-bigint` Montgomery arithmetic, the square root left to SEC1 decompression.

use super::verify::Item;
use super::{Compressed, Point};
use crate::backend::cpu::{par_map, par_map_into};
use crate::sig::{Reason, Sec1Key};
use sm2::elliptic_curve::bigint::{impl_modulus, Encoding, NonZero, U256, U384};
use sm2::elliptic_curve::group::{Group, GroupEncoding};
use sm2::elliptic_curve::hash2curve::{ExpandMsg, ExpandMsgXmd, Expander};
use sm2::elliptic_curve::ops::{LinearCombination, Reduce};
use sm2::elliptic_curve::point::AffineCoordinates;
use sm2::elliptic_curve::point::DecompressPoint;
use sm2::elliptic_curve::sec1::{FromEncodedPoint, ToEncodedPoint};
use sm2::elliptic_curve::subtle::Choice;
use sm2::elliptic_curve::PrimeField;
use sm2::{AffinePoint, EncodedPoint, ProjectivePoint, Scalar};

/// Items per parallel piece: a scalar multiplication is tens of microseconds.
const PIECE: usize = 64;

fn scalar(k: &[u8; 32]) -> Scalar {
    // Range-checked by `check_scalars`.
    Scalar::from_repr((*k).into()).unwrap()
}

fn encode(p: &ProjectivePoint) -> Point {
    let e = p.to_affine().to_encoded_point(false);
    let mut out = [0u8; 64];
    if let (Some(x), Some(y)) = (e.x(), e.y()) {
        out[..32].copy_from_slice(x);
        out[32..].copy_from_slice(y);
    }
    out
}

/// SEC1 compressed, the point at infinity as 33 zero bytes.
pub fn compress(p: &ProjectivePoint) -> Compressed {
    let e = p.to_affine().to_bytes();
    let mut out = [0u8; 33];
    if e.len() == 33 {
        out.copy_from_slice(&e);
    }
    out
}

/// The point with these coordinates, if it is on the curve.
fn decode(p: &Point) -> Option<ProjectivePoint> {
    let e = EncodedPoint::from_affine_coordinates(p[..32].into(), p[32..].into(), false);
    Option::<AffinePoint>::from(AffinePoint::from_encoded_point(&e)).map(ProjectivePoint::from)
}

/// The point of a compressed encoding, if it is one (prefix 02/03, x < p, on the curve).
pub fn decompress(c: &Compressed) -> Option<ProjectivePoint> {
    if c[0] != 2 && c[0] != 3 {
        return None;
    }
    let p = AffinePoint::decompress(c[1..].into(), Choice::from(c[0] & 1));
    Option::<AffinePoint>::from(p).map(ProjectivePoint::from)
}

/// The point of a SEC1 key's coordinates, if it is on the curve.
pub fn key_point(key: &Sec1Key) -> Option<ProjectivePoint> {
    match *key {
        Sec1Key::Compressed { x, odd } => {
            let mut c = [0u8; 33];
            c[0] = 2 | odd as u8;
            c[1..].copy_from_slice(&x);
            decompress(&c)
        }
        Sec1Key::Uncompressed { x, y } => {
            let mut p = [0u8; 64];
            p[..32].copy_from_slice(&x);
            p[32..].copy_from_slice(&y);
            decode(&p)
        }
    }
}

/// The affine `x || y` of a key on the curve (a square root for a compressed one).
pub fn key_xy(key: &Sec1Key) -> Option<Point> {
    key_point(key).map(|p| encode(&p))
}

/// One SM2 verification item: `R = u1·G + u2·key` (Shamir's trick in the crate's
/// `lincomb`), finite, with `x(R) mod n == r`.
pub fn verify_item(it: &Item) -> Result<(), Reason> {
    let q = key_point(&it.key).ok_or(Reason::PublicKeyNotOnCurve)?;
    let r = ProjectivePoint::lincomb(
        &ProjectivePoint::GENERATOR,
        &scalar(&it.u1),
        &q,
        &scalar(&it.u2),
    );
    if bool::from(r.is_identity()) {
        return Err(Reason::SignatureMismatch);
    }
    let x = <Scalar as Reduce<U256>>::reduce_bytes(&r.to_affine().x());
    if x == scalar(&it.r) {
        Ok(())
    } else {
        Err(Reason::SignatureMismatch)
    }
}

/// `k·G` for each scalar.
pub fn mul_base(scalars: &[[u8; 32]], threads: usize) -> Vec<Point> {
    let mut out = crate::backend::cpu::zeroed_arrays::<64>(scalars.len());
    mul_base_into(scalars, threads, &mut out);
    out
}

/// [`mul_base`] into `out` (one point per scalar).
pub fn mul_base_into(scalars: &[[u8; 32]], threads: usize, out: &mut [Point]) {
    par_map_into(PIECE, out, threads, |i| {
        encode(&(ProjectivePoint::GENERATOR * scalar(&scalars[i])))
    })
}

/// `k·P` for one scalar over every point; `None` for a point not on the curve.
pub fn mul_shared(k: &[u8; 32], points: &[Point], threads: usize) -> Vec<Option<Point>> {
    let k = scalar(k);
    par_map(PIECE, points.len(), threads, |i| {
        decode(&points[i]).map(|p| encode(&(p * k)))
    })
}

/// `k·P` for one scalar over every compressed point; `None` for an invalid encoding.
pub fn mul_compressed(
    k: &[u8; 32],
    points: &[Compressed],
    threads: usize,
) -> Vec<Option<Compressed>> {
    let k = scalar(k);
    par_map(PIECE, points.len(), threads, |i| {
        decompress(&points[i]).map(|p| compress(&(p * k)))
    })
}

/// `k·H(m)` for each message (`dst` already at most 255 bytes).
pub fn hash_to_curve_mul(
    k: &[u8; 32],
    msgs: &[&[u8]],
    dst: &[u8],
    threads: usize,
) -> Vec<Compressed> {
    let k = scalar(k);
    par_map(PIECE, msgs.len(), threads, |i| {
        compress(&(hash_to_curve(msgs[i], dst) * k))
    })
}

impl_modulus!(
    SmP,
    U256,
    "FFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFFFFF"
);
type Fe = sm2::elliptic_curve::bigint::modular::constant_mod::Residue<SmP, { U256::LIMBS }>;

const B_HEX: &str = "28E9FA9E9D9F5E344D5A9E4BCF6509A7F39789F515AB8F92DDBCBD414D940E93";

/// RFC 9380 `hash_to_curve` for SM2 with SM3 (see [`super::SUITE`]).
pub fn hash_to_curve(msg: &[u8], dst: &[u8]) -> ProjectivePoint {
    let mut uniform = [0u8; 96];
    let dsts = [dst];
    // Errors only for an empty tag or an output over 255 blocks, both excluded by the callers.
    ExpandMsgXmd::<sm3::Sm3>::expand_message(&[msg], &dsts, 96)
        .expect("expand_message_xmd")
        .fill_bytes(&mut uniform);
    map_to_curve(&field_from_48(&uniform[..48])) + map_to_curve(&field_from_48(&uniform[48..]))
}

/// OS2IP(48 bytes) mod p.
fn field_from_48(b: &[u8]) -> Fe {
    let wide = U384::from_be_slice(b);
    let p = U384::from_be_hex("00000000000000000000000000000000FFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFFFFF");
    let r = wide.rem(&NonZero::new(p).unwrap());
    Fe::new(&U256::from_be_slice(&r.to_be_bytes()[16..]))
}

/// The simplified SWU map (RFC 9380 §6.6.2) with Z = -9: x from one inversion, y by decompressing
/// x with the parity of u (sgn0 is the parity for a prime field).
fn map_to_curve(u: &Fe) -> ProjectivePoint {
    let one = Fe::ONE;
    let a = -(one + one + one);
    let b = Fe::new(&U256::from_be_hex(B_HEX));
    let z = -Fe::new(&U256::from_u64(9));
    let u2 = u.square();
    let zu2 = z * u2;
    let tv1 = zu2.square() + zu2;
    let (num, den) = if tv1 == Fe::ZERO {
        (b, z * a)
    } else {
        (-(b * (tv1 + one)), a * tv1)
    };
    let x1 = num * den.invert().0;
    let odd = Choice::from((u.retrieve().as_words()[0] & 1) as u8);
    let point = |x: &Fe| {
        Option::<AffinePoint>::from(AffinePoint::decompress(
            &x.retrieve().to_be_bytes().into(),
            odd,
        ))
    };
    // g(x1) or else g(x2 = Z u^2 x1) is a square (RFC 9380 §6.6.2).
    let p = point(&x1)
        .or_else(|| point(&(zu2 * x1)))
        .expect("one of g(x1), g(x2) is a square");
    ProjectivePoint::from(p)
}
