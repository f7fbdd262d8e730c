//! The GPU backend: scalars, points and messages stream through the chunked pipeline as 32-bit
//! limbs and bytes, the SM2 kernels run, points come back. The fixed-base table is built on the
//! device once per process.

use super::{check_scalars, Compressed, Point};
use crate::backend::cuda::{device_table, grid_1d, time_on_stream, DriverResult, Gpu};
use crate::error::{Error, Result};
use crate::pipeline::{run_chunked, PipelineConfig};
use crate::sig::{items, Reason, Sec1Key};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, PushKernelArg};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::Arc;

const THREADS: u32 = 128;
use super::{BASE_ITEMS, G_TABLE_LEN};

fn g_table(gpu: &Gpu) -> Result<&'static CudaSlice<u8>> {
    device_table(gpu, &crate::kernels::SM2, "sm2_g_table", G_TABLE_LEN, 64)
}

/// Big-endian 256-bit integers to the kernels' little-endian limbs, or back: both are a byte
/// reversal of each 32-byte field.
fn flip_each_32(buf: &mut [u8]) {
    buf.par_chunks_exact_mut(32)
        .with_min_len(4096)
        .for_each(|c| c.reverse());
}

/// `src` into `dst` with each 32-byte field reversed, writing `dst` only: the staging buffers are
/// write-combined, where a read (as in an in-place reversal) is uncached and very slow.
fn flip_into(dst: &mut [u8], src: &[u8]) {
    dst.par_chunks_exact_mut(32)
        .zip(src.par_chunks_exact(32))
        .with_min_len(4096)
        .for_each(|(d, s)| {
            let mut v: [u8; 32] = s.try_into().unwrap();
            v.reverse();
            d.copy_from_slice(&v);
        });
}

fn flipped<const B: usize>(items: &[[u8; B]]) -> Vec<u8> {
    let mut v = items.as_flattened().to_vec();
    flip_each_32(&mut v);
    v
}

/// Items per pipeline chunk: a few waves of the GPU, so host conversion and copies overlap it,
/// small enough that the first upload and the last download (which nothing overlaps) are short.
pub const CHUNK: usize = 1 << 17;

/// Items per pipeline chunk of k·G, whose kernel takes a sixteenth of k·P's time per item: a
/// chunk of 2^18 is one wave of its threads (four items each) on an H200's SMs
/// (`batchcrypt-bench sm2-chunks` sweeps it).
pub const BASE_CHUNK: usize = 1 << 18;

/// Launches a kernel over `n` items, `per_thread` items per thread.
fn launch(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    args: &[&CudaSlice<u8>],
    out: &mut CudaSlice<u8>,
    n: usize,
    per_thread: usize,
) -> Result<()> {
    let n64 = n as u64;
    let mut b = stream.launch_builder(f);
    for a in args {
        b.arg(*a);
    }
    b.arg(out).arg(&n64);
    // SAFETY: callers pass the arguments of `sm2_mul_base` (scalars, table), `sm2_mul` or
    // `sm2_mul_compressed` (scalar, points) in order; every buffer holds n items.
    unsafe { b.launch(grid_1d(n.div_ceil(per_thread) as u64, THREADS)) }
        .map(|_| ())
        .driver("launch")
}

/// `k·G` for each scalar, on the GPU (transfers included, pipelined in chunks).
pub fn mul_base(scalars: &[[u8; 32]]) -> Result<Vec<Point>> {
    let mut out = crate::backend::cpu::zeroed_arrays::<64>(scalars.len());
    mul_base_into(scalars, &mut out)?;
    Ok(out)
}

/// [`mul_base`] into a caller's buffer of one point per scalar: a buffer reused batch after batch
/// is already mapped, where a fresh one takes a page fault per 4 KiB on its first write.
pub fn mul_base_into(scalars: &[[u8; 32]], out: &mut [Point]) -> Result<()> {
    mul_base_into_chunked(scalars, out, BASE_CHUNK)
}

/// [`mul_base_into`] with `chunk` scalars per pipeline chunk (the benchmarks sweep it).
pub fn mul_base_into_chunked(scalars: &[[u8; 32]], out: &mut [Point], chunk: usize) -> Result<()> {
    mul_base_part_into(scalars, 0, out, chunk)
}

/// [`mul_base_into`] for the part of a batch that starts at its scalar `base` (a bad scalar's
/// error names its index in the whole batch).
pub(crate) fn mul_base_part_into(
    scalars: &[[u8; 32]],
    base: usize,
    out: &mut [Point],
    chunk: usize,
) -> Result<()> {
    if scalars.is_empty() {
        return Err(Error::EmptyBatch);
    }
    super::check_output(out.len(), scalars.len())?;
    let gpu = Gpu::available()?;
    let table = g_table(gpu)?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_mul_base")?;
    // The kernel reads and writes big-endian bytes: plain copies on both sides, each scalar's
    // range checked as it is copied (one pass over them; a batch with a bad scalar stops there).
    let fill = |first: usize, dst: &mut [u8]| stage_scalars(dst, scalars, first, base);
    let cfg = PipelineConfig {
        chunk_items: chunk,
        depth: 3,
    };
    run_chunked(
        gpu,
        scalars.len(),
        32,
        out.as_flattened_mut(),
        64,
        cfg,
        fill,
        |s, input, o, count| launch(s, &f, &[input, table], o, count, BASE_ITEMS),
    )
}

/// Copies `scalars[first..]` into the staging buffer `dst`, checking that each is below n while
/// it is in cache; the first that is not is the error (numbered from `base`).
fn stage_scalars(dst: &mut [u8], scalars: &[[u8; 32]], first: usize, base: usize) -> Result<()> {
    // Pieces of 64 KiB: a chunk's copy spreads over every core (one core cannot keep up with
    // the kernel).
    const PIECE: usize = 1 << 11;
    let ks = &scalars[first..first + dst.len() / 32];
    let bad = dst
        .par_chunks_mut(32 * PIECE)
        .zip(ks.par_chunks(PIECE))
        .enumerate()
        .filter_map(|(p, (d, s))| {
            d.copy_from_slice(s.as_flattened());
            s.iter()
                .position(|k| !super::below_n(k))
                .map(|i| p * PIECE + i)
        })
        .min();
    match bad {
        Some(i) => Err(super::scalar_out_of_range(base + first + i)),
        None => Ok(()),
    }
}

/// `k·P` for one scalar over every point, on the GPU (transfers included, pipelined in chunks);
/// `None` for a point not on the curve.
pub fn mul_shared(k: &[u8; 32], points: &[Point]) -> Result<Vec<Option<Point>>> {
    super::check_key(k, points.len())?;
    let gpu = Gpu::available()?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_mul")?;
    let key = upload_key(gpu, k)?;
    let n = points.len();
    let mut out = vec![0u8; 68 * n];
    let fill = |first: usize, dst: &mut [u8]| {
        flip_into(dst, points[first..first + dst.len() / 64].as_flattened());
        Ok(())
    };
    let cfg = PipelineConfig {
        chunk_items: CHUNK,
        depth: 3,
    };
    run_chunked(gpu, n, 64, &mut out, 68, cfg, fill, |s, input, o, count| {
        launch(s, &f, &[&key, input], o, count, 1)
    })?;
    Ok(out
        .par_chunks_exact_mut(68)
        .map(|o| {
            // Limb 16 (little-endian) says whether the point was on the curve.
            let on_curve = o[64] != 0;
            o[..64].chunks_exact_mut(32).for_each(|c| c.reverse());
            on_curve.then(|| o[..64].try_into().unwrap())
        })
        .collect())
}

/// Compressed points to the kernels' 9 limbs: x little-endian, then the flag limb (bit 0: y odd,
/// bit 1: not a valid encoding). Writes `dst` only (write-combined staging, see [`flip_into`]).
fn compressed_to_limbs(c: &Compressed, dst: &mut [u8]) {
    let mut x: [u8; 32] = c[1..].try_into().unwrap();
    x.reverse();
    dst[..32].copy_from_slice(&x);
    let flag: u32 = match c[0] {
        2 => 0,
        3 => 1,
        _ => 2,
    };
    dst[32..36].copy_from_slice(&flag.to_le_bytes());
}

/// The kernels' 9-limb output back to SEC1: `None` for an invalid input point.
fn limbs_to_compressed(o: &[u8]) -> Option<Compressed> {
    let flag = u32::from_le_bytes(o[32..36].try_into().unwrap());
    if flag & 2 == 0 {
        return None;
    }
    let mut c = [0u8; 33];
    if flag & 4 == 0 {
        c[0] = 2 | (flag & 1) as u8;
        c[1..].copy_from_slice(&o[..32]);
        c[1..].reverse();
    }
    Some(c)
}

/// A small buffer (a key, a tag) copied to the device once per call.
fn upload(gpu: &Gpu, bytes: &[u8]) -> Result<CudaSlice<u8>> {
    let stream = gpu.stream()?;
    let d = stream.clone_htod(bytes).driver("upload")?;
    stream.synchronize().driver("sync")?;
    Ok(d)
}

fn upload_key(gpu: &Gpu, k: &[u8; 32]) -> Result<CudaSlice<u8>> {
    upload(gpu, &flipped(std::slice::from_ref(k)))
}

/// `k·P` for one scalar over compressed points, on the GPU (decompression there too).
pub fn mul_compressed(k: &[u8; 32], points: &[Compressed]) -> Result<Vec<Option<Compressed>>> {
    super::check_key(k, points.len())?;
    let gpu = Gpu::available()?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_mul_compressed")?;
    let key = upload_key(gpu, k)?;
    let n = points.len();
    let mut out = vec![0u8; 36 * n];
    let fill = |first: usize, dst: &mut [u8]| {
        dst.par_chunks_exact_mut(36)
            .zip(&points[first..])
            .with_min_len(4096)
            .for_each(|(d, c)| compressed_to_limbs(c, d));
        Ok(())
    };
    let cfg = PipelineConfig {
        chunk_items: CHUNK,
        depth: 3,
    };
    run_chunked(gpu, n, 36, &mut out, 36, cfg, fill, |s, input, o, count| {
        launch(s, &f, &[&key, input], o, count, 1)
    })?;
    Ok(out.par_chunks_exact(36).map(limbs_to_compressed).collect())
}

/// The slot size for `sm2_hash_mul` ([`super::slot_bytes`]), refusing messages over the limit.
fn checked_slot_bytes(msgs: &[&[u8]]) -> Result<usize> {
    let longest = msgs.iter().map(|m| m.len()).max().unwrap_or(0);
    if longest > MAX_MESSAGE {
        return Err(Error::invalid(format!("a message of {longest} bytes is over the GPU hash-to-curve limit of {MAX_MESSAGE}; hash long items first or use the CPU backend")));
    }
    Ok(super::slot_bytes(msgs))
}

/// Launches `sm2_hash_mul` over `n` slots of `slot` bytes in `input`.
fn launch_hash(
    s: &Arc<CudaStream>,
    f: &CudaFunction,
    key: &CudaSlice<u8>,
    input: &CudaSlice<u8>,
    slot: usize,
    dst: &CudaSlice<u8>,
    out: &mut CudaSlice<u8>,
    n: usize,
) -> Result<()> {
    let (slot64, dst_len, n64) = (slot as u64, dst.len() as u32, n as u64);
    let mut b = s.launch_builder(f);
    b.arg(key)
        .arg(input)
        .arg(&slot64)
        .arg(dst)
        .arg(&dst_len)
        .arg(out)
        .arg(&n64);
    // SAFETY: matches `sm2_hash_mul(k, msgs, slot, dst, dst_len, out, n)`; `input` holds `n`
    // slots, `out` room for `n` 9-limb points.
    unsafe { b.launch(grid_1d(n64, THREADS)) }
        .map(|_| ())
        .driver("launch")
}

/// The longest message `hash_to_curve_mul` takes on the GPU: every item gets a slot this size
/// or smaller, so a few long items would cost a lot of transfer.
pub const MAX_MESSAGE: usize = 1 << 16;

/// `k·H(m)` for each message on the GPU (hash, map and multiplication in one kernel).
pub fn hash_to_curve_mul(k: &[u8; 32], msgs: &[&[u8]], dst: &[u8]) -> Result<Vec<Compressed>> {
    super::check_key(k, msgs.len())?;
    let gpu = Gpu::available()?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_hash_mul")?;
    let key = upload_key(gpu, k)?;
    let dst_dev = upload(gpu, dst)?;
    let slot = checked_slot_bytes(msgs)?;
    let n = msgs.len();
    let mut out = vec![0u8; 36 * n];
    let fill = |first: usize, dst: &mut [u8]| {
        dst.par_chunks_exact_mut(slot)
            .zip(&msgs[first..])
            .with_min_len(1024)
            .for_each(|(d, m)| super::pack_slot(d, m));
        Ok(())
    };
    let cfg = PipelineConfig {
        chunk_items: CHUNK.min((64 << 20) / slot).max(1),
        depth: 3,
    };
    run_chunked(
        gpu,
        n,
        slot,
        &mut out,
        36,
        cfg,
        fill,
        |s, input, o, count| launch_hash(s, &f, &key, input, slot, &dst_dev, o, count),
    )?;
    Ok(out
        .par_chunks_exact(36)
        .map(|o| limbs_to_compressed(o).expect("hash outputs are valid points"))
        .collect())
}

/// Kernel-only seconds of [`mul_base`] (median of `iters`), inputs resident. For benchmarks.
pub fn mul_base_kernel_seconds(scalars: &[[u8; 32]], iters: usize) -> Result<f64> {
    check_scalars(scalars)?;
    let gpu = Gpu::available()?;
    let table = g_table(gpu)?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_mul_base")?;
    let stream = gpu.stream()?;
    let input = stream.clone_htod(scalars.as_flattened()).driver("upload")?;
    let mut out = stream
        .alloc_zeros::<u8>(64 * scalars.len())
        .driver("cuMemAlloc")?;
    time_on_stream(&stream, iters, || {
        launch(
            &stream,
            &f,
            &[&input, table],
            &mut out,
            scalars.len(),
            BASE_ITEMS,
        )
    })
}

/// Kernel-only seconds of [`mul_shared`] (median of `iters`), inputs resident. For benchmarks.
pub fn mul_shared_kernel_seconds(k: &[u8; 32], points: &[Point], iters: usize) -> Result<f64> {
    check_scalars(std::slice::from_ref(k))?;
    let gpu = Gpu::available()?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_mul")?;
    let stream = gpu.stream()?;
    let key = stream
        .clone_htod(&flipped(std::slice::from_ref(k)))
        .driver("upload")?;
    let input = stream.clone_htod(&flipped(points)).driver("upload")?;
    let mut out = stream
        .alloc_zeros::<u8>(68 * points.len())
        .driver("cuMemAlloc")?;
    time_on_stream(&stream, iters, || {
        launch(&stream, &f, &[&key, &input], &mut out, points.len(), 1)
    })
}

/// Kernel-only seconds of [`hash_to_curve_mul`] (median of `iters`), inputs resident.
pub fn hash_to_curve_mul_kernel_seconds(
    k: &[u8; 32],
    msgs: &[&[u8]],
    dst: &[u8],
    iters: usize,
) -> Result<f64> {
    let gpu = Gpu::available()?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_hash_mul")?;
    let stream = gpu.stream()?;
    let slot = checked_slot_bytes(msgs)?;
    let packed = super::pack_slots(msgs, slot);
    let key = stream
        .clone_htod(&flipped(std::slice::from_ref(k)))
        .driver("upload")?;
    let input = stream.clone_htod(&packed).driver("upload")?;
    let dst_dev = stream.clone_htod(dst).driver("upload")?;
    let mut out = stream
        .alloc_zeros::<u8>(36 * msgs.len())
        .driver("cuMemAlloc")?;
    time_on_stream(&stream, iters, || {
        launch_hash(
            &stream,
            &f,
            &key,
            &input,
            slot,
            &dst_dev,
            &mut out,
            msgs.len(),
        )
    })
}

/// Messages up to this many bytes are hashed on the device (`e = SM3(Z_A || M)` in the
/// preparation kernel); a longer one's digest is made here, so that a chunk's upload stays
/// bounded.
pub const DEVICE_MESSAGE_MAX: usize = 256;

/// The item flag (beside bc/verify.cuh's) for "limbs 8..16 say where the message lies".
const MESSAGE: u32 = 8;

/// The SM2 verification kernel and its preparation (kernels/sm2), with the fixed-base table it
/// shares with `sm2_mul_base`.
pub(crate) fn verify_kernel() -> items::device::Kernel {
    items::device::Kernel {
        image: &crate::kernels::SM2,
        name: "sm2_verify",
        table: "sm2_g_table",
        table_len: G_TABLE_LEN,
        items_per_thread: 1,
        prepare: Some(items::device::Prepare {
            name: "sm2_verify_prepare",
            items_per_thread: 1,
        }),
    }
}

type Verdict = std::result::Result<(), Reason>;

/// Where an item's digest comes from.
#[derive(Clone, Copy, Debug)]
pub enum Digest {
    /// `e`, as the caller or the host computed it.
    Given([u8; 32]),
    /// Hashed on the device from the message at this byte offset among the batch's device
    /// messages ([`Messages`]).
    Message { offset: u64, len: u32 },
}

/// One item as the host hands it to the device: the parsed signature and key, and its digest.
#[derive(Clone, Copy, Debug)]
pub struct DeviceItem {
    pub r: [u8; 32],
    pub s: [u8; 32],
    pub key: Sec1Key,
    pub digest: Digest,
}

fn encode(dst: &mut [u8], it: &DeviceItem) {
    match it.digest {
        Digest::Given(e) => items::encode(dst, &it.s, &e, &it.key, &it.r),
        Digest::Message { offset, len } => {
            items::encode(dst, &it.s, &[0; 32], &it.key, &it.r);
            // Limbs 8 and 9: the offset; limb 10: the length.
            dst[32..40].copy_from_slice(&offset.to_le_bytes());
            dst[40..44].copy_from_slice(&len.to_le_bytes());
            items::add_flags(dst, MESSAGE);
        }
    }
}

/// Writes items `first..first + reasons.len()` (`make(i)`) into `dst`, each host-side failure
/// into `reasons` (its item skipped).
pub(crate) fn encode_block(
    dst: &mut [u8],
    reasons: &mut [Option<Reason>],
    first: usize,
    make: &(impl Fn(usize) -> std::result::Result<DeviceItem, Reason> + Sync),
) {
    items::encode_items(dst, reasons, first, make, encode);
}

/// The messages the device hashes, as each chunk's trailer (kernels/sm2): the identifier, then
/// the chunk's messages back to back. A message over [`DEVICE_MESSAGE_MAX`] bytes takes no room
/// (the host hashes it).
pub struct Messages<'a> {
    id: &'a [u8],
    msgs: &'a [&'a [u8]],
    /// `starts[i]`: message i's offset among the device messages; `starts[n]` their total.
    starts: Vec<u64>,
}

impl<'a> Messages<'a> {
    pub fn new(id: &'a [u8], msgs: &'a [&'a [u8]]) -> Messages<'a> {
        // A prefix sum on all cores (a batch's host time is tens of nanoseconds an item): each
        // block's sums from zero, then each block shifted by the total before it.
        const BLOCK: usize = 1 << 14;
        let mut starts = vec![0u64; msgs.len() + 1];
        starts[1..]
            .par_chunks_mut(BLOCK)
            .zip(msgs.par_chunks(BLOCK))
            .for_each(|(out, ms)| {
                let mut at = 0;
                for (o, m) in out.iter_mut().zip(ms) {
                    at += if on_device(m) { m.len() as u64 } else { 0 };
                    *o = at;
                }
            });
        let mut before = 0;
        let offsets: Vec<u64> = starts[1..]
            .chunks(BLOCK)
            .map(|b| {
                let o = before;
                before += b[b.len() - 1];
                o
            })
            .collect();
        starts[1..]
            .par_chunks_mut(BLOCK)
            .zip(offsets)
            .for_each(|(out, o)| out.iter_mut().for_each(|v| *v += o));
        Messages { id, msgs, starts }
    }

    /// Item `i`'s digest: from its message on the device, or `host()` for a long message.
    pub fn digest(
        &self,
        i: usize,
        host: impl FnOnce() -> std::result::Result<[u8; 32], Reason>,
    ) -> std::result::Result<Digest, Reason> {
        let m = self.msgs[i];
        Ok(if on_device(m) {
            Digest::Message {
                offset: self.starts[i],
                len: m.len() as u32,
            }
        } else {
            Digest::Given(host()?)
        })
    }

    fn header_len(&self) -> usize {
        16 + self.id.len().next_multiple_of(8)
    }
}

fn on_device(m: &[u8]) -> bool {
    m.len() <= DEVICE_MESSAGE_MAX
}

impl items::Trailer for Messages<'_> {
    fn len(&self, r: Range<usize>) -> usize {
        self.header_len() + (self.starts[r.end] - self.starts[r.start]) as usize
    }

    fn write(&self, r: Range<usize>, dst: &mut [u8]) {
        let base = self.starts[r.start];
        let (head, mut body) = dst.split_at_mut(self.header_len());
        head[..8].copy_from_slice(&base.to_le_bytes());
        head[8..12].copy_from_slice(&(self.id.len() as u32).to_le_bytes());
        head[12..16].fill(0);
        head[16..16 + self.id.len()].copy_from_slice(self.id);
        head[16 + self.id.len()..].fill(0);
        // In blocks of items in parallel, each block's bytes in order (the staging is
        // write-combined: written sequentially, never read).
        const BLOCK: usize = 4096;
        let mut pieces = Vec::new();
        for b in r.clone().step_by(BLOCK) {
            let end = (b + BLOCK).min(r.end);
            let (piece, rest) = body.split_at_mut((self.starts[end] - self.starts[b]) as usize);
            pieces.push((b..end, piece));
            body = rest;
        }
        pieces.into_par_iter().for_each(|(items, piece)| {
            let mut at = 0;
            for m in &self.msgs[items] {
                if on_device(m) {
                    piece[at..at + m.len()].copy_from_slice(m);
                    at += m.len();
                }
            }
        });
    }
}

/// Verifies `n` items (`make(i)`) on the GPU, chunk by chunk (the host parses chunk k + 1 while
/// the GPU hashes and verifies chunk k); `messages` where items are hashed on the device.
pub fn verify(
    n: usize,
    make: impl Fn(usize) -> std::result::Result<DeviceItem, Reason> + Sync,
    messages: Option<&Messages>,
) -> Result<Vec<Verdict>> {
    let fill = |first, dst: &mut [u8], reasons: &mut [Option<Reason>]| {
        encode_block(dst, reasons, first, &make)
    };
    match messages {
        Some(m) => items::device::verify(&verify_kernel(), n, &fill, m),
        None => items::device::verify(&verify_kernel(), n, &fill, &()),
    }
}

/// Kernel-only seconds of [`verify`] (median of `iters`) over items resident on the device
/// (the preparation, hashing included, and the verification), and the verdicts. For
/// benchmarks.
pub fn verify_kernel_seconds(
    n: usize,
    make: impl Fn(usize) -> std::result::Result<DeviceItem, Reason> + Sync,
    messages: Option<&Messages>,
    iters: usize,
) -> Result<(f64, Vec<Verdict>)> {
    let fill = |first, dst: &mut [u8], reasons: &mut [Option<Reason>]| {
        encode_block(dst, reasons, first, &make)
    };
    match messages {
        Some(m) => items::device::time_kernel(&verify_kernel(), n, &fill, m, iters),
        None => items::device::time_kernel(&verify_kernel(), n, &fill, &(), iters),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sig::items::Trailer;

    /// A chunk's trailer: its header (the chunk's first offset, the ID), then exactly the
    /// chunk's short messages in order, each at the offset its item was given; long messages
    /// hashed on the host take no room.
    #[test]
    fn trailer_holds_each_chunks_messages_at_their_offsets() {
        // Over two of the prefix sum's blocks (2^14 items).
        let msgs: Vec<Vec<u8>> = (0..40_000usize)
            .map(|i| {
                let len = if i % 101 == 7 {
                    DEVICE_MESSAGE_MAX + 1 + i % 3
                } else {
                    i % 70
                };
                (0..len).map(|b| (b ^ i) as u8).collect()
            })
            .collect();
        let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
        for id in [&b""[..], b"1234567812345678", b"odd-id"] {
            let m = Messages::new(id, &refs);
            for r in [
                0..40_000,
                3..5000,
                4097..9000,
                16_383..33_000,
                39_999..40_000,
                5..5,
            ] {
                let mut dst = vec![0xeeu8; m.len(r.clone())];
                m.write(r.clone(), &mut dst);
                let base = u64::from_le_bytes(dst[..8].try_into().unwrap());
                assert_eq!(
                    u32::from_le_bytes(dst[8..12].try_into().unwrap()) as usize,
                    id.len()
                );
                assert_eq!(&dst[16..16 + id.len()], id);
                let body = &dst[16 + id.len().next_multiple_of(8)..];
                let mut total = 0;
                for i in r.clone() {
                    let host = || Ok([7u8; 32]);
                    match m.digest(i, host).unwrap() {
                        Digest::Message { offset, len } => {
                            let at = (offset - base) as usize;
                            assert_eq!(&body[at..at + len as usize], refs[i], "item {i}");
                            total += len as usize;
                        }
                        Digest::Given(e) => {
                            assert!(refs[i].len() > DEVICE_MESSAGE_MAX);
                            assert_eq!(e, [7; 32]);
                        }
                    }
                }
                assert_eq!(body.len(), total, "{r:?}");
            }
        }
    }
}
