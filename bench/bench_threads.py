"""Threads: what the per-function lock costs, and what parallelism it leaves.

    PYTHONPATH=. python3 bench/bench_threads.py [--calls N] [--json PATH]

Prints, in one run on one machine:
  * the cost of the lock per call: the lock's own acquire/release sequence, and a trusted
    ``x + y`` call on 1-element vectors with and without it (the same body, minus the lock);
  * threads x calls of one function with changing shapes, and how many results were wrong;
  * two *different* functions on large arrays from two threads vs one after the other
    (they overlap: the C call releases the GIL), and one function from two threads (its
    calls take turns by design).
Figures are ratios within this run; the machine is shared, so absolute times wander.
``--json PATH`` also writes the lock's and the overlap's times as ``{workload: {case: seconds}}``.
"""
from __future__ import annotations

import argparse
import threading
import time
import timeit

import numpy as np

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.calllock import get_ident
from ffigraph.compile.mode import Mode


def best_per_call(stmt, number, repeat=7):
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number


def lock_cost(number):
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], x + y, mode=Mode(linker="c"), trust_input=True)
    a, b = np.ones(1), np.ones(1)
    direct, owned = f._direct, f._lock

    def unlocked():   # Function.__call__'s trusted path, without the lock
        if f._trusted_plain and len((a, b)) == f._n_inputs:
            outs = direct((a, b))
            return outs[0] if f._single else outs

    # the statements __call__ runs around the call, inline (no Python function call around them)
    t_lock = min(timeit.repeat("acquire(False); owned.owner = get_ident(); owned.owner = None; release()",
                               globals=dict(acquire=owned.lock.acquire, release=owned.lock.release, owned=owned,
                                            get_ident=get_ident), number=number, repeat=15)) / number
    # interleaved, so that the machine's load falls on both alike
    t_with, t_without = [], []
    for _ in range(15):
        t_with.append(best_per_call(lambda: f(a, b), number, 1))
        t_without.append(best_per_call(unlocked, number, 1))
    t_with, t_without = min(t_with), min(t_without)
    g = function([x, y], x + y, mode=Mode(linker="c"))
    t_default = best_per_call(lambda: g(a, b), number)
    print("per-call cost of the lock (x + y, 1-element float64 vectors, linker c):")
    print("  lock statements alone (acquire, owner, release) %5.0f ns" % (t_lock * 1e9))
    print("  trusted call without the lock                 %7.0f ns" % (t_without * 1e9))
    print("  trusted call with the lock (what f() does)    %7.0f ns   (+%.0f ns, %.1f%%)"
          % (t_with * 1e9, (t_with - t_without) * 1e9, 100 * (t_with / t_without - 1)))
    print("  default call (filtering inputs), with lock    %7.0f ns   (lock = %.1f%% of it)"
          % (t_default * 1e9, 100 * t_lock / t_default))
    return {"lock statements alone": t_lock, "trusted without the lock": t_without,
            "trusted with the lock": t_with, "default with the lock": t_default}


def threads_by_calls(n_threads, calls):
    x, y = T.dmatrix("x"), T.dvector("y")
    f = function([x, y], [T.exp(x) * y + 1, (x - y).sum(axis=0)], mode=Mode(linker="c"))
    wrong, done = [0] * n_threads, [0] * n_threads
    inputs = [[(np.random.default_rng(k * 1000 + i).standard_normal((1 + (k + i) % 5, 3)),
                np.random.default_rng(i).standard_normal(3)) for i in range(calls)] for k in range(n_threads)]

    def work(k):
        for a, b in inputs[k]:
            o0, o1 = f(a, b)
            done[k] += 1
            if not (np.allclose(o0, np.exp(a) * b + 1) and np.allclose(o1, (a - b).sum(axis=0))):
                wrong[k] += 1

    t0 = time.perf_counter()
    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    print("one function, %d threads x %d calls (shapes change per call): %d calls, %d wrong, %.2f s"
          % (n_threads, calls, sum(done), sum(wrong), elapsed))
    return sum(wrong)


def parallel_ratio(size, rounds):
    x = T.dvector("x")
    graph = T.exp(T.sin(x) * 2.0 + T.cos(x)).sum()
    mode = Mode(linker="c")
    f, g = function([x], graph, mode=mode), function([x], graph, mode=mode)
    data = np.linspace(0.0, 1.0, size)
    f(data), g(data)

    def loop(fn):
        for _ in range(rounds):
            fn(data)

    def together(fa, fb):
        t0 = time.perf_counter()
        threads = [threading.Thread(target=loop, args=(fn,)) for fn in (fa, fb)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.perf_counter() - t0

    t0 = time.perf_counter()
    loop(f)
    loop(g)
    sequential = time.perf_counter() - t0
    two_functions = together(f, g)
    one_function = together(f, f)
    print("exp(sin(x)*2+cos(x)).sum() on %d float64, %d calls per thread:" % (size, rounds))
    print("  one after the other            %.3f s" % sequential)
    print("  f and g from two threads       %.3f s   speed-up %.2fx (different functions overlap)"
          % (two_functions, sequential / two_functions))
    print("  f and f from two threads       %.3f s   speed-up %.2fx (one function's calls take turns)"
          % (one_function, sequential / one_function))
    return {"one after the other": sequential, "f and g from two threads": two_functions,
            "f and f from two threads": one_function}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per thread in the threads x calls run")
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = parser.parse_args()
    lock = lock_cost(20000)
    print()
    wrong = threads_by_calls(8, args.calls)
    print()
    overlap = parallel_ratio(2_000_000, 10)
    if args.json:
        import json
        import platform
        with open(args.json, "w") as fh:
            json.dump(dict(machine="%s %s, numpy %s" % (platform.python_implementation(), platform.python_version(),
                                                        np.__version__),
                           calls=args.calls, wrong=wrong,
                           seconds={"x+y 1 elem, per call": lock,
                                    "exp(sin(x)*2+cos(x)).sum() 2e6, 10 calls a thread": overlap}), fh, indent=1)
    raise SystemExit(1 if wrong else 0)


if __name__ == "__main__":
    main()
