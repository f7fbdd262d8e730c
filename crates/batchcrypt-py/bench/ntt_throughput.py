"""A BN254 Fr NTT from Python: milliseconds per forward transform of one polynomial of 2^20 and
2^24 elements, the values as a uint64 numpy array (4 limbs each) and as bytes, the result in the
same form (new memory each call) or written into an array given (`out=`, memory used again;
random values below the field's order). Compare with `batchcrypt-bench ntt` ("ours",
values from host memory and back), the Rust path on the same machine.

    python bench/ntt_throughput.py [backend, default gpu]
"""

import numpy as np

from common import engine_from_argv, field_elements, median_and_min


def main():
    e = engine_from_argv()
    rng = np.random.default_rng(3)
    for log in (20, 24):
        values = field_elements(log, rng)
        raw = values.tobytes()
        first = e.ntt(values)
        assert first.tobytes() == e.ntt(raw)
        assert np.array_equal(e.ntt(first, inverse=True), values)
        dst = np.empty_like(values)
        for name, v, runs, kw in (("numpy", values, 7, {}), ("bytes", raw, 5, {}),
                                  ("numpy into out=", values, 7, {"out": dst})):
            med, low = median_and_min(runs, lambda: e.ntt(v, **kw))
            print(f"Fr NTT 2^{log}, values as {name}: median {med:.1f} ms (min {low:.1f}), "
                  f"backend {e.last_backend}")


if __name__ == "__main__":
    main()
