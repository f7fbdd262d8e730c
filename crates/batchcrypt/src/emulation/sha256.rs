//! The SHA-256 kernels run on the host.

use crate::sha256::{Digest, Messages, Mode};

extern "C" {
    fn sha256d_64(input: *const u32, out: *mut u8, n: u64);
    fn sha256d_80(input: *const u32, out: *mut u8, n: u64);
    fn sha256_fixed(input: *const u8, len: u64, out: *mut u8, n: u64, dbl: i32);
    fn sha256_var(input: *const u8, offsets: *const u64, out: *mut u8, n: u64, dbl: i32);
}

/// Hashes a batch with the kernel the GPU path would launch for it.
pub fn hash(msgs: &Messages<'_>, mode: Mode) -> Vec<Digest> {
    let n = msgs.count();
    let mut out = vec![[0u8; 32]; n];
    let o = out.as_mut_ptr() as *mut u8;
    let dbl = (mode == Mode::Double) as i32;
    // Word-aligned copies: the kernels read 64- and 80-byte messages as 32-bit words.
    let words = |data: &[u8]| -> Vec<u32> {
        data.chunks_exact(4)
            .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
            .collect()
    };
    // SAFETY: buffers hold exactly what each kernel reads and writes for n items.
    unsafe {
        match *msgs {
            Messages::Fixed { data, len: 64, .. } if mode == Mode::Double => {
                sha256d_64(words(data).as_ptr(), o, n as u64)
            }
            Messages::Fixed { data, len: 80, .. } if mode == Mode::Double => {
                sha256d_80(words(data).as_ptr(), o, n as u64)
            }
            Messages::Fixed { data, len, .. } => {
                sha256_fixed(data.as_ptr(), len as u64, o, n as u64, dbl)
            }
            Messages::Var { data, offsets } => {
                sha256_var(data.as_ptr(), offsets.as_ptr(), o, n as u64, dbl)
            }
        }
    }
    out
}
