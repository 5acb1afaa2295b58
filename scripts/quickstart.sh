#!/usr/bin/env bash
# The main job on a fresh machine: install deps, build, fetch MNIST, compile the seed MLP.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
scripts/fetch-mnist data/mnist
build/dnnc check models/mnist_mlp.dnn
build/dnnc dump-ir models/mnist_mlp.dnn --after=optimizer --graph=train_step
