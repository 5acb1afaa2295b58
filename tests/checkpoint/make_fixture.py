#!/usr/bin/env python3
"""Writes fixture.safetensors: a small safetensors file produced independently of dnnc's C++
writer (struct + json by hand, following the format spec; tensor data from torch), which
tests/checkpoint/test_safetensors.cpp reads back and checks value by value.

Layout as the official safetensors library writes it: tensors ordered by dtype alignment
(8-byte I64 first, then F32), then by name; json.dumps with its default ", " / ": "
separators; header padded with spaces so the data starts 8-byte aligned.

Values (the C++ test recomputes them from these formulas):
  fc.weight  F32 [3, 4]  (i * 0.25 - 1.5) for i = 0..11
  fc.bias    F32 [3]     0.1, -2.5, 3e38 (rounded to float32)
  empty      F32 [0, 4]  no data
  labels     I64 [5]     -3, 0, 7, 2**40, -2**62
  step       I64 []      12345678901
  __metadata__ {"format": "pt", "producer": "make_fixture.py"}

Run by hand (needs Debian's python3-torch): /usr/bin/python3 tests/checkpoint/make_fixture.py
"""
import json
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    tensors = {
        "fc.weight": torch.arange(12, dtype=torch.float32).reshape(3, 4) * 0.25 - 1.5,
        "fc.bias": torch.tensor([0.1, -2.5, 3e38], dtype=torch.float32),
        "empty": torch.zeros(0, 4, dtype=torch.float32),
        "labels": torch.tensor([-3, 0, 7, 2**40, -2**62], dtype=torch.int64),
        "step": torch.tensor(12345678901, dtype=torch.int64),
    }
    names = {torch.float32: "F32", torch.int64: "I64"}
    align = {torch.float32: 4, torch.int64: 8}
    order = sorted(tensors, key=lambda n: (-align[tensors[n].dtype], n))
    header = {"__metadata__": {"format": "pt", "producer": "make_fixture.py"}}
    blobs, offset = [], 0
    for name in order:
        t = tensors[name].contiguous()
        data = t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(os.path.join(HERE, "fixture.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


if __name__ == "__main__":
    main()
