"""Regenerate the README's logistic-regression picture and profile table.

Compiles ``examples/logistic_regression.py``'s ``train`` with profiling on, trains it on
the example's data, then writes
  docs/logreg_train.svg   the rewritten graph (ffigraph.printing.graph_picture)
and replaces the block between the README markers
  <!-- logreg-profile:begin --> ... <!-- logreg-profile:end -->
with ``train.profile.summary()``'s table, so neither is drawn or typed by hand.

Run:  python tools/readme_figures.py [--steps N] [--readme README.md] [--out-dir docs]
Needs the graphviz Python package and Graphviz's dot program.
"""
import argparse
import importlib.util
import os
import platform
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- logreg-profile:begin -->", "<!-- logreg-profile:end -->"
PICTURE = "logreg_train.svg"


def load_example():
    path = os.path.join(ROOT, "examples", "logistic_regression.py")
    spec = importlib.util.spec_from_file_location("logistic_regression_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def profiled_train(steps):
    """The example's ``train`` after ``steps`` calls (one warm-up call not counted)."""
    example = load_example()
    x, y = example.make_data()
    train, _, _, _ = example.build("cvm", profile=True)
    train(x, y)
    train.profile.reset()
    for _ in range(steps):
        train(x, y)
    return train


def profile_block(train, steps):
    machine = "%s, %s %s, numpy %s" % (platform.machine(), platform.python_implementation(),
                                       platform.python_version(), np.__version__)
    table = train.profile.summary_text(n_nodes=12)
    return ("%s\n```\n# python tools/readme_figures.py --steps %d   (%s)\n%s```\n%s"
            % (BEGIN, steps, machine, table, END))


def replace_block(text, block):
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit("readme_figures: the README has no %s ... %s block" % (BEGIN, END))
    return text[:start] + block + text[end + len(END):]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="profiled training steps (default 500)")
    parser.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "docs"))
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be >= 1")
    sys.path.insert(0, ROOT)
    from ffigraph.printing import graph_picture

    train = profiled_train(args.steps)
    os.makedirs(args.out_dir, exist_ok=True)
    picture = graph_picture(train, os.path.join(args.out_dir, PICTURE))
    with open(args.readme) as fh:
        text = fh.read()
    with open(args.readme, "w") as fh:
        fh.write(replace_block(text, profile_block(train, args.steps)))
    print("wrote %s and the profile table in %s" % (picture, args.readme))


if __name__ == "__main__":
    main()
