//! Bitcoin validation: blocks with the outputs they spend, loose transactions, merkle roots.

use crate::{bytes_or_hex, field, input, to_py, to_py_io, Engine};
use batchcrypt::bitcoin::block::{verify_block, BlockContext, BlockReport};
use batchcrypt::bitcoin::script::Flags;
use batchcrypt::bitcoin::txs::{verify_transactions, LooseTx, NextBlock};
use batchcrypt::bitcoin::validate::{Network, PrevMedianTime};
use batchcrypt::bitcoin::{parse_block, spent, store, Block, SpentOutput};
use batchcrypt::sha256::Digest;
use batchcrypt::Error;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use std::path::PathBuf;

/// The spent outputs of `block` from bytes in the named format.
fn parse_spent(
    bytes: &[u8],
    format: &str,
    block: &batchcrypt::bitcoin::Block,
) -> batchcrypt::Result<Vec<SpentOutput>> {
    match format {
        "undo" => spent::parse_bcoin_undo(bytes),
        "spent.json" => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| Error::InvalidInput("spent.json: not UTF-8 JSON".into()))?;
            spent::parse_floresta_json(text)
        }
        "rev" => spent::flatten_block_undo(block, spent::parse_core_block_undo(bytes)?),
        _ => unreachable!("checked before"),
    }
}

/// Where the spent outputs come from.
enum SpentSource {
    Bytes(Vec<u8>),
    Path(PathBuf),
}

/// `verify_block`'s block and spent outputs as given (the engine's and the client's), checked
/// for their types; parsed with [`BlockInput::spent`] once the GIL is released.
pub(crate) struct BlockInput {
    pub(crate) raw: Vec<u8>,
    source: SpentSource,
    format: Option<String>,
}

impl BlockInput {
    pub(crate) fn new(
        block: &Bound<'_, PyAny>,
        spent: &Bound<'_, PyAny>,
        spent_format: Option<&str>,
    ) -> PyResult<Self> {
        if let Some(f) = spent_format {
            if !matches!(f, "undo" | "spent.json" | "rev") {
                return Err(PyValueError::new_err(format!(
                    "spent_format must be \"undo\", \"spent.json\" or \"rev\", not {f:?}"
                )));
            }
        }
        let raw = input(block).map_err(|_| {
            PyValueError::new_err("block: expected bytes, bytearray or a uint8 numpy array")
        })?;
        let source = if spent.is_instance_of::<PyString>() || spent.hasattr("__fspath__")? {
            SpentSource::Path(spent.extract::<PathBuf>()?)
        } else {
            let bytes = input(spent).map_err(|_| {
                PyValueError::new_err("spent: expected a path (str or os.PathLike) or bytes")
            })?;
            if spent_format.is_none() {
                return Err(PyValueError::new_err(
                    "spent given as bytes: name its format with spent_format=\"undo\", \"spent.json\" or \"rev\"",
                ));
            }
            SpentSource::Bytes(bytes)
        };
        let format = spent_format.map(String::from);
        Ok(BlockInput {
            raw,
            source,
            format,
        })
    }

    /// The parsed block and the outputs it spends.
    pub(crate) fn spent(&self) -> batchcrypt::Result<(Block<'_>, Vec<SpentOutput>)> {
        let block = parse_block(&self.raw)?;
        let spent = match (&self.source, self.format.as_deref()) {
            (SpentSource::Path(p), None) => spent::read_spent_file(p, &block)?,
            (SpentSource::Path(p), Some(f)) => parse_spent(&std::fs::read(p)?, f, &block)?,
            (SpentSource::Bytes(b), f) => parse_spent(b, f.unwrap_or_default(), &block)?,
        };
        Ok((block, spent))
    }
}

/// The network named as the Python API names it.
pub(crate) fn network(name: &str) -> PyResult<Network> {
    name.parse().map_err(PyValueError::new_err)
}

fn block_dict<'py>(py: Python<'py>, r: &BlockReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (reason, tx, inp) = match &r.verdict {
        Ok(()) => (None, None, None),
        Err(e) => (Some(e.reason.clone()), e.tx, e.input),
    };
    d.set_item("valid", r.verdict.is_ok())?;
    d.set_item("reason", reason)?;
    d.set_item("tx", tx)?;
    d.set_item("input", inp)?;
    d.set_item("hash", &r.hash)?;
    d.set_item("height", r.height)?;
    d.set_item("flags", r.flags.names())?;
    d.set_item("txs", r.txs)?;
    d.set_item("inputs", r.inputs)?;
    d.set_item("weight", r.weight)?;
    d.set_item("sigop_cost", r.sigop_cost)?;
    d.set_item("fees", r.fees)?;
    let unchecked: Vec<String> = r.unchecked.iter().map(|u| u.to_string()).collect();
    d.set_item("unchecked", unchecked)?;
    let s = r.scripts.as_ref();
    let name = |b: Option<batchcrypt::Backend>| b.map(|b| b.name().to_string());
    d.set_item("scripts_checked", s.is_some())?;
    d.set_item("ecdsa_checks", s.map_or(0, |s| s.ecdsa_checks))?;
    d.set_item("schnorr_checks", s.map_or(0, |s| s.schnorr_checks))?;
    d.set_item("ecdsa_backend", name(s.and_then(|s| s.ecdsa_backend)))?;
    d.set_item("schnorr_backend", name(s.and_then(|s| s.schnorr_backend)))?;
    d.set_item("replayed_inputs", s.map_or(0, |s| s.replayed_inputs))?;
    d.set_item("structure_time", r.structure_time.as_secs_f64())?;
    d.set_item("inputs_time", r.inputs_time.as_secs_f64())?;
    d.set_item("scripts_time", r.scripts_time.as_secs_f64())?;
    d.set_item(
        "interpreter_time",
        s.map_or(0.0, |s| s.scripts_time.as_secs_f64()),
    )?;
    d.set_item(
        "signatures_time",
        s.map_or(0.0, |s| s.signatures_time.as_secs_f64()),
    )?;
    d.set_item(
        "replay_time",
        s.map_or(0.0, |s| s.replay_time.as_secs_f64()),
    )?;
    Ok(d)
}

/// One transaction of `verify_transactions`' argument.
pub(crate) fn loose_tx(item: &Bound<'_, PyAny>, k: usize) -> PyResult<LooseTx> {
    let what = format!("txs[{k}]");
    let d = item
        .downcast::<PyDict>()
        .map_err(|_| PyValueError::new_err(format!("{what}: expected a dict")))?;
    let raw = bytes_or_hex(&field(d, "tx", &what)?, &format!("{what}[\"tx\"]"))?;
    let spent_list = field(d, "spent", &what)?;
    let mut spent = Vec::new();
    for (i, s) in spent_list.try_iter()?.enumerate() {
        let s = s?;
        let sw = format!("{what}[\"spent\"][{i}]");
        let sd = s
            .downcast::<PyDict>()
            .map_err(|_| PyValueError::new_err(format!("{sw}: expected a dict")))?;
        let value: i64 = field(sd, "value", &sw)?.extract().map_err(|_| {
            PyValueError::new_err(format!("{sw}[\"value\"]: expected an int (satoshis)"))
        })?;
        let script = bytes_or_hex(
            &field(sd, "script_pubkey", &sw)?,
            &format!("{sw}[\"script_pubkey\"]"),
        )?;
        let mut o = SpentOutput::new(value, script);
        o.height = optional(sd, "height", &sw, "an int")?;
        o.coinbase = optional(sd, "coinbase", &sw, "a bool")?;
        o.time = optional(sd, "time", &sw, "an int")?;
        spent.push(o);
    }
    let flags = match optional::<String>(d, "flags", &what, "a str")? {
        None => Flags::CONSENSUS,
        Some(f) => Flags::parse(&f)
            .map_err(|e| PyValueError::new_err(format!("{what}[\"flags\"]: {e}")))?,
    };
    let next = NextBlock::given(
        optional(d, "next_height", &what, "an int")?,
        optional(d, "tip_mtp", &what, "an int")?,
    )
    .map_err(|e| PyValueError::new_err(format!("{what}: \"next_height\" and \"tip_mtp\": {e}")))?;
    Ok(LooseTx {
        raw,
        spent,
        flags,
        next,
    })
}

/// The value at `key` of a dict, if present and not None, as a `T` (`expected` names it).
fn optional<'py, T: FromPyObject<'py>>(
    d: &Bound<'py, PyDict>,
    key: &str,
    what: &str,
    expected: &str,
) -> PyResult<Option<T>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => v
            .extract()
            .map(Some)
            .map_err(|_| PyValueError::new_err(format!("{what}[{key:?}]: expected {expected}"))),
        _ => Ok(None),
    }
}

#[pymethods]
impl Engine {
    /// Validates one Bitcoin block with the outputs its inputs spend, as Bitcoin Core's
    /// CheckBlock, ContextualCheckBlock and ConnectBlock would (without the UTXO set: the spent
    /// outputs are given), every signature of the block verified in one ECDSA and one BIP340
    /// batch on this engine's backend.
    ///
    /// `block`: the raw block (network serialization, with witnesses). `spent`: the outputs the
    /// block's non-coinbase inputs spend, either a path (str or os.PathLike; the format from its
    /// name: `.undo` bcoin, `.spent.json`/`.json` Floresta, `.rev` one Bitcoin Core CBlockUndo
    /// record) or the file's bytes with `spent_format` "undo", "spent.json" or "rev" (a path
    /// with `spent_format` is read in that format whatever its name). `height`: the block's
    /// height; None reads it from the coinbase (BIP34). `network`: "main", "test" or "regtest".
    /// `check_pow`: check the header's proof of work against its own target.
    /// `median_time_past`: that of the block before this one (Unix seconds), where known: with it
    /// the header's time-too-old, BIP113 finality of time-locked transactions and BIP68 time
    /// locks (given the spent coins' times, as .spent.json has them) are checked. Rules the data
    /// given cannot decide are listed in `unchecked`.
    ///
    /// Returns a dict: `valid`; `reason` (Core's reject reason), `tx` and `input` (where it
    /// applies) or None; `hash` (display order), `height`, `flags` (the script flags, comma-
    /// separated), `txs`, `inputs`, `weight`, `sigop_cost`, `fees` (satoshis), `unchecked`
    /// (list of str); the script stage: `scripts_checked` (False when the block failed before
    /// its scripts ran; the counts are then 0 and the backends None), `ecdsa_checks`,
    /// `schnorr_checks`, `ecdsa_backend`, `schnorr_backend` (str or None), `replayed_inputs`;
    /// times in seconds: `structure_time`, `inputs_time`, `scripts_time` (the three stages),
    /// and within the scripts stage `interpreter_time`, `signatures_time`, `replay_time`.
    ///
    /// An invalid block is a result (valid False), not an exception. Data that cannot be
    /// validated at all (an unparsable block or spent-output data, a spent-output count that
    /// does not fit the block, an unknown height before BIP34) raises ValueError; an unreadable
    /// file raises OSError. Releases the GIL.
    #[pyo3(signature = (block, spent, *, spent_format = None, height = None, network = "main", check_pow = true, median_time_past = None))]
    #[allow(clippy::too_many_arguments)]
    fn verify_block<'py>(
        &mut self,
        py: Python<'py>,
        block: &Bound<'py, PyAny>,
        spent: &Bound<'py, PyAny>,
        spent_format: Option<&str>,
        height: Option<u32>,
        network: &str,
        check_pow: bool,
        median_time_past: Option<u32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let network = self::network(network)?;
        let given = BlockInput::new(block, spent, spent_format)?;
        let inner = &self.inner;
        let report = py
            .allow_threads(|| -> batchcrypt::Result<BlockReport> {
                let (block, spent) = given.spent()?;
                let ctx = BlockContext {
                    network,
                    height,
                    times: &PrevMedianTime(median_time_past.map(i64::from)),
                    check_pow,
                };
                verify_block(inner, &block, &spent, &ctx)
            })
            .map_err(to_py_io)?;
        if let Some(s) = &report.scripts {
            if let Some(b) = s.ecdsa_backend.or(s.schnorr_backend) {
                self.last_backend = Some(b.name().to_string());
            }
        }
        block_dict(py, &report)
    }

    /// Checks loose Bitcoin transactions (as a mempool or a wallet backend would): each one's
    /// encoding, Core's CheckTransaction, its spent amounts against its outputs, and every
    /// input's scripts, the signatures of all of them verified as one batch on this engine's
    /// backend (the GIL released meanwhile).
    ///
    /// `txs`: a list of dicts `{"tx": hex str or bytes (serialized with witnesses), "spent":
    /// [{"value": int (satoshis), "script_pubkey": hex str or bytes}, ...] (one per input, in
    /// order), "flags": "P2SH,WITNESS,..." (optional; default every consensus rule in force
    /// today: P2SH, DERSIG, NULLDUMMY, CHECKLOCKTIMEVERIFY, CHECKSEQUENCEVERIFY, WITNESS,
    /// TAPROOT; "" or "NONE" for none)}`. Where the chain's tip is known, add "next_height"
    /// (int: the tip's height plus one) and "tip_mtp" (int: its median time past) to check each
    /// transaction against the chain as a mempool does (lock time, coinbase maturity, BIP68
    /// relative locks); each spent output then gives "height" (int), "coinbase" (bool) and,
    /// for a time-based relative lock, "time" (int: the median time past before its block).
    ///
    /// Returns one dict per transaction, in order: `{"valid": bool, "input": int or None (the
    /// failing input, where one is to blame), "reason": str or None}`; `last_reasons` gets the
    /// reasons too. A bad transaction is a verdict, not an exception; a malformed argument (a
    /// missing key, bad hex, an unknown flag name) raises ValueError.
    fn verify_transactions<'py>(
        &mut self,
        py: Python<'py>,
        txs: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let items: Vec<LooseTx> = txs
            .try_iter()?
            .enumerate()
            .map(|(k, item)| loose_tx(&item?, k))
            .collect::<PyResult<_>>()?;
        if items.is_empty() {
            self.last_reasons = Vec::new();
            return Ok(Vec::new());
        }
        let inner = &self.inner;
        let (verdicts, report) = py
            .allow_threads(|| verify_transactions(inner, &items))
            .map_err(to_py)?;
        if let Some(s) = &report {
            if let Some(b) = s.ecdsa_backend.or(s.schnorr_backend) {
                self.last_backend = Some(b.name().to_string());
            }
        }
        self.last_reasons = verdicts
            .iter()
            .map(|v| v.as_ref().err().map(|r| r.reason.clone()))
            .collect();
        verdicts
            .iter()
            .map(|v| {
                let d = PyDict::new(py);
                d.set_item("valid", v.is_ok())?;
                d.set_item("input", v.as_ref().err().and_then(|r| r.input))?;
                d.set_item("reason", v.as_ref().err().map(|r| r.reason.clone()))?;
                Ok(d)
            })
            .collect()
    }

    /// Bitcoin merkle root of concatenated 32-byte txids (internal byte order).
    fn merkle_root<'py>(
        &mut self,
        py: Python<'py>,
        txids: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let data = input(txids)?;
        if data.len() % 32 != 0 {
            return Err(PyValueError::new_err(format!(
                "txids must be a multiple of 32 bytes, got {}",
                data.len()
            )));
        }
        let ids: Vec<Digest> = data
            .chunks_exact(32)
            .map(|c| c.try_into().unwrap())
            .collect();
        let root = self.run(py, |e| e.sha256().merkle_root(&ids))?;
        Ok(PyBytes::new(py, &root))
    }
}

/// A Bitcoin Core `blocks/` directory, read-only: the best chain of its `blk*.dat` blocks and,
/// per block, the block with its `rev*.dat` undo record, as `Engine.verify_block` takes them.
///
///     d = BlocksDir("~/.bitcoin/blocks", network="main")
///     for item in d.load(d.range(start=800_000, count=10)):
///         report = engine.verify_block(**item)
///
/// `network`: "main", "test" or "regtest" (the records' magic and the rules the reports apply).
/// Opening reads every block header (each blk file once) to order the chain: from the block
/// whose parent is absent (the genesis block, or the first block a pruned node kept), the
/// longest branch at forks. The `xor.dat` obfuscation key of newer nodes is applied.
#[pyclass(name = "BlocksDir", module = "batchcrypt")]
pub struct PyBlocksDir {
    dir: store::BlocksDir,
    network: Network,
    chain: Vec<store::ChainBlock>,
    /// Matched on the first `load`: reading every rev file is only needed then.
    undo: Option<store::UndoIndex>,
}

#[pymethods]
impl PyBlocksDir {
    #[new]
    #[pyo3(signature = (path, network = "main"))]
    fn new(py: Python<'_>, path: PathBuf, network: &str) -> PyResult<Self> {
        let network = self::network(network)?;
        let magic = store::network_magic(network.name()).expect("a known network");
        let (dir, chain) = py
            .allow_threads(|| -> batchcrypt::Result<_> {
                let dir = store::BlocksDir::open(&path, magic)?;
                let chain = dir.chain()?;
                Ok((dir, chain))
            })
            .map_err(to_py_io)?;
        Ok(PyBlocksDir {
            dir,
            network,
            chain,
            undo: None,
        })
    }

    /// The number of blocks in the best chain.
    fn __len__(&self) -> usize {
        self.chain.len()
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    #[getter]
    fn network(&self) -> &'static str {
        self.network.name()
    }

    /// The best chain's blocks from height `start` on, at most `count`: a list of dicts
    /// `{"hash": str (display order), "height": int or None, "position": int (in the chain)}`.
    /// Without `start`, every block but the genesis block (which spends nothing). Heights are
    /// counted from the genesis block, or from the height the first block's coinbase states when
    /// the directory lacks the start of the chain; with neither, `start` raises ValueError.
    #[pyo3(signature = (start = None, count = None))]
    fn range<'py>(
        &self,
        py: Python<'py>,
        start: Option<u32>,
        count: Option<usize>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        store::chain_range(&self.chain, start, count)
            .map_err(to_py)?
            .map(|p| {
                let b = &self.chain[p];
                let d = PyDict::new(py);
                d.set_item("hash", batchcrypt::bitcoin::display_hash(&b.hash))?;
                d.set_item("height", b.height)?;
                d.set_item("position", p)?;
                Ok(d)
            })
            .collect()
    }

    /// `Engine.verify_block`'s arguments for each of `blocks` (dicts from `range`, or chain
    /// positions): dicts `{"block": bytes, "spent": bytes (the block's Core undo record),
    /// "spent_format": "rev", "height": int or None, "network": str}`. The first call matches
    /// the rev files' records to their blocks (every rev file read once). A block without an
    /// undo record (not connected by the node, or its rev file pruned) raises ValueError.
    fn load<'py>(
        &mut self,
        py: Python<'py>,
        blocks: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut positions = Vec::new();
        for (k, item) in blocks.try_iter()?.enumerate() {
            let item = item?;
            let p = match item.downcast::<PyDict>() {
                Ok(d) => field(d, "position", &format!("blocks[{k}]"))?,
                Err(_) => item.clone(),
            };
            let p: usize = p.extract().map_err(|_| {
                PyValueError::new_err(format!(
                    "blocks[{k}]: expected a dict from range() or a chain position (int)"
                ))
            })?;
            if p >= self.chain.len() {
                return Err(PyValueError::new_err(format!(
                    "blocks[{k}]: position {p} is past the chain's {} blocks",
                    self.chain.len()
                )));
            }
            positions.push(p);
        }
        let (dir, chain, undo) = (&self.dir, &self.chain, &mut self.undo);
        let loaded = py
            .allow_threads(
                || -> batchcrypt::Result<Vec<(Vec<u8>, Vec<u8>, Option<u32>)>> {
                    if undo.is_none() {
                        *undo = Some(dir.undo_index()?);
                    }
                    let index = undo.as_ref().expect("just built");
                    positions
                        .iter()
                        .map(|&p| {
                            let b = &chain[p];
                            let loc = index.get(&b.hash).ok_or_else(|| {
                                Error::InvalidInput(format!(
                                    "no undo record for block {} (chain position {p}) in {}: the \
                                 node has not connected it, or its rev file is pruned",
                                    batchcrypt::bitcoin::display_hash(&b.hash),
                                    dir.path().display()
                                ))
                            })?;
                            Ok((dir.read_block(b)?, dir.read_undo_payload(loc)?, b.height))
                        })
                        .collect()
                },
            )
            .map_err(to_py_io)?;
        loaded
            .into_iter()
            .map(|(block, spent, height)| {
                let d = PyDict::new(py);
                d.set_item("block", PyBytes::new(py, &block))?;
                d.set_item("spent", PyBytes::new(py, &spent))?;
                d.set_item("spent_format", "rev")?;
                d.set_item("height", height)?;
                d.set_item("network", self.network.name())?;
                Ok(d)
            })
            .collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "BlocksDir({:?}, network={:?}, blocks={})",
            self.dir.path().display().to_string(),
            self.network.name(),
            self.chain.len()
        )
    }
}
