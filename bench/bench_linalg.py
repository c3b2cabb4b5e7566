"""Linear algebra: ffigraph's LAPACK ops against numpy and scipy, and a Gaussian-process step.

Run: ``python bench/bench_linalg.py`` (``--quick`` for a smoke run, ``--sizes 100 500 1000``,
``--repeat N``, ``--json PATH``). Workloads, float64, one process, same OpenBLAS (ffigraph links
the copy numpy has loaded):

  cholesky n      L = cholesky(A) of an n x n SPD matrix: ffigraph vs numpy.linalg.cholesky
                  (and scipy.linalg.cholesky when installed)
  chol+solve+logdet n
                  L = cholesky(A); x = L^-T (L^-1 b); logdet = 2 sum(log diag L), b n x 4: one
                  ffigraph function vs numpy (cholesky + two np.linalg.solve) and scipy
                  (cho_factor + cho_solve)
  gp step         the negative log marginal likelihood of examples/gaussian_process.py (60 points)
                  and its gradient w.r.t. the three log hyper-parameters: one ffigraph function
                  vs the same written by hand with numpy (and with scipy's cho_factor/cho_solve)

Each time is the best of --repeat timings of --calls calls, the implementations interleaved; wall
clock; OpenBLAS threads as the process has them. Before timing, each result must match numpy's.
The machine is noisy: compare figures within one run. Targets (issue 28): >= 1.0x numpy on the
single ops, >= 1.5x numpy on the GP step.
"""
import argparse
import os
import platform
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

from timing import load_average, time_interleaved  # noqa: E402

import ffigraph  # noqa: E402
import ffigraph.tensor as T  # noqa: E402
import gaussian_process as gp  # noqa: E402
from ffigraph.tensor.linalg import cholesky, solve_triangular  # noqa: E402

try:
    import scipy.linalg as sla
except ImportError:   # PyPy
    sla = None


def spd(n, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def workload_cholesky(n):
    a = T.dmatrix("a")
    f = ffigraph.function([a], cholesky(a), name="cholesky")
    f.trust_input = True
    A = spd(n)
    np.testing.assert_allclose(f(A), np.linalg.cholesky(A), rtol=1e-10, atol=1e-10)
    fns = {"ffigraph": lambda: f(A), "numpy": lambda: np.linalg.cholesky(A)}
    if sla is not None:
        fns["scipy"] = lambda: sla.cholesky(A, lower=True, check_finite=False)
    return fns


def workload_chol_solve_logdet(n):
    a, b = T.dmatrix("a"), T.dmatrix("b")
    L = cholesky(a)
    x = solve_triangular(L.T, solve_triangular(L, b, lower=True), lower=False)
    logdet = 2 * T.log(T.diagonal(L)).sum()
    f = ffigraph.function([a, b], [x, logdet], name="chol_solve_logdet")
    f.trust_input = True
    A, B = spd(n), np.random.default_rng(1).standard_normal((n, 4))

    def with_numpy():
        low = np.linalg.cholesky(A)
        return np.linalg.solve(low.T, np.linalg.solve(low, B)), 2 * np.log(np.diag(low)).sum()

    got, want = f(A, B), with_numpy()
    np.testing.assert_allclose(got[0], want[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10)
    fns = {"ffigraph": lambda: f(A, B), "numpy": with_numpy}
    if sla is not None:
        def with_scipy():
            factor = sla.cho_factor(A, lower=True, check_finite=False)
            return sla.cho_solve(factor, B, check_finite=False), 2 * np.log(np.diag(factor[0])).sum()
        fns["scipy"] = with_scipy
    return fns


def workload_gp():
    x, y = gp.make_data()
    step, value_and_grad, predict, params = gp.build(x, y)
    value_and_grad.trust_input = True
    current = np.array([p.get_value() for p in params])
    got, want = value_and_grad(), gp.reference_value_and_grad(current, x, y)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-9)
    fns = {"ffigraph": value_and_grad, "numpy": lambda: gp.reference_value_and_grad(current, x, y)}
    if sla is not None:
        fns["scipy"] = lambda: gp.scipy_value_and_grad(current, x, y)
    return fns


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 100 500, fewer calls")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="matrix orders (default 100 500 1000)")
    parser.add_argument("--repeat", type=int, default=None, help="timings per implementation (default 7, quick 3)")
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON")
    args = parser.parse_args(argv)
    sizes = args.sizes or ([100, 500] if args.quick else [100, 500, 1000])
    repeat = args.repeat or (3 if args.quick else 7)
    print("%s %s, numpy %s, %s; load average %s" % (platform.python_implementation(), platform.python_version(),
                                                   np.__version__, platform.machine(), load_average()))
    print("ms per call, best of %d, interleaved; ratio = numpy / ffigraph (> 1: ffigraph faster)" % repeat)
    rows = []
    cases = [("cholesky %d" % n, lambda n=n: workload_cholesky(n)) for n in sizes]
    cases += [("chol+solve+logdet %d" % n, lambda n=n: workload_chol_solve_logdet(n)) for n in sizes]
    cases += [("gp step (60 points)", workload_gp)]
    for label, make in cases:
        fns = make()
        calls = max(1, int(0.05 / max(_once(fns["numpy"]), 1e-6)))
        best = time_interleaved(fns, repeat, calls)
        ratio = best["numpy"] / best["ffigraph"]
        rows.append(dict(workload=label, ratio=ratio, **{k: v * 1e3 for k, v in best.items()}))
        print("  %-24s ffigraph %9.4f  numpy %9.4f  scipy %9s  ratio %5.2fx"
              % (label, best["ffigraph"] * 1e3, best["numpy"] * 1e3,
                 "%.4f" % (best["scipy"] * 1e3) if "scipy" in best else "-", ratio))
    if args.json:
        import json
        with open(args.json, "w") as fh:
            json.dump(dict(machine=platform.platform(), rows=rows), fh, indent=1)
    return rows


def _once(fn):
    import time
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
