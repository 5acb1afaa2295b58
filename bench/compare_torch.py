#!/usr/bin/env python3
"""Times dnnc's cpu backend against PyTorch side by side, interleaved in one run (see
bench/compare_torch.sh, which builds dnnc and installs PyTorch first).

Both sides are persistent workers (bench/dnnc_bench serve, bench/torch_bench.py) holding 8 random
batches in memory; the driver alternates blocks of steps between them (and alternates who goes
first), so machine noise hits both alike. PyTorch gets its best thread setting, chosen by a short
calibration over (torch threads, OpenBLAS threads) pairs. Reports medians per step and ratios.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (label, torch model, dnnc model, batch, steps per block, target speed-up from issue 5)
CONFIGS = [
    ("mlp b128", "mlp", "models/mnist_mlp.dnn", 128, 20, 2.0),
    ("cnn b4", "cnn", "models/cifar_cnn.dnn", 4, 200, 5.0),
    ("cnn b128", "cnn", "models/cifar_cnn.dnn", 128, 10, 2.0),
]
TORCH_THREADS = [(1, 2), (2, 1), (1, 1), (2, 2)]  # (torch.set_num_threads, OPENBLAS_NUM_THREADS)


class Worker:
    """A benchmark worker speaking the 'run N' / JSON-line protocol on stdin/stdout."""

    def __init__(self, argv, env=None):
        self.argv = argv
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                  cwd=ROOT)
        self.info = self._read()

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit(f"compare_torch: worker {' '.join(self.argv)} exited with status {self.p.wait()}")
        return json.loads(line)

    def run(self, n):
        self.p.stdin.write(f"run {n}\n")
        self.p.stdin.flush()
        return self._read()["times_ms"]

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
            self.p.wait()


def torch_worker(python, kind, batch, tt, bt):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(bt), OMP_NUM_THREADS=str(tt))
    return Worker([python, os.path.join(HERE, "torch_bench.py"), kind, str(batch), str(tt)], env)


def dnnc_worker(bench, model, batch):
    return Worker([bench, "serve", model, "--batch", str(batch)])


def run_json(argv):
    out = subprocess.run(argv, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def best_torch(python, kind, batch, steps):
    """Calibrates PyTorch's thread setting: the pair with the lowest median step time."""
    results = []
    for tt, bt in TORCH_THREADS:
        w = torch_worker(python, kind, batch, tt, bt)
        w.run(max(2, steps // 4))  # warm-up
        med = statistics.median(w.run(steps))
        w.close()
        results.append((med, tt, bt))
    results.sort()
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "dnnc_bench"), help="path of dnnc_bench")
    ap.add_argument("--python", default="/usr/bin/python3", help="python with torch (Debian's python3-torch)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved blocks per side and config")
    ap.add_argument("--only", help="run only configs whose label contains this")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--openblas-core", default="env",
                    help="OpenBLAS kernel set for both sides: 'env' (OPENBLAS_CORETYPE as the environment "
                         "sets it, the default), 'auto' (unset: OpenBLAS detects the CPU) or a core name "
                         "such as Haswell or SkylakeX")
    args = ap.parse_args()
    # Both sides load the same libopenblas.so.0 and read OPENBLAS_CORETYPE when they load it, so
    # setting it here (inherited by every worker) gives dnnc and PyTorch the same GEMM kernels.
    if args.openblas_core == "auto":
        os.environ.pop("OPENBLAS_CORETYPE", None)
    elif args.openblas_core != "env":
        os.environ["OPENBLAS_CORETYPE"] = args.openblas_core

    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "load": os.getloadavg(), "configs": []}
    print(f"compare_torch: {time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.2f}, "
          f"{os.cpu_count()} CPUs, {args.rounds} interleaved rounds per config", flush=True)

    sg = run_json([args.bench, "sgemm", "--n", "1024", "--threads", str(os.cpu_count())])
    report["sgemm_gflops"] = sg["sgemm_gflops"]
    report["openblas_core"] = sg["core"]
    report["openblas_coretype_env"] = os.environ.get("OPENBLAS_CORETYPE")
    print(f"sgemm ceiling (OpenBLAS, 1024^3, {os.cpu_count()} threads): {sg['sgemm_gflops']:.1f} GFLOP/s; "
          f"OpenBLAS core {sg['core']} (OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}, "
          f"for both sides)", flush=True)

    rows = []
    for label, kind, model, batch, steps, target in CONFIGS:
        if args.only and args.only not in label:
            continue
        cal = best_torch(args.python, kind, batch, steps)
        _, tt, bt = cal[0]
        calib = ", ".join(f"{t}/{b}: {m:.3f}" for m, t, b in cal)
        print(f"{label}: PyTorch thread calibration (torch/OpenBLAS threads: median ms) {calib}", flush=True)
        tw = torch_worker(args.python, kind, batch, tt, bt)
        dw = dnnc_worker(args.bench, model, batch)
        tw.run(steps)
        dw.run(steps)  # warm-up both
        t_all, d_all, ratios = [], [], []
        for r in range(args.rounds):
            first, second = (dw, tw) if r % 2 == 0 else (tw, dw)
            a, b = first.run(steps), second.run(steps)
            d, t = (a, b) if first is dw else (b, a)
            d_all += d
            t_all += t
            ratios.append(statistics.median(t) / statistics.median(d))
        tw.close()
        dw.close()
        dm, tm = statistics.median(d_all), statistics.median(t_all)
        row = {"config": label, "batch": batch, "dnnc_ms": dm, "torch_ms": tm, "speedup": tm / dm,
               "speedup_rounds_min": min(ratios), "speedup_rounds_max": max(ratios), "target": target,
               "torch_threads": tt, "openblas_threads": bt, "steps": len(d_all)}
        if kind == "mlp":
            fl = run_json([args.bench, "flops", model, "--batch", str(batch)])["gemm_flops"]
            row["gflops"] = fl / (dm / 1e3) / 1e9
            row["of_ceiling"] = row["gflops"] / sg["sgemm_gflops"]
        rows.append(row)
        print(f"{label}: dnnc {dm:.3f} ms, PyTorch {tm:.3f} ms, speed-up {tm / dm:.2f}x "
              f"(per round {min(ratios):.2f}-{max(ratios):.2f})", flush=True)
    report["configs"] = rows

    # Compile times: cold (empty cache) and warm (cached) per model, each in a fresh process.
    cache = tempfile.mkdtemp(prefix="dnnc-bench-cache-")
    compile_rows = []
    try:
        for model, batch in [("models/mnist_mlp.dnn", 128), ("models/cifar_cnn.dnn", 4)]:
            cold = run_json([args.bench, "compile", model, "--batch", str(batch), "--cache", cache])["compile_ms"]
            warm = statistics.median(
                run_json([args.bench, "compile", model, "--batch", str(batch), "--cache", cache])["compile_ms"]
                for _ in range(5))
            compile_rows.append({"model": model, "batch": batch, "cold_ms": cold, "warm_ms": warm})
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    report["compile"] = compile_rows

    print()
    print(f"{'config':<10} {'dnnc ms':>9} {'torch ms':>9} {'speed-up':>9} {'target':>7}  torch/blas thr  note")
    for r in rows:
        note = ""
        if "gflops" in r:
            note = f"{r['gflops']:.1f} GFLOP/s = {100 * r['of_ceiling']:.0f}% of sgemm ceiling (target 80%)"
        ok = "ok" if r["speedup"] >= r["target"] else "MISS"
        print(f"{r['config']:<10} {r['dnnc_ms']:>9.3f} {r['torch_ms']:>9.3f} {r['speedup']:>8.2f}x "
              f"{r['target']:>5.1f}x {ok:<4} {r['torch_threads']}/{r['openblas_threads']}  {note}")
    for c in compile_rows:
        print(f"compile {os.path.basename(c['model'])} b{c['batch']}: cold {c['cold_ms']:.0f} ms (target < 3000), "
              f"warm {c['warm_ms']:.1f} ms (target < 100)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
