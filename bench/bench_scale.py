"""Scaling out: one compiled function mapped over 8 chunks in this process, in 1 and 2 worker
processes (multiprocessing, spawn), and on a Dask LocalCluster of 2 worker processes.

    python bench/bench_scale.py [--rows N] [--repeat R]

Every worker starts with an empty compile cache of its own, so what it needs comes from the
pickles: the table counts the libraries the workers compiled (0 expected) and the ones they
adopted from the pickles, the bytes of one pickle with and without its library
(``config.pickle__library``), and the wall time of the map (best of R; worker start-up
excluded for the pools, included in the first Dask run only). Timing only; nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pickle
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ffigraph  # noqa: E402
import ffigraph.tensor as T  # noqa: E402
from ffigraph.config import config  # noqa: E402
from timing import best_of  # noqa: E402


def build():
    rng = np.random.default_rng(0)
    x = T.dmatrix("x")
    w1 = ffigraph.shared(rng.standard_normal((32, 64)) / 6, name="w1")
    w2 = ffigraph.shared(rng.standard_normal(64) / 8, name="w2")
    return ffigraph.function([x], T.nnet.sigmoid(T.dot(T.tanh(T.dot(x, w1)), w2)), name="score")


def cache_counts(root):
    compiled = adopted = 0
    for dirpath, _, files in os.walk(root):
        if "meta.json" in files:
            with open(os.path.join(dirpath, "meta.json")) as fh:
                if json.load(fh).get("adopted"):
                    adopted += 1
                else:
                    compiled += 1
    return compiled, adopted


def worker_env(root):
    return {"FFIGRAPH_COMPILEDIR": root}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20000, help="rows per chunk (8 chunks)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    f = build()
    chunks = [np.random.default_rng(k).standard_normal((args.rows, 32)) for k in range(8)]
    with_library = len(pickle.dumps(f))
    with config.using(dict(pickle__library=False)):
        without_library = len(pickle.dumps(f))
    rows = [("in process", best_of(lambda: [f(c) for c in chunks], args.repeat), "-", "-")]
    scratch = tempfile.mkdtemp(prefix="ffigraph-bench-scale-")
    try:
        for n in (1, 2):
            root = os.path.join(scratch, "pool%d" % n)
            saved = dict(os.environ)
            os.environ.update(worker_env(root))   # spawn children read it when they import ffigraph
            try:
                with multiprocessing.get_context("spawn").Pool(n) as pool:
                    pool.map(abs, range(n))   # started before timing
                    seconds = best_of(lambda: pool.map(f, chunks), args.repeat)
            finally:
                os.environ.clear()
                os.environ.update(saved)
            compiled, adopted = cache_counts(root)
            rows.append(("Pool(%d), spawn" % n, seconds, compiled, adopted))
        try:
            import dask.array as da
            from distributed import Client, LocalCluster
        except ImportError:
            rows.append(("Dask LocalCluster(2)", None, "dask[distributed] not installed", ""))
        else:
            root = os.path.join(scratch, "dask")
            array = da.from_array(np.concatenate(chunks), chunks=(args.rows, 32))
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                              env=worker_env(root)) as cluster, Client(cluster) as client:
                seconds = best_of(lambda: client.compute(array.map_blocks(f, drop_axis=1, dtype=float)).result(),
                               args.repeat)
            compiled, adopted = cache_counts(root)
            rows.append(("Dask LocalCluster(2)", seconds, compiled, adopted))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("8 chunks of %d x 32 float64; pickle of the function: %d bytes with its library, %d without"
          % (args.rows, with_library, without_library))
    print("| map | wall time | libraries compiled by workers | adopted from pickles |")
    print("|---|---|---|---|")
    for name, seconds, compiled, adopted in rows:
        print("| %s | %s | %s | %s |" % (name, "%.3f s" % seconds if seconds is not None else "-", compiled, adopted))
    return 0


if __name__ == "__main__":
    sys.exit(main())
