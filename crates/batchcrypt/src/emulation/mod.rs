//! The CUDA kernel sources compiled for the host and run on the CPU (feature `emulation`): one
//! "thread" walks each kernel's whole grid-stride loop, so tests check the exact kernel code on
//! machines without a GPU. Inline PTX has a portable twin there; the GPU run covers the PTX.

pub mod aes;
pub mod bls12_381;
pub mod bn254;
pub mod msm;
pub mod ntt;
pub mod p256;
pub mod pipeline;
pub mod secp256k1;
pub mod sha256;
pub mod sm2;
pub mod sm3;

use crate::ecdsa::{Curve, EcdsaOptions};
use crate::sig::items::{self, FillItems, Trailer, ITEM_LIMBS};
use crate::sig::Reason;
use std::sync::Mutex;

/// An affine point in the kernels' field representation (opaque to the host).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AffineRaw(pub [u32; 16]);

/// A verification kernel `verify(items, gtable, verdicts, n)` of `bc/verify.cuh` compiled for
/// the host, with the kernel `g_table(gtable)` that writes its fixed-base table and the scheme's
/// preparation `prepare(items, n)` (ECDSA's u1 = e/s, u2 = r/s in place), if it has one.
#[derive(Clone, Copy)]
pub struct VerifyKernel {
    pub table_len: usize,
    pub g_table: unsafe extern "C" fn(*mut AffineRaw),
    pub verify: unsafe extern "C" fn(*const u32, *const AffineRaw, *mut u8, u64),
    pub prepare: Option<unsafe extern "C" fn(*mut u32, u64)>,
}

impl VerifyKernel {
    /// The fixed-base table, computed once per process.
    pub fn table(&self) -> &'static [AffineRaw] {
        static TABLES: Mutex<Vec<(usize, &'static [AffineRaw])>> = Mutex::new(Vec::new());
        let key = self.g_table as usize;
        let mut tables = TABLES.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&(_, t)) = tables.iter().find(|(k, _)| *k == key) {
            return t;
        }
        let mut t = vec![AffineRaw([0; 16]); self.table_len];
        // SAFETY: the kernel writes `table_len` entries.
        unsafe { (self.g_table)(t.as_mut_ptr()) };
        let t: &'static [AffineRaw] = Vec::leak(t);
        tables.push((key, t));
        t
    }

    /// Kernel codes (1 valid, 0 mismatch, 2 key not on the curve) for the host's items (ECDSA:
    /// e and s where u1 and u2 go), through the preparation and the verification.
    pub fn run(&self, items: &[[u32; ITEM_LIMBS]]) -> Vec<u8> {
        self.run_words(&mut items.as_flattened().to_vec(), items.len())
    }

    /// The same for `n` items as the device holds them: their limbs, then any trailer the
    /// preparation reads (rewritten in place).
    fn run_words(&self, words: &mut [u32], n: usize) -> Vec<u8> {
        if let Some(prepare) = self.prepare {
            // SAFETY: `n` items of 41 limbs and their trailer, rewritten in place.
            unsafe { prepare(words.as_mut_ptr(), n as u64) };
        }
        let mut ok = vec![0u8; n];
        // SAFETY: 41 limbs in and one byte out per item; the table is complete.
        unsafe {
            (self.verify)(
                words.as_ptr(),
                self.table().as_ptr(),
                ok.as_mut_ptr(),
                n as u64,
            )
        };
        ok
    }
}

/// ECDSA on curve `C` through the GPU backend's whole flow on the host: parsing and the scalar
/// algebra as [`crate::ecdsa::Ecdsa::verify`] does them for the GPU, then the kernel code.
pub fn verify_ecdsa<C: Curve>(
    hashes: &[[u8; 32]],
    sigs: &[&[u8]],
    keys: &[&[u8]],
    opts: &EcdsaOptions,
) -> Vec<Result<(), Reason>> {
    let make = |i: usize| crate::ecdsa::item::<C>(&hashes[i], sigs[i], keys[i], opts);
    let fill = |first, dst: &mut [u8], reasons: &mut [Option<Reason>]| {
        items::encode_host_items(dst, reasons, first, &make)
    };
    run_items(&C::emulated(), hashes.len(), &fill, &())
}

/// Verification items through a scheme's whole GPU flow on the host: `fill` and `trailer` encode
/// them as the GPU backend does, then `kernel`'s code runs over them.
pub(crate) fn run_items(
    kernel: &VerifyKernel,
    n: usize,
    fill: &impl FillItems,
    trailer: &impl Trailer,
) -> Vec<Result<(), Reason>> {
    let (mut bytes, reasons) = items::encode_all(n, fill, trailer);
    bytes.resize(bytes.len().next_multiple_of(4), 0);
    let mut words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    reasons
        .into_iter()
        .zip(kernel.run_words(&mut words, n))
        .map(|(r, c)| items::verdict(r, c))
        .collect()
}
