//! The secp256k1 kernels run on the host. Integers are eight little-endian 32-bit limbs.

pub use super::AffineRaw;
use super::VerifyKernel;
use crate::secp256k1::gpu;
use crate::secp256k1::{EcdsaOptions, Reason, Secp256k1Curve};
use crate::sig::items::EMULATED_WIDE_G_TABLE_LEN;

/// Limbs of a raw kernel item.
pub const ITEM_LIMBS: usize = crate::sig::items::ITEM_LIMBS;

extern "C" {
    fn secp256k1_g_table(table: *mut AffineRaw);
    fn secp256k1_ecdsa_verify_batch(
        items: *const u32,
        gtable: *const AffineRaw,
        ok: *mut u8,
        n: u64,
    );
    fn secp256k1_ecdsa_prepare(items: *mut u32, n: u64);
    fn secp256k1_schnorr_verify_batch(
        items: *const u32,
        gtable: *const AffineRaw,
        ok: *mut u8,
        n: u64,
    );
    fn secp256k1_field_ops(a: *const u32, b: *const u32, out: *mut u32, n: u64, which: i32);
    fn secp256k1_point_ops(p: *const u32, q: *const u32, out: *mut u32, n: u64);
    fn secp256k1_split_lambda(k: *const u32, out: *mut u32, n: u64);
    fn secp256k1_batch_inverse(x: *const u32, out: *mut u32, groups: u64, which: i32);
}

/// Inverses of `x` modulo p (`modulus_n = false`) or n, by the kernels' batch inversion in groups
/// of 16 (`x.len()` a multiple of 16); the inverse of 0 is 0.
pub fn batch_inverse(x: &[[u32; 8]], modulus_n: bool) -> Vec<[u32; 8]> {
    assert_eq!(x.len() % 16, 0);
    let mut out = vec![[0u32; 8]; x.len()];
    // SAFETY: 16 elements of 8 limbs per group, in and out.
    unsafe {
        secp256k1_batch_inverse(
            x.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            (x.len() / 16) as u64,
            modulus_n as i32,
        )
    };
    out
}

/// The GLV split of each scalar k < n: `(m1, neg1, m2, neg2)` with
/// k = ±m1 + lambda (±m2) mod n.
pub fn split_lambda(k: &[[u32; 8]]) -> Vec<([u32; 8], bool, [u32; 8], bool)> {
    let mut out = vec![[0u32; 18]; k.len()];
    // SAFETY: 8 limbs in and 18 out per item.
    unsafe { secp256k1_split_lambda(k.as_ptr().cast(), out.as_mut_ptr().cast(), k.len() as u64) };
    out.iter()
        .map(|o| {
            (
                o[..8].try_into().unwrap(),
                o[16] != 0,
                o[8..16].try_into().unwrap(),
                o[17] != 0,
            )
        })
        .collect()
}

/// `[a+b, a-b, a*b, a^2, a^-1, -a]` modulo p (`modulus_n = false`) or n.
pub fn field_ops(a: &[[u32; 8]], b: &[[u32; 8]], modulus_n: bool) -> Vec<[[u32; 8]; 6]> {
    assert_eq!(a.len(), b.len());
    let mut out = vec![[[0u32; 8]; 6]; a.len()];
    // SAFETY: 8 limbs in and 48 out per item.
    unsafe {
        secp256k1_field_ops(
            a.as_ptr().cast(),
            b.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            a.len() as u64,
            modulus_n as i32,
        )
    };
    out
}

/// Per pair of affine points (x, y as 16 limbs): P+Q, P+Q (mixed), 2P, P+(-P), P+P as affine
/// (infinity = all zero), then on_curve(P), on_curve(Q).
pub fn point_ops(p: &[[u32; 16]], q: &[[u32; 16]]) -> Vec<[u32; 82]> {
    assert_eq!(p.len(), q.len());
    let mut out = vec![[0u32; 82]; p.len()];
    // SAFETY: 16 limbs in and 82 out per item.
    unsafe {
        secp256k1_point_ops(
            p.as_ptr().cast(),
            q.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            p.len() as u64,
        )
    };
    out
}

/// The ECDSA kernel (GLV, the fixed-base table for u1 G).
pub const ECDSA: VerifyKernel = VerifyKernel {
    table_len: EMULATED_WIDE_G_TABLE_LEN,
    g_table: secp256k1_g_table,
    verify: secp256k1_ecdsa_verify_batch,
    prepare: Some(secp256k1_ecdsa_prepare),
};

/// The BIP340 kernel.
pub const SCHNORR: VerifyKernel = VerifyKernel {
    table_len: EMULATED_WIDE_G_TABLE_LEN,
    g_table: secp256k1_g_table,
    verify: secp256k1_schnorr_verify_batch,
    prepare: None,
};

/// The fixed-base table the verification kernels read.
pub fn g_table() -> &'static [AffineRaw] {
    ECDSA.table()
}

/// Kernel codes (1 valid, 0 mismatch, 2 key not on the curve) for raw kernel items
/// `[u1, u2, qx, qy, r, flags]` (41 limbs each; ECDSA: `[e, s, ...]`, prepared by its kernel), by
/// ECDSA's or BIP340's kernels.
pub fn verify_items(schnorr: bool, items: &[[u32; ITEM_LIMBS]]) -> Vec<u8> {
    if schnorr {
        SCHNORR.run(items)
    } else {
        ECDSA.run(items)
    }
}

/// ECDSA through the GPU backend's whole flow on the host: parsing and preparation as
/// `verify_ecdsa` does them for the GPU, then the kernel code.
pub fn verify_ecdsa(
    hashes: &[[u8; 32]],
    sigs: &[&[u8]],
    keys: &[&[u8]],
    opts: &EcdsaOptions,
) -> Vec<Result<(), Reason>> {
    super::verify_ecdsa::<Secp256k1Curve>(hashes, sigs, keys, opts)
}

/// BIP340 through the GPU backend's whole flow on the host.
pub fn verify_schnorr(
    msgs: &[&[u8]],
    sigs: &[[u8; 64]],
    keys: &[[u8; 32]],
) -> Vec<Result<(), Reason>> {
    let make = |i: usize| gpu::schnorr_item(&sigs[i], &keys[i], msgs[i]);
    let fill = |first, dst: &mut [u8], reasons: &mut [Option<Reason>]| {
        crate::sig::items::encode_host_items(dst, reasons, first, &make)
    };
    super::run_items(&SCHNORR, msgs.len(), &fill, &())
}
