#!/usr/bin/env bash
# One command for a GPU machine (CUDA 13 toolkit + driver, PyTorch in python3, no network):
# builds dnnc with the CUDA plugin, checks no binary NEEDs libcuda.so.1, runs the CPU-side CUDA
# tests and the [gpu] tests, then benchmarks one training epoch (60k synthetic samples) of the
# seed MLP (batch 128) and CNN (batch 4, 128): dnnc vs PyTorch (seed-style DataLoader loop,
# eager with data on the GPU, torch.compile), and prints a table, then each dnnc kernel's time
# against its memory-bandwidth floor. Target: under 6 minutes.
#
#   scripts/gpu-check.sh [--build DIR] [--jobs N] [--samples N] [--budget S] [--skip-build]
#                        [--bundle FILE] [--skip-cpu-tests] [--dry-run]
#
# --bundle FILE: use binaries built elsewhere by scripts/gpu-bundle.sh instead of building (for a
# GPU machine without fmt, CLI11, nlohmann-json, Catch2 or OpenBLAS): unpacks FILE as build-gpu/,
# links the path the binaries were built at to this checkout, and puts the bundle's libraries and
# this machine's CUDA libraries on LD_LIBRARY_PATH. --skip-cpu-tests: leave out cuda_tests (the
# CPU-side CUDA tests, which CI runs on every change anyway).
#
# --dry-run: for machines without a GPU: the same steps, but GPU-only failures are reported as
# "n/a" instead of failing the script (use it to check the script itself). Benchmarks that
# would start after --budget seconds (default 300) are skipped as n/a. Results go to
# DIR/gpu-check/results.jsonl; the table is also written to DIR/gpu-check/table.md.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
BUILD=build-gpu
JOBS=$(nproc 2>/dev/null || echo 4)
SAMPLES=60000
SKIP_BUILD=0
DRY_RUN=0
BUDGET=300
BUNDLE=""
CPU_TESTS=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --samples) SAMPLES=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --skip-build) SKIP_BUILD=1; shift ;;
    --bundle) BUNDLE=$2; shift 2 ;;
    --skip-cpu-tests) CPU_TESTS=0; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
  esac
done

T0=$SECONDS
OUT="$BUILD/gpu-check"
FAILED=()
log() { printf '[gpu-check %4ds] %s\n' $((SECONDS - T0)) "$*"; }
fail() {
  FAILED+=("$1")
  log "FAILED: $1"
}

# ---- 0. the machine -------------------------------------------------------------------------
log "machine: $(uname -m), $(nproc 2>/dev/null) cores, $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(ldd --version 2>/dev/null | head -1)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/  gpu: /'
else
  log "nvidia-smi not found (no driver?)"
fi
PY=python3
if ! command -v "$PY" >/dev/null 2>&1; then PY=""; fi

# The CUDA libraries the plugin NEEDs (it records /usr/local/cuda/lib of the build machine): found
# through ldconfig, the toolkit's usual folders, or PyTorch's nvidia wheels.
cuda_lib_dirs() {
  local lib dir site
  site=$([[ -n $PY ]] && "$PY" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
  for lib in libcudart.so.13 libnvrtc.so.13 libcublasLt.so.13; do
    dir=$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l {print $NF; exit}')
    [[ -z $dir ]] && dir=$(find -L /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
      /usr/local/cuda-13*/lib64 $site -name "$lib" 2>/dev/null | head -1)
    [[ -n $dir ]] && dirname "$dir"
  done | sort -u | tr '\n' ':'
}
CUDA_LIBS=$(cuda_lib_dirs)
log "CUDA libraries: ${CUDA_LIBS:-none found}"
export LD_LIBRARY_PATH="${CUDA_LIBS}${LD_LIBRARY_PATH:-}"

# ---- 1. build (or unpack a bundle) ----------------------------------------------------------
if [[ -n $BUNDLE ]]; then
  SKIP_BUILD=1
  BUILD=build-gpu
  tmp=$(mktemp -d)
  if ! tar -C "$tmp" -xzf "$BUNDLE"; then log "cannot unpack $BUNDLE"; exit 1; fi
  # shellcheck disable=SC1091
  . "$tmp/build-gpu/bundle/env"
  log "bundle: commit $bundle_commit, built on $bundle_built_on, needs $bundle_needs_glibc"
  here=$(pwd -P)
  if [[ $(realpath -m "$bundle_source_dir") != "$here" ]]; then
    if [[ -e $bundle_source_dir && ! -L $bundle_source_dir ]]; then
      log "the bundle was built at $bundle_source_dir, which exists here and is not this checkout"
      exit 1
    fi
    mkdir -p "$(dirname "$bundle_source_dir")" && ln -sfn "$here" "$bundle_source_dir" || exit 1
    log "linked $bundle_source_dir -> $here (the binaries' recorded paths)"
  fi
  rm -rf build-gpu && mv "$tmp/build-gpu" build-gpu && rm -rf "$tmp"
  export LD_LIBRARY_PATH="$here/build-gpu/bundle/lib:$LD_LIBRARY_PATH"
  if ! start_err=$("$BUILD/dnnc" --version 2>&1 >/dev/null); then
    log "the bundle's dnnc does not start ($start_err); trying its libstdc++"
    export LD_LIBRARY_PATH="$here/build-gpu/bundle/fallback:$LD_LIBRARY_PATH"
    if ! start_err=$("$BUILD/dnnc" --version 2>&1 >/dev/null); then
      log "the bundle's dnnc does not start: $start_err"
      exit 1
    fi
  fi
  log "bundle ok: $("$BUILD/dnnc" --version 2>&1 | head -1)"
fi
if [[ $SKIP_BUILD -eq 0 ]]; then
  GEN=()
  if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi
  LAUNCHER=()
  if command -v ccache >/dev/null 2>&1; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  log "configure $BUILD (DNNC_CUDA=ON, Release)"
  if ! cmake -S . -B "$BUILD" "${GEN[@]}" "${LAUNCHER[@]}" -DDNNC_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
      -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" >"$BUILD.configure.log" 2>&1; then
    tail -30 "$BUILD.configure.log"
    log "configure failed (log: $BUILD.configure.log)"
    exit 1
  fi
  grep 'dnnc: CUDA' "$BUILD.configure.log" | sed 's/^/  /'
  log "build (-j$JOBS): dnnc, the plugin, CUDA tests, dnnc_gpu_bench"
  if ! timeout 300 cmake --build "$BUILD" -j "$JOBS" --target dnnc dnnc_cuda cuda_tests cuda_gpu_tests \
      dnnc_gpu_bench >"$BUILD.build.log" 2>&1; then
    grep -E 'error|FAILED' "$BUILD.build.log" | head -30
    log "build failed (log: $BUILD.build.log)"
    exit 1
  fi
fi
mkdir -p "$OUT"
: >"$OUT/results.jsonl"

# ---- 2. no binary NEEDs the driver ----------------------------------------------------------
if ! command -v readelf >/dev/null 2>&1; then
  log "readelf not found: NEEDED check left to CI (tests/cuda/check_no_libcuda.sh)"
else
log "readelf: no NEEDED libcuda.so.1"
tests/cuda/check_no_libcuda.sh "$BUILD/dnnc" "$BUILD/libdnnc_cuda.so" "$BUILD/tests/cuda/cuda_tests" \
  "$BUILD/tests/cuda/cuda_gpu_tests" "$BUILD/dnnc_gpu_bench" | sed 's/^/  /'
[[ ${PIPESTATUS[0]} -eq 0 ]] || fail "a binary NEEDs libcuda.so.1"
fi

# ---- 3. tests -------------------------------------------------------------------------------
if [[ $CPU_TESTS -eq 1 ]]; then
  log "CPU-side CUDA tests (NVRTC for sm_80/sm_90, printer, cache, plugin)"
  timeout 180 "$BUILD/tests/cuda/cuda_tests" >"$OUT/cuda_tests.log" 2>&1
  rc=$?
  tail -4 "$OUT/cuda_tests.log" | sed 's/^/  /'
  [[ $rc -eq 0 ]] || fail "cuda_tests (rc $rc, log $OUT/cuda_tests.log)"
fi

log "[gpu] tests (each model vs the reference interpreter, PyTorch goldens, resident training)"
timeout 150 "$BUILD/tests/cuda/cuda_gpu_tests" --durations yes >"$OUT/gpu_tests.log" 2>&1
rc=$?
tail -4 "$OUT/gpu_tests.log" | sed 's/^/  /'
if [[ $rc -eq 77 ]]; then
  if [[ $DRY_RUN -eq 1 ]]; then log "[gpu] tests skipped (no usable GPU; --dry-run)"; else fail "[gpu] tests skipped: no usable GPU"; fi
elif [[ $rc -ne 0 ]]; then
  fail "[gpu] tests (rc $rc, log $OUT/gpu_tests.log)"
fi

# The user's path end to end: `dnnc train` on real MNIST digits (scripts/fetch-mnist) with the
# resident CUDA trainer; the cpu backend gives `test accuracy: 0.8080 (1616/2000)` at seed 1.
if [[ -f data/mnist/train-images-idx3-ubyte ]]; then
  log "dnnc train models/mnist_mlp.dnn --data data/mnist --device cuda"
  timeout 90 "$BUILD/dnnc" train models/mnist_mlp.dnn --data data/mnist --device cuda >"$OUT/train.log" 2>&1
  rc=$?
  grep -E '^(device|dnnc:|warning|error)|done|test accuracy' "$OUT/train.log" | tail -6 | sed 's/^/  /'
  if [[ $rc -ne 0 && $DRY_RUN -eq 1 ]]; then log "dnnc train --device cuda: n/a (--dry-run)"
  elif [[ $rc -ne 0 ]]; then fail "dnnc train --device cuda (rc $rc, log $OUT/train.log)"; fi
else
  log "data/mnist not here: no end-to-end dnnc train (scripts/fetch-mnist data/mnist)"
fi

# ---- 4. benchmarks --------------------------------------------------------------------------
# bench NAME TIMEOUT CMD...: one JSON line into results.jsonl, or an n/a line with the reason.
bench() {
  local name=$1 limit=$2
  shift 2
  local line rc
  if ((SECONDS - T0 > BUDGET)); then
    echo "{\"impl\": \"$name\", \"error\": \"skipped: past the ${BUDGET}s budget\", \"model\": \"$BM\", \"batch\": $BB}" >>"$OUT/results.jsonl"
    log "  $name: n/a (skipped: past the ${BUDGET}s budget)"
    return
  fi
  line=$(timeout "$limit" "$@" 2>"$OUT/bench.err" | tail -1)
  rc=${PIPESTATUS[0]}
  if [[ $rc -eq 0 && $line == "{"* ]]; then
    echo "$line" >>"$OUT/results.jsonl"
    log "  $name: $line"
    # DNNC_CUBLASLT_EPILOGUES=log: which activation epilogues cuBLASLt took
    # (and with DNNC_CUBLASLT_ALGO=tune, each candidate algorithm's time)
    grep -E 'dnnc: cuda: .*(cuBLASLt epilogue|tuned, chose)' "$OUT/bench.err" | sort -u | sed 's/^/    /'

  else
    local why
    why=$(tail -1 "$OUT/bench.err" | sed 's/["\\]//g' | cut -c1-160)
    [[ $rc -eq 124 ]] && why="timed out after ${limit}s"
    echo "{\"impl\": \"$name\", \"error\": \"${why:-exit $rc}\", \"model\": \"$BM\", \"batch\": $BB}" >>"$OUT/results.jsonl"
    log "  $name: n/a ($why)"
  fi
}

# Most important first, so that --budget cuts the least: dnnc and the two eager PyTorch loops on
# each config, then torch.compile (slow to start), then the epilogue A/B.
declare -A MODEL_FILE=([mlp]=mnist_mlp [cnn]=cifar_cnn)
CONFIGS=("mlp 128" "cnn 4" "cnn 128")
run_dnnc() {  # run_dnnc LABEL EPILOGUES [extra args]; $ALGO: DNNC_CUBLASLT_ALGO
  local label=$1 epi=$2
  shift 2
  DNNC_CUBLASLT_ALGO=${ALGO:-heuristic} DNNC_CUBLASLT_EPILOGUES=$epi bench "$label" 60 "$BUILD/dnnc_gpu_bench" "models/${MODEL_FILE[$BM]}.dnn" "$BB" \
    --samples "$SAMPLES" "$@"
}
run_torch() { bench "torch-$1" 75 "$PY" bench/gpu/torch_gpu_bench.py "$BM" "$BB" "$1" --samples "$SAMPLES"; }
for cfg in "${CONFIGS[@]}"; do
  read -r BM BB <<<"$cfg"
  log "benchmark $BM batch $BB, $SAMPLES samples"
  run_dnnc dnnc log --epochs 3 --kernels "$OUT/kernels-$BM-$BB.md"
  if [[ -n $PY ]]; then
    run_torch seed
    run_torch eager
  else
    log "  python3 not found: no PyTorch numbers"
  fi
done
for cfg in "${CONFIGS[@]}"; do
  read -r BM BB <<<"$cfg"
  log "benchmark $BM batch $BB: GEMM algorithms tuned (DNNC_CUBLASLT_ALGO=tune) instead of the heuristic's first"
  ALGO=tune run_dnnc dnnc-tuned log --epochs 3 --label dnnc-tuned
done
BM=mlp BB=128
log "benchmark mlp batch 128: relu/drelu as generated kernels instead of cuBLASLt epilogues"
run_dnnc dnnc-epilogues-off off --epochs 3 --label dnnc-epilogues-off
log "benchmark mlp batch 128: --tf32 (cuBLASLt GEMMs in TF32)"
run_dnnc dnnc-tf32 on --epochs 3 --tf32 --label dnnc-tf32
ALGO=tune run_dnnc dnnc-tf32-tuned log --epochs 3 --tf32 --label dnnc-tf32-tuned
if [[ -n $PY ]]; then
  for cfg in "${CONFIGS[@]}"; do
    read -r BM BB <<<"$cfg"
    log "benchmark $BM batch $BB: torch.compile"
    run_torch compile
  done
fi

# ---- 5. table -------------------------------------------------------------------------------
if [[ -n $PY ]]; then
  "$PY" - "$OUT/results.jsonl" <<'PYEOF' | tee "$OUT/table.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
names = {"MnistMLP": "mlp", "CifarCNN": "cnn"}
by = {}
for r in rows:
    key = (names.get(r.get("model"), r.get("model")), r.get("batch"))
    by.setdefault(key, {})[r["impl"]] = r
print("| model | batch | dnnc s/epoch | torch seed | torch eager | torch.compile | dnnc vs seed | dnnc vs eager |")
print("|---|---|---|---|---|---|---|---|")
def cell(r):
    return f"{r['epoch_s']:.3f}" if r and "epoch_s" in r else "n/a"
def ratio(a, b):
    if a and b and "epoch_s" in a and "epoch_s" in b and a["epoch_s"] > 0:
        return f"{b['epoch_s'] / a['epoch_s']:.1f}x"
    return "n/a"
for (model, batch), d in by.items():
    dn = d.get("dnnc")
    print(f"| {model} | {batch} | {cell(dn)} | {cell(d.get('torch-seed'))} | {cell(d.get('torch-eager'))} | "
          f"{cell(d.get('torch-compile'))} | {ratio(dn, d.get('torch-seed'))} | {ratio(dn, d.get('torch-eager'))} |")
known = {"dnnc", "torch-seed", "torch-eager", "torch-compile"}
for r in rows:
    if r["impl"] not in known and "epoch_s" in r:
        print(f"- {r['impl']} {r.get('model')} b{r.get('batch')}: {r['epoch_s']:.3f} s/epoch")
errs = [r for r in rows if "error" in r]
for r in errs:
    print(f"- n/a {r['impl']} {r.get('model')} b{r.get('batch')}: {r['error']}")
PYEOF
fi

# ---- 6. kernels against their bandwidth floor (dnnc_gpu_bench --kernels) ----------------------
for f in "$OUT"/kernels-*.md; do
  [[ -f $f ]] || continue
  echo
  cat "$f"
done

log "done in $((SECONDS - T0))s; results: $OUT/results.jsonl"
if [[ ${#FAILED[@]} -gt 0 ]]; then
  printf 'gpu-check: FAILED: %s\n' "${FAILED[@]}"
  exit 1
fi
echo "gpu-check: OK"
