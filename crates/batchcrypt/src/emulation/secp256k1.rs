//! The secp256k1 kernels run on the host. Integers are eight little-endian 32-bit limbs.

/// An affine point in the kernels' Montgomery form (opaque to the host).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AffineRaw([u32; 16]);

extern "C" {
    fn secp256k1_g_table(table: *mut AffineRaw);
    fn secp256k1_ecdsa_verify(items: *const u32, gtable: *const AffineRaw, ok: *mut u8, n: u64);
    fn secp256k1_schnorr_verify(items: *const u32, gtable: *const AffineRaw, ok: *mut u8, n: u64);
    fn secp256k1_field_ops(a: *const u32, b: *const u32, out: *mut u32, n: u64, which: i32);
    fn secp256k1_point_ops(p: *const u32, q: *const u32, out: *mut u32, n: u64);
}

/// `[a+b, a-b, a*b, a^2, a^-1, -a]` modulo p (`modulus_n = false`) or n.
pub fn field_ops(a: &[[u32; 8]], b: &[[u32; 8]], modulus_n: bool) -> Vec<[[u32; 8]; 6]> {
    assert_eq!(a.len(), b.len());
    let mut out = vec![[[0u32; 8]; 6]; a.len()];
    // SAFETY: 8 limbs in and 48 out per item.
    unsafe { secp256k1_field_ops(a.as_ptr().cast(), b.as_ptr().cast(), out.as_mut_ptr().cast(), a.len() as u64, modulus_n as i32) };
    out
}

/// Per pair of affine points (x, y as 16 limbs): P+Q, P+Q (mixed), 2P, P+(-P), P+P as affine
/// (infinity = all zero), then on_curve(P), on_curve(Q).
pub fn point_ops(p: &[[u32; 16]], q: &[[u32; 16]]) -> Vec<[u32; 82]> {
    assert_eq!(p.len(), q.len());
    let mut out = vec![[0u32; 82]; p.len()];
    // SAFETY: 16 limbs in and 82 out per item.
    unsafe { secp256k1_point_ops(p.as_ptr().cast(), q.as_ptr().cast(), out.as_mut_ptr().cast(), p.len() as u64) };
    out
}

/// The fixed-base table the verification kernel reads.
pub fn g_table() -> Vec<AffineRaw> {
    let mut t = vec![AffineRaw([0; 16]); 16];
    // SAFETY: the kernel writes 16 entries.
    unsafe { secp256k1_g_table(t.as_mut_ptr()) };
    t
}

/// Verification of kernel items `[u1, u2, qx, qy, r]` (40 limbs each) by ECDSA's or BIP340's kernel.
pub fn verify_items(schnorr: bool, items: &[[u32; 40]], gtable: &[AffineRaw]) -> Vec<bool> {
    assert_eq!(gtable.len(), 16);
    let mut ok = vec![0u8; items.len()];
    let f = if schnorr { secp256k1_schnorr_verify } else { secp256k1_ecdsa_verify };
    // SAFETY: 40 limbs in and one byte out per item; the table has 16 entries.
    unsafe { f(items.as_ptr().cast(), gtable.as_ptr(), ok.as_mut_ptr(), items.len() as u64) };
    ok.into_iter().map(|b| b != 0).collect()
}

/// ECDSA through the GPU backend's whole flow on the host: preparation (as `secp256k1::gpu`
/// does it) and the kernel.
pub fn verify_prepared(items: &[crate::secp256k1::parse::Prepared]) -> Vec<bool> {
    verify_items(false, &crate::secp256k1::gpu::kernel_items(items), &g_table())
}

/// BIP340 through the GPU backend's whole flow on the host.
pub fn verify_schnorr_prepared(items: &[(crate::secp256k1::parse::SchnorrPrepared, &[u8])]) -> Vec<bool> {
    use crate::secp256k1::{gpu, parse};
    let with_e: Vec<gpu::SchnorrItem> =
        items.iter().map(|(p, msg)| gpu::SchnorrItem { prepared: *p, challenge: parse::schnorr_challenge(&p.r, p.pubkey[..32].try_into().unwrap(), msg) }).collect();
    verify_items(true, &gpu::schnorr_kernel_items(&with_e), &g_table())
}
