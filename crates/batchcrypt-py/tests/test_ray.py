"""batchcrypt.ray against a real Ray cluster of two nodes on this machine (`ray start --head` and
a second `ray start --address=...`, each with its own resources), CPU actors only. One test kills
an actor's worker process in the middle of a job and checks that its chunks ran again elsewhere
and every result is right and in order."""

import csv
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray") if os.environ.get("BATCHCRYPT_REQUIRE_RAY") != "1" else __import__("ray")

import batchcrypt  # noqa: E402
import batchcrypt.ray as bcray  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SHARED = Path(os.environ.get("BATCHCRYPT_SHARED_DATA", ROOT.parent / "shared" / "data"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_cli(*args):
    exe = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    out = subprocess.run([exe, *args], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, f"ray {' '.join(args)}:\n{out.stdout}\n{out.stderr}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head node and a second node, 2 CPUs and a named resource each."""
    port = free_port()
    common = ["--num-cpus=2", "--num-gpus=0", "--object-store-memory=150000000", "--disable-usage-stats"]
    ray_cli("start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1", "--include-dashboard=false",
            '--resources={"node_a": 1}', *common)
    try:
        ray_cli("start", f"--address=127.0.0.1:{port}", "--node-ip-address=127.0.0.1",
                '--resources={"node_b": 1}', *common)
        ray.init(address=f"127.0.0.1:{port}", log_to_driver=False)
        nodes = [n for n in ray.nodes() if n["Alive"]]
        assert len(nodes) == 2, nodes
        yield nodes
    finally:
        ray.shutdown()
        ray_cli("stop", "--force")


def bip340_rows(copies):
    with open(ROOT / "crates/batchcrypt/tests/data/bip340-test-vectors.csv") as f:
        rows = list(csv.DictReader(f))
    msgs = [bytes.fromhex(r["message"]) for r in rows] * copies
    sigs = np.frombuffer(b"".join(bytes.fromhex(r["signature"]) for r in rows) * copies, dtype=np.uint8).reshape(-1, 64)
    keys = [bytes.fromhex(r["public key"]) for r in rows] * copies
    want = np.array([r["verification result"] == "TRUE" for r in rows] * copies)
    return msgs, sigs, keys, want


def test_actors_spread_over_both_nodes(cluster):
    pool = bcray.Pool(cpu_actors=2)
    assert len(pool) == 2
    where = pool.where()
    assert len({w["node"] for w in where}) == 2, where
    assert all(w["gpus"] == [] for w in where)
    pool.shutdown()


def test_a_pool_the_cluster_cannot_place_is_an_error_not_a_wait(cluster):
    with pytest.raises(RuntimeError, match="did not all start"):
        bcray.Pool(gpu_actors=1, start_timeout=3)  # no GPU on this cluster


def test_results_in_order_and_equal_to_one_engine(cluster):
    pool = bcray.Pool(cpu_actors=2)
    msgs, sigs, keys, want = bip340_rows(40)
    ok = pool.verify_schnorr(msgs, sigs, keys, chunk=37)
    assert np.array_equal(ok, want)
    assert len(pool.last_reasons) == len(want)
    assert [r is None for r in pool.last_reasons] == list(want)
    data = np.random.default_rng(1).integers(0, 256, 64 * 1000, dtype=np.uint8)
    digests = pool.sha256(data, 64, double=True, chunk=100)
    assert digests.shape == (1000, 32)
    for i in (0, 1, 555, 999):
        m = data[64 * i: 64 * (i + 1)].tobytes()
        assert digests[i].tobytes() == hashlib.sha256(hashlib.sha256(m).digest()).digest()
    assert np.array_equal(digests, batchcrypt.Engine("cpu").sha256d_64(data))
    # An error of the work itself is raised as its own type, not retried.
    with pytest.raises(ValueError, match="format"):
        pool.verify_ecdsa(np.zeros((2, 32), np.uint8), [b"", b""], [b"", b""], format="ber")
    pool.shutdown()


def test_a_killed_worker_s_chunks_run_again_elsewhere(cluster):
    pool = bcray.Pool(cpu_actors=2)
    victim = pool.where()[1]["pid"]
    msgs, sigs, keys, want = bip340_rows(200)
    killed = []

    def progress(done, total):
        if done == 1:  # mid-job: one chunk back, the others queued or running
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    ok = pool.verify_schnorr(msgs, sigs, keys, chunk=50, progress=progress)
    assert killed and pool.retries >= 1
    assert np.array_equal(ok, want)
    assert victim not in [w["pid"] for w in pool.where()]  # replaced
    pool.shutdown()


def test_groth16_proofs_over_the_cluster(cluster):
    fixtures = Path(os.environ.get("BATCHCRYPT_ZK_FIXTURES", ROOT / "target/zk-fixtures")) / "chain-10"
    if not (fixtures / "circuit.zkey").is_file():
        if os.environ.get("BATCHCRYPT_REQUIRE_ZK_FIXTURES") == "1":
            pytest.fail("Groth16 fixtures missing: run scripts/zk-fixtures.sh")
        pytest.skip("Groth16 fixtures not built")
    pool = bcray.Pool(cpu_actors=2)
    proofs = pool.prove(fixtures / "circuit.zkey", [fixtures / "witness.wtns"] * 4)
    vk = fixtures / "verification_key.json"
    assert len(proofs) == 4 and all(batchcrypt.groth16_verify(vk, pub, proof) for proof, pub in proofs)
    pool.shutdown()


def test_msm_over_the_cluster(cluster):
    e = batchcrypt.Engine("cpu")
    rng = np.random.default_rng(5)
    # BN254 G1 points c_i * G from the generator (1, 2), one of them the point at infinity.
    g = np.array([[1, 0, 0, 0, 2, 0, 0, 0]], dtype=np.uint64)
    cs = rng.integers(1, 1 << 62, size=50, dtype=np.uint64)
    points = np.stack([e.msm(g, np.array([[c, 0, 0, 0]], dtype=np.uint64)) for c in cs])
    points[7] = 0
    ks = rng.integers(0, 1 << 63, size=(50, 4), dtype=np.uint64)
    ks[:, 3] &= np.uint64((1 << 60) - 1)  # below the group order
    pool = bcray.Pool(cpu_actors=2)
    bases = pool.msm_bases(points)
    assert len(bases) == 50
    want = e.msm(points, ks)
    assert np.array_equal(pool.msm(bases, ks), want)
    assert np.array_equal(pool.msm(bases, ks), want)  # the actors' kept slices
    assert np.array_equal(pool.msm(points, ks), want)  # points cut for one call
    # One actor's slice summing to the point at infinity.
    some = ks.copy()
    some[25:] = 0
    assert np.array_equal(pool.msm(bases, some), e.msm(points, some))
    # arkworks bytes (the points but the one at infinity: canonical x then y, no flags set), the
    # scalars 32 bytes little-endian each, the sum as bytes.
    finite = np.delete(points, 7, axis=0)
    raw, kraw = finite.tobytes(), np.delete(ks, 7, axis=0).tobytes()
    assert pool.msm(raw, kraw) == e.msm(raw, kraw)
    # No points: the point at infinity, in the points' form.
    assert not pool.msm(np.zeros((0, 8), np.uint64), np.zeros((0, 4), np.uint64)).any()
    assert pool.msm(b"", b"") == e.msm(b"", b"")
    # BLS12-381 G1 (multiples of its generator), the curve named either way.
    x = 0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB
    y = 0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1
    gb = np.array([[(v >> (64 * i)) & (2 ** 64 - 1) for v in (x, y) for i in range(6)]], dtype=np.uint64)
    pts = np.stack([e.msm(gb, np.array([[c, 0, 0, 0]], dtype=np.uint64), curve="bls12_381") for c in cs[:9]])
    kept = pool.msm_bases(pts, curve="bls12_381")
    assert np.array_equal(pool.msm(kept, ks[:9], curve="bls12-381"), e.msm(pts, ks[:9], curve="bls12_381"))
    with pytest.raises(ValueError, match="scalars"):
        pool.msm(bases, ks[:10])
    with pytest.raises(ValueError, match="g2"):
        pool.msm(bases, ks, group="g2")
    pool.shutdown()


def test_bitcoin_blocks_over_the_cluster(cluster):
    blocks = SHARED / "bitcoin" / "blocks"
    if not blocks.is_dir():
        if os.environ.get("BATCHCRYPT_REQUIRE_SHARED_DATA") == "1":
            pytest.fail(f"{blocks} missing")
        pytest.skip("shared Bitcoin data not here")
    names = ["testnet3-928816", "testnet3-928828", "testnet3-928831", "testnet3-928848"]
    items = [{"block": (blocks / f"{n}.raw").read_bytes(), "spent": str(blocks / f"{n}.undo"), "network": "test"}
             for n in names]
    pool = bcray.Pool(cpu_actors=2)
    reports = pool.verify_blocks(items)
    assert [r["height"] for r in reports] == [int(n.split("-")[1]) for n in names]
    assert all(r["valid"] for r in reports), [r["reason"] for r in reports]
    # One flipped byte in a signature script: that block alone is invalid.
    bad = bytearray(items[1]["block"])
    bad[-200] ^= 1
    items[1] = dict(items[1], block=bytes(bad))
    reports = pool.verify_blocks(items)
    assert [r["valid"] for r in reports] == [True, False, True, True]
    pool.shutdown()


def test_a_chain_range_of_a_core_blocks_directory(cluster, tmp_path):
    if not (SHARED / "bitcoin" / "blocks").is_dir():
        if os.environ.get("BATCHCRYPT_REQUIRE_SHARED_DATA") == "1":
            pytest.fail(f"{SHARED / 'bitcoin' / 'blocks'} missing")
        pytest.skip("shared Bitcoin data not here")
    sys.path.insert(0, str(HERE))
    from core_blocks import regtest_chain, write_blocks_dir

    path = write_blocks_dir(tmp_path / "blocks", regtest_chain(SHARED))
    pool = bcray.Pool(cpu_actors=2)
    seen = []
    reports = pool.verify_chain_range(path, network="regtest", start=90, count=40, window=16,
                                      progress=lambda d, t: seen.append((d, t)))
    assert [r["height"] for r in reports] == list(range(90, 130))
    assert all(r["valid"] for r in reports), [r["reason"] for r in reports]
    assert seen[-1] == (40, 40) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert len(pool.last_backends) == 40
    # The whole chain after genesis by default; a start past the tip is an error.
    assert len(pool.verify_chain_range(path, network="regtest")) == 206
    with pytest.raises(ValueError, match="outside"):
        pool.verify_chain_range(path, network="regtest", start=500)
    pool.shutdown()


def test_ray_data_dataset(cluster):
    msgs, sigs, keys, want = bip340_rows(10)
    ds = ray.data.from_items([{"i": i, "msg": m, "sig": s.tobytes(), "pubkey": k}
                              for i, (m, s, k) in enumerate(zip(msgs, sigs, keys))])
    out = bcray.verify_dataset(ds, "schnorr", batch_size=64, cpu_actors=2)
    rows = sorted(out.take_all(), key=lambda r: r["i"])
    assert [r["i"] for r in rows] == list(range(len(want)))
    assert [bool(r["valid"]) for r in rows] == list(want)
