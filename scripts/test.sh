#!/usr/bin/env bash
# Builds dnnc (installing dependencies if needed) and runs the whole test suite with CTest.
# `--no-tests=error` makes a test binary that fails to start (and so lists no tests) a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
scripts/fetch-mnist data/mnist || echo "test.sh: could not fetch MNIST; the end-to-end MNIST test will be skipped" >&2
ctest --test-dir build --no-tests=error --output-on-failure --parallel "$(nproc)" "$@"
