# Safetensors writer (for make_golden.py) and an independent stdlib-only reader used by --check.
# Only the dtypes dnnc reads: F32 and I64, little-endian, shapes of any rank including [].
import array
import json
import math
import struct
import sys

import torch

FORMAT = "dnnc-golden"
VERSION = "1"

_DTYPES = {torch.float32: "F32", torch.int64: "I64"}
_ITEMSIZE = {"F32": 4, "I64": 8}


def encode(tensors, metadata):
    """Returns the safetensors bytes of `tensors` (name -> f32/i64 torch tensor) with
    `metadata` (str -> str) as __metadata__. Tensors are laid out in sorted name order.
    Raises ValueError on another dtype or a non-string metadata entry."""
    for k, v in metadata.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValueError(f"metadata {k!r}: keys and values must be strings")
    header = {"__metadata__": dict(sorted(metadata.items()))}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        if t.dtype not in _DTYPES:
            raise ValueError(f"tensor {name}: dtype {t.dtype} is not f32 or i64")
        t = t.detach().contiguous().cpu()
        data = t.numpy().astype(t.numpy().dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((-(8 + len(text))) % 8)  # data starts 8-byte aligned
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write(path, tensors, metadata):
    """Writes encode(tensors, metadata) to `path` (overwriting it)."""
    with open(path, "wb") as f:
        f.write(encode(tensors, metadata))


class FormatError(Exception):
    pass


def read(path):
    """Stdlib-only reader (independent of the writer above). Returns (tensors, metadata) with
    tensors as name -> (dtype str, shape list, flat list of python numbers).
    Raises FormatError naming the file and what is wrong when the file breaks the format."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise FormatError(f"{path}: {len(raw)} bytes, too short for the header length")
    (hlen,) = struct.unpack_from("<Q", raw, 0)
    if 8 + hlen > len(raw):
        raise FormatError(f"{path}: header length {hlen} runs past the end ({len(raw)} bytes)")
    if (8 + hlen) % 8 != 0:
        raise FormatError(f"{path}: data does not start 8-byte aligned (header length {hlen})")
    try:
        header = json.loads(raw[8:8 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(f"{path}: header is not UTF-8 JSON: {e}") from e
    metadata = header.pop("__metadata__", {})
    data = raw[8 + hlen:]
    tensors = {}
    expect_begin = 0
    for name in sorted(header):
        entry = header[name]
        dtype, shape, (b, e) = entry["dtype"], entry["shape"], entry["data_offsets"]
        if dtype not in _ITEMSIZE:
            raise FormatError(f"{path}: tensor {name}: dtype {dtype} is not F32 or I64")
        numel = 1
        for d in shape:
            numel *= d
        if b != expect_begin or e - b != numel * _ITEMSIZE[dtype]:
            raise FormatError(f"{path}: tensor {name}: data_offsets [{b}, {e}] expected "
                              f"[{expect_begin}, {expect_begin + numel * _ITEMSIZE[dtype]}]")
        values = array.array("f" if dtype == "F32" else "q")
        assert values.itemsize == _ITEMSIZE[dtype], "platform array item size"
        values.frombytes(data[b:e])
        if sys.byteorder != "little":
            values.byteswap()
        tensors[name] = (dtype, list(shape), values.tolist())
        expect_begin = e
    if expect_begin != len(data):
        raise FormatError(f"{path}: {len(data) - expect_begin} trailing bytes after the last tensor")
    return tensors, metadata


def compare(path, tensors, metadata):
    """Re-reads `path` with read() and returns a list of differences (empty if the file holds
    exactly `tensors` and `metadata`). Values are compared exactly, as numbers and signs."""
    problems = []
    try:
        got, got_meta = read(path)
    except (OSError, FormatError, KeyError, ValueError) as e:
        return [f"{path}: cannot read: {e}"]
    if got_meta != metadata:
        keys = sorted(k for k in set(got_meta) | set(metadata) if got_meta.get(k) != metadata.get(k))
        problems.append(f"{path}: metadata differs in {keys}")
    if sorted(got) != sorted(tensors):
        problems.append(f"{path}: tensor names differ: file has {sorted(set(got) - set(tensors))} "
                        f"extra, lacks {sorted(set(tensors) - set(got))}")
    for name in sorted(set(got) & set(tensors)):
        t = tensors[name].detach()
        dtype, shape, values = got[name]
        if dtype != _DTYPES.get(t.dtype) or shape != list(t.shape):
            problems.append(f"{path}: {name}: file has {dtype}{shape}, expected "
                            f"{_DTYPES.get(t.dtype)}{list(t.shape)}")
            continue
        want = t.reshape(-1).tolist()
        bad = [i for i, (a, w) in enumerate(zip(values, want))
               if a != w or math.copysign(1, a) != math.copysign(1, w)]
        if bad:
            i = bad[0]
            problems.append(f"{path}: {name}: {len(bad)} values differ, first at {i}: "
                            f"file {values[i]!r}, expected {want[i]!r}")
    return problems
