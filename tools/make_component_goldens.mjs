// Writes tests/data/tokenizer/component_goldens.json: outputs of single normalizers, pre-tokenizers and decoders
// of the Rust tokenizers library (npm `tokenizers`, its Node binding) for components the real test tokenizers do
// not exercise. Each entry pairs the tokenizer.json form of the component (what our loader reads) with the
// binding's constructor for the same component. Run: node tools/make_component_goldens.mjs
// (after `npm install tokenizers@0.23.2` in .cache/node, which bench/run_tokenizer_bench.sh does).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(root, ".cache/node/package.json"));
const t = require("tokenizers");

const texts = [
  "Hello, World! 123 4567 ÀÉÎ ﬁ Ⅻ  tabs\tand\nnewlines  ",
  "ΣΊΣΥΦΟΣ ΟΔΟΣ İstanbul ẞ",
  "café déjà e\u0301 Å",
  "a1b22c333 ٣٤ ①",
  "foo-bar_baz.qux!?…—«»",
  "   leading and trailing \u3000 ",
  "",
  "中文字符 and ｆｕｌｌ ｗｉｄｔｈ",
  "▁x▁▁y ▁",
  "\u0000ctrl\u0007 zero\u200bwidth",
];

const normalizers = [
  [{ type: "NFC" }, () => t.nfcNormalizer()],
  [{ type: "NFD" }, () => t.nfdNormalizer()],
  [{ type: "NFKC" }, () => t.nfkcNormalizer()],
  [{ type: "NFKD" }, () => t.nfkdNormalizer()],
  [{ type: "Lowercase" }, () => t.lowercase()],
  [{ type: "StripAccents" }, () => t.stripAccentsNormalizer()],
  [{ type: "Strip", strip_left: true, strip_right: true }, () => t.stripNormalizer(true, true)],
  [{ type: "Strip", strip_left: false, strip_right: true }, () => t.stripNormalizer(false, true)],
  [{ type: "Prepend", prepend: "▁" }, () => t.prependNormalizer("▁")],
  [{ type: "Replace", pattern: { String: " " }, content: "▁" }, () => t.replace(" ", "▁")],
  [{ type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
   () => t.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase: true })],
  [{ type: "BertNormalizer", clean_text: true, handle_chinese_chars: false, strip_accents: false, lowercase: false },
   () => t.bertNormalizer({ cleanText: true, handleChineseChars: false, stripAccents: false, lowercase: false })],
  [{ type: "Sequence", normalizers: [{ type: "NFKD" }, { type: "StripAccents" }, { type: "Lowercase" }] },
   () => t.sequenceNormalizer([t.nfkdNormalizer(), t.stripAccentsNormalizer(), t.lowercase()])],
];

const preTokenizers = [
  [{ type: "Whitespace" }, () => t.whitespacePreTokenizer()],
  [{ type: "WhitespaceSplit" }, () => t.whitespaceSplitPreTokenizer()],
  [{ type: "BertPreTokenizer" }, () => t.bertPreTokenizer()],
  [{ type: "Punctuation", behavior: "Isolated" }, () => t.punctuationPreTokenizer("isolated")],
  [{ type: "Punctuation", behavior: "MergedWithPrevious" }, () => t.punctuationPreTokenizer("mergedWithPrevious")],
  [{ type: "Digits", individual_digits: true }, () => t.digitsPreTokenizer(true)],
  [{ type: "Digits", individual_digits: false }, () => t.digitsPreTokenizer(false)],
  [{ type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true }, () => t.metaspacePreTokenizer("▁", "always", true)],
  [{ type: "Metaspace", replacement: "▁", prepend_scheme: "never", split: true }, () => t.metaspacePreTokenizer("▁", "never", true)],
  [{ type: "Metaspace", replacement: "▁", prepend_scheme: "first", split: false }, () => t.metaspacePreTokenizer("▁", "first", false)],
  [{ type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true }, () => t.byteLevelPreTokenizer(true, true)],
  [{ type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false }, () => t.byteLevelPreTokenizer(false, false)],
  ...["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"].flatMap((b) => [false, true].map((inv) => [
    { type: "Split", pattern: { String: " " }, behavior: b, invert: inv },
    () => t.splitPreTokenizer(" ", b[0].toLowerCase() + b.slice(1), inv)])),
  [{ type: "Sequence", pretokenizers: [{ type: "WhitespaceSplit" }, { type: "Digits", individual_digits: true }] },
   () => t.sequencePreTokenizer([t.whitespaceSplitPreTokenizer(), t.digitsPreTokenizer(true)])],
];

const tokenLists = [
  ["▁Hello", "▁world", "!"],
  ["▁▁x", "<0xE2>", "<0x82>", "<0xAC>", "▁y", "<0xE2>", "<0x28>", "z"],
  ["Hel", "##lo", "▁there", "##!", " ."],
  ["ĠHello", "Ġworld", "Ċ", "<|endoftext|>", "Ã©"],
  ["  a  ", " b", "c "],
];

// (ByteLevel has no decoder constructor in the binding; the real tokenizers cover it.)
const decoders = [
  [{ type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true }, () => t.metaspaceDecoder("▁", "always", true)],
  [{ type: "Metaspace", replacement: "▁", prepend_scheme: "never", split: true }, () => t.metaspaceDecoder("▁", "never", true)],
  [{ type: "ByteFallback" }, () => t.byteFallbackDecoder()],
  [{ type: "Fuse" }, () => t.fuseDecoder()],
  [{ type: "Strip", content: " ", start: 1, stop: 1 }, () => t.stripDecoder(" ", 1, 1)],
  [{ type: "Replace", pattern: { String: "▁" }, content: " " }, () => t.replaceDecoder("▁", " ")],
  [{ type: "WordPiece", prefix: "##", cleanup: true }, () => t.wordPieceDecoder("##", true)],
  [{ type: "WordPiece", prefix: "##", cleanup: false }, () => t.wordPieceDecoder("##", false)],
  [{ type: "BPEDecoder", suffix: "</w>" }, () => t.bpeDecoder("</w>")],
  [{ type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "▁" }, content: " " }, { type: "ByteFallback" },
    { type: "Fuse" }, { type: "Strip", content: " ", start: 1, stop: 0 }] },
   () => t.sequenceDecoder([t.replaceDecoder("▁", " "), t.byteFallbackDecoder(), t.fuseDecoder(), t.stripDecoder(" ", 1, 0)])],
];

const out = { tokenizers_version: require("tokenizers/package.json").version, normalizers: [], pre_tokenizers: [], decoders: [] };
for (const [json, make] of normalizers) {
  const n = make();
  out.normalizers.push({ json, cases: texts.map((x) => [x, n.normalizeString(x)]) });
}
for (const [json, make] of preTokenizers) {
  const p = make();
  out.pre_tokenizers.push({ json, cases: texts.map((x) => [x, p.preTokenizeString(x).map(([s]) => s)]) });
}
for (const [json, make] of decoders) {
  const d = make();
  out.decoders.push({ json, cases: tokenLists.map((toks) => [toks, d.decode(toks)]) });
}
// Whole tokenizers the downloaded ones do not cover (a small BERT-style WordPiece pipeline, a Unigram model from spm_train), over both corpora.
const corpus = ["corpus", "heldout"].flatMap((c) =>
  fs.readFileSync(path.join(root, `tests/data/tokenizer/${c}.jsonl`), "utf8").split("\n").filter((l) => l).map((l) => JSON.parse(l)));
out.tokenizers = [];
for (const name of ["bert_wordpiece", "unigram"]) {
  const tok = t.Tokenizer.fromFile(path.join(root, `tests/data/tokenizer/${name}/tokenizer.json`));
  const rows = [];
  for (const text of corpus) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    const plain = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    rows.push({ text, ids, ids_plain: plain, decode: await tok.decode(ids, false), decode_skip: await tok.decode(ids, true) });
  }
  out.tokenizers.push({ name, rows });
}
const file = path.join(root, "tests/data/tokenizer/component_goldens.json");
fs.writeFileSync(file, JSON.stringify(out) + "\n");
console.log(`wrote ${file}`);
