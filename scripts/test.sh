#!/usr/bin/env bash
# The whole test suite, as CI runs it: install packages, fetch test data, build the cpu preset, run every
# test in parallel; then compile (not run) the cuda preset when nvcc is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/setup_test_data.sh
scripts/check_format.sh
scripts/build.sh cpu
jobs=$(nproc)
(cd build/cpu && ctest --output-on-failure -j "$jobs")
if [ -x /usr/local/cuda/bin/nvcc ] && [ "${TACO_SKIP_CUDA_BUILD:-0}" != 1 ]; then
  scripts/build.sh cuda --target taco_llm
fi
