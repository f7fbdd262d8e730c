//! The AES kernels run on the host: the exact kernel code, one "thread" per block of the grid.

use crate::aes::gcm::{combine, Gcm};
use crate::aes::gf128::Gf128;
use crate::aes::layout::{self as device, BatchParams, Layout, Mode};
use crate::aes::xts::{steal_tail, whole_block_bytes, XtsKey};
use crate::aes::{
    ctr_bitsliced_params, ctr_params, xts_params, CtrBitslicedParams, CtrParams, GcmParams, Key,
    XtsParams, XtsTweakParams,
};
use crate::messages::Messages;

extern "C" {
    fn aes_xts_tweaks(p: XtsTweakParams, tweaks: *mut u128);
    fn aes_xts_encrypt(p: XtsParams, input: *const u8, output: *mut u8, tweaks: *const u128);
    fn aes_xts_decrypt(p: XtsParams, input: *const u8, output: *mut u8, tweaks: *const u128);
    fn aes_ctr(p: CtrParams, input: *const u8, output: *mut u8);
    fn aes_ctr_bitsliced(p: CtrBitslicedParams, input: *const u8, output: *mut u8);
    fn aes_ctr_batch(
        p: BatchParams,
        ivs: *const u8,
        keys: *const u8,
        offsets: *const u8,
        segments: *const u8,
        input: *const u8,
        output: *mut u8,
    );
    fn aes_gcm_batch(
        p: BatchParams,
        nonces: *const u8,
        keys: *const u8,
        offsets: *const u8,
        segments: *const u8,
        input: *const u8,
        output: *mut u8,
        sums: *mut u8,
        per_message: *mut u8,
    );
    fn aes_xts_batch_encrypt(
        p: BatchParams,
        tweaks: *const u8,
        keys: *const u8,
        offsets: *const u8,
        segments: *const u8,
        input: *const u8,
        output: *mut u8,
    );
    fn aes_xts_batch_decrypt(
        p: BatchParams,
        tweaks: *const u8,
        keys: *const u8,
        offsets: *const u8,
        segments: *const u8,
        input: *const u8,
        output: *mut u8,
    );
    fn aes_gcm_batch_tags(
        p: BatchParams,
        offsets: *const u8,
        segments: *const u8,
        aad_offsets: *const u8,
        aad: *const u8,
        sums: *const u8,
        per_message: *const u8,
        tags: *mut u8,
    );
    fn aes_gcm(
        p: GcmParams,
        input: *const u8,
        output: *mut u8,
        tables: *const u32,
        seg_out: *mut u32,
    );
}

/// 16-byte-aligned storage, as device allocations are (the kernels load whole blocks).
fn aligned(data: &[u8]) -> Vec<u128> {
    let mut v = vec![0u128; data.len().div_ceil(16).max(1)];
    bytemuck_copy(&mut v, data);
    v
}

fn bytemuck_copy(dst: &mut [u128], src: &[u8]) {
    // SAFETY: u128 storage viewed as bytes; src fits.
    let d =
        unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<u8>(), dst.len() * 16) };
    d[..src.len()].copy_from_slice(src);
}

fn bytes_of(v: &[u128], n: usize) -> Vec<u8> {
    // SAFETY: as above.
    let all = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * 16) };
    all[..n].to_vec()
}

/// CTR with the 128-bit counter from `iv`.
pub fn ctr(key: &Key, iv: &[u8; 16], data: &[u8]) -> Vec<u8> {
    let input = aligned(data);
    let mut out = vec![0u128; input.len()];
    // SAFETY: both buffers hold data.len() bytes rounded up to whole blocks.
    unsafe {
        aes_ctr(
            ctr_params(key, iv, false, data.len() as u64),
            input.as_ptr().cast(),
            out.as_mut_ptr().cast(),
        )
    };
    bytes_of(&out, data.len())
}

/// CTR through the bitsliced kernel (kernels/aes/bitsliced.cu).
pub fn ctr_bitsliced(key: &Key, iv: &[u8; 16], data: &[u8]) -> Vec<u8> {
    let input = aligned(data);
    let mut out = vec![0u128; input.len()];
    // SAFETY: both buffers hold data.len() bytes rounded up to whole blocks.
    unsafe {
        aes_ctr_bitsliced(
            ctr_bitsliced_params(key, iv, data.len() as u64),
            input.as_ptr().cast(),
            out.as_mut_ptr().cast(),
        )
    };
    bytes_of(&out, data.len())
}

/// GCM's counter mode and GHASH through the kernel with segments of `seg_blocks` blocks;
/// returns the output and the ciphertext's GHASH.
pub fn gcm(g: &Gcm, data: &[u8], decrypt: bool, seg_blocks: u64) -> (Vec<u8>, Gf128) {
    let input = aligned(data);
    let mut out = vec![0u128; input.len()];
    let blocks = (data.len() as u64).div_ceil(16);
    let nseg = blocks.div_ceil(seg_blocks) as usize;
    let mut seg_out = vec![0u32; 4 * nseg.max(1)];
    // One emulated thread per block: the tables are for T = 1.
    let tables = crate::aes::gpu_tables(g.h, 1);
    let p = GcmParams {
        c: ctr_params(&g.key, &g.first_counter(), true, data.len() as u64),
        seg_blocks,
        decrypt: decrypt as u32,
        pad: 0,
    };
    // SAFETY: buffers as the kernel documents them.
    unsafe {
        aes_gcm(
            p,
            input.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            tables.as_ptr(),
            seg_out.as_mut_ptr(),
        )
    };
    let segs = crate::aes::segment_sums(&seg_out[..4 * nseg]);
    (
        bytes_of(&out, data.len()),
        combine(g.h, &segs, seg_blocks, blocks),
    )
}

/// XTS as the GPU path runs it: the tweak-entry kernel and the block kernel over the whole
/// blocks (one launch), then the CPU's ciphertext-stealing tail.
pub fn xts(key: &XtsKey, tweak: &[u8; 16], unit: usize, data: &[u8], decrypt: bool) -> Vec<u8> {
    crate::aes::xts::check(unit, data.len()).expect("a valid XTS layout");
    let whole = whole_block_bytes(data.len());
    let input = aligned(&data[..whole]);
    let mut out = vec![0u128; input.len()];
    let (tp, bp) = xts_params(key, tweak, unit, 0, (whole / 16) as u64, decrypt);
    let mut tweaks = vec![0u128; (tp.units as usize * tp.entries as usize).max(1)];
    // SAFETY: buffers as the kernels document them.
    unsafe {
        aes_xts_tweaks(tp, tweaks.as_mut_ptr());
        let f = if decrypt {
            aes_xts_decrypt
        } else {
            aes_xts_encrypt
        };
        f(
            bp,
            input.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            tweaks.as_ptr(),
        );
    }
    let mut result = bytes_of(&out, whole);
    result.resize(data.len(), 0);
    if whole < data.len() {
        steal_tail(
            key,
            tweak,
            unit,
            whole,
            &data[whole..],
            &mut result[whole..],
            decrypt,
        );
    }
    result
}

/// A batch as the GPU path runs it: chunks of at most about `chunk_bytes` of upload, each staged
/// as the GPU path stages it and run through the kernels; the output and (GCM) the tags.
fn batch(
    l: &Layout<'_>,
    keys: &device::Keys<'_>,
    ivs: &[u8],
    msgs: &Messages<'_>,
    decrypt: bool,
    chunk_bytes: usize,
) -> (Vec<u8>, Vec<[u8; 16]>) {
    let mut result = vec![0u8; msgs.data().len()];
    let mut tags = vec![[0u8; 16]; if l.gcm() { msgs.count() } else { 0 }];
    for c in device::chunks(msgs, l, chunk_bytes) {
        let mut up = vec![0u128; c.in_bytes.div_ceil(16).max(1)];
        // SAFETY: u128 storage viewed as bytes.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(up.as_mut_ptr().cast::<u8>(), c.in_bytes) };
        c.stage(msgs, l, ivs, keys, bytes);
        let mut out = vec![0u128; (c.out_bytes + c.scratch_bytes).div_ceil(16).max(1)];
        let a = c.pointers(up.as_ptr() as u64, out.as_mut_ptr() as u64);
        let p = c.params(msgs, keys, decrypt);
        let ptr = |x: u64| x as *const u8;
        let mptr = |x: u64| x as *mut u8;
        let args = (
            ptr(a.ivs),
            ptr(a.keys),
            ptr(a.offsets),
            ptr(a.segments),
            ptr(a.data),
            mptr(a.out),
        );
        // SAFETY: the pointers lie in the staged chunk and its output as `Chunk` laid them out
        // (null for a missing section).
        unsafe {
            match (l.mode, decrypt) {
                (Mode::Gcm, _) => {
                    aes_gcm_batch(
                        p,
                        args.0,
                        args.1,
                        args.2,
                        args.3,
                        args.4,
                        args.5,
                        mptr(a.sums),
                        mptr(a.per_message),
                    );
                    aes_gcm_batch_tags(
                        p,
                        ptr(a.offsets),
                        ptr(a.segments),
                        ptr(a.aad_offsets),
                        ptr(a.aad),
                        ptr(a.sums),
                        ptr(a.per_message),
                        mptr(a.tags),
                    );
                }
                (Mode::Ctr, _) => aes_ctr_batch(p, args.0, args.1, args.2, args.3, args.4, args.5),
                (Mode::Xts, false) => {
                    aes_xts_batch_encrypt(p, args.0, args.1, args.2, args.3, args.4, args.5)
                }
                (Mode::Xts, true) => {
                    aes_xts_batch_decrypt(p, args.0, args.1, args.2, args.3, args.4, args.5)
                }
            }
        }
        let out = bytes_of(&out, c.out_bytes);
        result[c.data.clone()].copy_from_slice(&out[..c.data.len()]);
        if l.gcm() {
            tags[c.messages()]
                .as_flattened_mut()
                .copy_from_slice(c.tags(&out));
        }
    }
    (result, tags)
}

/// A CTR batch as the GPU path runs it (see `batch`).
pub fn ctr_batch(
    keys: &[Key],
    ivs: &[[u8; 16]],
    msgs: &Messages<'_>,
    chunk_bytes: usize,
) -> Vec<u8> {
    let (l, k) = device::raw_keys(Mode::Ctr, keys, &[]);
    batch(&l, &k, ivs.as_flattened(), msgs, false, chunk_bytes).0
}

/// A GCM batch as the GPU path runs it: the output and each message's tag over its ciphertext.
pub fn gcm_batch(
    keys: &[Key],
    nonces: &[[u8; 12]],
    aads: &[&[u8]],
    msgs: &Messages<'_>,
    decrypt: bool,
    chunk_bytes: usize,
) -> (Vec<u8>, Vec<[u8; 16]>) {
    let (l, k) = device::raw_keys(Mode::Gcm, keys, aads);
    batch(&l, &k, nonces.as_flattened(), msgs, decrypt, chunk_bytes)
}

/// An XTS batch as the GPU path runs it.
pub fn xts_batch(
    keys: &[XtsKey],
    tweaks: &[[u8; 16]],
    msgs: &Messages<'_>,
    decrypt: bool,
    chunk_bytes: usize,
) -> Vec<u8> {
    let (l, first, k) = device::xts_keys(keys, tweaks, decrypt);
    batch(&l, &k, first.as_flattened(), msgs, decrypt, chunk_bytes).0
}
