//! The SM2 kernels run on the host. Scalars are eight little-endian 32-bit limbs; points affine
//! `x || y` (16 limbs), the point at infinity all zeros.

/// An affine point in the kernels' field representation (opaque to the host).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AffineRaw([u32; 16]);

/// Entries of the fixed-base table (33 signed 8-bit windows of 128 points).
const G_TABLE_LEN: usize = 33 * 128;

extern "C" {
    fn sm2_g_table(table: *mut AffineRaw);
    fn sm2_mul_base(k: *const u32, table: *const AffineRaw, out: *mut u32, n: u64);
    fn sm2_mul(k: *const u32, k_stride: u64, pts: *const u32, out: *mut u32, ok: *mut u8, n: u64);
}

fn g_table() -> &'static [AffineRaw] {
    static TABLE: std::sync::OnceLock<Vec<AffineRaw>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = vec![AffineRaw([0; 16]); G_TABLE_LEN];
        // SAFETY: the kernel writes G_TABLE_LEN entries.
        unsafe { sm2_g_table(t.as_mut_ptr()) };
        t
    })
}

/// `k[i] G` for each scalar.
pub fn mul_base(k: &[[u32; 8]]) -> Vec<[u32; 16]> {
    let mut out = vec![[0u32; 16]; k.len()];
    // SAFETY: 8 limbs in and 16 out per item; the table is complete.
    unsafe { sm2_mul_base(k.as_ptr().cast(), g_table().as_ptr(), out.as_mut_ptr().cast(), k.len() as u64) };
    out
}

/// `k_i P_i` (one scalar per point, or `k.len() == 1` for one scalar over all points); `None` for a
/// point off the curve.
pub fn mul(k: &[[u32; 8]], points: &[[u32; 16]]) -> Vec<Option<[u32; 16]>> {
    assert!(k.len() == points.len() || k.len() == 1);
    let stride = if k.len() == 1 { 0 } else { 8 };
    let mut out = vec![[0u32; 16]; points.len()];
    let mut ok = vec![0u8; points.len()];
    // SAFETY: 8 limbs per scalar (or one), 16 limbs in and out and one byte per point.
    unsafe { sm2_mul(k.as_ptr().cast(), stride, points.as_ptr().cast(), out.as_mut_ptr().cast(), ok.as_mut_ptr(), points.len() as u64) };
    out.into_iter().zip(ok).map(|(p, ok)| (ok != 0).then_some(p)).collect()
}
