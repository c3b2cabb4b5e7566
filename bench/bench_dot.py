"""Benchmark: ffigraph's C ``dot`` against numpy's ``x @ y``, in one process.

    python bench/bench_dot.py [--sizes 512 1024] [--dtypes float64 float32] [--repeat 10]
                              [--rounds 3] [--pause 0.3] [--kernel] [--json PATH]
    python bench/bench_dot.py --alternate [--sizes 64 128 256 512] [--dtypes float64] ...

``--json PATH`` also writes the times as ``{workload: {implementation: seconds}}`` (what
bench/run_all.py collects; with --alternate, "numpy" and "ffigraph" are each alone and
"numpy alternating" / "ffigraph alternating" beside them).

For each dtype and n it times, best of --rounds blocks of --repeat calls each:
  numpy          ``x @ y``
  ffigraph       ``function([x, y], T.dot(x, y), mode=Mode(linker='c', optimizer=None))``
  ffigraph/trust the same function compiled with ``trust_input=True``
  kernel         (with --kernel) the blocked C kernel, BLAS switched off
and prints the times and the ratio numpy_time / ffigraph_time (>= 1 means ffigraph is as
fast; the target is >= 0.9). Each implementation is timed in its own blocks of calls, each
after a pause and a warm-up call, so that no pool still spinning from the block before slows it.

--alternate: numpy ``x @ y`` then ffigraph's dot, in turn (issue 23: "no slowdown vs either
alone"), for three ways of linking ffigraph's Dot, all in one process and one run:
  before       the scipy-openblas64 package, thread counts left alone: two libraries, two pools
               of as many threads as CPUs (what ffigraph did before ffigraph.tensor.blas)
  shared       numpy's own OpenBLAS (ffigraph.tensor.blas, the default): one library, one pool
  coordinated  the package again, its pool lowered beside numpy's (blas.coordinate): the
               fallback where numpy's OpenBLAS cannot be shared
For each, numpy alone, ffigraph alone and the two alternating are timed per call (median of a
block, best of --rounds blocks, a pause before each block); the ratios alternating / alone are
what counts (1.0: no slowdown). "before" is measured first and "coordinated" last, since
coordinating changes the package's pool for the rest of the process.

The environment is printed first: interpreter, numpy, which BLAS each side uses (and why),
every OpenBLAS loaded in the process with its thread count, and the OPENBLAS_* variables (the
script never changes them). The script never imports scipy_openblas64: that import puts the
package's library in the global symbol scope, where it would take every later graph's calls.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import ffigraph.tensor as T  # noqa: E402
from ffigraph import Mode, function  # noqa: E402
from ffigraph.tensor import dot_c  # noqa: E402

try:
    from ffigraph.tensor import blas  # noqa: E402
except ImportError:  # an ffigraph from before ffigraph.tensor.blas (bench/run_all.py --compare): no --alternate
    blas = None


def describe_environment():
    print("interpreter : %s %s (%s)" % (platform.python_implementation(), platform.python_version(),
                                         sys.executable))
    print("numpy       : %s" % np.__version__)
    info = dot_c.blas_info()
    if blas is None:
        print("ffigraph    : %s (no ffigraph.tensor.blas in this ffigraph)" % (info,))
    else:
        numpy_blas = blas.numpy_blas_config()
        if numpy_blas:
            print("numpy BLAS  : %s %s" % (numpy_blas.get("name"), numpy_blas.get("version")))
        lib = blas.library()
        print("ffigraph    : %s" % ("no BLAS: the blocked C kernel" if lib is None else
                                    "%s %s, %s" % (lib.origin, lib.version, lib.path)))
        print("              (%s)" % blas.why())
    print("cpu count   : %s" % os.cpu_count())
    try:
        print("load average: %.1f %.1f %.1f" % os.getloadavg())
    except OSError:
        pass
    env = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS", "OMP_", "MKL_"))}
    print("environment : %s" % (" ".join("%s=%s" % kv for kv in sorted(env.items())) or "(no OPENBLAS_*/OMP_*)"))
    return info


def block_best(fn, repeat, pause):
    """Best time of ``repeat`` calls, after a pause and a warm-up call.

    numpy's bundled OpenBLAS and scipy-openblas64 are two libraries with two thread pools;
    a pool's threads keep spinning for a while after its last call, and on a small machine
    they slow the other pool's calls. The pause lets them go to sleep first."""
    time.sleep(pause)
    fn()   # warm up: first touch of buffers, BLAS threads awake
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def best_of(fns, repeat, rounds, pause):
    """{name: best time} over ``rounds`` rounds, each timing every function in its own block."""
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], block_best(fn, repeat, pause))
    return best


def compile_dot(dtype, trust_input):
    x, y = T.matrix(dtype=dtype), T.matrix(dtype=dtype)
    return function([x, y], T.dot(x, y), mode=Mode(linker="c", optimizer=None), trust_input=trust_input)


def print_pools():
    if blas is None:
        return
    print("loaded OpenBLAS libraries (symbols, version, threads):")
    for path, scheme, version, threads in blas.pools():
        print("  %s  (%s, %s, %d)" % (os.path.realpath(path), scheme, version, threads))


def block_medians(fns, repeat, pause):
    """{name: median time per call} over ``repeat`` turns, each turn calling every function once
    in order (one function: alone; two: alternating), after a pause and one warm-up turn."""
    time.sleep(pause)
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: sorted(ts)[len(ts) // 2] for name, ts in times.items()}


def alternate(args):
    """Alone vs alternating for the three ways of linking (see the module doc), one process."""
    describe_environment()
    saved = (blas.SHARE_NUMPY_BLAS, blas.COORDINATE_THREADS)
    funcs = {}
    try:
        blas.SHARE_NUMPY_BLAS, blas.COORDINATE_THREADS = False, False
        package = blas.library()
        for dtype in args.dtypes:
            funcs["before", dtype] = compile_dot(dtype, True)
        blas.SHARE_NUMPY_BLAS = True
        shared = blas.library()
        for dtype in args.dtypes:
            funcs["shared", dtype] = compile_dot(dtype, True)
    finally:
        blas.SHARE_NUMPY_BLAS, blas.COORDINATE_THREADS = saved
    if shared is None or shared.origin != "numpy":
        print("\nnumpy's OpenBLAS is not shared here (%s): 'shared' is the package too" % blas.why())
    print()
    print_pools()
    rng = np.random.default_rng(0)
    rows = []
    for way in ("before", "shared", "coordinated"):
        if way == "coordinated":
            threads = blas.coordinate(package)
            print("coordinated: the package's pool set to %s thread(s)" % threads)
        for dtype in args.dtypes:
            f = funcs["shared" if way == "shared" else "before", dtype]
            for n in args.sizes:
                a = rng.standard_normal((n, n)).astype(dtype)
                b = rng.standard_normal((n, n)).astype(dtype)
                np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-3 if dtype == "float32" else 1e-9,
                                           atol=n * (1e-3 if dtype == "float32" else 1e-9))
                calls = {"numpy": lambda: a @ b, "ffigraph": lambda: f(a, b)}
                best = {}
                for _ in range(args.rounds):
                    for key, fns in (("np", {"numpy": calls["numpy"]}), ("ff", {"ffigraph": calls["ffigraph"]}),
                                     ("alt", calls)):
                        for name, t in block_medians(fns, args.repeat, args.pause).items():
                            best[key, name] = min(best.get((key, name), float("inf")), t)
                rows.append((way, dtype, n, best))
    print()
    header = "%-12s %-8s %5s %10s %10s %12s %12s %8s %8s" % (
        "linking", "dtype", "n", "numpy ms", "ffig ms", "alt numpy", "alt ffig", "np ratio", "ff ratio")
    print(header)
    print("-" * len(header))
    for way, dtype, n, best in rows:
        np_alone, ff_alone = best["np", "numpy"], best["ff", "ffigraph"]
        np_alt, ff_alt = best["alt", "numpy"], best["alt", "ffigraph"]
        print("%-12s %-8s %5d %10.3f %10.3f %12.3f %12.3f %8.2f %8.2f" % (
            way, dtype, n, np_alone * 1e3, ff_alone * 1e3, np_alt * 1e3, ff_alt * 1e3,
            np_alt / np_alone, ff_alt / ff_alone))
    print("\nms: median per call of a block of %d (turns), best of %d blocks; ratio = alternating / alone "
          "(1.0: no slowdown)" % (args.repeat, args.rounds))
    if args.json:   # "numpy"/"ffigraph": each alone; the alternating figures beside them
        write_json(args, {"alternate %s %s n=%d" % (way, dtype, n): {
            "numpy": best["np", "numpy"], "ffigraph": best["ff", "ffigraph"],
            "numpy alternating": best["alt", "numpy"], "ffigraph alternating": best["alt", "ffigraph"]}
            for way, dtype, n, best in rows})
    print()
    print_pools()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--repeat", type=int, default=10, help="calls per timed block")
    parser.add_argument("--rounds", type=int, default=3, help="blocks per implementation, interleaved")
    parser.add_argument("--pause", type=float, default=0.3, help="seconds of rest before each block")
    parser.add_argument("--kernel", action="store_true", help="also time the blocked C kernel (no BLAS)")
    parser.add_argument("--alternate", action="store_true",
                        help="numpy and ffigraph dots in turn vs alone, before / shared / coordinated")
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = parser.parse_args(argv)
    if args.alternate:
        if blas is None:
            parser.error("--alternate needs ffigraph.tensor.blas, which this ffigraph lacks")
        return alternate(args)

    describe_environment()
    rng = np.random.default_rng(0)
    rows = []
    for dtype in args.dtypes:
        funcs = {"default": compile_dot(dtype, False), "trust": compile_dot(dtype, True)}
        if args.kernel:
            saved = dot_c.USE_BLAS
            dot_c.USE_BLAS = False
            try:
                funcs["kernel"] = compile_dot(dtype, True)
            finally:
                dot_c.USE_BLAS = saved
        for n in args.sizes:
            a = rng.standard_normal((n, n)).astype(dtype)
            b = rng.standard_normal((n, n)).astype(dtype)
            want = a @ b
            rtol = 1e-3 if dtype == "float32" else 1e-9
            for name, f in funcs.items():
                np.testing.assert_allclose(f(a, b), want, rtol=rtol, atol=rtol * n, err_msg=name)
            calls = {"numpy": lambda: a @ b}
            calls.update({name: (lambda f=f: f(a, b)) for name, f in funcs.items()})
            times = best_of(calls, args.repeat, args.rounds, args.pause)
            rows.append((dtype, n, times.pop("numpy"), times))

    print()
    print_pools()
    print()
    names = ["default", "trust"] + (["kernel"] if args.kernel else [])
    header = "%-8s %5s %10s" % ("dtype", "n", "numpy ms") + "".join(
        " %11s %7s" % (nm + " ms", "ratio") for nm in names)
    print(header)
    print("-" * len(header))
    for dtype, n, t_np, times in rows:
        print("%-8s %5d %10.3f" % (dtype, n, t_np * 1e3)
              + "".join(" %11.3f %7.2f" % (times[nm] * 1e3, t_np / times[nm]) for nm in names))
    print("\nratio = numpy time / ffigraph time (best of %d rounds x %d calls); target >= 0.9"
          % (args.rounds, args.repeat))
    if args.json:
        labels = {"default": "ffigraph", "trust": "ffigraph trusted", "kernel": "ffigraph kernel"}
        write_json(args, {"dot %s n=%d" % (dtype, n): dict({"numpy": t_np}, **{labels[k]: t for k, t in times.items()})
                          for dtype, n, t_np, times in rows})


def write_json(args, seconds):
    """``{workload: {implementation: seconds}}`` and the run's settings, for bench/run_all.py."""
    import json
    meta = dict(machine="%s %s, numpy %s, %s" % (platform.python_implementation(), platform.python_version(),
                                                 np.__version__, platform.machine()),
                alternate=args.alternate, repeat=args.repeat, rounds=args.rounds, pause=args.pause,
                blas=None if blas is None else blas.why())
    with open(args.json, "w") as fh:
        json.dump(dict(meta, seconds=seconds), fh, indent=1)


if __name__ == "__main__":
    main()
