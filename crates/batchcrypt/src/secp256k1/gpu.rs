//! The GPU backend. Both signature schemes reduce to one kernel item — u1, u2, the key, r — and the
//! GPU computes R = u1·G + u2·Q (`sig::items`):
//! - ECDSA: u1 = e/s and u2 = r/s modulo n, computed on the device from the host's e and s by
//!   a preparation kernel (the generic [`crate::ecdsa`] items); the kernel compares x(R) with r.
//! - BIP340: u1 = s, u2 = n - e for the challenge e; the kernel checks that y(R) is even and x(R) = r.
//!
//! The host parses and does the scalar algebra that needs no inversion; the GPU decompresses
//! keys (or checks them against the curve), so no square root is left on the CPU. Batches stream
//! through `pipeline::run_chunked`: the preparation of one chunk overlaps the GPU's work on the
//! others.

use super::parse::{self, Reason};
use crate::sig::items::device::{Kernel, Prepare};
use crate::sig::items::HostItem;
use crate::sig::order::Order;

/// The order n, for the items' scalar algebra (the curve's, which BIP340 shares with ECDSA).
pub(crate) const ORDER: Order = <super::Secp256k1Curve as crate::ecdsa::Curve>::ORDER;

/// Entries of the fixed-base table (kernels/secp256k1's `GTable`).
pub(crate) const G_TABLE_LEN: usize = crate::sig::items::WIDE_G_TABLE_LEN;

/// Items per GPU thread of the BIP340 kernel (`SCHNORR_ITEMS` in kernels/secp256k1): they share
/// the inversion that y's parity needs.
const SCHNORR_ITEMS: u64 = 2;

fn kernel(name: &'static str, items_per_thread: u64, prepare: Option<Prepare>) -> Kernel {
    Kernel {
        image: &crate::kernels::SECP256K1,
        name,
        table: "secp256k1_g_table",
        table_len: G_TABLE_LEN,
        items_per_thread,
        prepare,
    }
}

/// The ECDSA kernel, after the device's u1 = e/s, u2 = r/s.
pub(crate) fn ecdsa_kernel() -> Kernel {
    kernel(
        "secp256k1_ecdsa_verify_batch",
        1,
        Some(Prepare::ecdsa("secp256k1_ecdsa_prepare")),
    )
}

/// The BIP340 kernel.
pub(crate) fn schnorr_kernel() -> Kernel {
    kernel("secp256k1_schnorr_verify_batch", SCHNORR_ITEMS, None)
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
        a: ORDER.reduce_be(&s),
        b: ORDER.neg(&ORDER.reduce_be(&e)),
        key,
        r,
    })
}
