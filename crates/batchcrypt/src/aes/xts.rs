//! XTS-AES (IEEE 1619-2018, NIST SP 800-38E), the mode of disk and storage encryption. A buffer
//! is a run of data units (sectors) of `unit` bytes; unit j is encrypted under the tweak
//! `tweak + j` (a 128-bit little-endian sector number), block i of a unit under
//! `E_K2(tweak + j)·α^i` in GF(2^128); a unit whose length is not a whole number of blocks ends
//! with ciphertext stealing. Units are independent, so they run on all cores.

use super::Key;
use crate::backend::Backend;
use crate::error::{Error, Result};
use aes::cipher::consts::U16;
use aes::cipher::{BlockDecrypt, BlockEncrypt, BlockSizeUser, KeyInit};

/// A block cipher of AES's block size.
pub(crate) trait Block16:
    BlockEncrypt + BlockDecrypt + BlockSizeUser<BlockSize = U16>
{
}
impl<C: BlockEncrypt + BlockDecrypt + BlockSizeUser<BlockSize = U16>> Block16 for C {}
use openssl::cipher::CipherRef;
use openssl::cipher_ctx::CipherCtx;

/// Blocks in one data unit at most (IEEE 1619-2018 §5.1): 16 MiB.
pub const MAX_UNIT_BYTES: usize = 16 << 20;

/// An XTS key: the data key K1 and the tweak key K2, of one size.
#[derive(Clone, PartialEq, Eq)]
pub struct XtsKey {
    pub(crate) data: Key,
    pub(crate) tweak: Key,
}

impl std::fmt::Debug for XtsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "XtsKey::Aes{}(..)", self.data.bits())
    }
}

impl XtsKey {
    /// `K1 || K2`: 32 bytes for XTS-AES-128, 64 for XTS-AES-256. Equal halves are refused, as
    /// SP 800-38E requires (they would make the tweak a known function of the data key).
    pub fn new(bytes: &[u8]) -> Result<XtsKey> {
        if bytes.len() != 32 && bytes.len() != 64 {
            return Err(Error::invalid(format!(
                "an XTS key is two AES keys, 32 bytes (XTS-AES-128) or 64 (XTS-AES-256), not {}",
                bytes.len()
            )));
        }
        let (k1, k2) = bytes.split_at(bytes.len() / 2);
        if k1 == k2 {
            return Err(Error::invalid(
                "the two halves of an XTS key must differ (SP 800-38E)",
            ));
        }
        Ok(XtsKey {
            data: Key::new(k1)?,
            tweak: Key::new(k2)?,
        })
    }

    pub fn bits(&self) -> usize {
        self.data.bits()
    }
}

/// Checks a request: units of at least one block and at most [`MAX_UNIT_BYTES`]; a unit that
/// is not a whole number of blocks only as the whole buffer; a last unit of at least one block.
pub fn check(unit: usize, len: usize) -> Result<()> {
    if !(16..=MAX_UNIT_BYTES).contains(&unit) {
        return Err(Error::invalid(format!(
            "an XTS data unit has 16 to {MAX_UNIT_BYTES} bytes, not {unit}"
        )));
    }
    if len < 16 {
        return Err(Error::invalid(format!(
            "XTS needs at least one 16-byte block, got {len} bytes"
        )));
    }
    if !unit.is_multiple_of(16) && unit < len {
        return Err(Error::invalid(format!(
            "a data unit of {unit} bytes is not a whole number of blocks: use a multiple of 16, or one unit for the whole buffer"
        )));
    }
    let last = len % unit;
    if last != 0 && last < 16 {
        return Err(Error::invalid(format!(
            "the last data unit would have {last} bytes; XTS needs at least 16"
        )));
    }
    Ok(())
}

/// The tweak of unit `j`: `tweak + j` as 128-bit little-endian integers.
pub(crate) fn unit_tweak(tweak: &[u8; 16], j: u64) -> [u8; 16] {
    u128::from_le_bytes(*tweak)
        .wrapping_add(u128::from(j))
        .to_le_bytes()
}

/// t·α in GF(2^128) with IEEE 1619's little-endian bit order.
pub(crate) fn mul_alpha(t: u128) -> u128 {
    (t << 1) ^ ((t >> 127) * 0x87)
}

/// t·α^n, n shift-and-fold steps at a time (each up to 120 bits, as the GPU kernel does).
pub(crate) fn mul_alpha_pow(mut t: u128, mut n: u64) -> u128 {
    while n > 0 {
        let k = n.min(120) as u32;
        let over = t >> (128 - k);
        t = (t << k) ^ over ^ (over << 1) ^ (over << 2) ^ (over << 7);
        n -= u64::from(k);
    }
    t
}

/// Blocks per tweak entry of the GPU kernel (kernels/aes/xts.cu's TWEAK_STRIDE).
pub(crate) const GPU_TWEAK_STRIDE: u64 = 64;

/// The GPU kernel's tweak layout for a launch of `blocks` blocks from a unit boundary: the units
/// it touches, and the entries per unit (one per [`GPU_TWEAK_STRIDE`] blocks; a launch shorter
/// than a unit needs entries for its own blocks only).
pub(crate) fn gpu_entries(unit: usize, blocks: u64) -> (u32, u32) {
    let unit_blocks = (unit / 16) as u64;
    (
        blocks.div_ceil(unit_blocks) as u32,
        unit_blocks.min(blocks).div_ceil(GPU_TWEAK_STRIDE) as u32,
    )
}

/// The bytes a GPU takes: all of them, or when the buffer's last unit ends in a partial block,
/// all but that unit's last whole block and the partial one, whose ciphertext stealing
/// [`steal_tail`] does on the CPU.
pub(crate) fn whole_block_bytes(len: usize) -> usize {
    match len % 16 {
        0 => len,
        rest => len - 16 - rest,
    }
}

/// The last `input.len()` bytes of the buffer (one whole block and a partial one, from byte
/// `offset`), ciphertext stealing included, with RustCrypto's `aes`.
pub(crate) fn steal_tail(
    key: &XtsKey,
    tweak: &[u8; 16],
    unit: usize,
    offset: usize,
    input: &[u8],
    output: &mut [u8],
    decrypt: bool,
) {
    fn with<C: Block16 + KeyInit>(
        key: &XtsKey,
        t: [u8; 16],
        block: u64,
        input: &[u8],
        output: &mut [u8],
        decrypt: bool,
    ) {
        let k1 = C::new_from_slice(key.data.bytes()).expect("key size checked");
        let t = u128::from_le_bytes(key.tweak.encrypt_block(t));
        xts_unit(&k1, mul_alpha_pow(t, block), input, output, decrypt);
    }
    let t = unit_tweak(tweak, (offset / unit) as u64);
    let block = ((offset % unit) / 16) as u64;
    match key.data {
        Key::Aes128(_) => with::<aes::Aes128>(key, t, block, input, output, decrypt),
        Key::Aes256(_) => with::<aes::Aes256>(key, t, block, input, output, decrypt),
    }
}

/// Units grouped for one thread's turn: whole units of about a CPU segment.
fn group_bytes(unit: usize, len: usize, threads: usize) -> usize {
    unit * (super::cpu::seg_bytes(len, threads) / unit).max(1)
}

/// A run of units for one thread: the units from number `first` on.
struct Units<'a> {
    key: &'a XtsKey,
    tweak: &'a [u8; 16],
    first: u64,
    unit: usize,
    decrypt: bool,
}

impl Units<'_> {
    /// Each unit with its tweak: `(tweak + first + j, input unit, output unit)`.
    fn each<'b>(
        &self,
        input: &'b [u8],
        output: &'b mut [u8],
    ) -> impl Iterator<Item = ([u8; 16], &'b [u8], &'b mut [u8])> + use<'b, '_> {
        input
            .chunks(self.unit)
            .zip(output.chunks_mut(self.unit))
            .enumerate()
            .map(|(j, (a, b))| (unit_tweak(self.tweak, self.first + j as u64), a, b))
    }
}

/// XTS over the buffer on a CPU backend (OpenSSL or RustCrypto's `aes`), on all pool threads
/// when `threads > 1`.
pub(crate) fn cpu(
    backend: Backend,
    key: &XtsKey,
    tweak: &[u8; 16],
    unit: usize,
    input: &[u8],
    output: &mut [u8],
    decrypt: bool,
    threads: usize,
) -> Result<()> {
    use rayon::prelude::*;
    let group = group_bytes(unit, input.len(), threads);
    let run = |g: usize, a: &[u8], b: &mut [u8]| -> Result<()> {
        let units = Units {
            key,
            tweak,
            first: g as u64 * (group / unit) as u64,
            unit,
            decrypt,
        };
        match backend {
            Backend::OpenSsl => openssl_units(&units, a, b),
            _ => {
                portable_units(&units, a, b);
                Ok(())
            }
        }
    };
    if threads <= 1 {
        input
            .chunks(group)
            .zip(output.chunks_mut(group))
            .enumerate()
            .try_for_each(|(g, (a, b))| run(g, a, b))
    } else {
        input
            .par_chunks(group)
            .zip(output.par_chunks_mut(group))
            .enumerate()
            .try_for_each(|(g, (a, b))| run(g, a, b))
    }
}

/// OpenSSL's XTS (AES-NI/VAES assembly): one context per group, re-initialized with each unit's
/// tweak; each update call is one whole data unit, as OpenSSL's XTS requires.
fn openssl_units(u: &Units<'_>, input: &[u8], output: &mut [u8]) -> Result<()> {
    let cipher = super::cpu::xts_cipher(&u.key.data);
    let both = [u.key.data.bytes(), u.key.tweak.bytes()].concat();
    let mut ctx = CipherCtx::new().map_err(super::cpu::ossl)?;
    let init = |ctx: &mut CipherCtx, k: Option<&[u8]>, c: Option<&CipherRef>, iv: Option<&[u8]>| {
        if u.decrypt {
            ctx.decrypt_init(c, k, iv)
        } else {
            ctx.encrypt_init(c, k, iv)
        }
        .map_err(super::cpu::ossl)
    };
    init(&mut ctx, Some(&both), Some(cipher), None)?;
    for (t, a, b) in u.each(input, output) {
        init(&mut ctx, None, None, Some(&t))?;
        let n = ctx.cipher_update(a, Some(b)).map_err(super::cpu::ossl)?;
        debug_assert_eq!(n, a.len());
    }
    Ok(())
}

/// RustCrypto's `aes` (AES-NI detected at run time) under our XTS.
fn portable_units(u: &Units<'_>, input: &[u8], output: &mut [u8]) {
    fn with<C: Block16 + KeyInit>(u: &Units<'_>, input: &[u8], output: &mut [u8]) {
        let k1 = C::new_from_slice(u.key.data.bytes()).expect("key size checked");
        let k2 = C::new_from_slice(u.key.tweak.bytes()).expect("key size checked");
        for (t, a, b) in u.each(input, output) {
            let mut t = aes::Block::from(t);
            k2.encrypt_block(&mut t);
            xts_unit(&k1, u128::from_le_bytes(t.into()), a, b, u.decrypt);
        }
    }
    match u.key.data {
        Key::Aes128(_) => with::<aes::Aes128>(u, input, output),
        Key::Aes256(_) => with::<aes::Aes256>(u, input, output),
    }
}

/// One data unit (at least one block) under the encrypted tweak `t`: blocks eight at a time
/// through the cipher (AES-NI pipelines them), then ciphertext stealing for a partial last block.
pub(crate) fn xts_unit<C: Block16>(
    c: &C,
    mut t: u128,
    input: &[u8],
    output: &mut [u8],
    decrypt: bool,
) {
    let crypt = |blocks: &mut [aes::Block]| {
        if decrypt {
            c.decrypt_blocks(blocks)
        } else {
            c.encrypt_blocks(blocks)
        }
    };
    let rest = input.len() % 16;
    // Blocks handled one for one: all of them, or all but the last whole one when stealing.
    let whole = input.len() / 16 - usize::from(rest != 0);
    let mut blocks = [aes::Block::default(); 8];
    let mut tweaks = [0u128; 8];
    for (a, b) in input[..16 * whole]
        .chunks(128)
        .zip(output[..16 * whole].chunks_mut(128))
    {
        let n = a.len() / 16;
        for i in 0..n {
            tweaks[i] = t;
            let x = u128::from_le_bytes(a[16 * i..16 * i + 16].try_into().unwrap()) ^ t;
            blocks[i] = x.to_le_bytes().into();
            t = mul_alpha(t);
        }
        crypt(&mut blocks[..n]);
        for i in 0..n {
            let y = u128::from_le_bytes(blocks[i].into()) ^ tweaks[i];
            b[16 * i..16 * i + 16].copy_from_slice(&y.to_le_bytes());
        }
    }
    if rest == 0 {
        return;
    }
    // Stealing (IEEE 1619 §5.3.2, §5.4.2): the last whole block goes under T_m when decrypting,
    // T_{m-1} when encrypting; the partial block borrows the tail of its neighbour's result.
    let one = |x: [u8; 16], t: u128| -> [u8; 16] {
        let mut b = [(u128::from_le_bytes(x) ^ t).to_le_bytes().into()];
        crypt(&mut b);
        (u128::from_le_bytes(b[0].into()) ^ t).to_le_bytes()
    };
    let m = 16 * whole;
    let (t_first, t_second) = if decrypt {
        (mul_alpha(t), t)
    } else {
        (t, mul_alpha(t))
    };
    let cc = one(input[m..m + 16].try_into().unwrap(), t_first);
    let mut pp = cc;
    pp[..rest].copy_from_slice(&input[m + 16..]);
    output[m + 16..].copy_from_slice(&cc[..rest]);
    output[m..m + 16].copy_from_slice(&one(pp, t_second));
}
