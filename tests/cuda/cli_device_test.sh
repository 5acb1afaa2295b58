#!/usr/bin/env bash
# `dnnc train --device auto|cuda [--tf32]` with the plugin next to dnnc. Without a usable GPU:
# auto falls back to another device with one line naming the plugin's reason (with --tf32, plus
# one warning that it runs exact fp32), and --device cuda exits non-zero with that reason. With a
# GPU: both pick cuda, and the device line names the GEMM mode. Usage: cli_device_test.sh dnnc
set -uo pipefail
dnnc=$1
auto=$("$dnnc" train models/mnist_mlp.dnn --device auto --data /nonexistent/dnnc-cli-device-test 2>&1)
line=$(grep '^device: ' <<<"$auto")
echo "auto: $line"
if [[ $line == "device: cuda "* ]]; then
  cuda=$("$dnnc" train models/mnist_mlp.dnn --device cuda --data /nonexistent/dnnc-cli-device-test 2>&1)
  grep -q '^device: cuda (as requested), exact fp32 GEMMs$' <<<"$cuda" || { echo "FAIL: --device cuda: $cuda"; exit 1; }
  tf32=$("$dnnc" train models/mnist_mlp.dnn --device auto --tf32 --data /nonexistent/dnnc-cli-device-test 2>&1)
  grep -q '^device: cuda (auto: the preferred one), TF32 GEMMs$' <<<"$tf32" || { echo "FAIL: --tf32: $tf32"; exit 1; }
  echo "ok: a GPU is usable; auto and --device cuda pick cuda, --tf32 is named on the device line"
  exit 0
fi
[[ $(grep -c '^device: ' <<<"$auto") -eq 1 ]] || { echo "FAIL: expected one device line: $auto"; exit 1; }
reason=$(sed -n 's/^device: [a-z]* (auto: cuda: \(.*\))$/\1/p' <<<"$line")
reason=${reason%%; cpu: *}
[[ -n $reason ]] || { echo "FAIL: auto's line does not say why cuda was skipped: $line"; exit 1; }
cuda=$("$dnnc" train models/mnist_mlp.dnn --device cuda --data /nonexistent/dnnc-cli-device-test 2>&1)
rc=$?
echo "cuda (rc $rc): $(grep -i "cuda" <<<"$cuda" | head -1)"
[[ $rc -ne 0 ]] || { echo "FAIL: --device cuda succeeded without a usable GPU"; exit 1; }
grep -qF "device 'cuda' is not available: $reason" <<<"$cuda" || { echo "FAIL: --device cuda does not give the reason"; exit 1; }
tf32=$("$dnnc" train models/mnist_mlp.dnn --device auto --tf32 --data /nonexistent/dnnc-cli-device-test 2>&1)
grep -qxF "$line" <<<"$tf32" || { echo "FAIL: --tf32 changed auto's choice: $tf32"; exit 1; }
[[ $(grep -c '^dnnc: warning: --tf32 ignored: .*GEMMs run in exact fp32$' <<<"$tf32") -eq 1 ]] ||
  { echo "FAIL: --device auto --tf32 without a GPU should warn once: $tf32"; exit 1; }
echo "ok: no usable GPU ($reason); auto falls back (--tf32: one warning), --device cuda fails"
