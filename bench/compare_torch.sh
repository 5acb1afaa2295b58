#!/usr/bin/env bash
# Times dnnc (cpu backend) against PyTorch, interleaved in one run, on every model of the zoo in
# models/: the train step at the train block's batch, and test-set inference (dnnc eval against
# torch.no_grad()) at batch 1000. Prints medians, ratios, GFLOP/s against the sgemm ceiling, the
# MLPs' GEMM bound, and cold/warm compile times of every zoo model. About 10 minutes.
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
