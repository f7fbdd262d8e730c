"""BIP340 and ECDSA batch verification from Python: items/s from numpy arrays, from flat bytes and
from lists of bytes, on the same batch (the valid BIP340 test vectors with 32-byte messages, and
three ECDSA signatures, repeated to the batch size; each item is verified on its own, so repeats
cost what distinct items cost). Compare with `batchcrypt-bench secp256k1`, the Rust path end to end,
run on the same machine.

    python bench/verify_throughput.py [log2 batch, default 20] [backend, default gpu]
"""

import sys

import numpy as np

import batchcrypt
from common import best_of, valid_bip340_rows


def main():
    log_n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    backend = sys.argv[2] if len(sys.argv) > 2 else "gpu"
    n = 1 << log_n
    rows = valid_bip340_rows()
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


# (sha256(message), DER signature, compressed key), as in tests/test_secp256k1.py.
ECDSA = [
    ("b526aef1a341cfe6e5c377ed4c222888eeb81f913a107110a867e009c1758f24",
     "3045022100b78a4232e0c63a46609687360ffbdbaf2327fada81229fa0e77e620169aa70f8022015c6e21bfb4290f3af2706ec944e32e257d96bc01799ebf068b0b64f7e879dd4",
     "0285bd2d07c6281cd31a6fc1075c8f1ffb7b912dad82d335360a3829af81aaabab"),
    ("84768ddee659efeafdeb972b55143141bc23b6e333c70e8b68d29774ab09a548",
     "30440220633cd3cbc62aab7c69a78e2a755f61e5116274ff10d18e5b0eae8c037361b515022046d38cd114c4b5c83bbf2ab3894496abe7fc36dd99a796fe0d62b2fd76ce08c6",
     "03e49c0723d131f7231b7a936dca03ee9c57c75e02475cbc3641d0261d8db419d5"),
    ("fb29a8d5309d7c35b180dbd78c63a455a5d1fb45149a3264c08f1aff43524beb",
     "30440220121d44661bd110e3b14f6557a79208a766ab887c9c3d305d5ffd0e19fdf638c502201232fc91f53bb1c36c2a345894322d6471d506afc88da7e69e4680ae569dc8cd",
     "030b531632a5ece4b59f76f9a886d18f7d12346b2939b63610e41bfde4ffe3385c"),
]


def compact(der):
    """r || s, 32 bytes each, from a DER signature."""
    rlen = der[3]
    r = der[4:4 + rlen]
    s = der[6 + rlen:]
    return r[-32:].rjust(32, b"\0") + s[-32:].rjust(32, b"\0")


def ecdsa(n, backend):
    items = [(bytes.fromhex(h), bytes.fromhex(s), bytes.fromhex(k)) for h, s, k in ECDSA]
    pick = lambda f: [f(items[i % len(items)]) for i in range(n)]
    hashes = np.frombuffer(b"".join(pick(lambda t: t[0])), dtype=np.uint8).reshape(-1, 32)
    sigs = np.frombuffer(b"".join(pick(lambda t: compact(t[1]))), dtype=np.uint8).reshape(-1, 64)
    keys = np.frombuffer(b"".join(pick(lambda t: t[2])), dtype=np.uint8).reshape(-1, 33)
    der, key_list = pick(lambda t: t[1]), pick(lambda t: t[2])
    e = batchcrypt.Engine(backend)
    print(f"ECDSA, 2^{n.bit_length() - 1} items, backend {backend}")
    cases = [
        ("numpy arrays, compact", lambda: e.verify_ecdsa_batch(hashes, sigs, keys, format="compact")),
        ("numpy hashes, DER lists", lambda: e.verify_ecdsa_batch(hashes, der, key_list)),
    ]
    for name, f in cases:
        assert f().all(), f"{name}: valid signatures rejected"
        s = best_of(3, f)
        print(f"  {name:<24} {n / s / 1e6:8.2f} M/s  ({s * 1e3:.1f} ms, ran on {e.last_backend})")


if __name__ == "__main__":
    main()
    ecdsa(1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 20), sys.argv[2] if len(sys.argv) > 2 else "gpu")
