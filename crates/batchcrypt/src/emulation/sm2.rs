//! The SM2 kernels run on the host. Scalars are eight little-endian 32-bit limbs; points affine
//! `x || y` (16 limbs), the point at infinity all zeros.

use super::AffineRaw;
use crate::sig::items::EMULATED_WIDE_G_TABLE_LEN;
use crate::sig::{Reason, SigFormat};
use crate::sm2::gpu;

extern "C" {
    fn sm2_g_table(table: *mut AffineRaw);
    fn sm2_mul_base(k: *const u32, table: *const AffineRaw, out: *mut u32, n: u64);
    fn sm2_mul(k: *const u32, pts: *const u32, out: *mut u32, n: u64);
}

fn g_table() -> &'static [AffineRaw] {
    VERIFY.table()
}

/// `k[i] G` for each scalar (limbs here; the kernel reads and writes big-endian bytes).
pub fn mul_base(k: &[[u32; 8]]) -> Vec<[u32; 16]> {
    // Limbs (little-endian) to the big-endian bytes of each 32-byte integer, as 32-bit words.
    fn swap(limbs: &[u32]) -> impl Iterator<Item = u32> + '_ {
        limbs
            .chunks_exact(8)
            .flat_map(|l| l.iter().rev().map(|w| w.swap_bytes()))
    }
    let be: Vec<u32> = swap(k.as_flattened()).collect();
    let mut out = vec![[0u32; 16]; k.len()];
    // SAFETY: 8 words in and 16 out per item; the table is complete.
    unsafe {
        sm2_mul_base(
            be.as_ptr(),
            g_table().as_ptr(),
            out.as_mut_ptr().cast(),
            k.len() as u64,
        )
    };
    let limbs: Vec<u32> = swap(out.as_flattened()).collect();
    limbs
        .chunks_exact(16)
        .map(|c| c.try_into().unwrap())
        .collect()
}

/// `k P_i` for one scalar over every point; `None` for a point off the curve.
pub fn mul(k: &[u32; 8], points: &[[u32; 16]]) -> Vec<Option<[u32; 16]>> {
    let mut out = vec![[0u32; 17]; points.len()];
    // SAFETY: one scalar; 16 limbs in and 17 out per point.
    unsafe {
        sm2_mul(
            k.as_ptr(),
            points.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            points.len() as u64,
        )
    };
    out.into_iter()
        .map(|o| (o[16] != 0).then(|| o[..16].try_into().unwrap()))
        .collect()
}

extern "C" {
    fn sm2_mul_compressed(k: *const u32, pts: *const u32, out: *mut u32, n: u64);
    fn sm2_hash_mul(
        k: *const u32,
        msgs: *const u8,
        slot: u64,
        dst: *const u8,
        dst_len: u32,
        out: *mut u32,
        n: u64,
    );
}

/// `k P_i` on compressed points: 9 limbs in (x, flag: bit 0 y odd, bit 1 bad encoding), 9 out
/// (x, flag: bit 0 y odd, bit 1 valid, bit 2 infinity).
pub fn mul_compressed(k: &[u32; 8], points: &[[u32; 9]]) -> Vec<[u32; 9]> {
    let mut out = vec![[0u32; 9]; points.len()];
    // SAFETY: one scalar; 9 limbs in and out per point.
    unsafe {
        sm2_mul_compressed(
            k.as_ptr(),
            points.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            points.len() as u64,
        )
    };
    out
}

/// `k H(m_i)` (RFC 9380 hash_to_curve, SM3, simplified SWU) under `dst`, 9 limbs out per message.
pub fn hash_mul(k: &[u32; 8], msgs: &[&[u8]], dst: &[u8]) -> Vec<[u32; 9]> {
    let slot = crate::sm2::slot_bytes(msgs);
    let packed = crate::sm2::pack_slots(msgs, slot);
    let mut out = vec![[0u32; 9]; msgs.len()];
    // SAFETY: `packed` holds msgs.len() slots of `slot` bytes; 9 limbs out per message.
    unsafe {
        sm2_hash_mul(
            k.as_ptr(),
            packed.as_ptr(),
            slot as u64,
            dst.as_ptr(),
            dst.len() as u32,
            out.as_mut_ptr().cast(),
            msgs.len() as u64,
        )
    };
    out
}

extern "C" {
    fn sm2_verify(items: *const u32, gtable: *const AffineRaw, ok: *mut u8, n: u64);
    fn sm2_verify_prepare(items: *mut u32, n: u64);
}

/// The verification kernel and its preparation.
const VERIFY: super::VerifyKernel = super::VerifyKernel {
    table_len: EMULATED_WIDE_G_TABLE_LEN,
    g_table: sm2_g_table,
    verify: sm2_verify,
    prepare: Some(sm2_verify_prepare),
};

/// SM2 verification of digests through the GPU backend's whole flow on the host: the items as
/// `verify_digests` prepares them for the GPU, then the kernels' code.
pub fn verify_digests(
    digests: &[[u8; 32]],
    sigs: &[&[u8]],
    keys: &[&[u8]],
    format: SigFormat,
) -> Vec<Result<(), Reason>> {
    let make = |i: usize| {
        let (r, s, key) = crate::sm2::verify::parts(sigs[i], keys[i], format)?;
        Ok(gpu::DeviceItem {
            r,
            s,
            key,
            digest: gpu::Digest::Given(digests[i]),
        })
    };
    let fill = |first, dst: &mut [u8], reasons: &mut [Option<Reason>]| {
        gpu::encode_block(dst, reasons, first, &make)
    };
    super::run_items(&VERIFY, digests.len(), &fill, &())
}

/// SM2 verification of messages the same way: the device's hashing of `e = SM3(Z_A || M)` (for
/// messages of up to [`gpu::DEVICE_MESSAGE_MAX`] bytes; the host's above) included.
pub fn verify(
    msgs: &[&[u8]],
    sigs: &[&[u8]],
    keys: &[&[u8]],
    id: &[u8],
    format: SigFormat,
) -> Vec<Result<(), Reason>> {
    let za = crate::sm2::verify::Za::new(id).expect("an ID of at most 8191 bytes");
    let messages = gpu::Messages::new(id, msgs);
    let make = |i: usize| {
        let (r, s, key) = crate::sm2::verify::parts(sigs[i], keys[i], format)?;
        let digest = messages.digest(i, || crate::sm2::host_digest(&za, &key, msgs[i]))?;
        Ok(gpu::DeviceItem { r, s, key, digest })
    };
    let fill = |first, dst: &mut [u8], reasons: &mut [Option<Reason>]| {
        gpu::encode_block(dst, reasons, first, &make)
    };
    super::run_items(&VERIFY, msgs.len(), &fill, &messages)
}
