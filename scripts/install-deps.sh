#!/usr/bin/env bash
# Installs the Debian bookworm packages zerosim builds with, if any is missing (idempotent; no-op when present).
set -euo pipefail
pkgs=(build-essential cmake pkg-config libsimgrid-dev libyaml-cpp-dev catch2 libboost-dev
      libboost-program-options-dev nlohmann-json3-dev libfmt-dev libjemalloc-dev time gnuplot-nox chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "zerosim: installing missing packages: ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "zerosim: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
