//! The CPU backend: RustCrypto's `sm2` arithmetic, parallel over the batch.

use super::{check_scalars, Point};
use crate::error::Result;
use rayon::prelude::*;
use sm2::elliptic_curve::sec1::{FromEncodedPoint, ToEncodedPoint};
use sm2::elliptic_curve::PrimeField;
use sm2::{AffinePoint, EncodedPoint, ProjectivePoint, Scalar};

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

/// The point with these coordinates, if it is on the curve.
fn decode(p: &Point) -> Option<ProjectivePoint> {
    let e = EncodedPoint::from_affine_coordinates(p[..32].into(), p[32..].into(), false);
    Option::<AffinePoint>::from(AffinePoint::from_encoded_point(&e)).map(ProjectivePoint::from)
}

/// `k·G` for each scalar.
pub fn mul_base(scalars: &[[u8; 32]]) -> Result<Vec<Point>> {
    check_scalars(scalars)?;
    Ok(scalars.par_iter().map(|k| encode(&(ProjectivePoint::GENERATOR * scalar(k)))).collect())
}

/// `k·P` for one scalar over every point; `None` for a point not on the curve.
pub fn mul_shared(k: &[u8; 32], points: &[Point]) -> Result<Vec<Option<Point>>> {
    check_scalars(std::slice::from_ref(k))?;
    let k = scalar(k);
    Ok(points.par_iter().map(|p| decode(p).map(|p| encode(&(p * k)))).collect())
}
