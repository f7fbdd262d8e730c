"""Batch P-256 ECDSA verification from Python, on every backend that implements it."""

import hashlib

import numpy as np
import pytest

import batchcrypt

BACKENDS = [name for name, why in batchcrypt.backends("p256") if why is None]

# RFC 6979 appendix A.2.5: P-256 with SHA-256, the key's public point and the signatures of
# "sample" and "test" (compact r || s).
UX = "60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"
UY = "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299"
SIGNED = [
    (b"sample", "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
                "f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8"),
    (b"test", "f1abb023518351cd71d881567b1ea663ed3efcf6c5132b354f28d3b0b7d38367"
              "019f4113742a2b14bd25926b49c649155f267e60d3814b4c0cc84250e46f0083"),
]


def der(compact):
    """DER of a compact signature (strict: minimal integers, a zero byte before a high bit)."""
    def integer(v):
        v = v.lstrip(b"\0") or b"\0"
        if v[0] & 0x80:
            v = b"\0" + v
        return bytes([2, len(v)]) + v
    body = integer(compact[:32]) + integer(compact[32:])
    return bytes([0x30, len(body)]) + body


@pytest.mark.parametrize("backend", BACKENDS)
def test_rfc6979_vectors(backend):
    full = bytes.fromhex("04" + UX + UY)
    compressed = bytes([2 | (full[-1] & 1)]) + full[1:33]
    hashes = [hashlib.sha256(m).digest() for m, _ in SIGNED]
    sigs = [bytes.fromhex(s) for _, s in SIGNED]
    e = batchcrypt.Engine(backend)
    # Both signatures with both key forms, then each signature over the other message.
    ok = e.verify_ecdsa_batch(hashes * 2 + hashes[::-1], sigs * 3, [full, full, compressed, compressed, full, full],
                              format="compact", curve="p256")
    assert e.last_backend == backend
    assert list(ok) == [True] * 4 + [False] * 2
    assert e.last_reasons[4:] == ["signature does not match the message and public key"] * 2
    ok = e.verify_ecdsa_batch(np.frombuffer(b"".join(hashes), dtype=np.uint8).reshape(-1, 32),
                              [der(s) for s in sigs], [compressed, full], curve="secp256r1")
    assert list(ok) == [True, True]
    # The same items are not secp256k1 signatures (the key is not even a secp256k1 point, or
    # the equation fails).
    assert not any(batchcrypt.Engine("cpu").verify_ecdsa_batch(hashes, sigs, [full, full], format="compact"))
    with pytest.raises(ValueError, match="curve"):
        e.verify_ecdsa_batch(hashes, sigs, [full, full], format="compact", curve="p384")
