#!/usr/bin/env python3
"""Where does bf16 leave a golden model's greedy path, in transformers itself? (Run on the device machine, which has
torch and transformers; scripts/gpu_suite.sh diagnose.)

For each golden case, the prompt followed by the golden greedy tokens (the CPU's and transformers' fp32 path) goes
through transformers once in float32 and once in bfloat16 on the GPU, teacher-forced, and each step prints the fp32
and bf16 argmax with the golden margin. For MoE models it also prints, per step, the smallest distance of any
routing decision to its boundary in fp32: the top-k order gap (top-k vs top-k+1 router logits) and, for PhiMoE's
sparsemixer, the distance of each expert's relative gap to the 2 * jitter_eps mask threshold. A bf16 step that
leaves the path at a margin > 0.1 with a routing decision within bf16's rounding (~0.4% relative) of its boundary is
a routing flip of the reference too, not a kernel bug.

Usage: tools/bf16_divergence_check.py MODEL_DIR [MODEL_DIR...]"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM


def routing_distances(router_logits, config):
    """router_logits: [tokens, experts] fp32. Returns, per token, the smallest distance of a routing decision to its
    boundary: top-k order gap in logits, and for sparsemixer the relative-gap distance to the mask threshold."""
    k = getattr(config, "num_experts_per_tok", 2)
    s, _ = router_logits.sort(dim=-1, descending=True)
    order_gap = s[:, k - 1] - s[:, k] if s.shape[1] > k else torch.full_like(s[:, 0], float("inf"))
    if config.model_type != "phimoe":
        return order_gap, None
    eps2 = 2 * getattr(config, "router_jitter_noise", 0.01)
    dists = []
    scores = router_logits.clone()
    for _ in range(k):  # sparsemixer's stages: the top expert, then the top of the rest
        top, idx = scores.max(dim=-1, keepdim=True)
        factor = router_logits.abs().clamp(min=top)
        rel = (top - router_logits) / factor
        d = (rel - eps2).abs()
        d = d.masked_fill(torch.isinf(scores), float("inf")).scatter(-1, idx, float("inf"))  # not the top itself
        dists.append(d.min(dim=-1).values)
        scores = scores.scatter(-1, idx, float("-inf"))
    return order_gap, torch.stack(dists, -1).min(-1).values


def main():
    for model_dir in sys.argv[1:]:
        golden = json.load(open(f"{model_dir}/golden.json"))
        models = {}
        for dtype in (torch.float32, torch.bfloat16):
            models[dtype] = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=dtype).cuda().eval()
        config = models[torch.float32].config
        moe = hasattr(config, "num_local_experts") or hasattr(config, "num_experts")
        print(f"== {model_dir} ({config.model_type}, moe={moe})")
        for case in golden["cases"]:
            prompt, greedy, margins = case["prompt_ids"], case["greedy_ids"], case["margins"]
            ids = torch.tensor([prompt + greedy[:-1]], device="cuda")
            first = len(prompt) - 1  # the row whose logits pick greedy[0]
            out = {}
            with torch.no_grad():
                for dtype, model in models.items():
                    kw = {"output_router_logits": True} if moe else {}
                    out[dtype] = model(ids, **kw)
            top32 = out[torch.float32].logits[0, first:].float().argmax(-1).tolist()
            top16 = out[torch.bfloat16].logits[0, first:].float().argmax(-1).tolist()
            route = None
            if moe and getattr(out[torch.float32], "router_logits", None) is not None:
                per_layer = [routing_distances(r.float().reshape(ids.shape[1], -1)[first:], config)
                             for r in out[torch.float32].router_logits]
                order = torch.stack([p[0] for p in per_layer]).min(0).values.tolist()
                mask = (torch.stack([p[1] for p in per_layer]).min(0).values.tolist()
                        if per_layer[0][1] is not None else None)
                route = (order, mask)
            print(f"-- prompt of {len(prompt)} tokens")
            for j, want in enumerate(greedy):
                line = f"step {j:2d} golden {want:5d} fp32 {top32[j]:5d} bf16 {top16[j]:5d} margin {margins[j]:.3f}"
                if route:
                    line += f" route_order_gap {route[0][j]:.4f}"
                    if route[1]:
                        line += f" mask_threshold_dist {route[1][j]:.4f}"
                if top16[j] != want:
                    line += "  <- bf16 leaves"
                print(line)


if __name__ == "__main__":
    main()
