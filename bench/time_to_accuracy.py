#!/usr/bin/python3
"""Time to 91% Fashion-MNIST test accuracy, dnnc vs PyTorch, side by side: models/fashion_cnn.dnn
with its train block's recipe (`dnnc train models/fashion_cnn.dnn --seed S`) and the same model
and recipe in PyTorch (bench/torch_train.py --eval-every-epoch, at its best thread count),
alternating per seed. Both evaluate the 10,000 test images after every epoch; the time to
accuracy is the wall time from the process's start (compile or `import torch`, data loading
included; PyTorch's thread probe excluded) to the end of the first evaluation at or above the
target.

    bench/time_to_accuracy.py [--target 0.91] [--seeds 1,2,3]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "/usr/share/datasets/fashion-mnist"
MODEL = "fashion_cnn"
EPOCH_LINE = re.compile(r"^epoch (\d+)/\d+ done: .*test accuracy (\d\.\d+)")


def run(cmd, parse):
    """Runs `cmd`, timestamping each line of stdout as it arrives; `parse(line, t)` sees them."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    for line in p.stdout:
        parse(line.rstrip("\n"), time.perf_counter() - t0)
    err = p.stderr.read()
    if p.wait() != 0:
        sys.exit(f"time_to_accuracy: {cmd[0]} failed:\n{err}")
    return time.perf_counter() - t0


def dnnc(seed):
    epochs = []
    total = run(["stdbuf", "-oL", os.path.join(ROOT, "build/dnnc"), "train", f"models/{MODEL}.dnn", "--seed", str(seed)],
                lambda line, t: (m := EPOCH_LINE.match(line)) and epochs.append((t, int(m.group(1)), float(m.group(2)))))
    return epochs, total


def torch(seed):
    epochs, probe = [], [0.0]

    def parse(line, t):
        if not line.startswith("{"):
            return
        j = json.loads(line)
        if "probe_s" in j:
            probe[0] = j["probe_s"]
        elif "epoch" in j:
            epochs.append((t - probe[0], j["epoch"], j["test_acc"]))

    total = run(["/usr/bin/python3", os.path.join(ROOT, "bench/torch_train.py"), MODEL, DATA, "--batch", "128",
                 "--epochs", "8", "--mean", "0.2860", "--std", "0.3530", "--seed", str(seed), "--eval-every-epoch"],
                parse)
    return epochs, total - probe[0]


def reached(epochs, target):
    for t, e, a in epochs:
        if a >= target:
            return t, e
    return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", type=float, default=0.91)
    ap.add_argument("--seeds", default="1,2,3")
    args = ap.parse_args()
    if not os.path.isdir(DATA):
        sys.exit(f"time_to_accuracy: no {DATA}; apt-get install dataset-fashion-mnist")
    rows = {"dnnc": [], "PyTorch": []}
    for seed in [int(s) for s in args.seeds.split(",")]:
        for name, fn in (("dnnc", dnnc), ("PyTorch", torch)):
            epochs, total = fn(seed)
            t, e = reached(epochs, args.target)
            rows[name].append((t, e, epochs[-1][2], total))
            shown = f"{t:.1f} s (epoch {e})" if t is not None else "not reached"
            print(f"seed {seed} {name}: {args.target:.0%} at {shown}; final {epochs[-1][2]:.4f} after {total:.1f} s; "
                  f"per epoch {[round(a, 4) for _, _, a in epochs]}", flush=True)
    print(f"\n| | time to {args.target:.0%} (seeds) | median | final test acc (seeds) | whole run, median |")
    print("|---|---|---|---|---|")
    for name, rs in rows.items():
        times = [r[0] for r in rs]
        med = statistics.median([t if t is not None else float("inf") for t in times])
        print(f"| {name} | {' / '.join(f'{t:.1f} s (ep {r[1]})' if t is not None else '-' for t, r in zip(times, rs))} "
              f"| {med:.1f} s | {' / '.join(f'{r[2]:.4f}' for r in rs)} | "
              f"{statistics.median(r[3] for r in rs):.1f} s |")


if __name__ == "__main__":
    main()
