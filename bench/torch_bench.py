#!/usr/bin/env python3
"""The PyTorch side of bench/compare_torch.sh: what a user would write instead of dnnc for each
zoo model (bench/torch_zoo.py), as a persistent worker.

    torch_bench.py MODEL {train|infer} BATCH TORCH_THREADS

MODEL is the stem of a models/*.dnn file. train: one training step (zero_grad, forward,
CrossEntropyLoss, backward, the train block's optimizer, loss.item()). infer: what an evaluation
loop runs per batch under torch.no_grad() in eval mode (forward, argmax, count of correct labels),
the counterpart of `dnnc eval`.

Set OPENBLAS_NUM_THREADS in the environment (OpenBLAS reads it when the library loads). Prints
{"ready": true}, then answers stdin lines: "run N" runs N steps over 8 seeded random batches held
in memory and prints {"times_ms": [...]}, one wall time per step; "quit" exits.
"""
import json
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_zoo  # noqa: E402


def main():
    if len(sys.argv) != 5 or sys.argv[2] not in ("train", "infer"):
        raise SystemExit(__doc__)
    name, mode, batch, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model, sample = torch_zoo.make_model(name)
    opt = torch_zoo.make_optimizer(name, model)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1)
    batches = [(torch.rand((batch,) + sample, generator=g) * 2 - 1, torch.randint(0, 10, (batch,), generator=g))
               for _ in range(8)]

    def train_step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        loss.item()  # what a training loop reads; dnnc's step returns the loss too

    def infer_step(x, y):
        with torch.no_grad():
            (model(x).argmax(1) == y).sum().item()

    if mode == "infer":
        model.eval()
    step = train_step if mode == "train" else infer_step
    print(json.dumps({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    nxt = 0
    for line in sys.stdin:
        line = line.strip()
        if line == "quit":
            break
        if not line.startswith("run "):
            raise SystemExit(f"torch_bench.py: expected 'run N' or 'quit', got '{line}'")
        times = []
        for _ in range(int(line[4:])):
            x, y = batches[nxt]
            nxt = (nxt + 1) % len(batches)
            t0 = time.perf_counter()
            step(x, y)
            times.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps({"times_ms": times}), flush=True)


if __name__ == "__main__":
    main()
