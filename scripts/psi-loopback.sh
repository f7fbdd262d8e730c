#!/usr/bin/env bash
# Two `batchcrypt psi` processes on this machine, over loopback TCP: sets of N items each with
# N/2 in common, timed end to end (both processes, from start to both outputs written), and the
# intersection checked. Usage: scripts/psi-loopback.sh N [BATCHCRYPT_BINARY] [extra psi flags...]
set -euo pipefail
n=${1:?usage: psi-loopback.sh N [binary] [flags]}
bin=${2:-target/release/batchcrypt}
shift $(( $# >= 2 ? 2 : 1 ))
dir=$(mktemp -d)
half=$((n / 2))
seq -f 'customer-%.0f@example.org' 0 $((n - 1)) > "$dir/a.txt"
seq -f 'customer-%.0f@example.org' "$half" $((n + half - 1)) > "$dir/b.txt"
port=$((20000 + RANDOM % 20000))
t0=$(date +%s%N)
"$bin" psi --listen "127.0.0.1:$port" -i "$dir/a.txt" -o "$dir/a.out" --quiet "$@" & pa=$!
"$bin" psi --connect "127.0.0.1:$port" -i "$dir/b.txt" -o "$dir/b.out" --quiet "$@" & pb=$!
rc=0; wait $pa || rc=1; wait $pb || rc=1
t1=$(date +%s%N)
[ $rc = 0 ] || { echo "psi failed" >&2; exit 1; }
got_a=$(wc -l < "$dir/a.out"); got_b=$(wc -l < "$dir/b.out")
want=$((n - half))
cmp -s <(sort "$dir/a.out") <(sort "$dir/b.out") || { echo "the two sides disagree" >&2; exit 1; }
[ "$got_a" = "$want" ] || { echo "intersection has $got_a items, expected $want" >&2; exit 1; }
printf 'PSI %d x %d items, %d in common, two processes on loopback: %.2f s\n' "$n" "$n" "$got_b" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1e9 }')"
rm -rf "$dir"
