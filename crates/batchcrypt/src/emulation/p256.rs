//! The P-256 kernels run on the host.

use super::{AffineRaw, VerifyKernel};

extern "C" {
    fn p256_g_table(table: *mut AffineRaw);
    fn p256_ecdsa_verify(items: *const u32, gtable: *const AffineRaw, ok: *mut u8, n: u64);
    fn p256_ecdsa_prepare(items: *mut u32, n: u64);
}

/// The ECDSA kernel.
pub const ECDSA: VerifyKernel = VerifyKernel {
    table_len: crate::sig::items::EMULATED_WIDE_G_TABLE_LEN,
    g_table: p256_g_table,
    verify: p256_ecdsa_verify,
    prepare: Some(p256_ecdsa_prepare),
};
