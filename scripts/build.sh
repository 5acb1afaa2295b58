#!/usr/bin/env bash
# Installs the dependencies (Debian packages, idempotent) and builds dnnc into build/ (or into
# $DNNC_BUILD_DIR, e.g. build-asan for the sanitizer build that scripts/test.sh runs).
# Usage: scripts/build.sh [extra cmake -D options...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
dir="${DNNC_BUILD_DIR:-build}"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
[ -f "$dir/CMakeCache.txt" ] && gen=()  # keep the generator the build dir was made with
cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" --parallel "$(nproc)"
