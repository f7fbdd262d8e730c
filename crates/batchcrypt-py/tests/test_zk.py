"""MSM, NTT and Groth16 through the Python API.

G1 MSMs are checked against plain affine arithmetic written here (independent of arkworks and of
our kernels); G2 against the linearity of the sum; the NTT against the evaluation of the
polynomial at the roots of unity; Groth16 against snarkjs's files and, where Node.js is set up,
snarkjs itself."""

import os
import random
import shutil
import socket
import subprocess
from pathlib import Path

import numpy as np
import pytest

import batchcrypt

ROOT = Path(__file__).resolve().parents[3]
BACKENDS = [b for b in ("cpu", "gpu") if b == "cpu" or any(n == "cuda" and w is None for n, w in batchcrypt.backends())]


class Curve:
    """A short Weierstrass curve y^2 = x^3 + b over F_q, affine points as (x, y) or None."""

    def __init__(self, q, b, r, g):
        self.q, self.b, self.r, self.g = q, b, r, g

    def add(self, p1, p2):
        q = self.q
        if p1 is None:
            return p2
        if p2 is None:
            return p1
        (x1, y1), (x2, y2) = p1, p2
        if x1 == x2:
            if (y1 + y2) % q == 0:
                return None
            m = 3 * x1 * x1 * pow(2 * y1, -1, q) % q
        else:
            m = (y2 - y1) * pow(x2 - x1, -1, q) % q
        x3 = (m * m - x1 - x2) % q
        return x3, (m * (x1 - x3) - y1) % q

    def mul(self, k, p):
        acc = None
        while k:
            if k & 1:
                acc = self.add(acc, p)
            p = self.add(p, p)
            k >>= 1
        return acc


BN254 = Curve(
    q=0x30644E72E131A029B85045B68181585D97816A916871CA8D3C208C16D87CFD47,
    b=3,
    r=0x30644E72E131A029B85045B68181585D2833E84879B9709143E1F593F0000001,
    g=(1, 2),
)
BLS_Q = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
BLS_R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001


def bls_g1_point(seed):
    """A point of BLS12-381's G1 found here: lift an x onto the curve, clear the cofactor."""
    curve = Curve(BLS_Q, 4, BLS_R, None)
    x = seed
    while True:
        rhs = (x ** 3 + 4) % BLS_Q
        y = pow(rhs, (BLS_Q + 1) // 4, BLS_Q)
        if y * y % BLS_Q == rhs:
            return curve.mul(0x396C8C005555E1568C00AAAB0000AAAB, (x, y))
        x += 1


BLS12_381 = Curve(BLS_Q, 4, BLS_R, bls_g1_point(5))


def limbs(values, words):
    """Canonical little-endian uint64 limbs of each int, `words` per int."""
    return np.array([[(v >> (64 * i)) & (2 ** 64 - 1) for i in range(words)] for v in values], dtype=np.uint64)


def point_limbs(points, words):
    rows = [[0] * (2 * words) if p is None else list(limbs([p[0]], words)[0]) + list(limbs([p[1]], words)[0]) for p in points]
    return np.array(rows, dtype=np.uint64)


def point_from_limbs(a, words):
    a = [int(w) for w in a]
    x = sum(w << (64 * i) for i, w in enumerate(a[:words]))
    y = sum(w << (64 * i) for i, w in enumerate(a[words:]))
    return None if x == 0 and y == 0 else (x, y)


def zcash_g1(p):
    """BLS12-381 G1 uncompressed as arkworks (and Zcash) serialize it: big-endian x || y."""
    return p[0].to_bytes(48, "big") + p[1].to_bytes(48, "big")


CASES = [("bn254", BN254, 4), ("bls12_381", BLS12_381, 6)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,curve,words", CASES)
def test_g1_msm_matches_plain_arithmetic(backend, name, curve, words):
    rng = random.Random(7)
    n = 40
    points = [curve.mul(rng.randrange(1, curve.r), curve.g) for _ in range(n)]
    points[3] = None  # the point at infinity among the bases
    points[5] = points[4]  # a repeated base
    ks = [rng.randrange(curve.r) for _ in range(n)]
    ks[0], ks[1], ks[2] = 0, 1, curve.r - 1
    want = None
    for k, p in zip(ks, points):
        want = curve.add(want, None if p is None else curve.mul(k, p))
    e = batchcrypt.Engine(backend)
    got = e.msm(point_limbs(points, words), limbs(ks, 4), curve=name)
    assert got.dtype == np.uint64 and point_from_limbs(got, words) == want
    # Bases kept for later calls; a prefix of the scalars uses a prefix of the bases.
    bases = e.msm_bases(point_limbs(points, words), curve=name, group="g1")
    assert len(bases) == n and (bases.curve, bases.group) == (name, "g1")
    assert point_from_limbs(e.msm(bases, limbs(ks, 4)), words) == want
    part = None
    for k, p in zip(ks[:10], points[:10]):
        part = curve.add(part, None if p is None else curve.mul(k, p))
    assert point_from_limbs(e.msm(bases, limbs(ks[:10], 4)), words) == part
    # Scalars as bytes, 32 little-endian each, the same sum.
    raw = b"".join(k.to_bytes(32, "little") for k in ks)
    assert point_from_limbs(e.msm(bases, raw), words) == want


def test_bls12_381_g1_in_arkworks_bytes():
    rng = random.Random(3)
    points = [BLS12_381.mul(rng.randrange(1, BLS_R), BLS12_381.g) for _ in range(8)]
    ks = [rng.randrange(BLS_R) for _ in points]
    want = None
    for k, p in zip(ks, points):
        want = BLS12_381.add(want, BLS12_381.mul(k, p))
    got = batchcrypt.Engine("cpu").msm(b"".join(zcash_g1(p) for p in points), limbs(ks, 4), curve="bls12_381")
    assert isinstance(got, bytes) and got == zcash_g1(want)


def test_bn254_g1_bytes_are_the_limbs_bytes():
    """arkworks' BN254 bytes are the limbs' bytes, but for its flags in y's top two bits."""
    rng = random.Random(4)
    points = [BN254.mul(rng.randrange(1, BN254.r), BN254.g) for _ in range(8)]
    ks = [rng.randrange(BN254.r) for _ in points]
    e = batchcrypt.Engine("cpu")
    got = bytearray(e.msm(point_limbs(points, 4).tobytes(), limbs(ks, 4).tobytes()))
    got[63] &= 0x3F
    assert bytes(got) == e.msm(point_limbs(points, 4), limbs(ks, 4)).tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,words", [("bn254", 4), ("bls12_381", 6)])
def test_g2_msm_is_linear(backend, name, words):
    """sum k_i * (c_i * G) == (sum k_i * c_i) * G for G2's standard generator G (below), and
    G + (r - 1) * G is the point at infinity."""
    e = batchcrypt.Engine(backend)
    r = BN254.r if name == "bn254" else BLS_R
    gen = G2_GENERATORS[name]
    g = np.array([gen], dtype=np.uint64)
    rng = random.Random(11)
    cs = [rng.randrange(1, r) for _ in range(12)]
    bases = np.stack([e.msm(g, limbs([c], 4), curve=name, group="g2") for c in cs])
    ks = [rng.randrange(r) for _ in cs]
    lhs = e.msm(bases, limbs(ks, 4), curve=name, group="g2")
    rhs = e.msm(g, limbs([sum(k * c for k, c in zip(ks, cs)) % r], 4), curve=name, group="g2")
    assert np.array_equal(lhs, rhs)
    # k = r - 1 gives -G: the same x, and G + (-G) is the point at infinity (all-zero limbs).
    neg = e.msm(g, limbs([r - 1], 4), curve=name, group="g2")
    assert np.array_equal(neg[: 2 * words], gen[: 2 * words])
    zero = e.msm(np.stack([g[0], neg]), limbs([1, 1], 4), curve=name, group="g2")
    assert not zero.any()


# G2 generators as canonical limbs (x.c0, x.c1, y.c0, y.c1), the curves' standard generators.
G2_GENERATORS = {
    "bn254": [int(w) for w in limbs([
        0x1800DEEF121F1E76426A00665E5C4479674322D4F75EDADD46DEBD5CD992F6ED,
        0x198E9393920D483A7260BFB731FB5D25F1AA493335A9E71297E485B7AEF312C2,
        0x12C85EA5DB8C6DEB4AAB71808DCB408FE3D1E7690C43D37B4CE6CC0166FA7DAA,
        0x090689D0585FF075EC9E99AD690C3395BC4B313370B38EF355ACDADCD122975B,
    ], 4).reshape(-1)],
    "bls12_381": [int(w) for w in limbs([
        0x024AA2B2F08F0A91260805272DC51051C6E47AD4FA403B02B4510B647AE3D1770BAC0326A805BBEFD48056C8C121BDB8,
        0x13E02B6052719F607DACD3A088274F65596BD0D09920B61AB5DA61BBDC7F5049334CF11213945D57E5AC7D055D042B7E,
        0x0CE5D527727D6E118CC9CDC6DA2E351AADFD9BAA8CBDD3A76D429A695160D12C923AC9CC3BACA289E193548608B82801,
        0x0606C4A02EA734CC32ACD2B02BC28B99CB3E287E85A763AF267492AB572E99AB3F370D275CEC1DA1AAA9075FF05F79BE,
    ], 6).reshape(-1)],
}


def test_msm_input_errors():
    e = batchcrypt.Engine("cpu")
    g = point_limbs([BN254.g], 4)
    with pytest.raises(ValueError, match="base per scalar"):
        e.msm(g, limbs([1, 2], 4))
    with pytest.raises(ValueError, match="below the group order"):
        e.msm(g, limbs([BN254.r], 4))
    with pytest.raises(ValueError, match="not a point"):
        e.msm(point_limbs([(1, 3)], 4), limbs([1], 4))
    with pytest.raises(ValueError, match="whole number"):
        e.msm(g.tobytes()[:-1], limbs([1], 4))
    with pytest.raises(ValueError, match="curve"):
        e.msm(g, limbs([1], 4), curve="secp256k1")
    with pytest.raises(ValueError, match="group"):
        e.msm_bases(g, group="g3")
    # A G2 coordinate above the modulus; a G2 point on the twist but outside the subgroup is
    # refused the same way (checked in the Rust tests).
    bad = np.array([G2_GENERATORS["bn254"]], dtype=np.uint64)
    bad[0, 3] = 2 ** 64 - 1
    with pytest.raises(ValueError, match="not a point"):
        e.msm(bad, limbs([1], 4), group="g2")
    # An empty sum is the point at infinity.
    assert not e.msm(g, np.zeros((0, 4), dtype=np.uint64)).any()


FR = BN254.r


def evaluate(coeffs, x):
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % FR
    return acc


@pytest.mark.parametrize("backend", BACKENDS)
def test_ntt_is_evaluation_at_the_roots_of_unity(backend):
    e = batchcrypt.Engine(backend)
    rng = random.Random(5)
    n = 16
    coeffs = [rng.randrange(FR) for _ in range(n)]
    w = pow(5, (FR - 1) // n, FR)
    want = [evaluate(coeffs, pow(w, i, FR)) for i in range(n)]
    got = e.ntt(limbs(coeffs, 4))
    assert got.shape == (n, 4)
    assert [sum(int(x) << (64 * i) for i, x in enumerate(row)) for row in got] == want
    assert np.array_equal(e.ntt(got, inverse=True), limbs(coeffs, 4))
    # On the coset 5 * <w>; bytes in, bytes out.
    raw = b"".join(c.to_bytes(32, "little") for c in coeffs)
    out = e.ntt(raw, coset=True)
    assert out == b"".join(evaluate(coeffs, 5 * pow(w, i, FR) % FR).to_bytes(32, "little") for i in range(n))
    # Buffers read in place or copied give the same: a bytearray, a strided and a flat array.
    assert e.ntt(bytearray(raw), coset=True) == out
    wide = np.zeros((n, 8), dtype=np.uint64)
    wide[:, ::2] = limbs(coeffs, 4)
    assert np.array_equal(e.ntt(wide[:, ::2]), got)
    assert np.array_equal(e.ntt(limbs(coeffs, 4).reshape(-1)), got.reshape(-1))
    # A batch of four polynomials of four.
    batch = e.ntt(limbs(coeffs, 4), size=4)
    w4 = pow(5, (FR - 1) // 4, FR)
    first = [evaluate(coeffs[:4], pow(w4, i, FR)) for i in range(4)]
    assert [sum(int(x) << (64 * i) for i, x in enumerate(row)) for row in batch[:4]] == first
    with pytest.raises(ValueError):
        e.ntt(limbs(coeffs[:12], 4))  # not a power of two
    with pytest.raises(ValueError, match="below"):
        e.ntt(limbs([FR] + coeffs[1:], 4))
    # Into an array given: written and returned (any shape of as many limbs; bytes in too).
    dst = np.full((4, n), 7, dtype=np.uint64)
    assert e.ntt(limbs(coeffs, 4), out=dst) is dst
    assert np.array_equal(dst.reshape(n, 4), got)
    assert e.ntt(raw, coset=True, out=dst).tobytes() == out
    values = limbs(coeffs, 4)
    for bad, why in ((values, "apart"), (np.zeros((n, 3), dtype=np.uint64), "as many"),
                     (np.zeros((n, 8), dtype=np.uint64)[:, ::2], "contiguous"),
                     (np.zeros((n, 4), dtype=np.int64), "uint64")):
        with pytest.raises(ValueError, match=why):
            e.ntt(values, out=bad)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bls12_381_ntt_on_snarkjs_roots(backend):
    e = batchcrypt.Engine(backend)
    rng = random.Random(6)
    n, r = 8, BLS_R
    coeffs = [rng.randrange(r) for _ in range(n)]
    # snarkjs's roots: powers of 5^((r-1)/2^32) (arkworks takes 7 for this field).
    w = pow(5, (r - 1) // n, r)
    want = [sum(c * pow(w, i * j, r) for j, c in enumerate(coeffs)) % r for i in range(n)]
    got = e.ntt(limbs(coeffs, 4), curve="bls12_381")
    assert [sum(int(x) << (64 * i) for i, x in enumerate(row)) for row in got] == want
    assert np.array_equal(e.ntt(got, inverse=True, curve="bls12-381"), limbs(coeffs, 4))
    with pytest.raises(ValueError, match="below"):
        e.ntt(limbs([r] + coeffs[1:], 4), curve="bls12_381")
    with pytest.raises(ValueError, match="curve"):
        e.ntt(limbs(coeffs, 4), curve="p256")


FIXTURES = Path(os.environ.get("BATCHCRYPT_ZK_FIXTURES", ROOT / "target/zk-fixtures"))
SNARKJS = ROOT / "scripts/zk/node_modules/snarkjs/build/cli.cjs"


def fixture(name):
    d = FIXTURES / name
    if not (d / "circuit.zkey").is_file():
        if os.environ.get("BATCHCRYPT_REQUIRE_ZK_FIXTURES") == "1":
            pytest.fail(f"fixture {d} missing: run scripts/zk-fixtures.sh")
        pytest.skip("Groth16 fixtures not built (scripts/zk-fixtures.sh)")
    return d


def snarkjs_verify(vk, public, proof):
    if not (SNARKJS.is_file() and shutil.which("node")):
        if os.environ.get("BATCHCRYPT_REQUIRE_SNARKJS") == "1":
            pytest.fail("snarkjs cannot run: run scripts/zk-fixtures.sh")
        return None
    out = subprocess.run(["node", SNARKJS, "groth16", "verify", vk, public, proof], capture_output=True, text=True)
    return out.returncode == 0 and "OK!" in out.stdout + out.stderr


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("circuit,curve", [("chain-10", "bn128"), ("chain-10-bls12381", "bls12381")])
def test_groth16_prove_and_verify(backend, circuit, curve, tmp_path):
    d = fixture(circuit)
    e = batchcrypt.Engine(backend)
    key = batchcrypt.ProvingKey(d / "circuit.zkey")
    assert key.curve == curve
    assert ("BN254" if curve == "bn128" else "BLS12-381") in repr(key)
    assert key.n_public >= 1 and key.domain_size & (key.domain_size - 1) == 0
    proof, public = e.groth16_prove(key, d / "witness.wtns")
    vk = d / "verification_key.json"
    assert batchcrypt.groth16_verify(vk, public, proof)
    assert batchcrypt.groth16_verify(key, public, proof)
    (tmp_path / "proof.json").write_text(proof)
    (tmp_path / "public.json").write_text(public)
    assert snarkjs_verify(vk, tmp_path / "public.json", tmp_path / "proof.json") in (True, None)
    # The same from the files' bytes.
    proof2, public2 = e.groth16_prove((d / "circuit.zkey").read_bytes(), (d / "witness.wtns").read_bytes())
    assert public2 == public and batchcrypt.groth16_verify(vk, public2, proof2)


def test_groth16_verify_snarkjs_proofs_and_refuse_wrong_ones():
    d = fixture("mix")
    vk, public, proof = (d / f for f in ("verification_key.json", "snarkjs.public.json", "snarkjs.proof.json"))
    assert batchcrypt.groth16_verify(vk, public, proof)
    signals = public.read_text().split('"')
    signals[1] = str((int(signals[1]) + 1) % FR)
    assert not batchcrypt.groth16_verify(vk, '"'.join(signals), proof)
    with pytest.raises(ValueError):
        batchcrypt.groth16_verify(vk, "[]", proof)  # a public-signal count the key does not take
    with pytest.raises(ValueError):
        batchcrypt.groth16_verify(vk, public, '{"protocol": "plonk"}')


def test_groth16_bad_inputs():
    d = fixture("chain-10")
    e = batchcrypt.Engine("cpu")
    with pytest.raises(ValueError):
        batchcrypt.ProvingKey(b"not a zkey")
    with pytest.raises(OSError):
        batchcrypt.ProvingKey(d / "missing.zkey")
    other = fixture("mix")
    with pytest.raises(ValueError, match="different circuits"):
        e.groth16_prove(batchcrypt.ProvingKey(d / "circuit.zkey"), other / "witness.wtns")
    # A witness of the other curve's circuit, a proof checked against the other curve's key.
    bls = fixture("chain-10-bls12381")
    with pytest.raises(ValueError, match="circom --prime"):
        e.groth16_prove(batchcrypt.ProvingKey(d / "circuit.zkey"), bls / "witness.wtns")
    with pytest.raises(ValueError):
        batchcrypt.groth16_verify(d / "verification_key.json", bls / "snarkjs.public.json", bls / "snarkjs.proof.json")
