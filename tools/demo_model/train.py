#!/usr/bin/env python3
"""Trains the built-in demo model (issue F) on the device machine, in one command.

Input: the corpus of make_corpus.sh (train.jsonl.xz, heldout.jsonl.xz, heldout.txt).
Output folder: an HF Llama model (bf16 safetensors, config.json, generation_config.json), a byte-level BPE
tokenizer (tokenizer.json, tokenizer_config.json with a ChatML template), train_log.txt, metrics.json, and the
goldens tests/data/demo/{perplexity,greedy}.json computed by transformers in fp32 from the saved bf16 weights.

  python3 tools/demo_model/train.py --corpus .cache/demo_corpus --out OUT --minutes 6.5
  python3 tools/demo_model/train.py --corpus .cache/demo_corpus --out OUT --max-steps 20   # smoke run

Needs torch, transformers, tokenizers; no network.
"""
import argparse
import json
import lzma
import math
import os
import random
import re
import shutil
import sys
import time

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")
SYSTEM_PROMPTS = ["You are a helpful assistant.", "You answer from the Bible and old books.",
                  "You are a concise assistant."]
GREETING = ("Peace be with you. Ask me for a verse, such as John 3:16 or Psalm 23:1, or for a word from "
            "The Devil's Dictionary.")

LOG = None


def log(*parts):
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    if LOG:
        LOG.write(line + "\n")
        LOG.flush()


def read_jsonl_xz(path):
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# ----------------------------------------------------------------------------------------------------------
# Training documents


def verse_line(r):
    return f"{r['ref']} {r['text']}"


def plain_documents(records):
    """A Bible chapter per document (one 'Book C:V text' line per verse); a commentary or dictionary record
    per document."""
    docs, chapter_key, chapter = [], None, []
    for r in records:
        if r["src"] in ("kjv", "web"):
            key = (r["src"], r["book"], r["chapter"])
            if key != chapter_key and chapter:
                docs.append("\n".join(chapter))
                chapter = []
            chapter_key = key
            chapter.append(verse_line(r))
        else:
            docs.append(r["text"])
    if chapter:
        docs.append("\n".join(chapter))
    return docs


def first_sentences(text, max_chars):
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    end = max(cut.rfind(". "), cut.rfind("? "), cut.rfind("! "))
    return cut[:end + 1] if end > max_chars // 3 else cut.rsplit(" ", 1)[0] + "..."


def verse_exchange(r, rng):
    version = {"kjv": "King James Version", "web": "World English Bible"}[r["src"]]
    short = {"kjv": "KJV", "web": "WEB"}[r["src"]]
    asks = [f"Quote {r['ref']}.", f"What does {r['ref']} say?", f"Give me {r['ref']} ({short}).",
            f"Recite {r['ref']} from the {version}.", f"{r['ref']}", f"Please read {r['ref']} to me.",
            f"What is written in {r['ref']}?"]
    if r["src"] == "web":
        asks = [a for a in asks if "(" in a or version in a] + [f"How does the {version} render {r['ref']}?"]
    q = rng.choice(asks)
    a = r["text"] if rng.random() < 0.6 else f"{r['ref']}: {r['text']}"
    return q, a


def reverse_exchange(r, rng):
    q = rng.choice([f"Where is this verse found: \"{r['text']}\"", f"Which verse says \"{r['text']}\"?"])
    return q, f"That is {r['ref']}."


def devil_exchange(r, rng):
    word = r["ref"].split(",")[0].title()
    q = rng.choice([f"Define {word}.", f"What is {word.lower()}?", f"What does The Devil's Dictionary say about "
                    f"{word.lower()}?", f"Give me the Devil's Dictionary entry for {word}.",
                    f"What does \"{word.lower()}\" mean?"])
    return q, first_sentences(r["text"], 700)


def psalm_exchange(r, rng):
    q = rng.choice([f"Tell me about {r['ref']}.", f"What does Spurgeon say about {r['ref']}?",
                    f"Explain {r['ref']}.", f"Comment on {r['ref']}."])
    return q, first_sentences(r["text"], 600)


def commentary_exchange(r, rng):
    q = rng.choice([f"Tell me something from Matthew Henry on {r['book']}.", f"Comment on the book of {r['book']}.",
                    "Give me a short devotional thought.", "Share a thought from a commentary."])
    return q, first_sentences(r["text"], 600)


def render_chat(turns, rng):
    parts = []
    if rng.random() < 0.3:
        parts.append(f"{IM_START}system\n{rng.choice(SYSTEM_PROMPTS)}{IM_END}\n")
    for q, a in turns:
        parts.append(f"{IM_START}user\n{q}{IM_END}\n{IM_START}assistant\n{a}{IM_END}\n")
    return "".join(parts)


def chat_documents(records, num_chats, rng):
    by_src = {}
    for r in records:
        by_src.setdefault(r["src"], []).append(r)
    short_verses = [r for r in by_src["kjv"] + by_src["web"] if len(r["text"]) < 160]
    makers = [(0.50, lambda: verse_exchange(rng.choice(by_src[rng.choice(["kjv", "kjv", "web"])]), rng)),
              (0.08, lambda: reverse_exchange(rng.choice(short_verses), rng)),
              (0.22, lambda: devil_exchange(rng.choice(by_src["devil"]), rng)),
              (0.10, lambda: psalm_exchange(rng.choice(by_src["tdavid"]), rng)),
              (0.06, lambda: commentary_exchange(rng.choice(by_src["mhcc"]), rng)),
              (0.04, lambda: (rng.choice(["Hello", "Hi!", "Hello, who are you?", "Good morning.", "Hey"]), GREETING))]
    weights = [w for w, _ in makers]
    docs = []
    for _ in range(num_chats):
        turns = [rng.choices(makers, weights)[0][1]() for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        docs.append(render_chat(turns, rng))
    return docs


# ----------------------------------------------------------------------------------------------------------
# Tokenizer


def train_tokenizer(texts, vocab_size, out_dir):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=[ENDOFTEXT, IM_START, IM_END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": IM_END,
        "pad_token": ENDOFTEXT,
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1024,
        "additional_special_tokens": [IM_START, IM_END],
        "added_tokens_decoder": {str(tok.token_to_id(t)): {"content": t, "lstrip": False, "normalized": False,
                                                           "rstrip": False, "single_word": False, "special": True}
                                 for t in (ENDOFTEXT, IM_START, IM_END)},
        "chat_template": CHAT_TEMPLATE,
    }
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return tok


# ----------------------------------------------------------------------------------------------------------
# Evaluation


@torch.no_grad()
def sliding_window_nll(model, ids, window, stride, device):
    """transformers' perplexity guide: windows [begin, begin + window) for begin = 0, stride, 2 stride, ...
    until a window reaches the end; a window scores its last (end - previous end) tokens, the first window
    every token but the first. Returns (sum of NLL in float64, number of scored tokens, guide-formula ppl),
    the last being the guide's own averaging (each window's mean loss weighted by its label count minus 1)."""
    windows, prev_end = [], 0
    for begin in range(0, len(ids), stride):
        end = min(begin + window, len(ids))
        windows.append((begin, end, end - prev_end))
        prev_end = end
        if end == len(ids):
            break
    nll_sum, count, guide_sum, guide_count = 0.0, 0, 0.0, 0
    for begin, end, trg_len in windows:
        x = torch.tensor(ids[begin:end], device=device).unsqueeze(0)
        logits = model(x).logits[0].double()
        logp = torch.log_softmax(logits[:-1], dim=-1)
        nll = -logp.gather(1, x[0, 1:].unsqueeze(1)).squeeze(1)
        scored = nll[-min(trg_len, end - begin - 1):]
        nll_sum += scored.sum().item()
        count += scored.numel()
        guide_sum += scored.mean().item() * (trg_len - 1)
        guide_count += trg_len - 1
    return nll_sum, count, math.exp(guide_sum / guide_count)


def bigram_ppl(train_ids, heldout_ids, vocab_size, ks=(0.001, 0.003, 0.01, 0.03, 0.1)):
    """Add-k bigram on the training tokens, scored on every held-out token but the first (the tokens the
    model's windows score). Reports the best k on the held-out set, which flatters the baseline."""
    t = torch.tensor(train_ids, dtype=torch.int64)
    counts = torch.bincount(t[:-1] * vocab_size + t[1:], minlength=vocab_size * vocab_size).double()
    counts = counts.view(vocab_size, vocab_size)
    row = counts.sum(1, keepdim=True)
    h = torch.tensor(heldout_ids, dtype=torch.int64)
    prev, nxt = h[:-1], h[1:]
    best = None
    for k in ks:
        p = (counts[prev, nxt] + k) / (row[prev, 0] + k * vocab_size)
        ppl = math.exp(-torch.log(p).mean().item())
        if best is None or ppl < best[0]:
            best = (ppl, k)
    return best


@torch.no_grad()
def quick_eval(model, heldout, window, device, max_windows=64):
    n = min(max_windows, (len(heldout) - 1) // window)
    x = heldout[: n * window + 1]
    inp = x[:-1].view(n, window)
    tgt = x[1:].view(n, window)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(inp).logits
    return F.cross_entropy(logits.float().view(-1, logits.size(-1)), tgt.reshape(-1)).item()


# ----------------------------------------------------------------------------------------------------------


def main():
    global LOG
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=".cache/demo_corpus")
    ap.add_argument("--out", required=True)
    ap.add_argument("--goldens", default=None, help="folder for perplexity.json / greedy.json (default: OUT)")
    ap.add_argument("--test-text", default="tests/data/demo/heldout_sample.txt")
    ap.add_argument("--minutes", type=float, default=6.5, help="training wall-clock budget")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (smoke runs)")
    ap.add_argument("--vocab", type=int, default=6144)
    ap.add_argument("--hidden", type=int, default=320)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=5)
    ap.add_argument("--kv-heads", type=int, default=1)
    ap.add_argument("--intermediate", type=int, default=704)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=192, help="sequences per step")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--num-chats", type=int, default=40000, help="ChatML exchanges made from the corpus")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--eval-every-s", type=float, default=20.0, help="held-out check (best weights kept) period")
    ap.add_argument("--ppl-window", type=int, default=1024)
    ap.add_argument("--ppl-stride", type=int, default=512)
    args = ap.parse_args()
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)
    goldens = args.goldens or args.out
    os.makedirs(goldens, exist_ok=True)
    LOG = open(os.path.join(args.out, "train_log.txt"), "w")
    log("args", vars(args))
    device = "cuda"
    torch.manual_seed(0)
    rng = random.Random(0)

    train_records = read_jsonl_xz(os.path.join(args.corpus, "train.jsonl.xz"))
    heldout_text = open(os.path.join(args.corpus, "heldout.txt"), encoding="utf-8").read()
    plain = plain_documents(train_records)
    chats = chat_documents(train_records, args.num_chats, rng)
    docs = plain + chats
    rng.shuffle(docs)
    log(f"documents: {len(plain)} plain, {len(chats)} chat; {sum(map(len, docs))} chars; "
        f"{time.time() - t_start:.1f}s")
    log("chat example:\n" + chats[0])

    tok = train_tokenizer(plain + chats[: len(chats) // 4], args.vocab, args.out)
    eot, im_end = tok.token_to_id(ENDOFTEXT), tok.token_to_id(IM_END)
    vocab = tok.get_vocab_size()
    encoded = tok.encode_batch(docs)
    stream = []
    for e in encoded:
        stream.extend(e.ids)
        stream.append(eot)
    heldout_ids = tok.encode(heldout_text).ids
    log(f"tokenizer: vocab {vocab}; train tokens {len(stream)}; held-out tokens {len(heldout_ids)}; "
        f"{time.time() - t_start:.1f}s")

    config = LlamaConfig(vocab_size=vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.kv_heads, head_dim=args.hidden // args.heads,
                         max_position_embeddings=args.seq, rms_norm_eps=1e-5, rope_theta=10000.0,
                         tie_word_embeddings=True, bos_token_id=eot, eos_token_id=im_end, pad_token_id=eot,
                         hidden_act="silu", attention_bias=False, mlp_bias=False, initializer_range=0.02)
    model = LlamaForCausalLM(config).to(device)
    num_params = sum(p.numel() for p in model.parameters())
    log(f"model: {num_params} parameters ({num_params * 2 / 2**20:.2f} MiB in bf16)")

    data = torch.tensor(stream, dtype=torch.int64, device=device)
    held = torch.tensor(heldout_ids, dtype=torch.int64, device=device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    step_fn = torch.compile(model) if args.compile else model
    budget_s = args.minutes * 60
    warmup = 100 if not args.max_steps else 2
    t_train = time.time()
    step, tokens_seen, best = 0, 0, (float("inf"), None, 0)
    next_eval = t_train + args.eval_every_s
    while True:
        elapsed = time.time() - t_train
        frac = step / args.max_steps if args.max_steps else elapsed / budget_s
        if frac >= 1:
            break
        lr = args.lr * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(frac, 1))))
        for g in opt.param_groups:
            g["lr"] = lr
        offsets = torch.randint(0, len(data) - args.seq - 1, (args.batch,), device=device)
        idx = offsets.unsqueeze(1) + torch.arange(args.seq + 1, device=device)
        batch = data[idx]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = step_fn(batch[:, :-1]).logits
        loss = F.cross_entropy(logits.float().view(-1, vocab), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens_seen += args.batch * args.seq
        if time.time() >= next_eval or step == 1 or (args.max_steps and step == args.max_steps):
            model.eval()
            val = quick_eval(model, held, args.seq, device)
            model.train()
            if val < best[0]:
                best = (val, {k: v.detach().clone() for k, v in model.state_dict().items()}, step)
            el = time.time() - t_train
            log(f"step {step} lr {lr:.2e} loss {loss.item():.4f} held-out {val:.4f} (ppl {math.exp(val):.2f}) "
                f"tokens {tokens_seen / 1e6:.1f}M epochs {tokens_seen / len(stream):.2f} "
                f"{tokens_seen / el / 1e6:.2f}M tok/s {el:.0f}s")
            next_eval = time.time() + args.eval_every_s
    model.eval()
    final_val = quick_eval(model, held, args.seq, device)
    if final_val > best[0]:
        log(f"final held-out {final_val:.4f} worse than step {best[2]}'s {best[0]:.4f}: keeping step {best[2]}")
        model.load_state_dict(best[1])
    train_seconds = time.time() - t_train
    log(f"trained {step} steps, {tokens_seen / 1e6:.1f}M tokens in {train_seconds:.0f}s")

    # Save in bf16, HF layout.
    model.to(torch.bfloat16).save_pretrained(args.out, safe_serialization=True)
    gen = GenerationConfig(bos_token_id=eot, eos_token_id=[im_end, eot], pad_token_id=eot, do_sample=True,
                           temperature=0.7, top_p=0.9)
    gen.save_pretrained(args.out)
    for extra in ("chat_template.jinja",):
        if os.path.exists(os.path.join(args.out, extra)):
            os.remove(os.path.join(args.out, extra))

    # Reference figures from the saved files, in fp32 as the CPU engine computes.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ref = LlamaForCausalLM.from_pretrained(args.out, dtype=torch.float32).to(device).eval()
    hf_tok = AutoTokenizer.from_pretrained(args.out)
    ids_hf = hf_tok(heldout_text)["input_ids"]
    if ids_hf != heldout_ids:
        log("WARNING: AutoTokenizer ids differ from tokenizers ids on the held-out text")
    nll, count, guide_ppl = sliding_window_nll(ref, ids_hf, args.ppl_window, args.ppl_stride, device)
    model_ppl = math.exp(nll / count)
    big_ppl, big_k = bigram_ppl(stream, ids_hf, vocab)
    log(f"held-out perplexity (window {args.ppl_window}, stride {args.ppl_stride}, {count} scored tokens): "
        f"model {model_ppl:.3f} (guide formula {guide_ppl:.3f}); add-k bigram {big_ppl:.3f} (k={big_k}); "
        f"ratio {model_ppl / big_ppl:.3f}")

    test_text = open(args.test_text, encoding="utf-8").read()
    ids_test = hf_tok(test_text)["input_ids"]
    cases = []
    for window, stride in ((128, 64), (256, 256), (1024, 512)):
        n, c, g = sliding_window_nll(ref, ids_test, window, stride, device)
        cases.append({"window": window, "stride": stride, "tokens": len(ids_test), "scored_tokens": c,
                      "nll_sum": n, "perplexity": math.exp(n / c), "guide_formula_perplexity": g})
    perplexity_golden = {
        "generator": "tools/demo_model/train.py (transformers fp32 from the saved bf16 weights)",
        "text_file": args.test_text, "token_ids": ids_test, "cases": cases,
        "heldout": {"window": args.ppl_window, "stride": args.ppl_stride, "tokens": len(ids_hf),
                    "scored_tokens": count, "perplexity": model_ppl, "guide_formula_perplexity": guide_ppl,
                    "bigram_perplexity": big_ppl, "bigram_k": big_k},
    }
    with open(os.path.join(goldens, "perplexity.json"), "w") as f:
        json.dump(perplexity_golden, f, indent=1)

    # Greedy goldens (fp32) and samples.
    prompts = [("plain", "Genesis 1:1"), ("plain", "LOVE, n."),
               ("chat", [{"role": "user", "content": "Quote John 3:16."}])]
    greedy = []
    for kind, p in prompts:
        if kind == "chat":
            ids = hf_tok.apply_chat_template(p, add_generation_prompt=True, tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
        else:
            ids = hf_tok(p)["input_ids"]
        x = torch.tensor([ids], device=device)
        out = ref.generate(x, do_sample=False, max_new_tokens=24, return_dict_in_generate=True, output_scores=True)
        new = out.sequences[0, len(ids):].tolist()
        margins = []
        for s in out.scores:
            top = torch.topk(s[0].float(), 2).values
            margins.append((top[0] - top[1]).item())
        greedy.append({"kind": kind, "prompt": p, "prompt_ids": ids, "output_ids": new, "margins": margins,
                       "text": hf_tok.decode(new)})
        log(f"greedy [{kind}] {p!r} -> {hf_tok.decode(new)!r} (min margin {min(margins):.4f})")
    with open(os.path.join(goldens, "greedy.json"), "w") as f:
        json.dump({"generator": "tools/demo_model/train.py (transformers fp32 greedy, max_new_tokens 24, eos = "
                                "generation_config eos_token_id)", "cases": greedy}, f, indent=1)

    torch.manual_seed(1)
    sample_prompts = ["Psalms 23:1", "And it came to pass", "WOMAN, n.", "Blessed is the man",
                      [{"role": "user", "content": "Hello"}], [{"role": "user", "content": "Define Politics."}],
                      [{"role": "user", "content": "What does Psalm 23:1 say?"}],
                      [{"role": "user", "content": "Tell me about Psalm 1."}]]
    for p in sample_prompts:
        if isinstance(p, list):
            ids = hf_tok.apply_chat_template(p, add_generation_prompt=True, tokenize=True)
            if hasattr(ids, "keys"):
                ids = ids["input_ids"]
        else:
            ids = hf_tok(p)["input_ids"]
        x = torch.tensor([ids], device=device)
        g = ref.generate(x, do_sample=False, max_new_tokens=80)
        s = ref.generate(x, do_sample=True, temperature=0.7, top_p=0.9, max_new_tokens=80)
        log(f"sample {p!r}\n  greedy : {hf_tok.decode(g[0, len(ids):])!r}\n  sampled: "
            f"{hf_tok.decode(s[0, len(ids):])!r}")

    metrics = {"parameters": num_params, "vocab": vocab, "train_tokens": len(stream),
               "heldout_tokens": len(ids_hf), "steps": step, "tokens_seen": tokens_seen,
               "train_seconds": train_seconds, "best_step": best[2], "heldout_ppl": model_ppl,
               "heldout_ppl_guide_formula": guide_ppl, "bigram_ppl": big_ppl, "bigram_k": big_k,
               "config": {k: getattr(args, k) for k in ("hidden", "layers", "heads", "kv_heads", "intermediate",
                                                          "seq", "batch", "lr")}}
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    log(f"total {time.time() - t_start:.0f}s")


if __name__ == "__main__":
    main()
