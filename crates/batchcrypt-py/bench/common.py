"""What the Python benchmarks share: best-of timing and the batch they verify."""

import csv
import os
import time

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


def valid_bip340_rows():
    """The BIP340 test vectors that verify and sign 32-byte messages, as CSV rows."""
    with open(os.path.join(DATA, "bip340-test-vectors.csv")) as f:
        return [r for r in csv.DictReader(f) if len(r["message"]) == 64 and r["verification result"] == "TRUE"]
