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
# Then: PYTHONPATH=/work/oracle/site /usr/bin/python3 tools/make_model_goldens.py ...
#   (/usr/bin/python3: the Debian python that python3-torch is installed for)
set -euo pipefail
if [ $# -lt 6 ]; then
    sed -n 2,17p "$0"
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
cp "$here/oracle/torch_compat.py" "$site/sitecustomize.py"

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
