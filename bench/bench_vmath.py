"""Speed of the vectorised transcendental helpers (ffigraph.scalar.vmath_c): nanoseconds per
element, one thread, n = 1e6 elements processed in blocks of 256 as the fused loop does, for
each dispatch level this CPU supports (AVX-512, AVX2, SSE: glibc's libmvec; scalar: a plain
<math.h> loop) and numpy's own ufunc on the whole array.

Run: ``python bench/bench_vmath.py`` (``--quick`` for fewer repeats, ``--n``, ``--block``).
Prints a table; nothing here is a pass/fail test. ``--json PATH`` also writes the times as
``{"<func> <dtype>": {level or "numpy": seconds per element}}`` (what bench/run_all.py collects).
"""
import argparse
import math

import numpy as np

from ffigraph.linkers.c.build import build_library
from timing import best_of  # noqa: E402  (bench/ is sys.path[0])
from ffigraph.scalar.vmath_c import LEVELS, VECTOR_FUNCTIONS, VMATH_LIBRARIES, vector_function_name, vmath_support_code

DTYPES = ("float64", "float32")
CTYPES = {"float64": "double", "float32": "float"}

# inputs spread over each function's usual domain
DOMAINS = {"exp": (-50, 50), "expm1": (-5, 5), "log": (1e-3, 1e3), "log1p": (-0.5, 1e3),
           "log2": (1e-3, 1e3), "log10": (1e-3, 1e3), "sin": (-100, 100), "cos": (-100, 100),
           "tan": (-1.5, 1.5), "tanh": (-10, 10), "erf": (-4, 4)}


def build():
    import cffi

    pairs = [(name, dt) for name in VECTOR_FUNCTIONS for dt in DTYPES]
    src = [vmath_support_code(pairs, test_hooks=True)]
    cdef = ["int ffg_vmath_set_level(int);", "int ffg_vmath_cpu_level(void);"]
    for name, dt in pairs:
        fn, t = vector_function_name(name, dt), CTYPES[dt]
        src.append('__attribute__((visibility("default"))) void b_%s(int64_t n, int64_t block, const %s *x, %s *y)'
                   " { int64_t i; for (i = 0; i < n; i += block) %s(n - i < block ? n - i : block, x + i, y + i); }"
                   % (fn, t, t, fn))
        cdef.append("void b_%s(int64_t, int64_t, const %s *, %s *);" % (fn, t, t))
    path = build_library("\n".join(src), "bench_vmath", {"libraries": VMATH_LIBRARIES})
    ffi = cffi.FFI()
    ffi.cdef("\n".join(cdef))
    return ffi, ffi.dlopen(path)


def numpy_ufunc(name):
    if name == "erf":
        try:
            from scipy.special import erf
            return erf
        except ImportError:
            return None
    return getattr(np, name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--block", type=int, default=256)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    args = ap.parse_args()
    seconds = {}
    repeat = 3 if args.quick else 9
    ffi, lib = build()
    cpu = lib.ffg_vmath_cpu_level()
    levels = list(range(cpu, -1, -1))
    print("n = %d, blocks of %d, best of %d; ns per element (speed-up over the scalar libm loop)"
          % (args.n, args.block, repeat))
    print("CPU level: %s; numpy %s" % (LEVELS[cpu], np.__version__))
    head = "%-6s %-7s" % ("func", "dtype") + "".join("%18s" % LEVELS[lv] for lv in levels) + "%18s" % "numpy"
    print(head)
    print("-" * len(head))
    rng = np.random.RandomState(0)
    for name in VECTOR_FUNCTIONS:
        for dt in DTYPES:
            lo, hi = DOMAINS[name]
            if lo > 0:
                x = np.exp(rng.uniform(math.log(lo), math.log(hi), args.n)).astype(dt)
            else:
                x = rng.uniform(lo, hi, args.n).astype(dt)
            y = np.empty_like(x)
            t = CTYPES[dt]
            px, py = ffi.from_buffer(t + "[]", x), ffi.from_buffer(t + "[]", y)
            fn = getattr(lib, "b_" + vector_function_name(name, dt))
            ns = {}
            for lv in levels:
                lib.ffg_vmath_set_level(lv)
                fn(args.n, args.block, px, py)  # warm up
                ns[lv] = best_of(lambda: fn(args.n, args.block, px, py), repeat) / args.n * 1e9
            lib.ffg_vmath_set_level(-1)
            uf = numpy_ufunc(name)
            if uf is not None:
                uf(x, out=y)
                ns_np = best_of(lambda: uf(x, out=y), repeat) / args.n * 1e9
            cells = ["%8.2f (%5.1fx)" % (ns[lv], ns[0] / ns[lv]) for lv in levels]
            cells.append("%8.2f (%5.1fx)" % (ns_np, ns[0] / ns_np) if uf is not None else "%18s" % "n/a")
            print("%-6s %-7s" % (name, dt) + "".join("%18s" % c for c in cells), flush=True)
            seconds["%s %s" % (name, dt)] = dict({LEVELS[lv]: ns[lv] * 1e-9 for lv in levels},
                                                 **({"numpy": ns_np * 1e-9} if uf is not None else {}))
    if args.json:
        import json
        import platform
        with open(args.json, "w") as fh:
            json.dump(dict(machine="%s %s, numpy %s, %s" % (platform.python_implementation(), platform.python_version(),
                                                            np.__version__, platform.machine()),
                           n=args.n, block=args.block, repeat=repeat, cpu_level=LEVELS[cpu],
                           unit="seconds per element", seconds=seconds), fh, indent=1)


if __name__ == "__main__":
    main()
