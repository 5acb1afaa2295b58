#!/usr/bin/env python3
"""PyTorch side of scripts/gpu-check.sh: one training epoch of the seed models on the GPU on
seeded synthetic data (60k samples of the model's input shape), SGD lr 0.001 momentum 0.9.

    torch_gpu_bench.py {mlp|cnn} BATCH MODE [--samples N] [--metrics-every K]

MODE:
  seed     the seed scripts' loop: a DataLoader over CPU tensors (shuffle), each batch moved
           to the GPU, loss.item() every step;
  eager    data resident on the GPU, batches by index from a permutation, the loss read every
           K steps (what dnnc's resident trainer does);
  compile  as eager with torch.compile(model).
Prints one JSON line. TF32 is off (exact fp32, as dnnc by default).
"""
import argparse
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
    raise SystemExit(f"torch_gpu_bench.py: unknown model '{kind}' (mlp, cnn)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["mlp", "cnn"])
    ap.add_argument("batch", type=int)
    ap.add_argument("mode", choices=["seed", "eager", "compile"])
    ap.add_argument("--samples", type=int, default=60000)
    ap.add_argument("--metrics-every", type=int, default=50)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch_gpu_bench.py: torch.cuda.is_available() is False")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    torch.manual_seed(1)
    model, sample = make_model(a.kind)
    model = model.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(7)
    x_all = torch.rand((a.samples,) + sample, generator=g) * 2 - 1
    y_all = torch.randint(0, 10, (a.samples,), generator=g)
    steps = a.samples // a.batch
    fwd = torch.compile(model) if a.mode == "compile" else model

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(fwd(x), y)
        loss.backward()
        opt.step()
        return loss

    if a.mode == "seed":
        ds = torch.utils.data.TensorDataset(x_all, y_all)
        loader = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, drop_last=True)
        for i, (x, y) in enumerate(loader):  # warm-up
            step(x.to(dev), y.to(dev)).item()
            if i == 5:
                break
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        running = 0.0
        for x, y in loader:
            running += step(x.to(dev), y.to(dev)).item()
        torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        last = running / steps
    else:
        xd, yd = x_all.to(dev), y_all.to(dev)
        for i in range(10):  # warm-up (and compilation)
            step(xd[i * a.batch:(i + 1) * a.batch], yd[i * a.batch:(i + 1) * a.batch])
        torch.cuda.synchronize()
        perm = torch.randperm(a.samples, device=dev)
        t0 = time.perf_counter()
        acc = torch.zeros((), device=dev)
        last = 0.0
        for i in range(steps):
            idx = perm[i * a.batch:(i + 1) * a.batch]
            acc += step(xd[idx], yd[idx]).detach()
            if (i + 1) % a.metrics_every == 0:
                last = acc.item() / a.metrics_every
                acc.zero_()
        torch.cuda.synchronize()
        secs = time.perf_counter() - t0
    print(json.dumps({"impl": f"torch-{a.mode}", "model": a.kind, "batch": a.batch, "samples": a.samples,
                      "steps": steps, "epoch_s": round(secs, 4), "samples_per_s": round(steps * a.batch / secs),
                      "final_loss": round(float(last), 5), "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name()}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
