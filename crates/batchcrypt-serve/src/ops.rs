//! The batched operations: each maps a merged batch of items onto one library call.
//!
//! Items whose encoding is wrong before any arithmetic (a Schnorr signature that is not 64
//! bytes) get their verdict here and stay out of the engine's batch; everything else is the
//! library's to judge, so a reply is exactly what the library gives for the same items.

use crate::batcher::{Batched, Ran};
use crate::proto::EcdsaCurve;
use batchcrypt::p256::P256;
use batchcrypt::secp256k1::{EcdsaOptions, Reason, SigFormat};
use batchcrypt::sha256::{Messages, Mode};
use batchcrypt::{Engine, Output};
use bytes::Bytes;
use std::sync::Arc;

/// A verdict as the reply carries it: empty where valid, else the reason.
pub type Verdict = Result<(), String>;

fn backend_of<T>(o: &Output<T>) -> String {
    o.backend.to_string()
}

/// Runs `items`, where each is already judged (`Err`) or goes to `run` with the others; the
/// outputs come back in the items' order.
fn with_prechecked<T, O>(
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
    Ok(Ran { outs, backend })
}

fn verdicts(r: Vec<Result<(), Reason>>) -> Vec<Verdict> {
    r.into_iter()
        .map(|v| v.map_err(|e| e.to_string()))
        .collect()
}

pub struct Ecdsa(pub Arc<Engine>);

impl Batched for Ecdsa {
    /// Requests batch together when they name the same curve and rules.
    type Group = (EcdsaCurve, SigFormat, bool);
    /// (message hash, signature, SEC1 key)
    type Item = ([u8; 32], Bytes, Bytes);
    type Out = Verdict;
    fn run(
        &self,
        &(curve, format, require_low_s): &Self::Group,
        items: Vec<Self::Item>,
    ) -> Result<Ran<Verdict>, String> {
        let hashes: Vec<[u8; 32]> = items.iter().map(|i| i.0).collect();
        let sigs: Vec<&[u8]> = items.iter().map(|i| &i.1[..]).collect();
        let keys: Vec<&[u8]> = items.iter().map(|i| &i.2[..]).collect();
        let opts = EcdsaOptions {
            format,
            require_low_s,
        };
        let out = match curve {
            EcdsaCurve::Secp256k1 => self
                .0
                .secp256k1()
                .verify_ecdsa(&hashes, &sigs, &keys, &opts),
            EcdsaCurve::P256 => self.0.ecdsa::<P256>().verify(&hashes, &sigs, &keys, &opts),
        }
        .map_err(|e| e.to_string())?;
        Ok(Ran {
            backend: backend_of(&out),
            outs: verdicts(out.value.results),
        })
    }
}

pub struct Schnorr(pub Arc<Engine>);

impl Batched for Schnorr {
    type Group = ();
    /// (message, signature, x-only key), or the item's verdict when its lengths are wrong.
    type Item = Result<(Bytes, [u8; 64], [u8; 32]), Verdict>;
    type Out = Verdict;
    fn run(&self, _: &(), items: Vec<Self::Item>) -> Result<Ran<Verdict>, String> {
        with_prechecked(items, |good| {
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
pub fn schnorr_item(msg: Bytes, sig: &[u8], key: &[u8]) -> <Schnorr as Batched>::Item {
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
    type Item = (Bytes, Bytes, Bytes);
    type Out = Verdict;
    fn run(
        &self,
        (format, id): &Self::Group,
        items: Vec<Self::Item>,
    ) -> Result<Ran<Verdict>, String> {
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
            outs: verdicts(out.value.results),
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
    type Item = Bytes;
    type Out = [u8; 32];
    fn run(&self, kind: &HashKind, items: Vec<Bytes>) -> Result<Ran<[u8; 32]>, String> {
        let err = |e: batchcrypt::Error| e.to_string();
        let data: Vec<u8> = items.concat();
        let fixed = items.iter().all(|m| m.len() == items[0].len());
        match kind {
            HashKind::Sha256 | HashKind::Sha256d => {
                let mode = if *kind == HashKind::Sha256 {
                    Mode::Single
                } else {
                    Mode::Double
                };
                let offsets: Vec<u64>;
                let msgs = if fixed && !items[0].is_empty() {
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
                    outs: out.value,
                })
            }
            HashKind::Sm3 => {
                // The SM3 kernels take messages of one length: one call per length present.
                let mut by_len: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
                for (i, m) in items.iter().enumerate() {
                    by_len.entry(m.len()).or_default().push(i);
                }
                let mut outs = vec![[0u8; 32]; items.len()];
                let mut backend = String::new();
                for (len, idx) in by_len {
                    let data: Vec<u8> =
                        idx.iter().flat_map(|&i| items[i].iter().copied()).collect();
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
                Ok(Ran { outs, backend })
            }
        }
    }
}

pub struct Sm2HashMul(pub Arc<Engine>);

impl Batched for Sm2HashMul {
    /// (scalar, domain separation tag)
    type Group = ([u8; 32], Bytes);
    type Item = Bytes;
    type Out = Option<[u8; 33]>;
    fn run(&self, (k, dst): &Self::Group, items: Vec<Bytes>) -> Result<Ran<Self::Out>, String> {
        let msgs: Vec<&[u8]> = items.iter().map(|m| &m[..]).collect();
        let out = self
            .0
            .sm2()
            .hash_to_curve_mul(k, &msgs, dst)
            .map_err(|e| e.to_string())?;
        Ok(Ran {
            backend: backend_of(&out),
            outs: out.value.into_iter().map(Some).collect(),
        })
    }
}

pub struct Sm2Mul(pub Arc<Engine>);

impl Batched for Sm2Mul {
    type Group = [u8; 32];
    /// A compressed point, or nothing where the request's bytes were not 33 long.
    type Item = Option<[u8; 33]>;
    type Out = Option<[u8; 33]>;
    fn run(&self, k: &[u8; 32], items: Vec<Self::Item>) -> Result<Ran<Self::Out>, String> {
        let items = items.into_iter().map(|p| p.ok_or(None)).collect();
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
    type Item = batchcrypt::bitcoin::txs::LooseTx;
    type Out = Result<(), batchcrypt::bitcoin::txs::TxRejection>;
    fn run(&self, _: &(), items: Vec<Self::Item>) -> Result<Ran<Self::Out>, String> {
        let (verdicts, report) = batchcrypt::bitcoin::txs::verify_transactions(&self.0, &items)
            .map_err(|e| e.to_string())?;
        let backend = report
            .and_then(|r| r.ecdsa_backend.or(r.schnorr_backend))
            .map_or_else(|| "none".to_string(), |b| b.to_string());
        Ok(Ran {
            outs: verdicts,
            backend,
        })
    }
}
