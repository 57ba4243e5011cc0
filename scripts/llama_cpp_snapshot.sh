#!/usr/bin/env bash
# Makes here the archives scripts/gpu_llama_cpp.sh carries to the GPU machine (issue 13 item 7: llama.cpp side by
# side), from a public llama.cpp snapshot, a git directory (for example the tool library's `fetch
# github:unslothai/llama.cpp`, a fork that tracks ggml-org's; ggml-org's own is too large to fetch). Usage:
# scripts/llama_cpp_snapshot.sh GIT_DIR [COMMIT]
#   .device/llama_cpp_src.tar.xz      the build's sources: CMake files, ggml, src, common, include, tools, vendor
#   .device/llama_cpp_convert.tar.xz  convert_hf_to_gguf.py with gguf-py and conversion/, and Llama 3's tokenizer
#                                     (.cache/tokenizers/llama3, from scripts/setup_test_data.sh) as tokenizer/
#   .device/llama_cpp_snapshot.txt    where they came from (the git directory and commit)
# .device is ignored: nothing of llama.cpp is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
git_dir=$1 commit=${2:-HEAD}
[ -f .cache/tokenizers/llama3/tokenizer.json ] || scripts/setup_test_data.sh
mkdir -p .device
git --git-dir "$git_dir" archive --format=tar --prefix=llama.cpp/ "$commit" CMakeLists.txt cmake common ggml include src \
  tools vendor licenses LICENSE | xz -9 -T2 >.device/llama_cpp_src.tar.xz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git --git-dir "$git_dir" archive --format=tar --prefix=llama.cpp/ "$commit" convert_hf_to_gguf.py gguf-py conversion |
  tar -C "$tmp" -xf -
mkdir -p "$tmp/tokenizer"
cp .cache/tokenizers/llama3/tokenizer.json .cache/tokenizers/llama3/tokenizer_config.json "$tmp/tokenizer/"
tar -C "$tmp" -cf - llama.cpp tokenizer | xz -9 -T2 >.device/llama_cpp_convert.tar.xz
echo "$git_dir $(git --git-dir "$git_dir" rev-parse "$commit")" >.device/llama_cpp_snapshot.txt
ls -la .device/llama_cpp_*
