//! Script verification of many inputs with their signature checks batched.
//!
//! Every input's scripts run on the CPU (all cores). Each signature check the interpreter asks
//! for is recorded with its message (the sighash) and answered `true`; the recorded checks then
//! go to the engine as two batches, ECDSA and BIP340, which the dispatcher sends to the GPU or
//! keeps on the CPU (a large run in segments, one segment's batches verified while the next
//! segment's scripts run; where the batches are expected on a GPU, the tasks that interpret a
//! part also encode its checks as kernel items, so a batch only copies them). A CHECKMULTISIG
//! also records every other (signature, key) pair its
//! loop might try, verified in the same batch. An input whose checks all hold was evaluated
//! exactly. An input with a failed check (a bad signature, a multisig whose signatures match
//! later keys, a script that expects a CHECKSIG to be false) is evaluated again on the CPU with
//! the batch's verdicts known, any new check batched again: so every verdict equals Bitcoin
//! Core's.

use super::checker::{CpuVerifier, SigVerifier, TxChecker, BITCOIN_ECDSA};
use super::script::{verify_script, witness_program, Flags, ScriptError};
use super::sighash::Precomputed;
use super::{SpentOutput, Tx};
use crate::backend::Backend;
use crate::ecdsa::EncodedItems;
use crate::error::{Error, Result};
use crate::secp256k1::Secp256k1Curve;
use crate::sig::items::Encoded;
use crate::Engine;
use rayon::prelude::*;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One transaction to verify: the outputs its inputs spend (one per input) and the rules.
pub struct TxJob<'t, 'a> {
    pub tx: &'t Tx<'a>,
    pub spent: &'t [SpentOutput],
    pub flags: Flags,
}

/// A signature check as the interpreter asked for it. Plain data, no heap: a window records
/// a million of them, and freeing a million small allocations on one thread cost more than the
/// interpreter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Check {
    Ecdsa {
        msg: [u8; 32],
        sig: [u8; 64],
        key: Sec1,
    },
    Schnorr {
        msg: [u8; 32],
        sig: [u8; 64],
        key: [u8; 32],
    },
}

/// A SEC1 public key of up to 65 bytes, zero-padded (so equal keys hash alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Sec1 {
    len: u8,
    bytes: [u8; 65],
}

impl Sec1 {
    /// None for a longer encoding, which no verifier accepts.
    fn new(key: &[u8]) -> Option<Sec1> {
        let mut bytes = [0u8; 65];
        bytes.get_mut(..key.len())?.copy_from_slice(key);
        Some(Sec1 {
            len: key.len() as u8,
            bytes,
        })
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// Answers from what is known; records and optimistically accepts what is not. Records too the
/// checks a multisig may ask for later (`hints`), but not those it then asks. This input's
/// records start at `pending_from` and `hints_from`.
struct Deferring<'k, 'p> {
    known: Option<&'k HashMap<Check, bool>>,
    pending: &'p mut Vec<Check>,
    hints: &'p mut Vec<Check>,
    pending_from: usize,
    hints_from: usize,
}

impl<'k, 'p> Deferring<'k, 'p> {
    fn new(
        known: Option<&'k HashMap<Check, bool>>,
        pending: &'p mut Vec<Check>,
        hints: &'p mut Vec<Check>,
    ) -> Self {
        Deferring {
            known,
            pending_from: pending.len(),
            hints_from: hints.len(),
            pending,
            hints,
        }
    }

    fn ask(&mut self, c: Check) -> bool {
        if let Some(&v) = self.known.and_then(|k| k.get(&c)) {
            return v;
        }
        if let Some(h) = self.hints[self.hints_from..].iter().position(|h| *h == c) {
            self.hints.swap_remove(self.hints_from + h);
        }
        self.pending.push(c);
        true
    }
}

impl SigVerifier for Deferring<'_, '_> {
    fn ecdsa(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8]) -> bool {
        let Some(key) = Sec1::new(pubkey) else {
            return false;
        };
        self.ask(Check::Ecdsa {
            msg: *msg,
            sig: *sig,
            key,
        })
    }
    fn schnorr(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8; 32]) -> bool {
        self.ask(Check::Schnorr {
            msg: *msg,
            sig: *sig,
            key: *pubkey,
        })
    }
    fn defers(&self) -> bool {
        true
    }
    fn expect_ecdsa(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8]) {
        let Some(key) = Sec1::new(pubkey) else {
            return;
        };
        let c = Check::Ecdsa {
            msg: *msg,
            sig: *sig,
            key,
        };
        let known = self.known.is_some_and(|k| k.contains_key(&c));
        if !known
            && !self.hints[self.hints_from..].contains(&c)
            && !self.pending[self.pending_from..].contains(&c)
        {
            self.hints.push(c);
        }
    }
}

/// The batch's verdicts first, then libsecp256k1 for a check the batch did not hold.
struct Replay<'k> {
    known: &'k HashMap<Check, bool>,
    cpu_checks: usize,
}

impl Replay<'_> {
    fn ask(&mut self, c: Check, verify: impl FnOnce() -> bool) -> bool {
        self.known.get(&c).copied().unwrap_or_else(|| {
            self.cpu_checks += 1;
            verify()
        })
    }
}

impl SigVerifier for Replay<'_> {
    fn ecdsa(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8]) -> bool {
        let Some(key) = Sec1::new(pubkey) else {
            return false;
        };
        let c = Check::Ecdsa {
            msg: *msg,
            sig: *sig,
            key,
        };
        self.ask(c, || CpuVerifier.ecdsa(msg, sig, pubkey))
    }
    fn schnorr(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8; 32]) -> bool {
        let c = Check::Schnorr {
            msg: *msg,
            sig: *sig,
            key: *pubkey,
        };
        self.ask(c, || CpuVerifier.schnorr(msg, sig, pubkey))
    }
}

/// The per-transaction hashes verifying a job's inputs needs, as Bitcoin Core's
/// `PrecomputedTransactionData::Init` without `force`: BIP341's only when an input with a witness
/// spends a taproot output (no other input can reach a taproot signature hash; they cost a pass
/// over every spent output).
fn precompute(j: &TxJob<'_, '_>) -> Precomputed {
    let taproot = j.tx.inputs.iter().zip(j.spent).any(|(i, s)| {
        !i.witness.is_empty()
            && matches!(witness_program(&s.script_pubkey), Some((1, p)) if p.len() == 32)
    });
    Precomputed::new(j.tx, taproot.then_some(j.spent))
}

/// Inputs per part of the first run.
const PART: usize = 64;

/// A run is cut into up to this many segments for the overlap of scripts and signatures, each
/// of at least MIN_SEGMENT_INPUTS inputs (smaller GPU batches would waste more than they hide).
/// Each segment is SHRINK times the one before: a segment's batch, faster per input than the
/// scripts, still hides behind the next one's scripts, and the last batch, which nothing hides,
/// is the smallest.
const SEGMENTS: usize = 5;
const MIN_SEGMENT_INPUTS: usize = 1 << 15;
const SHRINK: f64 = 0.75;

/// Where each segment of a run of `n_parts` parts ends.
fn segment_ends(n_parts: usize) -> Vec<usize> {
    let min_parts = MIN_SEGMENT_INPUTS / PART;
    let count = (1..=SEGMENTS)
        .rev()
        .find(|&k| {
            let last = SHRINK.powi(k as i32 - 1);
            let all: f64 = (0..k).map(|i| SHRINK.powi(i as i32)).sum();
            (n_parts as f64 * last / all) >= min_parts as f64
        })
        .unwrap_or(1);
    let all: f64 = (0..count).map(|i| SHRINK.powi(i as i32)).sum();
    let mut ends = Vec::with_capacity(count);
    let mut share = 0.0;
    for i in 0..count {
        share += SHRINK.powi(i as i32) / all;
        ends.push(((n_parts as f64 * share).round() as usize).min(n_parts));
    }
    ends[count - 1] = n_parts;
    ends
}

/// The batch verdicts of the first run's checks, in order, and the backends that gave them.
#[derive(Default)]
struct Verdicts {
    ecdsa: Vec<bool>,
    schnorr: Vec<bool>,
    hints: Vec<bool>,
    ecdsa_backend: Option<Backend>,
    schnorr_backend: Option<Backend>,
}

impl Verdicts {
    /// The checks of `parts`, verified as one ECDSA and one BIP340 batch; and the time it took.
    fn batch(&self, engine: &Engine, parts: &[Part]) -> Result<(Verdicts, Duration)> {
        let t = Instant::now();
        let all = || parts.iter().flat_map(|p| &p.checks);
        // The hints (ECDSA only) ride in the ECDSA batch, after the checks asked for.
        let ecdsa = all().chain(parts.iter().flat_map(|p| &p.hints));
        let hinted: usize = parts.iter().map(|p| p.hints.len()).sum();
        let schnorr: Vec<&Check> = all()
            .filter(|c| matches!(c, Check::Schnorr { .. }))
            .collect();
        // Items the interpreter's tasks encoded, in the batches' order.
        let encoded: Option<Vec<&PartItems>> = parts.iter().map(|p| p.encoded.as_ref()).collect();
        let (ecdsa_items, schnorr_items) = match &encoded {
            Some(e) => (
                Some(
                    e.iter()
                        .map(|p| &p.ecdsa)
                        .chain(e.iter().map(|p| &p.hints))
                        .collect(),
                ),
                Some(e.iter().map(|p| &p.schnorr).collect()),
            ),
            None => (None, None),
        };
        let t_columns = t.elapsed();
        let (mut ecdsa, ecdsa_backend) = verify_ecdsa_batch(engine, ecdsa, ecdsa_items)?;
        let hints = ecdsa.split_off(ecdsa.len() - hinted);
        let t_ecdsa = t.elapsed();
        let (schnorr, schnorr_backend) = verify_schnorr_batch(engine, &schnorr, schnorr_items)?;
        if crate::pipeline::tracing() {
            eprintln!(
                "bitcoin batch: {} ECDSA, {} BIP340 checks: selection {:.1} ms, ECDSA {:.1} ms, BIP340 {:.1} ms",
                ecdsa.len() + hints.len(),
                schnorr.len(),
                ms(t_columns),
                ms(t_ecdsa - t_columns),
                ms(t.elapsed() - t_ecdsa)
            );
        }
        let v = Verdicts {
            ecdsa,
            schnorr,
            hints,
            ecdsa_backend,
            schnorr_backend,
        };
        Ok((v, t.elapsed()))
    }

    fn append(&mut self, mut v: Verdicts) {
        self.ecdsa.append(&mut v.ecdsa);
        self.schnorr.append(&mut v.schnorr);
        self.hints.append(&mut v.hints);
        self.ecdsa_backend = self.ecdsa_backend.or(v.ecdsa_backend);
        self.schnorr_backend = self.schnorr_backend.or(v.schnorr_backend);
    }
}

/// The first run over consecutive inputs.
#[derive(Default)]
struct Part {
    results: Vec<std::result::Result<(), ScriptError>>,
    /// How many checks each input asked for, in order.
    asked: Vec<u32>,
    checks: Vec<Check>,
    /// How many checks each input's multisigs may ask for beyond those (all ECDSA), in order.
    hinted: Vec<u32>,
    hints: Vec<Check>,
    /// The GPU items of the checks and hints, encoded by the task that interpreted the part
    /// when the batch is expected on a GPU (the batch then only copies them).
    encoded: Option<PartItems>,
}

/// A part's GPU items: its ECDSA checks, its BIP340 checks, its hints, each in order.
struct PartItems {
    ecdsa: EncodedItems<Secp256k1Curve>,
    schnorr: Encoded,
    hints: EncodedItems<Secp256k1Curve>,
}

impl PartItems {
    fn new(part: &Part) -> PartItems {
        fn ecdsa_of(c: &Check) -> Option<(&[u8; 32], &[u8], &[u8])> {
            match c {
                Check::Ecdsa { msg, sig, key } => Some((msg, &sig[..], key.as_slice())),
                Check::Schnorr { .. } => None,
            }
        }
        let ecdsa: Vec<_> = part.checks.iter().filter_map(ecdsa_of).collect();
        let hints: Vec<_> = part.hints.iter().filter_map(ecdsa_of).collect();
        let schnorr: Vec<_> = part
            .checks
            .iter()
            .filter_map(|c| match c {
                Check::Schnorr { msg, sig, key } => Some((&msg[..], sig, key)),
                Check::Ecdsa { .. } => None,
            })
            .collect();
        PartItems {
            ecdsa: EncodedItems::new(ecdsa.len(), &BITCOIN_ECDSA, |i| ecdsa[i]),
            schnorr: crate::secp256k1::pre_encode_schnorr(&schnorr),
            hints: EncodedItems::new(hints.len(), &BITCOIN_ECDSA, |i| hints[i]),
        }
    }
}

/// The first failing input of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputFailure {
    pub input: usize,
    pub error: ScriptError,
}

/// Verdicts of a batch of transactions, and where the work ran.
#[derive(Clone, Debug)]
pub struct ScriptReport {
    /// Per transaction: Ok, or its first failing input.
    pub verdicts: Vec<std::result::Result<(), InputFailure>>,
    /// Per input, every job's inputs in order.
    pub input_verdicts: Vec<std::result::Result<(), ScriptError>>,
    pub inputs: usize,
    pub ecdsa_checks: usize,
    pub schnorr_checks: usize,
    /// The backends that ran the ECDSA and BIP340 batches (None: no such checks).
    pub ecdsa_backend: Option<Backend>,
    pub schnorr_backend: Option<Backend>,
    /// Batch rounds run (1 when the first batch answered every check the scripts asked for);
    /// inputs evaluated again because a batched check failed; checks verified on the CPU after
    /// the last round.
    pub rounds: usize,
    pub replayed_inputs: usize,
    pub replay_cpu_checks: usize,
    /// Wall time of the interpreter runs with sighashes (CPU), the signature batches, the replays.
    /// The first two overlap where a run was cut in segments (see [`verify_scripts`]).
    pub scripts_time: Duration,
    pub signatures_time: Duration,
    pub replay_time: Duration,
}

impl ScriptReport {
    pub fn all_valid(&self) -> bool {
        self.verdicts.iter().all(|v| v.is_ok())
    }

    /// The first failing (transaction, input, error), in transaction order.
    pub fn first_failure(&self) -> Option<(usize, InputFailure)> {
        self.verdicts
            .iter()
            .enumerate()
            .find_map(|(t, v)| v.err().map(|f| (t, f)))
    }
}

/// Verifies every input of every job. The checks go to the engine as one ECDSA and one BIP340
/// batch; a run of more than `MIN_SEGMENT_INPUTS` inputs is cut in up to `SEGMENTS` shrinking
/// segments of at least that many, each segment's batches verified while the next segment's
/// scripts run.
pub fn verify_scripts(engine: &Engine, jobs: &[TxJob<'_, '_>]) -> Result<ScriptReport> {
    for (t, j) in jobs.iter().enumerate() {
        if j.spent.len() != j.tx.inputs.len() {
            return Err(Error::invalid(format!(
                "transaction {t}: {} spent outputs for {} inputs",
                j.spent.len(),
                j.tx.inputs.len()
            )));
        }
    }
    let t0 = Instant::now();
    // Every (job, input), in order.
    let index: Vec<(usize, usize)> = jobs
        .iter()
        .enumerate()
        .flat_map(|(t, j)| (0..j.tx.inputs.len()).map(move |i| (t, i)))
        .collect();
    let pre: Vec<Precomputed> = jobs.par_iter().map(precompute).collect();
    let run = |k: usize, verifier: &mut dyn SigVerifier| {
        let (t, i) = index[k];
        let j = &jobs[t];
        let mut checker = TxChecker::new(j.tx, i, j.spent[i].value, &pre[t], verifier);
        let input = &j.tx.inputs[i];
        verify_script(
            input.script_sig,
            &j.spent[i].script_pubkey,
            &input.witness,
            j.flags,
            &mut checker,
        )
    };
    // The first run, in parts of consecutive inputs: each input's verdict and how many checks it
    // asked for, the checks back to back.
    // A segment's items are encoded where its parts are interpreted, on every core, when its
    // batch is expected on a GPU; the batch's own preparation would run beside the next
    // segment's scripts on one thread.
    let n_parts = index.len().div_ceil(PART);
    let ends = segment_ends(n_parts);
    let encode = engine
        .ecdsa::<Secp256k1Curve>()
        .plans_gpu((ends[0] * PART).min(index.len()));
    let interpret = |parts: std::ops::Range<usize>| -> (Vec<Part>, Duration) {
        let t = Instant::now();
        let out = parts
            .into_par_iter()
            .map(|c| {
                let mut part = Part::default();
                for k in c * PART..((c + 1) * PART).min(index.len()) {
                    let (before, hints_before) = (part.checks.len(), part.hints.len());
                    let mut d = Deferring::new(None, &mut part.checks, &mut part.hints);
                    part.results.push(run(k, &mut d));
                    part.asked.push((part.checks.len() - before) as u32);
                    part.hinted.push((part.hints.len() - hints_before) as u32);
                }
                if encode {
                    part.encoded = Some(PartItems::new(&part));
                }
                part
            })
            .collect();
        (out, t.elapsed())
    };
    // A large run goes in segments, each segment's signatures batched while the next one's
    // scripts run, so the GPU's work hides behind the CPU's.
    let mut parts: Vec<Part> = Vec::with_capacity(n_parts);
    let mut verdicts = Verdicts::default();
    let (mut scripts_time, mut signatures_time) = (t0.elapsed(), Duration::ZERO);
    if crate::pipeline::tracing() {
        eprintln!(
            "bitcoin scripts: the inputs' index and transactions' hashes {:.1} ms",
            ms(scripts_time)
        );
    }
    let mut batched = 0..0;
    for &end in &ends {
        let todo = batched.end..end;
        let (done, (mut new, t)) = rayon::join(
            || verdicts.batch(engine, &parts[batched.clone()]),
            || interpret(todo.clone()),
        );
        let (v, t_batch) = done?;
        if crate::pipeline::tracing() {
            eprintln!(
                "bitcoin segment of {} inputs: scripts {:.1} ms beside the last one's batch {:.1} ms",
                new.iter().map(|p| p.results.len()).sum::<usize>(),
                ms(t),
                ms(t_batch)
            );
        }
        verdicts.append(v);
        signatures_time += t_batch;
        scripts_time += t;
        parts.append(&mut new);
        batched = todo;
    }
    let (v, t_batch) = verdicts.batch(engine, &parts[batched])?;
    verdicts.append(v);
    signatures_time += t_batch;
    let Verdicts {
        ecdsa: ecdsa_ok,
        schnorr: schnorr_ok,
        hints: hints_ok,
        ecdsa_backend,
        schnorr_backend,
    } = verdicts;
    let (ecdsa_len, schnorr_len) = (ecdsa_ok.len() + hints_ok.len(), schnorr_ok.len());

    // Verdicts. An input with a failed check runs again with the verdicts known (a multisig's
    // other pairs among them, from its hints), any new checks batched again, until a run's new
    // checks all hold. Past MAX_ROUNDS the rest run on the CPU.
    const MAX_ROUNDS: usize = 8;
    let t2 = Instant::now();
    if crate::pipeline::tracing() {
        eprintln!(
            "bitcoin scripts of {} inputs: {:.1} ms to the last batch's end, which took {:.1} ms",
            index.len(),
            ms(t0.elapsed()),
            ms(t_batch)
        );
    }
    // Where each part's verdicts start in the batches' answers, then the parts side by side.
    let mut starts = Vec::with_capacity(parts.len());
    let (mut e, mut s, mut h) = (0usize, 0usize, 0usize);
    for part in &parts {
        starts.push((e, s, h));
        let n_ecdsa = part
            .checks
            .iter()
            .filter(|c| matches!(c, Check::Ecdsa { .. }))
            .count();
        e += n_ecdsa;
        s += part.checks.len() - n_ecdsa;
        h += part.hints.len();
    }
    let mut results: Vec<std::result::Result<(), ScriptError>> = parts
        .par_iter()
        .flat_map_iter(|p| p.results.iter().copied())
        .collect();
    let mut open: Vec<(usize, HashMap<Check, bool>)> = parts
        .par_iter()
        .zip(&starts)
        .enumerate()
        .flat_map_iter(|(c, (part, &(mut e, mut s, mut h)))| {
            let mut open = Vec::new();
            let (mut at, mut hint_at) = (0, 0);
            for (j, (&n, &m)) in part.asked.iter().zip(&part.hinted).enumerate() {
                let checks = &part.checks[at..at + n as usize];
                at += n as usize;
                let hints = &part.hints[hint_at..hint_at + m as usize];
                hint_at += m as usize;
                let hint_verdicts = &hints_ok[h..h + m as usize];
                h += m as usize;
                let from = (e, s);
                let mut all_hold = true;
                for c in checks {
                    all_hold &= next_verdict(c, &mut e, &mut s, &ecdsa_ok, &schnorr_ok);
                }
                if !all_hold {
                    // Only inputs that run again need their verdicts by check.
                    let (mut e, mut s) = from;
                    let known = checks
                        .iter()
                        .map(|&c| (c, next_verdict(&c, &mut e, &mut s, &ecdsa_ok, &schnorr_ok)))
                        .chain(hints.iter().copied().zip(hint_verdicts.iter().copied()))
                        .collect();
                    open.push((c * PART + j, known));
                }
            }
            open
        })
        .collect();
    let replayed_inputs = open.len();
    let (mut ecdsa_checks, mut schnorr_checks) = (ecdsa_len, schnorr_len);
    let (mut rounds, mut reruns) = (1, 0);
    while !open.is_empty() && reruns + 1 < MAX_ROUNDS {
        reruns += 1;
        let runs: Vec<(std::result::Result<(), ScriptError>, Vec<Check>)> = open
            .par_iter()
            .map(|(k, known)| {
                // A rerun's multisigs find their pairs known from the first run's hints.
                let (mut pending, mut hints) = (Vec::new(), Vec::new());
                let mut d = Deferring::new(Some(known), &mut pending, &mut hints);
                let r = run(*k, &mut d);
                (r, pending)
            })
            .collect();
        let all: Vec<&Check> = runs.iter().flat_map(|(_, p)| p).collect();
        let ecdsa: Vec<&Check> = all
            .iter()
            .copied()
            .filter(|c| matches!(c, Check::Ecdsa { .. }))
            .collect();
        let schnorr: Vec<&Check> = all
            .iter()
            .copied()
            .filter(|c| matches!(c, Check::Schnorr { .. }))
            .collect();
        if !all.is_empty() {
            rounds += 1;
        }
        let (eo, _) = verify_ecdsa_batch(engine, ecdsa.iter().copied(), None)?;
        let (so, _) = verify_schnorr_batch(engine, &schnorr, None)?;
        ecdsa_checks += ecdsa.len();
        schnorr_checks += schnorr.len();
        let (mut e, mut s) = (0usize, 0usize);
        let mut still = Vec::new();
        for ((k, mut known), (r, pending)) in open.into_iter().zip(runs) {
            let mut all_hold = true;
            for c in pending {
                let ok = match c {
                    Check::Ecdsa { .. } => {
                        e += 1;
                        eo[e - 1]
                    }
                    Check::Schnorr { .. } => {
                        s += 1;
                        so[s - 1]
                    }
                };
                all_hold &= ok;
                known.insert(c, ok);
            }
            if all_hold {
                results[k] = r;
            } else {
                still.push((k, known));
            }
        }
        open = still;
    }
    let replayed: Vec<(usize, std::result::Result<(), ScriptError>, usize)> = open
        .par_iter()
        .map(|(k, known)| {
            let mut v = Replay {
                known,
                cpu_checks: 0,
            };
            let r = run(*k, &mut v);
            (*k, r, v.cpu_checks)
        })
        .collect();
    let mut replay_cpu_checks = 0;
    for (k, r, n) in replayed {
        results[k] = r;
        replay_cpu_checks += n;
    }
    let replay_time = t2.elapsed();
    if crate::pipeline::tracing() {
        eprintln!(
            "bitcoin verdicts and replays: {:.1} ms ({replayed_inputs} inputs replayed)",
            ms(replay_time)
        );
    }

    let mut verdicts = vec![Ok(()); jobs.len()];
    for (k, r) in results.iter().enumerate() {
        let (t, i) = index[k];
        if let (Err(error), Ok(())) = (r, verdicts[t]) {
            verdicts[t] = Err(InputFailure {
                input: i,
                error: *error,
            });
        }
    }
    // A window's parts are thousands of vectors: freed on all cores, not one.
    parts.into_par_iter().for_each(drop);
    Ok(ScriptReport {
        verdicts,
        input_verdicts: results,
        inputs: index.len(),
        ecdsa_checks,
        schnorr_checks,
        ecdsa_backend,
        schnorr_backend,
        rounds,
        replayed_inputs,
        replay_cpu_checks,
        scripts_time,
        signatures_time,
        replay_time,
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The batch verdict of the next check in order (ECDSA and BIP340 checks count separately).
fn next_verdict(c: &Check, e: &mut usize, s: &mut usize, ecdsa: &[bool], schnorr: &[bool]) -> bool {
    match c {
        Check::Ecdsa { .. } => {
            *e += 1;
            ecdsa[*e - 1]
        }
        Check::Schnorr { .. } => {
            *s += 1;
            schnorr[*s - 1]
        }
    }
}

/// The ECDSA checks among `checks`, verified as one batch: from the items the interpreter's
/// tasks encoded where there are some (`encoded`, the same checks in order), the columns then
/// gathered only if the batch stays on the CPU. The columns are gathered in one serial pass:
/// while scripts run beside the batch, rayon's workers are theirs, and a parallel gathering
/// waited for them.
fn verify_ecdsa_batch<'c>(
    engine: &Engine,
    checks: impl IntoIterator<Item = &'c Check> + Clone + Sync,
    encoded: Option<Vec<&EncodedItems<Secp256k1Curve>>>,
) -> Result<(Vec<bool>, Option<Backend>)> {
    let columns = || {
        let (mut msgs, mut sigs, mut keys) = (Vec::new(), Vec::<&[u8]>::new(), Vec::new());
        for c in checks.clone() {
            if let Check::Ecdsa { msg, sig, key } = c {
                msgs.push(*msg);
                sigs.push(&sig[..]);
                keys.push(key.as_slice());
            }
        }
        (msgs, sigs, keys)
    };
    let ecdsa = engine.ecdsa::<Secp256k1Curve>();
    let out = match encoded {
        Some(pieces) => {
            if pieces.iter().all(|p| p.is_empty()) {
                return Ok((Vec::new(), None));
            }
            ecdsa.verify_encoded(&pieces, columns)?
        }
        None => {
            let (msgs, sigs, keys) = columns();
            if msgs.is_empty() {
                return Ok((Vec::new(), None));
            }
            ecdsa.verify(&msgs, &sigs, &keys, &BITCOIN_ECDSA)?
        }
    };
    let ok = out.value.results.iter().map(|r| r.is_ok()).collect();
    Ok((ok, Some(out.backend)))
}

fn verify_schnorr_batch(
    engine: &Engine,
    checks: &[&Check],
    encoded: Option<Vec<&Encoded>>,
) -> Result<(Vec<bool>, Option<Backend>)> {
    if checks.is_empty() {
        return Ok((Vec::new(), None));
    }
    let mut msgs = Vec::with_capacity(checks.len());
    let mut sigs = Vec::with_capacity(checks.len());
    let mut keys = Vec::with_capacity(checks.len());
    for c in checks {
        if let Check::Schnorr { msg, sig, key } = c {
            msgs.push(&msg[..]);
            sigs.push(*sig);
            keys.push(*key);
        }
    }
    let secp = engine.secp256k1();
    let out = match encoded {
        Some(pieces) => secp.verify_schnorr_pre_encoded(&msgs, &sigs, &keys, &pieces)?,
        None => secp.verify_schnorr(&msgs, &sigs, &keys)?,
    };
    let ok = out.value.results.iter().map(|r| r.is_ok()).collect();
    Ok((ok, Some(out.backend)))
}

/// The signature checks the scripts of `jobs` ask for in a first (optimistic) run: ECDSA as
/// (message, low-S `r || s`, SEC1 key) and BIP340 as (message, signature, x-only key). What a
/// batch verifies; for benchmarks that run a peer on the same signatures.
pub fn signature_checks(
    jobs: &[TxJob<'_, '_>],
) -> (
    Vec<([u8; 32], [u8; 64], Vec<u8>)>,
    Vec<([u8; 32], [u8; 64], [u8; 32])>,
) {
    let mut ecdsa = Vec::new();
    let mut schnorr = Vec::new();
    for j in jobs {
        let pre = precompute(j);
        for i in 0..j.tx.inputs.len() {
            let (mut pending, mut hints) = (Vec::new(), Vec::new());
            let mut d = Deferring::new(None, &mut pending, &mut hints);
            let mut checker = TxChecker::new(j.tx, i, j.spent[i].value, &pre, &mut d);
            let input = &j.tx.inputs[i];
            let _ = verify_script(
                input.script_sig,
                &j.spent[i].script_pubkey,
                &input.witness,
                j.flags,
                &mut checker,
            );
            for c in pending {
                match c {
                    Check::Ecdsa { msg, sig, key } => {
                        ecdsa.push((msg, sig, key.as_slice().to_vec()))
                    }
                    Check::Schnorr { msg, sig, key } => schnorr.push((msg, sig, key)),
                }
            }
        }
    }
    (ecdsa, schnorr)
}

/// One input verified at once on this thread (libsecp256k1): the reference the batches must equal.
pub fn verify_input(
    tx: &Tx,
    pre: &Precomputed,
    spent: &[SpentOutput],
    input: usize,
    flags: Flags,
) -> std::result::Result<(), ScriptError> {
    let mut checker = TxChecker::new(tx, input, spent[input].value, pre, CpuVerifier);
    let i = &tx.inputs[input];
    verify_script(
        i.script_sig,
        &spent[input].script_pubkey,
        &i.witness,
        flags,
        &mut checker,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_shrink_and_cover_the_run() {
        let min = MIN_SEGMENT_INPUTS / PART;
        for n in [
            0,
            1,
            min - 1,
            min,
            2 * min - 1,
            2 * min + 1,
            3 * min,
            7 * min,
            20 * min,
            100_000,
        ] {
            let ends = segment_ends(n);
            assert_eq!(*ends.last().unwrap(), n, "{n}");
            assert!(ends.len() <= SEGMENTS);
            let sizes: Vec<usize> = ends
                .iter()
                .scan(0, |at, &e| {
                    let s = e - *at;
                    *at = e;
                    Some(s)
                })
                .collect();
            if sizes.len() > 1 {
                assert!(sizes.iter().all(|&s| s >= min), "{n}: {sizes:?}");
                assert!(sizes.windows(2).all(|w| w[1] <= w[0] + 1), "{n}: {sizes:?}");
            }
        }
        assert_eq!(segment_ends(100 * min).len(), SEGMENTS);
    }
}
