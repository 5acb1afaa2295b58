#!/usr/bin/env bash
# Installs dnnc's build and test dependencies from Debian's packages. Idempotent:
# does nothing (and needs no network) when everything is already installed.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libfmt-dev catch2 libcli11-dev
      nlohmann-json3-dev libopenblas-dev zlib1g-dev python3 librsvg2-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
