//! Bulk AES-128/256 in CTR (SP 800-38A) and GCM (SP 800-38D) over one large buffer, and XTS
//! (IEEE 1619) over runs of data units ([`xts`]).
//!
//! Backends: OpenSSL's libcrypto and RustCrypto's crates on all CPU cores ([`cpu`]), and the GPU
//! (`kernels/aes`: a bank-conflict-free T-table cipher and GHASH with Shoup tables), for data in
//! host memory (streamed through pinned buffers, upload, kernel and download overlapped) or
//! already in GPU memory ([`Aes::ctr_device`], [`Aes::gcm_encrypt_device`],
//! [`Aes::xts_encrypt_device`]). All agree byte for byte.
//! The dispatcher weighs the CPU's measured speed against the GPU's plus the copies, so data in
//! host memory mostly stays on the CPU and data in GPU memory stays there.
//!
//! GCM parallelizes by cutting the ciphertext into segments whose GHASH sums are weighted by
//! powers of H ([`gcm`]). Decryption checks the tag before returning: on a mismatch the output
//! is zeroed and [`Error::AuthenticationFailed`] returned, so no unauthenticated plaintext leaks.

pub mod batch;
pub mod cpu;
pub mod gcm;
pub mod gf128;
pub mod gpu;
pub(crate) mod layout;
pub mod stream;
pub mod xts;

use crate::backend::cuda::DriverResult;
use crate::backend::Backend;
use crate::dispatch::{Cost, Location, Plan, Workload};
use crate::error::{Error, Result};
use crate::operation::{Join, Operation, Split, Whole};
use crate::{Engine, Output};
use aes::cipher::{BlockEncrypt, KeyInit};

/// An AES key; the length picks AES-128 or AES-256.
#[derive(Clone, PartialEq, Eq)]
pub enum Key {
    Aes128([u8; 16]),
    Aes256([u8; 32]),
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key::Aes{}(..)", self.bits())
    }
}

impl Key {
    /// A key of 16 or 32 bytes.
    pub fn new(bytes: &[u8]) -> Result<Key> {
        match bytes.len() {
            16 => Ok(Key::Aes128(bytes.try_into().unwrap())),
            32 => Ok(Key::Aes256(bytes.try_into().unwrap())),
            n => Err(Error::invalid(format!(
                "an AES key has 16 bytes (AES-128) or 32 bytes (AES-256), not {n}"
            ))),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            Key::Aes128(k) => k,
            Key::Aes256(k) => k,
        }
    }

    pub fn bits(&self) -> usize {
        self.bytes().len() * 8
    }

    /// E_K(block), one block on the CPU.
    pub fn encrypt_block(&self, block: [u8; 16]) -> [u8; 16] {
        let mut b = block.into();
        match self {
            Key::Aes128(k) => aes::Aes128::new(k.into()).encrypt_block(&mut b),
            Key::Aes256(k) => aes::Aes256::new(k.into()).encrypt_block(&mut b),
        }
        b.into()
    }

    /// The FIPS 197 key expansion as big-endian words, and the round count (the GPU kernels take
    /// round keys from the host; the CPU libraries expand their own).
    pub fn round_keys(&self) -> ([u32; 60], u32) {
        let nk = self.bytes().len() / 4;
        let rounds = nk as u32 + 6;
        let mut w = [0u32; 60];
        for (i, c) in self.bytes().chunks(4).enumerate() {
            w[i] = u32::from_be_bytes(c.try_into().unwrap());
        }
        let sub = |x: u32| u32::from_be_bytes(x.to_be_bytes().map(|b| SBOX[b as usize]));
        let mut rcon = 1u8;
        for i in nk..4 * (rounds as usize + 1) {
            let mut t = w[i - 1];
            if i % nk == 0 {
                t = sub(t.rotate_left(8)) ^ ((rcon as u32) << 24);
                rcon = xtime(rcon);
            } else if nk > 6 && i % nk == 4 {
                t = sub(t);
            }
            w[i] = w[i - nk] ^ t;
        }
        (w, rounds)
    }

    /// The equivalent inverse cipher's round keys (FIPS 197 §5.3.5): the encryption round keys
    /// in reverse order, InvMixColumns applied to all but the first and last (the GPU's XTS
    /// decryption uses its T-tables with them).
    pub fn inverse_round_keys(&self) -> ([u32; 60], u32) {
        let (w, rounds) = self.round_keys();
        let r = rounds as usize;
        let mut d = [0u32; 60];
        for round in 0..=r {
            for c in 0..4 {
                let k = w[4 * (r - round) + c];
                d[4 * round + c] = if round == 0 || round == r {
                    k
                } else {
                    inv_mix_column(k)
                };
            }
        }
        (d, rounds)
    }
}

/// InvMixColumns of one column (a big-endian word): the circulant (0e, 0b, 0d, 09).
fn inv_mix_column(w: u32) -> u32 {
    let a = w.to_be_bytes();
    u32::from_be_bytes(std::array::from_fn(|i| {
        gf_mul(a[i], 14)
            ^ gf_mul(a[(i + 1) % 4], 11)
            ^ gf_mul(a[(i + 2) % 4], 13)
            ^ gf_mul(a[(i + 3) % 4], 9)
    }))
}

/// a·b in GF(2^8) with the AES polynomial.
const fn gf_mul(mut a: u8, mut b: u8) -> u8 {
    let mut r = 0;
    while b != 0 {
        if b & 1 != 0 {
            r ^= a;
        }
        a = xtime(a);
        b >>= 1;
    }
    r
}

const fn xtime(a: u8) -> u8 {
    (a << 1) ^ if a & 0x80 != 0 { 0x1b } else { 0 }
}

/// The AES S-box (FIPS 197 §5.1.1), computed: the inverse in GF(2^8) (a^254) then the affine map.
const SBOX: [u8; 256] = {
    let mut s = [0u8; 256];
    let mut x = 0;
    while x < 256 {
        // a^254 = a^-1 (0 stays 0): square-and-multiply over 254 = 0b11111110.
        let a = x as u8;
        let mut inv = 1u8;
        let mut i = 0;
        while i < 7 {
            inv = gf_mul(gf_mul(inv, inv), a);
            i += 1;
        }
        inv = gf_mul(inv, inv);
        s[x] = inv
            ^ inv.rotate_left(1)
            ^ inv.rotate_left(2)
            ^ inv.rotate_left(3)
            ^ inv.rotate_left(4)
            ^ 0x63;
        x += 1;
    }
    s
};

/// A GCM result: the ciphertext went to the caller's buffer; this is the 16-byte tag.
pub type Tag = [u8; 16];

const OP_CTR: &str = "aes_ctr";
const OP_GCM: &str = "aes_gcm";
const OP_XTS: &str = "aes_xts";
/// CPU backends, fastest first (OpenSSL's assembly beats RustCrypto's intrinsics).
const CPU_ORDER: [Backend; 2] = [Backend::OpenSsl, Backend::Portable];

/// One buffer, streamed (chunks overlap copies and kernels on each GPU). CTR and XTS split the
/// buffer over the GPUs (`Split::Items`: each part's counter or tweak is where the part starts);
/// GCM runs on one GPU, its GHASH being one chain over the whole ciphertext.
const fn stream_operation(
    key: &'static str,
    about: &'static str,
    split: Split,
    calibrate: fn(Backend) -> Result<Cost>,
    streaming: fn(Backend) -> Result<f64>,
) -> Operation {
    let seg = cpu::MIN_SEG_BYTES as u64;
    let item = (seg, seg, seg / 16);
    Operation {
        split,
        streaming: Some(streaming),
        ..Operation::new(
            key,
            crate::backend::Primitive::Aes,
            about,
            &CPU_ORDER,
            item,
            calibrate,
        )
    }
}

/// CTR over one buffer.
pub static CTR: Operation = stream_operation(
    OP_CTR,
    "AES-CTR over one buffer",
    Split::Items,
    |b| calibrate(OP_CTR, b),
    |b| calibrate_streaming(OP_CTR, b),
);
/// GCM over one buffer.
pub static GCM: Operation = stream_operation(
    OP_GCM,
    "AES-GCM over one buffer",
    Split::No,
    |b| calibrate(OP_GCM, b),
    |b| calibrate_streaming(OP_GCM, b),
);
/// XTS over one buffer of data units.
pub static XTS: Operation = stream_operation(
    OP_XTS,
    "AES-XTS over one buffer of data units",
    Split::Items,
    |b| calibrate(OP_XTS, b),
    |b| calibrate_streaming(OP_XTS, b),
);

fn stream_op(key: &str) -> &'static Operation {
    match key {
        OP_GCM => &GCM,
        OP_XTS => &XTS,
        _ => &CTR,
    }
}

/// Bulk AES through an [`Engine`] (`engine.aes()`).
pub struct Aes<'e> {
    pub(crate) engine: &'e Engine,
}

/// Where a host buffer pair lives: page-locked memory lets the GPU skip the staging copies.
fn host_location(input: &[u8], output: &[u8]) -> Location {
    if let Ok(gpu) = crate::backend::cuda::Gpu::get() {
        if crate::pipeline::is_pinned(gpu, input) && crate::pipeline::is_pinned(gpu, output) {
            return Location::Pinned;
        }
    }
    let _ = (input, output);
    Location::Host
}

fn check_lengths(input: &[u8], output: &[u8]) -> Result<()> {
    if input.len() != output.len() {
        return Err(Error::invalid(format!(
            "input has {} bytes but output has {}: they must be equal",
            input.len(),
            output.len()
        )));
    }
    Ok(())
}

fn workload(op: &'static str, bytes: usize, location: Location) -> Workload {
    // Items: the CPU's smallest segments, the unit of its parallelism.
    let items = bytes.div_ceil(cpu::MIN_SEG_BYTES).max(1) as u64;
    Workload {
        op,
        items,
        units: (bytes as u64).div_ceil(16),
        bytes_in: bytes as u64,
        bytes_out: bytes as u64,
        location,
    }
}

impl Aes<'_> {
    /// The cost model's estimates for CTR (`gcm = false`) or GCM over `bytes` bytes at
    /// `location`: the best CPU backend on all cores, and the GPU (copies included).
    pub fn estimates(&self, gcm: bool, bytes: usize, location: Location) -> [Plan; 2] {
        let op = if gcm { OP_GCM } else { OP_CTR };
        let w = workload(op, bytes, location);
        let op = stream_op(op);
        let d = self.engine.dispatcher();
        d.estimates(&w, d.best_cpu(&w, &CPU_ORDER, op), op)
    }

    /// CTR mode (SP 800-38A): `output = input ⊕ keystream` from counter block `iv`, incremented as
    /// a 128-bit big-endian integer. Encryption and decryption are the same call. The same as
    /// `openssl enc -aes-128-ctr -K … -iv …`.
    pub fn ctr(
        &self,
        key: &Key,
        iv: &[u8; 16],
        input: &[u8],
        output: &mut [u8],
    ) -> Result<Output<()>> {
        check_lengths(input, output)?;
        self.run_stream(
            &CTR,
            input,
            output,
            16,
            |b, threads, output| cpu::ctr(b, key, iv, input, output, threads),
            |part, output| {
                let iv = gcm::add128(iv, (part.start / 16) as u64);
                gpu::ctr(key, &iv, &input[part], output)
            },
        )
    }

    /// GCM encryption (SP 800-38D) of `input` into `output` with `aad` authenticated; returns the
    /// 16-byte tag. Any IV length from 1 byte works; 12 bytes is the standard.
    pub fn gcm_encrypt(
        &self,
        key: &Key,
        iv: &[u8],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
    ) -> Result<Output<Tag>> {
        check_lengths(input, output)?;
        gcm::check_len(input.len())?;
        let g = gcm::Gcm::new(key, iv)?;
        let z = self.gcm_pass(&g, input, output, false)?;
        Ok(z.map(|z| g.tag(aad, z, input.len() as u64)))
    }

    /// GCM decryption: checks `tag` (4, 8 or 12..=16 bytes) and writes the plaintext to `output`.
    /// On a wrong key, IV, AAD, ciphertext or tag, [`Error::AuthenticationFailed`]; on any error
    /// the output is zeroed, so no unauthenticated plaintext is released.
    pub fn gcm_decrypt(
        &self,
        key: &Key,
        iv: &[u8],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
        tag: &[u8],
    ) -> Result<Output<()>> {
        check_lengths(input, output)?;
        let run = |output: &mut [u8]| -> Result<Output<()>> {
            gcm::check_len(input.len())?;
            let g = gcm::Gcm::new(key, iv)?;
            let z = self.gcm_pass(&g, input, output, true)?;
            gcm::check_tag(&g.tag(aad, z.value, input.len() as u64), tag)?;
            Ok(z.map(drop))
        };
        // Whatever failed, the output holds no plaintext.
        run(output).inspect_err(|_| output.fill(0))
    }

    /// CTR in place over a buffer already in GPU memory (a `CudaSlice<u8>` or a 16-byte-aligned
    /// view of one). The data is encrypted where it lives: moving it to the CPU and back would
    /// cost more than the GPU takes to encrypt it.
    pub fn ctr_device(
        &self,
        key: &Key,
        iv: &[u8; 16],
        data: &mut impl cudarc::driver::DevicePtrMut<u8>,
    ) -> Result<()> {
        gpu::ctr_device(key, iv, data)
    }

    /// GCM encryption in place over a buffer in GPU memory; returns the tag.
    pub fn gcm_encrypt_device(
        &self,
        key: &Key,
        iv: &[u8],
        aad: &[u8],
        data: &mut impl cudarc::driver::DevicePtrMut<u8>,
    ) -> Result<Tag> {
        gcm::check_len(data.len())?;
        let g = gcm::Gcm::new(key, iv)?;
        let z = gpu::gcm_device(&g, data, false)?;
        Ok(g.tag(aad, z, data.len() as u64))
    }

    /// GCM decryption in place over a buffer in GPU memory. On a tag mismatch the buffer is
    /// zeroed and [`Error::AuthenticationFailed`] returned.
    pub fn gcm_decrypt_device(
        &self,
        key: &Key,
        iv: &[u8],
        aad: &[u8],
        data: &mut cudarc::driver::CudaSlice<u8>,
        tag: &[u8],
    ) -> Result<()> {
        gcm::check_len(data.len())?;
        let g = gcm::Gcm::new(key, iv)?;
        let checked = gpu::gcm_device(&g, data, true)
            .and_then(|z| gcm::check_tag(&g.tag(aad, z, data.len() as u64), tag));
        if let Err(e) = checked {
            let gpu = crate::backend::cuda::Gpu::available()?;
            let stream = gpu.stream()?;
            stream.memset_zeros(data).driver("cuMemsetD8")?;
            stream.synchronize().driver("cuStreamSynchronize")?;
            return Err(e);
        }
        Ok(())
    }

    /// XTS-AES encryption (IEEE 1619, SP 800-38E) of a run of data units of `unit` bytes, unit j
    /// under the tweak `tweak + j` (the first sector's number, 16 bytes little-endian). A unit
    /// that is not a multiple of 16 bytes is allowed only as the whole buffer (one unit with
    /// ciphertext stealing); the buffer's last unit may be shorter than `unit` but not than 16
    /// bytes. The dispatcher picks the backend as for CTR; on the GPU a partial last block's
    /// ciphertext stealing (two blocks) is done on the CPU.
    pub fn xts_encrypt(
        &self,
        key: &xts::XtsKey,
        tweak: &[u8; 16],
        unit: usize,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<Output<()>> {
        self.xts(key, tweak, unit, input, output, false)
    }

    /// XTS-AES decryption, the inverse of [`Aes::xts_encrypt`] with the same tweak and unit.
    pub fn xts_decrypt(
        &self,
        key: &xts::XtsKey,
        tweak: &[u8; 16],
        unit: usize,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<Output<()>> {
        self.xts(key, tweak, unit, input, output, true)
    }

    fn xts(
        &self,
        key: &xts::XtsKey,
        tweak: &[u8; 16],
        unit: usize,
        input: &[u8],
        output: &mut [u8],
        decrypt: bool,
    ) -> Result<Output<()>> {
        check_lengths(input, output)?;
        xts::check(unit, input.len())?;
        self.run_stream(
            &XTS,
            input,
            output,
            // A unit that is not a multiple of 16 bytes is the whole buffer: one part.
            if unit.is_multiple_of(16) {
                unit
            } else {
                input.len()
            },
            |b, threads, output| xts::cpu(b, key, tweak, unit, input, output, decrypt, threads),
            |part, output| {
                let tweak = xts::unit_tweak(tweak, (part.start / unit) as u64);
                gpu::xts(key, &tweak, unit, &input[part], output, decrypt)
            },
        )
    }

    /// XTS-AES encryption in place over a buffer in GPU memory (16-byte aligned), with the
    /// layout rules of [`Aes::xts_encrypt`].
    pub fn xts_encrypt_device(
        &self,
        key: &xts::XtsKey,
        tweak: &[u8; 16],
        unit: usize,
        data: &mut impl cudarc::driver::DevicePtrMut<u8>,
    ) -> Result<()> {
        xts::check(unit, data.len())?;
        gpu::xts_device(key, tweak, unit, data, false)
    }

    /// XTS-AES decryption in place over a buffer in GPU memory.
    pub fn xts_decrypt_device(
        &self,
        key: &xts::XtsKey,
        tweak: &[u8; 16],
        unit: usize,
        data: &mut impl cudarc::driver::DevicePtrMut<u8>,
    ) -> Result<()> {
        xts::check(unit, data.len())?;
        gpu::xts_device(key, tweak, unit, data, true)
    }

    /// `op` over the buffer `input` on the backend the engine picks, into `output`:
    /// `cpu(backend, threads, output)`, or `gpu(part, output[part])` for each GPU's part of the
    /// bytes (parts start on multiples of `align`; the whole buffer where `op` does not split).
    fn run_stream<T: Join>(
        &self,
        op: &'static Operation,
        input: &[u8],
        output: &mut [u8],
        align: usize,
        cpu: impl FnOnce(Backend, usize, &mut [u8]) -> Result<T>,
        gpu: impl Fn(std::ops::Range<usize>, &mut [u8]) -> Result<T> + Sync,
    ) -> Result<Output<T>> {
        let w = workload(op.key, input.len(), host_location(input, output));
        self.engine.run_into(
            op,
            &w,
            &CPU_ORDER,
            output,
            (1, align.max(1)),
            cpu,
            |part, out, _| gpu(part, out),
        )
    }

    /// GCM's keystream pass over `input` on the backend the engine picks; returns the GHASH
    /// of the ciphertext.
    fn gcm_pass(
        &self,
        g: &gcm::Gcm,
        input: &[u8],
        output: &mut [u8],
        decrypt: bool,
    ) -> Result<Output<gf128::Gf128>> {
        self.run_stream(
            &GCM,
            input,
            output,
            16,
            |b, threads, output| cpu::gcm(b, g, input, output, decrypt, threads).map(Whole),
            |_, output| gpu::gcm(g, input, output, decrypt).map(Whole),
        )
        .map(|o| o.map(|z| z.0))
    }
}

/// `aes::Ctr` of kernels/aes/aes.cuh: what one counter-mode launch takes.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CtrParams {
    pub(crate) rk: [u32; 60],
    pub(crate) rounds: u32,
    pub(crate) ctr: [u32; 4],
    pub(crate) inc32: u32,
    pub(crate) pad: u32,
    pub(crate) bytes: u64,
}

/// `Gcm` of kernels/aes/aes.cu.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct GcmParams {
    pub(crate) c: CtrParams,
    pub(crate) seg_blocks: u64,
    pub(crate) decrypt: u32,
    pub(crate) pad: u32,
}

/// `Xts` of kernels/aes/xts.cu: one launch over whole blocks from a unit boundary.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct XtsParams {
    pub(crate) rk: [u32; 60],
    pub(crate) rounds: u32,
    pub(crate) unit_blocks: u32,
    pub(crate) entries: u32,
    pub(crate) blocks: u64,
}

/// `XtsTweaks` of kernels/aes/xts.cu: the tweak entries of a launch's units.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct XtsTweakParams {
    pub(crate) rk: [u32; 60],
    pub(crate) rounds: u32,
    pub(crate) tweak: [u32; 4],
    pub(crate) units: u32,
    pub(crate) entries: u32,
}

/// The two launches of XTS over `blocks` whole blocks starting at unit `first_unit`.
pub(crate) fn xts_params(
    key: &xts::XtsKey,
    tweak: &[u8; 16],
    unit: usize,
    first_unit: u64,
    blocks: u64,
    decrypt: bool,
) -> (XtsTweakParams, XtsParams) {
    let unit_blocks = (unit / 16) as u64;
    let (units, entries) = xts::gpu_entries(unit, blocks);
    let t = xts::unit_tweak(tweak, first_unit);
    let (trk, trounds) = key.tweak.round_keys();
    let (rk, rounds) = if decrypt {
        key.data.inverse_round_keys()
    } else {
        key.data.round_keys()
    };
    (
        XtsTweakParams {
            rk: trk,
            rounds: trounds,
            tweak: std::array::from_fn(|i| {
                u32::from_le_bytes(t[4 * i..4 * i + 4].try_into().unwrap())
            }),
            units,
            entries,
        },
        XtsParams {
            rk,
            rounds,
            unit_blocks: unit_blocks as u32,
            entries,
            blocks,
        },
    )
}

pub(crate) fn ctr_params(key: &Key, counter: &[u8; 16], inc32: bool, bytes: u64) -> CtrParams {
    let (rk, rounds) = key.round_keys();
    let ctr =
        std::array::from_fn(|i| u32::from_be_bytes(counter[4 * i..4 * i + 4].try_into().unwrap()));
    CtrParams {
        rk,
        rounds,
        ctr,
        inc32: inc32 as u32,
        pad: 0,
        bytes,
    }
}

/// `CtrBitsliced` of kernels/aes/bitsliced.cu: the counter fields, and every round key as one
/// mask word per bit (0 or all ones; plane p is bit p % 8 of byte p / 8).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CtrBitslicedParams {
    pub(crate) ctr: [u32; 4],
    pub(crate) inc32: u32,
    pub(crate) rounds: u32,
    pub(crate) bytes: u64,
    pub(crate) mask: [[u32; 128]; 15],
}

pub(crate) fn ctr_bitsliced_params(
    key: &Key,
    counter: &[u8; 16],
    bytes: u64,
) -> CtrBitslicedParams {
    let c = ctr_params(key, counter, false, bytes);
    let mask = std::array::from_fn(|r| {
        std::array::from_fn(|p| {
            let (byte, bit) = (p / 8, p % 8);
            let word = c.rk[4 * r + byte / 4];
            0u32.wrapping_sub((word >> (24 - 8 * (byte % 4) + bit)) & 1)
        })
    });
    CtrBitslicedParams {
        ctr: c.ctr,
        inc32: 0,
        rounds: c.rounds,
        bytes,
        mask,
    }
}

/// The kernel's table block for `threads` threads per block (a power of two), as big-endian
/// words: Shoup's table of H^threads (256 elements), then those of H^1, H^2, H^4, …
/// H^(threads/2) (of H^1 alone for one thread), which its reduction tree multiplies by. The
/// kernel computes the reduction half of the tables.
pub(crate) fn gpu_tables(h: gf128::Gf128, threads: usize) -> Vec<u32> {
    debug_assert!(threads.is_power_of_two());
    let levels = threads.ilog2().max(1) as usize;
    let mut t = Vec::with_capacity(1024 * (1 + levels));
    let mut table = |k: gf128::Gf128| {
        t.extend(
            gf128::shoup_table(k)
                .iter()
                .flat_map(|g| (0..4).map(move |i| (g.0 >> (96 - 32 * i)) as u32)),
        )
    };
    table(h.pow(threads as u128));
    let mut p = h;
    for _ in 0..levels {
        table(p);
        p = p.square();
    }
    t
}

pub(crate) fn segment_sums(words: &[u32]) -> Vec<gf128::Gf128> {
    words
        .chunks_exact(4)
        .map(|w| gf128::Gf128(w.iter().fold(0u128, |a, &x| (a << 32) | x as u128)))
        .collect()
}

/// Measures one backend: CTR, GCM or XTS fitted per block. The GPU on data in its memory over
/// 64 KiB and 8 MiB (the dispatcher adds the copies a batch's location costs); a CPU backend on
/// one thread for its fixed cost and on all of the pool's threads over 8 and 64 MiB (out of
/// cache, as the buffers the choice matters for) for its rate (see `dispatch::cpu_cost`).
fn calibrate(op: &'static str, backend: Backend) -> Result<Cost> {
    const LARGE: usize = 64 << 20;
    use crate::dispatch::{cpu_cost, fit_sizes};
    // Runs are sized in 16-byte blocks, the unit of the fit.
    const BLOCKS_PER_KIB: usize = 1024 / 16;
    let keys = CalibrationKeys::new()?;
    if backend == Backend::Cuda {
        let gpu = crate::backend::cuda::Gpu::available()?;
        // Pseudo-random bytes: encrypted in place, a buffer of zeros (or of one repeated byte)
        // would every other run give GHASH a ciphertext whose table look-ups all hit one entry,
        // about a fifth faster than real data.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..(8 << 20) / 8)
            .flat_map(|_| crate::backend::cpu::xorshift64(&mut x).to_le_bytes())
            .collect();
        let mut d = gpu.stream()?.clone_htod(&noise).driver("cuMemcpyHtoD")?;
        return fit_sizes(64 * BLOCKS_PER_KIB, 8192 * BLOCKS_PER_KIB, 1, |blocks| {
            let mut view = d.slice_mut(..16 * blocks);
            match op {
                OP_CTR => gpu::ctr_device(&keys.key, &[0; 16], &mut view),
                OP_XTS => gpu::xts_device(&keys.xts, &[0; 16], 4096, &mut view, false),
                _ => gpu::gcm_device(&keys.gcm, &mut view, false).map(|_| ()),
            }
        });
    }
    let data = vec![0x5au8; LARGE];
    let mut out = vec![0u8; LARGE];
    let mut run = |n: usize, threads: usize| -> Result<()> {
        keys.cpu_pass(op, backend, &data[..n], &mut out[..n], threads)
    };
    let pool = crate::backend::cpu::threads().max(1);
    let one = fit_sizes(64 * BLOCKS_PER_KIB, 1024 * BLOCKS_PER_KIB, 1, |blocks| {
        run(16 * blocks, 1)
    })?;
    let all = fit_sizes(8192 * BLOCKS_PER_KIB, LARGE / 16, 1, |blocks| {
        run(16 * blocks, pool)
    })?;
    Ok(cpu_cost(one, all, pool))
}

/// The fixed keys calibration runs under, set up once, outside the timed passes.
struct CalibrationKeys {
    key: Key,
    gcm: gcm::Gcm,
    xts: xts::XtsKey,
}

impl CalibrationKeys {
    fn new() -> Result<Self> {
        let key = Key::Aes128([7; 16]);
        Ok(CalibrationKeys {
            gcm: gcm::Gcm::new(&key, &[0; 12])?,
            xts: xts::XtsKey::new(&[[7u8; 16], [8u8; 16]].concat())?,
            key,
        })
    }

    /// One CPU pass of `op` over `data`.
    fn cpu_pass(
        &self,
        op: &'static str,
        backend: Backend,
        data: &[u8],
        out: &mut [u8],
        threads: usize,
    ) -> Result<()> {
        match op {
            OP_CTR => cpu::ctr(backend, &self.key, &[0; 16], data, out, threads),
            OP_XTS => xts::cpu(
                backend, &self.xts, &[0; 16], 4096, data, out, false, threads,
            ),
            _ => cpu::gcm(backend, &self.gcm, data, out, false, threads).map(|_| ()),
        }
    }
}

/// Seconds per block for a CPU backend on all threads over buffers of twice the last-level
/// cache each (64 MiB to 1 GiB), so that the data streams from DRAM: the median of three passes
/// after one that maps the pages. On a host with a 300 MiB cache, buffers of the cache's size
/// each (the best of two passes) gave 0.9-1.2x the rate AES then reached over 1 GiB.
fn calibrate_streaming(op: &'static str, backend: Backend) -> Result<f64> {
    let n = (2 * crate::backend::cpu::last_level_cache_bytes()).clamp(64 << 20, 1 << 30) & !4095;
    let mut data = vec![0u8; n];
    // Written in parallel: one thread would take longer than the passes.
    crate::backend::cpu::par_fill(&mut data, 0x5a);
    let mut out = vec![0u8; n];
    let keys = CalibrationKeys::new()?;
    let pool = crate::backend::cpu::threads().max(1);
    let s = crate::dispatch::median_seconds(3, &mut || {
        keys.cpu_pass(op, backend, &data, &mut out, pool)
    })?;
    Ok(s / (n / 16) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_backends_are_measured_beyond_the_cache_and_the_gpu_is_not() {
        use crate::dispatch::Calibration as _;
        for op in [&CTR, &GCM, &XTS] {
            let per_block = op
                .streaming(Backend::Portable)
                .expect("AES measures its CPU backends beyond the cache")
                .unwrap();
            // Between 1 ps and 1 µs a block on all threads: a real time, not a placeholder.
            assert!(
                (1e-12..1e-6).contains(&per_block),
                "{}: {per_block}",
                op.key
            );
        }
        assert!(CTR.streaming(Backend::Cuda).is_none());
    }

    #[test]
    fn key_expansion_matches_fips197() {
        // FIPS 197 Appendix A.1 and A.3: the last round key words.
        let k128 = Key::new(&hex::decode("2b7e151628aed2a6abf7158809cf4f3c").unwrap()).unwrap();
        let (w, r) = k128.round_keys();
        assert_eq!(
            (r, w[40..44].to_vec()),
            (10, vec![0xd014f9a8, 0xc9ee2589, 0xe13f0cc8, 0xb6630ca6])
        );
        let k256 = Key::new(
            &hex::decode("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
                .unwrap(),
        )
        .unwrap();
        let (w, r) = k256.round_keys();
        assert_eq!(
            (r, w[56..60].to_vec()),
            (14, vec![0xfe4890d1, 0xe6188d0b, 0x046df344, 0x706c631e])
        );
        assert_eq!(SBOX[0x53], 0xed);
    }
}
