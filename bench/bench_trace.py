"""What recording node-creation traces costs: graph-build time per Apply node with
``config.traceback__limit`` = 0 (nothing recorded) against 1, 8 (the default) and -1 (all frames).

    PYTHONPATH=. python3 bench/bench_trace.py [--nodes N] [--rounds R] [--depth D] [--json PATH]

Builds ``z = exp(z * y + x)`` N times (3 nodes each) under each limit, interleaving the
limits round after round and keeping each one's best round, so a busy machine disturbs them
alike. ``--depth`` builds from under D extra Python frames (a deep call stack: a test runner,
a framework). Prints microseconds per node and the ratio to limit 0; ``--json PATH`` also writes
them as ``{"graph build, per Apply node": {"traceback__limit=L": seconds}}`` (bench/run_all.py).
"""
from __future__ import annotations

import argparse
import platform
import sys
import time

import ffigraph.tensor as T
from ffigraph.config import config


def build(n):
    x, y = T.dvector("x"), T.dvector("y")
    z = x
    for _ in range(n):
        z = T.exp(z * y + x)
    return z


def timed(n, limit):
    with config.change_flags(traceback__limit=limit):
        start = time.perf_counter()
        build(n)
        return time.perf_counter() - start


def under(depth, fn, *args):
    return under(depth - 1, fn, *args) if depth else fn(*args)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=500, help="loop iterations per round (3 nodes each)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--depth", type=int, default=0, help="extra Python frames under the build")
    ap.add_argument("--limits", default="0,1,8,-1")
    ap.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = ap.parse_args(argv)
    limits = [int(v) for v in args.limits.split(",")]
    best = {limit: float("inf") for limit in limits}
    for limit in limits:  # warm up (and let PyPy's JIT compile)
        under(args.depth, timed, args.nodes, limit)
    for _ in range(args.rounds):
        for limit in limits:
            best[limit] = min(best[limit], under(args.depth, timed, args.nodes, limit))
    nodes = 3 * args.nodes
    base = best[0] if 0 in best else best[limits[0]]
    print("%s %s, %d nodes per round, best of %d rounds, %d extra frames"
          % (platform.python_implementation(), sys.version.split()[0], nodes, args.rounds, args.depth))
    for limit in limits:
        print("traceback__limit=%-3d %7.2f us per Apply   x%.3f"
              % (limit, best[limit] / nodes * 1e6, best[limit] / base))
    if args.json:
        import json
        with open(args.json, "w") as fh:
            json.dump(dict(machine="%s %s" % (platform.python_implementation(), sys.version.split()[0]),
                           nodes=nodes, rounds=args.rounds, depth=args.depth,
                           seconds={"graph build, per Apply node": {"traceback__limit=%d" % limit: best[limit] / nodes
                                                                    for limit in limits}}), fh, indent=1)


if __name__ == "__main__":
    main()
