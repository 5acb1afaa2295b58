# --precision: how far the fp32 goldens are from the same computation in float64, per tensor,
# as evidence that the C++ tolerances (1e-5 per op tensor, 1e-4 per loss trajectory) have room.
import copy
import json
import zlib

import torch

import golden_data
import golden_io
import golden_models


def _rel(a, b):
    b = b.to(torch.float64)
    d = (a.to(torch.float64) - b).norm()
    n = b.norm()
    return float(d / n) if n > 0 else float(d)


def op_errors(case, path):
    """Recomputes an op golden file's outputs and gradients in float64 from its stored f32 inputs
    and grad_out. Returns [(relative error, tensor name)]."""
    stored, meta = golden_io.read(path)
    t = {k: torch.tensor(v, dtype=torch.float64 if d == "F32" else torch.int64).reshape(s)
         for k, (d, s, v) in stored.items()}
    leaves = {k: t[f"in.{k}"].clone().requires_grad_(k in case.diff) for k in json.loads(meta["operands"])}
    outs = case.forward(leaves)
    first = outs[json.loads(meta["outputs"])[0]]
    grads = torch.autograd.grad(first, [leaves[k] for k in case.diff], t.get("grad_out"))
    ref = {f"out.{k}": v.detach() for k, v in outs.items()}
    ref.update({f"grad.in.{k}": g for k, g in zip(case.diff, grads)})
    return [(_rel(t[k], v), k) for k, v in ref.items()]


def model_errors(spec, recipe):
    """Runs a model's trajectories in float32 and float64 from the same initial params and
    batches. Returns [(relative error, "<kind>.loss" | "<kind>.final")] (final: worst param)."""
    torch.manual_seed(recipe["seed"])
    model = spec.module()
    batches = golden_data.make_batches(zlib.crc32(f"data:{spec.name}".encode()), golden_models.STEPS,
                                       spec.batch, spec.shape, recipe["mean"], recipe["std"])
    b64 = [(x.double(), y) for x, y in batches]
    out = []
    for kind in golden_models.OPTIMIZERS:
        l32, f32 = golden_models.trajectory(model, kind, batches)
        l64, f64 = golden_models.trajectory(copy.deepcopy(model).double(), kind, b64)
        out.append((_rel(l32, l64), f"{kind}.loss"))
        out.append((max(_rel(f32[k], f64[k]) for k in f32), f"{kind}.final"))
    return out
