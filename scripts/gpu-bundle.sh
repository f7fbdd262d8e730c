#!/usr/bin/env bash
# Builds, on this machine, everything scripts/gpu-run.sh needs on a machine with an NVIDIA GPU and
# no Rust toolchain: release binaries, test binaries, the Python wheel and the shared test data,
# into the git-ignored folder .gpu-bundle/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export BATCHCRYPT_REQUIRE_CUDA=1
B=.gpu-bundle
rm -rf "$B" && mkdir -p "$B/bin" "$B/tests" "$B/wheels" "$B/data" "$B/kernels"
cargo build --release -p batchcrypt-cli -p batchcrypt-bench
cp target/release/batchcrypt target/release/batchcrypt-bench "$B/bin/"
# TESTS (name prefixes of integration test files of the crates, e.g. "p256 secp256k1 service")
# bundles only those, for a run that needs a few; SKIP="wheel node" leaves out the Python wheel and
# snarkjs.
if [ -n "${TESTS:-}" ]; then
  sel=()
  for t in crates/*/tests/*.rs; do
    n=$(basename "$t" .rs) c=$(basename "$(dirname "$(dirname "$t")")")
    [ "$c" = batchcrypt-py ] && continue
    for p in $TESTS; do
      [[ $n == "$p"* ]] || continue
      [[ " ${sel[*]} " == *" -p $c "* ]] || sel+=(-p "$c")
      sel+=(--test "$n") && break
    done
  done
else
  sel=(--workspace --exclude batchcrypt-py)
fi
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
cargo test --release "${sel[@]}" --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])' | while read -r exe; do cp "$exe" "$B/tests/"; done
strip "$B"/bin/* "$B"/tests/* 2>/dev/null || true
# Compressed with xz: the binaries share the embedded kernel images, which a large window
# finds again (a tenth of the size; the copy to the GPU machine may be limited in size).
tar -cf - -C "$B" tests | xz -T2 -9 > "$B/tests.txz" && rm -rf "$B/tests"
# The repaired wheel (OpenSSL inside), as users install it. An unrepaired build could not be used:
# repairing patches the extension that cargo keeps, so a later unrepaired build of the same tree
# would ship an extension that names the repaired wheel's renamed OpenSSL without carrying it.
skip wheel || cp "$(scripts/wheel.sh)" "$B/wheels/"
[ -f ../shared/data/block413567.raw ] && cp ../shared/data/block413567.raw "$B/data/"
# Bitcoin's test data (Core's vectors, real blocks with their spent outputs), compressed.
[ -d ../shared/data/bitcoin ] && tar -cf - -C ../shared/data bitcoin | xz -T2 -9 > "$B/bitcoin-data.txz"
# Groth16 fixtures (scripts/zk-fixtures.sh): the test circuits, whose keys come from a ceremony;
# the benchmark circuits are written and keyed there (gpu-run.sh).
zk=${BATCHCRYPT_ZK_FIXTURES:-target/zk-fixtures}
mkdir -p "$B/zk"
for d in "$zk"/*/; do
  [ -f "$d/snarkjs.proof.json" ] && cp -r "$d" "$B/zk/$(basename "$d")"
done
# snarkjs and the Node.js that runs it, for the machine with the GPU (which may have neither): the
# tests check our GPU proofs with snarkjs there, and the Groth16 benchmark runs it as the peer.
if ! skip node && [ -d scripts/zk/node_modules/snarkjs ] && command -v node >/dev/null; then
  tar -cf - --exclude=node_modules/circom2 --exclude='node_modules/*/test' \
      --exclude='node_modules/*/*/test' --exclude='*.md' --exclude='*.map' -C scripts/zk node_modules \
      -C "$(dirname "$(readlink -f "$(command -v node)")")" node | xz -T2 -9 > "$B/node.tar.xz"
fi
# FUZZ=1: the fuzz targets as well, stripped, in .gpu-fuzz/fuzz.txz for gpu-run.sh's fuzz step,
# and the corpus grown so far (fuzz/corpus) in .gpu-fuzz/corpus.txz (carry .gpu-fuzz beside the
# bundle).
if [ "${FUZZ:-0}" = 1 ]; then
  scripts/fuzz.sh --build-only
  F=.gpu-fuzz && rm -rf "$F" && mkdir -p "$F/bin"
  for t in fuzz/fuzz_targets/*.rs; do cp "fuzz/target/x86_64-unknown-linux-gnu/release/$(basename "$t" .rs)" "$F/bin/"; done
  strip "$F"/bin/*
  tar -cf - -C "$F/bin" . | xz -T2 -9 > "$F/fuzz.txz" && rm -rf "$F/bin"
  [ ! -d fuzz/corpus ] || tar -cf - fuzz/corpus | xz -T2 -9 > "$F/corpus.txz"
fi
# The tests find their data through the build-time path of this checkout; record it.
# The embedded kernel images and ptxas's resource report, for inspection on the GPU machine.
out=$(dirname "$(ls -t target/release/build/batchcrypt-*/out/sha256.fatbin | head -1)")
cp "$out"/*.fatbin "$out"/ptxas-report.txt "$B/kernels/"
tar -cf - -C "$B" bin kernels | xz -T2 -9 > "$B/bin.txz" && rm -rf "$B/bin" "$B/kernels"
pwd > "$B/build-root"
du -sh "$B"
