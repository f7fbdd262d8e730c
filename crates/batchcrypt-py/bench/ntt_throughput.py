"""A BN254 Fr NTT from Python: milliseconds per forward transform of one polynomial of 2^20 and
2^24 elements, the values as a uint64 numpy array (4 limbs each) and as bytes, the result in the
same form (new memory each call) or written into an array given (`out=`, memory used again;
random values below the field's order). Compare with `batchcrypt-bench ntt` ("ours",
values from host memory and back), the Rust path on the same machine.

    python bench/ntt_throughput.py [backend, default gpu]
"""

import sys
import time

import numpy as np

import batchcrypt


def main():
    backend = sys.argv[1] if len(sys.argv) > 1 else "gpu"
    e = batchcrypt.Engine(backend)
    rng = np.random.default_rng(3)
    print(f"# {batchcrypt.hardware()}")
    for log in (20, 24):
        values = rng.integers(0, 1 << 63, size=(1 << log, 4), dtype=np.uint64)
        values[:, 3] &= np.uint64((1 << 60) - 1)
        raw = values.tobytes()
        first = e.ntt(values)
        assert first.tobytes() == e.ntt(raw)
        assert np.array_equal(e.ntt(first, inverse=True), values)
        dst = np.empty_like(values)
        for name, v, runs, kw in (("numpy", values, 7, {}), ("bytes", raw, 5, {}),
                                  ("numpy into out=", values, 7, {"out": dst})):
            times = []
            for _ in range(runs):
                t = time.perf_counter()
                e.ntt(v, **kw)
                times.append(time.perf_counter() - t)
            times.sort()
            print(f"Fr NTT 2^{log}, values as {name}: median {times[runs // 2] * 1e3:.1f} ms "
                  f"(min {times[0] * 1e3:.1f}), backend {e.last_backend}")


if __name__ == "__main__":
    main()
