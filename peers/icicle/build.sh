#!/usr/bin/env bash
# Build the open-icicle v4 GPU peer (BN254, CUDA backend, sm_90 only) and our benchmark driver.
#
#   peers/icicle/build.sh            # from anywhere; needs no GPU
#
# Produces peers/out/icicle/ (see peers/icicle/README.md). Build scratch lives in
# peers/src/icicle-work/ (ignored). Env knobs: JOBS (default 2), ICICLE_MIRROR (git source),
# CUDA_PIP_ROOT (pip CUDA 13.0 compiler tree with bin/nvcc), PYTHON (for pip installs).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=$ROOT/peers/src/icicle
WORK=$ROOT/peers/src/icicle-work
OUT=$ROOT/peers/out/icicle
JOBS=${JOBS:-2}
COMMIT=a1f8a74b4c604367b9e1eae41aca4d02687e96fc # open-icicle main, "open-icicle based on icicle v4.0.0" + README
MIRROR=${ICICLE_MIRROR:-https://github.com/ingonyama-zk/open-icicle}
[ -d "$MIRROR" ] || MIRROR=https://github.com/ingonyama-zk/open-icicle.git
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
CUDA_PIP_ROOT=${CUDA_PIP_ROOT:-$ROOT/.venv/lib/python3.11/site-packages/nvidia/cu13}
NICE="nice -n 10"

# ---------------------------------------------------------------- 1. source
if [ ! -d "$SRC/.git" ]; then
  git clone --no-checkout "$MIRROR" "$SRC"
  # two README gifs at the top level were absent from the clone we built from; nothing needs them
  git -C "$SRC" sparse-checkout set --no-cone '/*' '!/Frostythelion.gif' '!/McPaw.gif'
fi
git -C "$SRC" checkout -q "$COMMIT" 2>/dev/null || git -C "$SRC" checkout -q "$COMMIT"
echo "open-icicle commit: $(git -C "$SRC" rev-parse HEAD)"

# ---------------------------------------------------------------- 2. CUDA 13.0 toolchain (pip)
# nvcc 13.0.88 comes from pip (nvidia-cuda-nvcc/crt, nvidia-nvvm). The runtime headers/libs must
# match the compiler (cccl refuses 13.0 nvcc with 13.5 headers) and the GPU driver (580 = CUDA 13.0),
# and cub/thrust (nvidia-cuda-cccl) are needed by the backend; pin them here.
DEPS=$WORK/deps
mkdir -p "$WORK"
if [ ! -x "$CUDA_PIP_ROOT/bin/nvcc" ]; then
  CUDA_PIP_ROOT=$WORK/nvcc-pip/nvidia/cu13
  [ -x "$CUDA_PIP_ROOT/bin/nvcc" ] || "$PYTHON" -m pip install -q --no-deps --target "$WORK/nvcc-pip" \
    nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88
fi
[ -f "$DEPS/nvidia/cu13/include/cccl/cub/cub.cuh" ] && [ -f "$DEPS/nvidia/cu13/lib/libcudart_static.a" ] ||
  "$PYTHON" -m pip install -q --no-deps --target "$DEPS" nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85

# A toolkit-shaped tree (bin/ include/ lib64/ nvvm/) made of links, because nvcc looks for
# libraries in $(TOP)/lib64 while pip ships lib/. nvcc itself is copied so that its $(_HERE_)
# is this tree.
TK=$WORK/cuda-tk
if [ ! -x "$TK/bin/nvcc" ]; then
  rm -rf "$TK" && mkdir -p "$TK/bin" "$TK/include" "$TK/lib64"
  for f in "$CUDA_PIP_ROOT"/bin/*; do ln -s "$f" "$TK/bin/"; done
  rm "$TK/bin/nvcc" "$TK/bin/nvcc.profile"
  cp "$CUDA_PIP_ROOT/bin/nvcc" "$CUDA_PIP_ROOT/bin/nvcc.profile" "$TK/bin/"
  for f in "$DEPS"/nvidia/cu13/include/*; do ln -s "$f" "$TK/include/"; done
  for f in "$CUDA_PIP_ROOT"/include/*; do [ -e "$TK/include/$(basename "$f")" ] || ln -s "$f" "$TK/include/"; done
  for f in "$DEPS"/nvidia/cu13/lib/lib*; do ln -s "$f" "$TK/lib64/"; done
  ln -s libcudart.so.13 "$TK/lib64/libcudart.so"
  ln -s lib64 "$TK/lib"
  ln -s "$CUDA_PIP_ROOT/nvvm" "$TK/nvvm"
fi
export PATH=$TK/bin:$PATH # the backend's CMake takes nvcc from `which nvcc`
nvcc --version | tail -2

# ---------------------------------------------------------------- 3. icicle + CUDA backend
# Only bn254 with NTT, MSM and G2 MSM. ECNTT off. (This tree has no hash/poseidon sources; the
# polynomial API is built with NTT, pairing host code with G2.) CUDA_ARCH=90 is what the backend's
# CMake reads (otherwise "native", which needs a GPU). CPU backend off. Static cudart (CMake default).
CMAKE_FLAGS=(
  -DCMAKE_BUILD_TYPE=Release
  -DCURVE=bn254
  -DCUDA_BACKEND=local
  -DCPU_BACKEND=OFF
  -DMSM=ON -DG2=ON -DNTT=ON -DECNTT=OFF -DEXT_FIELD=OFF
  -DBUILD_TESTS=OFF
  -DCUDA_ARCH=90
  -DCMAKE_CUDA_COMPILER="$TK/bin/nvcc"
  -DCUDAToolkit_ROOT="$TK"
  -DCMAKE_INSTALL_PREFIX="$WORK/install"
  -DCMAKE_SKIP_INSTALL_RPATH=ON
)
echo "cmake flags: ${CMAKE_FLAGS[*]}"
$NICE cmake -S "$SRC/icicle" -B "$WORK/build" "${CMAKE_FLAGS[@]}"
$NICE cmake --build "$WORK/build" -j "$JOBS"
rm -rf "$WORK/install"
cmake --install "$WORK/build" >/dev/null

# ---------------------------------------------------------------- 4. output tree
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib/compat"
cp -a "$WORK/install/lib/." "$OUT/lib/"
find "$OUT/lib" -name '*.so' -exec strip --strip-unneeded {} +

INC=(-I"$SRC/icicle/include")
LINK=(-L"$OUT/lib" -licicle_curve_bn254 -licicle_field_bn254 -licicle_device -pthread -ldl
  -Wl,-rpath,'$ORIGIN/../lib' -s)
# our driver
$NICE g++ -std=c++17 -O2 "${INC[@]}" "$ROOT/peers/icicle/bench.cpp" -o "$OUT/bin/icicle_bench" "${LINK[@]}"
# upstream C++ examples (fixed sizes inside: MSM 2^10 G1+G2, NTT 2^20 batch 2), built like their CMake does
for ex in msm ntt; do
  $NICE g++ -std=c++17 -O3 "${INC[@]}" -I"$SRC/examples/c++" "$SRC/examples/c++/$ex/example.cpp" \
    -o "$OUT/bin/example_$ex" "${LINK[@]}"
done

# libstdc++ of the build compiler, used by run.sh only if the system one is older
cp -L "$(g++ -print-file-name=libstdc++.so.6)" "$OUT/lib/compat/"
strip --strip-unneeded "$OUT/lib/compat/libstdc++.so.6" || true
SYMS=$(find "$OUT/bin" "$OUT/lib" -path "$OUT/lib/compat" -prune -o -type f -print0 | xargs -0 objdump -T 2>/dev/null)
grep -o 'GLIBCXX_[0-9.]*' <<<"$SYMS" | sort -uV | tail -1 >"$OUT/lib/compat/GLIBCXX_NEEDED"
echo "needs $(cat "$OUT/lib/compat/GLIBCXX_NEEDED"), $(grep -o 'GLIBC_[0-9.]*' <<<"$SYMS" | sort -uV | tail -1)"

{
  echo "open-icicle $(git -C "$SRC" rev-parse HEAD)"
  echo "nvcc: $(nvcc --version | tail -1)"
  echo "cmake ${CMAKE_FLAGS[*]}" | sed "s#$ROOT/##g"
  echo "built $(date -u +%FT%TZ) on $(uname -m), $(g++ --version | head -1)"
} >"$OUT/BUILD_INFO.txt"
cat "$OUT/BUILD_INFO.txt"
find "$OUT" -type f -printf '%10s %P\n' | sort -k2
du -sh "$OUT"
