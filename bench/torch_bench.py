#!/usr/bin/env python3
"""The PyTorch side of bench/compare_torch.sh: the training step a user would write instead of
dnnc (nn.Sequential, CrossEntropyLoss, SGD lr 0.001 momentum 0.9), as a persistent worker.

    torch_bench.py {mlp|cnn} BATCH TORCH_THREADS

Set OPENBLAS_NUM_THREADS in the environment (OpenBLAS reads it when the library loads). Prints
{"ready": true}, then answers stdin lines: "run N" runs N training steps over 8 seeded random
batches held in memory and prints {"times_ms": [...]}, one wall time per step; "quit" exits.
"""
import json
import sys
import time

import torch
from torch import nn


def make_model(kind):
    if kind == "mlp":  # models/mnist_mlp.dnn
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                             nn.Linear(256, 10)), (1, 28, 28)
    if kind == "cnn":  # models/cifar_cnn.dnn
        return nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(16 * 15 * 15, 10)), (3, 32, 32)
    raise SystemExit(f"torch_bench.py: unknown model '{kind}' (mlp, cnn)")


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    kind, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model, sample = make_model(kind)
    opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1)
    batches = [(torch.rand((batch,) + sample, generator=g) * 2 - 1, torch.randint(0, 10, (batch,), generator=g))
               for _ in range(8)]
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
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            loss.item()  # what a training loop reads; dnnc's step returns the loss too
            times.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps({"times_ms": times}), flush=True)


if __name__ == "__main__":
    main()
