#!/usr/bin/env bash
# End to end on the real digits: `dnnc train` runs a few hundred steps of models/mnist_mlp.dnn
# on data/mnist (scripts/fetch-mnist) and must reach a test accuracy well above chance (0.1).
# Usage: e2e_mnist.sh DNNC_BINARY   (from the repository root). Exit 77 (skip) without data.
set -euo pipefail
dnnc=$1
data=${DNNC_MNIST_DIR:-data/mnist}
if [ ! -f "$data/train-images-idx3-ubyte" ] && [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: no MNIST in $data (run scripts/fetch-mnist $data; scripts/test.sh does)"
  exit 77
fi
min_acc=0.6
out=$("$dnnc" train models/mnist_mlp.dnn --data "$data" --steps "${DNNC_E2E_STEPS:-200}" --batch 64 --device auto)
echo "$out"
acc=$(printf '%s\n' "$out" | sed -n 's/^test accuracy: \([0-9.]*\) .*/\1/p' | tail -n 1)
if [ -z "$acc" ]; then
  echo "error: dnnc train printed no test accuracy"
  exit 1
fi
if awk -v a="$acc" -v m="$min_acc" 'BEGIN { exit !(a > m) }'; then
  echo "ok: test accuracy $acc > $min_acc"
else
  echo "error: test accuracy $acc is not above $min_acc"
  exit 1
fi
