#!/usr/bin/env bash
# Peak RSS of `dnnc train --steps 20` and `dnnc eval` (cpu backend) against PyTorch's equivalent
# loops, side by side in one run (bench/memory_bench.py has the details).
# Installs Debian's python3-torch if missing and builds dnnc first.
# Usage: bench/memory_bench.sh [--rounds N] [--case MODEL:BATCH]... [--json FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "memory_bench.sh: installing Debian's python3-torch" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-torch >/dev/null
fi
scripts/build.sh >/dev/null
exec "$PY" bench/memory_bench.py --dnnc build/dnnc --python "$PY" "$@"
