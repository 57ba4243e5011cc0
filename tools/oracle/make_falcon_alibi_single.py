# Regenerates the falcon_alibi golden with ALiBi counted once. transformers 4.52's FalconModel._update_causal_mask
# folds alibi / sqrt(head_dim) into the causal mask (for SDPA), and the eager FalconAttention adds alibi again:
# eager counts it twice, SDPA (the default) once. Here the mask is built without alibi, so eager adds it once,
# (qk + alibi) * inv_norm_factor, as the SDPA path and the original Falcon-RW code do.
#   PYTHONPATH=/work/oracle/site /usr/bin/python3 tools/oracle/make_falcon_alibi_single.py [OUT]
# writes OUT/pending/falcon_alibi and falcon_alibi_16heads (default OUT /tmp/falcon_alibi_single); the weights are the same as
# make_model_goldens.py's (same seed), only the reference changes. Add the golden's "reference_note" by hand.
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import make_model_goldens as mmg
from transformers.models.falcon import modeling_falcon as mf

original = mf.FalconModel._update_causal_mask


def without_alibi(self, attention_mask, input_tensor, cache_position, past_key_values, output_attentions, head_mask,
                  alibi):
    return original(self, attention_mask, input_tensor, cache_position, past_key_values, output_attentions, head_mask,
                    None)


mf.FalconModel._update_causal_mask = without_alibi
# 16 heads: slopes 2^(-i/2), not powers of two, so Falcon's bfloat16 rounding of slope * key position shows.
mmg.MODEL_SPECS["falcon_alibi_16heads"] = dict(mmg.MODEL_SPECS["falcon_alibi"], seed=5105)
mmg.MODEL_SPECS["falcon_alibi_16heads"]["fields"] = dict(mmg.MODEL_SPECS["falcon_alibi"]["fields"],
                                                         num_attention_heads=16, num_kv_heads=16)
out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/falcon_alibi_single"
sys.argv = ["make_model_goldens.py", "--out", out, "--only", "falcon_alibi", "falcon_alibi_16heads"]
sys.exit(mmg.main())
