#!/usr/bin/python3
"""The PyTorch script a user would write instead of `dnnc train MODEL.dnn` on an MNIST-format
IDX data set (MNIST, Fashion-MNIST): the model of bench/torch_zoo.py, the train block's recipe
(given on the command line), shuffled batches drawn as uint8 and normalized when drawn (as
torchvision's ToTensor + Normalize, and as dnnc's loader), evaluation of the test split at the end.

    torch_train.py MODEL DATA_DIR --batch B --epochs E --mean M --std S --seed K [--threads T|auto]

--threads auto (the default) times 30 steps with 1 and with 2 threads first and trains with
the faster (PyTorch at its best thread setting). Prints one JSON line: test accuracy, threads,
train seconds (the loop), the probe's seconds and the total (data loading and evaluation
included, the probe not).
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_zoo  # noqa: E402


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data_dir, split):
    def find(stem):
        for name in (stem, stem + ".gz"):
            if os.path.exists(os.path.join(data_dir, name)):
                return os.path.join(data_dir, name)
        raise SystemExit(f"torch_train: no {stem}[.gz] in {data_dir}")
    prefix = "train" if split == "train" else "t10k"
    images = torch.from_numpy(read_idx(find(f"{prefix}-images-idx3-ubyte")).copy()).unsqueeze(1)
    labels = torch.from_numpy(read_idx(find(f"{prefix}-labels-idx1-ubyte")).astype(np.int64))
    return images, labels


def batches(images, labels, batch, order, mean, std):
    for i in range(0, len(order), batch):
        idx = order[i:i + batch]
        yield (images[idx].float() / 255 - mean) / std, labels[idx]


def steps_per_s(name, images, labels, args, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(args.seed)
    model, _ = torch_zoo.make_model(name)
    opt = torch_zoo.make_optimizer(name, model)
    loss_fn = nn.CrossEntropyLoss()
    order = torch.randperm(len(labels))[:35 * args.batch]
    t0 = None
    for k, (x, y) in enumerate(batches(images, labels, args.batch, order, args.mean, args.std)):
        if k == 5:
            t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return 30 / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("data_dir")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--mean", type=float, required=True)
    ap.add_argument("--std", type=float, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", default="auto")
    ap.add_argument("--eval-every-epoch", action="store_true",
                    help="evaluate after every epoch, printing {\"epoch\": E, \"test_acc\": A} lines as it goes")
    args = ap.parse_args()
    t_start = time.perf_counter()
    images, labels = load(args.data_dir, "train")
    test_images, test_labels = load(args.data_dir, "test")
    t_probe = time.perf_counter()
    if args.threads == "auto":
        threads = max((1, 2), key=lambda t: steps_per_s(args.model, images, labels, args, t))
    else:
        threads = int(args.threads)
    probe_s = time.perf_counter() - t_probe
    if args.eval_every_epoch:
        print(json.dumps({"probe_s": probe_s}), flush=True)
    torch.set_num_threads(threads)
    torch.manual_seed(args.seed)
    model, _ = torch_zoo.make_model(args.model)
    opt = torch_zoo.make_optimizer(args.model, model)
    loss_fn = nn.CrossEntropyLoss()
    def evaluate():
        model.eval()
        hits = 0
        with torch.no_grad():
            for x, y in batches(test_images, test_labels, 1000, torch.arange(len(test_labels)), args.mean, args.std):
                hits += int((model(x).argmax(1) == y).sum())
        return hits

    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        for x, y in batches(images, labels, args.batch, torch.randperm(len(labels)), args.mean, args.std):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        if args.eval_every_epoch and epoch + 1 < args.epochs:
            print(json.dumps({"epoch": epoch + 1, "test_acc": evaluate() / len(test_labels)}), flush=True)
    train_s = time.perf_counter() - t0
    correct = evaluate()
    if args.eval_every_epoch:
        print(json.dumps({"epoch": args.epochs, "test_acc": correct / len(test_labels)}), flush=True)
    print(json.dumps({"model": args.model, "seed": args.seed, "threads": threads, "test_acc": correct / len(test_labels),
                      "train_s": round(train_s, 2), "probe_s": round(probe_s, 2),
                      "total_s": round(time.perf_counter() - t_start - probe_s, 2)}))


if __name__ == "__main__":
    main()
