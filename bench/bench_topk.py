"""Top-k selection: ffigraph's ``topk_and_argtopk`` against numpy, JAX and PyTensor, in one run.

Run: ``python bench/bench_topk.py`` (``--quick`` for a smoke run, ``--repeat N``, ``--number N``,
``--jax-python PATH``, ``--pytensor-python PATH``, ``--json PATH``). Workloads, each the values and
positions of the top ``k`` of every row, largest first:

  rows f32       a (512, 4096) float32 matrix, k = 10 along axis 1 (a batch of logits)
  long f64       a 1,000,000-element float64 vector, k = 100

Implementations:

- ffigraph: one compiled function (default mode: C; a heap of k per lane, ``sorted=True``);
- numpy: ``argpartition`` then an ``argsort`` of the k chosen and ``take_along_axis`` (the usual
  fastest way to the sorted top k; ties may come in another order, values are checked);
- JAX: ``jax.lax.top_k`` under ``jax.jit`` (CPU), in ``/root/venv-jax/bin/python``;
- PyTensor: ``pytensor.tensor.sort.topk_and_argtopk`` with ``sorted=False`` where it has it
  (PyTensor 2 refuses ``sorted=True``; its op has no C code and runs numpy's ``argpartition`` in
  Python); PyTensor 3 dropped it, so there the user's way, a ``sort`` and an ``argsort`` sliced to
  the top k (its sort ops run numpy in Python too); compiled with ``Mode(linker='cvm')``, in
  ``/root/venv-bench/bin/python``.

JAX and PyTensor are not dependencies: each runs in its own interpreter, this same script with
``--worker jax`` or ``--worker pytensor``, which loads the inputs from an ``.npz``, checks its values
against numpy's, times each workload the same way and prints one JSON line. A missing
interpreter leaves its column empty, saying why. Each time is the best of --repeat timings of
--number calls (wall clock, one thread each: ffigraph's loops here run on one thread since a lane
is the unit of work); ffigraph and numpy interleave in this process, the workers run right after.
The machine is noisy: compare figures within one run.
"""
import json
import os
import platform
import sys
import tempfile

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from timing import load_average, side_by_side_parser, time_interleaved, worker_result  # noqa: E402

JAX_PYTHON = "/root/venv-jax/bin/python"
PYTENSOR_PYTHON = "/root/venv-bench/bin/python"


def inputs(quick):
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((64, 512) if quick else (512, 4096)).astype(np.float32)
    long = rng.standard_normal(100000 if quick else 1000000)
    return {"rows f32": (rows, 10, 1), "long f64": (long, 100, 0)}


def numpy_topk(x, k, axis):
    part = np.argpartition(x, -k, axis=axis)
    chosen = np.take(part, np.arange(x.shape[axis] - k, x.shape[axis]), axis=axis)
    values = np.take_along_axis(x, chosen, axis=axis)
    order = np.flip(np.argsort(values, axis=axis, kind="stable"), axis=axis)
    return np.take_along_axis(values, order, axis=axis), np.take_along_axis(chosen, order, axis=axis)


def check(values, x, k, axis):
    expected = np.flip(np.take(np.sort(x, axis=axis), np.arange(x.shape[axis] - k, x.shape[axis]), axis=axis),
                       axis=axis)
    np.testing.assert_array_equal(np.asarray(values), expected)


def ffigraph_fns(data):
    sys.path.insert(0, os.path.dirname(HERE))
    import ffigraph
    import ffigraph.tensor as T

    fns = {}
    for name, (x, k, axis) in data.items():
        v = T.tensor(str(x.dtype), (None,) * x.ndim, name="x")
        f = ffigraph.function([v], list(T.topk_and_argtopk(v, k, axis=axis)), name="topk")
        f.trust_input = True
        got = f(x)
        check(got[0], x, k, axis)
        np.testing.assert_array_equal(np.take_along_axis(x, got[1], axis=axis), got[0])
        fns[name] = (lambda f=f, x=x: f(x))
    return fns


def worker(kind, npz, repeat, number):
    """Time ``kind``'s top k on the inputs of ``npz``; one JSON line of seconds per call."""
    loaded = np.load(npz)
    data = {name: (loaded["x%d" % i], int(loaded["k%d" % i]), int(loaded["a%d" % i]))
            for i, name in enumerate(json.loads(str(loaded["names"])))}
    fns, version = {}, None
    if kind == "jax":
        import jax
        from jax import lax

        jax.config.update("jax_enable_x64", True)   # float64 stays float64
        version = "jax %s" % jax.__version__
        for name, (x, k, axis) in data.items():
            moved = np.ascontiguousarray(np.moveaxis(x, axis, -1))   # lax.top_k works on the last axis
            fn = jax.jit(lambda a, k=k: lax.top_k(a, k))
            got = fn(moved)
            check(np.moveaxis(np.asarray(got[0]), -1, axis), x, k, axis)
            fns[name] = (lambda fn=fn, a=moved: [r.block_until_ready() for r in fn(a)])
    else:
        import pytensor
        import pytensor.tensor as pt
        import pytensor.tensor.sort as pt_sort
        from pytensor.compile.mode import Mode

        version = "pytensor %s" % pytensor.__version__
        for name, (x, k, axis) in data.items():
            v = pt.tensor(dtype=str(x.dtype), shape=(None,) * x.ndim)
            if hasattr(pt_sort, "topk_and_argtopk"):   # Theano's op (PyTensor 2 has it, unsorted only)
                outs, unsorted = list(pt_sort.topk_and_argtopk(v, k, axis=axis, sorted=False)), True
            else:   # PyTensor 3 dropped it: the user's way is a sort and a slice
                index = [slice(None)] * x.ndim
                index[axis] = slice(None, -k - 1, -1)
                order = pt.argsort(v, axis=axis)[tuple(index)]
                outs, unsorted = [pt.sort(v, axis=axis)[tuple(index)], order], False
                version = "pytensor %s (no topk: sort + argsort, sliced)" % pytensor.__version__
            f = pytensor.function([v], outs, mode=Mode(linker="cvm"))
            f.trust_input = True
            got = f(x)
            check(np.flip(np.sort(got[0], axis=axis), axis=axis) if unsorted else got[0], x, k, axis)
            fns[name] = (lambda f=f, x=x: f(x))
    best = {}
    for name, fn in fns.items():
        best[name] = time_interleaved({name: fn}, repeat, number)[name]
    print(json.dumps({"version": version, "seconds": best}))


def run_worker(kind, python, npz, repeat, number):
    return worker_result(python, [os.path.abspath(__file__), "--worker", kind, "--npz", npz,
                                  "--repeat", str(repeat), "--number", str(number)])


def main():
    parser = side_by_side_parser(__doc__, 7, JAX_PYTHON, PYTENSOR_PYTHON)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    number = args.number or (20 if args.quick else 10)
    if args.worker:
        return worker(args.worker, args.npz, args.repeat, number)
    data = inputs(args.quick)
    fns = ffigraph_fns(data)
    rows = {}
    for name, (x, k, axis) in data.items():
        got = numpy_topk(x, k, axis)
        check(got[0], x, k, axis)
        best = time_interleaved({"ffigraph": fns[name], "numpy": lambda x=x, k=k, axis=axis: numpy_topk(x, k, axis)},
                                args.repeat, number)
        rows[name] = best
    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "inputs.npz")
        arrays = {"names": json.dumps(list(data))}
        for i, (x, k, axis) in enumerate(data.values()):
            arrays.update({"x%d" % i: x, "k%d" % i: k, "a%d" % i: axis})
        np.savez(npz, **arrays)
        workers = {kind: run_worker(kind, python, npz, args.repeat, number)
                   for kind, python in (("jax", args.jax_python), ("pytensor", args.pytensor_python))}
    print("top-k, best of %d x %d calls, ms per call (%s, Python %s, load %s)"
          % (args.repeat, number, platform.machine(), platform.python_version(), load_average()))
    for kind, (result, why) in workers.items():
        print("  %s: %s" % (kind, result["version"] if result else why))
    print("%-10s %10s %10s %10s %10s   %s" % ("workload", "ffigraph", "numpy", "jax", "pytensor", "numpy/ffigraph"))
    for name, best in rows.items():
        for kind, (result, _) in workers.items():
            best[kind] = result["seconds"][name] if result else None
        cells = ["%10.3f" % (best[k] * 1e3) if best[k] is not None else "%10s" % "-"
                 for k in ("ffigraph", "numpy", "jax", "pytensor")]
        print("%-10s %s   %.2fx" % (name, " ".join(cells), best["numpy"] / best["ffigraph"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
