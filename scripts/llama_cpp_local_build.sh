#!/usr/bin/env bash
# Builds llama.cpp's llama-bench and llama-batched-bench for sm_90 HERE (no device time: nvcc cross-compiles; about
# 1.5 hours at nice 19 on 2 cores) from .device/llama_cpp_src.tar.xz (scripts/llama_cpp_snapshot.sh), with the
# flags of `scripts/gpu_llama_cpp.sh build`, and leaves the binaries and their shared libraries in .device/ as
# llama_cpp_bin.tar.xz.part-* (under 16 MiB each), which `scripts/gpu_llama_cpp.sh bench` unpacks on the GPU machine.
# Usage: scripts/llama_cpp_local_build.sh [BUILD_ROOT]
#   BUILD_ROOT defaults to .device/llama_cpp_local (ignored, kept between sessions); an existing build is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-$PWD/.device/llama_cpp_local}
mkdir -p "$root"
[ -d "$root/llama.cpp" ] || tar -C "$root" -xJf .device/llama_cpp_src.tar.xz
build=$root/build
if [ ! -x "$build/bin/llama-bench" ] || [ ! -x "$build/bin/llama-batched-bench" ]; then
  nice -n 19 cmake -S "$root/llama.cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc
  nice -n 19 cmake --build "$build" -j "$(nproc)" --target llama-bench llama-batched-bench
fi
strip "$build/bin/llama-bench" "$build/bin/llama-batched-bench" "$build"/bin/*.so*
# The libraries the binaries need besides the C/C++ runtime, the driver and cuBLAS (the GPU machine has CUDA 13's).
mkdir -p "$build/bin/deps"
for b in "$build/bin/llama-bench" "$build/bin/llama-batched-bench" "$build"/bin/*.so*; do
  LD_LIBRARY_PATH="$build/bin" ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | grep -v -E "^$build/" |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*|libcuda|libcublas|libcublasLt)\.so' |
  while read -r lib; do cp -L "$lib" "$build/bin/deps/"; done
rm -f .device/llama_cpp_bin.tar.xz.part-*
(cd "$build" && tar -cf - bin/llama-bench bin/llama-batched-bench bin/*.so* bin/deps) | xz -6 -T2 |
  split -b 15M - .device/llama_cpp_bin.tar.xz.part-
ls -la .device/llama_cpp_bin.tar.xz.part-*
