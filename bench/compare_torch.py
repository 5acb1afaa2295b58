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

# (model stem, graph, batch): every zoo model's train step at its train block's batch (the seed
# CNN also at 128), then test-set inference (`dnnc eval` against torch.no_grad()) at batch 1000.
ZOO = ["mnist_mlp", "mnist_mlp_adam", "mlp_layernorm_adamw", "lenet5", "cifar_cnn", "cifar_strided", "vgg_cifar",
       "resnet_mnist", "fashion_cnn"]
TRAIN_BATCH = {"mnist_mlp": 128, "mnist_mlp_adam": 128, "mlp_layernorm_adamw": 128, "lenet5": 64, "cifar_cnn": 4,
               "cifar_strided": 32, "vgg_cifar": 64, "resnet_mnist": 32,
               "fashion_cnn": 128}
CONFIGS = ([(m, "train", TRAIN_BATCH[m]) for m in ZOO[:5]] + [("cifar_cnn", "train", 128)] +
           [(m, "train", TRAIN_BATCH[m]) for m in ZOO[5:]] + [(m, "infer", 1000) for m in ZOO])
SPEEDUP_TARGET = 2.0  # issue 20: every zoo model's train step and eval at least 2x PyTorch
CEILING_TARGET = 0.5  # issue 20: conv models' train steps at >= 50% of the sgemm ceiling
GEMM_BOUND_TARGET = 0.95  # issue 20: the MLPs' train steps at >= 95% of their GEMM bound
BLOCK_S = 0.5  # seconds per block of steps (both sides run the same number of steps)
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


def torch_worker(python, name, mode, batch, tt, bt):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(bt), OMP_NUM_THREADS=str(tt))
    return Worker([python, os.path.join(HERE, "torch_bench.py"), name, mode, str(batch), str(tt)], env)


def dnnc_graph(mode):
    return "train_step" if mode == "train" else "infer"


def dnnc_worker(bench, name, mode, batch):
    return Worker([bench, "serve", f"models/{name}.dnn", "--batch", str(batch), "--graph", dnnc_graph(mode)])


def run_json(argv):
    out = subprocess.run(argv, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def block_steps(w):
    """Steps per block for about BLOCK_S seconds of the slower side, from worker w's warm-up."""
    w.run(2)
    t = statistics.median(w.run(3)) / 1e3
    return max(3, min(200, round(BLOCK_S / max(t, 1e-6))))


def best_torch(python, name, mode, batch, steps):
    """Calibrates PyTorch's thread setting: the pair with the lowest median step time."""
    results = []
    for tt, bt in TORCH_THREADS:
        w = torch_worker(python, name, mode, batch, tt, bt)
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
    ap.add_argument("--only", help="run only configs (and compile rows) whose label contains this, "
                    "e.g. vgg_cifar or 'infer'")
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
    for name, mode, batch in CONFIGS:
        label = f"{name} {mode} b{batch}"
        if args.only and args.only not in label:
            continue
        probe = torch_worker(args.python, name, mode, batch, 1, 2)
        steps = block_steps(probe)
        probe.close()
        cal = best_torch(args.python, name, mode, batch, steps)
        _, tt, bt = cal[0]
        calib = ", ".join(f"{t}/{b}: {m:.3f}" for m, t, b in cal)
        print(f"{label}: {steps} steps per block; PyTorch thread calibration (torch/OpenBLAS threads: median ms) "
              f"{calib}", flush=True)
        tw = torch_worker(args.python, name, mode, batch, tt, bt)
        dw = dnnc_worker(args.bench, name, mode, batch)
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
        model = f"models/{name}.dnn"
        graph = ["--graph", dnnc_graph(mode)]
        fl = run_json([args.bench, "flops", model, "--batch", str(batch)] + graph)["gemm_flops"]
        row = {"config": label, "model": name, "mode": mode, "batch": batch, "dnnc_ms": dm, "torch_ms": tm,
               "speedup": tm / dm, "speedup_rounds_min": min(ratios), "speedup_rounds_max": max(ratios),
               "torch_threads": tt, "openblas_threads": bt, "steps": len(d_all), "gemm_flops": fl,
               "gflops": fl / (dm / 1e3) / 1e9, "images_per_s_dnnc": batch / (dm / 1e3),
               "images_per_s_torch": batch / (tm / 1e3)}
        row["of_ceiling"] = row["gflops"] / sg["sgemm_gflops"]
        row["conv"] = not name.startswith(("mnist_mlp", "mlp_"))
        if not row["conv"]:
            gb = run_json([args.bench, "gemm-bound", model, "--batch", str(batch)] + graph)["gemm_ms"]
            row["gemm_bound_ms"] = gb
            row["of_gemm_bound"] = gb / dm
        rows.append(row)
        print(f"{label}: dnnc {dm:.3f} ms, PyTorch {tm:.3f} ms, speed-up {tm / dm:.2f}x "
              f"(per round {min(ratios):.2f}-{max(ratios):.2f}), {row['gflops']:.1f} GFLOP/s", flush=True)
    report["configs"] = rows

    # Compile times: cold (empty cache) and warm (cached) per model, each in a fresh process,
    # compiling what `dnnc train` compiles (the train step and the inference graph).
    compile_rows = []
    for name in ZOO:
        if args.only and args.only not in name:
            continue
        cache = tempfile.mkdtemp(prefix="dnnc-bench-cache-")
        try:
            argv = [args.bench, "compile", f"models/{name}.dnn", "--batch", str(TRAIN_BATCH[name]), "--graph", "all",
                    "--cache", cache]
            cold = run_json(argv)["compile_ms"]
            warm = statistics.median(run_json(argv)["compile_ms"] for _ in range(5))
            compile_rows.append({"model": name, "batch": TRAIN_BATCH[name], "cold_ms": cold, "warm_ms": warm})
            print(f"compile {name}: cold {cold:.0f} ms, warm {warm:.1f} ms", flush=True)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    report["compile"] = compile_rows

    print()
    print(f"{'config':<32} {'dnnc ms':>9} {'torch ms':>9} {'speed-up':>9}     {'GFLOP/s':>7} {'ceil%':>5}  "
          f"thr  note")
    for r in rows:
        ok = "ok" if r["speedup"] >= SPEEDUP_TARGET else "MISS"
        note = ""
        if r["mode"] == "train" and r["conv"]:
            note = f"ceiling {'ok' if r['of_ceiling'] >= CEILING_TARGET else 'MISS'} (target 50%)"
        elif r["mode"] == "train":
            note = (f"{100 * r['of_gemm_bound']:.0f}% of GEMM bound {r['gemm_bound_ms']:.3f} ms "
                    f"{'ok' if r['of_gemm_bound'] >= GEMM_BOUND_TARGET else 'MISS'} (target 95%)")
        elif r["mode"] == "infer":
            note = f"{r['images_per_s_dnnc']:.0f} vs {r['images_per_s_torch']:.0f} images/s"
        print(f"{r['config']:<32} {r['dnnc_ms']:>9.3f} {r['torch_ms']:>9.3f} {r['speedup']:>8.2f}x {ok:<4} "
              f"{r['gflops']:>7.1f} {100 * r['of_ceiling']:>4.0f}%  {r['torch_threads']}/{r['openblas_threads']}  {note}")
    for c in compile_rows:
        print(f"compile {c['model']:<20} b{c['batch']:<4} cold {c['cold_ms']:>5.0f} ms "
              f"{'ok' if c['cold_ms'] < 3000 else 'MISS'} (< 3000), warm {c['warm_ms']:>5.1f} ms "
              f"{'ok' if c['warm_ms'] < 100 else 'MISS'} (< 100)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
