#!/usr/bin/env bash
# Augmentation keeps a recipe in its accuracy band on real digits: 3 epochs of the Adam MLP on
# data/mnist, plain (models/mnist_mlp_adam.dnn) and with random crops (tests/trainer/
# mnist_augment.dnn, padding 2); the augmented run must reach 0.92 and come within 0.02 of the
# plain one (both reach about 0.95), and building its batches must not take longer than the
# train steps themselves (the data time of the summary line).
# Usage: e2e_augment.sh DNNC_BINARY   (from the repository root). Exit 77 (skip) without data.
set -euo pipefail
dnnc=$1
data=${DNNC_MNIST_DIR:-data/mnist}
if [ ! -f "$data/train-images-idx3-ubyte" ] && [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: no MNIST in $data (run scripts/fetch-mnist $data; scripts/test.sh does)"
  exit 77
fi
run() {
  "$dnnc" train "$1" --data "$data" --epochs 3 --device "${DNNC_DEVICE:-auto}"
}
plain_out=$(run models/mnist_mlp_adam.dnn)
aug_out=$(run tests/trainer/mnist_augment.dnn)
echo "$plain_out"
echo "$aug_out"
acc() { printf '%s\n' "$1" | sed -n 's/^test accuracy: \([0-9.]*\) .*/\1/p' | tail -n 1; }
plain=$(acc "$plain_out")
aug=$(acc "$aug_out")
data_s=$(printf '%s\n' "$aug_out" | sed -n 's/.* data \([0-9.]*\) s, train \([0-9.]*\) s.*/\1/p')
train_s=$(printf '%s\n' "$aug_out" | sed -n 's/.* data \([0-9.]*\) s, train \([0-9.]*\) s.*/\2/p')
if [ -z "$plain" ] || [ -z "$aug" ] || [ -z "$data_s" ]; then
  echo "error: dnnc train printed no test accuracy or time split"
  exit 1
fi
if awk -v a="$aug" -v p="$plain" 'BEGIN { exit !(a >= 0.92 && a >= p - 0.02) }'; then
  echo "ok: augmented $aug, plain $plain"
else
  echo "error: augmented accuracy $aug is out of the band (>= 0.92 and >= plain $plain - 0.02)"
  exit 1
fi
if ! awk -v d="$data_s" -v t="$train_s" 'BEGIN { exit !(d <= t) }'; then
  echo "error: building the augmented batches took $data_s s, the train steps $train_s s"
  exit 1
fi
