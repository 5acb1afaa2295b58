#!/usr/bin/env python3
"""Peak resident memory of dnnc against PyTorch, side by side in one run (issue 19).

For each case (model, batch) it runs, each in a fresh process and interleaved over --rounds:
  - `dnnc train MODEL --device cpu --batch B --steps S --eval-batch E` (train S steps, then the
    test-set evaluation dnnc train ends with) and torch_memory.py's equivalent loop;
  - `dnnc eval MODEL --init STATE --eval-batch E` and PyTorch's torch.no_grad() evaluation;
and reports the median peak RSS (ru_maxrss from wait4) of each and their ratio. dnnc's peak is
split into the activation arenas (the plan-memory figures of `dnnc compile --stats` for the
graphs that run: train_step at B and infer at E), params and optimizer state (the sizes of the
state files `--save` writes), the data set (uint8 images + i64 labels, held by both), and the
rest (the process, its libraries, the compiler's IR, the JIT'd code, the batch tensors).
PyTorch's `idle` figure (import torch + the model) is its library's own footprint.
The JIT cache is warmed first, so no compiler child process is counted (wait4 includes waited-for
children).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def peak_rss(cmd, env=None):
    """Runs cmd; returns (peak RSS in bytes of it and its waited-for children, stdout)."""
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        _, status, ru = os.wait4(p.pid, 0)
        out.seek(0)
        text = out.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"memory_bench.py: {' '.join(cmd)} exited {code}:\n{text}")
    return ru.ru_maxrss * 1024, text


def arena_bytes(dnnc, model, graph, batch):
    out = subprocess.run([dnnc, "compile", model, "--stats", "--graph", graph, "--batch", str(batch)], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    current = None
    for line in out.splitlines():  # `--stats` prints a block per graph, headed `GRAPH: kernels ...`
        head = re.match(r"^(\w+): kernels ", line)
        if head:
            current = head.group(1)
        m = re.search(r"plan-memory \(cpu\): arena (\d+) bytes", line)
        if m and current == graph:
            return int(m.group(1))
    raise SystemExit(f"memory_bench.py: no plan-memory line for {graph} in `dnnc compile --stats` of {model}:\n{out}")


def mib(x):
    return f"{x / 2**20:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dnnc", default=os.path.join(ROOT, "build", "dnnc"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--eval-batch", type=int, default=500)
    ap.add_argument("--test-images", type=int, default=2000)
    ap.add_argument("--case", action="append", help="MODEL:BATCH (default: cifar_cnn:128 and vgg_cifar:256)")
    ap.add_argument("--json", help="write the medians here")
    a = ap.parse_args()
    cases = [c.split(":") for c in (a.case or ["cifar_cnn:128", "vgg_cifar:256"])]
    work = tempfile.mkdtemp(prefix="dnnc-memory-")
    env = dict(os.environ, DNNC_CACHE_DIR=os.path.join(work, "cache"))
    rows = []
    for name, batch in cases:
        batch = int(batch)
        model = f"models/{name}.dnn"
        n_train = batch * a.steps  # one pass over the data: every step a full batch
        data = os.path.join(work, f"data-{name}")
        subprocess.run([a.dnnc, "data", "synth-cifar", data, "--train", str(n_train), "--test", str(a.test_images)],
                       cwd=ROOT, check=True, capture_output=True)
        state = os.path.join(work, f"{name}.safetensors")
        train = [a.dnnc, "train", model, "--device", "cpu", "--data", data, "--batch", str(batch), "--steps",
                 str(a.steps), "--eval-batch", str(a.eval_batch), "--save", state]
        evaluate = [a.dnnc, "eval", model, "--device", "cpu", "--data", data, "--init", state, "--eval-batch",
                    str(a.eval_batch)]
        torch = [a.python, os.path.join(HERE, "torch_memory.py")]
        torch_train = torch + ["train", name, data, str(batch), str(a.steps), str(a.eval_batch)]
        torch_eval = torch + ["eval", name, data, str(a.eval_batch)]
        peak_rss(train, env)  # warms the JIT cache (and writes the state eval reads)
        runs = {k: [] for k in ("dnnc_train", "torch_train", "dnnc_eval", "torch_eval", "torch_idle")}
        for _ in range(a.rounds):
            runs["dnnc_train"].append(peak_rss(train, env)[0])
            runs["torch_train"].append(peak_rss(torch_train)[0])
            runs["dnnc_eval"].append(peak_rss(evaluate, env)[0])
            runs["torch_eval"].append(peak_rss(torch_eval)[0])
            runs["torch_idle"].append(peak_rss(torch + ["idle", name])[0])
        med = {k: statistics.median(v) for k, v in runs.items()}
        params = os.path.getsize(state)
        opt_state = os.path.getsize(state.replace(".safetensors", ".train.safetensors")) \
            if os.path.exists(state.replace(".safetensors", ".train.safetensors")) else 0
        data_bytes = (n_train + a.test_images) * (3072 + 8)
        arena_train = arena_bytes(a.dnnc, model, "train_step", batch) + arena_bytes(a.dnnc, model, "infer", a.eval_batch)
        arena_eval = arena_bytes(a.dnnc, model, "infer", a.eval_batch)
        eval_data = a.test_images * (3072 + 8)
        for mode, arena, held, d in (("train", arena_train, params + opt_state, data_bytes),
                                     ("eval", arena_eval, params, eval_data)):
            dn, tt = med[f"dnnc_{mode}"], med[f"torch_{mode}"]
            rows.append({"model": name, "batch": batch if mode == "train" else a.eval_batch, "mode": mode,
                         "dnnc_peak": dn, "torch_peak": tt, "ratio": dn / tt, "arena": arena, "params_state": held,
                         "data": d, "rest": dn - arena - held - d, "torch_idle": med["torch_idle"],
                         "rounds": {k: runs[k] for k in (f"dnnc_{mode}", f"torch_{mode}")}})
    print(f"peak RSS, MiB (median of {a.rounds} interleaved rounds; {a.steps} train steps, eval batch "
          f"{a.eval_batch}, {a.test_images} test images)")
    print(f"{'model':<10} {'mode':<5} {'batch':>5} | {'dnnc':>7} {'torch':>7} {'ratio':>6} | dnnc: {'arena':>6} "
          f"{'params':>6} {'data':>6} {'rest':>6} | torch idle")
    for r in rows:
        print(f"{r['model']:<10} {r['mode']:<5} {r['batch']:>5} | {mib(r['dnnc_peak']):>7} {mib(r['torch_peak']):>7} "
              f"{r['ratio']:>5.2f}x | {mib(r['arena']):>12} {mib(r['params_state']):>6} {mib(r['data']):>6} "
              f"{mib(r['rest']):>6} | {mib(r['torch_idle']):>10}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
