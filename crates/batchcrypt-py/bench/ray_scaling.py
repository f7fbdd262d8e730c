"""One actor per GPU through Ray against one engine in one process, on the same batches: BIP340
verification (the valid test vectors repeated to the batch size, numpy arrays) and SHA256d of
64-byte messages. Rows: the in-process engine on one GPU and on all of them, then a Ray pool of
one GPU actor and of one per GPU (chunks of 2^20 items; inputs from the driver's memory through
Ray's object store, as a cluster job would send them). Prints items/s and each row's ratio to
the one-GPU engine.

    python bench/ray_scaling.py [log2 signatures, default 22] [log2 messages, default 24]
"""

import subprocess
import sys

import numpy as np
import ray

import batchcrypt
import batchcrypt.ray as bcray
from common import best_of, valid_bip340_rows


def main():
    log_sigs = int(sys.argv[1]) if len(sys.argv) > 1 else 22
    log_msgs = int(sys.argv[2]) if len(sys.argv) > 2 else 24
    rows = valid_bip340_rows()
    n = 1 << log_sigs
    reps = -(-n // len(rows))
    tile = lambda col, w: np.tile(np.frombuffer(b"".join(bytes.fromhex(r[col]) for r in rows), np.uint8).reshape(-1, w), (reps, 1))[:n]
    msgs, sigs, keys = tile("message", 32), tile("signature", 64), tile("public key", 32)
    data = np.random.default_rng(1).integers(0, 256, 64 << log_msgs, dtype=np.uint8)

    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        listed = ""
    gpus = len([l for l in listed.splitlines() if l.startswith("GPU ")])
    if gpus == 0:
        sys.exit("no NVIDIA GPU found (nvidia-smi -L lists none)")
    ray.init(num_gpus=gpus, include_dashboard=False, log_to_driver=False)
    print(f"# {batchcrypt.hardware()}")
    print(f"# Ray {ray.__version__}, {gpus} GPU(s); BIP340 2^{log_sigs}, SHA256d-64 2^{log_msgs}")

    one, every = batchcrypt.Engine("gpu", gpus=[0]), batchcrypt.Engine("gpu")
    cases = [
        ("BIP340 verify", n,
         lambda e: e.verify_schnorr_batch(msgs, sigs, keys),
         lambda p: p.verify_schnorr(msgs, sigs, keys, chunk=1 << 20)),
        ("SHA256d-64", 1 << log_msgs,
         lambda e: e.sha256d_64(data),
         lambda p: p.sha256(data, 64, double=True, chunk=1 << 22)),
    ]
    rows = {name: [] for name, *_ in cases}
    for name, items, local, remote in cases:
        base = items / best_of(3, lambda: local(one))
        rows[name].append(f"{name:<14} engine, 1 GPU          {base / 1e6:9.2f} M/s  1.00x")
        if gpus > 1:
            r = items / best_of(3, lambda: local(every))
            rows[name].append(f"{name:<14} engine, {gpus} GPUs         {r / 1e6:9.2f} M/s  {r / base:.2f}x")
        rows[name].append(base)
    # One pool at a time: each actor holds a GPU for the pool's life.
    for k in sorted({1, gpus}):
        pool = bcray.Pool(gpu_actors=k, cpu_actors=0)
        print(f"# pool of {k}: GPUs {[w['gpus'] for w in pool.where()]}")
        for name, items, local, remote in cases:
            assert np.array_equal(remote(pool), local(one)), "the pool's results differ from the engine's"
            r = items / best_of(3, lambda: remote(pool))
            rows[name].insert(-1, f"{name:<14} Ray, {k} GPU actor(s)    {r / 1e6:9.2f} M/s  {r / rows[name][-1]:.2f}x")
        pool.shutdown()
    for name in rows:
        print("\n".join(rows[name][:-1]))


if __name__ == "__main__":
    main()
