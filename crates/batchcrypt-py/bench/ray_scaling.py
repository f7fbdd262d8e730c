"""One actor per GPU through Ray against one engine in one process, on the same batches: ECDSA
verification (the three signatures of verify_throughput.py repeated, compact, numpy arrays),
BIP340 verification (the valid test vectors repeated to the batch size, numpy arrays), SHA256d of
64-byte messages, a BN254 G1 MSM (bases kept on the GPUs, each actor holding its slice), and Groth16 proofs of the chain circuit when BATCHCRYPT_ZK_FIXTURES holds
chain-K/circuit.zkey and witness.wtns (one proof after another in the driver's engine and in each
actor, each holding the key). Rows: the in-process engine on one
GPU and on all of them, then a Ray pool of one GPU actor and of one per GPU (chunks of 2^20 items;
inputs from the driver's memory through Ray's object store, as a cluster job would send them).
Prints items/s (proofs/s) and each row's ratio to the one-GPU engine.

    python bench/ray_scaling.py [log2 signatures, default 22] [log2 messages, default 24]
        [proofs, default 64] [K of the chain circuit, default 20] [log2 MSM points, default 24]
"""

import os
import subprocess
import sys

from pathlib import Path

import numpy as np
import ray

import batchcrypt
import batchcrypt.ray as bcray
from common import best_of, msm_sample, valid_bip340_rows
from verify_throughput import ECDSA, compact


def main():
    log_sigs = int(sys.argv[1]) if len(sys.argv) > 1 else 22
    log_msgs = int(sys.argv[2]) if len(sys.argv) > 2 else 24
    rows = valid_bip340_rows()
    n = 1 << log_sigs
    reps = -(-n // len(rows))
    tile = lambda col, w: np.tile(np.frombuffer(b"".join(bytes.fromhex(r[col]) for r in rows), np.uint8).reshape(-1, w), (reps, 1))[:n]
    msgs, sigs, keys = tile("message", 32), tile("signature", 64), tile("public key", 32)
    data = np.random.default_rng(1).integers(0, 256, 64 << log_msgs, dtype=np.uint8)
    ecdsa_rows = [(bytes.fromhex(h), compact(bytes.fromhex(s)), bytes.fromhex(k)) for h, s, k in ECDSA]
    ecdsa_col = lambda j, w: np.tile(np.frombuffer(b"".join(r[j] for r in ecdsa_rows), np.uint8).reshape(-1, w),
                                     (-(-n // len(ecdsa_rows)), 1))[:n]
    hashes, ecdsa_sigs, ecdsa_keys = ecdsa_col(0, 32), ecdsa_col(1, 64), ecdsa_col(2, 33)
    proofs = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    log_msm = int(sys.argv[5]) if len(sys.argv) > 5 else 24
    points, scalars = msm_sample(log_msm, np.random.default_rng(2))
    engine_bases, pool_bases = {}, {}

    def kept(store, owner, make):
        # Made by the untimed first call (best_of's warm-up), then kept.
        if id(owner) not in store:
            store[id(owner)] = make()
        return store[id(owner)]
    chain = Path(os.environ.get("BATCHCRYPT_ZK_FIXTURES", "/nonexistent")) / f"chain-{sys.argv[4] if len(sys.argv) > 4 else 20}"

    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        listed = ""
    gpus = len([l for l in listed.splitlines() if l.startswith("GPU ")])
    if gpus == 0:
        sys.exit("no NVIDIA GPU found (nvidia-smi -L lists none)")
    ray.init(num_gpus=gpus, include_dashboard=False, log_to_driver=False)
    print(f"# {batchcrypt.hardware()}")
    print(f"# Ray {ray.__version__}, {gpus} GPU(s); ECDSA and BIP340 2^{log_sigs}, SHA256d-64 2^{log_msgs}, MSM 2^{log_msm}")

    one, every = batchcrypt.Engine("gpu", gpus=[0]), batchcrypt.Engine("gpu")
    # (name, items, engine call, pool call, rate unit): the pool's output must equal the engine's.
    cases = [
        ("ECDSA verify", n,
         lambda e: e.verify_ecdsa_batch(hashes, ecdsa_sigs, ecdsa_keys, format="compact"),
         lambda p: p.verify_ecdsa(hashes, ecdsa_sigs, ecdsa_keys, format="compact", chunk=1 << 20), "M/s"),
        ("BIP340 verify", n,
         lambda e: e.verify_schnorr_batch(msgs, sigs, keys),
         lambda p: p.verify_schnorr(msgs, sigs, keys, chunk=1 << 20), "M/s"),
        ("SHA256d-64", 1 << log_msgs,
         lambda e: e.sha256d_64(data),
         lambda p: p.sha256(data, 64, double=True, chunk=1 << 22), "M/s"),
        # Bases kept on the GPUs (each engine's, each actor's slice), scalars from memory.
        (f"G1 MSM 2^{log_msm}", 1 << log_msm,
         lambda e: e.msm(kept(engine_bases, e, lambda: e.msm_bases(points)), scalars),
         lambda p: p.msm(kept(pool_bases, p, lambda: p.msm_bases(points)), scalars), "M/s"),
    ]
    if (chain / "circuit.zkey").exists():
        zkey, witness = (chain / "circuit.zkey").read_bytes(), (chain / "witness.wtns").read_bytes()
        held = {}

        def prove_here(e):
            # One key per engine (held on its GPUs), one proof after another as each actor
            # proves. Proofs are randomised: the public signals are what the engine and the
            # pool must agree on.
            pk = held.setdefault(id(e), batchcrypt.ProvingKey(zkey))
            return [e.groth16_prove(pk, witness)[1] for _ in range(proofs)]

        def prove_pool(p):
            out = p.prove(zkey, [witness] * proofs)
            proof, pub = out[0]
            assert batchcrypt.groth16_verify(batchcrypt.ProvingKey(zkey), pub, proof), "a pool's proof fails"
            return [pub for _, pub in out]

        cases.append((f"Groth16 {chain.name}", proofs, prove_here, prove_pool, "proofs/s"))
        print(f"# Groth16: {proofs} proofs of {chain.name}")
    else:
        print(f"# Groth16 skipped: no {chain}/circuit.zkey (BATCHCRYPT_ZK_FIXTURES)")
    rate = lambda r, unit: f"{r / 1e6:9.2f} M/s" if unit == "M/s" else f"{r:9.1f} {unit}"
    rows = {name: [] for name, *_ in cases}
    for name, items, local, remote, unit in cases:
        base = items / best_of(3, lambda: local(one))
        rows[name].append(f"{name:<16} engine, 1 GPU          {rate(base, unit)}  1.00x")
        if gpus > 1:
            r = items / best_of(3, lambda: local(every))
            rows[name].append(f"{name:<16} engine, {gpus} GPUs         {rate(r, unit)}  {r / base:.2f}x")
        rows[name].append(base)
    # One pool at a time: each actor holds a GPU for the pool's life.
    for k in sorted({1, gpus}):
        pool = bcray.Pool(gpu_actors=k, cpu_actors=0)
        print(f"# pool of {k}: GPUs {[w['gpus'] for w in pool.where()]}")
        for name, items, local, remote, unit in cases:
            assert np.array_equal(remote(pool), local(one)), "the pool's results differ from the engine's"
            r = items / best_of(3, lambda: remote(pool))
            rows[name].insert(-1, f"{name:<16} Ray, {k} GPU actor(s)    {rate(r, unit)}  {r / rows[name][-1]:.2f}x")
        pool.shutdown()
    for name in rows:
        print("\n".join(rows[name][:-1]))

if __name__ == "__main__":
    main()
