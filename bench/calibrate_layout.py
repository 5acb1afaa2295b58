#!/usr/bin/env python3
"""Measures what select-layout's cpu cost model is calibrated on (docs/passes.md, "Calibration"):
for each conv model and batch, the train step's median time with every region NCHW and with
every region NHWC (`dnnc_bench profile --layout nchw|nhwc`, each in its own process, interleaved
over --rounds), next to the byte-based cost the model computes for each layout (`dnnc compile
--stats --layout ...`). The non-region parts of the step are the same in both layouts, so the
measured difference is the region's. Prints one line per case and the fitted factor per layout.

    bench/calibrate_layout.py [--bench build/dnnc_bench] [--dnnc build/dnnc] [--rounds 3]
"""
import argparse
import re
import statistics
import subprocess

CASES = [("cifar_cnn", 4), ("cifar_cnn", 128), ("lenet5", 64), ("cifar_strided", 32), ("vgg_cifar", 16),
         ("vgg_cifar", 64)]


def step_ms(bench, model, batch, layout, steps):
    out = subprocess.run([bench, "profile", f"models/{model}.dnn", "--batch", str(batch), "--steps", str(steps),
                          "--layout", layout], check=True, capture_output=True, text=True).stdout
    return float(re.search(r"run\(\) median ([0-9.]+) ms", out).group(1))


def modelled_us(dnnc, model, batch, layout):
    out = subprocess.run([dnnc, "compile", f"models/{model}.dnn", "--stats", "--graph", "train_step", "--batch",
                          str(batch), "--layout", layout], check=True, capture_output=True, text=True).stdout
    m = re.search(r"modelled ([0-9.]+) us \(all NCHW: ([0-9.]+) us\)", out)
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/dnnc_bench")
    ap.add_argument("--dnnc", default="build/dnnc")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    print(f"{'model':<14} {'batch':>5} | {'nchw ms':>8} {'nhwc ms':>8} {'nhwc/nchw':>9} | "
          f"{'model nchw us':>13} {'model nhwc us':>13}")
    ratios = []
    for model, batch in CASES:
        t = {"nchw": [], "nhwc": []}
        for _ in range(a.rounds):
            for layout in ("nchw", "nhwc"):
                t[layout].append(step_ms(a.bench, model, batch, layout, a.steps))
        nchw, nhwc = statistics.median(t["nchw"]), statistics.median(t["nhwc"])
        m_nhwc, m_nchw = modelled_us(a.dnnc, model, batch, "nhwc")
        ratios.append(nhwc / nchw)
        print(f"{model:<14} {batch:>5} | {nchw:>8.3f} {nhwc:>8.3f} {nhwc / nchw:>9.2f} | {m_nchw:>13.1f} {m_nhwc:>13.1f}")
    print(f"train step nhwc/nchw: min {min(ratios):.2f}, median {statistics.median(ratios):.2f}, "
          f"max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
