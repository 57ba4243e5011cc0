#!/usr/bin/env bash
# Step 1 of the device round trip (run here): build one tree (usage: scripts/device_bundle.sh [cpu|cuda]; default
# as scripts/build.sh: cuda when nvcc is present, so taco_llm and every test have the CUDA backend and tests/cuda
# is there too), gather its binaries, stripped, with the shared libraries the device machine lacks (Debian-only .so
# files; its glibc and libstdc++ are newer than ours) into .device/bundle/, and note the preset beside them.
# Step 2: the `run` tool carries .device/bundle.tar.xz (the bundle compressed: CUDA fat binaries shrink about 5x,
# and the carried tree is limited to 64 MiB) and runs scripts/gpu_suite.sh (or device_tests.sh) there, which
# unpack it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/preset.sh
preset=${1:-$(taco_default_preset)}
bundle=.device/bundle
# Only what travels is built (the rest of the tree is CPU work, built and run here by scripts/test.sh).
if [ "${TACO_BUNDLE_ALL:-0}" = 1 ]; then
  scripts/build.sh "$preset"
else
  scripts/build.sh "$preset" --target taco_llm taco_kernels_tests taco_cuda_tests cuda_gemm_bench cuda_attention_bench
fi
# What the GPU suite runs (gpu_suite.sh, gpu_profile.sh): the CLI, the two test binaries with CUDA tests and the CUDA
# micro-benchmarks. The others run on the CPU here, and with them the bundle (~36 MB) and the tree (~36 MB) pass the
# carried tree's 64 MiB; TACO_BUNDLE_ALL=1 takes every test and benchmark (device_tests.sh, with a smaller tree).
# (The list is made after the build: on a fresh tree a glob made before it would match nothing.)
if [ "${TACO_BUNDLE_ALL:-0}" = 1 ]; then
  bins=("build/$preset/taco_llm" "build/$preset"/taco_*_tests "build/$preset"/*_bench)
else
  bins=("build/$preset/taco_llm" "build/$preset/taco_kernels_tests" "build/$preset/taco_cuda_tests"
    "build/$preset"/cuda_*_bench)
fi
rm -rf "$bundle" && mkdir -p "$bundle/lib"
for b in "${bins[@]}"; do cp "$b" "$bundle/"; done
# The tests were compiled with TACO_BINARY_DIR=<repo>/build/<preset>: device_tests.sh puts them back there.
echo "$preset" >"$bundle/preset"
strip --strip-unneeded "$bundle"/taco_* "$bundle"/*_bench 2>/dev/null || true
# Shared libraries other than the C/C++ runtime, the driver and cuBLAS/cuBLASLt (CUDA 13's are installed on the
# device machine, and cublasLt alone is over 500 MB) travel with the binaries; libcudart (under 1 MB) travels too.
for b in "$bundle"/taco_* "$bundle"/*_bench; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*|libcuda|libcublas|libcublasLt)\.so' |
  while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
du -sh "$bundle"
# xz -9's 64 MiB window spans the binaries, whose CUDA fat binaries are largely the same kernels: about half the size
# of the default level's (30 MB -> 15 MB).
tar -C .device -cf - bundle | xz -9e >.device/bundle.tar.xz
ls -la .device/bundle.tar.xz
