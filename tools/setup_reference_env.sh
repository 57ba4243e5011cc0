#!/usr/bin/env bash
# Builds the local transformers "oracle" under /work/oracle (never inside the repo) on a Debian 12 machine without
# pip: Debian's torch 1.13 (CPU) + transformers and huggingface_hub from git snapshots + a pure-Python safetensors
# stand-in (tools/oracle/safetensors_shim.py) + an import-only tokenizers stub (tools/oracle/tokenizers_stub.py)
# + a small torch-2 compatibility layer (tools/oracle/torch_compat.py).
#
# Usage: tools/setup_reference_env.sh TRANSFORMERS_GIT_DIR TRANSFORMERS_COMMIT HUB_GIT_DIR HUB_TAG \
#            ACCELERATE_GIT_DIR ACCELERATE_TAG [ORACLE_DIR]
#   TRANSFORMERS_GIT_DIR  a git dir holding transformers history (any full-history fork works; the upstream mirror
#                         may be too large to fetch), e.g. /work/.mirror/macorisd+transformers-qwen3/repo
#   TRANSFORMERS_COMMIT   e.g. d1b92369ca (upstream main at "v4.52.0.dev0", the v4.51 branch point: Qwen3, Gemma3)
#   HUB_GIT_DIR           a git dir of huggingface_hub, e.g. /work/.mirror/huggingface+huggingface_hub/repo
#   HUB_TAG               e.g. v0.30.2
#   ACCELERATE_GIT_DIR    a git dir of accelerate (transformers 4.51 loads checkpoints through it), e.g.
#                         /work/.mirror/huggingface+accelerate/repo
#   ACCELERATE_TAG        e.g. v1.0.1 (the last line that still supports torch 1.x)
# Optional, for the remote-code families (tools/oracle/make_remote_goldens.py): EINOPS_GIT_DIR=<git dir of
# arogozhnikov/einops> (tag v0.7.0 is used; Qwen v1's modeling code needs einops, Debian 12 has no package), and
# the published modeling code, extracted unchanged to ORACLE_DIR/remote/<name> (never into the repository):
#   INTERNLM_GIT_DIR (github:InternLM/InternLM), CHATGLM3_GIT_DIR (github:THUDM/ChatGLM3),
#   BAICHUAN7B_GIT_DIR (github:baichuan-inc/Baichuan-7B), QWEN7B_GIT_DIR (github:zhangningboo/Qwen-7B, a git
#   mirror of the Qwen/Qwen-7B model repository), INTERNVL_GIT_DIR (github:OpenGVLab/InternVL: its InternLM2 copy),
#   BAICHUAN2_13B_GIT_DIR (github:jrd77/Baichuan2-13B-Chat, a git mirror of that model repository).
# Then: PYTHONPATH=/work/oracle/site /usr/bin/python3 tools/make_model_goldens.py ...
#   (/usr/bin/python3: the Debian python that python3-torch is installed for)
set -euo pipefail
if [ $# -lt 6 ]; then
    sed -n 2,26p "$0"
    exit 2
fi
tf_git=$1
tf_commit=$2
hub_git=$3
hub_tag=$4
acc_git=$5
acc_tag=$6
oracle=${7:-/work/oracle}
here=$(cd "$(dirname "$0")" && pwd)

apt-get install -y python3-torch python3-numpy python3-yaml python3-regex python3-tqdm python3-filelock \
    python3-packaging python3-requests python3-fsspec python3-typing-extensions python3-psutil >/dev/null

site=$oracle/site
rm -rf "$site" "$oracle/src"
mkdir -p "$site" "$oracle/src/transformers" "$oracle/src/hub" "$oracle/src/accelerate"
git --git-dir="$tf_git" archive "$tf_commit" src/transformers | tar -x -C "$oracle/src/transformers"
git --git-dir="$hub_git" archive "$hub_tag" src/huggingface_hub | tar -x -C "$oracle/src/hub"
ln -s "$oracle/src/transformers/src/transformers" "$site/transformers"
echo "huggingface/transformers@$(git --git-dir="$tf_git" rev-parse "$tf_commit")" >"$site/transformers/ORACLE_SOURCE"
ln -s "$oracle/src/hub/src/huggingface_hub" "$site/huggingface_hub"
git --git-dir="$acc_git" archive "$acc_tag" src/accelerate | tar -x -C "$oracle/src/accelerate"
ln -s "$oracle/src/accelerate/src/accelerate" "$site/accelerate"

mkdir -p "$site/safetensors"
cp "$here/oracle/safetensors_shim.py" "$site/safetensors/torch.py"
cat >"$site/safetensors/__init__.py" <<'PY'
from .torch import safe_open  # noqa: F401
__version__ = "0.4.5"
PY
mkdir -p "$site/tokenizers"
for sub in __init__ decoders normalizers pre_tokenizers processors models trainers; do
    cp "$here/oracle/tokenizers_stub.py" "$site/tokenizers/$sub.py"
done
if [ -n "${EINOPS_GIT_DIR:-}" ]; then
    mkdir -p "$oracle/src/einops"
    git --git-dir="$EINOPS_GIT_DIR" archive v0.7.0 einops | tar -x -C "$oracle/src/einops"
    ln -s "$oracle/src/einops/einops" "$site/einops"
fi
# xformers: Baichuan-7B's published modeling code imports it at module level for its training-only attention path.
mkdir -p "$site/xformers"
for sub in __init__ ops; do
    cp "$here/oracle/tokenizers_stub.py" "$site/xformers/$sub.py"
done
cp "$here/oracle/torch_compat.py" "$site/sitecustomize.py"

# remote_code NAME GIT_DIR COMMIT PATH...: the files at COMMIT, flattened into $oracle/remote/NAME.
remote_code() {
    local name=$1 git_dir=$2 commit=$3
    shift 3
    mkdir -p "$oracle/remote/$name"
    touch "$oracle/remote/$name/__init__.py"
    for path in "$@"; do
        git --git-dir="$git_dir" show "$commit:$path" >"$oracle/remote/$name/$(basename "$path")"
    done
}
rm -rf "$oracle/remote"  # rebuilt from scratch: only the families whose *_GIT_DIR is set this run
if [ -n "${INTERNLM_GIT_DIR:-}" ]; then
    remote_code internlm "$INTERNLM_GIT_DIR" aaaf4d7 tools/transformers/modeling_internlm.py \
        tools/transformers/configuration_internlm.py
fi
if [ -n "${CHATGLM3_GIT_DIR:-}" ]; then
    remote_code chatglm3 "$CHATGLM3_GIT_DIR" b0b4e8a model/modeling_chatglm.py model/configuration_chatglm.py
fi
if [ -n "${BAICHUAN7B_GIT_DIR:-}" ]; then
    remote_code baichuan7b "$BAICHUAN7B_GIT_DIR" 5a39915 models/modeling_baichuan.py models/configuration_baichuan.py
fi
if [ -n "${QWEN7B_GIT_DIR:-}" ]; then
    remote_code qwen "$QWEN7B_GIT_DIR" d4efd21 modeling_qwen.py configuration_qwen.py qwen_generation_utils.py \
        cpp_kernels.py
fi
if [ -n "${INTERNVL_GIT_DIR:-}" ]; then
    remote_code internlm2 "$INTERNVL_GIT_DIR" f3fc71c internvl_chat/internvl/model/internlm2/modeling_internlm2.py \
        internvl_chat/internvl/model/internlm2/configuration_internlm2.py
fi
if [ -n "${BAICHUAN2_13B_GIT_DIR:-}" ]; then
    remote_code baichuan2_13b "$BAICHUAN2_13B_GIT_DIR" c6f8592 modeling_baichuan.py configuration_baichuan.py \
        generation_utils.py quantizer.py
fi

# importlib.metadata version records for transformers' import-time dependency checks.
tf_version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$site/transformers/__init__.py")
hub_version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$site/huggingface_hub/__init__.py")
acc_version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$site/accelerate/__init__.py")
for pair in "transformers $tf_version" "huggingface_hub $hub_version" "safetensors 0.4.5" "accelerate $acc_version"; do
    set -- $pair
    mkdir -p "$site/$1-$2.dist-info"
    printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' "$1" "$2" >"$site/$1-$2.dist-info/METADATA"
done
echo "oracle ready: PYTHONPATH=$site /usr/bin/python3 ...  (transformers $tf_version, huggingface_hub $hub_version)"
PYTHONPATH=$site /usr/bin/python3 -c \
    'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
