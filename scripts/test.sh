#!/usr/bin/env bash
# The whole test suite, as CI runs it: install packages, fetch test data, check the format, build ONE tree (the
# cuda preset when nvcc is present, so the CUDA code is compiled too; else cpu; $TACO_PRESET overrides) and run
# every test in parallel. CUDA tests skip, with the reason, where no GPU is usable. Then each libFuzzer target runs
# for TACO_FUZZ_SECONDS (scripts/fuzz.sh), and the GoogleTest suites run again under ASan+UBSan in that same fuzz
# tree (scripts/sanitize.sh ci; TACO_CI_SANITIZE=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/preset.sh
scripts/install_deps.sh
scripts/setup_test_data.sh
scripts/check_format.sh
preset=$(taco_default_preset)
scripts/build.sh "$preset"
jobs=$(nproc)
(cd "build/$preset" && ctest --output-on-failure -j "$jobs")
# The fuzz targets, briefly (issue 16: a few minutes in all, the build included); TACO_FUZZ_SECONDS=0 skips them.
fuzz_seconds=${TACO_FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" != 0 ]; then
  scripts/fuzz.sh "$fuzz_seconds"
fi
# Issue 16's sanitizer job: the libraries are already built with ASan+UBSan for the fuzzers, so this compiles only the
# suites' own files.
if [ "${TACO_CI_SANITIZE:-1}" != 0 ]; then
  scripts/sanitize.sh ci
fi
