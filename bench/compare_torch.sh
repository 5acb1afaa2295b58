#!/usr/bin/env bash
# Times dnnc (cpu backend) against PyTorch, interleaved in one run, on the seed MLP (batch 128)
# and the seed CNN (batch 4 and 128); prints medians, ratios, the sgemm ceiling and compile times.
# Installs Debian's python3-torch if missing and builds dnnc first.
# Usage: bench/compare_torch.sh [--rounds N] [--only LABEL] [--json FILE] [--openblas-core env|auto|NAME]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "compare_torch.sh: installing Debian's python3-torch" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-torch >/dev/null
fi
scripts/build.sh >/dev/null
exec "$PY" bench/compare_torch.py --bench build/dnnc_bench --python "$PY" "$@"
