#!/usr/bin/env bash
# Builds, on this machine (a GPU is not needed, the CUDA toolkit is), what scripts/gpu-check.sh
# runs on a GPU machine that has the CUDA toolkit, the driver and PyTorch but not dnnc's other
# build dependencies (fmt, CLI11, nlohmann-json, Catch2, OpenBLAS) and no network to fetch them:
# a Release build with the CUDA plugin, stripped, plus the shared libraries its binaries NEED that
# are not part of glibc or CUDA, packed as one archive. The binaries keep this checkout's absolute
# paths (the plugin's build dir, the test cache dir, the source dir), which gpu-check.sh --bundle
# recreates there with a symbolic link.
#
#   scripts/gpu-bundle.sh [--build DIR] [--out FILE] [--jobs N]
#       default: --build build-gpu --out .gpu/dnnc-gpu-bundle.tar.gz
#   then, on the GPU machine:  scripts/gpu-check.sh --bundle .gpu/dnnc-gpu-bundle.tar.gz
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=build-gpu
OUTFILE=.gpu/dnnc-gpu-bundle.tar.gz
JOBS=$(nproc 2>/dev/null || echo 2)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --out) OUTFILE=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "gpu-bundle: unknown option $1" >&2; exit 2 ;;
  esac
done

TARGETS=(dnnc dnnc_cuda cuda_tests cuda_gpu_tests dnnc_gpu_bench)
BINS=(dnnc libdnnc_cuda.so dnnc_gpu_bench tests/cuda/cuda_tests tests/cuda/cuda_gpu_tests)

GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
LAUNCHER=()
command -v ccache >/dev/null 2>&1 && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
echo "gpu-bundle: configure $BUILD (DNNC_CUDA=ON, Release)"
cmake -S . -B "$BUILD" "${GEN[@]}" "${LAUNCHER[@]}" -DDNNC_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
echo "gpu-bundle: build ${TARGETS[*]} (-j$JOBS)"
cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" >/dev/null

SRC=$(pwd -P)
ABS_BUILD=$(cd "$BUILD" && pwd -P)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
# The bundle always unpacks as build-gpu/ next to the sources, so the build dir must be that.
if [[ $ABS_BUILD != "$SRC/build-gpu" ]]; then
  echo "gpu-bundle: the build dir must be $SRC/build-gpu (the binaries record its path), not $ABS_BUILD" >&2
  exit 2
fi
B="$STAGE/build-gpu"
mkdir -p "$B/tests/cuda" "$B/bundle/lib" "$B/bundle/fallback"
for f in "${BINS[@]}"; do
  cp "$BUILD/$f" "$B/$f"
  strip --strip-unneeded "$B/$f"
done

# Shared libraries the binaries NEED beyond glibc and CUDA's (the GPU machine brings its own
# CUDA libraries, matched to its driver). libstdc++/libgcc_s go to fallback/: gpu-check uses them
# only where the machine's own are too old to start the binaries.
for f in "${BINS[@]}"; do
  ldd "$BUILD/$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  case "$name" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libcuda*|libcudart*|libcublas*|libnvrtc*) ;;
    libstdc++.so.*|libgcc_s.so.*) cp -L "$path" "$B/bundle/fallback/$name" ;;
    *) cp -L "$path" "$B/bundle/lib/$name" ;;
  esac
done

max_glibc=$(for f in "${BINS[@]}"; do objdump -T "$BUILD/$f"; done | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
cat >"$B/bundle/env" <<EOF
# written by scripts/gpu-bundle.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)
bundle_source_dir=$SRC
bundle_commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo -dirty)
bundle_built_on="$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(g++ --version | head -1)"
bundle_needs_glibc=$max_glibc
EOF
mkdir -p "$(dirname "$OUTFILE")"
tar -C "$STAGE" -czf "$OUTFILE" build-gpu
echo "gpu-bundle: wrote $OUTFILE ($(du -h "$OUTFILE" | cut -f1)); needs $max_glibc; libs: $(ls "$B/bundle/lib" "$B/bundle/fallback" | grep '\.so' | tr '\n' ' ')"
