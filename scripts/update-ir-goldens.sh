#!/usr/bin/env bash
# Rewrites tests/passes/golden/<model>.ir from the current compiler (review `git diff` after!).
set -euo pipefail
cd "$(dirname "$0")/.."
for f in models/*.dnn; do
  ${DNNC:-build/dnnc} dump-ir "$f" --after=schedule > "tests/passes/golden/$(basename "$f" .dnn).ir"
done
