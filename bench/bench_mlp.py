"""MLP training step (examples/mlp_digits.py's model): ffigraph's compiled ``train`` vs numpy by hand.

Run: ``python bench/bench_mlp.py`` (``--quick`` for a smoke run, ``--repeat N``, ``--steps N``,
``--pytensor``, ``--json PATH``). One step: a relu hidden layer with inverted dropout, a softmax
output, the mean negative log-likelihood of integer labels (advanced indexing), an L2 penalty, the
gradients, and SGD updates of the four parameters. Two sizes: the digits example's (minibatch 32,
64 -> 100 -> 10) and a larger one (256, 784 -> 512 -> 10), float64.

Implementations, all in this process: numpy (the same math written by hand, its dropout mask from
numpy's own generator), ffigraph's default mode, and with ``--pytensor`` the same graph in PyTensor
(its C backend, ``Mode(linker='cvm')``; PyTensor 3 defaults to Numba). Before timing, each
implementation runs CHECK_STEPS steps with dropout off (keep = 1) from the same weights, and must
give numpy's parameters: the dropout masks of the timed runs come from different generators, so
only the mask-free step can be compared value for value.

Threads: OPENBLAS/OMP/MKL threads are set to 1 before numpy is imported; ffigraph uses its own
pool for large loops and BLAS calls (``config.threads``). Each implementation's time is the best of
--repeat timings of --steps steps, the rounds interleaved; wall-clock time (threads add up in CPU
time). The machine is noisy: compare figures within one run.
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

LEARNING_RATE = 0.1
L2 = 1e-4
KEEP = 0.8
CHECK_STEPS = 20
CHECK_RTOL = 1e-9
SIZES = {"digits": (32, 64, 100, 10), "large": (256, 784, 512, 10)}   # batch, inputs, hidden, classes


def initial_weights(n_in, n_hidden, n_out, seed=0):
    rng = np.random.default_rng(seed)
    bound = np.sqrt(6.0 / (n_in + n_hidden))
    return [rng.uniform(-bound, bound, (n_in, n_hidden)), np.zeros(n_hidden),
            rng.uniform(-0.1, 0.1, (n_hidden, n_out)), np.zeros(n_out)]


def batch(size, seed=1):
    n, n_in, _, n_out = size
    rng = np.random.default_rng(seed)
    return rng.random((n, n_in)), rng.integers(0, n_out, n).astype(np.int64)


# ---------------------------------------------------------------------------- implementations

def numpy_step_fn(params, x, y, keep):
    """One hand-written step; ``params`` (w1, b1, w2, b2) are updated in place; returns the cost."""
    w1, b1, w2, b2 = params
    n = x.shape[0]
    rows = np.arange(n)
    rng = np.random.default_rng(2)

    def step():
        a = x.dot(w1) + b1
        h = np.maximum(a, 0.0)
        mask = (rng.random(h.shape) < keep) if keep < 1 else np.ones(h.shape, dtype=bool)
        hd = h * mask / keep
        z = hd.dot(w2) + b2
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        cost = -np.mean(np.log(p[rows, y])) + L2 * ((w1 ** 2).sum() + (w2 ** 2).sum())
        g = p
        g[rows, y] -= 1.0
        g /= n
        gw2 = hd.T.dot(g) + 2 * L2 * w2
        gb2 = g.sum(axis=0)
        gh = g.dot(w2.T) * mask / keep * (a > 0)
        gw1 = x.T.dot(gh) + 2 * L2 * w1
        gb1 = gh.sum(axis=0)
        for param, grad in zip(params, (gw1, gb1, gw2, gb2)):
            param -= LEARNING_RATE * grad
        return cost
    return step


def graph_train(lib, params, keep):
    """The step compiled by ``lib`` ("ffigraph" or "pytensor"): ``(train, shared params)`` or a reason (str)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if lib == "ffigraph":
                import ffigraph as top
                import ffigraph.tensor as T
                from ffigraph.tensor.random.utils import RandomStream
                from ffigraph.tensor.special import softmax
                mode = None
            else:
                import pytensor as top
                import pytensor.tensor as T
                from pytensor.compile.mode import Mode
                from pytensor.tensor.random.utils import RandomStream
                from pytensor.tensor.special import softmax
                mode = Mode(linker="cvm")
    except ImportError:
        return "%s not installed in %s" % (lib, sys.executable)
    x, y = T.dmatrix("x"), T.lvector("y")
    shared = [top.shared(p.copy(), name=nm) for p, nm in zip(params, ("w1", "b1", "w2", "b2"))]
    w1, b1, w2, b2 = shared
    h = T.maximum(T.dot(x, w1) + b1, 0.0)
    if keep < 1:
        h = h * RandomStream(3).binomial(1, keep, size=h.shape) / keep
    p_y = softmax(T.dot(h, w2) + b2, axis=-1)
    cost = -T.mean(T.log(p_y)[T.arange(y.shape[0]), y]) + L2 * ((w1 ** 2).sum() + (w2 ** 2).sum())
    grads = top.grad(cost, shared)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            train = top.function([x, y], cost, mode=mode,
                                 updates=[(p, p - LEARNING_RATE * g) for p, g in zip(shared, grads)])
    except Exception as exc:  # e.g. no C compiler
        return "%s failed to compile (%s: %s)" % (lib, type(exc).__name__, exc)
    return train, shared


def implementations(size, keep, with_pytensor):
    """``({name: (step, params())}, notes)`` for one size."""
    x, y = batch(size)
    start = initial_weights(*size[1:])
    impls, notes = {}, []
    np_params = [p.copy() for p in start]
    impls["numpy"] = (numpy_step_fn(np_params, x, y, keep), lambda: np_params)
    for lib in ("ffigraph",) + (("pytensor",) if with_pytensor else ()):
        got = graph_train(lib, start, keep)
        if isinstance(got, str):
            notes.append(got)
            continue
        train, shared = got
        impls[lib] = ((lambda train=train: train(x, y)), (lambda shared=shared: [s.get_value() for s in shared]))
    return impls, notes


def check(size, with_pytensor):
    """Without dropout, every implementation's parameters after CHECK_STEPS steps are numpy's."""
    impls, _ = implementations(size, 1.0, with_pytensor)
    finals = {}
    for name, (step, params) in impls.items():
        for _ in range(CHECK_STEPS):
            step()
        finals[name] = params()
    worst = 0.0
    for name, got in finals.items():
        for g, want in zip(got, finals["numpy"]):
            diff = float(np.max(np.abs(g - want))) if want.size else 0.0
            if diff > CHECK_RTOL * max(1.0, float(np.max(np.abs(want)))):
                raise SystemExit("bench_mlp: %s disagrees with numpy after %d steps (max |difference| %.3g)"
                                 % (name, CHECK_STEPS, diff))
            worst = max(worst, diff)
    return worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and repeats (smoke run)")
    parser.add_argument("--repeat", type=int, default=None, help="interleaved rounds, best-of (default 7, quick 3)")
    parser.add_argument("--steps", type=int, default=None, help="steps a timing (default 200, quick 30)")
    parser.add_argument("--pytensor", action="store_true", help="also time the graph in PyTensor (C backend)")
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 7)
    steps = args.steps if args.steps is not None else (30 if args.quick else 200)
    if repeat < 1 or steps < 1:
        parser.error("--repeat and --steps must be >= 1")
    impl = "PyPy" if hasattr(sys, "pypy_version_info") else "CPython"
    machine = "%s %s, numpy %s, %s" % (impl, sys.version.split()[0], np.__version__, platform.machine())
    print("%s; OPENBLAS_NUM_THREADS=1; wall clock; best of %d interleaved rounds of %d steps" % (machine, repeat, steps))
    seconds, all_notes = {}, []
    print()
    print("| %-34s | %-10s | %9s | %12s |" % ("workload", "impl", "us/step", "x numpy time"))
    print("|%s|%s|%s|%s|" % ("-" * 36, "-" * 12, "-" * 11, "-" * 14))
    for label, size in SIZES.items():
        max_diff = check(size, args.pytensor)
        impls, notes = implementations(size, KEEP, args.pytensor)
        all_notes.extend(n for n in notes if n not in all_notes)
        t = time_interleaved({name: step for name, (step, _) in impls.items()}, repeat, steps)  # wall clock
        workload = "%s: batch %d, %d-%d-%d, keep %.1f" % ((label,) + size + (KEEP,))
        seconds[workload] = t
        for name in impls:
            print("| %-34s | %-10s | %9.1f | %12.2f |" % (workload, name, t[name] * 1e6, t[name] / t["numpy"]))
        all_notes.append("%s: %d steps without dropout agree with numpy to max |difference| %.2g"
                         % (label, CHECK_STEPS, max_diff))
    print()
    for note in all_notes:
        print(note)
    print("'x numpy time' = time / numpy step time (lower is faster).")
    if args.json:
        import json
        with open(args.json, "w") as fh:
            json.dump(dict(machine=machine, quick=args.quick, repeat=repeat, steps=steps, clock="wall",
                           notes=all_notes, seconds=seconds), fh, indent=1)


if __name__ == "__main__":
    main()
