//! SM2 (GB/T 32918, GM/T 0003) elliptic-curve operations in batches, for ECDH-PSI and friends:
//!
//! - `mul_base`: `k·G` for many scalars;
//! - `mul_shared` / `mul_compressed`: `k·P` for one secret scalar over many points (the blinding
//!   step of ECDH-PSI), on affine or SEC1-compressed points;
//! - `hash_to_curve_mul`: `k·H(m)` for many messages, where `H` is RFC 9380's `hash_to_curve`
//!   (random-oracle encoding, `expand_message_xmd` with SM3, simplified SWU with Z = -9); see
//!   [`SUITE`].
//!
//! Backends: the CPU path is RustCrypto's `sm2` over all cores ([`cpu`]); the GPU path runs the
//! SM2 instantiation of the generic field, curve, scalar-multiplication and hash-to-curve
//! templates (`kernels/sm2`). Both take and give the same encodings and agree bit for bit
//! (tests/sm2_kernels.rs, tests/sm2_backends.rs). The dispatcher picks one per batch.
//!
//! - `verify` / `verify_digests`: SM2 signature verification (GM/T 0003.2), see [`verify`].

pub mod cpu;
pub mod gpu;
pub mod sign;
pub mod verify;

use crate::backend::{Backend, Primitive};
use crate::dispatch::{Cost, Plan};
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::sig::{Reason, SigFormat, Verdicts};
use crate::{Engine, Output};
use std::borrow::Cow;

/// The group order n, big-endian.
pub const N: [u8; 32] = [
    0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0x72, 0x03, 0xdf, 0x6b, 0x21, 0xc6, 0x05, 0x2b, 0x53, 0xbb, 0xf4, 0x09, 0x39, 0xd5, 0x41, 0x23,
];

/// An affine point as `x || y`, big-endian; the point at infinity is all zeros.
pub type Point = [u8; 64];

/// A SEC1-compressed point: `02 || x` (y even) or `03 || x` (y odd), big-endian. The point at
/// infinity (SEC1's single `00` byte) is 33 zero bytes here, so every item has one size.
pub type Compressed = [u8; 33];

/// The hash-to-curve suite, named as RFC 9380 §8.10 asks: SM2, `expand_message_xmd` with SM3,
/// simplified SWU, random-oracle encoding. (RFC 9380 defines no SM2 suite; this is its
/// construction instantiated for SM2 with Z = -9 from its Appendix H.2 procedure.)
pub const SUITE: &str = "SM2_XMD:SM3_SSWU_RO_";

/// The domain separation tag batchcrypt's PSI uses (RFC 9380 §3.1: application, version, suite).
pub const DEFAULT_DST: &[u8] = b"BATCHCRYPT-PSI-V01-CS01-with-SM2_XMD:SM3_SSWU_RO_";

/// Entries of the GPU fixed-base table of G, as `kernels/sm2` defines `GTable`.
pub(crate) const G_TABLE_LEN: usize = crate::sig::items::WIDE_G_TABLE_LEN;
/// k·G items per GPU thread (`BASE_ITEMS` in `kernels/sm2`).
pub(crate) const BASE_ITEMS: usize = 4;

const OP_MUL_BASE: &str = "sm2_mul_base";
const OP_MUL: &str = "sm2_mul";
const OP_HASH_MUL: &str = "sm2_hash_mul";
const OP_VERIFY: &str = "sm2_verify";

/// Scalars must lie in `[0, n)`: an out-of-range scalar is the caller's error, not reduced.
pub(crate) fn check_scalars(scalars: &[[u8; 32]]) -> Result<()> {
    if scalars.is_empty() {
        return Err(Error::EmptyBatch);
    }
    use rayon::prelude::*;
    match scalars
        .par_iter()
        .with_min_len(1 << 14)
        .position_first(|k| !below_n(k))
    {
        Some(i) => Err(scalar_out_of_range(i)),
        None => Ok(()),
    }
}

/// Whether the big-endian `k` is below n: by its top 64 bits, but for the rare `k` whose top
/// bits are n's (a comparison of whole arrays is a byte-wise call, several times slower).
pub(crate) fn below_n(k: &[u8; 32]) -> bool {
    const N_TOP: u64 = u64::from_be_bytes([N[0], N[1], N[2], N[3], N[4], N[5], N[6], N[7]]);
    let top = u64::from_be_bytes(k[..8].try_into().expect("8 bytes"));
    top < N_TOP || (top == N_TOP && *k < N)
}

/// The error for scalar `i` of a batch not below n.
pub(crate) fn scalar_out_of_range(i: usize) -> Error {
    Error::invalid(format!("scalar {i} is not below the group order n"))
}

/// The tag the hash sees: RFC 9380 §5.3.3 replaces a tag over 255 bytes by
/// `H("H2C-OVERSIZE-DST-" || dst)`.
pub fn effective_dst(dst: &[u8]) -> Cow<'_, [u8]> {
    if dst.len() <= 255 {
        return Cow::Borrowed(dst);
    }
    let mut m = b"H2C-OVERSIZE-DST-".to_vec();
    m.extend_from_slice(dst);
    Cow::Owned(crate::sm3::digest(&m).to_vec())
}

/// Bytes of one message slot of the hash-to-curve kernel: a 4-byte little-endian length, then the
/// longest message of the batch, rounded up to whole limbs.
pub(crate) fn slot_bytes(msgs: &[&[u8]]) -> usize {
    4 + msgs.iter().map(|m| m.len()).max().unwrap_or(0).div_ceil(4) * 4
}

/// Writes message `m` into its slot `d` (length, then bytes; the rest is never read).
pub(crate) fn pack_slot(d: &mut [u8], m: &[u8]) {
    d[..4].copy_from_slice(&(m.len() as u32).to_le_bytes());
    d[4..4 + m.len()].copy_from_slice(m);
}

/// Every message in its slot, back to back.
pub(crate) fn pack_slots(msgs: &[&[u8]], slot: usize) -> Vec<u8> {
    let mut packed = vec![0u8; slot * msgs.len()];
    packed
        .chunks_exact_mut(slot)
        .zip(msgs)
        .for_each(|(d, m)| pack_slot(d, m));
    packed
}

/// SM2 batches through an [`Engine`] (`engine.sm2()`).
pub struct Sm2<'e> {
    pub(crate) engine: &'e Engine,
}

impl Sm2<'_> {
    /// `k·G` for each scalar (each below n).
    pub fn mul_base(&self, scalars: &[[u8; 32]]) -> Result<Output<Vec<Point>>> {
        let mut out = crate::backend::cpu::zeroed_arrays::<64>(scalars.len());
        let done = self.mul_base_into(scalars, &mut out)?;
        Ok(done.map(|()| out))
    }

    /// [`Self::mul_base`] into a caller's buffer of one point per scalar (no allocation: for
    /// callers that multiply batch after batch into the same memory).
    pub fn mul_base_into(&self, scalars: &[[u8; 32]], out: &mut [Point]) -> Result<Output<()>> {
        // The GPU path checks each scalar's range as it stages it; the CPU's here.
        if scalars.is_empty() {
            return Err(Error::EmptyBatch);
        }
        check_output(out.len(), scalars.len())?;
        let n = scalars.len() as u64;
        let w = MUL_BASE.workload(n, 32 * n, 64 * n, n);
        self.engine.run_into(
            &MUL_BASE,
            &w,
            MUL_BASE.cpu,
            out,
            (1, 1),
            |_, threads, out| {
                check_scalars(scalars)?;
                cpu::mul_base_into(scalars, threads, out);
                Ok(())
            },
            |r, out, _| gpu::mul_base_part_into(&scalars[r.clone()], r.start, out, gpu::BASE_CHUNK),
        )
    }

    /// `k·P` for one scalar over every affine point; `None` for a point not on the curve.
    pub fn mul_shared(&self, k: &[u8; 32], points: &[Point]) -> Result<Output<Vec<Option<Point>>>> {
        check_key(k, points.len())?;
        self.run(
            &MUL,
            points.len(),
            (64, 64),
            |threads| cpu::mul_shared(k, points, threads),
            |r| gpu::mul_shared(k, &points[r]),
        )
    }

    /// `k·P` for one scalar over every compressed point (decompressed by the backend); `None` for
    /// an encoding that is not a point on the curve (bad prefix, x ≥ p, no square root).
    pub fn mul_compressed(
        &self,
        k: &[u8; 32],
        points: &[Compressed],
    ) -> Result<Output<Vec<Option<Compressed>>>> {
        check_key(k, points.len())?;
        self.run(
            &MUL,
            points.len(),
            (33, 33),
            |threads| cpu::mul_compressed(k, points, threads),
            |r| gpu::mul_compressed(k, &points[r]),
        )
    }

    /// `k·H(m)` for each message, compressed, with `H` the [`SUITE`] hash-to-curve under `dst`.
    pub fn hash_to_curve_mul(
        &self,
        k: &[u8; 32],
        msgs: &[&[u8]],
        dst: &[u8],
    ) -> Result<Output<Vec<Compressed>>> {
        check_key(k, msgs.len())?;
        if dst.is_empty() {
            return Err(Error::invalid(
                "the domain separation tag must not be empty (RFC 9380 §3.1)",
            ));
        }
        let bytes: u64 = msgs.iter().map(|m| m.len() as u64).sum();
        let dst = effective_dst(dst);
        self.run(
            &HASH_MUL,
            msgs.len(),
            ((bytes / msgs.len() as u64).max(1), 33),
            |threads| cpu::hash_to_curve_mul(k, msgs, &dst, threads),
            |r| gpu::hash_to_curve_mul(k, &msgs[r], &dst),
        )
    }

    /// `H(m)` for each message, compressed (the multiplication by one).
    pub fn hash_to_curve(&self, msgs: &[&[u8]], dst: &[u8]) -> Result<Output<Vec<Compressed>>> {
        let mut one = [0u8; 32];
        one[31] = 1;
        self.hash_to_curve_mul(&one, msgs, dst)
    }

    /// Verifies signature `i` (`format`: DER or compact `r || s`) over the digest
    /// `digests[i] = SM3(Z_A || M)` with the signer's SEC1 public key `pubkeys[i]`. One verdict
    /// per item; a malformed item is a [`Reason`] in its slot, not an error of the batch.
    pub fn verify_digests(
        &self,
        digests: &[[u8; 32]],
        sigs: &[&[u8]],
        pubkeys: &[&[u8]],
        format: SigFormat,
    ) -> Result<Output<Verdicts>> {
        let n = crate::sig::batch_len(&[
            ("digests", digests.len()),
            ("signatures", sigs.len()),
            ("public keys", pubkeys.len()),
        ])?;
        self.run(
            &VERIFY,
            n,
            (32 + 72 + 33, 1),
            |threads| {
                crate::backend::cpu::par_map(1, n, threads, |i| {
                    verify::item(&digests[i], sigs[i], pubkeys[i], format)
                        .and_then(|it| cpu::verify_item(&it))
                })
            },
            |r| {
                gpu::verify(
                    r.len(),
                    |i| {
                        let i = r.start + i;
                        let (r, s, key) = verify::parts(sigs[i], pubkeys[i], format)?;
                        let digest = gpu::Digest::Given(digests[i]);
                        Ok(gpu::DeviceItem { r, s, key, digest })
                    },
                    None,
                )
            },
        )
        .map(|out| out.map(|results| Verdicts { results }))
    }

    /// Verifies signature `i` over message `msgs[i]` signed by the holder of `pubkeys[i]` with
    /// distinguishing identifier `id` ([`verify::DEFAULT_ID`] unless the parties agreed on
    /// another). The digest `SM3(Z_A || M)` is part of the batch: on the GPU the device hashes
    /// messages of up to [`gpu::DEVICE_MESSAGE_MAX`] bytes (and decompresses keys); longer
    /// ones, and all on the CPU, are hashed on the CPU, where a compressed key costs a square root
    /// for `Z_A`.
    pub fn verify(
        &self,
        msgs: &[&[u8]],
        sigs: &[&[u8]],
        pubkeys: &[&[u8]],
        id: &[u8],
        format: SigFormat,
    ) -> Result<Output<Verdicts>> {
        let n = crate::sig::batch_len(&[
            ("messages", msgs.len()),
            ("signatures", sigs.len()),
            ("public keys", pubkeys.len()),
        ])?;
        let za = verify::Za::new(id)?; // the ID checked, and hashed, once for the batch
        let digest = |i: usize, key: &crate::sig::Sec1Key| host_digest(&za, key, msgs[i]);
        let bytes: u64 = msgs.iter().map(|m| m.len() as u64).sum();
        self.run(
            &VERIFY,
            n,
            (bytes / n as u64 + 72 + 33, 1),
            |threads| {
                crate::backend::cpu::par_map(1, n, threads, |i| {
                    let (r, s, key) = verify::parts(sigs[i], pubkeys[i], format)?;
                    let it = verify::item_from_parts(&digest(i, &key)?, &r, &s, key)?;
                    cpu::verify_item(&it)
                })
            },
            |r| {
                let messages = gpu::Messages::new(id, &msgs[r.clone()]);
                gpu::verify(
                    r.len(),
                    |i| {
                        let (rr, s, key) =
                            verify::parts(sigs[r.start + i], pubkeys[r.start + i], format)?;
                        let digest = messages.digest(i, || digest(r.start + i, &key))?;
                        Ok(gpu::DeviceItem {
                            r: rr,
                            s,
                            key,
                            digest,
                        })
                    },
                    Some(&messages),
                )
            },
        )
        .map(|out| out.map(|results| Verdicts { results }))
    }

    /// A batch of `n` items of `op`, `(bytes in, bytes out)` each, on the backend the engine
    /// picks: `cpu(threads)` or `gpu(items)` on each GPU's slice.
    fn run<T: Send>(
        &self,
        op: &'static Operation,
        n: usize,
        (bytes_in, bytes_out): (u64, u64),
        cpu: impl FnOnce(usize) -> Vec<T>,
        gpu: impl Fn(std::ops::Range<usize>) -> Result<Vec<T>> + Sync,
    ) -> Result<Output<Vec<T>>> {
        let n64 = n as u64;
        let w = op.workload(n64, bytes_in * n64, bytes_out * n64, n64);
        self.engine
            .run(op, &w, op.cpu, |_, threads| Ok(cpu(threads)), |r, _| gpu(r))
    }

    /// The estimated time of a batch of `n` items of `op` (one of [`OPERATIONS`], with typical
    /// item sizes) on all CPU cores and on the GPU, measuring each backend on first use: where
    /// the dispatcher's crossover lies (`batchcrypt calibrate`).
    pub fn estimates(&self, op: &str, n: usize) -> Result<[Plan; 2]> {
        let Some(op) = OPERATIONS.iter().copied().find(|o| o.key == op) else {
            let keys: Vec<&str> = OPERATIONS.iter().map(|o| o.key).collect();
            return Err(Error::invalid(format!(
                "unknown SM2 operation {op:?}; one of {keys:?}"
            )));
        };
        Ok(self
            .engine
            .dispatcher()
            .estimates(&op.typical(n as u64), Backend::Portable, op))
    }
}

/// `e = SM3(Z_A || M)` on the host: an uncompressed key's coordinates go into `Z_A` as given
/// (the backend checks the curve equation); a compressed one needs its y, a square root here.
pub(crate) fn host_digest(
    za: &verify::Za,
    key: &crate::sig::Sec1Key,
    msg: &[u8],
) -> std::result::Result<[u8; 32], Reason> {
    let xy = match *key {
        crate::sig::Sec1Key::Uncompressed { x, y } => {
            let mut xy = [0u8; 64];
            xy[..32].copy_from_slice(&x);
            xy[32..].copy_from_slice(&y);
            xy
        }
        ref key => cpu::key_xy(key).ok_or(Reason::PublicKeyNotOnCurve)?,
    };
    Ok(za.message_digest(&xy, msg))
}

const fn operation(
    key: &'static str,
    about: &'static str,
    item: (u64, u64, u64),
    calibrate: fn(Backend) -> Result<Cost>,
) -> Operation {
    Operation::new(
        key,
        Primitive::Sm2,
        about,
        &[Backend::Portable],
        item,
        calibrate,
    )
}

/// k·G for many scalars.
pub static MUL_BASE: Operation = operation(OP_MUL_BASE, "SM2 k·G", (32, 64, 1), |b| {
    calibrate(OP_MUL_BASE, b)
});
/// k·P for one scalar over many points.
pub static MUL: Operation = operation(
    OP_MUL,
    "SM2 k·P, one k over many points",
    (33, 33, 1),
    |b| calibrate(OP_MUL, b),
);
/// Hash-to-curve, then k·H(m).
pub static HASH_MUL: Operation = operation(
    OP_HASH_MUL,
    "SM2 hash-to-curve and k·H(m)",
    (24, 33, 1),
    |b| calibrate(OP_HASH_MUL, b),
);
/// Signature verification.
pub static VERIFY: Operation = operation(
    OP_VERIFY,
    "SM2 signature verification",
    (32 + 72 + 33, 1, 1),
    |b| calibrate(OP_VERIFY, b),
);

/// The SM2 operations: k·G, k·P, hash-to-curve + k·H(m), verify.
pub const OPERATIONS: [&Operation; 4] = [&MUL_BASE, &MUL, &HASH_MUL, &VERIFY];

/// An output buffer must hold one result per input.
pub(crate) fn check_output(len: usize, n: usize) -> Result<()> {
    if len != n {
        return Err(Error::invalid(format!(
            "output holds {len} points for {n} scalars"
        )));
    }
    Ok(())
}

fn check_key(k: &[u8; 32], n: usize) -> Result<()> {
    check_scalars(std::slice::from_ref(k))?;
    if n == 0 {
        return Err(Error::EmptyBatch);
    }
    Ok(())
}

/// Measures one backend (compute only, on one thread for the CPU): a small and a larger batch.
fn calibrate(op: &'static str, backend: Backend) -> Result<Cost> {
    let engine = Engine::measuring(backend);
    let sm2 = engine.sm2();
    let (small, large) = match backend {
        Backend::Cuda => (1, 1 << 14),
        _ => (2, 64),
    };
    let keys: Vec<[u8; 32]> = (0..large as u32)
        .map(|i| crate::sm3::digest(&i.to_le_bytes()))
        .map(|mut k| {
            k[0] = 1;
            k
        })
        .collect();
    let msgs: Vec<&[u8]> = keys.iter().map(|k| &k[..16]).collect();
    // Input points or signatures only for the operation that takes them.
    let points: Vec<Point> = match op {
        OP_MUL => {
            let base = cpu::mul_base(&keys[..64], 1);
            (0..large).map(|i| base[i % 64]).collect()
        }
        _ => Vec::new(),
    };
    let sample = match op {
        OP_VERIFY => sign::Sample::new(64),
        _ => sign::Sample::default(),
    };
    // One thread for the CPU, so the fit is per core; the dispatcher scales by threads.
    let run = |n: usize| -> Result<()> {
        match (op, backend) {
            (OP_MUL_BASE, Backend::Portable) => drop(cpu::mul_base(&keys[..n], 1)),
            (OP_MUL, Backend::Portable) => drop(cpu::mul_shared(&keys[0], &points[..n], 1)),
            (OP_HASH_MUL, Backend::Portable) => {
                drop(cpu::hash_to_curve_mul(&keys[0], &msgs[..n], DEFAULT_DST, 1))
            }
            (OP_VERIFY, Backend::Portable) => {
                let ok =
                    (0..n).all(|i| sample.item(i).and_then(|it| cpu::verify_item(&it)).is_ok());
                if !ok {
                    return Err(Error::invalid("calibration sample failed to verify"));
                }
            }
            (OP_VERIFY, _) => {
                let (digests, sigs, keys) = sample.batch(n);
                if !sm2
                    .verify_digests(&digests, &sigs, &keys, SigFormat::Compact)?
                    .value
                    .all_valid()
                {
                    return Err(Error::invalid("calibration sample failed to verify"));
                }
            }
            (OP_MUL_BASE, _) => drop(sm2.mul_base(&keys[..n])?),
            (OP_MUL, _) => drop(sm2.mul_shared(&keys[0], &points[..n])?),
            _ => drop(sm2.hash_to_curve_mul(&keys[0], &msgs[..n], DEFAULT_DST)?),
        }
        Ok(())
    };
    crate::dispatch::fit_sizes(small, large, 1, run)
}

#[cfg(test)]
mod tests {
    use super::{below_n, N};

    #[test]
    fn below_n_at_its_edges() {
        let mut k = N;
        assert!(!below_n(&k), "n");
        k[31] -= 1;
        assert!(below_n(&k), "n - 1");
        k[8] = 0;
        assert!(below_n(&k), "n's top bits, lower below");
        k = N;
        k[31] = 0xff;
        assert!(!below_n(&k), "n's top bits, lower above");
        assert!(!below_n(&[0xff; 32]));
        assert!(below_n(&[0; 32]));
        let mut top_below = [0xff; 32];
        top_below[..8].copy_from_slice(&N[..8]);
        top_below[7] -= 1;
        assert!(below_n(&top_below), "top bits below n's");
    }
}
