#!/usr/bin/env bash
# Tokenizer benchmark: ours (bench/tokenizer_bench.cc) and Hugging Face's (bench/tokenizer_bench_hf.mjs) on the same
# text in the same run. Usage: bench/run_tokenizer_bench.sh [BUILD_DIR]   (default build/cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cpu}
scripts/setup_test_data.sh
if [ ! -d .cache/node/node_modules/@huggingface/tokenizers ] || [ ! -d .cache/node/node_modules/tokenizers ]; then
  mkdir -p .cache/node
  (cd .cache/node && [ -f package.json ] || echo '{"private": true}' > package.json
   npm install --silent --no-audit --no-fund @huggingface/tokenizers@0.2.0 tokenizers@0.23.2)
fi
cmake --build "$build" --target tokenizer_bench
"$build/tokenizer_bench"
node bench/tokenizer_bench_hf.mjs
