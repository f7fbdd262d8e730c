//! The CUDA kernel sources compiled for the host and run on the CPU (feature `emulation`): one
//! "thread" walks each kernel's whole grid-stride loop, so tests check the exact kernel code on
//! machines without a GPU. Inline PTX has a portable twin there; the GPU run covers the PTX.

pub mod aes;
pub mod bn254;
pub mod secp256k1;
pub mod sha256;
pub mod sm2;
pub mod sm3;

use crate::sig::items::{self, FillItems, ITEM_BYTES, ITEM_LIMBS};
use crate::sig::Reason;

/// Verification items through a scheme's whole GPU flow on the host: `fill` encodes them as the
/// GPU backend does, `kernel` runs the kernel code over them.
pub(crate) fn run_items(
    n: usize,
    fill: &impl FillItems,
    kernel: impl Fn(&[[u32; ITEM_LIMBS]]) -> Vec<u8>,
) -> Vec<Result<(), Reason>> {
    let (bytes, reasons) = items::encode_all(n, fill);
    let raw: Vec<[u32; ITEM_LIMBS]> = bytes
        .chunks_exact(ITEM_BYTES)
        .map(|c| {
            std::array::from_fn(|i| u32::from_le_bytes(c[4 * i..4 * i + 4].try_into().unwrap()))
        })
        .collect();
    reasons
        .into_iter()
        .zip(kernel(&raw))
        .map(|(r, c)| items::verdict(r, c))
        .collect()
}
