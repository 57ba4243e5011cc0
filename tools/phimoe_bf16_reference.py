#!/usr/bin/env python3
"""PhiMoE in plain torch, in float32 and in bfloat16, teacher-forced on a golden model's greedy path: does the
reference arithmetic itself leave the path in bf16, and does its routing flip? (Run on the device machine, which has
torch; scripts/gpu_suite.sh.)

transformers' own PhiMoE cannot answer for the longrope goldens there: its version ignores short_mscale /
long_mscale (the goldens were made with 4.52, which applies them). This is the 4.52 forward (LayerNorm with bias,
q/k/v/o and lm_head biases, LongRoPE with the golden's inv_freq_long and attention_scaling_long, eager attention with
the softmax in fp32, sparsemixer routing, SiLU experts), written from the published modeling code's description; its
fp32 logits are checked against the golden's before anything is reported.

Per step it prints the fp32 and bf16 argmax, the golden margin, and the first position (prompt or generated) where
the bf16 forward's expert choice or sparsemixer mask differs from the fp32 one.

With --alternatives it writes, for tests/cuda's bf16 rule, the greedy paths of the fp32 reference with one routing
decision within 2^-7 (relative) of its boundary inverted (bf16_alternatives.json beside the golden).

Usage: tools/phimoe_bf16_reference.py MODEL_DIR [MODEL_DIR...]
       tools/phimoe_bf16_reference.py --alternatives MODEL_DIR OUT_JSON"""
import json
import os
import struct
import sys

import torch


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = bytearray(data[a:b])
        assert info["dtype"] in ("BF16", "F32"), info["dtype"]
        dt = torch.bfloat16 if info["dtype"] == "BF16" else torch.float32
        out[name] = torch.frombuffer(raw, dtype=dt).reshape(info["shape"]).clone()
    return out


def sparsemixer(scores, eps, flip=None, dists=None):
    """Returns (ids [T, 2], weights [T, 2], masks [T, 2, E] bool: masked experts of each round). flip: (row, round,
    expert) whose mask decision is inverted; dists: a list that receives, per round, [T, E] the distance of each
    expert's relative gap to the mask threshold (inf for the round's top and the experts already taken)."""
    ids, weights, masks = [], [], []
    remaining = scores.clone()
    for rnd in range(2):
        top, idx = remaining.max(dim=-1, keepdim=True)
        factor = scores.abs().clamp(min=top)
        rel = (top - scores) / factor
        mask = rel > (2 * eps)
        if dists is not None:
            d = (rel - 2 * eps).abs().masked_fill(torch.isinf(remaining), float("inf"))
            dists.append(d.scatter(-1, idx, float("inf")))
        if flip is not None and flip[1] == rnd and flip[0] < mask.shape[0]:  # that row once it exists
            mask = mask.clone()
            mask[flip[0], flip[2]] = ~mask[flip[0], flip[2]]
        gates = torch.softmax(remaining.masked_fill(mask, float("-inf")).float(), dim=-1)
        ids.append(idx)
        weights.append(gates.gather(-1, idx))
        masks.append(mask)
        remaining = remaining.scatter(-1, idx, float("-inf"))
    return torch.cat(ids, -1), torch.cat(weights, -1), torch.stack(masks, 1)


def forward(w, cfg, golden, ids, dtype, variant="plain", flip=None, dists=None):
    """Logits [T, V] fp32, and per layer (expert ids [T, 2], masks [T, 2, E]). variant: how the products are
    rounded, to see how far bf16's last bits alone move the path: "plain" (torch's bf16 GEMM), "padded" (the same
    GEMMs with 93 more rows, as when the prompt is batched with the others: another kernel, other last bits), or
    "f32_products" (products in fp32, rounded once to bf16)."""
    dev = "cuda"
    W = {k: v.to(dev, dtype) for k, v in w.items()}
    T = ids.shape[0]
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg["hidden_size"] // H
    eps = cfg["rms_norm_eps"]
    rope = cfg.get("rope_scaling") or {}
    long = "inv_freq_long" in golden and T > rope.get("original_max_position_embeddings", T)
    inv_freq = torch.tensor(golden["inv_freq_long" if long else "inv_freq"], dtype=torch.float32, device=dev)
    scaling = golden["attention_scaling_long" if long else "attention_scaling"]
    pos = torch.arange(T, device=dev, dtype=torch.float32)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat([freqs, freqs], -1)
    cos, sin = (emb.cos() * scaling).to(dtype), (emb.sin() * scaling).to(dtype)

    def rot(x):  # [heads, T, D]
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rotated * sin

    def ln(x, p):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), W[p + ".weight"], W[p + ".bias"], eps)

    def lin(x, p, bias=True):
        b = W.get(p + ".bias") if bias else None
        if variant == "f32_products":
            return torch.nn.functional.linear(x.float(), W[p + ".weight"].float(),
                                              b.float() if b is not None else None).to(dtype)
        if variant == "padded":
            rows = x.shape[0]
            x = torch.cat([x, torch.zeros(93, x.shape[1], dtype=x.dtype, device=x.device)])
            return torch.nn.functional.linear(x, W[p + ".weight"], b)[:rows]
        return torch.nn.functional.linear(x, W[p + ".weight"], b)

    h = W["model.embed_tokens.weight"][ids]
    routes = []
    causal = torch.full((T, T), float("-inf"), device=dev).triu(1)
    for layer in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{layer}."
        x = ln(h, pre + "input_layernorm")
        q = lin(x, pre + "self_attn.q_proj").view(T, H, D).transpose(0, 1)
        k = lin(x, pre + "self_attn.k_proj").view(T, KV, D).transpose(0, 1)
        v = lin(x, pre + "self_attn.v_proj").view(T, KV, D).transpose(0, 1)
        q, k = rot(q), rot(k)
        k = k.repeat_interleave(H // KV, 0)
        v = v.repeat_interleave(H // KV, 0)
        scores = (q @ k.transpose(1, 2)) / D**0.5 + causal.to(dtype)
        probs = torch.softmax(scores.float(), -1).to(dtype)
        attn = (probs @ v).transpose(0, 1).reshape(T, H * D)
        h = h + lin(attn, pre + "self_attn.o_proj")
        x = ln(h, pre + "post_attention_layernorm")
        router = lin(x, pre + "block_sparse_moe.gate", bias=False)
        layer_dists = [] if dists is not None else None
        eids, ew, masks = sparsemixer(router, cfg.get("router_jitter_noise", 0.01),
                                      flip[1:] if flip is not None and flip[0] == layer else None, layer_dists)
        if dists is not None:
            dists.append(layer_dists)
        routes.append((eids, masks))
        moe = torch.zeros_like(x)
        for e in range(cfg["num_local_experts"]):
            ep = pre + f"block_sparse_moe.experts.{e}."
            sel = eids == e  # [T, 2]
            rows = sel.any(-1)
            if not rows.any():
                continue
            xe = x[rows]
            ye = lin(torch.nn.functional.silu(lin(xe, ep + "w1", False)) * lin(xe, ep + "w3", False), ep + "w2", False)
            gate = (ew * sel).sum(-1)[rows].to(dtype)
            moe[rows] += ye * gate[:, None]
        h = h + moe
    h = ln(h, "model.norm")
    return lin(h, "lm_head").float(), routes


kNearTie = 2.0**-7  # two bf16 roundings of a relative gap


def greedy_with_flip(w, cfg, golden, prompt, steps, flip):
    """The fp32 reference's greedy continuation (EOS suppressed, as min_new_tokens does) with one routing decision
    inverted: its tokens and margins."""
    ids, margins = list(prompt), []
    eos = golden.get("eos_token_id")
    for _ in range(steps):
        with torch.no_grad():
            logits, _ = forward(w, cfg, golden, torch.tensor(ids, device="cuda"), torch.float32, flip=flip)
        last = logits[-1].clone()
        if eos is not None:
            for e in eos if isinstance(eos, list) else [eos]:
                last[e] = float("-inf")
        top2 = last.topk(2)
        ids.append(top2.indices[0].item())
        margins.append((top2.values[0] - top2.values[1]).item())
    return ids[len(prompt):], margins


def alternatives(w, cfg, golden):
    """Per case, the greedy paths with one fp32 routing decision within kNearTie of its boundary (on the golden path's
    rows that pick its tokens) inverted, those that differ from the golden path."""
    out = []
    for case in golden["cases"]:
        prompt, greedy = case["prompt_ids"], case["greedy_ids"]
        ids = torch.tensor(prompt + greedy[:-1], device="cuda")
        dists = []
        with torch.no_grad():
            forward(w, cfg, golden, ids, torch.float32, dists=dists)
        paths = []
        for layer, rounds in enumerate(dists):
            for rnd, d in enumerate(rounds):
                for row, e in (d < kNearTie).nonzero().tolist():
                    flip = (layer, row, rnd, e)
                    alt, margins = greedy_with_flip(w, cfg, golden, prompt, len(greedy), flip)
                    print(f"   near-tie layer {layer} position {row} round {rnd} expert {e} "
                          f"(relative distance {d[row, e].item():.5f}): {'same path' if alt == greedy else alt}")
                    if alt != greedy:
                        paths.append({"flip": {"layer": layer, "position": row, "round": rnd, "expert": e},
                                      "relative_distance": d[row, e].item(), "greedy_ids": alt, "margins": margins})
        if paths:
            out.append({"prompt_ids": prompt, "paths": paths})
    return out


def main():
    if sys.argv[1] == "--alternatives":
        # --alternatives MODEL_DIR OUT_JSON: the paths a bf16 engine may legitimately follow (tests/cuda).
        model_dir, path = sys.argv[2], sys.argv[3]
        golden = json.load(open(f"{model_dir}/golden.json"))
        cfg = json.load(open(f"{model_dir}/config.json"))
        cases = alternatives(load_safetensors(f"{model_dir}/model.safetensors"), cfg, golden)
        with open(path, "w") as f:
            json.dump({"source": "tools/phimoe_bf16_reference.py --alternatives (plain-torch PhiMoE in fp32, checked "
                                 "against golden.json's logits)", "near_tie_relative_distance": kNearTie,
                       "cases": cases}, f, indent=1)
            f.write("\n")
        return
    for model_dir in sys.argv[1:]:
        golden = json.load(open(f"{model_dir}/golden.json"))
        cfg = json.load(open(f"{model_dir}/config.json"))
        w = load_safetensors(f"{model_dir}/model.safetensors")
        print(f"== {model_dir}")
        for case in golden["cases"]:
            prompt, greedy, margins = case["prompt_ids"], case["greedy_ids"], case["margins"]
            ids = torch.tensor(prompt + greedy[:-1], device="cuda")
            first = len(prompt) - 1
            with torch.no_grad():
                l32, r32 = forward(w, cfg, golden, ids, torch.float32)
                l16, r16 = forward(w, cfg, golden, ids, torch.bfloat16)
            want = torch.tensor(case["last_logits"], device="cuda")
            err = (l32[first] - want).abs().max().item()
            print(f"-- prompt of {len(prompt)} tokens: fp32 last prompt logits within {err:.2e} of the golden")
            # The first position whose bf16 routing (ids or masks, any layer) differs from fp32's.
            flip = None
            for layer, ((i32, m32), (i16, m16)) in enumerate(zip(r32, r16)):
                diff = ((i32 != i16).any(-1) | (m32 != m16).flatten(1).any(-1)).nonzero()
                if len(diff):
                    p = diff[0].item()
                    flip = min(flip, (p, layer)) if flip else (p, layer)
            if flip:
                where = f"prompt position {flip[0]}" if flip[0] < first else f"the row of step {flip[0] - first}"
                print(f"   first bf16 routing difference: layer {flip[1]}, {where}")
            else:
                print("   bf16 routing equals fp32's at every position")
            for variant in ("padded", "f32_products"):
                with torch.no_grad():
                    lv, _ = forward(w, cfg, golden, ids, torch.bfloat16, variant)
                topv = lv[first:].argmax(-1).tolist()
                leaves = [j for j, g in enumerate(greedy) if topv[j] != g]
                print(f"   bf16 {variant}: leaves the path at steps {leaves} (margins "
                      f"{[round(margins[j], 3) for j in leaves]})")
            # The fp32 mask decisions nearest their threshold up to the row of the first step where a bf16 kernel
            # was seen to leave the path (TACO_FLIP_UNTIL_STEP), each inverted alone: does one flip move that step?
            until = int(os.environ.get("TACO_FLIP_UNTIL_STEP", "-1"))
            if until >= 0 and len(prompt) + until <= ids.shape[0]:
                dists = []
                with torch.no_grad():
                    forward(w, cfg, golden, ids, torch.float32, dists=dists)
                cands = []
                for layer, rounds in enumerate(dists):
                    for rnd, d in enumerate(rounds):
                        d = d[: first + until + 1]
                        for flat in d.flatten().argsort()[:4].tolist():
                            row, e = divmod(flat, d.shape[1])
                            cands.append((d[row, e].item(), layer, row, rnd, e))
                for dist, layer, row, rnd, e in sorted(cands)[:6]:
                    with torch.no_grad():
                        lf, _ = forward(w, cfg, golden, ids, torch.float32, flip=(layer, row, rnd, e))
                    step = lf[first + until]
                    top2 = step.topk(2)
                    print(f"   flip layer {layer} row {row} (step {row - first}) round {rnd} expert {e} "
                          f"(relative distance {dist:.5f}): step {until} picks {top2.indices[0].item()} "
                          f"(margin {(top2.values[0] - top2.values[1]).item():.3f}, golden {greedy[until]})")
            top32 = l32[first:].argmax(-1).tolist()
            top16 = l16[first:].argmax(-1).tolist()
            for j, g in enumerate(greedy):
                s16 = l16[first + j].topk(2).values
                note = "  <- bf16 leaves" if top16[j] != g else ""
                print(f"step {j:2d} golden {g:4d} fp32 {top32[j]:4d} bf16 {top16[j]:4d} margin {margins[j]:.3f} "
                      f"bf16 margin {(s16[0] - s16[1]).item():.3f}{note}")


if __name__ == "__main__":
    main()
