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
