#!/usr/bin/env bash
# Installs every Debian 12 package the build and the tests need. Idempotent; uses sudo when not root.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates clang-format ccache clang libclang-rt-14-dev
  nlohmann-json3-dev libfmt-dev libcli11-dev
  libpcre2-dev libonig-dev libutf8proc-dev libsentencepiece-dev sentencepiece
  libgtest-dev libgmock-dev libbenchmark-dev
  libboost-dev libcpp-httplib-dev libcurl4-openssl-dev libssl-dev libxxhash-dev libyaml-cpp-dev
  nodejs npm python3
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's nodejs may already be replaced by a newer one on some machines; accept any node >= 18 on PATH.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -ra missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
