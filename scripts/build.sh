#!/usr/bin/env bash
# Configures and builds a preset into build/<preset>. Usage: scripts/build.sh [cpu|cuda|auto] [cmake --build args]
# cpu: the CPU backend, no CUDA needed. cuda: the CPU and CUDA backends (needs nvcc), plus tests/cuda. auto (the
# default): cuda when nvcc is installed, else cpu (scripts/preset.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/preset.sh
preset=${1:-auto}
shift || true
[ "$preset" = auto ] && preset=$(taco_default_preset)
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" "$@"
