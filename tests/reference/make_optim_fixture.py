#!/usr/bin/python3
# Writes tests/reference/optim_torch.json: a few torch.optim SGD/Adam/AdamW steps (CPU, float32,
# foreach=False) that optim_torch_test.cpp requires the reference kernels to reproduce bit for bit.
# Run by hand with Debian's python3-torch (1.13): /usr/bin/python3 tests/reference/make_optim_fixture.py
import json
import os

import torch

N, STEPS = 19, 4
RUNS = [
    ("sgd_momentum_dampening_wd", "sgd", dict(lr=0.05, momentum=0.9, dampening=0.25, weight_decay=0.01, nesterov=False)),
    ("sgd_nesterov_wd", "sgd", dict(lr=0.1, momentum=0.8, dampening=0.0, weight_decay=1e-3, nesterov=True)),
    ("sgd_plain", "sgd", dict(lr=0.3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)),
    ("adam_wd", "adam", dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.05)),
    ("adamw", "adamw", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
]


def floats(t):
    return [float(v) for v in t.tolist()]  # float32 -> double is exact; json keeps 17 digits


def main():
    torch.manual_seed(1234)
    p0 = torch.randn(N)
    grads = torch.randn(STEPS, N)
    out = {"torch": torch.__version__, "n": N, "steps": STEPS, "param": floats(p0),
           "grads": [floats(g) for g in grads], "runs": []}
    for name, kind, kw in RUNS:
        p = torch.nn.Parameter(p0.clone())
        cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
        opt = cls([p], foreach=False, **kw)
        params = []
        for s in range(STEPS):
            p.grad = grads[s].clone()
            opt.step()
            params.append(floats(p.detach()))
        opts = dict(kw)
        if "betas" in opts:
            opts["beta1"], opts["beta2"] = opts.pop("betas")
        out["runs"].append({"name": name, "kind": kind, "options": opts, "params": params})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim_torch.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
