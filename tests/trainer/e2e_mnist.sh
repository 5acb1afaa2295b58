#!/usr/bin/env bash
# End to end on the real digits: `dnnc train` runs 200 steps (batch 64, 1.6 epochs) of
# models/mnist_mlp_adam.dnn on data/mnist (scripts/fetch-mnist) and must reach a test accuracy
# well above chance (0.1): above 0.8 (it reaches about 0.9).
# Usage: e2e_mnist.sh DNNC_BINARY   (from the repository root). Exit 77 (skip) without data.
set -euo pipefail
dnnc=$1
data=${DNNC_MNIST_DIR:-data/mnist}
if [ ! -f "$data/train-images-idx3-ubyte" ] && [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: no MNIST in $data (run scripts/fetch-mnist $data; scripts/test.sh does)"
  exit 77
fi
min_acc=0.8
out=$("$dnnc" train models/mnist_mlp_adam.dnn --data "$data" --steps 200 --batch 64 --device "${DNNC_DEVICE:-auto}")
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
