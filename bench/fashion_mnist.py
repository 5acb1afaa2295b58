#!/usr/bin/python3
"""dnnc vs PyTorch on the real Fashion-MNIST (60,000/10,000, Debian's dataset-fashion-mnist),
side by side: each model of models/ trains with its own train block's recipe, 3 seeds, dnnc
(`dnnc train MODEL --dataset fashion_mnist --seed S`) and the equivalent PyTorch script
(bench/torch_train.py, at its best thread setting) interleaved, so both see the same machine.

    bench/fashion_mnist.py [--models mnist_mlp,lenet5,mlp_layernorm_adamw] [--seeds 1,2,3]

Prints each run as it ends, then a markdown table: test accuracy per seed, and the median
wall time of a whole run (process start to exit: compile or import, data loading, training,
evaluation; PyTorch's thread probe excluded).
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


def recipe(model):
    text = open(os.path.join(ROOT, "models", model + ".dnn")).read()
    train = text[text.index("train "):]
    num = lambda key: re.search(key + r"\s*=\s*(\d+)", train).group(1)
    norm = re.search(r"mean \(([\d.]+)\),\s*std \(([\d.]+)\)", train)
    return {"batch": int(num("batch")), "epochs": int(num("epochs")), "mean": float(norm.group(1)),
            "std": float(norm.group(2))}


def run_dnnc(model, seed):
    t0 = time.perf_counter()
    p = subprocess.run([os.path.join(ROOT, "build/dnnc"), "train", f"models/{model}.dnn", "--dataset", "fashion_mnist",
                        "--seed", str(seed)], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"fashion_mnist: dnnc failed on {model}:\n{p.stdout}{p.stderr}")
    acc = float(re.findall(r"test accuracy: (\d\.\d+)", p.stdout)[-1])
    return acc, wall


def run_torch(model, seed, r):
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench/torch_train.py"), model, DATA, "--batch",
                        str(r["batch"]), "--epochs", str(r["epochs"]), "--mean", str(r["mean"]), "--std",
                        str(r["std"]), "--seed", str(seed)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"fashion_mnist: torch_train failed on {model}:\n{p.stdout}{p.stderr}")
    j = json.loads(p.stdout.strip().splitlines()[-1])
    return j["test_acc"], wall - j["probe_s"], j["threads"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mnist_mlp,lenet5,mlp_layernorm_adamw")
    ap.add_argument("--seeds", default="1,2,3")
    args = ap.parse_args()
    if not os.path.isdir(DATA):
        sys.exit(f"fashion_mnist: no {DATA}; apt-get install dataset-fashion-mnist")
    rows = []
    for model in args.models.split(","):
        r = recipe(model)
        d_acc, d_wall, t_acc, t_wall, threads = [], [], [], [], []
        for seed in [int(s) for s in args.seeds.split(",")]:
            a, w = run_dnnc(model, seed)
            d_acc.append(a), d_wall.append(w)
            a2, w2, th = run_torch(model, seed, r)
            t_acc.append(a2), t_wall.append(w2), threads.append(th)
            print(f"{model} seed {seed}: dnnc {a:.4f} in {w:.1f} s, PyTorch {a2:.4f} in {w2:.1f} s ({th} threads)",
                  flush=True)
        rows.append((model, r, d_acc, d_wall, t_acc, t_wall, threads))
    print("\n| model | recipe | dnnc test acc (seeds) | PyTorch test acc | dnnc wall | PyTorch wall | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for model, r, d_acc, d_wall, t_acc, t_wall, threads in rows:
        dm, tm = statistics.median(d_wall), statistics.median(t_wall)
        print(f"| `{model}` | batch {r['batch']}, {r['epochs']} epochs | {' / '.join(f'{a:.4f}' for a in d_acc)} | "
              f"{' / '.join(f'{a:.4f}' for a in t_acc)} | {dm:.1f} s | {tm:.1f} s ({max(set(threads), key=threads.count)} "
              f"threads) | {tm / dm:.1f}x |")


if __name__ == "__main__":
    main()
