#!/usr/bin/python3
# Writes dnnc's PyTorch golden files (tests/golden/ops/*.safetensors, tests/golden/models/*.safetensors,
# tests/golden/float64/*.safetensors);
# with --check, recomputes them and verifies the committed files with an independent reader.
#
# Usage (Debian's python3 with python3-torch, from any directory):
#   /usr/bin/python3 tests/golden/make_golden.py            regenerate every file
#   /usr/bin/python3 tests/golden/make_golden.py --check    verify, write nothing (exit 1 on a difference)
#   /usr/bin/python3 tests/golden/make_golden.py --precision  fp32 goldens vs float64 (prints, writes nothing)
#   ... [--only NAME ...]                                    restrict to some op cases / models
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import golden_dnn  # noqa: E402
import golden_float64  # noqa: E402
import golden_io  # noqa: E402
import golden_models  # noqa: E402
import golden_ops  # noqa: E402
import golden_precision  # noqa: E402


def _setup_torch():
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(0)


def _jobs(only):
    """Yields (path, thunk) for every golden file; thunk() -> (tensors, metadata)."""
    for case in golden_ops.all_cases():
        if not only or case.name in only:
            yield os.path.join(HERE, "ops", f"{case.name}.safetensors"), lambda c=case: golden_ops.evaluate(c)
    for spec in golden_models.SPECS:
        if not only or spec.name in only:
            yield (os.path.join(HERE, "models", f"{spec.name}.safetensors"),
                   lambda s=spec: golden_models.evaluate(s, REPO))
    for case in golden_float64.cases():
        if not only or case.name in only:
            yield os.path.join(HERE, "float64", f"{case.name}.safetensors"), lambda c=case: golden_float64.evaluate_op(c)
    for spec in golden_float64.TRAJECTORY_MODELS:
        if not only or spec.name in only:
            yield (os.path.join(HERE, "float64", f"{spec.name}.safetensors"),
                   lambda s=spec: golden_float64.evaluate_model(s, REPO))


def _check_adam_twin():
    # mnist_mlp_adam.dnn has no golden of its own because it declares mnist_mlp's net.
    paths = [os.path.join(REPO, "models", f) for f in ("mnist_mlp.dnn", "mnist_mlp_adam.dnn")]
    if not all(os.path.exists(p) for p in paths):
        return []
    texts = [open(p, encoding="utf-8").read() for p in paths]
    if golden_dnn.same_model_block(*texts):
        return []
    return ["models/mnist_mlp_adam.dnn: its model block differs from mnist_mlp.dnn's; give it a golden "
            "(a ModelSpec in golden_models.py)"]


def _precision(only):
    """Prints the worst fp32-vs-float64 relative error of every golden file (op files: from their
    stored inputs; models: trajectories rerun in both precisions). Returns the exit status."""
    worst = []
    for case in golden_ops.all_cases():
        if not only or case.name in only:
            errs = golden_precision.op_errors(case, os.path.join(HERE, "ops", f"{case.name}.safetensors"))
            worst.append((max(errs), f"ops/{case.name}"))
    for spec in golden_models.SPECS:
        if not only or spec.name in only:
            try:
                _, recipe = golden_models.read_recipe(spec, REPO)
            except golden_dnn.MirrorError as e:
                print(f"error: {e}", file=sys.stderr)
                return 1
            for err, what in golden_precision.model_errors(spec, recipe):
                print(f"models/{spec.name} {what}: {err:.2e}")
    for (err, name), path in sorted(worst, reverse=True):
        print(f"{path}: worst {name} {err:.2e}")
    return 0


def main():
    parser = argparse.ArgumentParser(description="Writes or checks dnnc's PyTorch golden files.")
    parser.add_argument("--check", action="store_true",
                        help="recompute every golden and compare with the files on disk; write nothing")
    parser.add_argument("--precision", action="store_true",
                        help="print how far each committed golden is from float64; write nothing")
    parser.add_argument("--only", nargs="+", default=[], help="op case or model names to restrict to")
    args = parser.parse_args()
    _setup_torch()
    os.makedirs(os.path.join(HERE, "ops"), exist_ok=True)
    os.makedirs(os.path.join(HERE, "models"), exist_ok=True)
    os.makedirs(os.path.join(HERE, "float64"), exist_ok=True)

    if args.precision:
        return _precision(set(args.only))
    problems = _check_adam_twin()
    count = 0
    for path, thunk in _jobs(set(args.only)):
        rel = os.path.relpath(path, REPO)
        try:
            tensors, metadata = thunk()
        except golden_dnn.MirrorError as e:
            problems.append(str(e))
            continue
        if not args.check:
            golden_io.write(path, tensors, metadata)
        found = golden_io.compare(path, tensors, metadata)  # the file, through the independent reader
        problems += found
        count += 1
        print(f"{'checked' if args.check else 'wrote'} {rel}: {len(tensors)} tensors, "
              f"{os.path.getsize(path) if os.path.exists(path) else 0} bytes{'' if not found else ' MISMATCH'}")
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    print(f"{count} files {'checked' if args.check else 'written'}, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
