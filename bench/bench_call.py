"""Per-call cost at the boundary: ffigraph's compiled call against numpy's and PyTensor's C VM.

    python bench/bench_call.py [--quick] [--rounds N] [--json PATH]

Run it under each interpreter (PyPy has no PyTensor; its column is then left out):

    .venv/bin/python bench/bench_call.py --json call-cpython.json
    .venv-pypy/bin/python bench/bench_call.py --json call-pypy.json
    <a venv with pytensor and ffigraph>/bin/python bench/bench_call.py   # adds PyTensor's cvm column

Workloads (float64):
  x+y 1 elem        ``x + y`` on 1-element vectors, the inputs the same arrays every call
  50 inputs         the sum of 50 one-element vectors
  x+1 1e7           a large output: ``x + 1`` on 10**7 elements (the result dropped each call)
  sum 1e7           a large input, a 0-d output
Columns: numpy (the same expression, eager), ffigraph default (``function``, inputs checked),
ffigraph trusted (``trust_input=True``), and PyTensor's C VM default and trusted
(``Mode(linker='cvm')``; PyTensor 3 defaults to Numba) when ``pytensor`` imports. Figures are
the best of N interleaved rounds (each round times every implementation once, in a rotating
order), so the ratios compare figures taken together on a noisy machine; microseconds per call.
Nothing here is a pass/fail test.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import timeit

import numpy as np


def _pytensor():
    try:
        import pytensor
        import pytensor.tensor as pt
        from pytensor.compile.mode import Mode
    except ImportError:
        return None
    return pytensor, pt, Mode(linker="cvm")


def workloads(quick):
    """name -> (make(T, function, **kw) -> callable of the args, args, numpy callable, calls per timing)"""
    big = 10 ** (6 if quick else 7)
    one = [np.ones(1) for _ in range(50)]
    x_big = np.linspace(-1.0, 1.0, big)

    def plus(T, fn, **kw):
        x, y = T.dvector("x"), T.dvector("y")
        return fn([x, y], x + y, **kw)

    def fifty(T, fn, **kw):
        xs = [T.dvector("x%d" % i) for i in range(50)]
        total = xs[0]
        for v in xs[1:]:
            total = total + v
        return fn(xs, total, **kw)

    def plus_one(T, fn, **kw):
        x = T.dvector("x")
        return fn([x], x + 1.0, **kw)

    def total(T, fn, **kw):
        x = T.dvector("x")
        return fn([x], x.sum(), **kw)

    def np_fifty(*vs):
        out = vs[0] + vs[1]
        for v in vs[2:]:
            out += v
        return out

    return {
        "x+y 1 elem": (plus, one[:2], lambda a, b: a + b, 20000),
        "50 inputs": (fifty, one, np_fifty, 2000),
        "x+1 %.0e" % big: (plus_one, [x_big], lambda a: a + 1.0, 3 if not quick else 10),
        "sum %.0e" % big: (total, [x_big], lambda a: a.sum(), 20 if not quick else 100),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller arrays, fewer rounds")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (best is kept)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 7)

    import ffigraph
    import ffigraph.tensor as fT

    impls = {}
    found = _pytensor()
    for name, (make, values, np_fn, number) in workloads(args.quick).items():
        fns = {"numpy": np_fn,
               "ffigraph": make(fT, ffigraph.function),
               "ffigraph trusted": make(fT, ffigraph.function, trust_input=True)}
        if found is not None:
            pytensor, pt, mode = found
            fns["pytensor cvm"] = make(pt, pytensor.function, mode=mode)
            fns["pytensor cvm trusted"] = make(pt, pytensor.function, mode=mode, trust_input=True)
        want = np.asarray(np_fn(*values))
        scale = sum(float(np.abs(v).sum()) for v in values)   # what rounding in a sum is relative to
        for label, fn in fns.items():   # every implementation agrees with numpy before it is timed
            got = np.asarray(fn(*values))
            if not np.allclose(got, want, rtol=1e-12, atol=1e-14 * scale):
                raise SystemExit("%s disagrees with numpy on %s" % (label, name))
        impls[name] = (fns, values, number)

    results = {}
    for name, (fns, values, number) in impls.items():
        best = {label: float("inf") for label in fns}
        labels = list(fns)
        for r in range(rounds):
            for label in labels[r % len(labels):] + labels[:r % len(labels)]:
                fn = fns[label]
                seconds = min(timeit.repeat(lambda: fn(*values), number=number, repeat=3)) / number
                best[label] = min(best[label], seconds)
        results[name] = best

    machine = "%s %s, numpy %s, %s" % (platform.python_implementation(), platform.python_version(),
                                      np.__version__, platform.machine())
    labels = ["numpy", "ffigraph", "ffigraph trusted", "pytensor cvm", "pytensor cvm trusted"]
    labels = [label for label in labels if any(label in r for r in results.values())]
    print(machine + "; best of %d interleaved rounds; microseconds per call" % rounds)
    print("| workload | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name, best in results.items():
        print("| %s | %s |" % (name, " | ".join("%.2f" % (best[label] * 1e6) if label in best else "" for label in labels)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(machine=machine, rounds=rounds, seconds=results), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
