"""Elementwise fusion and fused reductions: numpy vs ffigraph (default mode and no rewrites) vs
PyTensor's C backend, against a memory-bandwidth bound measured in the same run.

Run: ``python bench/bench_fusion.py`` (``--quick`` for a smoke run, ``--repeat N`` for more
rounds). One process; OPENBLAS/OMP/MKL threads are set to 1 before numpy is imported, and
ffigraph splits its large loops over ``config.threads`` threads (``--threads N`` sets it for the
run; 1: one thread). Every implementation is checked against numpy first; the timings are best-of-N,
and the N rounds are interleaved (each round times every implementation once, in a rotating
order), so the ratios printed compare figures taken at the same time on a noisy machine. Times
are wall-clock time when ffigraph uses threads (CPU time would add up every thread's), and this
process's CPU time otherwise (time spent running other processes on a shared machine is not
counted; single-threaded, it equals wall time on an idle machine); ``--clock cpu|wall`` chooses.
``--plot PATH.png`` also draws the table as a bar chart (bench/plot.py, needs matplotlib) once it
is printed.

Workloads: ``exp(x)*y + tanh(x) - 1.5*y`` on vectors (n = 1e3, 1e5, 1e7) and
``sum(exp(x)*y)`` over a 1000x10000 matrix (axis None, 0, 1), float64 and float32.

Memory bound: ``np.copyto(dst, src)`` on preallocated arrays of the workload's size gives a
bandwidth B = 2*n*itemsize / t_copy; a workload's bound is the bytes it must move (elementwise:
read x, y and write the output, 3*n*itemsize; reduction: read x, y, 2*n*itemsize, plus the
output) divided by B. ``np.copy(src)`` (allocating, as ffigraph allocates a fresh output each
call) is shown too. The targets (PASS/MISS) are printed under the table.
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import ffigraph.tensor as T  # noqa: E402
from ffigraph import config, function  # noqa: E402
from ffigraph.compile.mode import Mode  # noqa: E402

# Targets, checked at the largest sizes (n=1e7 and the 1000x10000 matrix).
TARGET_EW_VS_NUMPY = 2.5     # elementwise: ffigraph default >= 2.5x numpy's speed
TARGET_EW_VS_PYTENSOR = 5.0  # elementwise: ffigraph default >= 5x PyTensor's speed
TARGET_EW_VS_BOUND = 2.5     # elementwise: ffigraph default time <= 2.5x the memory bound
TARGET_RED_VS_NUMPY = 3.0    # reduction: ffigraph default >= 3x numpy's speed (issue 23, with threads)
TARGET_N = 10 ** 7
TARGET_MATRIX = (1000, 10000)

RTOL = {"float64": 1e-10, "float32": 1e-4}

IMPLS = ["numpy", "ffg", "ffg_none", "pytensor", "copyto", "copy"]


# ---------------------------------------------------------------------------- expressions

def ew_numpy(a, b):
    return np.exp(a) * b + np.tanh(a) - 1.5 * b


def ew_magnitude(a, b):
    """Size of the terms of the elementwise expression, in float64 (scales the tolerance)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return np.abs(np.exp(a) * b) + np.abs(np.tanh(a)) + np.abs(1.5 * b)


def ew_symbolic(m, x, y):
    return m.exp(x) * y + m.tanh(x) - 1.5 * y


def red_numpy(axis):
    return lambda a, b: np.sum(np.exp(a) * b, axis=axis)


def red_magnitude(axis):
    def mag(a, b):
        a, b = a.astype(np.float64), b.astype(np.float64)
        return np.sum(np.abs(np.exp(a) * b), axis=axis)
    return mag


def red_symbolic(axis):
    return lambda m, x, y: m.sum(m.exp(x) * y, axis=axis)


# ---------------------------------------------------------------------------- PyTensor

_PYTENSOR = {"checked": False, "module": None, "why": None}


def pytensor_module():
    """``(pytensor, pytensor.tensor, C mode)`` or None (the reason is kept for the report)."""
    if not _PYTENSOR["checked"]:
        _PYTENSOR["checked"] = True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "could not link to a BLAS installation": no BLAS here
                import pytensor
                import pytensor.tensor as pt
                from pytensor.compile.mode import get_mode, predefined_modes
            # PyTensor >= 3 defaults to Numba; "CVM" is its C backend (what older versions ran by default).
            mode_name = "CVM" if "CVM" in predefined_modes else "FAST_RUN"
            _PYTENSOR["module"] = (pytensor, pt, get_mode(mode_name))
            _PYTENSOR["mode_name"] = mode_name
        except ImportError:
            _PYTENSOR["why"] = "PyTensor not installed"
    return _PYTENSOR["module"]


def pytensor_function(build, dtype, ndim):
    mod = pytensor_module()
    if mod is None:
        return None
    pytensor, pt, mode = mod
    x = pt.tensor(dtype=dtype, shape=(None,) * ndim, name="x")
    y = pt.tensor(dtype=dtype, shape=(None,) * ndim, name="y")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pytensor.function([x, y], build(pt, x, y), mode=mode)
    except Exception as exc:  # e.g. no C++ compiler: report once, go on without PyTensor
        _PYTENSOR["module"] = None
        _PYTENSOR["why"] = "PyTensor C function failed to compile (%s: %s)" % (type(exc).__name__, exc)
        return None


# ---------------------------------------------------------------------------- ffigraph

def ffigraph_functions(build, dtype, ndim):
    x = T.tensor(dtype, (None,) * ndim, name="x")
    y = T.tensor(dtype, (None,) * ndim, name="y")
    expr = build(T, x, y)
    return function([x, y], expr), function([x, y], expr, mode=Mode(optimizer=None))


def node_count(f):
    try:
        return sum(1 for line in f.info().splitlines() if line.lstrip().startswith("#"))
    except Exception:
        return None


# ---------------------------------------------------------------------------- checking, timing

def check(name, got, want, magnitude, dtype, what):
    got = np.asarray(got)
    want = np.asarray(want)
    rtol = RTOL[dtype]
    problem = None
    if got.shape != want.shape:
        problem = "shape %s, numpy gives %s" % (got.shape, want.shape)
    elif got.dtype != want.dtype:
        problem = "dtype %s, numpy gives %s" % (got.dtype, want.dtype)
    elif not np.allclose(got, want, rtol=rtol, atol=rtol * magnitude):
        err = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
        problem = "max abs difference %.3g (rtol %g, atol %g x |terms|)" % (err, rtol, rtol)
    if problem is not None:
        raise SystemExit("bench_fusion: %s gives a wrong result for %s: %s" % (name, what, problem))


def calibrate(fn, target_s):
    """Calls per timing so that one timing lasts about ``target_s`` (at least one call)."""
    t0 = time.perf_counter()
    fn()
    t1 = time.perf_counter() - t0
    return max(1, int(target_s / max(t1, 1e-7)))


def time_interleaved(fns, repeat, target_s, clock):
    """Best-of-``repeat`` seconds per call for each of ``fns`` (dict), rounds interleaved."""
    numbers = {k: calibrate(f, target_s) for k, f in fns.items()}
    timers = {k: timeit.Timer(f, timer=clock) for k, f in fns.items()}  # timeit turns the GC off while timing
    best = {k: float("inf") for k in fns}
    keys = list(fns)
    for r in range(repeat):
        shift = r % len(keys)
        for k in keys[shift:] + keys[:shift]:
            best[k] = min(best[k], timers[k].timeit(numbers[k]) / numbers[k])
    return best


# ---------------------------------------------------------------------------- workloads

def run_workload(label, size_label, dtype, a, b, np_fn, mag_fn, build, out_bytes, opts):
    what = "%s %s %s" % (label, size_label, dtype)
    want = np_fn(a, b)
    magnitude = mag_fn(a, b)
    ffg, ffg_none = ffigraph_functions(build, dtype, a.ndim)
    fns = {"numpy": lambda: np_fn(a, b), "ffg": lambda: ffg(a, b), "ffg_none": lambda: ffg_none(a, b)}
    ptf = pytensor_function(build, dtype, a.ndim)
    if ptf is not None:
        fns["pytensor"] = lambda: ptf(a, b)
    for key, f in list(fns.items())[1:]:
        name = {"ffg": "ffigraph (default mode)", "ffg_none": "ffigraph (optimizer=None)",
                "pytensor": "PyTensor (C)"}[key]
        try:
            got = f()
        except Exception as exc:
            raise SystemExit("bench_fusion: %s failed on %s: %s: %s" % (name, what, type(exc).__name__, exc))
        check(name, got, want, magnitude, dtype, what)
    src = np.ascontiguousarray(a)
    dst = np.empty_like(src)
    fns["copyto"] = lambda: np.copyto(dst, src)
    fns["copy"] = lambda: np.copy(src)
    t = time_interleaved(fns, opts.repeat, opts.target_s, opts.clock)
    bandwidth = 2.0 * src.nbytes / t["copyto"]
    bound = (2.0 * src.nbytes + out_bytes) / bandwidth
    return {"workload": label, "size": size_label, "dtype": dtype, "n": a.size, "t": t, "bw": bandwidth,
            "bound": bound, "nodes": (node_count(ffg), node_count(ffg_none))}


def elementwise(sizes, dtypes, opts, rows):
    rng = np.random.default_rng(0)
    for n in sizes:
        base_a, base_b = rng.normal(size=n), rng.normal(size=n)
        for dtype in dtypes:
            a, b = base_a.astype(dtype), base_b.astype(dtype)
            itemsize = np.dtype(dtype).itemsize
            rows.append(run_workload("exp(x)*y+tanh(x)-1.5*y", "n=%.0e" % n, dtype, a, b, ew_numpy, ew_magnitude,
                                     ew_symbolic, n * itemsize, opts))
            print_row(rows[-1])
            del a, b


def reduction(shape, dtypes, opts, rows):
    rng = np.random.default_rng(1)
    base_a, base_b = rng.normal(size=shape), rng.normal(size=shape)
    for dtype in dtypes:
        a, b = base_a.astype(dtype), base_b.astype(dtype)
        itemsize = np.dtype(dtype).itemsize
        for axis in (None, 0, 1):
            out_elems = 1 if axis is None else shape[1 - axis]
            rows.append(run_workload("sum(exp(x)*y, axis=%s)" % axis, "%dx%d" % shape, dtype, a, b, red_numpy(axis),
                                     red_magnitude(axis), red_symbolic(axis), out_elems * itemsize, opts))
            print_row(rows[-1])
        del a, b


# ---------------------------------------------------------------------------- report

def fmt_time(t):
    if t is None:
        return "-"
    if t < 1e-3:
        return "%.2f us" % (t * 1e6)
    if t < 1.0:
        return "%.2f ms" % (t * 1e3)
    return "%.3f s" % t


COLUMNS = [("workload", 24), ("size", 11), ("dtype", 7), ("numpy", 10), ("ffg default", 10), ("x numpy", 7),
           ("ffg no-rewr", 10), ("x numpy", 7), ("pytensor C", 10), ("x numpy", 7), ("def vs pt", 9),
           ("copyto", 10), ("np.copy", 10), ("GB/s", 6), ("bound", 10), ("def/bound", 9), ("nodes", 7)]


def print_header():
    print("| " + " | ".join(name.ljust(width) for name, width in COLUMNS) + " |")
    print("|" + "|".join("-" * (width + 2) for _, width in COLUMNS) + "|")


def print_row(r):
    t = r["t"]
    pt_t = t.get("pytensor")

    def speed(key):
        return "%.2fx" % (t["numpy"] / t[key]) if t.get(key) else "-"

    nodes = "%s/%s" % tuple("?" if c is None else c for c in r["nodes"])
    cells = [r["workload"], r["size"], r["dtype"], fmt_time(t["numpy"]), fmt_time(t["ffg"]), speed("ffg"),
             fmt_time(t["ffg_none"]), speed("ffg_none"), fmt_time(pt_t), speed("pytensor"),
             "%.2fx" % (pt_t / t["ffg"]) if pt_t else "-", fmt_time(t["copyto"]), fmt_time(t["copy"]),
             "%.1f" % (r["bw"] / 1e9), fmt_time(r["bound"]), "%.2f" % (t["ffg"] / r["bound"]), nodes]
    print("| " + " | ".join(c.ljust(width) for c, (_, width) in zip(cells, COLUMNS)) + " |")
    sys.stdout.flush()


# Chart legend names for the timing keys; copyto/copy are left out, the bound stands for them.
PLOT_NAMES = [("numpy", "numpy"), ("ffg", "ffigraph default"), ("ffg_none", "ffigraph optimizer=None"),
              ("pytensor", "PyTensor C")]


def plot_results(rows):
    results = {}
    for r in rows:
        timings = {name: r["t"][key] for key, name in PLOT_NAMES if key in r["t"]}
        timings["memory bound"] = r["bound"]
        results["%s\n%s %s" % (r["workload"], r["size"], r["dtype"])] = timings
    return results


def write_json(path, rows, args):
    """{workload: {implementation: seconds}} (plot_results' names, plus np.copyto/np.copy) and the run's settings."""
    import json
    seconds = {}
    for r in rows:
        timings = {name: r["t"][key] for key, name in PLOT_NAMES + [("copyto", "np.copyto"), ("copy", "np.copy")]
                   if key in r["t"]}
        timings["memory bound"] = r["bound"]
        seconds["%s %s %s" % (r["workload"], r["size"], r["dtype"])] = timings
    meta = dict(machine="%s %s, numpy %s, %s" % (platform.python_implementation(), platform.python_version(),
                                                 np.__version__, platform.machine()),
                quick=args.quick, repeat=args.repeat, threads=config.threads,
                clock="cpu" if args.clock is time.process_time else "wall")
    with open(path, "w") as fh:
        json.dump(dict(meta, seconds=seconds), fh, indent=1)


def verdict(ok):
    return "PASS" if ok else "MISS"


def print_targets(rows, official):
    print()
    if official:
        print("Targets (at n=1e7 and on the %dx%d matrix, ffigraph default mode):" % TARGET_MATRIX)
    else:
        print("Targets apply at n=1e7 and on the %dx%d matrix; --quick ran smaller sizes, so the"
              " checks below use the largest sizes run and are INDICATIVE ONLY:" % TARGET_MATRIX)
    ew_rows = [r for r in rows if r["workload"].startswith("exp")]
    red_rows = [r for r in rows if r["workload"].startswith("sum")]
    if ew_rows:
        n_max = max(r["n"] for r in ew_rows)
        for r in ew_rows:
            if r["n"] != n_max:
                continue
            t = r["t"]
            vs_np = t["numpy"] / t["ffg"]
            print("  elementwise %s %s: %.2fx numpy (target >= %.1fx) %s" % (
                r["size"], r["dtype"], vs_np, TARGET_EW_VS_NUMPY, verdict(vs_np >= TARGET_EW_VS_NUMPY)))
            if "pytensor" in t:
                vs_pt = t["pytensor"] / t["ffg"]
                print("  elementwise %s %s: %.2fx PyTensor C (target >= %.1fx) %s" % (
                    r["size"], r["dtype"], vs_pt, TARGET_EW_VS_PYTENSOR, verdict(vs_pt >= TARGET_EW_VS_PYTENSOR)))
            else:
                print("  elementwise %s %s: vs PyTensor not measured (%s)" % (r["size"], r["dtype"], _PYTENSOR["why"]))
            vs_bound = t["ffg"] / r["bound"]
            print("  elementwise %s %s: %.2fx the memory bound (target <= %.1fx) %s" % (
                r["size"], r["dtype"], vs_bound, TARGET_EW_VS_BOUND, verdict(vs_bound <= TARGET_EW_VS_BOUND)))
    for r in red_rows:
        t = r["t"]
        vs_np = t["numpy"] / t["ffg"]
        print("  %s %s %s: %.2fx numpy (target >= %.1fx) %s" % (
            r["workload"], r["size"], r["dtype"], vs_np, TARGET_RED_VS_NUMPY, verdict(vs_np >= TARGET_RED_VS_NUMPY)))
    misses = 0
    for r in ew_rows:
        if r["n"] == max(q["n"] for q in ew_rows):
            t = r["t"]
            misses += t["numpy"] / t["ffg"] < TARGET_EW_VS_NUMPY
            misses += "pytensor" in t and t["pytensor"] / t["ffg"] < TARGET_EW_VS_PYTENSOR
            misses += t["ffg"] / r["bound"] > TARGET_EW_VS_BOUND
    misses += sum(r["t"]["numpy"] / r["t"]["ffg"] < TARGET_RED_VS_NUMPY for r in red_rows)
    print("  => %s (%d target(s) missed)%s" % ("ALL PASS" if not misses else "MISS", misses,
                                                "" if official else " [indicative]"))


def load_average():
    try:
        return "%.2f" % os.getloadavg()[0]
    except (AttributeError, OSError):
        return "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats (smoke run)")
    parser.add_argument("--repeat", type=int, default=None, help="interleaved rounds, best-of (default 10, quick 3)")
    parser.add_argument("--clock", choices=("auto", "cpu", "wall"), default="auto",
                        help="cpu: this process's CPU time (other processes on a shared machine do not count),"
                             " wall: wall-clock time; auto (default): wall when ffigraph uses threads, else cpu")
    parser.add_argument("--threads", type=int, default=None,
                        help="ffigraph.config.threads for the run (default: the CPUs this process may use)")
    parser.add_argument("--dtypes", default="float64,float32", help="comma-separated (default float64,float32)")
    parser.add_argument("--plot", metavar="PATH.png", help="also write a bar chart of the timings (needs matplotlib)")
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = parser.parse_args()
    if not hasattr(config, "threads"):  # an ffigraph from before threaded loops (run_all.py --compare): one thread
        object.__setattr__(config, "threads", 1)
        object.__setattr__(config, "threads_min_size", 0)
    if args.plot:
        import plot  # bench/ is sys.path[0] when this file is run as a script
        plot.check_path(parser, args.plot)
    if args.repeat is None:
        args.repeat = 3 if args.quick else 10
    repeat = args.repeat
    if repeat < 1:
        parser.error("--repeat must be >= 1")
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in RTOL:
            parser.error("unsupported dtype %r (float64, float32)" % d)
    sizes = [1000, 100000] if args.quick else [1000, 100000, TARGET_N]
    shape = (100, 1000) if args.quick else TARGET_MATRIX
    args.target_s = 0.005 if args.quick else 0.02
    if args.threads is not None:
        config.threads = args.threads
    if args.clock == "auto":
        args.clock = "wall" if config.threads > 1 else "cpu"
    args.clock = time.process_time if args.clock == "cpu" else time.perf_counter

    impl = "PyPy" if hasattr(sys, "pypy_version_info") else "CPython"
    mod = pytensor_module()
    print("%s %s, numpy %s, %s; threads: OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1, ffigraph config.threads=%d"
          " (loops of %d elements or more); best of %d interleaved rounds; clock: %s"
          % (impl, sys.version.split()[0], np.__version__, platform.machine(), config.threads,
             config.threads_min_size, repeat, "process CPU time" if args.clock is time.process_time else "wall clock"))
    if mod is None:
        print(_PYTENSOR["why"])
    else:
        print("PyTensor %s, mode %r (its C backend, linker %s)"
              % (mod[0].__version__, _PYTENSOR["mode_name"], getattr(mod[2], "provided_linker", "?")))
    print("Columns: times are best-of-N per call; 'x numpy' = numpy_time / time (higher is faster);"
          " 'def vs pt' = pytensor_time / ffigraph_default_time;")
    print("  bound = bytes moved / copyto bandwidth (GB/s); 'def/bound' = ffigraph default time / bound;"
          " nodes = apply nodes, default/no-rewrites.")
    print()
    print_header()
    rows = []
    load_start = load_average()
    start = time.perf_counter()
    elementwise(sizes, dtypes, args, rows)
    reduction(shape, dtypes, args, rows)
    if mod is not None and _PYTENSOR["module"] is None:
        print(_PYTENSOR["why"])
    print_targets(rows, official=not args.quick)
    print("(timing took %.1f s; load average at start %s, at end %s: a loaded machine makes the figures noisier)"
          % (time.perf_counter() - start, load_start, load_average()))
    if args.json:
        write_json(args.json, rows, args)
    if args.plot:
        plot.save_or_exit(plot_results(rows), args.plot,
                          "ffigraph bench_fusion%s: time relative to numpy" % (" --quick" if args.quick else ""),
                          note="best of %d, %s" % (repeat, "CPU time" if args.clock is time.process_time
                                                   else "wall clock"),
                          order=[name for _, name in PLOT_NAMES] + ["memory bound"])


if __name__ == "__main__":
    main()
