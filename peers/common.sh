# Sourced by peers/<name>/build.sh: ROOT (the repository) and NVCC (the CUDA compiler that
# scripts/setup.sh installs, unless NVCC is set; else one on PATH).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NVCC="${NVCC:-$ROOT/.venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc}"
[ -x "$NVCC" ] || NVCC="$(command -v nvcc || true)"
[ -x "$NVCC" ] || { echo "nvcc not found (run scripts/setup.sh or set NVCC)"; exit 1; }
