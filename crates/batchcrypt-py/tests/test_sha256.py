"""The Python API against hashlib, on every available backend."""

import hashlib
import os

import numpy as np
import pytest

import batchcrypt

BACKENDS = [name for name, why in batchcrypt.backends("sha256") if why is None]


def require_gpu_if_asked():
    if os.environ.get("BATCHCRYPT_REQUIRE_GPU") == "1":
        assert "cuda" in BACKENDS, dict(batchcrypt.backends())["cuda"]


def sha256d(m):
    return hashlib.sha256(hashlib.sha256(m).digest()).digest()


def test_backends_listed():
    require_gpu_if_asked()
    names = [n for n, _ in batchcrypt.backends()]
    assert "portable" in names and "cuda" in names and "libsecp256k1" in names
    assert "portable" in BACKENDS and "libsecp256k1" not in BACKENDS
    with pytest.raises(ValueError, match="unknown primitive"):
        batchcrypt.backends("md5")


@pytest.mark.parametrize("backend", BACKENDS)
def test_fixed_batch(backend):
    rng = np.random.default_rng(1)
    for msg_len in (1, 55, 64, 80, 1000):
        data = rng.integers(0, 256, size=msg_len * 37, dtype=np.uint8)
        e = batchcrypt.Engine(backend)
        got = e.sha256_batch(data, msg_len)
        assert e.last_backend == backend
        assert got.shape == (37, 32) and got.dtype == np.uint8
        raw = data.tobytes()
        for i in range(37):
            assert got[i].tobytes() == hashlib.sha256(raw[i * msg_len:(i + 1) * msg_len]).digest()
        got = e.sha256_batch(raw, msg_len, double=True)
        assert got[5].tobytes() == sha256d(raw[5 * msg_len:6 * msg_len])


@pytest.mark.parametrize("backend", BACKENDS)
def test_var_batch_and_merkle(backend):
    rng = np.random.default_rng(2)
    lengths = rng.integers(0, 3000, size=200)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint64)
    data = rng.integers(0, 256, size=int(offsets[-1]), dtype=np.uint8).tobytes()
    e = batchcrypt.Engine(backend)
    got = e.sha256_batch_var(data, offsets)
    for i in range(200):
        assert got[i].tobytes() == hashlib.sha256(data[offsets[i]:offsets[i + 1]]).digest()
    txids = data[: 32 * 7]
    level = [txids[i:i + 32] for i in range(0, len(txids), 32)]
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        level = [sha256d(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
    assert e.merkle_root(txids) == level[0]


def test_single_and_errors():
    assert batchcrypt.sha256(b"abc").hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert batchcrypt.sha256(b"abc", double=True) == sha256d(b"abc")
    with pytest.raises(ValueError, match="empty batch"):
        batchcrypt.sha256_batch(b"", 64)
    with pytest.raises(ValueError, match="whole number"):
        batchcrypt.sha256_batch(b"x" * 65, 64)
    with pytest.raises(ValueError, match="past the end"):
        batchcrypt.sha256_batch_var(b"abc", np.array([0, 4], dtype=np.uint64))
    with pytest.raises(ValueError, match="unknown backend"):
        batchcrypt.Engine("tpu")
    with pytest.raises(ValueError, match="multiple of 32"):
        batchcrypt.merkle_root(b"x" * 33)
