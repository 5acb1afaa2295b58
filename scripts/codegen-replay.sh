#!/usr/bin/env bash
# Codegen replay (docs/codegen.md): writes the generated source of every model dnnc knows
# (models/ and the test models) for each target into OUT/<target>/, so that a refactor can show
# which kernels it changed: run it before and after, then `diff -r BEFORE AFTER`.
# Usage: scripts/codegen-replay.sh OUT [DNNC]   (DNNC defaults to build/dnnc)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/codegen-replay.sh OUT [DNNC]}"
dnnc="${2:-build/dnnc}"
emits=(cpp cuda)
"$dnnc" compile --help | grep -q 'kir' && emits+=(kir)
models=(models/*.dnn tests/cpu/models/*.dnn tests/trainer/*.dnn tests/passes/layout/*.dnn)
for emit in "${emits[@]}"; do
  mkdir -p "$out/$emit"
  for m in "${models[@]}"; do
    for batch in default 1 3; do
      args=()
      [ "$batch" != default ] && args=(--batch "$batch")
      dir="$out/$emit/b$batch"
      mkdir -p "$dir"
      "$dnnc" compile "$m" --emit="$emit" -o "$dir" "${args[@]}" >/dev/null
    done
  done
done
echo "codegen-replay: wrote $(find "$out" -type f | wc -l) files under $out"
