"""batchcrypt.Client against a `batchcrypt serve` process: digests and verdicts as the library
gives them, proofs that verify. Skipped where the CLI binary is not built (cargo build)."""

import hashlib
import json
import os
import pathlib
import socket
import subprocess
import tempfile
import time

import pytest

import batchcrypt

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _binary():
    for p in [os.environ.get("BATCHCRYPT_BIN"), ROOT / "target/debug/batchcrypt", ROOT / "target/release/batchcrypt"]:
        if p and pathlib.Path(p).is_file():
            return str(p)
    pytest.skip("the batchcrypt binary is not built (cargo build -p batchcrypt-cli)")


# The server's --shared-memory directory, its address and its --frames-socket.
SHARED_DIR = [None]
ADDRESS = [None]
FRAMES = [None]


@pytest.fixture(scope="module")
def server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp(prefix="batchcrypt-py-serve-")
    shared = os.path.join(data, "shared")
    os.mkdir(shared)
    frames = os.path.join(data, "frames.sock")
    p = subprocess.Popen([_binary(), "serve", "--listen", f"127.0.0.1:{port}", "--metrics-listen", "none",
                          "--data", data, "--shared-memory", shared, "--frames-socket", frames],
                         stdout=subprocess.DEVNULL)
    address = f"127.0.0.1:{port}"
    deadline = time.time() + 60
    client = None
    while time.time() < deadline:
        try:
            client = batchcrypt.Client(address)
            if client.ready():
                break
        except RuntimeError:
            time.sleep(0.05)
    assert client is not None and client.ready(), "the server never became ready"
    SHARED_DIR[0], ADDRESS[0], FRAMES[0] = shared, address, frames
    yield client
    p.terminate()
    p.wait(timeout=60)


# (sha256(message), DER signature, compressed key): made with the OpenSSL command line (the first
# of test_secp256k1.py's vectors); and the signature with a flipped byte.
_SIG = bytes.fromhex("3045022100b78a4232e0c63a46609687360ffbdbaf2327fada81229fa0e77e620169aa70f8"
                     "022015c6e21bfb4290f3af2706ec944e32e257d96bc01799ebf068b0b64f7e879dd4")
ECDSA = (bytes.fromhex("b526aef1a341cfe6e5c377ed4c222888eeb81f913a107110a867e009c1758f24"), _SIG,
         bytes.fromhex("0285bd2d07c6281cd31a6fc1075c8f1ffb7b912dad82d335360a3829af81aaabab"),
         _SIG[:-1] + bytes([_SIG[-1] ^ 1]))


def ecdsa_batches(n):
    """Batches of 1 to n-1 items of ECDSA, every third signature the flipped one."""
    h, sig, key, bad = ECDSA
    return [([h] * k, [sig if (i + k) % 3 else bad for i in range(k)], [key] * k) for k in range(1, n)]


def test_hashes_match_hashlib(server):
    msgs = [b"", b"abc", bytes(range(200)), b"x" * 64]
    assert server.hash(msgs) == [hashlib.sha256(m).digest() for m in msgs]
    d = server.hash(msgs, "sha256d")
    assert d == [hashlib.sha256(hashlib.sha256(m).digest()).digest() for m in msgs]
    packed = bytes(range(256)) * 4
    out = server.hash_packed(packed, 64, "sha256d")
    assert out == b"".join(hashlib.sha256(hashlib.sha256(packed[i:i + 64]).digest()).digest()
                           for i in range(0, len(packed), 64))
    with pytest.raises(ValueError):
        server.hash(msgs, "md5")


def test_hashes_through_shared_memory(server):
    import mmap
    region = server.shared_memory("py-test", 96 * 64, dir=SHARED_DIR[0])
    path = os.path.join(SHARED_DIR[0], "batchcrypt-py-test")
    assert os.path.exists(path)
    msgs = bytes(range(256)) * 16  # 64 messages of 64 bytes
    with mmap.mmap(region.fileno(), 96 * 64) as m:
        m[:len(msgs)] = msgs
    assert server.hash_shared(region, 0, 64, 64, 4096, "sha256d") >= 64
    digests = region.read(2048, 4096)
    assert digests == b"".join(hashlib.sha256(hashlib.sha256(msgs[i:i + 64]).digest()).digest()
                               for i in range(0, len(msgs), 64))
    region.write(b"abc", 0)
    server.hash_shared(region, 0, 1, 3, 64)
    assert region.read(32, 64) == hashlib.sha256(b"abc").digest()
    with pytest.raises(RuntimeError, match="InvalidArgument"):
        server.hash_shared(region, 0, 64, 64, 96 * 64 - 16)  # digests past the region's end
    # Verification requests' items through the region: the verdicts of the same items sent.
    key = bytes.fromhex("F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9")
    sig = bytes.fromhex("E907831F80848D1069A5371B402410364BDF1C5F8307B0084C55F1CE2DCA8215"
                        "25F66A4A85EA8B71E482A74F382D2CE5EBEEE8FDB2172F477DF4900D310536C0")
    items = ([bytes(32)] * 3, [sig, sig[:-1] + b"\x00", sig[:63]], [key] * 3)
    sent = server.verify_schnorr(*items)
    assert sent[0] is None and sent[1] and sent[2]
    assert server.verify_schnorr(*items, shared=(region, 100)) == sent
    from test_sm2 import PUB, R, S, der
    sm2 = ([b"message digest", b"message digesT"], [der(R, S)] * 2, [b"\x04" + PUB] * 2)
    got = server.verify_sm2(*sm2)
    assert got[0] is None and got[1]
    assert server.verify_sm2(*sm2, shared=(region, 0)) == got
    with pytest.raises(RuntimeError, match="InvalidArgument"):
        server.verify_schnorr(*items, shared=(region, 96 * 64 - 10))  # past the registered size
    server.release_shared_memory(region)
    assert not os.path.exists(path)
    with pytest.raises(ValueError):
        region.read(1)


def test_sm2_verdicts_from_lists(server):
    # GM/T 0003's example (as test_sm2 checks it on the engine), sent from lists of bytes.
    from test_sm2 import PUB, R, S, compress, der

    sig, key = der(R, S), b"\x04" + PUB
    got = server.verify_sm2([b"message digest", b"message digesT", b"message digest"],
                            [sig, sig, R + S], [key, key, compress(PUB)])
    assert got[0] is None and got[1] and got[2]
    assert server.verify_sm2([b"message digest"], [R + S], [compress(PUB)], format="compact") == [None]
    assert server.verify_sm2([b"message digest"], [sig], [key], id=b"ALICE123@YAHOO.COM")[0]


def test_verdicts_are_the_librarys(server):
    # BIP340's published vectors: index 0 valid, and an altered copy invalid.
    key = bytes.fromhex("F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9")
    msg = bytes(32)
    sig = bytes.fromhex("E907831F80848D1069A5371B402410364BDF1C5F8307B0084C55F1CE2DCA8215"
                        "25F66A4A85EA8B71E482A74F382D2CE5EBEEE8FDB2172F477DF4900D310536C0")
    bad = sig[:-1] + bytes([sig[-1] ^ 1])
    got = server.verify_schnorr([msg, msg, msg], [sig, bad, sig[:63]], [key, key, key])
    want = batchcrypt.Engine("cpu").verify_schnorr_batch([msg, msg], [sig, bad], [key, key])
    assert [g is None for g in got[:2]] == list(want)
    assert got[0] is None and got[1] and "64 bytes" in got[2]
    # The same over one stream, in batches of one, two and three items.
    items = list(zip([msg] * 3, [sig, bad, sig[:63]], [key] * 3))
    batches = [tuple(map(list, zip(*items[:k]))) for k in (1, 2, 3)]
    assert server.verify_schnorr_many(batches) == [got[:1], got[:2], got]


def test_batches_over_one_stream(server):
    def sha256d(m):
        return hashlib.sha256(hashlib.sha256(m).digest()).digest()

    msgs = [bytes([i]) * 64 for i in range(40)]
    batches = [b"".join(msgs[i:i + 8]) for i in range(0, 40, 8)] + [b""]
    got = server.hash_packed_many(batches, 64, "sha256d")
    assert got == [b"".join(sha256d(m) for m in msgs[i:i + 8]) for i in range(0, 40, 8)] + [b""]
    with pytest.raises(ValueError):
        server.hash_packed_many([b"x" * 63], 64)

    h, sig, key, bad = ECDSA
    batches = ecdsa_batches(30)
    got = server.verify_ecdsa_many(batches)
    assert len(got) == len(batches)
    for (hashes, sigs, keys), verdicts in zip(batches, got):
        assert verdicts == server.verify_ecdsa(hashes, sigs, keys)
        assert [v is None for v in verdicts] == [s == sig for s in sigs]

    # Rows of a numpy array go packed as they are: the same verdicts as lists of bytes.
    import numpy as np
    rows = lambda items: np.frombuffer(b"".join(items), dtype=np.uint8).reshape(len(items), -1)
    sigs = [sig, bad, sig]
    want = server.verify_ecdsa([h] * 3, sigs, [key] * 3)
    assert server.verify_ecdsa(rows([h] * 3), sigs, rows([key] * 3)) == want
    assert server.verify_ecdsa_many([(rows([h] * 3), sigs, rows([key] * 3))]) == [want]
    with pytest.raises(ValueError, match="expected 32"):
        server.verify_ecdsa(rows([h[:31]] * 3), sigs, [key] * 3)


def test_proof_round_trip(server):
    fixtures = pathlib.Path(os.environ.get("BATCHCRYPT_ZK_FIXTURES", ROOT / "target/zk-fixtures"))
    chain = fixtures / "chain-10"
    if not (chain / "circuit.zkey").is_file():
        if os.environ.get("BATCHCRYPT_REQUIRE_ZK_FIXTURES") == "1":
            pytest.fail("fixture chain-10 missing: run scripts/zk-fixtures.sh")
        pytest.skip("Groth16 fixtures not built")
    info = server.register(str(chain / "circuit.zkey"), "chain")
    assert info["domain"] == 1024
    proof, public = server.prove(info["circuit_id"], chain / "witness.wtns")
    assert json.loads(proof)["protocol"] == "groth16"
    assert json.loads(public) == json.loads((chain / "snarkjs.public.json").read_text())
    job = server.submit(info["circuit_id"], (chain / "witness.wtns").read_bytes(), request_id="py-1")
    assert server.submit(info["circuit_id"], (chain / "witness.wtns").read_bytes(), request_id="py-1") == job
    server.wait(job)
    assert server.job(job)["state"] == "done"
    # A priority and a deadline far enough away: queued, run, done.
    late = server.submit(info["circuit_id"], chain / "witness.wtns", priority=3, deadline=600.0)
    server.wait(late)
    assert (server.job(late)["state"], server.job(late)["priority"]) == ("done", 3)
    with pytest.raises(ValueError, match="deadline -1"):
        server.submit(info["circuit_id"], chain / "witness.wtns", deadline=-1.0)
    with pytest.raises(RuntimeError, match="NotFound"):
        server.job("no-such-job")


def test_frames_carry_the_batched_calls(server):
    # The same calls over the server's frames socket: the same digests and verdicts as over gRPC.
    local = batchcrypt.Client(ADDRESS[0], frames=FRAMES[0])
    assert local.ready()
    msgs = [b"", b"abc", bytes(range(200))]
    assert local.hash(msgs, "sha256d") == server.hash(msgs, "sha256d")
    packed = bytes(range(256)) * 4
    assert local.hash_packed(packed, 64, "sm3") == server.hash_packed(packed, 64, "sm3")
    assert local.hash_packed_many([packed, b""], 64) == server.hash_packed_many([packed, b""], 64)
    h, sig, key, _ = ECDSA
    batches = ecdsa_batches(20)
    assert local.verify_ecdsa_many(batches) == server.verify_ecdsa_many(batches)
    got = local.verify_ecdsa(*batches[-1])
    assert [v is None for v in got] == [s == sig for s in batches[-1][1]]
    from test_sm2 import PUB, R, S, der
    sm2 = ([b"message digest", b"message digesT"], [der(R, S)] * 2, [b"\x04" + PUB] * 2)
    assert local.verify_sm2(*sm2) == server.verify_sm2(*sm2)
    # A refusal comes back as over gRPC.
    with pytest.raises(RuntimeError, match="InvalidArgument"):
        local.verify_ecdsa([h, h], [sig], [key])
    with pytest.raises(RuntimeError, match="frames"):
        batchcrypt.Client(ADDRESS[0], frames=os.path.join(SHARED_DIR[0], "no-such.sock"))


def test_files_encrypted_and_decrypted_by_the_server(server, tmp_path):
    # Each way against the engine's own file calls: the same formats, byte for byte for CTR.
    e = batchcrypt.Engine("cpu")
    plain = os.urandom(3 * (1 << 20) + 12345)  # several of the client's 1 MiB messages
    (tmp_path / "a").write_bytes(plain)
    key = bytes(range(32))
    assert server.encrypt_file(key, tmp_path / "a", tmp_path / "a.bcg", chunk_log2=16) == len(plain)
    assert e.decrypt_file(key, tmp_path / "a.bcg", tmp_path / "b") == len(plain)
    assert (tmp_path / "b").read_bytes() == plain
    e.encrypt_file(key, tmp_path / "a", tmp_path / "local.bcg")
    assert server.decrypt_file(key, str(tmp_path / "local.bcg"), tmp_path / "c") == len(plain)
    assert (tmp_path / "c").read_bytes() == plain
    iv = bytes(range(16))
    server.encrypt_file(key[:16], tmp_path / "a", tmp_path / "a.ctr", mode="ctr", iv=iv)
    assert (tmp_path / "a.ctr").read_bytes() == e.aes_ctr(key[:16], iv, plain)
    # A changed byte: DataLoss, and no output under the final name.
    sealed = bytearray((tmp_path / "local.bcg").read_bytes())
    sealed[len(sealed) // 2] ^= 1
    (tmp_path / "bad.bcg").write_bytes(bytes(sealed))
    with pytest.raises(RuntimeError, match="DataLoss"):
        server.decrypt_file(key, tmp_path / "bad.bcg", tmp_path / "never")
    assert not (tmp_path / "never").exists()
    with pytest.raises(RuntimeError, match="InvalidArgument"):
        server.encrypt_file(key, tmp_path / "a", tmp_path / "never", chunk_log2=28)
    with pytest.raises(ValueError, match="iv"):
        server.encrypt_file(key, tmp_path / "a", tmp_path / "never", mode="ctr")
    with pytest.raises(OSError):
        server.encrypt_file(key, tmp_path / "missing", tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_bitcoin_blocks_and_transactions_on_the_server(server):
    from test_bitcoin import block_file, read
    e = batchcrypt.Engine("cpu")
    for raw, spent, network in [("testnet3-1087400.raw", "testnet3-1087400.undo", "test"),
                                ("mainnet-367891.raw", "mainnet-367891.spent.json", "main")]:
        local = e.verify_block(read(raw), block_file(spent), network=network)
        served = server.verify_block(read(raw), block_file(spent), network=network)
        assert served["valid"] and local["valid"], served
        for key in ("reason", "hash", "height", "txs", "inputs", "weight", "sigop_cost", "fees", "unchecked",
                    "flags", "ecdsa_checks", "schnorr_checks"):
            assert served[key] == local[key], key
        assert served["ecdsa_backend"] or served["schnorr_backend"], served
        assert served["scripts_time"] > 0, served
    # A median time past the block's own time does not pass: time-too-old, on both.
    raw = read("testnet3-1087400.raw")
    time_ = int.from_bytes(raw[68:72], "little")
    undo = read("testnet3-1087400.undo")
    args = dict(spent_format="undo", network="test", median_time_past=time_)
    served = server.verify_block(raw, undo, **args)
    assert not served["valid"] and served["reason"].startswith("time-too-old"), served
    assert e.verify_block(raw, undo, **args)["reason"] == served["reason"]
    with pytest.raises(ValueError, match="spent_format"):
        server.verify_block(raw, undo)
    # Loose transactions: the engine's verdicts. A witness program spent without a witness
    # passes with no rules named and fails under the default rules.
    tx = bytes.fromhex("0100000001" + "00" * 32 + "01000000" + "00" + "00000000" + "01" + "e803000000000000" + "0151" + "00000000")
    p2wpkh = "0014" + "ab" * 20
    txs = [{"tx": tx, "spent": [{"value": 2000, "script_pubkey": "51"}]},
           {"tx": tx.hex(), "spent": [{"value": 2000, "script_pubkey": p2wpkh}], "flags": "NONE"},
           {"tx": tx, "spent": [{"value": 2000, "script_pubkey": p2wpkh}]},
           {"tx": tx, "spent": [{"value": 10, "script_pubkey": "51"}]}]
    # And against the chain's tip: a coinbase output 50 blocks old, then 100.
    young = [{"value": 2000, "script_pubkey": "51", "height": 150, "coinbase": True}]
    txs += [{"tx": tx, "spent": young, "next_height": h, "tip_mtp": 1_700_000_000} for h in (200, 250)]
    got = server.verify_transactions(txs)
    assert got == e.verify_transactions(txs)
    assert [v["valid"] for v in got] == [True, True, False, False, False, True]
    assert got[4]["reason"] == "bad-txns-premature-spend-of-coinbase"
    assert got[3] == {"valid": False, "input": None, "reason": "bad-txns-in-belowout"}


def test_psi_steps_on_the_server(server):
    e = batchcrypt.Engine("cpu")
    k = bytes([5]) * 32
    msgs = [b"alice@example.org", b"", b"bob@example.org"]
    points = server.sm2_hash_to_curve_mul(k, msgs)
    assert points.shape == (3, 33)
    assert (points == e.sm2_hash_to_curve_mul(k, msgs)).all()
    points[1, 0] = 7  # no longer a compressed point's prefix
    got, ok = server.sm2_mul_compressed(k, points)
    want, want_ok = e.sm2_mul(k, points)
    assert list(ok) == list(want_ok) == [True, False, True]
    assert (got == want).all()
