#!/usr/bin/env python3
"""Writes the generated seed files of tests/fuzz/corpus/{safetensors,idx,cifar,dnn,ir}/: small
valid files and near-misses of each format, so the fuzzer starts from inputs that reach deep
into each reader. Deterministic (no randomness); rerun after changing it and commit the files."""
import gzip
import json
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def safetensors(tensors, metadata=None, pad=True):
    """tensors: list of (name, dtype, shape, bytes)."""
    header, offset = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"))
    if pad:
        text += " " * ((8 - len(text) % 8) % 8)
    body = b"".join(t[3] for t in tensors)
    return struct.pack("<Q", len(text)) + text.encode() + body


def idx(dims, payload):
    return struct.pack(">I", 0x0800 | len(dims)) + b"".join(struct.pack(">I", d) for d in dims) + payload


def main():
    f32 = lambda *v: struct.pack("<%df" % len(v), *v)
    i64 = lambda *v: struct.pack("<%dq" % len(v), *v)
    put("safetensors", "two_tensors", safetensors(
        [("fc.bias", "F32", [2], f32(0.5, -1.0)), ("fc.weight", "F32", [2, 2], f32(1, 2, 3, 4))]))
    put("safetensors", "metadata_i64", safetensors(
        [("bn.num_batches_tracked", "I64", [], i64(7)), ("w", "F32", [1, 1, 1], f32(3.0))],
        metadata={"format": "pt", "dnnc.position": "1 2 3"}))
    put("safetensors", "empty_tensor", safetensors([("e", "F32", [0, 3], b""), ("x", "F32", [1], f32(1))]))
    put("safetensors", "no_tensors", safetensors([], metadata={}))
    overlap = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    put("safetensors", "overlap", struct.pack("<Q", len(overlap)) + overlap + f32(1.0))
    put("safetensors", "header_past_end", struct.pack("<Q", 1 << 40) + b"{}")

    put("idx", "labels_rank1", idx([5], bytes([0, 1, 2, 9, 4])))
    put("idx", "images_rank3", idx([2, 3, 3], bytes(range(18))))
    put("idx", "rank4", idx([1, 2, 1, 2], bytes([7, 7, 7, 7])))
    put("idx", "labels_gzip", gzip.compress(idx([3], bytes([1, 2, 3])), mtime=0))
    put("idx", "truncated", idx([4, 4], bytes(10)))
    put("idx", "huge_dims", idx([0xFFFFFFFF, 0xFFFFFFFF], b""))

    put("cifar", "one_record", bytes([3]) + bytes(i % 256 for i in range(3072)))
    put("cifar", "two_records", bytes([0]) + bytes(3072) + bytes([9]) + bytes([255] * 3072))
    put("cifar", "bad_label", bytes([10]) + bytes(3072))
    put("cifar", "short", bytes([1]) + bytes(100))

    put("dnn", "tiny_mlp.dnn", """model Tiny {
  input x: f32[N, 4]
  input y: i64[N]
  fc = linear(4, 3)
  loss = cross_entropy(fc(x), y)
}

train Tiny {
  data = synth_cifar()
  batch = 2
  epochs = 1
  optimizer = sgd(lr: 0.1, momentum: 0.9)
}
""")
    put("dnn", "ops.dnn", """model Ops {
  input x: f32[N, 1, 8, 8]
  input y: f32[N, 2]
  conv = conv2d(1, 2, kernel: 3, padding: 1)
  bn = batchnorm2d(2)
  h = avgpool2d(gelu(bn(conv(x))), 2)
  z = reshape(transpose(flatten(h), 0, 1), 32, N)
  loss = mse_loss(softmax(transpose(z, 0, 1)[0:2], dim: 1) * 2.0 - y / 3, y)
}
""")
    with open(os.path.join(os.path.dirname(ROOT), "..", "ir", "golden", "mnist_mlp.ir"), "rb") as f:
        put("ir", "mnist_mlp.ir", f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
