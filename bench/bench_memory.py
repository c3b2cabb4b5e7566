"""Memory of a long-lived process that compiles many graphs: resident size while it compiles,
calls and drops N distinct small graphs, one after the other.

    PYTHONPATH=. python3 bench/bench_memory.py [--graphs 2000] [--every 200] [--linker cvm]
    PYTHONPATH=. pypy3 bench/bench_memory.py ...

A notebook, a service or a hyper-parameter search compiles graph after graph in one process.
Each graph here is distinct (its own constant, so its own C source and library); each is called
once and dropped. Printed every ``--every`` graphs: the resident size (VmRSS), its growth since
the first report, and how many graph libraries the process has mapped right now. What a process
keeps for a graph it no longer uses shows up as growth per graph.

The first run compiles every graph (a few minutes); later runs find them in the compile cache
(``FFIGRAPH_COMPILEDIR`` or the default), which changes the time, not the memory.
"""
from __future__ import annotations

import argparse
import gc
import platform
import sys
import time

import numpy as np

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.linkers.c import cache


def rss_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS in /proc/self/status")


def mapped_libraries():
    """How many distinct graph libraries (compile-cache entries) are mapped into this process."""
    root = cache.root()
    with open("/proc/self/maps") as fh:
        return len({line.split()[-1] for line in fh if root in line and line.rstrip().endswith(".so")})


def one_graph(k, mode):
    """Compile, call and drop graph number k: (x * c_k + y) summed, c_k its own constant."""
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], [(x * (1.0 + k / 4096.0) + y).sum()], mode=mode)
    value = f(np.ones(4), np.ones(4))[0]
    expected = 4 * (2.0 + k / 4096.0)
    if abs(value - expected) > 1e-9:
        raise AssertionError("graph %d gave %r, expected %r" % (k, value, expected))


def run(n_graphs, every, linker, warmup=10):
    mode = Mode(linker=linker)
    for k in range(warmup):   # imports, first compile, the allocator's first pages
        one_graph(-1 - k, mode)
    gc.collect()
    first = rss_mb()
    start = time.perf_counter()
    rows = []
    print("%-8s %10s %10s %8s %8s" % ("graphs", "RSS MB", "growth MB", "mapped", "seconds"))
    print("%-8d %10.1f %10.1f %8d %8.1f" % (0, first, 0.0, mapped_libraries(), 0.0))
    for k in range(1, n_graphs + 1):
        one_graph(k, mode)
        if k % every == 0 or k == n_graphs:
            gc.collect()
            rss = rss_mb()
            rows.append((k, rss - first))
            print("%-8d %10.1f %10.1f %8d %8.1f" % (k, rss, rss - first, mapped_libraries(),
                                                   time.perf_counter() - start))
            sys.stdout.flush()
    return first, rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", type=int, default=2000)
    parser.add_argument("--every", type=int, default=200)
    parser.add_argument("--linker", default="cvm")
    args = parser.parse_args(argv)
    impl = platform.python_implementation()
    print("%s %s, numpy %s, linker %s, compile cache %s" % (impl, platform.python_version(), np.__version__,
                                                             args.linker, cache.root()))
    first, rows = run(args.graphs, args.every, args.linker)
    growth = rows[-1][1]
    print("growth over %d graphs: %.1f MB (%.1f KB per graph)" % (args.graphs, growth, 1024.0 * growth / args.graphs))


if __name__ == "__main__":
    main()
