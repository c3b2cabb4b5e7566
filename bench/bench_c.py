"""Side-by-side timings, in one process on the same data: ffigraph's C linker, its Python
linker, numpy (and PyTensor's C VM when ``pytensor`` is installed).

Run: ``python bench/bench_c.py`` (add ``--quick`` for smaller sizes). Prints best-of-N
times and ratios; nothing here is a pass/fail test.

``--json PATH`` writes the same timings as ``{workload: {implementation: seconds}}`` (what
bench/run_all.py collects). ``--plot PATH.png`` also draws every workload of the run as a grouped bar chart (one bar per
implementation, height = time relative to numpy, each bar labelled with its absolute time, the
machine and interpreter in the footer) with bench/plot.py, after the table is printed. It needs
matplotlib (``pip install matplotlib``, or the ``bench`` extra); without it the table is still
printed, then the script says so and exits with status 1.
"""
import argparse
import sys
import timeit

import numpy as np

import ffigraph.tensor as T
from ffigraph import Mode, function


# workload -> {implementation: seconds}, in the order printed; what --plot draws.
RESULTS = {}


def best(fn, number, repeat=5):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def fmt_time(t):
    return "%8.2f us" % (t * 1e6) if t < 1e-3 else "%8.2f ms" % (t * 1e3)


def pytensor_function(build, dtypes):
    try:
        import pytensor
        import pytensor.tensor as pt
    except ImportError:
        return None
    xs = [pt.tensor(dtype=d, shape=(None,) * nd) for d, nd in dtypes]
    return pytensor.function(xs, build(pt, *xs), mode=pytensor.compile.mode.Mode(linker="cvm"))


def row(name, timings, reference="numpy"):
    RESULTS[name] = dict(timings)
    ref = timings.get(reference)
    cells = []
    for key, t in timings.items():
        ratio = "" if ref is None or key == reference else " (%.2fx numpy)" % (t / ref)
        cells.append("%s %s%s" % (key, fmt_time(t), ratio))
    print("%-34s %s" % (name, " | ".join(cells)))


def call_overhead(n):
    x, y = T.dvector("x"), T.dvector("y")
    a, b = np.ones(1), np.ones(1)
    c = function([x, y], x + y, mode=Mode(linker="c", optimizer=None))
    ct = function([x, y], x + y, mode=Mode(linker="c", optimizer=None), trust_input=True)
    py = function([x, y], x + y, mode=Mode(linker="py", optimizer=None))
    timings = {"numpy": best(lambda: a + b, n), "ffigraph-c": best(lambda: c(a, b), n),
               "ffigraph-c trust_input": best(lambda: ct(a, b), n), "ffigraph-py": best(lambda: py(a, b), n)}
    ptf = pytensor_function(lambda pt, u, v: u + v, [("float64", 1)] * 2)
    if ptf is not None:
        timings["pytensor-cvm"] = best(lambda: ptf(a, b), n)
        ptf.trust_input = True
        timings["pytensor-cvm trust_input"] = best(lambda: ptf(a, b), n)
    row("x + y, 1-element float64 (call)", timings)


def elementwise(sizes):
    x, y = T.dvector("x"), T.dvector("y")
    expr = T.exp(x) * y + T.tanh(x) - 1.5 * y
    c = function([x, y], expr, mode=Mode(linker="c", optimizer=None))
    py = function([x, y], expr, mode=Mode(linker="py", optimizer=None))
    rng = np.random.default_rng(0)
    for n in sizes:
        a, b = rng.normal(size=n), rng.normal(size=n)
        number = max(1, int(2e6 // n))
        timings = {"numpy": best(lambda: np.exp(a) * b + np.tanh(a) - 1.5 * b, number),
                   "ffigraph-c": best(lambda: c(a, b), number),
                   "ffigraph-py": best(lambda: py(a, b), number)}
        ptf = pytensor_function(lambda pt, u, v: pt.exp(u) * v + pt.tanh(u) - 1.5 * v, [("float64", 1)] * 2)
        if ptf is not None:
            timings["pytensor-cvm"] = best(lambda: ptf(a, b), number)
        np.testing.assert_allclose(c(a, b), np.exp(a) * b + np.tanh(a) - 1.5 * b, rtol=1e-12, atol=1e-12)
        row("exp(x)*y+tanh(x)-1.5*y n=%.0e" % n, timings)
        gbs = 3 * 8 * n / timings["ffigraph-c"] / 1e9  # two inputs read, one output written
        print("%-34s ffigraph-c effective %.2f GB/s (unfused: one pass per op)" % ("", gbs))


def reduction(n):
    x, y = T.dvector("x"), T.dvector("y")
    expr = T.sum(T.exp(x) * y)
    c = function([x, y], expr, mode=Mode(linker="c", optimizer=None))
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=n), rng.normal(size=n)
    number = max(1, int(1e7 // n))
    timings = {"numpy": best(lambda: np.sum(np.exp(a) * b), number, 3), "ffigraph-c": best(lambda: c(a, b), number, 3)}
    np.testing.assert_allclose(c(a, b), np.sum(np.exp(a) * b), rtol=1e-9)
    row("sum(exp(x)*y) n=%.0e" % n, timings)


def dot(sizes, dtype="float64"):
    x, y = T.matrix("x", dtype=dtype), T.matrix("y", dtype=dtype)
    c = function([x, y], T.dot(x, y), mode=Mode(linker="c", optimizer=None), trust_input=True)
    rng = np.random.default_rng(2)
    for n in sizes:
        a, b = rng.normal(size=(n, n)).astype(dtype), rng.normal(size=(n, n)).astype(dtype)
        number = 3 if n >= 1024 else 10
        timings = {"numpy": best(lambda: a @ b, number, 3), "ffigraph-c": best(lambda: c(a, b), number, 3)}
        row("dot %s n=%d" % (dtype, n), timings)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--plot", metavar="PATH.png", help="also write a bar chart of the timings (needs matplotlib)")
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = parser.parse_args()
    if args.plot:
        import plot  # bench/ is sys.path[0] when this file is run as a script
        plot.check_path(parser, args.plot)
    impl = "PyPy" if hasattr(sys, "pypy_version_info") else "CPython"
    print("%s %s, numpy %s" % (impl, sys.version.split()[0], np.__version__))
    call_overhead(2000 if args.quick else 50000)
    elementwise([1000, 100000] if args.quick else [1000, 100000, 10000000])
    reduction(100000 if args.quick else 10000000)
    dot([128] if args.quick else [512, 1024])
    dot([128] if args.quick else [512, 1024], "float32")
    if args.json:
        import json
        with open(args.json, "w") as fh:
            json.dump(dict(machine="%s %s, numpy %s" % (impl, sys.version.split()[0], np.__version__),
                           quick=args.quick, seconds=RESULTS), fh, indent=1)
    if args.plot:
        plot.save_or_exit(RESULTS, args.plot, "ffigraph bench_c%s: time relative to numpy"
                          % (" --quick" if args.quick else ""))


if __name__ == "__main__":
    main()
