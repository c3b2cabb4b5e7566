"""Threads inside one call: from what loop size splitting it over threads pays (config.threads_min_size).

    python bench/bench_loop_threads.py [--threads N] [--repeat R] [--json PATH]

For a cheap and an expensive fused elementwise loop, a plain one and two sums, compiles the graph
with config.threads = 1 and = N (default: config.threads) with no threshold (every loop is split),
and prints the one-thread time over the N-thread time per size (above 1: the threads pay):

  * warm: calls back to back, as in a loop over batches (the workers are still spinning);
  * cold: 1 ms of sleep before each call (the workers have gone to sleep and must be woken).

Wall-clock time, best of R calls, the two functions timed alternately. The threshold
(config.threads_min_size, default 65536 elements) is where the cheap loops stop losing when cold.
Figures are ratios within this run; the machine may be shared, so absolute times wander.
``--json PATH`` also writes the times, ``{"<loop> <warm|cold> n=<size>": {"1 thread": s, "N threads": s}}``.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ffigraph.tensor as T
from ffigraph import config, function

LOOPS = {
    "x*y+x": lambda x, y: x * y + x,
    "exp(x)*y+tanh(x)-1.5*y": lambda x, y: T.exp(x) * y + T.tanh(x) - 1.5 * y,
    "x+y (plain)": lambda x, y: x + y,
    "sum(x*y)": lambda x, y: T.sum(x * y),
    "sum(x) (plain)": lambda x, y: T.sum(x),
}
SIZES = (4000, 16000, 32000, 64000, 128000, 256000, 1000000)


def best(f, a, b, repeat, gap):
    t_best = float("inf")
    for _ in range(repeat):
        if gap:
            time.sleep(gap)
        t0 = time.perf_counter()
        f(a, b)
        t_best = min(t_best, time.perf_counter() - t0)
    return t_best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=config.threads)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = parser.parse_args()
    seconds = {}
    if args.threads < 2:
        parser.error("needs --threads >= 2 (this machine's default is %d)" % config.threads)
    x, y = T.dvector("x"), T.dvector("y")
    funcs = {}
    for threads in (1, args.threads):
        with config.change_flags(threads=threads, threads_min_size=0):
            for name, build in LOOPS.items():
                funcs[name, threads] = function([x, y], build(x, y), on_unused_input="ignore")
    print("time with 1 thread / time with %d threads, float64, no threshold (wall clock, best of %d)"
          % (args.threads, args.repeat))
    print("%-24s %-5s " % ("loop", "") + " ".join("%8s" % ("n=%dk" % (n // 1000)) for n in SIZES))
    rng = np.random.default_rng(0)
    for name in LOOPS:
        for label, gap in (("warm", 0.0), ("cold", 0.001)):
            cells = []
            for n in SIZES:
                a, b = rng.normal(size=n), rng.normal(size=n)
                one, many = funcs[name, 1], funcs[name, args.threads]
                t1 = tn = float("inf")
                for _ in range(3):   # alternate, so that the machine's load falls on both alike
                    t1 = min(t1, best(one, a, b, args.repeat // 3, gap))
                    tn = min(tn, best(many, a, b, args.repeat // 3, gap))
                cells.append("%7.2fx" % (t1 / tn))
                seconds["%s %s n=%d" % (name, label, n)] = {"1 thread": t1, "%d threads" % args.threads: tn}
            print("%-24s %-5s " % (name, label) + " ".join("%8s" % c for c in cells))
    if args.json:
        import json
        import platform
        with open(args.json, "w") as fh:
            json.dump(dict(machine="%s %s, numpy %s" % (platform.python_implementation(), platform.python_version(),
                                                        np.__version__),
                           threads=args.threads, repeat=args.repeat, seconds=seconds), fh, indent=1)


if __name__ == "__main__":
    main()
