//! The batched operations: each maps a merged batch of items onto one library call.
//!
//! Items whose encoding is wrong before any arithmetic (a Schnorr signature that is not 64
//! bytes) get their verdict here and stay out of the engine's batch; everything else is the
//! library's to judge, so a reply is exactly what the library gives for the same items.

use crate::batcher::{Batched, Outputs, Ran};
use crate::proto::EcdsaCurve;
use batchcrypt::backend::cpu::par_concat;
use batchcrypt::ecdsa::{Curve, EncodedItems};
use batchcrypt::p256::P256;
use batchcrypt::secp256k1::{EcdsaOptions, Reason, Secp256k1Curve, SigFormat};
use batchcrypt::sha256::{FixedParts, Messages, Mode};
use batchcrypt::{Engine, Output};
use bytes::Bytes;
use std::sync::Arc;

/// A verdict as the reply carries it: empty where valid, else the reason.
pub type Verdict = Result<(), String>;

/// One request's list of byte strings, read in place: a packed buffer cut by a width or by the
/// items' ends (checked to rise within it), or a buffer per item.
pub enum Col {
    Packed {
        data: Bytes,
        width: usize,
        ends: Vec<u32>,
    },
    Each(Vec<Bytes>),
}

impl Col {
    pub fn len(&self) -> usize {
        match self {
            Col::Packed { data, width, ends } if *width > 0 => data.len() / width,
            Col::Packed { ends, .. } => ends.len(),
            Col::Each(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The column with its packed bytes copied into page-locked memory, where its items are whole
    /// 16-byte words, the process has a GPU and the pool an idle block (a connection's thread
    /// never waits for the pool to grow: [`batchcrypt::backend::gpu::page_locked_now`]): copied
    /// on arrival, while the bytes are in this thread's cache, a batch's GPU kernel reads them in
    /// place instead of the batch's thread joining every request's into staging first (the
    /// SHA-256 batches).
    pub fn page_locked(self) -> Col {
        match self {
            Col::Packed { data, width, ends }
                if width > 0 && width % 16 == 0 && batchcrypt::backend::gpu::count() > 0 =>
            {
                let data = match batchcrypt::backend::gpu::page_locked_now(data.len()) {
                    Some(mut block) => {
                        block.copy_from_slice(&data);
                        Bytes::from_owner(block)
                    }
                    None => data,
                };
                Col::Packed { data, width, ends }
            }
            other => other,
        }
    }

    pub fn get(&self, i: usize) -> &[u8] {
        match self {
            Col::Packed { data, width, .. } if *width > 0 => &data[i * width..(i + 1) * width],
            Col::Packed { data, ends, .. } => {
                let start = if i == 0 { 0 } else { ends[i - 1] as usize };
                &data[start..ends[i] as usize]
            }
            Col::Each(v) => &v[i],
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Whether every item is `width` bytes: known at once for a column packed at a width (its
    /// length a multiple of it, checked on arrival), item by item otherwise.
    pub fn all_of_width(&self, width: usize) -> bool {
        match self {
            Col::Packed { width: w, .. } if *w > 0 => *w == width,
            _ => self.iter().all(|m| m.len() == width),
        }
    }

    /// The items as buffers of their own (slices of a packed buffer), for operations that keep
    /// items one by one.
    pub fn into_vec(self) -> Vec<Bytes> {
        match self {
            Col::Each(v) => v,
            Col::Packed { ref data, .. } => (0..self.len())
                .map(|i| {
                    let item = self.get(i);
                    data.slice_ref(item)
                })
                .collect(),
        }
    }
}

/// The requests' items one after another, for operations that take them one by one.
fn flatten<T>(requests: Vec<Vec<T>>) -> Vec<T> {
    requests.into_iter().flatten().collect()
}

fn backend_of<T>(o: &Output<T>) -> String {
    o.backend.to_string()
}

/// Runs `items`, where each is already judged (`Err`) or goes to `run` with the others; the
/// outputs come back in the items' order.
fn with_prechecked<T, O: Send + Sync + 'static>(
    items: Vec<Result<T, O>>,
    run: impl FnOnce(Vec<T>) -> Result<(Vec<O>, String), String>,
) -> Result<Ran<O>, String> {
    let mut outs: Vec<Option<O>> = Vec::with_capacity(items.len());
    let mut good = Vec::new();
    for it in items {
        match it {
            Ok(t) => {
                good.push(t);
                outs.push(None);
            }
            Err(o) => outs.push(Some(o)),
        }
    }
    let (mut ran, backend) = if good.is_empty() {
        (Vec::new(), "none".to_string())
    } else {
        run(good)?
    };
    ran.reverse();
    let outs = outs
        .into_iter()
        .map(|o| {
            o.or_else(|| ran.pop())
                .ok_or("the engine returned too few outputs")
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Ran {
        outs: outs.into(),
        backend,
    })
}

fn verdicts(r: Vec<Result<(), Reason>>) -> Vec<Verdict> {
    r.into_iter()
        .map(|v| v.map_err(|e| e.to_string()))
        .collect()
}

pub struct Ecdsa(pub Arc<Engine>);

/// One ECDSA request's columns, of one length; every hash 32 bytes (checked on arrival). Where
/// its batch is expected on a GPU, the request's items are also encoded for it on arrival
/// ([`EcdsaItems::encode`]), by the thread that received them, so a batch only copies them.
pub struct EcdsaItems {
    pub hashes: Col,
    pub sigs: Col,
    pub keys: Col,
    pub encoded: Option<EcdsaEncoded>,
}

/// A request's items encoded for the GPU, on the curve it names.
pub enum EcdsaEncoded {
    Secp256k1(EncodedItems<Secp256k1Curve>),
    P256(EncodedItems<P256>),
}

impl EcdsaItems {
    /// The request's items encoded for `curve` under `opts`.
    pub fn encode(&mut self, curve: EcdsaCurve, opts: &EcdsaOptions) {
        fn items<C: Curve>(r: &EcdsaItems, opts: &EcdsaOptions) -> EncodedItems<C> {
            EncodedItems::page_locked(r.hashes.len(), opts, |i| {
                (hash32(r.hashes.get(i)), r.sigs.get(i), r.keys.get(i))
            })
        }
        self.encoded = Some(match curve {
            EcdsaCurve::Secp256k1 => EcdsaEncoded::Secp256k1(items(self, opts)),
            EcdsaCurve::P256 => EcdsaEncoded::P256(items(self, opts)),
        });
    }
}

/// A hash checked on arrival to be 32 bytes (a zero hash where not, which no path reaches).
fn hash32(h: &[u8]) -> &[u8; 32] {
    h.try_into().unwrap_or(&[0; 32])
}

impl Batched for Ecdsa {
    /// Requests batch together when they name the same curve and rules.
    type Group = (EcdsaCurve, SigFormat, bool);
    type Items = EcdsaItems;
    type Out = Verdict;
    fn count(items: &EcdsaItems) -> usize {
        items.hashes.len()
    }
    fn run(
        &self,
        &(curve, format, require_low_s): &Self::Group,
        requests: Vec<EcdsaItems>,
    ) -> Result<Ran<Verdict>, String> {
        if requests.iter().any(|r| !r.hashes.all_of_width(32)) {
            return Err("a message hash is not 32 bytes".into());
        }
        if requests
            .iter()
            .any(|r| r.sigs.len() != r.hashes.len() || r.keys.len() != r.hashes.len())
        {
            return Err("a request's lists differ in length".into());
        }
        let opts = EcdsaOptions {
            format,
            require_low_s,
        };
        let out = match curve {
            EcdsaCurve::Secp256k1 => {
                run_ecdsa::<Secp256k1Curve>(&self.0, &requests, &opts, |e| match e {
                    EcdsaEncoded::Secp256k1(e) => Some(e),
                    _ => None,
                })
            }
            EcdsaCurve::P256 => run_ecdsa::<P256>(&self.0, &requests, &opts, |e| match e {
                EcdsaEncoded::P256(e) => Some(e),
                _ => None,
            }),
        }
        .map_err(|e| e.to_string())?;
        Ok(Ran {
            backend: backend_of(&out),
            outs: verdicts(out.value.results).into(),
        })
    }
}

/// One batch of `requests` on curve `C`: from their encoded items where every request has them
/// (`encoded` picks the curve's), the columns then read only if the batch stays on the CPU; else
/// from the columns. The library's inputs point into the requests' buffers: nothing per item is
/// copied but the hash, nor reference-counted.
fn run_ecdsa<C: Curve>(
    engine: &Engine,
    requests: &[EcdsaItems],
    opts: &EcdsaOptions,
    encoded: impl Fn(&EcdsaEncoded) -> Option<&EncodedItems<C>>,
) -> batchcrypt::Result<Output<batchcrypt::secp256k1::Verdicts>> {
    let columns = || {
        let total = requests.iter().map(Ecdsa::count).sum();
        let mut hashes: Vec<[u8; 32]> = Vec::with_capacity(total);
        let mut sigs: Vec<&[u8]> = Vec::with_capacity(total);
        let mut keys: Vec<&[u8]> = Vec::with_capacity(total);
        for r in requests {
            hashes.extend(r.hashes.iter().map(|h| *hash32(h)));
            sigs.extend(r.sigs.iter());
            keys.extend(r.keys.iter());
        }
        (hashes, sigs, keys)
    };
    let ecdsa = engine.ecdsa::<C>();
    let pieces: Option<Vec<&EncodedItems<C>>> = requests
        .iter()
        .map(|r| r.encoded.as_ref().and_then(&encoded))
        .collect();
    match pieces {
        Some(pieces) => ecdsa.verify_encoded(&pieces, columns),
        None => {
            let (hashes, sigs, keys) = columns();
            ecdsa.verify(&hashes, &sigs, &keys, opts)
        }
    }
}

pub struct Schnorr(pub Arc<Engine>);

/// A BIP340 item: (message, signature, x-only key), or its verdict when its lengths are wrong.
pub type SchnorrItem = Result<(Bytes, [u8; 64], [u8; 32]), Verdict>;

impl Batched for Schnorr {
    type Group = ();
    type Items = Vec<SchnorrItem>;
    type Out = Verdict;
    fn count(items: &Self::Items) -> usize {
        items.len()
    }
    fn run(&self, _: &(), requests: Vec<Self::Items>) -> Result<Ran<Verdict>, String> {
        with_prechecked(flatten(requests), |good| {
            let msgs: Vec<&[u8]> = good.iter().map(|i| &i.0[..]).collect();
            let sigs: Vec<[u8; 64]> = good.iter().map(|i| i.1).collect();
            let keys: Vec<[u8; 32]> = good.iter().map(|i| i.2).collect();
            let out = self
                .0
                .secp256k1()
                .verify_schnorr(&msgs, &sigs, &keys)
                .map_err(|e| e.to_string())?;
            Ok((verdicts(out.value.results.clone()), backend_of(&out)))
        })
    }
}

/// A Schnorr item from the request's bytes.
pub fn schnorr_item(msg: Bytes, sig: &[u8], key: &[u8]) -> SchnorrItem {
    let sig: [u8; 64] = sig
        .try_into()
        .map_err(|_| Err(Reason::BadLength.to_string()))?;
    let key: [u8; 32] = key
        .try_into()
        .map_err(|_| Err(Reason::BadPublicKeyEncoding.to_string()))?;
    Ok((msg, sig, key))
}

pub struct Sm2Verify(pub Arc<Engine>);

impl Batched for Sm2Verify {
    /// (format, distinguishing identifier)
    type Group = (SigFormat, Bytes);
    /// (message, signature, key) per item.
    type Items = Vec<(Bytes, Bytes, Bytes)>;
    type Out = Verdict;
    fn count(items: &Self::Items) -> usize {
        items.len()
    }
    fn run(
        &self,
        (format, id): &Self::Group,
        requests: Vec<Self::Items>,
    ) -> Result<Ran<Verdict>, String> {
        let items = flatten(requests);
        let msgs: Vec<&[u8]> = items.iter().map(|i| &i.0[..]).collect();
        let sigs: Vec<&[u8]> = items.iter().map(|i| &i.1[..]).collect();
        let keys: Vec<&[u8]> = items.iter().map(|i| &i.2[..]).collect();
        let out = self
            .0
            .sm2()
            .verify(&msgs, &sigs, &keys, id, *format)
            .map_err(|e| e.to_string())?;
        Ok(Ran {
            backend: backend_of(&out),
            outs: verdicts(out.value.results).into(),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashKind {
    Sha256,
    Sha256d,
    Sm3,
}

pub struct Hash(pub Arc<Engine>);

impl Batched for Hash {
    type Group = HashKind;
    type Items = Col;
    type Out = [u8; 32];
    fn count(items: &Col) -> usize {
        items.len()
    }
    fn run(&self, kind: &HashKind, requests: Vec<Col>) -> Result<Ran<[u8; 32]>, String> {
        HASH_POOL.run(|| self.hash(kind, requests))
    }
    /// A batch starts on a thread of the hash pool, where `run` then stays: one thread woken per
    /// batch instead of a blocking thread that then wakes a pool thread and waits for it.
    fn spawn(job: impl FnOnce() + Send + 'static) {
        if let Err(job) = HASH_POOL.spawn(job) {
            tokio::task::spawn_blocking(job);
        }
    }
}

/// The threads hash batches run on: half the cores. Receiving a request of hashes costs the
/// server's connections about as much CPU as hashing it, so a hash batch that took every core
/// (the dispatcher's choice for a lone batch where the CPU is as fast as the GPU from host
/// memory) left the connections waiting; on half the cores the dispatcher weighs the GPU against
/// what the batch can have. A batch itself runs on one of these threads, and its parallel copies
/// (items joined; digests copied out of the GPU's staging, past 1 MiB) on the others, so after
/// each batch only these threads, not every core's, search for more work: in a closed loop of
/// small requests that search took 2-8 cores. Without a GPU, batches and connections share the
/// cores evenly.
static HASH_POOL: batchcrypt::backend::cpu::HalfPool =
    batchcrypt::backend::cpu::HalfPool::new("serve-hash", 1, usize::MAX);

/// Measures the hash operations' backends, where the dispatcher has not already (a saved
/// calibration, or this engine's earlier work): before the server listens, on idle cores. A
/// batch of tens of thousands of digests costs the CPU about what it costs the GPU from host
/// memory, so the choice is close; measured on a first batch under load instead, with the
/// connections of a thousand clients on every core, it went either way, and a server that chose
/// its CPU kept it while those connections took the cores (batches 3-5x slower, the load behind).
/// (Under load the dispatcher also weighs each backend by what its recent batches took.)
pub(crate) fn measure_hash_backends(engine: &Engine) {
    use batchcrypt::{dispatch::Location, Primitive};
    // Every hash operation the library's batches pick from (SHA256d of 64 and 80 bytes, SHA-256
    // fixed and variable, SM3), as its registry lists them.
    for op in batchcrypt::registry::REGISTRY
        .iter()
        .filter(|op| matches!(op.primitive, Primitive::Sha256 | Primitive::Sm3))
    {
        let _ = engine.estimates(op, 1 << 15, Location::Host);
    }
}

impl Hash {
    fn hash(&self, kind: &HashKind, requests: Vec<Col>) -> Result<Ran<[u8; 32]>, String> {
        let err = |e: batchcrypt::Error| e.to_string();
        let items = || -> Vec<&[u8]> { requests.iter().flat_map(Col::iter).collect() };
        match kind {
            HashKind::Sha256 | HashKind::Sha256d => {
                let mode = if *kind == HashKind::Sha256 {
                    Mode::Single
                } else {
                    Mode::Double
                };
                if let Some(width) = packed_width(&requests) {
                    // Requests packed at one width are one buffer each: staged for the GPU
                    // straight from the requests, not joined first.
                    let parts: Vec<&[u8]> = requests
                        .iter()
                        .filter_map(|r| match r {
                            Col::Packed { data, .. } => Some(&data[..width * r.len()]),
                            Col::Each(_) => None,
                        })
                        .collect();
                    let parts = FixedParts::new(&parts, width).map_err(err)?;
                    let hash = |out: &mut [[u8; 32]]| {
                        (self.0.sha256())
                            .hash_fixed_parts_into(&parts, mode, out)
                            .map_err(err)
                    };
                    // The digests go where the GPU can write them itself, where the pool has a
                    // page-locked block idle: no staging copy on the batch's thread, and the
                    // replies share that block as they would a vector.
                    let n = parts.count();
                    let (outs, out) = match PageLockedDigests::now(n) {
                        Some(mut digests) => {
                            let out = hash(&mut digests)?;
                            (Outputs::new(digests), out)
                        }
                        None => {
                            let mut digests = batchcrypt::backend::cpu::zeroed_arrays::<32>(n);
                            let out = hash(&mut digests)?;
                            (digests.into(), out)
                        }
                    };
                    return Ok(Ran {
                        backend: backend_of(&out),
                        outs,
                    });
                }
                let items = items();
                let data = par_concat(&items);
                let offsets: Vec<u64>;
                let msgs =
                    if items.iter().all(|m| m.len() == items[0].len()) && !items[0].is_empty() {
                        Messages::fixed(&data, items[0].len())
                    } else {
                        offsets = std::iter::once(0)
                            .chain(items.iter().scan(0u64, |at, m| {
                                *at += m.len() as u64;
                                Some(*at)
                            }))
                            .collect();
                        Messages::var(&data, &offsets)
                    }
                    .map_err(err)?;
                let out = self.0.sha256().hash(&msgs, mode).map_err(err)?;
                Ok(Ran {
                    backend: backend_of(&out),
                    outs: out.value.into(),
                })
            }
            HashKind::Sm3 => {
                // The SM3 kernels take messages of one length: one call per length present.
                let items = items();
                let mut by_len: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
                for (i, m) in items.iter().enumerate() {
                    by_len.entry(m.len()).or_default().push(i);
                }
                let mut outs = vec![[0u8; 32]; items.len()];
                let mut backend = String::new();
                for (len, idx) in by_len {
                    let data = par_concat(&idx.iter().map(|&i| items[i]).collect::<Vec<_>>());
                    let out = self
                        .0
                        .sm3()
                        .hash_fixed_count(&data, len, idx.len())
                        .map_err(err)?;
                    backend = backend_of(&out);
                    for (&i, d) in idx.iter().zip(out.value) {
                        outs[i] = d;
                    }
                }
                Ok(Ran {
                    outs: outs.into(),
                    backend,
                })
            }
        }
    }
}

/// A hash batch's digests in a page-locked block.
struct PageLockedDigests(batchcrypt::backend::gpu::PageLocked);

impl PageLockedDigests {
    /// Room for `n` digests, where the pool has an idle block of that size (never without a
    /// GPU: [`batchcrypt::backend::gpu::page_locked_now`]).
    fn now(n: usize) -> Option<Self> {
        batchcrypt::backend::gpu::page_locked_now(32 * n).map(PageLockedDigests)
    }
}

impl std::ops::Deref for PageLockedDigests {
    type Target = [[u8; 32]];
    fn deref(&self) -> &[[u8; 32]] {
        self.0.as_chunks().0
    }
}

impl std::ops::DerefMut for PageLockedDigests {
    fn deref_mut(&mut self) -> &mut [[u8; 32]] {
        self.0.as_chunks_mut().0
    }
}

/// The width every request's packed column shares, where they all have one (and it is not 0).
fn packed_width(requests: &[Col]) -> Option<usize> {
    let mut width = None;
    for r in requests {
        match r {
            Col::Packed { width: w, .. } if *w > 0 && width.is_none_or(|x| x == *w) => {
                width = Some(*w)
            }
            _ => return None,
        }
    }
    width
}

pub struct Sm2HashMul(pub Arc<Engine>);

impl Batched for Sm2HashMul {
    /// (scalar, domain separation tag)
    type Group = ([u8; 32], Bytes);
    type Items = Vec<Bytes>;
    type Out = Option<[u8; 33]>;
    fn count(items: &Vec<Bytes>) -> usize {
        items.len()
    }
    fn run(
        &self,
        (k, dst): &Self::Group,
        requests: Vec<Vec<Bytes>>,
    ) -> Result<Ran<Self::Out>, String> {
        let msgs: Vec<&[u8]> = requests.iter().flatten().map(|m| &m[..]).collect();
        let out = self
            .0
            .sm2()
            .hash_to_curve_mul(k, &msgs, dst)
            .map_err(|e| e.to_string())?;
        Ok(Ran {
            backend: backend_of(&out),
            outs: out.value.into_iter().map(Some).collect::<Vec<_>>().into(),
        })
    }
}

pub struct Sm2Mul(pub Arc<Engine>);

impl Batched for Sm2Mul {
    type Group = [u8; 32];
    /// Per item a compressed point, or nothing where the request's bytes were not 33 long.
    type Items = Vec<Option<[u8; 33]>>;
    type Out = Option<[u8; 33]>;
    fn count(items: &Self::Items) -> usize {
        items.len()
    }
    fn run(&self, k: &[u8; 32], requests: Vec<Self::Items>) -> Result<Ran<Self::Out>, String> {
        let items = requests
            .into_iter()
            .flatten()
            .map(|p| p.ok_or(None))
            .collect();
        with_prechecked(items, |points| {
            let out = self
                .0
                .sm2()
                .mul_compressed(k, &points)
                .map_err(|e| e.to_string())?;
            Ok((out.value.clone(), backend_of(&out)))
        })
    }
}

pub struct Transactions(pub Arc<Engine>);

impl Batched for Transactions {
    type Group = ();
    type Items = Vec<batchcrypt::bitcoin::txs::LooseTx>;
    type Out = Result<(), batchcrypt::bitcoin::txs::TxRejection>;
    fn count(items: &Self::Items) -> usize {
        items.len()
    }
    fn run(&self, _: &(), requests: Vec<Self::Items>) -> Result<Ran<Self::Out>, String> {
        let items = flatten(requests);
        let (verdicts, report) = batchcrypt::bitcoin::txs::verify_transactions(&self.0, &items)
            .map_err(|e| e.to_string())?;
        let backend = report
            .and_then(|r| r.ecdsa_backend.or(r.schnorr_backend))
            .map_or_else(|| "none".to_string(), |b| b.to_string());
        Ok(Ran {
            outs: verdicts.into(),
            backend,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_reads_its_items_in_place_in_every_form() {
        let data = Bytes::from_static(b"abcdefgh");
        let by_width = Col::Packed {
            data: data.clone(),
            width: 2,
            ends: Vec::new(),
        };
        let by_ends = Col::Packed {
            data: data.clone(),
            width: 0,
            ends: vec![1, 1, 5, 8],
        };
        let each = Col::Each(vec![data.slice(0..3), Bytes::new(), data.slice(3..8)]);
        assert_eq!(
            by_width.iter().collect::<Vec<_>>(),
            [b"ab", b"cd", b"ef", b"gh"]
        );
        let want: [&[u8]; 4] = [b"a", b"", b"bcde", b"fgh"];
        assert_eq!(by_ends.iter().collect::<Vec<_>>(), want);
        assert_eq!(
            (each.len(), each.get(1), each.get(2)),
            (3, &b""[..], &b"defgh"[..])
        );
        assert_eq!(by_ends.into_vec(), want.map(Bytes::from_static).to_vec());
        assert_eq!(by_width.into_vec()[3], Bytes::from_static(b"gh"));
    }
}
