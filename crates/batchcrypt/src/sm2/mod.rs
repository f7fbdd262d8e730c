//! SM2 (GB/T 32918, GM/T 0003) scalar multiplication in batches: `k·G` for many scalars, and
//! `k·P` for many points under one secret scalar (the blinding step of ECDH-PSI).
//!
//! Backends: the CPU path is RustCrypto's `sm2` over all cores ([`cpu`]); the GPU path runs the
//! SM2 instantiation of the generic field, curve and scalar-multiplication templates
//! (`kernels/sm2`, a fixed-base table for G, signed windows for P). Both take and give the same
//! encodings and agree bit for bit (tests/sm2_kernels.rs checks the kernel code against `sm2`).
//!
//! Status: these calls choose their backend explicitly; the dispatcher, hash-to-curve, SM3, SM2
//! verification and the PSI application are not built yet.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod gpu;

use crate::error::{Error, Result};

/// The group order n, big-endian.
pub const N: [u8; 32] = [
    0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x72, 0x03, 0xdf, 0x6b, 0x21, 0xc6, 0x05, 0x2b, 0x53, 0xbb,
    0xf4, 0x09, 0x39, 0xd5, 0x41, 0x23,
];

/// An affine point as `x || y`, big-endian; the point at infinity is all zeros.
pub type Point = [u8; 64];

/// Scalars must lie in `[0, n)`: an out-of-range scalar is the caller's error, not reduced.
pub(crate) fn check_scalars(scalars: &[[u8; 32]]) -> Result<()> {
    if scalars.is_empty() {
        return Err(Error::EmptyBatch);
    }
    match scalars.iter().position(|k| *k >= N) {
        Some(i) => Err(Error::invalid(format!("scalar {i} is not below the group order n"))),
        None => Ok(()),
    }
}
