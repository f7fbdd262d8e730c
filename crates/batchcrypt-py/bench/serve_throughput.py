"""Served throughput from Python clients: `batchcrypt serve` in its own process, C client threads
(each with its own `batchcrypt.Client`), each sending B batches of N items, against one library
batch of the same C x B x N items in this process. Each batch goes as a unary call
(`verify_ecdsa`, `hash_packed`) or all of a client's batches over one stream (`verify_ecdsa_many`,
`hash_packed_many`). ECDSA: the three signatures of verify_throughput.py, repeated (each item is
verified on its own), compact, in numpy arrays (the input a client passes without a copy per
item); SHA256d: 64-byte messages, packed. Compare the rows with
`batchcrypt-bench serve-ecdsa`, the Rust clients, on the same machine.

    python bench/serve_throughput.py [clients, default 16] [batches per client, 64] [items per batch, 256]

The server binary: $BATCHCRYPT_BIN, else target/release/batchcrypt.
"""

import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import batchcrypt
from common import best_of
from verify_throughput import ECDSA, compact

ROOT = pathlib.Path(__file__).resolve().parents[3]


def start_server():
    binary = os.environ.get("BATCHCRYPT_BIN") or str(ROOT / "target/release/batchcrypt")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--metrics-listen", "none",
                          "--data", tempfile.mkdtemp(prefix="batchcrypt-serve-bench-")],
                         stdout=subprocess.DEVNULL)
    address = f"127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if batchcrypt.Client(address).ready():
                return p, address
        except RuntimeError:
            time.sleep(0.1)
    p.kill()
    raise SystemExit("the server never became ready")


def in_threads(clients, work):
    """Runs work(client_index) on a thread per client, all started together; returns the results
    in client order (an exception on any thread is raised here)."""
    out, errors = [None] * clients, []
    start = threading.Barrier(clients)

    def run(c):
        try:
            start.wait()
            out[c] = work(c)
        except Exception as e:  # raised below, on the calling thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def report(name, items, seconds, base):
    rate = items / seconds / 1e6
    ratio = f"{rate / base:.2f}x" if base else "-"
    print(f"  {name:<40} {rate:8.2f} M/s  {ratio:>6}  ({seconds * 1e3:.1f} ms)")
    return rate


def main():
    clients = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    per_client = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    per = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    total = clients * per_client * per
    server, address = start_server()
    try:
        conns = [batchcrypt.Client(address) for _ in range(clients)]
        engine = batchcrypt.Engine("auto")

        rows = [(bytes.fromhex(h), compact(bytes.fromhex(s)), bytes.fromhex(k)) for h, s, k in ECDSA]

        def column(k, n):
            one = np.frombuffer(b"".join(r[k] for r in rows), dtype=np.uint8).reshape(len(rows), -1)
            return np.ascontiguousarray(np.tile(one, (-(-n // len(rows)), 1))[:n])

        batch = tuple(column(k, per) for k in range(3))
        everything = tuple(column(k, total) for k in range(3))
        print(f"ECDSA (compact, numpy), {clients} clients x {per_client} batches x {per} items = {total}, server at {address}")
        assert engine.verify_ecdsa_batch(*everything, format="compact").all()
        base = report(f"one library batch of {total}", total,
                      best_of(3, lambda: engine.verify_ecdsa_batch(*everything, format="compact")), 0)

        def unary(c):
            for _ in range(per_client):
                assert conns[c].verify_ecdsa(*batch, format="compact") == [None] * per

        def streamed(c):
            for v in conns[c].verify_ecdsa_many([batch] * per_client, format="compact"):
                assert v == [None] * per

        report("served, a unary call per batch", total, best_of(3, lambda: in_threads(clients, unary)), base)
        report("served, a stream per client", total, best_of(3, lambda: in_threads(clients, streamed)), base)

        data = np.random.default_rng(1).integers(0, 256, size=total * 64, dtype=np.uint8).tobytes()
        print(f"SHA256d of 64-byte messages, packed, {clients} x {per_client} x {per}")
        want = engine.sha256d_64(data).tobytes()
        base = report(f"one library batch of {total}", total, best_of(3, lambda: engine.sha256d_64(data)), 0)
        size = per * 64

        def pieces(c):
            at = c * per_client * size
            return [data[at + b * size:at + (b + 1) * size] for b in range(per_client)]

        def hash_unary(c):
            at = c * per_client * size
            for b, piece in enumerate(pieces(c)):
                assert conns[c].hash_packed(piece, 64, "sha256d") == want[(at + b * size) // 2:(at + (b + 1) * size) // 2]

        def hash_streamed(c):
            at = c * per_client * size
            got = b"".join(conns[c].hash_packed_many(pieces(c), 64, "sha256d"))
            assert got == want[at // 2:(at + per_client * size) // 2]

        report("served, a unary call per batch", total, best_of(3, lambda: in_threads(clients, hash_unary)), base)
        report("served, a stream per client", total, best_of(3, lambda: in_threads(clients, hash_streamed)), base)
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
