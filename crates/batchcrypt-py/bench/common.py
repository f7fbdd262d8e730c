"""What the Python benchmarks share: best-of timing, the batch they verify and an MSM's inputs."""

import csv
import os
import time

import numpy as np

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "batchcrypt", "tests", "data")


def best_of(runs, f):
    """The shortest of `runs` timed calls of `f`, after one untimed warm-up call (calibration,
    kernel load, page-locked staging, actors' first chunk)."""
    f()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def median_and_min(runs, f):
    """The median and the shortest of `runs` timed calls of `f` (no warm-up: the caller's checks
    ran first), in milliseconds."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[runs // 2] * 1e3, times[0] * 1e3


def valid_bip340_rows():
    """The BIP340 test vectors that verify and sign 32-byte messages, as CSV rows."""
    with open(os.path.join(DATA, "bip340-test-vectors.csv")) as f:
        return [r for r in csv.DictReader(f) if len(r["message"]) == 64 and r["verification result"] == "TRUE"]


def msm_sample(log, rng):
    """BN254 G1 bases and scalars for an MSM of 2^log points: 4,096 distinct multiples of the
    generator (1, 2) repeated, as an (n, 8) uint64 array of limbs, and random scalars below the
    group order as an (n, 4) array."""
    import batchcrypt

    cpu = batchcrypt.Engine("cpu")
    g = np.array([[1, 0, 0, 0, 2, 0, 0, 0]], dtype=np.uint64)
    distinct = np.stack([cpu.msm(g, np.array([[c, 0, 0, 0]], dtype=np.uint64))
                         for c in rng.integers(1, 1 << 62, size=4096, dtype=np.uint64)])
    points = np.tile(distinct, ((1 << log) // 4096, 1))
    return points, field_elements(log, rng)


def field_elements(log, rng):
    """2^log random BN254 Fr elements (below the group order) as an (n, 4) uint64 array of
    canonical limbs."""
    xs = rng.integers(0, 1 << 63, size=(1 << log, 4), dtype=np.uint64)
    xs[:, 3] &= np.uint64((1 << 60) - 1)
    return xs


def engine_from_argv():
    """The engine on the backend named by the first argument (default gpu), after a line naming
    the hardware."""
    import sys

    import batchcrypt

    print(f"# {batchcrypt.hardware()}")
    return batchcrypt.Engine(sys.argv[1] if len(sys.argv) > 1 else "gpu")
