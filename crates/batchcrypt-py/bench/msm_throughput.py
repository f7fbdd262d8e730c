"""A BN254 G1 MSM from Python: milliseconds per call with the scalars as a uint64 numpy array and
as bytes, the bases kept on the GPU (`Engine.msm_bases`), at 2^20 and 2^24 points (4,096 distinct
multiples of the generator, repeated; random scalars below the group order). Compare with
`batchcrypt-bench scaling-msm` ("ours, 1 GPU"), the Rust path on the same machine.

    python bench/msm_throughput.py [backend, default gpu]
"""

import numpy as np

from common import engine_from_argv, median_and_min, msm_sample


def main():
    e = engine_from_argv()
    rng = np.random.default_rng(2)
    for log in (20, 24):
        points, ks = msm_sample(log, rng)
        bases = e.msm_bases(points)
        raw = ks.tobytes()
        assert np.array_equal(e.msm(bases, ks), e.msm(bases, raw))
        for name, scalars, runs in (("numpy", ks, 5), ("bytes", raw, 3)):
            med, low = median_and_min(runs, lambda: e.msm(bases, scalars))
            print(f"G1 MSM 2^{log}, scalars as {name}: median {med:.1f} ms (min {low:.1f}), "
                  f"backend {e.last_backend}")


if __name__ == "__main__":
    main()
