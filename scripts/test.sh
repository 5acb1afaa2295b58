#!/usr/bin/env bash
# Builds dnnc (installing dependencies if needed) and runs the whole test suite with CTest, then
# builds it again with AddressSanitizer + UndefinedBehaviorSanitizer and every internal check
# into build-asan/ and runs the whole suite there too (docs/reliability.md). DNNC_TEST_SANITIZE=0
# skips the second pass.
# Extra arguments go to both ctest runs. `--no-tests=error` makes a test binary that fails to
# start (and so lists no tests) a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh || exit 1
scripts/fetch-mnist data/mnist || echo "test.sh: could not fetch MNIST; the end-to-end MNIST test will be skipped" >&2
start=$SECONDS
ctest --test-dir build --no-tests=error --output-on-failure --parallel "$(nproc)" "$@"
status=$?
echo "test.sh: normal build: ctest exit $status in $((SECONDS - start)) s"
[ "${DNNC_TEST_SANITIZE:-1}" = 0 ] && exit "$status"

# The sanitizer build, which is also the one with every internal check on: -O1 keeps it quick
# to compile; a UBSan report aborts the test (-fno-sanitize-recover, set by DNNC_SANITIZE);
# leaks fail too; DNNC_EXPENSIVE_CHECKS adds the expensive invariants (the IR verifier around
# every pass, the kernel IR verifier's proofs that parallel loops are race-free). Kernels that
# the cpu backend JIT-compiles at run time are not sanitized (built by the system compiler,
# then dlopen'ed), nor are the CUDA kernels the emulator compiles the same way: the float64 tests
# on the emulator (minutes each, their code unsanitized) run in the normal pass only.
start=$SECONDS
DNNC_BUILD_DIR=build-asan scripts/build.sh -DDNNC_SANITIZE=address,undefined -DDNNC_EXPENSIVE_CHECKS=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" || exit 1
echo "test.sh: sanitizer build: built in $((SECONDS - start)) s"
start=$SECONDS
ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
  ctest --test-dir build-asan --no-tests=error --output-on-failure --parallel "$(nproc)" -E '^float64 .* emu$' "$@"
asan_status=$?
echo "test.sh: sanitizer build: ctest exit $asan_status in $((SECONDS - start)) s"
[ "$status" -ne 0 ] && exit "$status"
exit "$asan_status"
