"""AES through the Python API: the SP 800-38A CTR example and GCM against OpenSSL-made values
(the `cryptography` package is not assumed; GCM is checked against the AES-GCM test case of the
original GCM paper, and round trips and tampering on every backend)."""

import os

import numpy as np
import pytest

import batchcrypt

BACKENDS = [name for name, why in batchcrypt.backends("aes") if why is None]


def test_backends():
    assert {"portable", "openssl"} <= set(BACKENDS)
    if os.environ.get("BATCHCRYPT_REQUIRE_GPU") == "1":
        assert "cuda" in BACKENDS


@pytest.mark.parametrize("backend", BACKENDS)
def test_ctr_sp800_38a(backend):
    e = batchcrypt.Engine(backend)
    key = bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c")
    iv = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
    pt = bytes.fromhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51")
    ct = e.aes_ctr(key, iv, pt)
    assert ct.hex() == "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
    assert e.last_backend == backend
    assert e.aes_ctr(key, iv, np.frombuffer(ct, dtype=np.uint8)) == pt


@pytest.mark.parametrize("backend", BACKENDS)
def test_gcm_known_answer_and_tampering(backend):
    e = batchcrypt.Engine(backend)
    # McGrew and Viega, "The Galois/Counter Mode of Operation", test case 4 (AES-128, with AAD).
    key = bytes.fromhex("feffe9928665731c6d6a8f9467308308")
    iv = bytes.fromhex("cafebabefacedbaddecaf888")
    pt = bytes.fromhex(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
        "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
    )
    aad = bytes.fromhex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
    ct, tag = e.aes_gcm_encrypt(key, iv, pt, aad=aad)
    assert tag.hex() == "5bc94fbc3221a5db94fae95ae7121a47"
    assert ct.hex().startswith("42831ec2217774244b7221b784d0d49c")
    assert e.aes_gcm_decrypt(key, iv, ct, tag, aad=aad) == pt
    bad = bytes([ct[0] ^ 1]) + ct[1:]
    with pytest.raises(batchcrypt.AuthenticationError):
        e.aes_gcm_decrypt(key, iv, bad, tag, aad=aad)
    with pytest.raises(ValueError, match="16 bytes"):
        e.aes_ctr(b"short", iv + b"0000", pt)


@pytest.mark.parametrize("backend", BACKENDS)
def test_xts_ieee1619_vector_and_units(backend):
    e = batchcrypt.Engine(backend)
    # IEEE 1619-2007, vector 2 (vector 1's equal key halves are refused, as SP 800-38E asks).
    key = bytes([0x11] * 16 + [0x22] * 16)
    tweak = (0x3333333333).to_bytes(16, "little")
    ct = e.aes_xts_encrypt(key, tweak, bytes([0x44] * 32))
    assert ct.hex() == "c454185e6a16936e39334038acef838bfb186fff7480adc4289382ecd6d394f0"
    assert e.aes_xts_decrypt(key, tweak, ct) == bytes([0x44] * 32)
    with pytest.raises(ValueError, match="differ"):
        e.aes_xts_encrypt(bytes(32), tweak, bytes(32))
    # Four 512-byte sectors from sector 7 are the four sectors encrypted one by one.
    rng = np.random.default_rng(1)
    key = rng.integers(0, 256, 64, dtype=np.uint8).tobytes()
    data = rng.integers(0, 256, 4 * 512, dtype=np.uint8).tobytes()
    run = e.aes_xts_encrypt(key, (7).to_bytes(16, "little"), data, unit=512)
    one = b"".join(e.aes_xts_encrypt(key, (7 + j).to_bytes(16, "little"), data[512 * j: 512 * (j + 1)]) for j in range(4))
    assert run == one
    assert e.aes_xts_decrypt(key, (7).to_bytes(16, "little"), run, unit=512) == data
    with pytest.raises(ValueError):
        e.aes_xts_encrypt(key, tweak, bytes(15))  # shorter than a block
    with pytest.raises(ValueError):
        e.aes_xts_encrypt(bytes(48), tweak, bytes(32))  # not an XTS key size


def layout(rng, n):
    """Messages of random lengths (some empty) as one buffer and n + 1 offsets."""
    lens = rng.integers(0, 300, n)
    lens[0] = 0
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.uint64)
    return rng.integers(0, 256, int(offsets[-1]), dtype=np.uint8).tobytes(), offsets


@pytest.mark.parametrize("backend", BACKENDS)
def test_batches_equal_one_message_calls(backend):
    e = batchcrypt.Engine(backend)
    rng = np.random.default_rng(2)
    n = 50
    data, off = layout(rng, n)
    msgs = [data[off[i]:off[i + 1]] for i in range(n)]
    keys = [rng.integers(0, 256, 16 if i % 2 else 32, dtype=np.uint8).tobytes() for i in range(n)]
    ivs = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    ctr = e.aes_ctr_batch(keys, ivs, data, offsets=off)
    assert ctr == b"".join(e.aes_ctr(k, iv.tobytes(), m) for k, iv, m in zip(keys, ivs, msgs))
    nonces = rng.integers(0, 256, (n, 12), dtype=np.uint8)
    aads = [bytes([i]) * (i % 5) for i in range(n)]
    ct, tags = e.aes_gcm_encrypt_batch(keys, nonces, data, offsets=off, aads=aads)
    for i in range(n):
        c, t = e.aes_gcm_encrypt(keys[i], nonces[i].tobytes(), msgs[i], aad=aads[i])
        assert ct[off[i]:off[i + 1]] == c and tags[i].tobytes() == t
    bad = tags.copy()
    bad[3, 0] ^= 1
    pt, ok = e.aes_gcm_decrypt_batch(keys, nonces, ct, bad, offsets=off, aads=aads)
    assert not ok[3] and ok.sum() == n - 1
    assert pt[off[3]:off[4]] == bytes(int(off[4] - off[3]))  # the failed message is zeroed
    assert pt[off[4]:] == data[off[4]:]
    # One key for all, equal-length messages.
    key = bytes(range(16))
    fixed = rng.integers(0, 256, 20 * 64, dtype=np.uint8).tobytes()
    out = e.aes_ctr_batch(key, ivs[:20], fixed, msg_len=64)
    assert out == b"".join(e.aes_ctr(key, ivs[i].tobytes(), fixed[64 * i: 64 * (i + 1)]) for i in range(20))
    # XTS: each message one data unit of at least 16 bytes.
    xkeys = [rng.integers(0, 256, 32, dtype=np.uint8).tobytes() for _ in range(20)]
    tweaks = rng.integers(0, 256, (20, 16), dtype=np.uint8)
    lens = rng.integers(16, 200, 20)
    xoff = np.concatenate([[0], np.cumsum(lens)]).astype(np.uint64)
    xdata = rng.integers(0, 256, int(xoff[-1]), dtype=np.uint8).tobytes()
    xct = e.aes_xts_encrypt_batch(xkeys, tweaks, xdata, offsets=xoff)
    for i in range(20):
        assert xct[xoff[i]:xoff[i + 1]] == e.aes_xts_encrypt(xkeys[i], tweaks[i].tobytes(), xdata[xoff[i]:xoff[i + 1]])
    assert e.aes_xts_decrypt_batch(xkeys, tweaks, xct, offsets=xoff) == xdata
    with pytest.raises(ValueError, match="offsets"):
        e.aes_ctr_batch(keys, ivs, data)
    with pytest.raises(ValueError):
        e.aes_ctr_batch(keys[:-1], ivs, data, offsets=off)


@pytest.mark.parametrize("backend", BACKENDS)
def test_files(backend, tmp_path):
    e = batchcrypt.Engine(backend)
    rng = np.random.default_rng(3)
    plain = rng.integers(0, 256, 3 * 4096 + 17, dtype=np.uint8).tobytes()
    (tmp_path / "a").write_bytes(plain)
    key = bytes(range(32))
    assert e.encrypt_file(key, tmp_path / "a", tmp_path / "a.bcg", chunk_log2=12) == len(plain)
    assert e.decrypt_file(key, str(tmp_path / "a.bcg"), tmp_path / "b") == len(plain)
    assert (tmp_path / "b").read_bytes() == plain
    # A changed byte fails its chunk's tag: an error, and no output under the final name.
    sealed = bytearray((tmp_path / "a.bcg").read_bytes())
    sealed[-40] ^= 1
    (tmp_path / "bad.bcg").write_bytes(bytes(sealed))
    with pytest.raises(ValueError, match="failed authentication"):
        e.decrypt_file(key, tmp_path / "bad.bcg", tmp_path / "c")
    assert not (tmp_path / "c").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    # Raw CTR is the one-buffer CTR.
    iv = bytes(16)
    e.encrypt_file(key[:16], tmp_path / "a", tmp_path / "a.ctr", mode="ctr", iv=iv)
    assert (tmp_path / "a.ctr").read_bytes() == e.aes_ctr(key[:16], iv, plain)
    with pytest.raises(ValueError, match="iv"):
        e.encrypt_file(key, tmp_path / "a", tmp_path / "x", mode="ctr")
    with pytest.raises(OSError):
        e.encrypt_file(key, tmp_path / "missing", tmp_path / "x")
