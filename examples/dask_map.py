"""Map a compiled function over the chunks of a dask array on a local cluster of worker processes.

    python examples/dask_map.py [--workers N] [--chunks K]

The function is compiled once, here. Dask pickles it for the workers; the pickle carries its
compiled library, so a worker loads it and runs it with no C compiler and no compile (a test runs
this with the workers' compiler replaced by a program that always fails, and an empty cache).
Needs ``dask[distributed]`` (``pip install "dask[distributed]"``).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import ffigraph
import ffigraph.tensor as T


def model():
    """A small two-layer scorer: one row of features in, one score out."""
    rng = np.random.default_rng(0)
    x = T.dmatrix("x")
    w1 = ffigraph.shared(rng.standard_normal((8, 16)) / 4, name="w1")
    w2 = ffigraph.shared(rng.standard_normal(16) / 4, name="w2")
    score = T.nnet.sigmoid(T.dot(T.tanh(T.dot(x, w1)), w2))
    f = ffigraph.function([x], score, name="score")
    reference = lambda a: 1 / (1 + np.exp(-(np.tanh(a @ w1.get_value()) @ w2.get_value())))  # noqa: E731
    return f, reference


def run(n_workers=2, n_chunks=8, rows=500, worker_env=None, timeout=600):
    """Scores of ``n_chunks * rows`` random rows, computed on a LocalCluster; returns (scores, numpy's)."""
    import dask.array as da
    from distributed import Client, LocalCluster

    f, reference = model()
    data = np.random.default_rng(1).standard_normal((n_chunks * rows, 8))
    array = da.from_array(data, chunks=(rows, 8))
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                      env=worker_env or {}) as cluster, Client(cluster) as client:
        scores = client.compute(array.map_blocks(f, drop_axis=1, dtype=np.float64)).result(timeout=timeout)
    return scores, reference(data)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunks", type=int, default=8)
    args = parser.parse_args(argv)
    scores, expected = run(args.workers, args.chunks)
    error = float(np.max(np.abs(scores - expected)))
    print("%d scores from %d worker processes; largest difference from numpy: %.1e"
          % (len(scores), args.workers, error))
    return 0 if error < 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
