"""A tanh RNN over a sequence with ``scan``: ffigraph's C loop vs a numpy Python loop and PyTensor's scan.

Run: ``python bench/bench_scan.py`` (``--quick`` for a smoke run, ``--repeat N``, ``--calls N``,
``--steps N``, ``--units N``, ``--pytensor``, ``--json PATH``). The model is an Elman RNN,
``h_t = tanh(x_t W + h_{t-1} U + b)`` over ``--steps`` steps (default 1000) of ``--units`` units
(default 32, inputs as wide), float64. Two workloads:

  forward   the trace of h over the sequence (one call of the compiled function);
  gradient  the cost ``0.5 * sum(h ** 2)`` and its gradient w.r.t. W, U and b (backpropagation
            through the steps: the forward scan, then the scan of its gradient).

Implementations, all in this process: numpy (a Python loop over the steps, the backward pass
written by hand), ffigraph with ``Mode(linker='cvm')`` (the loop and its body compiled into the
function's library: no Python per step), and with ``--pytensor`` the same graph in PyTensor (its C
backend, ``Mode(linker='cvm')``, whose scan runs the inner function from its Cython loop). Before
timing, each implementation's results must be numpy's (to CHECK_RTOL).

The figure is microseconds per step (a call's time divided by --steps). Threads: OPENBLAS/OMP/MKL
threads are set to 1 before numpy is imported. Each time is the best of --repeat timings of
--calls calls, the rounds interleaved; wall clock. The machine is noisy: compare figures within
one run.
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from timing import time_interleaved  # noqa: E402  (bench/ is sys.path[0] when this file runs)

CHECK_RTOL = 1e-9


def data(steps, units, seed=0):
    """(x, h0, W, U, b): a sequence and the parameters, small enough that tanh does not saturate."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((steps, units)), np.zeros(units), rng.standard_normal((units, units)) * 0.2,
            rng.standard_normal((units, units)) * 0.2, rng.standard_normal(units) * 0.1)


# ---------------------------------------------------------------------------- implementations

def numpy_forward(x, h0, W, U, b):
    h = h0
    trace = np.empty((x.shape[0], h0.shape[0]))
    for t in range(x.shape[0]):
        h = np.tanh(x[t].dot(W) + h.dot(U) + b)
        trace[t] = h
    return trace


def numpy_gradient(x, h0, W, U, b):
    """(cost, gW, gU, gb) of cost = 0.5 * sum(h ** 2), by hand: forward, then back through the steps."""
    trace = numpy_forward(x, h0, W, U, b)
    gW, gU, gb = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    carry = np.zeros_like(h0)
    for t in range(x.shape[0] - 1, -1, -1):
        h = trace[t]
        da = (h + carry) * (1.0 - h * h)
        gW += np.outer(x[t], da)
        gU += np.outer(trace[t - 1] if t > 0 else h0, da)
        gb += da
        carry = da.dot(U.T)
    return 0.5 * float((trace ** 2).sum()), gW, gU, gb


def graph_functions(lib, params):
    """``(forward, gradient)`` compiled by ``lib`` ("ffigraph" or "pytensor"), W, U, b shared; or a
    reason (str). ``gradient`` is a reason (str) alone when only the gradient cannot be built."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if lib == "ffigraph":
                import ffigraph as top
                import ffigraph.tensor as T
                from ffigraph import Mode
            else:
                import pytensor as top
                import pytensor.tensor as T
                from pytensor.compile.mode import Mode
    except ImportError:
        return "%s not installed in %s" % (lib, sys.executable)
    mode = Mode(linker="cvm")
    W, U, b = [top.shared(p.copy(), name=nm) for p, nm in zip(params, ("W", "U", "b"))]
    x, h0 = T.dmatrix("x"), T.dvector("h0")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            h, _ = top.scan(lambda xt, hp: T.tanh(T.dot(xt, W) + T.dot(hp, U) + b), sequences=x, outputs_info=h0)
            forward = top.function([x, h0], h, mode=mode)
    except Exception as exc:  # e.g. no C compiler
        return "%s failed to compile the forward scan (%s: %s)" % (lib, type(exc).__name__, exc)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cost = 0.5 * (h ** 2).sum()
            gradient = top.function([x, h0], [cost] + top.grad(cost, [W, U, b]), mode=mode)
    except Exception as exc:  # the gradient through scan may be missing in a build of ffigraph
        gradient = "%s: the gradient through scan is not available (%s: %s); gradient skipped" % (
            lib, type(exc).__name__, exc)
    return forward, gradient


def implementations(x, h0, params, with_pytensor):
    """``({workload: {name: call}}, checks {workload: {name: results}}, notes)``."""
    impls = {"forward": {"numpy": lambda: numpy_forward(x, h0, *params)},
             "gradient": {"numpy": lambda: numpy_gradient(x, h0, *params)}}
    notes = []
    for lib in ("ffigraph",) + (("pytensor",) if with_pytensor else ()):
        got = graph_functions(lib, params)
        if isinstance(got, str):
            notes.append(got)
            continue
        forward, gradient = got
        impls["forward"][lib] = lambda f=forward: f(x, h0)
        if isinstance(gradient, str):
            notes.append(gradient)
        else:
            impls["gradient"][lib] = lambda f=gradient: f(x, h0)
    return impls, notes


def check(impls):
    """Every implementation's results are numpy's; returns the largest relative difference."""
    worst = 0.0
    for workload, by_name in impls.items():
        want = by_name["numpy"]()
        want = [want] if isinstance(want, np.ndarray) else list(want)
        for name, call in by_name.items():
            got = call()
            got = [got] if isinstance(got, np.ndarray) else list(got)
            for g, w in zip(got, want):
                g, w = np.asarray(g, dtype=float), np.asarray(w, dtype=float)
                diff = float(np.max(np.abs(g - w))) / max(1.0, float(np.max(np.abs(w))))
                if g.shape != w.shape or diff > CHECK_RTOL:
                    raise SystemExit("bench_scan: %s's %s disagrees with numpy (shapes %s / %s, max relative "
                                     "difference %.3g)" % (name, workload, g.shape, w.shape, diff))
                worst = max(worst, diff)
    return worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats (smoke run)")
    parser.add_argument("--repeat", type=int, default=None, help="interleaved rounds, best-of (default 7, quick 3)")
    parser.add_argument("--calls", type=int, default=None, help="calls a timing (default 5, quick 2)")
    parser.add_argument("--steps", type=int, default=1000, help="steps of the sequence (default 1000)")
    parser.add_argument("--units", type=int, default=32, help="hidden units, and inputs (default 32)")
    parser.add_argument("--pytensor", action="store_true", help="also time the graph in PyTensor (C backend)")
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 7)
    calls = args.calls if args.calls is not None else (2 if args.quick else 5)
    if repeat < 1 or calls < 1 or args.steps < 1 or args.units < 1:
        parser.error("--repeat, --calls, --steps and --units must be >= 1")
    impl = "PyPy" if hasattr(sys, "pypy_version_info") else "CPython"
    machine = "%s %s, numpy %s, %s" % (impl, sys.version.split()[0], np.__version__, platform.machine())
    print("%s; OPENBLAS_NUM_THREADS=1; wall clock; best of %d interleaved rounds of %d calls"
          % (machine, repeat, calls))
    x, h0, W, U, b = data(args.steps, args.units)
    impls, notes = implementations(x, h0, (W, U, b), args.pytensor)
    worst = check(impls)
    notes.append("every implementation agrees with numpy to a max relative difference of %.2g" % worst)
    seconds = {}
    print()
    print("| %-30s | %-10s | %9s | %12s | %15s |" % ("workload", "impl", "us/step", "x numpy time", "x ffigraph time"))
    print("|%s|%s|%s|%s|%s|" % ("-" * 32, "-" * 12, "-" * 11, "-" * 14, "-" * 16))
    for workload, by_name in impls.items():
        t = time_interleaved(by_name, repeat, calls)
        label = "%s: %d steps, %d units" % (workload, args.steps, args.units)
        seconds[label] = t
        for name in by_name:
            vs_ffigraph = "%15.1f" % (t[name] / t["ffigraph"]) if "ffigraph" in t else "%15s" % "-"
            print("| %-30s | %-10s | %9.3f | %12.3f | %s |" % (label, name, t[name] / args.steps * 1e6,
                                                              t[name] / t["numpy"], vs_ffigraph))
    print()
    for note in notes:
        print(note)
    print("'x numpy time' = time / numpy's (lower is faster); 'x ffigraph time' = time / ffigraph's.")
    if args.json:
        import json
        with open(args.json, "w") as fh:
            json.dump(dict(machine=machine, quick=args.quick, repeat=repeat, calls=calls, steps=args.steps,
                           units=args.units, clock="wall", notes=notes, seconds=seconds), fh, indent=1)


if __name__ == "__main__":
    main()
