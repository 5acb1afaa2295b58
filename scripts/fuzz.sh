#!/usr/bin/env bash
# Builds dnnc's libFuzzer targets (clang, -DDNNC_FUZZ=ON: ASan+UBSan+coverage on every library)
# into build-fuzz/ and fuzzes each target for SECONDS (default 60) from its seed corpus, then
# prints the executions run and the crashes found per target. Exit status 1 if any target crashed.
# Usage: scripts/fuzz.sh [seconds] [target...]     targets: dnn ir safetensors idx cifar
# Crash inputs land in build-fuzz/fuzz-work/<target>/crashes/; a fixed one belongs in
# tests/fuzz/regressions/<target>/ (replayed by the normal test suite). See docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(dnn ir safetensors idx cifar)

cxx="" cc=""
for v in 14 15 16 ""; do
  if command -v "clang++${v:+-$v}" >/dev/null && command -v "clang${v:+-$v}" >/dev/null; then
    cxx="clang++${v:+-$v}" cc="clang${v:+-$v}"
    break
  fi
done
if [ -z "$cxx" ]; then
  echo "fuzz.sh: needs clang with libFuzzer (Debian: apt-get install clang)" >&2
  exit 2
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B build-fuzz "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
        -DCMAKE_C_COMPILER="$cc" -DDNNC_FUZZ=ON -DDNNC_CUDA=OFF "${launcher[@]}" >/dev/null
fi
cmake --build build-fuzz --parallel "$(nproc)" --target fuzz_all

# Extra seeds besides tests/fuzz/corpus/<target>/: the project's own valid and invalid files.
extra_seeds() {
  case "$1" in
    dnn) ls models/*.dnn tests/invalid/*.dnn tests/trainer/*.dnn docs/*.dnn 2>/dev/null || true ;;
    ir) ls tests/ir/golden/*.ir tests/passes/golden/*.ir 2>/dev/null || true ;;
    safetensors) find tests -name '*.safetensors' -size -512k 2>/dev/null || true ;;
    idx) find data/mnist -maxdepth 1 -name 't10k-labels*' -size -64k 2>/dev/null || true ;;
    cifar) ;;
  esac
}

status=0
summary=()
for t in "${targets[@]}"; do
  bin="build-fuzz/tests/fuzz/fuzz_$t"
  work="build-fuzz/fuzz-work/$t"
  mkdir -p "$work/corpus" "$work/crashes" "$work/seeds"
  extra_seeds "$t" | while read -r f; do cp -f "$f" "$work/seeds/"; done
  echo "fuzz.sh: fuzzing $t for ${secs} s"
  set +e
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" \
         -artifact_prefix="$work/crashes/" "$work/corpus" "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" \
         "$work/seeds" >"$work/log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/log" | tail -1 | grep -o '[0-9]*$' || true)
  crashes=$(find "$work/crashes" -type f | wc -l)
  cov=$(grep -o 'cov: [0-9]*' "$work/log" | tail -1 | grep -o '[0-9]*$' || true)
  summary+=("$(printf '%-12s %12s execs  %6s cov  %3s crash files  (exit %s)' "$t" "${execs:-?}" "${cov:-?}" "$crashes" "$rc")")
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    status=1
    echo "fuzz.sh: $t FOUND A CRASH (log: $work/log):" >&2
    grep -m3 -E 'ERROR: |dnnc fuzz finding|runtime error' "$work/log" >&2 || tail -20 "$work/log" >&2
  fi
done
echo "fuzz.sh: results (${secs} s per target)"
printf '  %s\n' "${summary[@]}"
exit "$status"
