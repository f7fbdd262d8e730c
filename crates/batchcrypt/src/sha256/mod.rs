//! SHA-256 and Bitcoin's double SHA-256 (SHA256d), one message or batches of them.
//!
//! Backends: `portable` (reference), `x86::shani` (SHA extensions, 1 or 2 messages), `x86::avx2`
//! (8 lanes), `x86::avx512` (16 lanes), and `gpu` (one message per CUDA thread). Every CPU backend is
//! a [`Compressor`]; `multibuffer` turns any of them into a batch hasher.

pub mod gpu;
pub mod merkle;
mod multibuffer;
pub mod portable;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86;

use crate::backend::{Backend, Primitive};
use crate::dispatch::{Cost, Location, Plan, Workload};
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::{Engine, Output};
use rayon::prelude::*;

/// A SHA-256 digest, as bytes (big-endian words, as the standard prints them).
pub type Digest = [u8; 32];

/// Round constants (FIPS 180-4 §4.2.2).
pub const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// Initial hash value (FIPS 180-4 §5.3.3).
pub const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A compression function that processes one 64-byte block in each of `L` independent lanes.
/// `state[word][lane]` is the transposed layout SIMD code wants; one-lane backends ignore it.
/// Implementors are tokens that exist only once their CPU feature was detected, so the methods are
/// safe. Only `compress` is required; the others have portable defaults that backends override
/// where they gain.
pub trait Compressor<const L: usize>: Sync {
    /// One block per lane.
    fn compress(&self, state: &mut [[u32; L]; 8], blocks: &[&[u8; 64]; L]);

    /// `blocks` consecutive blocks per lane, lane `l` reading `data[l][..64 * blocks]` (each lane
    /// at least that long). Overridden by backends that keep the state in registers across blocks.
    fn compress_run(&self, state: &mut [[u32; L]; 8], data: &[&[u8]; L], blocks: usize) {
        for b in 0..blocks {
            let blk: [&[u8; 64]; L] =
                std::array::from_fn(|l| data[l][64 * b..64 * b + 64].try_into().unwrap());
            self.compress(state, &blk);
        }
    }

    /// The same block in every lane, given as its message schedule plus round constants
    /// (`W[t] + K[t]`, see [`schedule_plus_k`]), so the schedule is computed once per batch.
    fn compress_shared(&self, state: &mut [[u32; L]; 8], kw: &[u32; 64]) {
        let mut block = [0u8; 64];
        for (t, w) in block.chunks_exact_mut(4).enumerate() {
            w.copy_from_slice(&kw[t].wrapping_sub(K[t]).to_be_bytes());
        }
        self.compress(state, &[&block; L]);
    }

    /// Whole messages of `len` bytes, one per lane (`data[l].len() == len`): body, padding, and for
    /// SHA256d the second hash. `pad_kw` is the shared padding block's schedule when `len` is a
    /// multiple of 64. Backends with a fused path (state in registers throughout) override this.
    fn hash_lanes(
        &self,
        data: &[&[u8]; L],
        len: usize,
        pad_kw: Option<&[u32; 64]>,
        double: bool,
    ) -> [Digest; L] {
        multibuffer::hash_lanes_generic(self, data, len, pad_kw, double)
    }
}

/// `W[t] + K[t]` for every round of one block.
pub const fn schedule_plus_k(block: &[u8; 64]) -> [u32; 64] {
    let mut w = [0u32; 64];
    let mut t = 0;
    while t < 16 {
        w[t] = u32::from_be_bytes([
            block[4 * t],
            block[4 * t + 1],
            block[4 * t + 2],
            block[4 * t + 3],
        ]);
        t += 1;
    }
    while t < 64 {
        w[t] = portable::small_sigma1(w[t - 2])
            .wrapping_add(w[t - 7])
            .wrapping_add(portable::small_sigma0(w[t - 15]))
            .wrapping_add(w[t - 16]);
        t += 1;
    }
    let mut kw = [0u32; 64];
    t = 0;
    while t < 64 {
        kw[t] = w[t].wrapping_add(K[t]);
        t += 1;
    }
    kw
}

/// The padding block of a message of `len` bytes, `len` a multiple of 64.
pub const fn pad_block(len: u64) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[0] = 0x80;
    let bits = (len * 8).to_be_bytes();
    let mut i = 0;
    while i < 8 {
        b[56 + i] = bits[i];
        i += 1;
    }
    b
}

/// Schedule of the padding block after a 64-byte message (merkle nodes), computed at compile time.
pub const PAD64_KW: [u32; 64] = schedule_plus_k(&pad_block(64));

/// Plain SHA-256, or SHA-256 applied twice (Bitcoin's SHA256d: txids, block hashes, merkle nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Single,
    Double,
}

pub use crate::messages::{FixedParts, Messages};

/// Compression-function calls the batch needs: the cost model's work unit.
fn compressions(msgs: &Messages<'_>, mode: Mode) -> u64 {
    let per = |len: u64| {
        len / 64 + if len % 64 + 9 <= 64 { 1 } else { 2 } + (mode == Mode::Double) as u64
    };
    match msgs {
        Messages::Fixed { len, count, .. } => per(*len as u64) * *count as u64,
        Messages::Var { offsets, .. } => offsets.windows(2).map(|w| per(w[1] - w[0])).sum(),
    }
}

/// SHA-256 of one message, on the fastest CPU path.
pub fn digest(msg: &[u8]) -> Digest {
    hash_single(msg, false)
}

/// SHA256d of one message.
pub fn digest_double(msg: &[u8]) -> Digest {
    hash_single(msg, true)
}

fn hash_single(msg: &[u8], double: bool) -> Digest {
    with_one_lane(|c| multibuffer::hash_one(c, msg, double))
}

/// `f` on the fastest one-lane compressor of this CPU.
fn with_one_lane<R>(f: impl FnOnce(&dyn Compressor<1>) -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if let Some(c) = x86::shani::ShaNi::new() {
        return f(&c);
    }
    f(&portable::Portable)
}

/// The SHA-256 state after a prefix of whole 64-byte blocks, for hashing many messages that
/// begin with it (BIP340's tagged hashes) at the cost of their own blocks only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Midstate {
    state: [u32; 8],
    len: usize,
}

impl Midstate {
    /// The state after `prefix`. Panics unless `prefix` is whole 64-byte blocks.
    pub fn new(prefix: &[u8]) -> Midstate {
        assert!(
            prefix.len().is_multiple_of(64),
            "a midstate follows whole 64-byte blocks, not {} bytes",
            prefix.len()
        );
        let mut s = IV.map(|w| [w]);
        with_one_lane(|c| {
            for b in prefix.chunks_exact(64) {
                c.compress(&mut s, &[b.try_into().expect("64 bytes")]);
            }
        });
        Midstate {
            state: s.map(|[w]| w),
            len: prefix.len(),
        }
    }

    /// SHA-256 of the prefix followed by `rest`.
    pub fn digest(&self, rest: &[u8]) -> Digest {
        with_one_lane(|c| multibuffer::finish_one(c, self.state, self.len, rest))
    }
}

/// Every CPU backend, in the order to try for a batch of `n`: multi-buffer first only when its
/// lanes can be filled.
fn cpu_order(n: usize) -> &'static [Backend] {
    if n >= 16 {
        &[
            Backend::Avx512,
            Backend::Avx2,
            Backend::ShaNi,
            Backend::Portable,
        ]
    } else if n >= 8 {
        &[
            Backend::Avx2,
            Backend::ShaNi,
            Backend::Avx512,
            Backend::Portable,
        ]
    } else {
        &[
            Backend::ShaNi,
            Backend::Portable,
            Backend::Avx2,
            Backend::Avx512,
        ]
    }
}

/// Runs a CPU backend over a batch on `threads` threads. Panics if the backend is unavailable
/// (callers go through the dispatcher, which checks).
pub(crate) fn hash_cpu(
    backend: Backend,
    msgs: &Messages<'_>,
    mode: Mode,
    threads: usize,
    out: &mut [Digest],
) {
    fn run<const L: usize, C: Compressor<L>>(
        c: &C,
        msgs: &Messages<'_>,
        mode: Mode,
        threads: usize,
        out: &mut [Digest],
    ) {
        let double = mode == Mode::Double;
        if threads <= 1 {
            return multibuffer::hash_range(c, msgs, 0, out, double);
        }
        // Several chunks per thread balance uneven message lengths.
        let chunk = out.len().div_ceil(threads * 4).next_multiple_of(L).max(L);
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, o)| multibuffer::hash_range(c, msgs, i * chunk, o, double));
    }
    match backend {
        Backend::Portable => run(&portable::Portable, msgs, mode, threads, out),
        #[cfg(target_arch = "x86_64")]
        Backend::ShaNi => {
            let c = x86::shani::ShaNi::new().expect("SHA-NI detected");
            if msgs.count() >= 2 {
                run::<2, _>(&c, msgs, mode, threads, out)
            } else {
                run::<1, _>(&c, msgs, mode, threads, out)
            }
        }
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => run(
            &x86::avx2::Avx2::new().expect("AVX2 detected"),
            msgs,
            mode,
            threads,
            out,
        ),
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => run(
            &x86::avx512::Avx512::new().expect("AVX-512 detected"),
            msgs,
            mode,
            threads,
            out,
        ),
        other => panic!("{other} is not a CPU SHA-256 backend on this target"),
    }
}

/// The CPU backends in their order for large batches.
const CPU_BACKENDS: &[Backend] = &[
    Backend::Avx512,
    Backend::Avx2,
    Backend::ShaNi,
    Backend::Portable,
];

const fn operation(
    key: &'static str,
    about: &'static str,
    item: (u64, u64, u64),
    calibrate: fn(Backend) -> Result<Cost>,
) -> Operation {
    Operation::new(key, Primitive::Sha256, about, CPU_BACKENDS, item, calibrate)
}

/// SHA256d of 64-byte messages (merkle nodes): the GPU kernels specialise it.
pub static SHA256D_64: Operation = operation(
    "sha256d-64",
    "SHA256d of 64-byte messages (merkle nodes)",
    (64, 32, 3),
    |b| calibrate(64, Mode::Double, b),
);
/// SHA256d of 80-byte messages (block headers).
pub static SHA256D_80: Operation = operation(
    "sha256d-80",
    "SHA256d of 80-byte messages (block headers)",
    (80, 32, 4),
    |b| calibrate(80, Mode::Double, b),
);
/// SHA-256 or SHA256d of equal-length messages.
pub static SHA256_FIXED: Operation = operation(
    "sha256-fixed",
    "SHA-256 of equal-length messages",
    (64, 32, 2),
    |b| calibrate(64, Mode::Single, b),
);
/// SHA-256 or SHA256d of messages of any lengths (offsets).
pub static SHA256_VAR: Operation = operation(
    "sha256-var",
    "SHA-256 of messages of any lengths",
    (72, 32, 2),
    |b| calibrate(64, Mode::Single, b),
);

/// The operation of a batch: GPU kernels specialise 64- and 80-byte SHA256d.
fn operation_of(msgs: &Messages<'_>, mode: Mode) -> &'static Operation {
    match (msgs, mode) {
        (Messages::Fixed { len: 64, .. }, Mode::Double) => &SHA256D_64,
        (Messages::Fixed { len: 80, .. }, Mode::Double) => &SHA256D_80,
        (Messages::Fixed { .. }, _) => &SHA256_FIXED,
        (Messages::Var { .. }, _) => &SHA256_VAR,
    }
}

/// Measures one backend on `len`-byte messages (compute only).
fn calibrate(len: usize, mode: Mode, backend: Backend) -> Result<Cost> {
    let units = compressions(&Messages::fixed(&[0; 80][..len], len)?, mode);
    if backend.is_gpu() {
        return gpu::calibrate(len, mode, units);
    }
    // See `dispatch::cpu_cost`.
    let pool = crate::backend::cpu::threads().max(1);
    // Hundreds of microseconds a thread and more: with 2 048 messages a thread, wake-ups and
    // frequency changes left AVX-512 measured at 40% of the rate a long batch reaches.
    let (small, large) = (1024 * pool, 8192 * pool);
    let data: Vec<u8> = (0..large * len).map(|i| (i * 131 + 7) as u8).collect();
    let mut out = crate::backend::cpu::zeroed_arrays::<32>(large);
    let mut run = |n: usize, threads: usize| -> Result<()> {
        let out = &mut out[..n];
        let msgs = Messages::fixed(&data[..n * len], len)?;
        hash_cpu(backend, &msgs, mode, threads, out);
        std::hint::black_box(out);
        Ok(())
    };
    use crate::dispatch::{cpu_cost, fit_sizes};
    let one = fit_sizes(16, 256, units, |n| run(n, 1))?;
    let all = fit_sizes(small, large, units, |n| run(n, pool))?;
    Ok(cpu_cost(one, all, pool))
}

/// The SHA-256 family on an [`Engine`].
pub struct Sha256<'e> {
    pub(crate) engine: &'e Engine,
}

impl Sha256<'_> {
    /// SHA-256 of one message (CPU; a single message never pays for a GPU round trip).
    pub fn digest(&self, msg: &[u8]) -> Digest {
        digest(msg)
    }

    /// Hashes `data.len() / msg_len` messages of `msg_len` bytes each.
    pub fn hash_fixed(
        &self,
        data: &[u8],
        msg_len: usize,
        mode: Mode,
    ) -> Result<Output<Vec<Digest>>> {
        self.hash(&Messages::fixed(data, msg_len)?, mode)
    }

    /// Hashes messages of any lengths: message `i` is `data[offsets[i]..offsets[i + 1]]`.
    pub fn hash_var(
        &self,
        data: &[u8],
        offsets: &[u64],
        mode: Mode,
    ) -> Result<Output<Vec<Digest>>> {
        self.hash(&Messages::var(data, offsets)?, mode)
    }

    /// SHA256d of 64-byte messages (merkle nodes: two concatenated 32-byte hashes).
    pub fn sha256d_64(&self, data: &[u8]) -> Result<Output<Vec<Digest>>> {
        self.hash_fixed(data, 64, Mode::Double)
    }

    /// SHA256d of 80-byte messages (block headers).
    pub fn sha256d_80(&self, data: &[u8]) -> Result<Output<Vec<Digest>>> {
        self.hash_fixed(data, 80, Mode::Double)
    }

    /// Hashes a validated batch on the backend the dispatcher picks.
    pub fn hash(&self, msgs: &Messages<'_>, mode: Mode) -> Result<Output<Vec<Digest>>> {
        let mut out = crate::backend::cpu::zeroed_arrays::<32>(msgs.count());
        let done = self.hash_into(msgs, mode, &mut out)?;
        Ok(done.map(|()| out))
    }

    /// [`Self::hash_fixed`] into a caller's buffer of `data.len() / msg_len` digests (no
    /// allocation: for callers that hash batch after batch into the same memory).
    pub fn hash_fixed_into(
        &self,
        data: &[u8],
        msg_len: usize,
        mode: Mode,
        out: &mut [Digest],
    ) -> Result<Output<()>> {
        self.hash_into(&Messages::fixed(data, msg_len)?, mode, out)
    }

    /// Hashes a validated batch into `out` (one digest per message).
    pub fn hash_into(
        &self,
        msgs: &Messages<'_>,
        mode: Mode,
        out: &mut [Digest],
    ) -> Result<Output<()>> {
        let n = msgs.count();
        fits(out, n)?;
        self.engine.run_into(
            operation_of(msgs, mode),
            &workload(msgs, mode),
            cpu_order(n),
            out,
            (1, 1),
            |b, threads, out| {
                hash_cpu(b, msgs, mode, threads, out);
                Ok(())
            },
            |r, out, _| gpu::hash(&msgs.slice(r), mode, out),
        )
    }

    /// Hashes equal-length messages spread over several buffers into `out`, as
    /// [`Self::hash_fixed_into`] hashes them joined: on the GPU, parts that all lie in blocks of
    /// [`crate::backend::gpu::page_locked`] (whole 16-byte words) are joined on the device, read
    /// in place; otherwise each part is staged straight into the page-locked upload buffer (one
    /// copy, not a join and then a copy). The CPU backends read them joined.
    pub fn hash_fixed_parts_into(
        &self,
        parts: &FixedParts<'_>,
        mode: Mode,
        out: &mut [Digest],
    ) -> Result<Output<()>> {
        let (n, len) = (parts.count(), parts.message_len());
        fits(out, n)?;
        let (w, op) = fixed_workload(n, len, mode)?;
        self.engine.run_into(
            op,
            &w,
            cpu_order(n),
            out,
            (1, 1),
            |b, threads, out| {
                let joined = parts.joined();
                hash_cpu(b, &Messages::fixed(&joined, len)?, mode, threads, out);
                Ok(())
            },
            |r, out, _| {
                // Parts in page-locked blocks are joined on the device by the gather kernel;
                // one part elsewhere and the whole batch is staged.
                let segments = parts.segments(r.start, r.len());
                if segments.iter().all(|s| crate::pipeline::gatherable(s)) {
                    return gpu::hash_fixed_gathered(len, mode, out, &segments);
                }
                gpu::hash_fixed(len, mode, out, |first, dst| {
                    parts.copy_to(r.start + first, dst)
                })
            },
        )
    }

    /// What the dispatcher would do with `n` messages of `len` bytes in host memory: the best
    /// CPU plan and the GPU plan with their estimated times (measuring on first use).
    pub fn estimates(&self, n: usize, len: usize, mode: Mode) -> Result<[Plan; 2]> {
        let (w, op) = fixed_workload(n, len.max(1), mode)?;
        let d = self.engine.dispatcher();
        let cpu = d.best_cpu(&w, cpu_order(n), op);
        Ok(d.estimates(&w, cpu, op))
    }
}

/// Whether `out` holds one digest for each of `n` messages.
fn fits(out: &[Digest], n: usize) -> Result<()> {
    if out.len() != n {
        return Err(Error::invalid(format!(
            "output holds {} digests for {n} messages",
            out.len()
        )));
    }
    Ok(())
}

/// The workload and operation of `n` messages of `len` bytes in host memory.
fn fixed_workload(n: usize, len: usize, mode: Mode) -> Result<(Workload, &'static Operation)> {
    let probe = vec![0u8; len];
    let one = Messages::fixed(&probe, len)?;
    let mut w = workload(&one, mode);
    w.items = n as u64;
    w.units *= n as u64;
    w.bytes_in *= n as u64;
    w.bytes_out *= n as u64;
    Ok((w, operation_of(&one, mode)))
}

fn workload(msgs: &Messages<'_>, mode: Mode) -> Workload {
    let n = msgs.count() as u64;
    Workload {
        op: operation_of(msgs, mode).key,
        items: n,
        units: compressions(msgs, mode),
        bytes_in: msgs.bytes() + if msgs.fixed_len() { 0 } else { 8 * (n + 1) },
        bytes_out: 32 * n,
        location: Location::Host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A midstate continued over the rest equals the hash of the whole message, and the
    /// reference's, for prefixes of 0 to 2 blocks and rests across every padding case.
    #[test]
    fn midstate_continues_the_message() {
        use sha2::Digest as _;
        let data: Vec<u8> = (0..400u32).map(|i| (i * 37 + 11) as u8).collect();
        for prefix in [0, 64, 128] {
            let m = Midstate::new(&data[..prefix]);
            for rest in 0..=200 {
                let whole = &data[..prefix + rest];
                let want: Digest = sha2::Sha256::digest(whole).into();
                assert_eq!(
                    m.digest(&data[prefix..prefix + rest]),
                    want,
                    "{prefix} + {rest}"
                );
                assert_eq!(digest(whole), want);
            }
        }
    }

    #[test]
    #[should_panic(expected = "whole 64-byte blocks")]
    fn midstate_refuses_a_partial_block() {
        Midstate::new(&[0; 65]);
    }
}
