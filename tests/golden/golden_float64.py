# Float64 goldens (tests/golden/float64/, README.md "Float64 goldens"): ops at realistic sizes and
# a batchnorm ResNet's 20-step trajectory, computed by PyTorch in float64 from the same f32 inputs,
# each with PyTorch fp32's own error against float64, so a test can hold dnnc to a real reference.
import copy
import hashlib
import json
import math
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import golden_data
import golden_io
import golden_models
import golden_ops

SAMPLES = 32768  # tensors with more than 2 * SAMPLES elements are stored at every stride-th element


# ---- inputs: a counter hash both sides compute bit for bit ------------------------------------

def hash_u24(seed, n):
    """splitmix64 of (seed << 32) + i for i in [0, n), top 24 bits (docs: README.md)."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed) << np.uint64(32)) + np.arange(n, dtype=np.uint64)
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z >> np.uint64(40)


def make_input(spec):
    """f32: fl32(lo + span * k / 2^24) (exact in double, rounded once); i64: k mod classes."""
    n = math.prod(spec["shape"])
    k = hash_u24(spec["seed"], n)
    if spec["dtype"] == "i64":
        return torch.from_numpy((k % np.uint64(spec["classes"])).astype(np.int64)).reshape(spec["shape"])
    v = spec["lo"] + spec["span"] * (k.astype(np.float64) * 2.0 ** -24)
    return torch.from_numpy(v.astype(np.float32)).reshape(spec["shape"])


def f32(name, shape, lo, span):
    return {"dtype": "f32", "shape": list(shape), "lo": float(lo), "span": float(span),
            "seed": zlib.crc32(name.encode())}


def labels(name, shape, classes):
    return {"dtype": "i64", "shape": list(shape), "classes": classes, "seed": zlib.crc32(name.encode())}


# ---- storage: float64 as two f32 tensors, large tensors sampled -------------------------------

def stride_of(numel):
    if numel <= 2 * SAMPLES:
        return 1
    s = -(-numel // SAMPLES)
    return s if s % 2 else s + 1  # odd: the samples visit every channel of a power-of-two layout


def split64(t):
    """(hi, lo) f32 tensors with hi = fl32(t), lo = fl32(t - hi): hi + lo is t to 2^-48."""
    hi = t.to(torch.float32)
    return hi, (t - hi.to(torch.float64)).to(torch.float32)


def rel(a, b):
    a, b = a.to(torch.float64).flatten(), b.to(torch.float64).flatten()
    n = b.norm()
    return float((a - b).norm() / n) if n > 0 else float((a - b).norm())


# ---- op cases --------------------------------------------------------------------------------

class OpCase:
    def __init__(self, name, op, attrs, inputs, diff, forward, grad_out=None):
        self.name, self.op, self.attrs, self.inputs = name, op, attrs, inputs
        self.diff, self.forward, self.grad_out = diff, forward, grad_out


def _ln(t):
    y = F.layer_norm(t["x"], [t["x"].shape[-1]], t["weight"], t["bias"], eps=1e-5)
    with torch.no_grad():
        _, mean, rstd = torch.native_layer_norm(t["x"], [t["x"].shape[-1]], t["weight"], t["bias"], 1e-5)
    return {"y": y, "mean": mean.reshape(-1), "invstd": rstd.reshape(-1)}


def cases():
    c = []
    n = "batchnorm2d_64x32x32x32"  # 65,536 values per channel, mean 3 and std 0.6: variance cancels
    c.append(OpCase(n, "batchnorm2d", {"eps": 1e-5, "momentum": 0.1},
                    {"x": f32(n + ".x", [64, 32, 32, 32], 2, 2), "weight": f32(n + ".w", [32], 0.5, 1),
                     "bias": f32(n + ".b", [32], -0.5, 1), "running_mean": f32(n + ".rm", [32], -0.25, 0.5),
                     "running_var": f32(n + ".rv", [32], 0.5, 1)},
                    ["x", "weight", "bias"], golden_ops.batchnorm_outputs, f32(n + ".dy", [64, 32, 32, 32], -1, 2)))
    n = "conv2d_64x16x32x32"  # weight and bias gradients over N*H*W = 65,536 positions
    c.append(OpCase(n, "conv2d", {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1},
                    {"x": f32(n + ".x", [64, 16, 32, 32], -1, 2), "weight": f32(n + ".w", [16, 16, 3, 3], -0.125, 0.25),
                     "bias": f32(n + ".b", [16], -0.5, 1)},
                    ["x", "weight", "bias"],
                    lambda t: {"y": F.conv2d(t["x"], t["weight"], t["bias"], padding=1)},
                    f32(n + ".dy", [64, 16, 32, 32], 0, 1)))  # dy > 0: bias sums do not cancel
    n = "linear_8192x256"  # weight and bias gradients over 8,192 rows
    c.append(OpCase(n, "linear", {}, {"x": f32(n + ".x", [8192, 256], 0, 1), "weight": f32(n + ".w", [64, 256], -0.0625, 0.125),
                                      "bias": f32(n + ".b", [64], -0.5, 1)},
                    ["x", "weight", "bias"], lambda t: {"y": F.linear(t["x"], t["weight"], t["bias"])},
                    f32(n + ".dy", [8192, 64], 0, 1)))
    for n, shape, axes in [("reduce_sum_1m", [1048576], [0]), ("reduce_sum_bias", [64, 16, 32, 32], [0, 2, 3]),
                           ("reduce_sum_rows", [131072, 8], [0]), ("reduce_sum_cols", [8, 131072], [1])]:
        c.append(OpCase(n, "reduce_sum", {"axes": axes, "keepdim": False}, {"x": f32(n + ".x", shape, 0, 1)}, [],
                        lambda t, axes=axes: {"y": t["x"].sum(dim=axes)}))
    n = "mse_loss_1m"
    c.append(OpCase(n, "mse_loss", {}, {"pred": f32(n + ".p", [1024, 1024], -1, 2), "target": f32(n + ".t", [1024, 1024], -1, 2)},
                    ["pred", "target"], lambda t: {"loss": F.mse_loss(t["pred"], t["target"])}))
    for n, b, k in [("cross_entropy_10", 65536, 10), ("cross_entropy_1000", 1024, 1000)]:
        c.append(OpCase(n, "cross_entropy", {}, {"logits": f32(n + ".x", [b, k], -4, 8), "target": labels(n + ".y", [b], k)},
                        ["logits"], lambda t: {"loss": F.cross_entropy(t["logits"], t["target"])}))
    for n, b, k in [("softmax_10", 8192, 10), ("softmax_1000", 512, 1000)]:
        for op, fn in [("softmax", F.softmax), ("log_softmax", F.log_softmax)]:
            name = n.replace("softmax", op, 1)
            c.append(OpCase(name, op, {"axis": -1}, {"x": f32(name + ".x", [b, k], -4, 8)}, ["x"],
                            lambda t, fn=fn: {"y": fn(t["x"], dim=-1)}, f32(name + ".dy", [b, k], -1, 2)))
    n = "layernorm_1024x1024"  # rows of 1,024; weight and bias gradients over 1,024 rows
    c.append(OpCase(n, "layernorm", {"normalized_shape": [1024], "eps": 1e-5},
                    {"x": f32(n + ".x", [1024, 1024], 1, 2), "weight": f32(n + ".w", [1024], 0.5, 1),
                     "bias": f32(n + ".b", [1024], -0.5, 1)},
                    ["x", "weight", "bias"], _ln, f32(n + ".dy", [1024, 1024], -1, 2)))
    return c


def _run(case, dtype):
    """(outputs dict, grads dict) of the case in `dtype` from the f32 inputs."""
    inputs = {k: make_input(s) for k, s in case.inputs.items()}
    leaves = {k: (v.to(dtype) if v.dtype == torch.float32 else v) for k, v in inputs.items()}
    leaves = {k: (v.clone().requires_grad_(True) if k in case.diff else v) for k, v in leaves.items()}
    outs = case.forward(leaves)
    grads = {}
    if case.diff:
        first = next(iter(outs.values()))
        g = None if first.dim() == 0 else make_input(case.grad_out).to(dtype)
        grads = dict(zip(case.diff, torch.autograd.grad(first, [leaves[k] for k in case.diff], g)))
    return {k: v.detach() for k, v in outs.items()}, grads


def evaluate_op(case):
    o32, g32 = _run(case, torch.float32)
    o64, g64 = _run(case, torch.float64)
    tensors, err, strides = {}, {}, {}
    pairs = [(f"out.{k}", o32[k], o64[k]) for k in o64] + [(f"grad.in.{k}", g32[k], g64[k]) for k in g64]
    for name, a, b in pairs:
        s = stride_of(b.numel())
        a, b = a.flatten()[::s], b.flatten()[::s]
        tensors[f"ref.{name}.hi"], tensors[f"ref.{name}.lo"] = split64(b)
        err[name] = rel(a, b)
        strides[name] = s
        assert bool(torch.isfinite(b).all()), f"{case.name}: {name} is not finite"
    out_names = list(o64)
    metadata = {
        "format": golden_io.FORMAT, "version": golden_io.VERSION, "kind": "float64_op", "torch": torch.__version__,
        "case": case.name, "op": case.op, "attrs": json.dumps(case.attrs, sort_keys=True),
        "operands": json.dumps(list(case.inputs)), "inputs": json.dumps(case.inputs, sort_keys=True),
        "outputs": json.dumps(out_names), "grads": json.dumps(case.diff),
        "grad_out": json.dumps(case.grad_out) if case.grad_out else "null",
        "batch": str(case.inputs[next(iter(case.inputs))]["shape"][0]),
        "torch_error": json.dumps(err, sort_keys=True), "stride": json.dumps(strides, sort_keys=True),
    }
    return tensors, metadata


# ---- the batchnorm ResNet's trajectory ---------------------------------------------------------

class ResNetMnist(nn.Module):
    """models/resnet_mnist.dnn."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(16)
        self.b1c1 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.b1bn1 = nn.BatchNorm2d(16)
        self.b1c2 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.b1bn2 = nn.BatchNorm2d(16)
        self.down = nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False)
        self.bnd = nn.BatchNorm2d(32)
        self.b2c1 = nn.Conv2d(32, 32, 3, padding=1, bias=False)
        self.b2bn1 = nn.BatchNorm2d(32)
        self.b2c2 = nn.Conv2d(32, 32, 3, padding=1, bias=False)
        self.b2bn2 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32, 10)

    def forward(self, image):
        x0 = F.relu(self.bn0(self.stem(image)))
        x1 = F.relu(x0 + self.b1bn2(self.b1c2(F.relu(self.b1bn1(self.b1c1(x0))))))
        x2 = F.relu(self.bnd(self.down(x1)))
        x3 = F.relu(x2 + self.b2bn2(self.b2c2(F.relu(self.b2bn1(self.b2c1(x2))))))
        return self.fc(torch.flatten(F.avg_pool2d(x3, 14), 1))


TRAJECTORY_MODELS = [golden_models.ModelSpec("resnet_mnist", ResNetMnist, (1, 28, 28), 32, False)]
TRAJECTORY_OPTIMIZER = "sgd_nesterov_bn"  # golden_models.OPTIMIZERS: SGD, Nesterov momentum, weight decay


def evaluate_model(spec, repo_root):
    source, recipe = golden_models.read_recipe(spec, repo_root)
    torch.manual_seed(recipe["seed"])
    model = spec.module()
    keys = list(model.state_dict())
    batches = golden_data.make_batches(zlib.crc32(f"data:{spec.name}".encode()), golden_models.STEPS, spec.batch,
                                       spec.shape, recipe["mean"], recipe["std"])
    tensors = {f"param.{k}": v.detach().clone() for k, v in model.state_dict().items()}
    for i, (x, y) in enumerate(batches):
        tensors[f"batch.{i}.x"], tensors[f"batch.{i}.y"] = x, y
    l32, s32 = golden_models.trajectory(model, TRAJECTORY_OPTIMIZER, batches)
    l64, s64 = golden_models.trajectory(copy.deepcopy(model).double(), TRAJECTORY_OPTIMIZER,
                                        [(x.double(), y) for x, y in batches])
    tensors["fp32.loss"] = l32
    tensors["f64.loss.hi"], tensors["f64.loss.lo"] = split64(l64)
    err = {"loss": rel(l32, l64)}
    for k in keys:
        tensors[f"fp32.final.{k}"] = s32[k]
        if s64[k].dtype == torch.float64:
            tensors[f"f64.final.{k}.hi"], tensors[f"f64.final.{k}.lo"] = split64(s64[k])
            err[k] = rel(s32[k], s64[k])
        else:
            tensors[f"f64.final.{k}"] = s64[k]
    metadata = {
        "format": golden_io.FORMAT, "version": golden_io.VERSION, "kind": "float64_model", "torch": torch.__version__,
        "model": spec.path, "model_sha256": hashlib.sha256(source).hexdigest(), "batch": str(spec.batch),
        "steps": str(golden_models.STEPS), "seed": str(recipe["seed"]),
        "input_shape": json.dumps([spec.batch, *spec.shape]), "loss": "cross_entropy", "params": json.dumps(keys),
        "optimizer": json.dumps(golden_models.OPTIMIZERS[TRAJECTORY_OPTIMIZER], sort_keys=True), "torch_error": json.dumps(err, sort_keys=True),
    }
    return tensors, metadata
