"""BIP340 batch verification from Python: items/s from numpy arrays, from flat bytes and from
lists of bytes, on the same batch (the valid BIP340 test vectors with 32-byte messages, repeated
to the batch size; each item is verified on its own, so repeats cost what distinct items cost). Compare with `batchcrypt-bench secp256k1`, the Rust path end to end,
run on the same machine.

    python bench/verify_throughput.py [log2 batch, default 20] [backend, default gpu]
"""

import csv
import os
import sys
import time

import numpy as np

import batchcrypt

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "batchcrypt", "tests", "data")


def best_of(runs, f):
    f()  # warm-up: calibration, kernel load, page-locked staging
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    log_n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    backend = sys.argv[2] if len(sys.argv) > 2 else "gpu"
    n = 1 << log_n
    with open(os.path.join(DATA, "bip340-test-vectors.csv")) as f:
        rows = [r for r in csv.DictReader(f) if len(r["message"]) == 64 and r["verification result"] == "TRUE"]
    reps = -(-n // len(rows))
    msgs = np.frombuffer(b"".join(bytes.fromhex(r["message"]) for r in rows), dtype=np.uint8).reshape(-1, 32)
    sigs = np.frombuffer(b"".join(bytes.fromhex(r["signature"]) for r in rows), dtype=np.uint8).reshape(-1, 64)
    keys = np.frombuffer(b"".join(bytes.fromhex(r["public key"]) for r in rows), dtype=np.uint8).reshape(-1, 32)
    msgs, sigs, keys = (np.ascontiguousarray(np.tile(a, (reps, 1))[:n]) for a in (msgs, sigs, keys))
    e = batchcrypt.Engine(backend)
    print(f"BIP340, 2^{log_n} items, backend {backend}")
    flat_sigs, flat_keys = sigs.tobytes(), keys.tobytes()
    cases = [
        ("numpy arrays", lambda: e.verify_schnorr_batch(msgs, sigs, keys)),
        ("numpy msgs, flat bytes", lambda: e.verify_schnorr_batch(msgs, flat_sigs, flat_keys)),
    ]
    lists = ([bytes(m) for m in msgs], [bytes(s) for s in sigs], [bytes(k) for k in keys])
    cases.append(("lists of bytes", lambda: e.verify_schnorr_batch(*lists)))
    for name, f in cases:
        ok = f()
        assert ok.all(), f"{name}: valid signatures rejected"
        s = best_of(3, f)
        print(f"  {name:<24} {n / s / 1e6:8.2f} M/s  ({s * 1e3:.1f} ms, ran on {e.last_backend})")


if __name__ == "__main__":
    main()
