#!/usr/bin/env python3
"""Writes normalize_torch.txt: what torchvision's ToTensor() + Normalize(mean, std) gives for
every byte value 0..255, as f32 bit patterns, for a few (mean, std) pairs. The C++ test checks
runtime::to_tensor against it bit for bit.

ToTensor and Normalize are reproduced with the torch ops torchvision uses (torchvision itself is
not needed): img.to(float32).div(255), then tensor.sub_(mean).div_(std) with mean and std as
float32 tensors. Run by hand with Debian's python3-torch:
  /usr/bin/python3 tests/data/make_normalize_fixture.py
"""
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS = [(0.1307, 0.3081), (0.5, 0.5), (0.4914, 0.247), (0.0, 1.0)]


def main():
    img = torch.arange(256, dtype=torch.uint8).view(1, 16, 16)  # a 1-channel 16x16 "image"
    lines = ["# mean std, then the 256 f32 bit patterns (hex) of Normalize(ToTensor(x)) for x = 0..255",
             "# written by tests/data/make_normalize_fixture.py with torch " + torch.__version__]
    for mean, std in PAIRS:
        x = img.to(dtype=torch.float32).div(255)  # ToTensor
        m = torch.as_tensor([mean], dtype=x.dtype).view(-1, 1, 1)
        s = torch.as_tensor([std], dtype=x.dtype).view(-1, 1, 1)
        y = x.sub_(m).div_(s).reshape(-1)  # Normalize
        bits = [struct.unpack("<I", struct.pack("<f", v))[0] for v in y.tolist()]
        lines.append("%r %r" % (mean, std))
        lines.append(" ".join("%08x" % b for b in bits))
    with open(os.path.join(HERE, "normalize_torch.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
