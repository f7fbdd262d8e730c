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


@pytest.fixture(scope="module")
def server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp(prefix="batchcrypt-py-serve-")
    p = subprocess.Popen([_binary(), "serve", "--listen", f"127.0.0.1:{port}", "--metrics-listen", "none",
                          "--data", data], stdout=subprocess.DEVNULL)
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
    yield client
    p.terminate()
    p.wait(timeout=60)


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
    with pytest.raises(RuntimeError, match="NotFound"):
        server.job("no-such-job")
