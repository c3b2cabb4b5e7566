"""Compile-cache timings, whole processes: cold (empty cache) vs warm, and two different graphs
compiled by two processes at once vs one after the other.

Run: ``python bench/bench_cache.py``. Each measurement starts fresh Python processes; the
time of ``function()`` is measured inside them, the whole-process time outside. ``--json PATH``
also writes the times as ``{workload: {case: seconds}}`` (what bench/run_all.py collects).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time

GRAPHS = {
    "elementwise": """
        x, y = T.dvector("x"), T.dvector("y")
        outs = T.exp(x) * y + T.tanh(x) - 1.5 * y
        inputs = [x, y]
    """,
    # logistic regression: the cost and its gradient, written out by hand (no grad() yet)
    "logreg": """
        X, t = T.dmatrix("X"), T.dvector("t")
        w, b = T.dvector("w"), T.dscalar("b")
        p = T.sigmoid(T.dot(X, w) + b)
        cost = T.mean(-t * T.log(p) - (1 - t) * T.log(1 - p))
        err = (p - t) / X.shape[0]
        outs = [cost, T.dot(X.T, err), T.sum(err)]
        inputs = [X, t, w, b]
    """,
}

CHILD = """
import time
t0 = time.perf_counter()
import ffigraph.tensor as T
from ffigraph import function, Mode
{graph}
t1 = time.perf_counter()
f = function(inputs, outs, mode=Mode(linker="c", optimizer=None))
t2 = time.perf_counter()
print("%.4f %.4f" % (t1 - t0, t2 - t1))
"""


def run_child(name, cachedir):
    code = CHILD.format(graph=textwrap.dedent(GRAPHS[name]))
    env = dict(os.environ, FFIGRAPH_COMPILEDIR=cachedir)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            universal_newlines=True)
    return proc, start


def finish(proc, start):
    out, _ = proc.communicate()
    if proc.returncode:
        raise SystemExit("child failed")
    import_s, function_s = map(float, out.split())
    return time.perf_counter() - start, function_s


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = parser.parse_args()
    seconds = {}
    impl = "PyPy" if hasattr(sys, "pypy_version_info") else "CPython"
    print("%s %s" % (impl, sys.version.split()[0]))
    for name in GRAPHS:
        cachedir = tempfile.mkdtemp(prefix="ffigraph-bench-")
        cold_total, cold_fn = finish(*run_child(name, cachedir))
        warm = [finish(*run_child(name, cachedir)) for _ in range(3)]
        warm_total, warm_fn = min(warm)
        print("%-12s cold: function() %6.3f s, process %6.3f s | warm: function() %6.1f ms, process %6.3f s"
              % (name, cold_fn, cold_total, warm_fn * 1e3, warm_total))
        seconds["compile %s" % name] = {"cold function()": cold_fn, "cold process": cold_total,
                                        "warm function()": warm_fn, "warm process": warm_total}
    seq_dir = tempfile.mkdtemp(prefix="ffigraph-bench-")
    t = time.perf_counter()
    for name in GRAPHS:
        finish(*run_child(name, seq_dir))
    sequential = time.perf_counter() - t
    par_dir = tempfile.mkdtemp(prefix="ffigraph-bench-")
    t = time.perf_counter()
    running = [run_child(name, par_dir) for name in GRAPHS]
    for proc, start in running:
        finish(proc, start)
    parallel = time.perf_counter() - t
    print("two different graphs, cold: one after the other %.3f s, at once %.3f s (ratio %.2f)"
          % (sequential, parallel, parallel / sequential))
    seconds["two graphs, cold"] = {"one after the other": sequential, "at once": parallel}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(machine="%s %s" % (impl, platform.python_version()), seconds=seconds), fh, indent=1)


if __name__ == "__main__":
    main()
