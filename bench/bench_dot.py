"""Benchmark: ffigraph's C ``dot`` against numpy's ``x @ y``, in one process.

    python bench/bench_dot.py [--sizes 512 1024] [--dtypes float64 float32] [--repeat 10]
                              [--rounds 3] [--pause 0.3] [--kernel]

For each dtype and n it times, best of --rounds blocks of --repeat calls each:
  numpy          ``x @ y``
  ffigraph       ``function([x, y], T.dot(x, y), mode=Mode(linker='c', optimizer=None))``
  ffigraph/trust the same function compiled with ``trust_input=True``
  kernel         (with --kernel) the blocked C kernel, BLAS switched off
and prints the times and the ratio numpy_time / ffigraph_time (>= 1 means ffigraph is as
fast; the target is >= 0.9). Each implementation is timed in its own blocks of calls, each
after a pause and a warm-up call: numpy's bundled OpenBLAS and scipy-openblas64 are two
libraries with two thread pools (unless scipy_openblas64 was imported before numpy, which
makes numpy bind to it), and a pool still spinning after its last call slows the other.

The environment is printed first: interpreter, numpy, which BLAS each side uses, every
OpenBLAS loaded in the process with its thread count and core type, and the OPENBLAS_*
variables (the script never changes them).
"""
from __future__ import annotations

import argparse
import ctypes
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


def loaded_openblas():
    """[(path, threads, core)] for every OpenBLAS mapped into this process (Linux only)."""
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line})
    except OSError:
        return []
    found = []
    for path in paths:
        if not path.endswith(".so") and ".so." not in path and ".so" not in os.path.basename(path):
            continue
        threads = core = "?"
        try:
            lib = ctypes.CDLL(path)
            for prefix, suffix in (("scipy_openblas_", "64_"), ("openblas_", "64_"), ("openblas_", "")):
                fn = getattr(lib, prefix + "get_num_threads" + suffix, None)
                if fn is not None:
                    fn.restype = ctypes.c_int
                    threads = fn()
                    name = getattr(lib, prefix + "get_corename" + suffix)
                    name.restype = ctypes.c_char_p
                    core = name().decode()
                    break
        except OSError:
            pass
        found.append((path, threads, core))
    return found


def describe_environment():
    print("interpreter : %s %s (%s)" % (platform.python_implementation(), platform.python_version(),
                                         sys.executable))
    print("numpy       : %s" % np.__version__)
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
        print("numpy BLAS  : %s %s" % (blas.get("name"), blas.get("version")))
    except Exception:  # older numpy without CONFIG
        pass
    info = dot_c.blas_info()
    if info is None:
        print("ffigraph    : no BLAS (scipy-openblas64 not importable): the blocked C kernel")
    else:
        import scipy_openblas64

        print("ffigraph    : scipy-openblas64 %s, lib%s.so in %s" % (scipy_openblas64.__version__, info[2], info[0]))
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--repeat", type=int, default=10, help="calls per timed block")
    parser.add_argument("--rounds", type=int, default=3, help="blocks per implementation, interleaved")
    parser.add_argument("--pause", type=float, default=0.3, help="seconds of rest before each block")
    parser.add_argument("--kernel", action="store_true", help="also time the blocked C kernel (no BLAS)")
    args = parser.parse_args(argv)

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
    print("loaded OpenBLAS libraries (threads, core):")
    for path, threads, core in loaded_openblas():
        print("  %s  (%s, %s)" % (path, threads, core))
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


if __name__ == "__main__":
    main()
