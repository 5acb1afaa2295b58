#!/usr/bin/env bash
# `dnnc train --device auto|cuda` with the plugin next to dnnc. Without a usable GPU: auto falls
# back to another device with one line naming the plugin's reason, and --device cuda exits
# non-zero with that reason. With a GPU: both pick cuda. Usage: cli_device_test.sh path/to/dnnc
set -uo pipefail
dnnc=$1
auto=$("$dnnc" train models/mnist_mlp.dnn --device auto --data /nonexistent/dnnc-cli-device-test 2>&1)
line=$(grep '^device: ' <<<"$auto")
echo "auto: $line"
if [[ $line == "device: cuda "* ]]; then
  cuda=$("$dnnc" train models/mnist_mlp.dnn --device cuda --data /nonexistent/dnnc-cli-device-test 2>&1)
  grep -q '^device: cuda (as requested)' <<<"$cuda" || { echo "FAIL: --device cuda: $cuda"; exit 1; }
  echo "ok: a GPU is usable; auto and --device cuda pick cuda"
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
echo "ok: no usable GPU ($reason); auto falls back, --device cuda fails"
