# Shared by the kernel-bench scripts: the checkout's root, the machine's nvcc and a build folder
# removed on exit. Sourced, after `set -euo pipefail`.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
