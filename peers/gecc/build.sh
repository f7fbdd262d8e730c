#!/usr/bin/env bash
# Build gECC's SM2 benchmarks (GTest executables under test/) for sm_90.
#
# Input : peers/src/gecc  (git clone of CGCL-codes/gECC)
# Output: peers/out/gecc/{ecdsa_sign_bk3,ecdsa_verify_bk3,ecdsa_ec_fixed_pmul_bk4,
#                         ecdsa_ec_unknown_pmul_bk4}_test.gz, COMMIT
#
# These are the "most optimised" variants of the peer's own CMake targets
# (test/CMakeLists.txt): same source file and same -D set per target.  We call nvcc
# directly with the flags CMake's Release config would use (-O3 -DNDEBUG, C++17),
# after running the peer's constants generator exactly as its CMake custom command does.
# GoogleTest comes from Debian's libgtest-dev (static libgtest.a / libgtest_main.a),
# installed with apt-get if missing; it is linked statically, as is the CUDA runtime, so
# the binaries need only libcuda.so.1, libstdc++/libgcc_s and glibc on the GPU box.
# libstdc++ stays dynamic on purpose: gcc-12's static libstdc++ can pull in
# arc4random@GLIBC_2.36, which Ubuntu 22.04 (glibc 2.35) lacks.
#
# Env: NVCC (default: the pip CUDA 13 nvcc in .venv).  One nvcc at a time, niced.
set -euo pipefail
. "$(dirname "$0")/../common.sh"
SRC="$ROOT/peers/src/gecc"
OUT="$ROOT/peers/out/gecc"
[ -d "$SRC/test" ] || { echo "missing $SRC (git clone the peer there)"; exit 1; }

COMMIT="$(git -C "$SRC" rev-parse HEAD)"
echo "gecc commit: $COMMIT"
"$NVCC" --version | tail -1

GTEST_LIBDIR="${GTEST_LIBDIR:-/usr/lib/x86_64-linux-gnu}"
if [ ! -f "$GTEST_LIBDIR/libgtest_main.a" ] || [ ! -f /usr/include/gtest/gtest.h ]; then
  echo "installing libgtest-dev (Debian package) ..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libgtest-dev
fi

# Generated headers (fp/ec constants, carry-chain code, test vectors; seeded RNG,
# so deterministic) -- same command as the peer's CMake custom command.
GEN="$SRC/.batchcrypt-gen/include"   # scratch, inside the (git-ignored) clone
mkdir -p "$GEN" "$OUT"
python3 "$SRC/scripts/constants_generator.py" --out "$GEN"

GENCODE="-gencode arch=compute_90,code=sm_90"
FLAGS="-std=c++17 -O3 -DNDEBUG $GENCODE -I$SRC/include -I$GEN"
# pip wheel layout: static cudart lives in <toolkit>/lib, not lib64
CUDALIB="$(cd "$(dirname "$NVCC")/.." && pwd)/lib"
LINK="-cudart static -L$CUDALIB $GTEST_LIBDIR/libgtest_main.a $GTEST_LIBDIR/libgtest.a -lpthread"

build() {  # name source defines...
  local name="$1" src="$2"; shift 2
  echo "+ nvcc test/$src $* -> ${name}_test"
  nice -n 10 "$NVCC" $FLAGS "$@" "$SRC/test/$src" -o "$OUT/${name}_test" $LINK
}
# SM2 signature generation, breakdown 3 (batch inverse + batched fixed-base k*G)
build ecdsa_sign_bk3 ecdsa_sign.cu \
  -DOVERFLOW -DSPPARK_32 -DGECC_QAPW_OPT_COLUMN_MAJORED_INPUTS -DPERSISTENT_L2_CACHE
# SM2 signature verification, breakdown 3 (batched s*G and t*P, fused, mem-opt)
build ecdsa_verify_bk3 ecdsa_verify.cu \
  -DOVERFLOW -DSPPARK_32 -DGECC_QAPW_OPT_COLUMN_MAJORED_INPUTS -DPERSISTENT_L2_CACHE
# fixed-point multiplication, breakdown 4 (kernel fusion + memory management)
build ecdsa_ec_fixed_pmul_bk4 ecdsa_ec_fixed_pmul.cu \
  -DOVERFLOW -DSPPARK_32 -DGECC_QAPW_OPT_COLUMN_MAJORED_INPUTS -DPERSISTENT_L2_CACHE
# unknown-point multiplication, breakdown 4 (kernel fusion + memory management)
build ecdsa_ec_unknown_pmul_bk4 ecdsa_ec_unknown_pmul.cu \
  -DOVERFLOW -DSPPARK_32 -DGECC_QAPW_OPT_COLUMN_MAJORED_INPUTS -DPERSISTENT_L2_CACHE

# gzip (9-14 MB, mostly test-vector tables -> ~1-1.6 MB each); run.sh unpacks.
rm -f "$OUT"/*_test.gz
gzip -9 -f "$OUT"/*_test
echo "$COMMIT" > "$OUT/COMMIT"
ls -la "$OUT"
