# Per-op golden cases: every user-facing op of docs/ops.md computed by PyTorch (fp32, CPU),
# forward outputs and input gradients, in dnnc's operand order and attribute names.
import json
import zlib

import torch
import torch.nn.functional as F

import golden_io

# dnnc output names per op (docs/ops.md); ops not listed have one output "y".
OUTPUTS = {
    "batchnorm2d": ["y", "mean", "invstd", "new_running_mean", "new_running_var"],
    "layernorm": ["y", "mean", "invstd"],
    "cross_entropy": ["loss"],
    "mse_loss": ["loss"],
}


class Case:
    """One golden file: op name, complete dnnc attrs, inputs in dnnc operand order, the names
    of the differentiable inputs, and a forward function returning {output name: tensor}
    (first entry = the output that gradients flow from)."""

    def __init__(self, name, op, attrs, inputs, diff, forward, gen):
        self.name, self.op, self.attrs = name, op, attrs
        self.inputs, self.diff, self.forward, self.gen = inputs, diff, forward, gen


def _gen(name):
    # Per-case seed from the case name, so adding or reordering cases changes no other file.
    return torch.Generator().manual_seed(zlib.crc32(name.encode()))


def _randn(g, *shape, scale=1.0, shift=0.0):
    return torch.randn(*shape, generator=g) * scale + shift


def _uniform(g, lo, hi, *shape):
    return torch.rand(*shape, generator=g) * (hi - lo) + lo


def _away_from_zero(t, eps=0.05):
    # Keeps inputs of relu-like ops clear of the kink at 0.
    return torch.where(t >= 0, t + eps, t - eps)


def _distinct(g, *shape):
    # Pairwise distinct values in (-2, 2), at least 4/numel apart: no ties in a pooling window.
    n = 1
    for d in shape:
        n *= d
    perm = torch.randperm(n, generator=g).to(torch.float32)
    return ((perm + 0.5) / n * 4.0 - 2.0).reshape(shape)


def _nonzero_divisor(g, *shape):
    sign = torch.where(torch.rand(*shape, generator=g) < 0.5, -1.0, 1.0)
    return sign * _uniform(g, 0.5, 2.0, *shape)


def _y(fn):
    return lambda t: {"y": fn(t)}


def _linear_cases():
    cases = []
    for name, xshape, bias in [("linear", (4, 5), True), ("linear_nobias", (4, 5), False),
                               ("linear_3d", (2, 3, 5), True)]:
        g = _gen(name)
        inputs = {"x": _randn(g, *xshape), "weight": _randn(g, 3, 5, scale=0.5)}
        if bias:
            inputs["bias"] = _randn(g, 3, scale=0.5)
        cases.append(Case(name, "linear", {}, inputs, list(inputs),
                          _y(lambda t: F.linear(t["x"], t["weight"], t.get("bias"))), g))
    return cases


def _matmul_cases():
    cases = []
    m, k, n = 4, 5, 3
    for ta in (False, True):
        for tb in (False, True):
            name = "matmul_" + ("t" if ta else "n") + ("t" if tb else "n")
            g = _gen(name)
            inputs = {"a": _randn(g, *((k, m) if ta else (m, k))),
                      "b": _randn(g, *((n, k) if tb else (k, n)))}

            def fwd(t, ta=ta, tb=tb):
                a = t["a"].t() if ta else t["a"]
                b = t["b"].t() if tb else t["b"]
                return {"y": a @ b}
            cases.append(Case(name, "matmul", {"transpose_a": ta, "transpose_b": tb},
                              inputs, ["a", "b"], fwd, g))
    return cases


def _conv_cases():
    cases = []
    # name, input hw, stride, padding, dilation, bias
    for name, hw, s, p, d, bias in [("conv2d", 8, 1, 0, 1, True),
                                    ("conv2d_stride2", 9, 2, 0, 1, True),
                                    ("conv2d_padding1", 8, 1, 1, 1, True),
                                    ("conv2d_dilation2", 9, 1, 0, 2, True),
                                    ("conv2d_nobias", 8, 1, 0, 1, False),
                                    ("conv2d_stride2_padding1", 8, 2, 1, 1, True)]:
        g = _gen(name)
        inputs = {"x": _randn(g, 2, 3, hw, hw), "weight": _randn(g, 4, 3, 3, 3, scale=0.3)}
        if bias:
            inputs["bias"] = _randn(g, 4, scale=0.5)
        attrs = {"stride": [s, s], "padding": [p, p], "dilation": [d, d], "groups": 1}

        def fwd(t, s=s, p=p, d=d):
            return {"y": F.conv2d(t["x"], t["weight"], t.get("bias"), stride=s, padding=p, dilation=d)}
        cases.append(Case(name, "conv2d", attrs, inputs, list(inputs), fwd, g))
    return cases


def _pool_cases():
    cases = []
    for name, shape, k, s, p in [("maxpool2d_k2", (2, 3, 8, 8), 2, 2, 0),
                                 ("maxpool2d_k2_odd", (2, 2, 7, 7), 2, 2, 0),
                                 ("maxpool2d_k3_s2_p1", (2, 3, 8, 8), 3, 2, 1)]:
        g = _gen(name)
        attrs = {"kernel": [k, k], "stride": [s, s], "padding": [p, p]}
        cases.append(Case(name, "maxpool2d", attrs, {"x": _distinct(g, *shape)}, ["x"],
                          _y(lambda t, k=k, s=s, p=p: F.max_pool2d(t["x"], k, s, p)), g))
    for name, k, s, p, cip in [("avgpool2d_k2", 2, 2, 0, True),
                               ("avgpool2d_k3_s2_p1", 3, 2, 1, True),
                               ("avgpool2d_k3_s2_p1_exclude_pad", 3, 2, 1, False)]:
        g = _gen(name)
        attrs = {"kernel": [k, k], "stride": [s, s], "padding": [p, p], "count_include_pad": cip}
        cases.append(Case(name, "avgpool2d", attrs, {"x": _randn(g, 2, 3, 8, 8)}, ["x"],
                          _y(lambda t, k=k, s=s, p=p, cip=cip:
                             F.avg_pool2d(t["x"], k, s, p, count_include_pad=cip)), g))
    return cases


def _activation_cases():
    cases = []
    for name, op, attrs, fn, kink in [
            ("relu", "relu", {}, F.relu, True),
            ("leaky_relu", "leaky_relu", {"negative_slope": 0.01}, lambda x: F.leaky_relu(x, 0.01), True),
            ("leaky_relu_0p2", "leaky_relu", {"negative_slope": 0.2}, lambda x: F.leaky_relu(x, 0.2), True),
            ("tanh", "tanh", {}, torch.tanh, False),
            ("sigmoid", "sigmoid", {}, torch.sigmoid, False),
            ("gelu", "gelu", {}, lambda x: F.gelu(x, approximate="none"), False)]:
        g = _gen(name)
        x = _randn(g, 3, 4, 5, scale=1.5)
        if kink:
            x = _away_from_zero(x)
        cases.append(Case(name, op, attrs, {"x": x}, ["x"], _y(lambda t, fn=fn: fn(t["x"])), g))
    for op, fn in [("softmax", F.softmax), ("log_softmax", F.log_softmax)]:
        for axis, suffix in [(-1, "axis_last"), (1, "axis1")]:
            name = f"{op}_{suffix}"
            g = _gen(name)
            cases.append(Case(name, op, {"axis": axis}, {"x": _randn(g, 3, 4, 5, scale=2.0)}, ["x"],
                              _y(lambda t, fn=fn, axis=axis: fn(t["x"], dim=axis)), g))
    return cases


def _shape_cases():
    cases = []
    for name, shape, sd, ed in [("flatten", (4, 3, 2, 5), 1, -1), ("flatten_1_2", (4, 3, 2, 5), 1, 2)]:
        g = _gen(name)
        cases.append(Case(name, "flatten", {"start_dim": sd, "end_dim": ed}, {"x": _randn(g, *shape)},
                          ["x"], _y(lambda t, sd=sd, ed=ed: torch.flatten(t["x"], sd, ed)), g))
    # -1 in reshape's shape is the batch dim (metadata "batch" = the leading dim of in.x).
    for name, target in [("reshape", [-1, 6, 4]), ("reshape_2d", [-1, 24])]:
        g = _gen(name)
        x = _randn(g, 4, 3, 8)
        concrete = [x.shape[0] if d == -1 else d for d in target]
        cases.append(Case(name, "reshape", {"shape": target}, {"x": x}, ["x"],
                          _y(lambda t, c=concrete: t["x"].reshape(c)), g))
    for name, shape, perm in [("transpose", (4, 3, 5), [0, 2, 1]), ("transpose_2d", (4, 3), [1, 0])]:
        g = _gen(name)
        cases.append(Case(name, "transpose", {"perm": perm}, {"x": _randn(g, *shape)}, ["x"],
                          _y(lambda t, perm=perm: t["x"].permute(perm).contiguous()), g))
    return cases


def _concat_cases():
    """torch.cat along channels of NCHW maps (2 and 3 operands), along features, and along the
    last axis given as -1; the gradient of each operand is its slice of dy."""
    cases = []
    for name, shapes, axis in [("concat_channels", [(2, 3, 4, 5), (2, 5, 4, 5)], 1),
                               ("concat_three", [(2, 2, 3, 3), (2, 1, 3, 3), (2, 4, 3, 3)], 1),
                               ("concat_features", [(3, 4), (3, 6)], 1),
                               ("concat_last", [(2, 3, 2, 2), (2, 3, 2, 5)], -1)]:
        g = _gen(name)
        inputs = {f"x{i}": _randn(g, *s) for i, s in enumerate(shapes)}
        cases.append(Case(name, "concat", {"axis": axis}, inputs, list(inputs),
                          _y(lambda t, axis=axis: torch.cat(list(t.values()), dim=axis)), g))
    return cases


def _binary_cases():
    cases = []
    fns = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
    for op, fn in fns.items():
        for suffix, ashape, bshape in [("", (4, 3), (4, 3)), ("_bcast_row", (4, 3), (3,)),
                                       ("_bcast_col", (4, 3), (4, 1)), ("_bcast_both", (4, 1), (1, 3))]:
            name = op + suffix
            g = _gen(name)
            a = _randn(g, *ashape)
            b = _nonzero_divisor(g, *bshape) if op == "div" else _randn(g, *bshape)
            cases.append(Case(name, op, {}, {"a": a, "b": b}, ["a", "b"],
                              _y(lambda t, fn=fn: fn(t["a"], t["b"])), g))
    for op, value, fn in [("add_scalar", 0.75, lambda x, v: x + v), ("mul_scalar", -1.5, lambda x, v: x * v),
                          ("div_scalar", 3.0, lambda x, v: x / v)]:
        g = _gen(op)
        cases.append(Case(op, op, {"value": value}, {"x": _randn(g, 4, 3)}, ["x"],
                          _y(lambda t, fn=fn, v=value: fn(t["x"], v)), g))
    return cases


def batchnorm_outputs(t):
    """dnnc's five batchnorm2d outputs (training mode, momentum 0.1, eps 1e-5) from operands `t`."""
    rm, rv = t["running_mean"].clone(), t["running_var"].clone()
    y = F.batch_norm(t["x"], rm, rv, t["weight"], t["bias"], training=True, momentum=0.1, eps=1e-5)
    with torch.no_grad():
        _, mean, invstd = torch.native_batch_norm(t["x"], t["weight"], t["bias"], t["running_mean"].clone(),
                                                  t["running_var"].clone(), True, 0.1, 1e-5)
    return {"y": y, "mean": mean, "invstd": invstd, "new_running_mean": rm, "new_running_var": rv}


def _norm_cases():
    cases = []
    name = "batchnorm2d"
    g = _gen(name)
    c = 3
    inputs = {"x": _randn(g, 4, c, 5, 5, scale=1.5, shift=0.3), "weight": _randn(g, c, scale=0.5, shift=1.0),
              "bias": _randn(g, c, scale=0.5), "running_mean": _randn(g, c, scale=0.1),
              "running_var": _uniform(g, 0.5, 1.5, c)}

    cases.append(Case(name, "batchnorm2d", {"eps": 1e-5, "momentum": 0.1}, inputs, ["x", "weight", "bias"],
                      batchnorm_outputs, g))

    for name, ns in [("layernorm", [6]), ("layernorm_2d", [5, 6])]:
        g = _gen(name)
        inputs = {"x": _randn(g, 4, 5, 6, scale=1.5, shift=0.3), "weight": _randn(g, *ns, scale=0.5, shift=1.0),
                  "bias": _randn(g, *ns, scale=0.5)}

        def ln(t, ns=ns):
            y = F.layer_norm(t["x"], ns, t["weight"], t["bias"], eps=1e-5)
            with torch.no_grad():
                _, mean, rstd = torch.native_layer_norm(t["x"], ns, t["weight"], t["bias"], 1e-5)
            rows = list(t["x"].shape[:t["x"].dim() - len(ns)])
            return {"y": y, "mean": mean.reshape(rows), "invstd": rstd.reshape(rows)}
        cases.append(Case(name, "layernorm", {"normalized_shape": ns, "eps": 1e-5}, inputs,
                          ["x", "weight", "bias"], ln, g))
    return cases


def _loss_cases():
    g = _gen("cross_entropy")
    ce = Case("cross_entropy", "cross_entropy", {},
              {"logits": _randn(g, 8, 10, scale=2.0), "target": torch.randint(0, 10, (8,), generator=g)},
              ["logits"], lambda t: {"loss": F.cross_entropy(t["logits"], t["target"])}, g)
    g = _gen("cross_entropy_smoothing")
    ce_s = Case("cross_entropy_smoothing", "cross_entropy", {"label_smoothing": 0.1},
                {"logits": _randn(g, 16, 10, scale=2.0), "target": torch.randint(0, 10, (16,), generator=g)},
                ["logits"], lambda t: {"loss": F.cross_entropy(t["logits"], t["target"], label_smoothing=0.1)}, g)
    g = _gen("mse_loss")
    mse = Case("mse_loss", "mse_loss", {}, {"pred": _randn(g, 4, 5), "target": _randn(g, 4, 5)},
               ["pred", "target"], lambda t: {"loss": F.mse_loss(t["pred"], t["target"])}, g)
    return [ce, ce_s, mse]


def all_cases():
    """Every op case, in a fixed order (names are unique; they are the file names)."""
    cases = (_linear_cases() + _matmul_cases() + _conv_cases() + _pool_cases() + _activation_cases()
             + _shape_cases() + _binary_cases() + _norm_cases() + _loss_cases() + _concat_cases())
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "duplicate case name"
    return cases


def evaluate(case):
    """Runs a case in PyTorch. Returns (tensors, metadata) for its golden file."""
    leaves = {k: (v.clone().requires_grad_(True) if k in case.diff else v.clone())
              for k, v in case.inputs.items()}
    outs = case.forward(leaves)
    out_names = OUTPUTS.get(case.op, ["y"])
    assert set(outs) <= set(out_names) and next(iter(outs)) == out_names[0], "outputs follow docs/ops.md"
    tensors = {f"in.{k}": v for k, v in case.inputs.items()}
    tensors.update({f"out.{k}": v.detach().clone() for k, v in outs.items()})
    first = outs[out_names[0]]
    wrt = [leaves[k] for k in case.diff]
    if first.dim() == 0:
        grads = torch.autograd.grad(first, wrt)
    else:
        grad_out = torch.randn(first.shape, generator=case.gen)
        tensors["grad_out"] = grad_out
        grads = torch.autograd.grad(first, wrt, grad_out)
    tensors.update({f"grad.in.{k}": gr for k, gr in zip(case.diff, grads)})
    for name, t in tensors.items():
        assert t.dtype in (torch.float32, torch.int64), f"{case.name}: {name} has dtype {t.dtype}"
        assert bool(torch.isfinite(t).all()), f"{case.name}: {name} is not finite"
    metadata = {
        "format": golden_io.FORMAT, "version": golden_io.VERSION, "kind": "op", "torch": torch.__version__,
        "case": case.name, "op": case.op, "attrs": json.dumps(case.attrs, sort_keys=True),
        "operands": json.dumps(list(case.inputs)), "outputs": json.dumps(out_names),
        "grads": json.dumps(case.diff), "batch": str(next(iter(case.inputs.values())).shape[0]),
    }
    return tensors, metadata
