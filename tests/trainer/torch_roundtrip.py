#!/usr/bin/env python3
"""A dnnc checkpoint loads into the PyTorch model, and a PyTorch state_dict loads into dnnc,
both giving the same logits (models/cifar_cnn.dnn on synthetic CIFAR-10).

Usage: torch_roundtrip.py DNNC_BINARY   (run from the repository root; CTest does this)
Exit codes: 0 pass, 1 fail, 77 skipped (python3-torch is not importable)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "golden"))

try:
    import torch
except ImportError:
    print("SKIP: python3-torch is not importable (apt-get install python3-torch)")
    sys.exit(77)

import golden_io  # noqa: E402  (tests/golden: safetensors writer + independent reader)
from golden_models import CifarCnn  # noqa: E402  (the PyTorch mirror of models/cifar_cnn.dnn)

MODEL = "models/cifar_cnn.dnn"
TOL = 1e-5


def run(dnnc, *args):
    r = subprocess.run([dnnc, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"error: dnnc {' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


def load_into_torch(path):
    """Reads a safetensors state_dict and loads it into a CifarCnn with strict=True."""
    tensors, _ = golden_io.read(path)
    sd = {name: torch.tensor(values, dtype=torch.float32 if dt == "F32" else torch.int64).reshape(shape)
          for name, (dt, shape, values) in tensors.items()}
    model = CifarCnn()
    model.load_state_dict(sd, strict=True)  # raises on any missing/unexpected/mis-shaped key
    return model.eval()


def cifar_images(path, count):
    """The first `count` records of a CIFAR-10 binary file, normalized as the train block says."""
    raw = open(path, "rb").read()
    rec = torch.frombuffer(bytearray(raw), dtype=torch.uint8).reshape(-1, 3073)[:count]
    x = rec[:, 1:].float().reshape(-1, 3, 32, 32)
    return (x / 255.0 - 0.5) / 0.5


def dnnc_logits(dnnc, weights, images, count):
    out = run(dnnc, "infer", MODEL, "--init", weights, "--images", images, "--count", str(count), "--json",
              "--device", "reference")
    return torch.tensor([json.loads(line)["logits"] for line in out.splitlines()], dtype=torch.float32)


def rel(a, b):
    return float(torch.linalg.norm((a - b).double()) / torch.linalg.norm(b.double()))


def main():
    dnnc = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "cifar")
        run(dnnc, "data", "synth-cifar", data, "--train", "40", "--test", "12", "--seed", "4")
        images = os.path.join(data, "test_batch.bin")
        x = cifar_images(images, 12)

        # dnnc -> PyTorch: a checkpoint written by `dnnc train --save` loads strictly.
        ck = os.path.join(tmp, "dnnc.safetensors")
        run(dnnc, "train", MODEL, "--data", data, "--steps", "3", "--save", ck, "--device", "reference")
        model = load_into_torch(ck)
        with torch.no_grad():
            want = model(x)
        e = rel(dnnc_logits(dnnc, ck, images, 12), want)
        print(f"dnnc checkpoint -> torch: logits rel error {e:.2e}")
        if not e < TOL:
            failures.append(f"dnnc -> torch logits differ: rel error {e:.3e} >= {TOL}")

        # PyTorch -> dnnc: a state_dict written from torch loads with --init.
        torch.manual_seed(5)
        model = CifarCnn().eval()
        sd_path = os.path.join(tmp, "torch.safetensors")
        golden_io.write(sd_path, {k: v.detach().contiguous() for k, v in model.state_dict().items()}, {})
        with torch.no_grad():
            want = model(x)
        e = rel(dnnc_logits(dnnc, sd_path, images, 12), want)
        print(f"torch state_dict -> dnnc --init: logits rel error {e:.2e}")
        if not e < TOL:
            failures.append(f"torch -> dnnc logits differ: rel error {e:.3e} >= {TOL}")
    for f in failures:
        print("error:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
