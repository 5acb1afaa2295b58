# A light reader of .dnn files, only to keep the PyTorch mirrors honest: it checks that a mirror
# declares the same layers (names, kinds, sizes) and calls the same ops as the model block,
# and reads the recipe values the goldens use (train seed, normalize mean/std).
import operator
import re

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

LAYER_KINDS = {"linear": nn.Linear, "conv2d": nn.Conv2d, "batchnorm2d": nn.BatchNorm2d,
               "batchnorm1d": nn.BatchNorm1d, "layernorm": nn.LayerNorm}
# torch functions of the mirrors -> dnnc op names.
TORCH_OPS = {F.relu: "relu", torch.relu: "relu", torch.flatten: "flatten", F.max_pool2d: "maxpool2d",
             F.avg_pool2d: "avgpool2d", torch.tanh: "tanh", torch.sigmoid: "sigmoid", F.gelu: "gelu",
             F.leaky_relu: "leaky_relu", F.softmax: "softmax", F.log_softmax: "log_softmax",
             operator.add: "add", torch.reshape: "reshape", torch.cat: "concat"}


class MirrorError(Exception):
    pass


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"#[^\n]*", "", text)


def _block(text, kind):
    m = re.search(r"\b" + kind + r"\s+\w+\s*\{(.*?)\}", text, flags=re.S)
    return m.group(1) if m else None


def _split_args(s):
    # Splits a call's argument text at top-level commas.
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += ch in "(["
        depth -= ch in ")]"
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _int_value(expr, where):
    # Integer arithmetic only (sizes like 16 * 15 * 15); tuples (3, 3) become a tuple of ints.
    if not re.fullmatch(r"[\d\s+*()/,-]+", expr):
        raise MirrorError(f"{where}: cannot read size expression '{expr}'")
    value = eval(expr.replace("/", "//"), {"__builtins__": {}})  # checked: digits and operators only
    return tuple(value) if isinstance(value, tuple) else value


def _pair(v):
    return v if isinstance(v, tuple) else (v, v)


def _calls(expr):
    return re.findall(r"([A-Za-z_]\w*)\s*\(", expr)


def _statements(block):
    # Joins lines until parentheses balance, so a call may span lines.
    stmts, cur, depth = [], "", 0
    for line in block.split("\n"):
        cur += " " + line.strip()
        depth += line.count("(") - line.count(")")
        if depth == 0 and cur.strip():
            stmts.append(cur.strip())
            cur = ""
    return stmts


def _expected_layer(path, name, kind, args):
    where = f"{path}: layer '{name}'"
    pos = [_int_value(a, where) for a in args if not re.match(r"\w+\s*:", a)]
    kw = {}
    for a in args:
        m = re.match(r"(\w+)\s*:\s*(.*)$", a)
        if m:
            kw[m.group(1)] = m.group(2).strip()
    bias = kw.pop("bias", "true") == "true"
    if kind == "linear":
        return {"in": pos[0], "out": pos[1], "bias": bias}
    if kind == "conv2d":
        kernel = _int_value(kw.pop("kernel"), where) if "kernel" in kw else pos[2]
        spec = {"in": pos[0], "out": pos[1], "kernel": _pair(kernel), "bias": bias}
        for key, default in [("stride", 1), ("padding", 0), ("dilation", 1)]:
            spec[key] = _pair(_int_value(kw.pop(key), where) if key in kw else default)
        return spec
    if kind in ("batchnorm2d", "batchnorm1d"):
        return {"features": pos[0]}
    return {"shape": tuple(pos) if len(pos) > 1 else (pos[0],)}


def _mirror_layer(mod):
    if isinstance(mod, nn.Linear):
        return {"in": mod.in_features, "out": mod.out_features, "bias": mod.bias is not None}
    if isinstance(mod, nn.Conv2d):
        return {"in": mod.in_channels, "out": mod.out_channels, "kernel": tuple(mod.kernel_size),
                "bias": mod.bias is not None, "stride": tuple(mod.stride), "padding": tuple(mod.padding),
                "dilation": tuple(mod.dilation)}
    if isinstance(mod, (nn.BatchNorm2d, nn.BatchNorm1d)):
        return {"features": mod.num_features}
    return {"shape": tuple(mod.normalized_shape)}


def _mirror_calls(module_cls):
    calls = []
    for node in torch.fx.symbolic_trace(module_cls()).graph.nodes:
        if node.op == "call_module":
            calls.append(f"layer:{node.target}")
        elif node.op == "call_function":
            if node.target not in TORCH_OPS:
                raise MirrorError(f"{module_cls.__name__}: no dnnc name for {node.target}")
            calls.append(TORCH_OPS[node.target])
    return sorted(calls)


def check_mirror(path, text, module_cls):
    """Compares the model block of the .dnn source `text` with the PyTorch mirror `module_cls`
    (layer names in order, kinds, sizes; multiset of ops called in the forward computation)
    and returns the recipe {"seed": int, "mean": [float], "std": [float]} of its train block.
    Raises MirrorError saying what differs or what it could not read."""
    text = _strip_comments(text)
    model, train = _block(text, "model"), _block(text, "train")
    if model is None or train is None:
        raise MirrorError(f"{path}: expected a model block and a train block")
    layers, calls = [], []
    for stmt in _statements(model):
        m = re.match(r"(\w+)\s*=\s*(\w+)\s*\((.*)\)\s*$", stmt)
        if m and m.group(2) in LAYER_KINDS:
            layers.append((m.group(1), m.group(2), _expected_layer(path, m.group(1), m.group(2),
                                                                    _split_args(m.group(3)))))
            continue
        if stmt.startswith("input ") or "=" not in stmt:
            continue
        calls += _calls(stmt.split("=", 1)[1])
        calls += ["add"] * stmt.split("=", 1)[1].count("+")  # a + b (residual shortcuts)
    layer_names = {name for name, _, _ in layers}
    dnn_calls = sorted(f"layer:{c}" if c in layer_names else c for c in calls if c != "cross_entropy")

    mirror = module_cls()
    children = list(mirror.named_children())
    if [n for n, _ in children] != [n for n, _, _ in layers]:
        raise MirrorError(f"{path}: layers {[n for n, _, _ in layers]}, but the mirror "
                          f"{module_cls.__name__} has {[n for n, _ in children]}")
    for (name, kind, want), (_, mod) in zip(layers, children):
        if not isinstance(mod, LAYER_KINDS[kind]) or _mirror_layer(mod) != want:
            raise MirrorError(f"{path}: layer '{name}' is {kind} {want}, but the mirror has {mod}")
    mirror_calls = _mirror_calls(module_cls)
    if mirror_calls != dnn_calls:
        raise MirrorError(f"{path}: the model calls {dnn_calls}, but the mirror calls {mirror_calls}")

    seed = re.search(r"\bseed\s*=\s*(\d+)", train)
    norm = re.search(r"normalize\s*:\s*mean\s*\(([^)]*)\)\s*,?\s*std\s*\(([^)]*)\)", train)
    if not seed or not norm:
        raise MirrorError(f"{path}: train block lacks 'seed = N' or 'normalize: mean (...), std (...)'")
    floats = lambda s: [float(v) for v in s.split(",") if v.strip()]  # noqa: E731
    return {"seed": int(seed.group(1)), "mean": floats(norm.group(1)), "std": floats(norm.group(2))}


def same_model_block(text_a, text_b):
    """True if two .dnn sources have the same model block up to comments, whitespace and the
    model's name."""
    def norm(t):
        block = _block(_strip_comments(t), "model")
        return None if block is None else re.sub(r"\s+", "", block)
    return norm(text_a) is not None and norm(text_a) == norm(text_b)
