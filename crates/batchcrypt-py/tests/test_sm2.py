"""SM2 and SM3 batches from Python, on every backend that implements them: the GM/T 0003.5
example, the SM3 standard vector, and consistency between the operations (k2*(k1*G) is
(k1*k2)*G; the fused hash-to-curve-and-multiply is the multiplication of the hashed point)."""

import numpy as np
import pytest

import batchcrypt

BACKENDS = [name for name, why in batchcrypt.backends("sm2") if why is None]
N = 0xFFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFF7203DF6B21C6052B53BBF40939D54123
G = bytes.fromhex(
    "32C4AE2C1F1981195F9904466A39C9948FE30BBFF2660BE1715A4589334C74C7"
    "BC3736A2F4F6779C59BDCEE36B692153D0A9877CC62A474002DF32E52139F0A0")

# GM/T 0003.5-2012 Annex A: private key, public key, signature of "message digest".
D = bytes.fromhex("3945208F7B2144B13F36E38AC6D39F95889393692860B51A42FB81EF4DF7C5B8")
PUB = bytes.fromhex(
    "09F9DF311E5421A150DD7D161E4BC5C672179FAD1833FC076BB08FF356F35020"
    "CCEA490CE26775A52DC6EA718CC1AA600AED05FBF35E084A6632F6072DA9AD13")
R = bytes.fromhex("F5A03B0648D2C4630EEAC513E1BB81A15944DA3827D5B74143AC7EACEEE720B3")
S = bytes.fromhex("B1B6AA29DF212FD8763182BC0D421CA1BB9038FD1F7F42D4840B69C485BBC1AA")


def der(r, s):
    def integer(x):
        x = x.lstrip(b"\0")
        if x[0] & 0x80:
            x = b"\0" + x
        return b"\x02" + bytes([len(x)]) + x
    body = integer(r) + integer(s)
    return b"\x30" + bytes([len(body)]) + body


def compress(xy):
    return bytes([2 | (xy[63] & 1)]) + xy[:32]


def be(x):
    return x.to_bytes(32, "big")


@pytest.mark.parametrize("backend", BACKENDS)
def test_public_key_and_products(backend):
    e = batchcrypt.Engine(backend)
    k1, k2 = 0x1234567890ABCDEF << 100, N - 5
    pts = e.sm2_mul_base(np.frombuffer(D + be(k1) + be(1), dtype=np.uint8).reshape(-1, 32))
    assert e.last_backend == backend
    assert pts.shape == (3, 64) and pts.dtype == np.uint8
    assert pts[0].tobytes() == PUB
    assert pts[2].tobytes() == G
    p1 = pts[1].tobytes()
    want = e.sm2_mul_base([be(k1 * k2 % N)])[0].tobytes()
    # One scalar over affine points, and over compressed ones; a point off the curve is refused.
    off = p1[:63] + bytes([p1[63] ^ 1])
    out, ok = e.sm2_mul(be(k2), [p1, G, off])
    assert ok.tolist() == [True, True, False]
    assert out[0].tobytes() == want
    assert out[1].tobytes() == e.sm2_mul_base([be(k2)])[0].tobytes()
    assert out[2].tobytes() == bytes(64)
    assert e.last_reasons[:2] == [None, None] and "not on the curve" in e.last_reasons[2]
    out, ok = e.sm2_mul(be(k2), np.frombuffer(compress(p1), dtype=np.uint8).reshape(1, 33))
    assert ok.tolist() == [True] and out[0].tobytes() == compress(want)
    with pytest.raises(ValueError):
        e.sm2_mul(be(k2), [b"\0" * 40])
    with pytest.raises(ValueError):
        e.sm2_mul_base([be(N)])  # not below n


@pytest.mark.parametrize("backend", BACKENDS)
def test_hash_to_curve_then_multiply(backend):
    e = batchcrypt.Engine(backend)
    msgs = [b"alice@example.com", b"", b"x" * 300]
    k = be(0xC0FFEE << 200)
    hashed = e.sm2_hash_to_curve_mul(be(1), msgs)
    assert hashed.shape == (3, 33)
    blinded = e.sm2_hash_to_curve_mul(k, msgs)
    again, ok = e.sm2_mul(k, hashed)
    assert ok.all() and (again == blinded).all()
    # Another domain separation tag is another hash.
    other = e.sm2_hash_to_curve_mul(k, msgs, b"ANOTHER-APP-V01-CS01-with-SM2_XMD:SM3_SSWU_RO_")
    assert (other != blinded).any(axis=1).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_verify_gmt_example(backend):
    e = batchcrypt.Engine(backend)
    sig = der(R, S)
    key = b"\x04" + PUB
    ok = e.sm2_verify_batch([b"message digest", b"message digesT", b"message digest"],
                            [sig, sig, R + S], [key, key, compress(PUB)],
                            format="der")
    assert ok.tolist() == [True, False, False]
    assert e.last_reasons[0] is None and e.last_reasons[1] and e.last_reasons[2]
    ok = e.sm2_verify_batch([b"message digest"], [R + S], [compress(PUB)], format="compact")
    assert ok.tolist() == [True]
    assert e.sm2_verify_batch([b"message digest"], [sig], [key], id=b"ALICE123@YAHOO.COM").tolist() == [False]
    with pytest.raises(ValueError):
        e.sm2_verify_batch([b"m"], [sig], [key], format="raw")


def test_sm3_standard_vector():
    d = batchcrypt.sm3_batch(b"abc" * 4, 3)
    want = bytes.fromhex("66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0")
    assert d.shape == (4, 32) and all(row.tobytes() == want for row in d)


def test_backends_agree():
    scalars = [be((i * 0x9E3779B97F4A7C15 + 1) % N) for i in range(200)]
    results = [batchcrypt.Engine(b).sm2_mul_base(scalars) for b in BACKENDS]
    for r in results[1:]:
        assert (r == results[0]).all()
