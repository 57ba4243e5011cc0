// The reference numbers for bench/tokenizer_bench.cc: the same English prose (/usr/share/common-licenses) encoded
// with the Llama-3 tokenizer by Hugging Face's JavaScript tokenizers (@huggingface/tokenizers) and, when
// installed, by the Rust tokenizers library through its Node binding (npm `tokenizers`). One thread each.
// Run: bench/run_tokenizer_bench.sh (installs both into .cache/node).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(root, ".cache/node/package.json"));
const dir = process.env.TACO_TOKENIZER_DIR ?? path.join(root, ".cache/tokenizers/llama3");
const names = ["GPL-3", "GPL-2", "LGPL-2.1", "GFDL-1.3", "Apache-2.0", "MPL-2.0", "Artistic", "CC0-1.0"];
const texts = names.map((n) => fs.readFileSync(`/usr/share/common-licenses/${n}`, "utf8"));
const bytes = texts.reduce((s, t) => s + Buffer.byteLength(t), 0);
const minSeconds = 3;

async function measure(label, encode) {
  for (const t of texts) await encode(t);  // warm-up (caches, JIT)
  let rounds = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  while (elapsed < minSeconds) {
    for (const t of texts) await encode(t);
    rounds++;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  }
  console.log(`${label}: encode ${((bytes * rounds) / elapsed / 1e6).toFixed(2)} MB/s`);
}

{
  const t0 = process.hrtime.bigint();
  const mod = await import(require.resolve("@huggingface/tokenizers"));
  const Tokenizer = mod.Tokenizer ?? mod.default?.Tokenizer;
  const json = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const config = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  const tok = new Tokenizer(json, config);
  console.log(`@huggingface/tokenizers (JS): load ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(1)} ms`);
  await measure("@huggingface/tokenizers (JS)", (t) => tok.encode(t, { add_special_tokens: false }));
}

try {
  const { Tokenizer } = require("tokenizers");
  const t0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
  console.log(`tokenizers (Rust, Node binding): load ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(1)} ms`);
  await measure("tokenizers (Rust, Node binding)", (t) => tok.encode(t, null, { addSpecialTokens: false }));
} catch (e) {
  console.log(`tokenizers (Rust, Node binding): not measured (${e.message.split("\n")[0]})`);
}
