#!/usr/bin/env bash
# Groth16 fixtures built with the real toolchain: circom 2 and snarkjs from npm, pinned in
# scripts/zk/package.json. For each circuit: the R1CS, a proving key from a fresh (test-only)
# powers-of-tau ceremony, the verification key, a witness, and snarkjs's own proof of it.
#
#   scripts/zk-fixtures.sh              # the test circuits (mix, chain at 2^10; mix and chain at
#                                        # 2^10 over BLS12-381 too: circom --prime bls12381)
#   scripts/zk-fixtures.sh chain:14     # also the chain circuit with a 2^14 domain, key from a ceremony
#   scripts/zk-fixtures.sh bench:20     # the chain circuit at 2^20, key from `batchcrypt groth16-setup`
#                                        # (circuit and witness written by batchcrypt-bench: circom's
#                                        # files byte for byte, checked at 2^10 by the tests)
#
# Output: $BATCHCRYPT_ZK_FIXTURES (default target/zk-fixtures)/<name>/ with circuit.r1cs,
# circuit.zkey, verification_key.json, input.json, witness.wtns, and for ceremony keys
# snarkjs.proof.json, snarkjs.public.json. A fixture is rebuilt only when its sources change.
# snarkjs's ceremony takes hours from 2^18 on two cores, circom's compilation about as long from
# 2^20; bench:K writes the circuit and makes the key in seconds with the development setup (one
# party: for tests and benchmarks only), which snarkjs also reads.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${BATCHCRYPT_ZK_FIXTURES:-$root/target/zk-fixtures}
mkdir -p "$out"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Node.js and npm (circom and snarkjs run on it)..."
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "error: Node.js and npm are needed to build the Groth16 fixtures (circom, snarkjs); install them (Debian/Ubuntu: apt-get install nodejs npm)" >&2
    exit 1
  fi
fi
zk=scripts/zk
lock=$(sha256sum $zk/package-lock.json | cut -d' ' -f1)
if [ "$(cat $zk/node_modules/.batchcrypt-lock 2>/dev/null)" != "$lock" ]; then
  echo "installing circom 2 and snarkjs (scripts/zk/package-lock.json)..."
  (cd $zk && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$lock" > $zk/node_modules/.batchcrypt-lock
fi
circom() { node --max-old-space-size=16384 "$root/$zk/node_modules/circom2/cli.js" "$@"; }
# Our release binaries for the development setup and the benchmark circuit, built if missing.
batchcrypt() {
  [ -x target/release/batchcrypt ] || cargo build -q --release -p batchcrypt-cli
  target/release/batchcrypt "$@"
}
batchcrypt_bench() {
  [ -x target/release/batchcrypt-bench ] || cargo build -q --release -p batchcrypt-bench
  target/release/batchcrypt-bench "$@"
}
snarkjs() { node --max-old-space-size=16384 "$root/$zk/node_modules/snarkjs/build/cli.cjs" "$@"; }

# Powers of tau for domains up to 2^k on a curve (snarkjs's name: bn128, bls12381): a one-party
# ceremony, for tests and benchmarks only. ptau K CURVE
ptau() {
  local k=$1 curve=$2 f="$out/ptau/pot$1.ptau"
  [ "$curve" = bn128 ] || f="$out/ptau/pot$1-$curve.ptau"
  if [ ! -s "$f" ]; then
    mkdir -p "$out/ptau"
    echo "powers of tau 2^$k on $curve..." >&2
    snarkjs powersoftau new "$curve" "$k" "$f.0" >/dev/null
    snarkjs powersoftau contribute "$f.0" "$f.1" -e="batchcrypt test fixtures $k $RANDOM" >/dev/null
    snarkjs powersoftau prepare phase2 "$f.1" "$f.tmp" >/dev/null
    mv "$f.tmp" "$f" && rm -f "$f.0" "$f.1"
  fi
  echo "$f"
}

# fixture NAME MAIN.circom INPUT.json K [dev] [CURVE]: the key from a ceremony, or with `dev` from
# `batchcrypt groth16-setup`; over BN254 (bn128, the default) or BLS12-381 (bls12381).
fixture() {
  local name=$1 main=$2 input=$3 k=$4 dev=${5:-} curve=${6:-bn128} dir="$out/$1"
  local want
  want=$(cat "$main" "$input" $zk/circuits/*.circom $zk/package-lock.json ${dev:+crates/batchcrypt-bench/src/groth16.rs} | sha256sum | cut -d' ' -f1)-$k$dev-$curve
  if [ "$(cat "$dir/.sources" 2>/dev/null)" = "$want" ]; then echo "fixture $name: up to date"; return; fi
  echo "fixture $name (domain 2^$k)..."
  rm -rf "$dir" && mkdir -p "$dir/build"
  cp "$input" "$dir/input.json"
  if [ -n "$dev" ]; then
    batchcrypt_bench --chain-circuit "$k" "$dir" >/dev/null
  else
    local base
    base=$(basename "$main" .circom)
    circom "$main" --prime "$curve" --r1cs --wasm -l "$root/$zk/circuits" -o "$dir/build" >/dev/null
    cp "$dir/build/$base.r1cs" "$dir/circuit.r1cs"
    snarkjs wtns calculate "$dir/build/${base}_js/$base.wasm" "$dir/input.json" "$dir/witness.wtns"
  fi
  if [ -n "$dev" ]; then
    batchcrypt groth16-setup "$dir/circuit.r1cs" "$dir/circuit.zkey"
    snarkjs zkey export verificationkey "$dir/circuit.zkey" "$dir/verification_key.json" >/dev/null
  else
    local pot
    pot=$(ptau "$k" "$curve")
    snarkjs groth16 setup "$dir/circuit.r1cs" "$pot" "$dir/build/c0.zkey" >/dev/null
    snarkjs zkey contribute "$dir/build/c0.zkey" "$dir/circuit.zkey" -e="batchcrypt $name $RANDOM" >/dev/null
    snarkjs zkey export verificationkey "$dir/circuit.zkey" "$dir/verification_key.json" >/dev/null
    snarkjs groth16 prove "$dir/circuit.zkey" "$dir/witness.wtns" "$dir/snarkjs.proof.json" "$dir/snarkjs.public.json"
    snarkjs groth16 verify "$dir/verification_key.json" "$dir/snarkjs.public.json" "$dir/snarkjs.proof.json" >/dev/null
  fi
  rm -rf "$dir/build"
  echo "$want" > "$dir/.sources"
}

# The chain circuit sized to fill a 2^k domain: 2 constraints per step, room for the public
# signals' rows. chain K [dev] [CURVE] (fixture chain-K, or chain-K-CURVE off BN254)
chain() {
  local k=$1 curve=${3:-bn128} main="$out/chain-$1.circom" name="chain-$1"
  [ "$curve" = bn128 ] || name="chain-$1-$curve"
  mkdir -p "$out"
  printf 'pragma circom 2.0.0;\ninclude "chain.circom";\ncomponent main {public [x0]} = Chain(%d);\n' \
    $(( ((1 << k) - 8) / 2 )) > "$main"
  fixture "$name" "$main" $zk/circuits/chain.input.json "$k" "${2:-}" "$curve"
}

fixture mix $zk/circuits/mix.circom $zk/circuits/mix.input.json 6
chain 10
fixture mix-bls12381 $zk/circuits/mix.circom $zk/circuits/mix.input.json 6 "" bls12381
chain 10 "" bls12381
for extra in "$@"; do
  case $extra in
    chain:*) chain "${extra#chain:}" ;;
    bench:*) chain "${extra#bench:}" dev ;;
    *) echo "error: unknown fixture '$extra' (expected chain:K or bench:K)" >&2; exit 2 ;;
  esac
done
echo "fixtures in $out"
