#!/usr/bin/env bash
# The main job on a fresh machine: install deps, build, fetch MNIST, train the seed MLP
# (models/mnist_mlp.dnn: SGD lr 0.001 momentum 0.9, batch 128, 5 epochs, seed 1) on the best
# available device and print its test accuracy (the last line, e.g. `test accuracy: 0.8080 (1616/2000)`).
# Extra arguments go to `dnnc train`, e.g. `scripts/quickstart.sh --seed 2` or `--device reference`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
scripts/fetch-mnist data/mnist
build/dnnc train models/mnist_mlp.dnn --data data/mnist --device auto "$@"
