"""Logistic-regression training step: ffigraph's compiled ``train`` vs the same step in numpy.

Run: ``python bench/bench_logreg.py`` (``--quick`` for a smoke run, ``--repeat N``, ``--steps N``,
``--clock wall``, ``--pytensor``). The model, data and ``train`` function are those of
examples/logistic_regression.py (400 examples x 784 features, float64): one step computes the
prediction and the cost and updates ``w`` and ``b`` with the gradients ffigraph derived. The
numpy step is written by hand:

    z = x.dot(w) + b;  p = 1 / (1 + exp(-z));  xent = -y*log(p) - (1-y)*log(1-p)
    cost = xent.mean() + 0.01*(w**2).sum();  prediction = p > 0.5
    gw = x.T.dot((p - y) / N) + 0.02*w;  gb = (p - y).mean();  w -= 0.1*gw;  b -= 0.1*gb

Implementations: numpy, ffigraph default mode (linker cvm), ffigraph linker 'c' (one C library
for the whole graph), and with ``--pytensor`` the same graph in PyTensor (its C backend), all in
this process. Each is checked first: 50 steps from w = 0, b = 0 must give numpy's parameters.
The BLAS floor is the two matrix-vector products every step needs, ``x.dot(w)`` and
``x.T.dot(v)``, timed alone in numpy.

Threads: OPENBLAS/OMP/MKL threads are set to 1 before numpy is imported, so numpy and the BLAS
run on one thread; ffigraph splits its large loops and its large BLAS calls (the two
matrix-vector products here) over ``config.threads`` threads of its own pool (``--threads N`` sets
it for the run; 1: everything on one thread). After a warm-up, each implementation's time is the
best of --repeat (default 7) timings of --steps (default 200) steps; the rounds are interleaved
(each round times every implementation once, in a rotating order). Times are wall-clock time when
ffigraph uses threads (CPU time would add up every thread's), and this process's CPU time otherwise
(time other processes take on a shared machine does not count; single-threaded, it equals wall
time on an idle machine); ``--clock cpu|wall`` chooses. ``--plot PATH.png`` also draws the table
as a bar chart (bench/plot.py, needs matplotlib) once it is printed.
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # (when this file is loaded from outside bench/)

import logistic_regression as lr  # noqa: E402
from timing import load_average, time_interleaved  # noqa: E402

CHECK_STEPS = 50
CHECK_RTOL = 1e-9


# ---------------------------------------------------------------------------- implementations

def numpy_step_fn(x, y, w, b):
    """One hand-written training step on ``w`` (1-d) and ``b`` (0-d), both updated in place."""
    n = x.shape[0]

    def step():
        z = x.dot(w) + b
        p = 1.0 / (1.0 + np.exp(-z))
        xent = -y * np.log(p) - (1 - y) * np.log(1 - p)
        cost = xent.mean() + lr.L2 * (w ** 2).sum()
        prediction = p > 0.5
        gw = x.T.dot((p - y) / n) + 2 * lr.L2 * w
        gb = (p - y).mean()
        w[...] -= lr.LEARNING_RATE * gw
        b[...] -= lr.LEARNING_RATE * gb
        return prediction, cost
    return step


def pytensor_train(x_val):
    """``(train, w, b)``: the example's graph compiled by PyTensor's C backend, or a reason (str)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. "could not link to a BLAS installation"
            import pytensor
            import pytensor.tensor as pt
            from pytensor.compile.mode import get_mode, predefined_modes
    except ImportError:
        return "PyTensor not installed in %s (try /tmp/ptvenv/bin/python)" % sys.executable
    # PyTensor >= 3 defaults to Numba; "CVM" is its C backend (what older versions ran by default).
    mode_name = "CVM" if "CVM" in predefined_modes else "FAST_RUN"
    x, y = pt.dmatrix("x"), pt.dvector("y")
    w = pytensor.shared(np.zeros(x_val.shape[1]), name="w")
    b = pytensor.shared(np.float64(0.0), name="b")
    prediction, _, cost = lr.model(x, y, w, b, tensor=pt)
    gw, gb = pytensor.grad(cost, [w, b])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            train = pytensor.function([x, y], [prediction, cost], mode=get_mode(mode_name),
                                      updates=[(w, w - lr.LEARNING_RATE * gw), (b, b - lr.LEARNING_RATE * gb)])
    except Exception as exc:  # e.g. no C++ compiler
        return "PyTensor failed to compile (%s: %s)" % (type(exc).__name__, exc)
    return train, w, b, "PyTensor %s, mode %r" % (pytensor.__version__, mode_name)


def implementations(x, y, with_pytensor):
    """{name: (step, reset, params)}: a step, a function setting w = 0 and b = 0, and one returning (w, b)."""
    impls = {}
    w_np, b_np = np.zeros(x.shape[1]), np.zeros(())

    def reset_np():
        w_np[...] = 0.0
        b_np[...] = 0.0
    impls["numpy"] = (numpy_step_fn(x, y, w_np, b_np), reset_np, lambda: (w_np.copy(), float(b_np)))

    def shared_pair(train, w, b):
        def reset():
            w.set_value(np.zeros(x.shape[1]))
            b.set_value(np.float64(0.0))
        return (lambda: train(x, y)), reset, (lambda: (w.get_value(), float(b.get_value())))

    for name, linker in (("ffigraph default", None), ("ffigraph c", "c")):
        train, _, w, b = lr.build(linker)
        impls[name] = shared_pair(train, w, b)
    notes = []
    if with_pytensor:
        got = pytensor_train(x)
        if isinstance(got, str):
            notes.append(got)
        else:
            impls["pytensor"] = shared_pair(*got[:3])
            notes.append(got[3])
    return impls, notes


def check(impls):
    """Every implementation's parameters after CHECK_STEPS steps match numpy's."""
    finals = {}
    for name, (step, reset, params) in impls.items():
        reset()
        for _ in range(CHECK_STEPS):
            step()
        finals[name] = params()
        reset()
    w_ref, b_ref = finals["numpy"]
    for name, (w, b) in finals.items():
        if not (np.allclose(w, w_ref, rtol=CHECK_RTOL, atol=CHECK_RTOL * np.max(np.abs(w_ref)))
                and np.isclose(b, b_ref, rtol=CHECK_RTOL, atol=CHECK_RTOL)):
            raise SystemExit("bench_logreg: %s disagrees with numpy after %d steps (max |dw| %.3g, |db| %.3g)"
                             % (name, CHECK_STEPS, np.max(np.abs(w - w_ref)), abs(b - b_ref)))
    return max(max(float(np.max(np.abs(w - w_ref))), abs(b - b_ref)) for w, b in finals.values())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and repeats (smoke run)")
    parser.add_argument("--repeat", type=int, default=None, help="interleaved rounds, best-of (default 7, quick 3)")
    parser.add_argument("--steps", type=int, default=None, help="steps a timing (default 200, quick 50)")
    parser.add_argument("--clock", choices=("auto", "cpu", "wall"), default="auto",
                        help="cpu: this process's CPU time (other processes on a shared machine do not count),"
                             " wall: wall-clock time; auto (default): wall when ffigraph uses threads, else cpu")
    parser.add_argument("--threads", type=int, default=None,
                        help="ffigraph.config.threads for the run (default: the CPUs this process may use)")
    parser.add_argument("--pytensor", action="store_true", help="also time the graph in PyTensor (C backend)")
    parser.add_argument("--plot", metavar="PATH.png", help="also write a bar chart of the timings (needs matplotlib)")
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = parser.parse_args(argv)
    if args.plot:
        import plot
        plot.check_path(parser, args.plot)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 7)
    steps = args.steps if args.steps is not None else (50 if args.quick else 200)
    if repeat < 1 or steps < 1:
        parser.error("--repeat and --steps must be >= 1")
    from ffigraph import config
    if not hasattr(config, "threads"):  # an ffigraph from before threaded loops (run_all.py --compare): one thread
        object.__setattr__(config, "threads", 1)
        object.__setattr__(config, "threads_min_size", 0)
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be >= 1")
        config.threads = args.threads
    if args.clock == "auto":
        args.clock = "wall" if config.threads > 1 else "cpu"
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    x, y = lr.make_data()
    impls, notes = implementations(x, y, args.pytensor)
    max_diff = check(impls)
    v = np.random.default_rng(0).standard_normal(x.shape[0])
    w0 = np.random.default_rng(1).standard_normal(x.shape[1])
    fns = {name: step for name, (step, _, _) in impls.items()}
    fns["x.dot(w)"] = lambda: x.dot(w0)
    fns["x.T.dot(v)"] = lambda: x.T.dot(v)

    impl = "PyPy" if hasattr(sys, "pypy_version_info") else "CPython"
    print("%s %s, numpy %s, %s; threads: OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1, ffigraph config.threads=%d"
          " (loops of %d elements or more); clock: %s"
          % (impl, sys.version.split()[0], np.__version__, platform.machine(), config.threads,
             config.threads_min_size, "process CPU time" if clock is time.process_time else "wall clock"))
    for note in notes:
        print(note)
    print("data: %d x %d float64; best of %d interleaved rounds of %d steps, after a warm-up of %d steps"
          % (x.shape[0], x.shape[1], repeat, steps, steps))
    print("check: %d steps from zero agree with numpy to max |difference| %.2g" % (CHECK_STEPS, max_diff))
    print()
    load_start = load_average()
    start = time.perf_counter()
    t = time_interleaved(fns, repeat, steps, clock)
    floor = t["x.dot(w)"] + t["x.T.dot(v)"]
    print("| %-22s | %9s | %12s | %12s |" % ("implementation", "us/step", "x numpy time", "x BLAS floor"))
    print("|%s|%s|%s|%s|" % ("-" * 24, "-" * 11, "-" * 14, "-" * 14))
    for name in impls:
        print("| %-22s | %9.1f | %12.2f | %12.2f |" % (name, t[name] * 1e6, t[name] / t["numpy"], t[name] / floor))
    for name in ("x.dot(w)", "x.T.dot(v)"):
        print("| %-22s | %9.1f | %12.2f | %12s |" % ("numpy " + name, t[name] * 1e6, t[name] / t["numpy"], ""))
    print("| %-22s | %9.1f | %12.2f | %12.2f |" % ("BLAS floor (both dots)", floor * 1e6, floor / t["numpy"], 1.0))
    print()
    print("'x numpy time' = time / numpy step time (lower is faster; < 1 beats numpy);"
          " 'x BLAS floor' = time / (x.dot(w) + x.T.dot(v)).")
    print("(timing took %.1f s; load average at start %s, at end %s: a loaded machine makes the figures noisier)"
          % (time.perf_counter() - start, load_start, load_average()))
    if args.json:
        import json
        timings = {name: t[name] for name in impls}
        timings.update({"numpy " + name: t[name] for name in ("x.dot(w)", "x.T.dot(v)")})
        timings["BLAS floor (both dots)"] = floor
        with open(args.json, "w") as fh:
            json.dump(dict(machine="%s %s, numpy %s, %s" % (impl, sys.version.split()[0], np.__version__,
                                                            platform.machine()),
                           quick=args.quick, repeat=repeat, steps=steps, clock=args.clock, notes=notes,
                           seconds={"train step, %d x %d float64" % x.shape: timings}), fh, indent=1)
    if args.plot:
        # The floor is a bar of its own: how close each step gets to the two unavoidable dots.
        timings = {name: t[name] for name in impls}
        timings["BLAS floor (both dots)"] = floor
        title = "ffigraph bench_logreg%s: time per step relative to numpy" % (" --quick" if args.quick else "")
        clock_name = "CPU time" if clock is time.process_time else "wall clock"
        plot.save_or_exit({"train step, %d x %d float64" % x.shape: timings}, args.plot, title,
                          note="best of %d x %d steps, %s" % (repeat, steps, clock_name))


if __name__ == "__main__":
    main()
