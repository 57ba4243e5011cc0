#!/bin/sh
# Installs the public-domain text packages (idempotent) and writes the demo model's corpus to
# .cache/demo_corpus/ (ignored by git): train.jsonl.xz, heldout.jsonl.xz, heldout.txt.
# Only needed to retrain models/demo; CI does not run it.
set -eu
cd "$(dirname "$0")/../.."
packages="diatheke sword-text-kjv sword-text-web sword-comm-mhcc sword-comm-tdavid dict-devil"
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
fi
python3 tools/demo_model/make_corpus.py "${1:-.cache/demo_corpus}"
