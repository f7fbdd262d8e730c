"""Bitcoin block and transaction validation from Python, on the shared real blocks."""

import os
import pathlib

import pytest

import batchcrypt
from core_blocks import compact_size, regtest_chain, sha256d, write_blocks_dir

BACKENDS = [name for name, why in batchcrypt.backends("secp256k1") if why is None]
# The shared test data: BATCHCRYPT_SHARED_DATA, else ../shared/data beside the checkout.
SHARED = os.environ.get("BATCHCRYPT_SHARED_DATA") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "shared", "data")
BLOCKS = os.path.join(SHARED, "bitcoin", "blocks")


def block_file(name):
    path = os.path.join(BLOCKS, name)
    if not os.path.exists(path):
        pytest.skip(f"shared test data absent: {path}")
    return path


def read(name):
    with open(block_file(name), "rb") as f:
        return f.read()


# --- a minimal reader of the serialization, to cut transactions out of a block --------------

def tx_end(b, p):
    """End of the transaction at p, and the (offset, length) of each input's scriptSig."""
    p += 4
    segwit = b[p] == 0 and b[p + 1] == 1
    if segwit:
        p += 2
    n_in, p = compact_size(b, p)
    script_sigs = []
    for _ in range(n_in):
        p += 36
        n, p = compact_size(b, p)
        script_sigs.append((p, n))
        p += n + 4
    n_out, p = compact_size(b, p)
    for _ in range(n_out):
        p += 8
        n, p = compact_size(b, p)
        p += n
    if segwit:
        for _ in range(n_in):
            items, p = compact_size(b, p)
            for _ in range(items):
                n, p = compact_size(b, p)
                p += n
    return p + 4, script_sigs


def block_txs(raw):
    """[(tx bytes, scriptSig spans relative to the tx)] of a raw block."""
    n, p = compact_size(raw, 80)
    out = []
    for _ in range(n):
        end, sigs = tx_end(raw, p)
        out.append((raw[p:end], [(o - p, n) for o, n in sigs]))
        p = end
    assert p == len(raw)
    return out


def bcoin_undo(undo):
    """[(value, script, offset of the script)] of a bcoin .undo file."""
    out, p = [], 0
    while p < len(undo):
        value = int.from_bytes(undo[p:p + 8], "little")
        n, q = compact_size(undo, p + 8)
        out.append((value, undo[q:q + n], q))
        p = q + n
    return out


# --- blocks ----------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_testnet_block_by_path(backend):
    e = batchcrypt.Engine(backend)
    r = e.verify_block(read("testnet3-1087400.raw"), block_file("testnet3-1087400.undo"), network="test")
    assert r["valid"], r
    assert (r["reason"], r["tx"], r["input"]) == (None, None, None)
    # 205 spent outputs (the README's count) and the coinbase's input.
    assert (r["txs"], r["inputs"]) == (97, 206)
    assert len(bcoin_undo(read("testnet3-1087400.undo"))) == 205
    # The totals the data's README publishes.
    assert (r["sigop_cost"], r["weight"]) == (1_298, 193_331)
    assert r["height"] == 1_087_400
    assert "WITNESS" in r["flags"].split(",") and "P2SH" in r["flags"].split(",")
    assert r["scripts_checked"]
    assert r["ecdsa_checks"] > 0
    assert backend in (r["ecdsa_backend"], r["schnorr_backend"])
    assert e.last_backend == backend
    assert r["fees"] >= 0
    assert isinstance(r["unchecked"], list) and all(isinstance(u, str) for u in r["unchecked"])
    for key in ("structure_time", "inputs_time", "scripts_time", "interpreter_time", "signatures_time", "replay_time"):
        assert isinstance(r[key], float) and r[key] >= 0
    assert len(r["hash"]) == 64


def test_testnet_block_by_bytes_and_pathlike():
    e = batchcrypt.Engine("cpu")
    raw, undo = read("testnet3-1087400.raw"), read("testnet3-1087400.undo")
    by_path = e.verify_block(raw, pathlib.Path(block_file("testnet3-1087400.undo")), network="test")
    by_bytes = e.verify_block(raw, undo, spent_format="undo", network="test", height=1_087_400)
    assert by_bytes["valid"] and by_path["valid"]
    for key in ("hash", "height", "flags", "txs", "inputs", "weight", "sigop_cost", "fees", "unchecked", "ecdsa_checks"):
        assert by_bytes[key] == by_path[key], key
    # bytearray and memoryview work as bytes do.
    assert e.verify_block(bytearray(raw), memoryview(undo), spent_format="undo", network="test")["valid"]


def test_mainnet_block_spent_json():
    e = batchcrypt.Engine("cpu")
    raw = read("mainnet-367891.raw")
    r = e.verify_block(raw, block_file("mainnet-367891.spent.json"))
    assert r["valid"], r
    # 20,817 spent outputs and the coinbase's input.
    assert (r["txs"], r["inputs"], r["height"]) == (420, 20_818, 367_891)
    with open(block_file("mainnet-367891.spent.json"), "rb") as f:
        r2 = e.verify_block(raw, f.read(), spent_format="spent.json")
    assert r2["valid"] and r2["fees"] == r["fees"]


def test_changed_spent_script_is_refused():
    e = batchcrypt.Engine("cpu")
    raw, undo = read("testnet3-1087400.raw"), read("testnet3-1087400.undo")
    records = bcoin_undo(undo)
    # Record 0 is spent by transaction 1, input 0: a P2PKH script; flip one bit of its key hash.
    value, script, at = records[0]
    assert script[:3] == bytes.fromhex("76a914")
    bad = bytearray(undo)
    bad[at + 10] ^= 0x01
    r = e.verify_block(raw, bytes(bad), spent_format="undo", network="test")
    assert not r["valid"]
    assert (r["tx"], r["input"]) == (1, 0)
    assert r["reason"].startswith("mandatory-script-verify-flag-failed")
    # Later records belong to later transactions: the one named is the one changed.
    tx_inputs = [len(s) for _, s in block_txs(raw)[1:]]
    k = 40
    t, i = next((t + 1, k - sum(tx_inputs[:t])) for t in range(len(tx_inputs)) if sum(tx_inputs[:t + 1]) > k)
    _, script, at = records[k]
    bad = bytearray(undo)
    bad[at + len(script) // 2] ^= 0x01
    r = e.verify_block(raw, bytes(bad), spent_format="undo", network="test")
    assert not r["valid"] and (r["tx"], r["input"]) == (t, i), r


def test_block_errors():
    e = batchcrypt.Engine("cpu")
    raw, undo = read("testnet3-1087400.raw"), read("testnet3-1087400.undo")
    records = bcoin_undo(undo)
    # One record short: the count does not fit the block.
    with pytest.raises(ValueError, match="records"):
        e.verify_block(raw, undo[:records[-1][2] - 9], spent_format="undo", network="test")
    with pytest.raises(ValueError):
        e.verify_block(raw[:-5], undo, spent_format="undo", network="test")
    with pytest.raises(ValueError, match="spent_format"):
        e.verify_block(raw, undo, network="test")
    with pytest.raises(ValueError, match="spent_format"):
        e.verify_block(raw, undo, spent_format="bogus", network="test")
    with pytest.raises(ValueError):  # bcoin's bytes are no Core CBlockUndo
        e.verify_block(raw, undo, spent_format="rev", network="test")
    with pytest.raises(ValueError, match="network"):
        e.verify_block(raw, undo, spent_format="undo", network="moon")
    with pytest.raises(OSError):
        e.verify_block(raw, os.path.join(BLOCKS, "no-such-block.undo"), network="test")
    # A changed header fails its proof of work; without the check, the merkle root is wrong.
    bad = bytearray(raw)
    bad[40] ^= 1
    r = e.verify_block(bytes(bad), undo, spent_format="undo", network="test")
    assert not r["valid"] and r["reason"] == "high-hash" and not r["scripts_checked"]
    r = e.verify_block(bytes(bad), undo, spent_format="undo", network="test", check_pow=False)
    assert not r["valid"] and r["reason"] == "bad-txnmrklroot" and r["tx"] is None


# --- a Bitcoin Core blocks/ directory ---------------------------------------------------------

def regtest_dir(tmp_path):
    if not os.path.isdir(BLOCKS):
        pytest.skip(f"shared test data absent: {BLOCKS}")
    raws = regtest_chain(SHARED)
    return raws, write_blocks_dir(tmp_path / "blocks", raws)


def test_blocks_dir_orders_the_chain_and_reads_undo_records(tmp_path):
    raws, path = regtest_dir(tmp_path)
    d = batchcrypt.BlocksDir(path, network="regtest")
    assert len(d) == len(raws) == 207 and d.network == "regtest"
    entries = d.range()
    assert [e["height"] for e in entries] == list(range(1, 207))
    assert [e["position"] for e in entries] == list(range(1, 207))
    assert entries[0]["hash"] == core_hash(raws[1])
    part = d.range(start=100, count=5)
    assert [e["height"] for e in part] == [100, 101, 102, 103, 104]
    assert d.range(start=200, count=50)[-1]["height"] == 206 and d.range(start=207) == []
    e = batchcrypt.Engine("cpu")
    items = d.load(part + [3, 50, 7])  # dicts from range() or positions; 3, 50, 7 stored out of order
    assert [i["block"] for i in items] == [raws[h] for h in (100, 101, 102, 103, 104, 3, 50, 7)]
    for item in items:
        r = e.verify_block(**item)
        assert r["valid"] and r["height"] == item["height"], r
    # The undo record is the data Core would give: a spent amount changed in it is refused.
    spender = next(i for i in d.load(d.range()) if len(i["spent"]) > 1)
    r = e.verify_block(**dict(spender, spent=spender["spent"][:-1] + bytes([spender["spent"][-1] ^ 1])))
    assert not r["valid"], r


def test_blocks_dir_errors(tmp_path):
    raws, path = regtest_dir(tmp_path)
    d = batchcrypt.BlocksDir(path, network="regtest")
    with pytest.raises(ValueError, match="outside"):
        d.range(start=208)
    with pytest.raises(ValueError, match="position"):
        d.load([207])
    with pytest.raises(ValueError, match="position"):
        d.load([{"height": 5}])
    with pytest.raises(ValueError, match="network"):
        batchcrypt.BlocksDir(path, network="moon")
    with pytest.raises(ValueError, match="not a directory"):
        batchcrypt.BlocksDir(path / "blk00000.dat", network="regtest")
    with pytest.raises(ValueError, match="magic"):  # a regtest directory read as mainnet
        batchcrypt.BlocksDir(path, network="main")
    # Without the first blocks (a pruned node), heights come from the first block's coinbase.
    pruned = write_blocks_dir(tmp_path / "pruned", raws, first=150, drop_undo=(152,), shuffle=(), split=20)
    p = batchcrypt.BlocksDir(pruned, network="regtest")
    assert len(p) == 57 and [x["height"] for x in p.range(count=3)] == [150, 151, 152]
    with pytest.raises(ValueError, match="outside"):
        p.range(start=149)
    with pytest.raises(ValueError, match="no undo record"):
        p.load(p.range(start=152, count=1))
    assert [i["height"] for i in p.load(p.range(start=150, count=2))] == [150, 151]


def core_hash(raw):
    """A block's hash in display order."""
    return sha256d(raw[:80])[::-1].hex()


# --- loose transactions ----------------------------------------------------------------------

def tx1_case():
    """Transaction 1 of testnet3-1087400 (one P2PKH input) with the output it spends."""
    raw, undo = read("testnet3-1087400.raw"), read("testnet3-1087400.undo")
    tx, spans = block_txs(raw)[1]
    assert len(spans) == 1
    value, script, _ = bcoin_undo(undo)[0]
    return tx, spans, [{"value": value, "script_pubkey": script.hex()}]


@pytest.mark.parametrize("backend", BACKENDS)
def test_verify_transactions(backend):
    tx, spans, spent = tx1_case()
    # The signature is the scriptSig's first push: a length byte, then DER 30 len 02 len r...
    off, _ = spans[0]
    bad = bytearray(tx)
    bad[off + 1 + 10] ^= 0x01  # inside r
    e = batchcrypt.Engine(backend)
    out = e.verify_transactions([
        {"tx": tx.hex(), "spent": spent},
        {"tx": bytes(bad), "spent": [{"value": spent[0]["value"], "script_pubkey": bytes.fromhex(spent[0]["script_pubkey"])}]},
        {"tx": tx, "spent": spent, "flags": "P2SH,WITNESS"},
        {"tx": tx, "spent": spent, "flags": ""},
    ])
    assert out[0] == {"valid": True, "input": None, "reason": None}
    assert out[1]["valid"] is False and out[1]["input"] == 0 and out[1]["reason"]
    assert out[2]["valid"] and out[3]["valid"]
    assert e.last_backend == backend
    assert e.last_reasons[0] is None and e.last_reasons[1] == out[1]["reason"]


def test_verify_transactions_verdicts_and_errors():
    tx, _, spent = tx1_case()
    e = batchcrypt.Engine("cpu")
    assert e.verify_transactions([]) == []
    # Spending more than the input holds, or with a spent output missing: verdicts, not exceptions.
    rich = [{"value": 1, "script_pubkey": spent[0]["script_pubkey"]}]
    out = e.verify_transactions([{"tx": tx, "spent": rich}, {"tx": tx, "spent": []}, {"tx": b"\x00", "spent": []}])
    assert out[0] == {"valid": False, "input": None, "reason": "bad-txns-in-belowout"}
    assert not out[1]["valid"] and not out[2]["valid"]
    with pytest.raises(ValueError, match="FLAG"):
        e.verify_transactions([{"tx": tx, "spent": spent, "flags": "P2SH,NO_SUCH_FLAG"}])
    with pytest.raises(ValueError, match="spent"):
        e.verify_transactions([{"tx": tx}])
    with pytest.raises(ValueError, match="hex"):
        e.verify_transactions([{"tx": "zz", "spent": spent}])
    # Against the chain's tip: the spent outputs' heights decide coinbase maturity.
    young = [dict(spent[0], height=150, coinbase=True)]
    tip = {"tip_mtp": 1_700_000_000}
    out = e.verify_transactions([{"tx": tx, "spent": young, "next_height": 200, **tip},
                                 {"tx": tx, "spent": young, "next_height": 250, **tip},
                                 {"tx": tx, "spent": spent, "next_height": 250, **tip}])
    assert out[0] == {"valid": False, "input": None, "reason": "bad-txns-premature-spend-of-coinbase"}
    assert out[1]["valid"], out[1]
    assert not out[2]["valid"] and "no creation heights" in out[2]["reason"], out[2]
    with pytest.raises(ValueError, match="give both"):
        e.verify_transactions([{"tx": tx, "spent": young, "next_height": 200}])
    with pytest.raises(ValueError, match="coinbase.*expected a bool"):
        e.verify_transactions([{"tx": tx, "spent": [dict(young[0], coinbase="yes")]}])
