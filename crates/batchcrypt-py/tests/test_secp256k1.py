"""Batch secp256k1 verification from Python, on every backend that implements it."""

import csv
import os

import numpy as np
import pytest

import batchcrypt

BACKENDS = [name for name, why in batchcrypt.backends("secp256k1") if why is None]
DATA = os.path.join(os.path.dirname(__file__), "..", "..", "batchcrypt", "tests", "data")

# (sha256(message), DER signature, compressed key): made with the OpenSSL command line.
ECDSA = [
    ("b526aef1a341cfe6e5c377ed4c222888eeb81f913a107110a867e009c1758f24",
     "3045022100b78a4232e0c63a46609687360ffbdbaf2327fada81229fa0e77e620169aa70f8022015c6e21bfb4290f3af2706ec944e32e257d96bc01799ebf068b0b64f7e879dd4",
     "0285bd2d07c6281cd31a6fc1075c8f1ffb7b912dad82d335360a3829af81aaabab"),
    ("84768ddee659efeafdeb972b55143141bc23b6e333c70e8b68d29774ab09a548",
     "30440220633cd3cbc62aab7c69a78e2a755f61e5116274ff10d18e5b0eae8c037361b515022046d38cd114c4b5c83bbf2ab3894496abe7fc36dd99a796fe0d62b2fd76ce08c6",
     "03e49c0723d131f7231b7a936dca03ee9c57c75e02475cbc3641d0261d8db419d5"),
    ("fb29a8d5309d7c35b180dbd78c63a455a5d1fb45149a3264c08f1aff43524beb",
     "30440220121d44661bd110e3b14f6557a79208a766ab887c9c3d305d5ffd0e19fdf638c502201232fc91f53bb1c36c2a345894322d6471d506afc88da7e69e4680ae569dc8cd",
     "030b531632a5ece4b59f76f9a886d18f7d12346b2939b63610e41bfde4ffe3385c"),
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_ecdsa_batch(backend):
    hashes = [bytes.fromhex(h) for h, _, _ in ECDSA]
    sigs = [bytes.fromhex(s) for _, s, _ in ECDSA]
    keys = [bytes.fromhex(k) for _, _, k in ECDSA]
    # The same items again, each broken: another hash, a flipped signature byte, a key off the curve.
    bad_hash = bytes([hashes[0][0] ^ 1]) + hashes[0][1:]
    bad_sig = sigs[1][:-1] + bytes([sigs[1][-1] ^ 1])
    bad_key = keys[2][:-1] + bytes([keys[2][-1] ^ 1])
    e = batchcrypt.Engine(backend)
    ok = e.verify_ecdsa_batch(np.frombuffer(b"".join(hashes + [bad_hash, hashes[1], hashes[2]]), dtype=np.uint8).reshape(-1, 32),
                              sigs + [sigs[0], bad_sig, sigs[2]], keys + [keys[0], keys[1], bad_key])
    assert e.last_backend == backend
    assert ok.dtype == np.bool_ and list(ok[:3]) == [True, True, True] and not ok[3] and not ok[4]
    # A flipped key byte gives another valid point or none at all; either way the item fails.
    assert not ok[5]
    assert e.last_reasons[:3] == [None, None, None] and all(r for r in e.last_reasons[3:])
    with pytest.raises(ValueError, match="format"):
        e.verify_ecdsa_batch(hashes, sigs, keys, format="ber")
    with pytest.raises(ValueError, match="empty batch"):
        e.verify_ecdsa_batch([], [], [])


@pytest.mark.parametrize("backend", BACKENDS)
def test_bip340_vectors(backend):
    with open(os.path.join(DATA, "bip340-test-vectors.csv")) as f:
        rows = list(csv.DictReader(f))
    msgs = [bytes.fromhex(r["message"]) for r in rows]
    sigs = [bytes.fromhex(r["signature"]) for r in rows]
    keys = [bytes.fromhex(r["public key"]) for r in rows]
    e = batchcrypt.Engine(backend)
    ok = e.verify_schnorr_batch(msgs, sigs, keys)
    assert list(ok) == [r["verification result"] == "TRUE" for r in rows]
    with pytest.raises(ValueError, match="expected 64"):
        e.verify_schnorr_batch(msgs[:1], [sigs[0][:63]], keys[:1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_arrays_and_buffers_give_what_lists_give(backend):
    """Contiguous arrays and flat bytes are read in place, other layouts copied: same verdicts."""
    with open(os.path.join(DATA, "bip340-test-vectors.csv")) as f:
        rows = [r for r in csv.DictReader(f) if len(r["message"]) == 64]
    msgs = [bytes.fromhex(r["message"]) for r in rows]
    sigs = [bytes.fromhex(r["signature"]) for r in rows]
    keys = [bytes.fromhex(r["public key"]) for r in rows]
    e = batchcrypt.Engine(backend)
    want = list(e.verify_schnorr_batch(msgs, sigs, keys))
    assert True in want and False in want
    rows_of = lambda items, w: np.frombuffer(b"".join(items), dtype=np.uint8).reshape(-1, w)
    m, s, k = rows_of(msgs, 32), rows_of(sigs, 64), rows_of(keys, 32)
    assert list(e.verify_schnorr_batch(m, s, k)) == want
    assert list(e.verify_schnorr_batch(m, b"".join(sigs), b"".join(keys))) == want
    # Every other column of a wider array: not contiguous, so copied.
    wide = np.zeros((len(sigs), 128), dtype=np.uint8)
    wide[:, ::2] = s
    assert not wide[:, ::2].flags["C_CONTIGUOUS"]
    assert list(e.verify_schnorr_batch(m, wide[:, ::2], k)) == want
    with pytest.raises(ValueError, match="where its items end"):
        e.verify_schnorr_batch(b"".join(msgs), s, k)
    with pytest.raises(ValueError, match="whole number"):
        e.verify_schnorr_batch(m, b"".join(sigs)[:-1], k)
    # Sequences of any bytes-like items, mixed; rows of the wrong width.
    mixed = [bytearray(x) if i % 3 == 0 else memoryview(x) if i % 3 == 1 else np.frombuffer(x, np.uint8)
             for i, x in enumerate(sigs)]
    assert list(e.verify_schnorr_batch(msgs, mixed, tuple(keys))) == want
    with pytest.raises(ValueError, match="expected 64"):
        e.verify_schnorr_batch(m, s[:, :63].copy(), k)
    with pytest.raises(ValueError, match=r"sigs\[1\] has 65 bytes"):
        e.verify_schnorr_batch(msgs, [sigs[0], sigs[1] + b"x"] + sigs[2:], keys)
