"""Special functions: ffigraph's C against scipy.special, JAX and PyTensor, in one run.

Run: ``python bench/bench_special.py`` (``--quick`` for a smoke run, ``--n N`` elements,
``--repeat N``, ``--number N``, ``--jax-python PATH``, ``--pytensor-python PATH``). Each row is
one function over ``--n`` float64 values inside its domain (betaln: two such vectors; polygamma:
int64 orders 0 to 4 and arguments in [-20, 30]; gammainc and gammaincc: shapes and arguments from
0.01 to 100), milliseconds per call:

- ffigraph: one compiled function per row (default mode: C, one thread);
- scipy: ``scipy.special.<name>`` in this process (log1mexp: ``log(-expm1(x))``, its textbook form);
- JAX: ``jax.scipy.special`` where it has the function (gamma, i0, i1, betaln, polygamma, gammainc,
  gammaincc), under ``jax.jit``, float64 enabled, in ``/root/venv-jax/bin/python``;
- PyTensor: ``pytensor.tensor.<name>`` compiled with ``Mode(linker='cvm')`` (its C backend), in
  ``/root/venv-bench/bin/python``.

Before timing, each result is checked against scipy's: rtol 1e-12 and atol 1e-15 (the Bessel
functions near their zeros), erfcinv rtol 1e-10, betaln rtol 1e-9 and atol 1e-10, polygamma rtol
1e-8 and atol 1e-12, where scipy is the less accurate side (tests/scalar/test_special_functions.py checks against mpmath). Each time is
the best of --repeat timings of --number calls; ffigraph and scipy interleave in this process, the
workers run right after, each in its own interpreter. The machine is noisy: compare within one run.
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
NAMES = ["gamma", "j0", "j1", "i0", "i1", "erfcx", "erfcinv", "log1mexp", "betaln", "polygamma", "gammainc",
         "gammaincc"]
JAX_NAMES = {"gamma", "i0", "i1", "betaln", "polygamma", "gammainc", "gammaincc"}
BINARY = {"betaln", "polygamma", "gammainc", "gammaincc"}


def inputs(n):
    rng = np.random.default_rng(0)
    wide = rng.uniform(-30, 30, n)
    domain = {"gamma": rng.uniform(0.1, 20, n), "j0": wide, "j1": wide, "i0": wide, "i1": wide,
              "erfcx": rng.uniform(-5, 50, n), "erfcinv": rng.uniform(1e-6, 2 - 1e-6, n),
              "log1mexp": -rng.exponential(2.0, n)}
    return {name: (domain[name],) for name in NAMES if name not in BINARY} | {
        "betaln": (rng.uniform(0.1, 50, n), rng.uniform(0.1, 1e4, n)),
        # orders 0 to 4, arguments of both signs (the negative ones through the reflection)
        "polygamma": (rng.integers(0, 5, n), rng.uniform(-20, 30, n)),
        # shapes and arguments from 0.01 to 100 (both sides of x = a + 1)
        "gammainc": (10 ** rng.uniform(-2, 2, n), 10 ** rng.uniform(-2, 2, n)),
        "gammaincc": (10 ** rng.uniform(-2, 2, n), 10 ** rng.uniform(-2, 2, n))}


def scipy_fn(name):
    import scipy.special as special

    if name == "log1mexp":
        return lambda x: np.log(-np.expm1(x))
    return getattr(special, name)


# (rtol, atol) of the check against scipy, where scipy is the less accurate side: betaln(0.2, 4800)
# is off by 3e-10 relative in scipy 1.17, and by 2e-11 absolute where the value is near 0
# polygamma: scipy's shifted zeta sum loses digits at negative arguments, the more the larger the order
TOLERANCE = {"erfcinv": (1e-10, 1e-15), "betaln": (1e-9, 1e-10), "polygamma": (1e-8, 1e-12)}


def worker(kind, npz, repeat, number):
    """Time ``kind``'s functions on the inputs of ``npz``; one JSON line of seconds per call."""
    loaded = np.load(npz)
    data = {name: tuple(loaded["%s_%d" % (name, k)] for k in range(2 if name in BINARY else 1)) for name in NAMES}
    fns = {}
    if kind == "jax":
        import jax
        import jax.scipy.special as jsp

        jax.config.update("jax_enable_x64", True)
        version = "jax %s" % jax.__version__
        for name in NAMES:
            if name in JAX_NAMES:
                fn = jax.jit(getattr(jsp, name))
                fn(*data[name]).block_until_ready()
                fns[name] = (lambda fn=fn, args=data[name]: fn(*args).block_until_ready())
    else:
        import pytensor
        import pytensor.tensor as pt
        from pytensor.compile.mode import Mode

        version = "pytensor %s" % pytensor.__version__
        for name in NAMES:
            if not hasattr(pt, name):
                continue
            vs = [pt.vector(dtype=a.dtype.name) for a in data[name]]
            f = pytensor.function(vs, getattr(pt, name)(*vs), mode=Mode(linker="cvm"))
            f.trust_input = True
            fns[name] = (lambda f=f, args=data[name]: f(*args))
    best = {name: time_interleaved({name: fn}, repeat, number)[name] for name, fn in fns.items()}
    print(json.dumps({"version": version, "seconds": best}))


def main():
    parser = side_by_side_parser(__doc__, 5, JAX_PYTHON, PYTENSOR_PYTHON)
    parser.add_argument("--n", type=int, default=None)
    args = parser.parse_args()
    number = args.number or (5 if args.quick else 3)
    if args.worker:
        return worker(args.worker, args.npz, args.repeat, number)
    sys.path.insert(0, os.path.dirname(HERE))
    import ffigraph
    import ffigraph.tensor as T

    data = inputs(args.n or (20000 if args.quick else 1000000))
    rows = {}
    for name in NAMES:
        vs = [T.vector("x%d" % k, dtype=a.dtype.name) for k, a in enumerate(data[name])]
        f = ffigraph.function(vs, getattr(T, name)(*vs), name=name)
        f.trust_input = True
        reference = scipy_fn(name)
        rtol, atol = TOLERANCE.get(name, (1e-12, 1e-15))
        np.testing.assert_allclose(f(*data[name]), reference(*data[name]), rtol=rtol, atol=atol, err_msg=name)
        rows[name] = time_interleaved({"ffigraph": lambda f=f, a=data[name]: f(*a),
                                       "scipy": lambda r=reference, a=data[name]: r(*a)}, args.repeat, number)
    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "inputs.npz")
        np.savez(npz, **{"%s_%d" % (name, k): a for name, arrays in data.items() for k, a in enumerate(arrays)})
        workers = {kind: worker_result(python, [os.path.abspath(__file__), "--worker", kind, "--npz", npz,
                                                "--repeat", str(args.repeat), "--number", str(number)])
                   for kind, python in (("jax", args.jax_python), ("pytensor", args.pytensor_python))}
    n = len(data["gamma"][0])
    print("special functions, %d float64 values, best of %d x %d calls, ms per call (%s, Python %s, load %s)"
          % (n, args.repeat, number, platform.machine(), platform.python_version(), load_average()))
    for kind, (result, why) in workers.items():
        print("  %s: %s" % (kind, result["version"] if result else why))
    print("%-10s %10s %10s %10s %10s   %s" % ("function", "ffigraph", "scipy", "jax", "pytensor", "scipy/ffigraph"))
    for name, best in rows.items():
        for kind, (result, _) in workers.items():
            best[kind] = result["seconds"].get(name) if result else None
        cells = ["%10.3f" % (best[k] * 1e3) if best[k] is not None else "%10s" % "-"
                 for k in ("ffigraph", "scipy", "jax", "pytensor")]
        print("%-10s %s   %.2fx" % (name, " ".join(cells), best["scipy"] / best["ffigraph"]))


if __name__ == "__main__":
    main()
