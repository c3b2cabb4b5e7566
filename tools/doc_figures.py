"""Regenerate the documentation's picture of the logistic-regression training graph.

Compiles ``examples/logistic_regression.py``'s ``train`` and writes
  docs/logreg_train.svg   the rewritten graph (ffigraph.printing.graph_picture)
which docs/tutorial/debugging.rst shows, so the picture is never drawn by hand. (The page's
profile of the same function is computed by its own doctest.)

Run:  python tools/doc_figures.py [--out-dir docs]
Needs the graphviz Python package and Graphviz's dot program.
"""
import argparse
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PICTURE = "logreg_train.svg"


def load_example():
    path = os.path.join(ROOT, "examples", "logistic_regression.py")
    spec = importlib.util.spec_from_file_location("logistic_regression_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "docs"))
    args = parser.parse_args(argv)
    sys.path.insert(0, ROOT)
    from ffigraph.printing import graph_picture

    train, _, _, _ = load_example().build("cvm")
    os.makedirs(args.out_dir, exist_ok=True)
    picture = graph_picture(train, os.path.join(args.out_dir, PICTURE))
    print("wrote %s" % picture)


if __name__ == "__main__":
    main()
