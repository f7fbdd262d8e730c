#!/usr/bin/env bash
# Build the sppark MSM peer for sm_90 (H100/H200): the benchmark binary `msm_bench` and
# `libsppark_msm.so` (C ABI, see msm_bench.cu), both with the CUDA runtime linked statically,
# so the GPU machine needs only the driver (libcuda.so).
#
# Input : peers/src/sppark  (git clone of supranational/sppark)
#         peers/src/blst    (git clone of supranational/blst)
#         peers/sppark/msm_bench.cu (our driver; includes sppark's headers)
# Output: peers/out/sppark/msm_bench, peers/out/sppark/libsppark_msm.so, peers/out/sppark/BUILD_INFO
# Intermediates: peers/src/sppark-build (git-ignored).
#
# Flags follow sppark's own build (rust/src/build.rs ccmd(), poc/msm-cuda/build.rs):
# -DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE, -Xcompiler -Wno-unused-function, include paths
# <sppark> and <blst>/src; scalars are passed canonical (mont=false) as in the poc binding.
# Instead of sppark's multi-arch gencode list we build sm_90 SASS plus compute_90 PTX;
# --compress-mode=size keeps the fat binaries small (needs a CUDA >= 12.4 driver).
# blst is built with its own build.sh in portable mode (-D__BLST_PORTABLE__: ADX code paths
# selected at run time by CPUID, as the blst crate's "portable" feature), and our code is
# compiled with the same define, so the binary runs on any x86-64 host.
#
# Needs: the pip CUDA 13.0 compiler in .venv (scripts/setup.sh) and, because that package
# ships neither cuda_runtime.h/libcudart_static.a nor the CCCL headers that sppark's
# <cooperative_groups.h> needs (<nv/target>), the wheels nvidia-cuda-runtime==13.0.96 and
# nvidia-cuda-cccl==13.0.85, which this script installs into peers/src/pydeps (git-ignored)
# with pip if they are not there.
#
# Env: NVCC (default: .venv's nvcc), CUDA_DEPS (default peers/src/pydeps/nvidia/cu13).
# One compiler process at a time, at low priority.
set -euo pipefail
. "$(dirname "$0")/../common.sh"
SPPARK="$ROOT/peers/src/sppark"
BLST="$ROOT/peers/src/blst"
DRIVER="$ROOT/peers/sppark/msm_bench.cu"
OUT="$ROOT/peers/out/sppark"
OBJ="$ROOT/peers/src/sppark-build"
[ -f "$SPPARK/msm/pippenger.cuh" ] || { echo "missing $SPPARK (git clone sppark there)"; exit 1; }
[ -f "$BLST/src/blst_t.hpp" ] || { echo "missing $BLST (git clone blst there)"; exit 1; }

PYDEPS="$ROOT/peers/src/pydeps"
CUDA_DEPS="${CUDA_DEPS:-$PYDEPS/nvidia/cu13}"
if [ ! -f "$CUDA_DEPS/include/cuda_runtime.h" ] || [ ! -f "$CUDA_DEPS/include/cccl/cuda/std/type_traits" ] \
   || [ ! -f "$CUDA_DEPS/lib/libcudart_static.a" ]; then
    PY="$ROOT/.venv/bin/python"; [ -x "$PY" ] || PY=python3
    echo "+ installing CUDA runtime + CCCL headers into $PYDEPS"
    "$PY" -m pip install -q --no-deps --target "$PYDEPS" \
        nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
    CUDA_DEPS="$PYDEPS/nvidia/cu13"
fi

SPPARK_COMMIT="$(git -C "$SPPARK" rev-parse HEAD)"
BLST_COMMIT="$(git -C "$BLST" rev-parse HEAD)"
echo "sppark commit: $SPPARK_COMMIT"
echo "blst   commit: $BLST_COMMIT"
NVCC_VERSION="$("$NVCC" --version | tail -1)"
echo "nvcc: $NVCC_VERSION"

mkdir -p "$OUT" "$OBJ/blst"

# 1. blst host library (C + assembly), with blst's own build script
if [ ! -f "$OBJ/blst/libblst.a" ] || [ "$(cat "$OBJ/blst/commit" 2>/dev/null)" != "$BLST_COMMIT" ]; then
    ( cd "$OBJ/blst" && rm -f ./*.o libblst.a && nice -n 10 sh "$BLST/build.sh" -D__BLST_PORTABLE__ )
    echo "$BLST_COMMIT" > "$OBJ/blst/commit"
fi

# 2. CUDA objects
GENCODE=(-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90)
NVFLAGS=(-std=c++17 -O3 "${GENCODE[@]}" --compress-mode=size
         -DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE -D__BLST_PORTABLE__
         -Xcompiler -O3,-fPIC,-Wno-unused-function,-fvisibility=hidden
         -I"$CUDA_DEPS/include" -isystem "$CUDA_DEPS/include/cccl" -I"$SPPARK" -I"$BLST/src")
echo "nvcc flags: ${NVFLAGS[*]}"

# Rebuild an object only when its inputs (text that matters + flags + commits) changed.
build_obj() {   # build_obj <object> <stamp-text> <nvcc args...>
    local obj="$1" stamp="$2"; shift 2
    local want; want="$(printf '%s' "$stamp" | sha256sum | cut -d' ' -f1)"
    if [ -f "$obj" ] && [ "$(cat "$obj.stamp" 2>/dev/null)" = "$want" ]; then
        echo "  up to date: $(basename "$obj")"; return
    fi
    echo "+ nvcc $* -> $(basename "$obj")"
    local t0=$SECONDS
    nice -n 10 "$NVCC" "$@" -o "$obj"
    echo "  ($((SECONDS - t0)) s)"
    echo "$want" > "$obj.stamp"
}
COMMON_STAMP="${NVFLAGS[*]} $SPPARK_COMMIT $BLST_COMMIT $NVCC_VERSION"
# Parts 1 and 2 (sppark glue for BN254 / BLS12-381, all the device code) depend only on the
# file up to the part-4 marker; part 4 (host code, main, C ABI) on the whole file.
GLUE_TEXT="$(sed -n '1,/^\/\/ Part 4: host code/p' "$DRIVER")"
build_obj "$OBJ/glue_bn254.o"     "$COMMON_STAMP part1 $GLUE_TEXT" \
    "${NVFLAGS[@]}" -DMSM_BENCH_PART=1 -c "$DRIVER"
build_obj "$OBJ/glue_bls12_381.o" "$COMMON_STAMP part2 $GLUE_TEXT" \
    "${NVFLAGS[@]}" -DMSM_BENCH_PART=2 -c "$DRIVER"
build_obj "$OBJ/host.o"           "$COMMON_STAMP part4 $(cat "$DRIVER")" \
    "${NVFLAGS[@]}" -DMSM_BENCH_PART=4 -c "$DRIVER"
# sppark's GPU enumeration (select_gpu & co.), compiled as sppark's rust/build.rs does
build_obj "$OBJ/all_gpus.o" "$COMMON_STAMP all_gpus" \
    "${NVFLAGS[@]}" -c "$SPPARK/util/all_gpus.cpp"

# sppark's msm/sort.cuh defines a non-template kernel `sort`, so both glue objects define its
# host stub.  Make every strong global symbol defined in both objects local to each object
# (each object registers its own copy with its own fatbin module).
syms() { nm --defined-only -g "$1" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort -u; }
DUPS="$(comm -12 <(syms "$OBJ/glue_bn254.o") <(syms "$OBJ/glue_bls12_381.o"))"
if [ -n "$DUPS" ]; then
    echo "+ localizing in glue objects: $(echo "$DUPS" | tr '\n' ' ')"
    LOC=(); for s in $DUPS; do LOC+=(--localize-symbol="$s"); done
    objcopy "${LOC[@]}" "$OBJ/glue_bn254.o"
    objcopy "${LOC[@]}" "$OBJ/glue_bls12_381.o"
fi

# 3. link
OBJS=("$OBJ/glue_bn254.o" "$OBJ/glue_bls12_381.o" "$OBJ/host.o" "$OBJ/all_gpus.o" "$OBJ/blst/libblst.a")
LDFLAGS=("${GENCODE[@]}" -cudart static -L"$CUDA_DEPS/lib"
         -Xcompiler -static-libstdc++,-static-libgcc)
echo "+ link msm_bench"
nice -n 10 "$NVCC" "${LDFLAGS[@]}" "${OBJS[@]}" -o "$OUT/msm_bench"
strip "$OUT/msm_bench"
printf '{\n  global: sppark_*;\n  local: *;\n};\n' > "$OBJ/exports.map"
echo "+ link libsppark_msm.so"
nice -n 10 "$NVCC" -shared "${LDFLAGS[@]}" -Xlinker --version-script="$OBJ/exports.map" \
    "${OBJS[@]}" -o "$OUT/libsppark_msm.so"
strip --strip-unneeded "$OUT/libsppark_msm.so"

{
    echo "sppark_commit=$SPPARK_COMMIT"
    echo "blst_commit=$BLST_COMMIT"
    echo "nvcc=$NVCC_VERSION"
    echo "cuda_deps=$(ls -d "$CUDA_DEPS"/../../nvidia_cuda_*.dist-info 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')"
    echo "nvcc_flags=${NVFLAGS[*]}"
    echo "link_flags=${LDFLAGS[*]}"
    echo "driver_sha256=$(sha256sum "$DRIVER" | cut -d' ' -f1)"
} > "$OUT/BUILD_INFO"
ls -la "$OUT"
du -sh "$OUT"
echo "exported: $(nm -D --defined-only "$OUT/libsppark_msm.so" | awk '{print $3}' | grep sppark_ | tr '\n' ' ')"
