#!/usr/bin/env bash
# Build UltrafastSecp256k1's CUDA benchmark (secp256k1_cuda_bench) for sm_90.
#
# Input : peers/src/ultrafast  (git clone of shrec/UltrafastSecp256k1)
# Output: peers/out/ultrafast/secp256k1_cuda_bench.gz      (unmodified bench_cuda.cu)
#         peers/out/ultrafast/secp256k1_cuda_bench_b20.gz  (same source, batch cap on the two
#                                                           verify benchmarks lifted, see README)
#         peers/out/ultrafast/COMMIT
#
# Equivalent to the peer's own CMake target secp256k1_cuda_bench (src/cuda/CMakeLists.txt):
# separable compilation of src/secp256k1.cu + src/bench_cuda.cu, same nvcc options,
# and the compile definitions that the peer's top-level CMakeLists sets by default.
# We call nvcc directly because the top-level CMake project also configures the CPU
# library, whose generated tables were missing from the clone we built from.
#
# Env: NVCC (default: the pip CUDA 13 nvcc in .venv).  Runs one nvcc at a time, niced.
set -euo pipefail
. "$(dirname "$0")/../common.sh"
SRC="$ROOT/peers/src/ultrafast"
OUT="$ROOT/peers/out/ultrafast"
[ -d "$SRC/src/cuda" ] || { echo "missing $SRC (git clone the peer there)"; exit 1; }

COMMIT="$(git -C "$SRC" rev-parse HEAD)"
echo "ultrafast commit: $COMMIT"
"$NVCC" --version | tail -1

OBJ="$SRC/.batchcrypt-obj"   # scratch, inside the (git-ignored) clone
mkdir -p "$OUT" "$OBJ"
CU="$SRC/src/cuda"
GENCODE="-gencode arch=compute_90,code=sm_90"
DEFS="-DSECP256K1_GPU_HAS_ZK=1 -DSECP256K1_GPU_HAS_BIP324=1 -DSECP256K1_GPU_HAS_FROST=1
      -DSECP256K1_GPU_HAS_BIP352=1 -DSECP256K1_GPU_HAS_ECDH=1 -DSECP256K1_GPU_HAS_MSM=1
      -DSECP256K1_GPU_HAS_HASH160=1 -DSECP256K1_GPU_HAS_ECRECOVER=1
      -DUFSECP_BITCOIN_STRICT=1 -DSECP256K1_BUILD_ETHEREUM=1"
FLAGS="-std=c++17 $GENCODE -rdc=true --expt-relaxed-constexpr -O3 --use_fast_math -Xptxas=-O3
       -I$CU/include -I$SRC/include $DEFS"

cc() { echo "+ nvcc $2 -> $(basename "$1")"; nice -n 10 "$NVCC" $FLAGS -c "$2" -o "$1"; }

# Library TU (kernels), shared by both benchmark binaries.
cc "$OBJ/secp256k1.o" "$CU/src/secp256k1.cu"

# 1) unmodified benchmark
cc "$OBJ/bench_cuda.o" "$CU/src/bench_cuda.cu"

# 2) variant: copy of bench_cuda.cu (the checkout is left untouched) in which only the
#    ECDSA-verify and Schnorr-verify benchmarks drop their min(batch, 1<<14) cap, so
#    --batch 1048576 really verifies 2^20 signatures per launch.
cp "$CU/src/bench_cuda.cu" "$OBJ/bench_cuda_b20.cu"
sed -i -e '/^BenchResult bench_ecdsa_verify(/,/^}/   s/std::min(cfg\.batch_size, 1 << 14)/cfg.batch_size/' \
       -e '/^BenchResult bench_schnorr_verify(/,/^}/ s/std::min(cfg\.batch_size, 1 << 14)/cfg.batch_size/' \
       "$OBJ/bench_cuda_b20.cu"
n=$(diff "$CU/src/bench_cuda.cu" "$OBJ/bench_cuda_b20.cu" | grep -c '^>' || true)
[ "$n" = 2 ] || { echo "batch-cap sed matched $n lines (expected 2); peer source changed?"; exit 1; }
# compile the copy with the original include paths (it includes headers by name)
( cd "$CU/src" && cc "$OBJ/bench_cuda_b20.o" "$OBJ/bench_cuda_b20.cu" )

# the pip wheel keeps libcudart_static.a in <toolkit>/lib (not lib64); its libcudadevrt.a
# comes from a newer runtime wheel (13.5) that nvlink 13.0 refuses, and nothing here
# launches kernels from the device, so the device runtime is left out (-cudadevrt none).
# CUDA runtime static; libstdc++/libgcc stay dynamic on purpose: a static gcc-12
# libstdc++ drags in arc4random@GLIBC_2.36, which Ubuntu 22.04 (glibc 2.35) lacks.
CUDALIB="$(cd "$(dirname "$NVCC")/.." && pwd)/lib"
link() { echo "+ link $1"; nice -n 10 "$NVCC" $GENCODE -rdc=true -cudart static -cudadevrt none -L"$CUDALIB" \
           "$OBJ/secp256k1.o" "$2" -o "$OUT/$1"; }
link secp256k1_cuda_bench     "$OBJ/bench_cuda.o"
link secp256k1_cuda_bench_b20 "$OBJ/bench_cuda_b20.o"

# gzip (9 MB -> ~3.5 MB each) so the out folder stays small to carry; run.sh unpacks.
rm -f "$OUT"/secp256k1_cuda_bench*.gz
gzip -9 -f "$OUT/secp256k1_cuda_bench" "$OUT/secp256k1_cuda_bench_b20"
echo "$COMMIT" > "$OUT/COMMIT"
ls -la "$OUT"
