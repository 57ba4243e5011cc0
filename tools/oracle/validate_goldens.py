#!/usr/bin/env python3
"""Checks the local transformers oracle against committed goldens: loads each model folder in fp32, recomputes the
last-position logits and the greedy continuation of every golden.json case, and prints the max |logit diff| and
whether the greedy ids match. Exit status 1 when any case differs by more than --tol or in greedy ids.

Usage: PYTHONPATH=/work/oracle/site /usr/bin/python3 tools/oracle/validate_goldens.py tests/data/models/llama ...
"""

import argparse
import json
import os
import sys

import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from make_model_goldens import load_fp32, run_reference  # noqa: E402  (load_fp32 reads 5.x configs on 4.x too)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dirs", nargs="+")
    parser.add_argument("--tol", type=float, default=1e-4)
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    print(f"transformers {transformers.__version__} torch {torch.__version__}")
    ok = True
    for model_dir in args.model_dirs:
        if not os.path.exists(os.path.join(model_dir, "golden.json")):
            continue  # e.g. tests/data/models/pending itself when globbing tests/data/models/*
        with open(os.path.join(model_dir, "golden.json")) as f:
            golden = json.load(f)
        model = load_fp32(model_dir)
        worst = 0.0
        greedy_ok = True
        for case in golden["cases"]:
            logits, greedy, _ = run_reference(model, case["prompt_ids"], len(case["greedy_ids"]))
            worst = max(worst, float((torch.tensor(logits) - torch.tensor(case["last_logits"])).abs().max()))
            greedy_ok &= greedy == case["greedy_ids"]
        good = worst <= args.tol and greedy_ok
        ok &= good
        same = "same" if greedy_ok else "DIFF"
        print(f"{os.path.basename(model_dir.rstrip('/')):18s} max|dlogit|={worst:.3g} greedy={same} "
              f"golden_by=transformers {golden['transformers_version']} {'ok' if good else 'FAIL'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
