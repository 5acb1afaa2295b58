#!/usr/bin/env python3
"""The PyTorch side of bench/memory_bench.py: what a user would write instead of `dnnc train
--steps S` and `dnnc eval` on CIFAR-10 binary files, run once per process so that its peak RSS
(measured by the parent with wait4) is the loop's own.

    torch_memory.py train MODEL DATA_DIR BATCH STEPS EVAL_BATCH
    torch_memory.py eval  MODEL DATA_DIR EVAL_BATCH
    torch_memory.py idle  MODEL

MODEL is the stem of a models/*.dnn file (its PyTorch equivalent is in bench/torch_zoo.py). The data is
held as uint8 (as torchvision's CIFAR10 dataset does) and each batch is converted and
normalised when it is drawn, as dnnc's loader does. `train` runs STEPS steps of the train block's
optimizer on shuffled batches, then evaluates the test set under torch.no_grad() as
`dnnc train` does at its end; `eval` only evaluates; `idle` imports torch and builds the model
(the library's own footprint). Prints one JSON line.
"""
import json
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_zoo  # noqa: E402


def load(files):
    raw = np.concatenate([np.fromfile(f, dtype=np.uint8) for f in files]).reshape(-1, 3073)
    return torch.from_numpy(raw[:, 1:].reshape(-1, 3, 32, 32).copy()), torch.from_numpy(raw[:, 0].astype(np.int64))


def batches(images, labels, batch, order):
    mean = torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1)
    std = torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1)
    for i in range(0, len(order), batch):
        idx = order[i:i + batch]
        yield (images[idx].float() / 255 - mean) / std, labels[idx]


def evaluate(model, data_dir, eval_batch):
    images, labels = load([os.path.join(data_dir, "test_batch.bin")])
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in batches(images, labels, eval_batch, torch.arange(len(labels))):
            correct += int((model(x).argmax(1) == y).sum())
    return correct, len(labels)


def main():
    torch.set_num_threads(2)
    torch.manual_seed(1)
    mode, name = sys.argv[1], sys.argv[2]
    model, _ = torch_zoo.make_model(name)
    out = {"mode": mode, "model": name}
    if mode == "train":
        data_dir, batch, steps, eval_batch = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
        files = sorted(os.path.join(data_dir, f) for f in os.listdir(data_dir) if f.startswith("data_batch_"))
        images, labels = load(files)
        opt = torch_zoo.make_optimizer(name, model)
        loss_fn = nn.CrossEntropyLoss()
        g = torch.Generator().manual_seed(1)
        done = 0
        model.train()
        while done < steps:
            for x, y in batches(images, labels, batch, torch.randperm(len(labels), generator=g)):
                if done == steps:
                    break
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                out["loss"] = loss.item()
                done += 1
        out["correct"], out["total"] = evaluate(model, data_dir, eval_batch)
    elif mode == "eval":
        out["correct"], out["total"] = evaluate(model, sys.argv[3], int(sys.argv[4]))
    elif mode != "idle":
        raise SystemExit(__doc__)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
