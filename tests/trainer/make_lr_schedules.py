#!/usr/bin/python3
"""Writes tests/trainer/golden/lr_schedules.json: the lr of every step of short runs under
torch.optim.lr_scheduler (Debian's python3-torch), for lr_schedule_test.cpp to compare with
dnnc's ir::LrSchedule exactly. Each case runs PyTorch's usual loop: the lr is read before each
optimizer step; StepLR, MultiStepLR, CosineAnnealingLR and LinearLR step at every epoch end,
OneCycleLR (cycle_momentum=False, as dnnc's one_cycle) after every batch.

    /usr/bin/python3 tests/trainer/make_lr_schedules.py
"""
import json
import os
import warnings

import torch

# (dnnc kind, dnnc args, optimizer lr, epochs, steps per epoch, PyTorch constructor)
S = torch.optim.lr_scheduler
CASES = [
    ("step", {"step_size": 2, "gamma": 0.1}, 0.05, 9, 3, lambda o, n: S.StepLR(o, step_size=2, gamma=0.1)),
    ("step", {"step_size": 3}, 0.1, 10, 2, lambda o, n: S.StepLR(o, step_size=3)),
    ("multistep", {"milestones": [2, 5, 5], "gamma": 0.3}, 0.01, 9, 2,
     lambda o, n: S.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.3)),
    ("multistep", {"milestones": [1]}, 0.2, 4, 3, lambda o, n: S.MultiStepLR(o, milestones=[1])),
    ("cosine", {"t_max": 5, "eta_min": 0.001}, 0.1, 17, 2, lambda o, n: S.CosineAnnealingLR(o, T_max=5, eta_min=0.001)),
    ("cosine", {}, 0.003, 8, 3, lambda o, n: S.CosineAnnealingLR(o, T_max=8)),
    ("cosine", {"t_max": 3}, 1e-3, 12, 1, lambda o, n: S.CosineAnnealingLR(o, T_max=3)),
    ("linear", {"start_factor": 0.1, "end_factor": 1.0, "total_iters": 4}, 0.05, 8, 2,
     lambda o, n: S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=4)),
    ("linear", {}, 0.3, 7, 2, lambda o, n: S.LinearLR(o)),
    ("linear", {"start_factor": 1.0, "end_factor": 0.25, "total_iters": 3}, 0.02, 5, 2,
     lambda o, n: S.LinearLR(o, start_factor=1.0, end_factor=0.25, total_iters=3)),
    ("one_cycle", {"max_lr": 0.1}, 0.01, 3, 7, lambda o, n: S.OneCycleLR(o, max_lr=0.1, total_steps=n,
                                                                           cycle_momentum=False)),
    ("one_cycle", {"max_lr": 0.05, "pct_start": 0.25, "anneal_strategy": "linear", "div_factor": 10.0,
                   "final_div_factor": 100.0}, 0.01, 4, 5,
     lambda o, n: S.OneCycleLR(o, max_lr=0.05, total_steps=n, pct_start=0.25, anneal_strategy="linear",
                               div_factor=10.0, final_div_factor=100.0, cycle_momentum=False)),
    ("one_cycle", {"max_lr": 0.2, "pct_start": 0.4, "three_phase": True}, 0.01, 5, 4,
     lambda o, n: S.OneCycleLR(o, max_lr=0.2, total_steps=n, pct_start=0.4, three_phase=True,
                               cycle_momentum=False)),
    ("one_cycle", {"max_lr": 0.01}, 0.01, 5, 469, lambda o, n: S.OneCycleLR(o, max_lr=0.01, total_steps=n,
                                                                              cycle_momentum=False)),
]


def lrs(kind, lr, epochs, steps, make):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=lr, momentum=0.9)
    sched = make(opt, epochs * steps)
    out = []
    for _ in range(epochs):
        for _ in range(steps):
            out.append(opt.param_groups[0]["lr"])
            opt.step()
            if kind == "one_cycle":
                sched.step()
        if kind != "one_cycle":
            sched.step()
    return out


def main():
    warnings.simplefilter("ignore")
    cases = [{"kind": k, "args": a, "lr": lr, "epochs": e, "steps_per_epoch": s, "lrs": lrs(k, lr, e, s, make)}
             for k, a, lr, e, s, make in CASES]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "lr_schedules.json")
    with open(path, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases")


if __name__ == "__main__":
    main()
