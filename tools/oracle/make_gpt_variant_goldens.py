# GPT-style variants of make_model_goldens.py's specs, built with its machinery and checks (reload equality,
# margins >= 1e-2, cached greedy == uncached argmax): Phi with qk_layernorm (LayerNorm with bias over head_dim of
# q and k), GPT-2 with scale_attn_by_inverse_layer_idx, GPTBigCode without multi_query (c_attn per head [q|k|v]).
#   PYTHONPATH=/work/oracle/site /usr/bin/python3 tools/oracle/make_gpt_variant_goldens.py [OUT]
# writes OUT/pending/<name> (default OUT /tmp/gpt_variant_goldens).
import copy
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import make_model_goldens as mmg


def variant(base, name, seed, **fields):
    spec = copy.deepcopy(mmg.MODEL_SPECS[base])
    spec["seed"] = seed
    spec["fields"].update(fields)
    mmg.MODEL_SPECS[name] = spec


variant("phi", "phi_qk_layernorm", 5101, qk_layernorm=True)
variant("gpt2", "gpt2_scaled_by_layer", 5102, scale_attn_by_inverse_layer_idx=True)
variant("gpt_bigcode", "gpt_bigcode_mha", 5103, multi_query=False)
out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/gpt_variant_goldens"
sys.argv = ["make_model_goldens.py", "--out", out, "--only", "phi_qk_layernorm", "gpt2_scaled_by_layer",
            "gpt_bigcode_mha"]
sys.exit(mmg.main())
