#!/usr/bin/env bash
# Fails if any given ELF file NEEDs the CUDA driver library (libcuda.so.1): dnnc, the test
# binaries and the cuda plugin must start on machines without a driver.
set -euo pipefail
status=0
for f in "$@"; do
  needed=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  if grep -qx 'libcuda\.so.*' <<<"$needed"; then
    echo "FAIL: $f NEEDs the driver: $(grep 'libcuda' <<<"$needed" | tr '\n' ' ')"
    status=1
  else
    echo "ok: $(basename "$f") NEEDs $(tr '\n' ' ' <<<"$needed")"
  fi
done
exit $status
