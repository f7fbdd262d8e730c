//! The GPU backend. Both signature schemes reduce to one kernel item — u1, u2, the key, r — and the
//! GPU computes R = u1·G + u2·Q:
//! - ECDSA: u1 = e/s and u2 = r/s modulo n, with one inversion per block of items (Montgomery's
//!   trick); the kernel compares x(R) with r.
//! - BIP340: u1 = s, u2 = n - e for the challenge e; the kernel checks that y(R) is even and x(R) = r.
//! The host parses and does the scalar algebra; the GPU decompresses keys (or checks them against
//! the curve), so no square root is left on the CPU. Batches stream through
//! `pipeline::run_chunked`: the preparation of one chunk overlaps the GPU's work on the others.

use super::parse::{self, Reason, Sec1Key};
use super::EcdsaOptions;
use crate::sig::items::{self, ITEM_BYTES};
use k256::elliptic_curve::ops::Reduce;
use k256::elliptic_curve::PrimeField;
use k256::{Scalar, U256};

/// Entries of the fixed-base table (33 windows of 128 affine points, 64 bytes each).
pub(crate) const G_TABLE_LEN: usize = 33 * 128;

fn scalar(b: &[u8; 32]) -> Scalar {
    // r and s are already checked to lie in [1, n-1]; the hash is reduced as ECDSA specifies.
    <Scalar as Reduce<U256>>::reduce_bytes(&(*b).into())
}

/// One item before the scalar algebra: u1 = a/d, u2 = b/d.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostItem {
    a: Scalar,
    b: Scalar,
    d: Scalar,
    key: Sec1Key,
    r: [u8; 32],
}

/// An ECDSA item: u1 = e/s, u2 = r/s.
pub(crate) fn ecdsa_item(
    hash: &[u8; 32],
    sig: &[u8],
    pubkey: &[u8],
    opts: &EcdsaOptions,
) -> Result<HostItem, Reason> {
    let (r, s, key) = parse::ecdsa_parts(sig, pubkey, opts)?;
    Ok(HostItem {
        a: scalar(hash),
        b: scalar(&r),
        d: scalar(&s),
        key,
        r,
    })
}

/// A BIP340 item: u1 = s, u2 = -e for the challenge e = H(r || P.x || msg).
pub(crate) fn schnorr_item(
    sig: &[u8; 64],
    pubkey: &[u8; 32],
    msg: &[u8],
) -> Result<HostItem, Reason> {
    let (r, s, key) = parse::schnorr_parts(sig, pubkey)?;
    let e = parse::schnorr_challenge(&r, pubkey, msg);
    Ok(HostItem {
        a: scalar(&s),
        b: -scalar(&e),
        d: Scalar::ONE,
        key,
        r,
    })
}

/// Writes items `first..first + reasons.len()` (`make(i)`) as kernel items into `dst`, and
/// each item's parse failure into `reasons`, with one inversion of d for the whole block
/// (Montgomery's trick).
pub(crate) fn encode_block(
    dst: &mut [u8],
    reasons: &mut [Option<Reason>],
    first: usize,
    make: &(impl Fn(usize) -> Result<HostItem, Reason> + Sync),
) {
    let items: Vec<Result<HostItem, Reason>> =
        (0..reasons.len()).map(|k| make(first + k)).collect();
    // d is never zero after parsing.
    let mut prefix = Vec::with_capacity(items.len());
    let mut acc = Scalar::ONE;
    for it in &items {
        prefix.push(acc);
        if let Ok(it) = it {
            acc *= it.d;
        }
    }
    let mut inv = acc.invert().unwrap_or(Scalar::ZERO);
    for k in (0..items.len()).rev() {
        let out = &mut dst[k * ITEM_BYTES..(k + 1) * ITEM_BYTES];
        match &items[k] {
            Ok(it) => {
                let inv_d = inv * prefix[k];
                items::encode(
                    out,
                    &(it.a * inv_d).to_repr().into(),
                    &(it.b * inv_d).to_repr().into(),
                    &it.key,
                    &it.r,
                );
                inv *= it.d;
                reasons[k] = None;
            }
            Err(why) => {
                items::skip(out);
                reasons[k] = Some(*why);
            }
        }
    }
}

/// Which verification kernel runs the items.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scheme {
    Ecdsa,
    Schnorr,
}

impl Scheme {
    pub(crate) fn kernel(self) -> &'static str {
        match self {
            Scheme::Ecdsa => "secp256k1_ecdsa_verify_batch",
            Scheme::Schnorr => "secp256k1_schnorr_verify_batch",
        }
    }
}

mod device {
    use super::{encode_block, HostItem, Reason, Scheme, G_TABLE_LEN};
    use crate::backend::cuda::{device_table, Gpu};
    use crate::error::Result;
    use crate::sig::items::device::{self as items, Kernel};
    use cudarc::driver::CudaSlice;

    /// The fixed-base table, computed once on the device by `secp256k1_g_table`.
    fn g_table(gpu: &Gpu) -> Result<&'static CudaSlice<u8>> {
        device_table(
            gpu,
            &crate::kernels::SECP256K1,
            "secp256k1_g_table",
            G_TABLE_LEN,
            64,
        )
    }

    fn kernel(scheme: Scheme) -> Kernel {
        Kernel {
            image: &crate::kernels::SECP256K1,
            name: scheme.kernel(),
            table: g_table,
        }
    }

    /// Kernel-only time of `scheme` over `n` items (`make(i)`) already in GPU memory: the median
    /// of `iters` launches in seconds, and the verdicts.
    pub(crate) fn time_kernel(
        scheme: Scheme,
        n: usize,
        make: impl Fn(usize) -> std::result::Result<HostItem, Reason> + Sync,
        iters: usize,
    ) -> Result<(f64, Vec<std::result::Result<(), Reason>>)> {
        items::time_kernel(
            &kernel(scheme),
            n,
            &|first, dst: &mut [u8], reasons: &mut [Option<Reason>]| {
                encode_block(dst, reasons, first, &make)
            },
            iters,
        )
    }

    /// Verifies `n` items (`make(i)`) through `scheme`'s kernel, chunk by chunk.
    pub(crate) fn verify(
        scheme: Scheme,
        n: usize,
        make: impl Fn(usize) -> std::result::Result<HostItem, Reason> + Sync,
    ) -> Result<Vec<std::result::Result<(), Reason>>> {
        items::verify(
            &kernel(scheme),
            n,
            &|first, dst: &mut [u8], reasons: &mut [Option<Reason>]| {
                encode_block(dst, reasons, first, &make)
            },
        )
    }
}

pub(crate) use device::{time_kernel, verify};
