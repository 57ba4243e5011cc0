#!/usr/bin/env bash
# Step 1 of the device round trip (run here): build the cpu preset (tests, benchmarks, taco_llm) and, when nvcc
# is present, the cuda preset's taco_llm; gather the binaries, stripped, with the shared libraries the device
# machine lacks (Debian-only .so files; its glibc and libstdc++ are newer than ours) into .device/bundle/.
# Step 2: the `run` tool carries .device/bundle and runs scripts/device_tests.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh cpu
if [ -x /usr/local/cuda/bin/nvcc ]; then scripts/build.sh cuda --target taco_llm; fi
bundle=.device/bundle
rm -rf "$bundle" && mkdir -p "$bundle/lib"
bins=(build/cpu/taco_llm build/cpu/taco_*_tests build/cpu/*_bench)
for b in "${bins[@]}"; do cp "$b" "$bundle/"; done
[ -x build/cuda/taco_llm ] && cp build/cuda/taco_llm "$bundle/taco_llm_cuda"
strip --strip-unneeded "$bundle"/taco_* "$bundle"/*_bench 2>/dev/null || true
# Shared libraries other than the C/C++ runtime and the driver travel with the binaries.
for b in "$bundle"/taco_* "$bundle"/*_bench; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*|libcuda)\.so' |
  while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
du -sh "$bundle"
