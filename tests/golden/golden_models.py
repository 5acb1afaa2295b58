# Per-model goldens: PyTorch mirrors of models/*.dnn (same layer names, shapes and ops), their
# initial params, step-1 logits/loss/gradients and 20-step SGD/Adam(/Nesterov/AdamW) trajectories.
import copy
import hashlib
import json
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

import golden_data
import golden_dnn
import golden_io

STEPS = 20


class MnistMlp(nn.Module):
    """models/mnist_mlp.dnn: flatten, 784-512-256-10 with relu."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 512)
        self.fc2 = nn.Linear(512, 256)
        self.fc3 = nn.Linear(256, 10)

    def forward(self, image):
        h = F.relu(self.fc1(torch.flatten(image, 1)))
        h = F.relu(self.fc2(h))
        return self.fc3(h)


class CifarCnn(nn.Module):
    """models/cifar_cnn.dnn: conv 3->16 k3, relu, maxpool 2, flatten, linear 3600->10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3)
        self.fc = nn.Linear(16 * 15 * 15, 10)

    def forward(self, image):
        h = F.max_pool2d(F.relu(self.conv1(image)), 2)
        return self.fc(torch.flatten(h, 1))


class LeNet5(nn.Module):
    """models/lenet5.dnn: conv 1->6 k5 p2, relu, maxpool 2, conv 6->16 k5, relu, maxpool 2,
    flatten, 400-120-84-10 with relu."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, image):
        h = F.max_pool2d(F.relu(self.conv1(image)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        h = F.relu(self.fc1(torch.flatten(h, 1)))
        h = F.relu(self.fc2(h))
        return self.fc3(h)


class CifarStrided(nn.Module):
    """models/cifar_strided.dnn: conv 3->16 k3 p1, relu, conv 16->32 k3 s2 p1, relu,
    avgpool 2, flatten, linear 32*8*8->10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, image):
        h = F.relu(self.conv1(image))
        h = F.relu(self.conv2(h))
        h = F.avg_pool2d(h, 2)
        return self.fc(torch.flatten(h, 1))


class MlpBatchnorm1d(nn.Module):
    """tests/golden/mlp_batchnorm1d.dnn: flatten, linear 784->32 (no bias), batchnorm1d, relu, linear 32->10."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 32, bias=False)
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, image):
        return self.fc2(F.relu(self.bn(self.fc1(torch.flatten(image, 1)))))


class Batchnorm1dNcl(nn.Module):
    """tests/golden/batchnorm1d_ncl.dnn: the image as [N, 4, 196], batchnorm1d(4), relu, flatten,
    linear 784->10."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4, eps=1e-3, momentum=0.2)
        self.fc = nn.Linear(4 * 196, 10)

    def forward(self, image):
        return self.fc(torch.flatten(F.relu(self.bn(torch.reshape(image, (-1, 4, 196)))), 1))


class DenseConcat(nn.Module):
    """tests/golden/dense_concat.dnn: a DenseNet-style block joined by torch.cat along channels."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 4, 3, padding=1)
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 4, 3, padding=1)
        self.fc = nn.Linear(12 * 7 * 7, 10)

    def forward(self, image):
        x = F.max_pool2d(F.relu(self.stem(image)), 2)
        y1 = F.relu(self.conv1(x))
        y2 = F.relu(self.conv2(torch.cat((x, y1), 1)))
        h = F.max_pool2d(torch.cat((x, y1, y2), 1), 2)
        return self.fc(torch.flatten(h, 1))


class ModelSpec:
    """A golden model: its .dnn path, PyTorch mirror, input shape (without batch), the golden's
    batch size, whether the extra Nesterov/AdamW trajectories are recorded, and the gradient-
    clipping trajectories (keys of OPTIMIZERS with a clip_grad_norm) it also records."""

    def __init__(self, name, module, shape, batch, extra_optimizers, clipped=(), path=None):
        self.name, self.module, self.shape = name, module, shape
        self.batch, self.extra_optimizers, self.clipped = batch, extra_optimizers, list(clipped)
        self._path = path

    @property
    def path(self):
        return self._path or f"models/{self.name}.dnn"


# mnist_mlp_adam.dnn declares the same net as mnist_mlp.dnn (checked by golden_dnn), so it
# gets no file of its own.
SPECS = [
    ModelSpec("mnist_mlp", MnistMlp, (1, 28, 28), 32, True),
    ModelSpec("lenet5", LeNet5, (1, 28, 28), 32, False, ["sgd_clip"]),
    ModelSpec("cifar_cnn", CifarCnn, (3, 32, 32), 4, False),
    ModelSpec("cifar_strided", CifarStrided, (3, 32, 32), 4, False),
    # a layer, not a zoo model: batchnorm1d after a linear (lowered to batchnorm2d between reshapes)
    ModelSpec("mlp_batchnorm1d", MlpBatchnorm1d, (1, 28, 28), 16, False, path="tests/golden/mlp_batchnorm1d.dnn"),
    ModelSpec("batchnorm1d_ncl", Batchnorm1dNcl, (1, 28, 28), 8, False, path="tests/golden/batchnorm1d_ncl.dnn"),
    ModelSpec("dense_concat", DenseConcat, (1, 28, 28), 8, False, path="tests/golden/dense_concat.dnn"),
]

# Optimizers as dnnc attributes (docs/ops.md sgd_update / adam_update), and their torch.optim form.
OPTIMIZERS = {
    "sgd": {"lr": 0.01, "momentum": 0.9, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False},
    "adam": {"lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0, "decoupled": False},
    "sgd_nesterov": {"lr": 0.01, "momentum": 0.9, "dampening": 0.0, "weight_decay": 1e-4, "nesterov": True},
    "adamw": {"lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "decoupled": True},
    # the float64 trajectory's (golden_float64.py; README.md says why lr 0.001)
    "sgd_nesterov_bn": {"lr": 0.001, "momentum": 0.9, "dampening": 0.0, "weight_decay": 5e-4, "nesterov": True},
    # torch.nn.utils.clip_grad_norm_ before each step (the train block's clip_grad_norm); the
    # max norm lies inside the range of the gradients' norms, so some steps are clipped and some not
    "sgd_clip": {"lr": 0.01, "momentum": 0.9, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False,
                 "clip_grad_norm": 0.3},
}
# Trajectories with a clip_grad_norm record their final params too (a clip that goes wrong late
# shows in them before it shows in the losses).
CLIPPED = {k for k, v in OPTIMIZERS.items() if "clip_grad_norm" in v}


def _make_optimizer(kind, params):
    h = OPTIMIZERS[kind]
    if kind.startswith("sgd"):
        return torch.optim.SGD(params, lr=h["lr"], momentum=h["momentum"], dampening=h["dampening"],
                               weight_decay=h["weight_decay"], nesterov=h["nesterov"], foreach=False)
    cls = torch.optim.AdamW if h["decoupled"] else torch.optim.Adam
    return cls(params, lr=h["lr"], betas=(h["beta1"], h["beta2"]), eps=h["eps"],
               weight_decay=h["weight_decay"], foreach=False)


def trajectory(model, kind, batches):
    """Cross-entropy training of a copy of `model` with optimizer `kind` (a key of OPTIMIZERS),
    one step per batch; a step's loss is its forward value, before the update.
    Returns (losses f32[steps], final state_dict); `model` itself is left untouched."""
    model = copy.deepcopy(model)
    opt = _make_optimizer(kind, model.parameters())
    clip = OPTIMIZERS[kind].get("clip_grad_norm")
    losses, clipped = [], 0
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if clip is not None:
            norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip))
            clipped += norm > clip
        opt.step()
        losses.append(loss.detach().clone())
    # both branches of the clamp: some steps clipped, some left alone
    assert clip is None or 0 < clipped < len(batches), f"{kind}: {clipped} of {len(batches)} steps clipped"
    return torch.stack(losses), {k: v.detach().clone() for k, v in model.state_dict().items()}


def read_recipe(spec, repo_root):
    """Reads the spec's .dnn file and checks the mirror against it. Returns (source bytes,
    recipe {"seed", "mean", "std"}). Raises golden_dnn.MirrorError when the file is missing
    or the PyTorch mirror no longer matches it."""
    try:
        with open(f"{repo_root}/{spec.path}", "rb") as f:
            source = f.read()
    except OSError as e:
        raise golden_dnn.MirrorError(f"{spec.path}: cannot read the model: {e.strerror}") from e
    return source, golden_dnn.check_mirror(spec.path, source.decode("utf-8"), spec.module)


def evaluate(spec, repo_root):
    """Runs a model spec in PyTorch. Returns (tensors, metadata) for its golden file.
    Raises golden_dnn.MirrorError as read_recipe does."""
    source, recipe = read_recipe(spec, repo_root)
    torch.manual_seed(recipe["seed"])
    model = spec.module()
    keys = list(model.state_dict())
    batches = golden_data.make_batches(zlib.crc32(f"data:{spec.name}".encode()), STEPS, spec.batch,
                                       spec.shape, recipe["mean"], recipe["std"])
    tensors = {f"param.{k}": v.detach().clone() for k, v in model.state_dict().items()}
    for i, (x, y) in enumerate(batches):
        tensors[f"batch.{i}.x"], tensors[f"batch.{i}.y"] = x, y

    step1 = copy.deepcopy(model)
    step1.zero_grad()
    logits = step1(batches[0][0])
    loss = F.cross_entropy(logits, batches[0][1])
    loss.backward()
    tensors["step1.logits"], tensors["step1.loss"] = logits.detach().clone(), loss.detach().clone()
    tensors.update({f"grad.{k}": p.grad.detach().clone() for k, p in step1.named_parameters()})

    kinds = ["sgd", "adam"] + (["sgd_nesterov", "adamw"] if spec.extra_optimizers else []) + spec.clipped
    for kind in kinds:
        losses, final = trajectory(model, kind, batches)
        tensors[f"{kind}.loss"] = losses
        if kind in ("sgd", "adam") or kind in CLIPPED:  # the extra ones' finals would double the file
            tensors.update({f"{kind}.final.{k}": v for k, v in final.items()})
    for name, t in tensors.items():
        assert bool(torch.isfinite(t.to(torch.float64)).all()), f"{spec.name}: {name} is not finite"
    metadata = {
        "format": golden_io.FORMAT, "version": golden_io.VERSION, "kind": "model", "torch": torch.__version__,
        "model": spec.path, "model_sha256": hashlib.sha256(source).hexdigest(),
        "batch": str(spec.batch), "steps": str(STEPS), "seed": str(recipe["seed"]),
        "input_shape": json.dumps([spec.batch, *spec.shape]),
        "normalize": json.dumps({"mean": recipe["mean"], "std": recipe["std"]}),
        "loss": "cross_entropy", "params": json.dumps(keys),
        "trajectories": json.dumps(kinds),
    }
    metadata.update({f"optimizer.{k}": json.dumps(OPTIMIZERS[k], sort_keys=True) for k in kinds})
    return tensors, metadata
