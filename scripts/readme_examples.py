#!/usr/bin/python3
"""Runs the README's examples verbatim, in order, and checks what they print against the README.

    scripts/readme_examples.py                 # "Using dnnc" and "Training" (~10 min on 2 cores)
    scripts/readme_examples.py --section "Using dnnc"   # one section (no data needed, ~1 min)

Run it from a fresh clone after scripts/quickstart.sh (which builds build/dnnc and fetches
data/mnist). Every command of the sections' ```sh blocks runs from the repository root exactly
as written (a trailing backslash joins lines); each must exit 0. Then:
  - the seed recipe's line (`train models/mnist_mlp.dnn --data data/mnist`) must print the
    README's seed-1 accuracy for models/mnist_mlp.dnn (the table under "Training"), and the
    Adam line (`train models/mnist_mlp_adam.dnn ...`) the table's seed-1 Adam accuracy, each
    within the tolerance the README states (other CPUs pick other kernels: last digits move);
  - the quickstart paragraph's example accuracy must be the table's seed-1 value;
  - `--resume` after `--steps 100` must end at exactly the uninterrupted run's accuracy, and
    `eval` of the saved Adam checkpoint at exactly the accuracy its training printed;
  - every error example (a code block that starts `FILE.dnn:LINE:COL: error:`) must be what
    `dnnc check FILE.dnn` prints.
A command on Fashion-MNIST is skipped where Debian's dataset-fashion-mnist is not installed.
Exits 1 listing every mismatch. The Quickstart block itself (install, build, the whole test
suite) is not rerun. The Training section writes run/, out/, cnn.dot and data/cifar10.
"""
import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ACC = re.compile(r"test accuracy: (\d\.\d{4})")
FASHION = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist, optional


def sections(readme):
    """{heading: text} for the README's '## ' sections."""
    out, name = {}, None
    for line in readme.splitlines(keepends=True):
        if line.startswith("## "):
            name = line[3:].strip()
            out[name] = ""
        elif name:
            out[name] += line
    return out


def code_blocks(text, lang):
    return re.findall(r"^```" + lang + r"\n(.*?)^```", text, flags=re.S | re.M)


def commands(block):
    """The block's commands: comments kept (bash ignores them), '\\' continuations joined."""
    cmds, cur = [], ""
    for line in block.splitlines():
        if not cur and not line.strip():
            continue
        cur += line
        if cur.endswith("\\"):
            cur = cur[:-1]
            continue
        cmds.append(cur)
        cur = ""
    return cmds


def table_accuracy(training, model):
    """Seed-1 dnnc accuracy of `model` from the README's accuracy table."""
    for row in training.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] == f"`{model}`":
            return cells[2].split("/")[0].strip()
    sys.exit(f"readme_examples: no row for {model} in the README's accuracy table")


def tolerance(training):
    m = re.search(r"within ±(0\.\d+)", training)
    if not m:
        sys.exit("readme_examples: the README's Training section states no 'within ±X' tolerance")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--section", action="append", help="README section to run (repeatable)")
    ap.add_argument("--ctest", action="store_true", help="exit 77 (skipped) without build/dnnc or data/mnist")
    args = ap.parse_args()
    if args.ctest:
        for need in ["build/dnnc", "data/mnist/train-images-idx3-ubyte"]:
            if not (ROOT / need).exists():
                print(f"readme_examples: skipped: no {need} (scripts/build.sh, scripts/fetch-mnist data/mnist)")
                return 77
    readme = (ROOT / "README.md").read_text()
    secs = sections(readme)
    names = args.section or ["Using dnnc", "Training"]
    failures, results = [], []
    for name in names:
        if name not in secs:
            sys.exit(f"readme_examples: README has no section '## {name}'")
        for block in code_blocks(secs[name], "sh"):
            for cmd in commands(block):
                if "fashion_mnist" in cmd and not Path(FASHION).is_dir():
                    print(f"[ skipped] {cmd}  (needs {FASHION}: apt-get install dataset-fashion-mnist)")
                    continue
                t0 = time.time()
                p = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], cwd=ROOT, capture_output=True, text=True)
                out = p.stdout + p.stderr
                acc = ACC.findall(out)
                results.append((cmd, p.returncode, acc[-1] if acc else None, out))
                print(f"[{time.time() - t0:6.1f} s] exit {p.returncode}  {cmd}" + (f"  -> {acc[-1]}" if acc else ""),
                      flush=True)
                if p.returncode != 0:
                    failures.append(f"`{cmd}` exited {p.returncode}:\n{out[-2000:]}")

        # Error examples: plain code blocks that start with a diagnostic.
        for block in code_blocks(secs[name], ""):
            m = re.match(r"(\S+\.dnn):\d+:\d+: error:", block)
            if not m:
                continue
            p = subprocess.run([str(ROOT / "build/dnnc"), "check", m.group(1)], cwd=ROOT, capture_output=True,
                               text=True)
            if p.stderr != block:
                failures.append(f"the README's error for {m.group(1)} is not what dnnc check prints:\n"
                                f"README:\n{block}dnnc:\n{p.stderr}")
            else:
                print(f"ok: the error shown for {m.group(1)} is what dnnc check prints")

    def acc_of(pattern):
        hits = [r for r in results if re.search(pattern, r[0])]
        return hits[0][2] if hits else None

    if "Training" in names:
        training = secs["Training"]
        tol = tolerance(training)
        for pattern, model in [(r"train models/mnist_mlp\.dnn --data data/mnist", "models/mnist_mlp.dnn"),
                               (r"train models/mnist_mlp_adam\.dnn ", "models/mnist_mlp_adam.dnn")]:
            want, got = table_accuracy(training, model), acc_of(pattern)
            if got is None or abs(float(got) - float(want)) > tol + 1e-9:
                failures.append(f"{model}: printed {got}, the README's table says {want} (±{tol})")
            else:
                print(f"ok: {model} seed 1: {got} (README {want}, ±{tol})")
        quick = re.search(r"a line like `test accuracy: (\d\.\d{4})", secs.get("Quickstart", ""))
        if not quick or quick.group(1) != table_accuracy(training, "models/mnist_mlp.dnn"):
            failures.append("the Quickstart paragraph's example accuracy is not the table's seed-1 value")
        for a, b, what in [(r"--resume run/a\.safetensors", r"train models/mnist_mlp\.dnn --data data/mnist",
                            "--resume after --steps 100 vs the uninterrupted run"),
                           (r"eval +models/mnist_mlp_adam\.dnn", r"train models/mnist_mlp_adam\.dnn ",
                            "eval of the saved Adam weights vs its training")]:
            x, y = acc_of(a), acc_of(b)
            if x is None or x != y:
                failures.append(f"{what}: {x} != {y}")
            else:
                print(f"ok: {what}: {x}")

    if failures:
        print("\nreadme_examples: FAILED\n- " + "\n- ".join(failures))
        return 1
    print(f"readme_examples: all {len(results)} commands ran and matched the README")
    return 0


if __name__ == "__main__":
    sys.exit(main())
