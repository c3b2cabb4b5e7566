"""Compile time of ``function()``: cold (empty compile cache) and warm (a new process, cache populated).

Run: ``python bench/bench_compile.py`` (``--quick`` for a smoke run, ``--layers 5 10 20 50``,
``--warm N``, ``--pytensor``, ``--json PATH``, ``--opt O2`` to build with another optimisation
level). Workloads:

  fused        exp(x)*y + tanh(x) - 1.5*y on two float64 vectors (one fused elementwise loop)
  logreg       the logistic-regression training step of examples/logistic_regression.py, as
               bench/bench_logreg.py builds it (prediction and cost out, SGD updates of w and b)
  mlp L=<L>    an L-layer MLP training step: 16-unit tanh layers on a (32, 16) float64 batch,
               mean-squared cost against a (32, 16) target, gradients, SGD updates of every
               layer's shared weights and bias

Every figure is measured in a process of its own (``python bench_compile.py --child ...``), the
time of the ``function()`` call alone (imports and graph building excluded):

  cold   the compile cache is a fresh, empty folder (``ffigraph.config.compiledir``), so the
         library is generated and compiled; beside it its CPU time (the process's and the
         compilers', steadier than wall time on a busy machine) and the compile phases ffigraph
         records (``f.maker.compile_times``: rewrite + codegen + compiler + load)
  warm   a new process on the folder the cold run filled: no Python-level cache helps (bytecode
         aside: the children write and read it in a folder of their own, as an installed package
         has it, whatever PYTHONDONTWRITEBYTECODE says); the best
         of --warm runs (default 3, quick 1)

plus the number of nodes of the compiled (rewritten) graph, and the growth of the cold time from
the fewest to the most layers. With ``--pytensor`` the same graphs are compiled by PyTensor's C
backend (``Mode(linker='cvm')``; PyTensor 3 defaults to Numba) in the same way, each cold run in
a fresh ``base_compiledir`` that already holds PyTensor's own support modules (built once, by a
trivial function, and copied: they are built once per installation, not per graph). The targets
of issue 26 are printed with PASS / MISS. The figures are one run each: compile times on a
shared machine vary by some 10 %.
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import atexit  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # (when this file is loaded from outside bench/)

from timing import load_average  # noqa: E402

LAYERS = (5, 10, 20, 50)
QUICK_LAYERS = (5, 20, 50)
WIDTH, BATCH = 16, 32
LEARNING_RATE = 0.1
PYTENSOR_PYTHON = "/root/venv-bench/bin/python"

# issue 26: (workload, "cold" | "warm", seconds)
TARGETS = [("mlp L=20", "cold", 1.5), ("logreg", "cold", 1.0),
           ("fused", "warm", 0.020), ("logreg", "warm", 0.020), ("mlp L=20", "warm", 0.060)]
GROWTH_TARGET = 2.0   # cold(50 layers) / cold(5 layers)


# ---------------------------------------------------------------------------- the graphs (child side)

def graph_fused(top, T, layers):
    x, y = T.dvector("x"), T.dvector("y")
    return [x, y], T.exp(x) * y + T.tanh(x) - 1.5 * y, None


def graph_logreg(top, T, layers):
    import numpy as np
    import logistic_regression as lr
    x, y = T.dmatrix("x"), T.dvector("y")
    w = top.shared(np.zeros(lr.FEATS), name="w")
    b = top.shared(np.float64(0.0), name="b")
    prediction, _, cost = lr.model(x, y, w, b, tensor=T)
    gw, gb = top.grad(cost, [w, b])
    return [x, y], [prediction, cost], [(w, w - lr.LEARNING_RATE * gw), (b, b - lr.LEARNING_RATE * gb)]


def graph_mlp(top, T, layers):
    import numpy as np
    rng = np.random.default_rng(0)
    x, target = T.dmatrix("x"), T.dmatrix("target")
    params = []
    h = x
    for i in range(layers):
        w = top.shared(rng.uniform(-0.4, 0.4, (WIDTH, WIDTH)), name="w%d" % i)
        b = top.shared(np.zeros(WIDTH), name="b%d" % i)
        params += [w, b]
        h = T.tanh(T.dot(h, w) + b)
    cost = T.mean((h - target) ** 2)
    grads = top.grad(cost, params)
    return [x, target], cost, [(p, p - LEARNING_RATE * g) for p, g in zip(params, grads)]


def with_opt(flags, opt):
    """``flags`` with its -O option replaced by ``opt`` ("O2", or flags: "-O2 -fvect-cost-model=dynamic")."""
    tokens = [t if t.startswith("-") else "-" + t for t in opt.split()]
    out = []
    for f in flags:
        out += tokens if f.startswith("-O") else [f]
    return out


GRAPHS = {"fused": graph_fused, "logreg": graph_logreg, "mlp": graph_mlp}


def child(lib, workload, layers, compiledir, opt):
    """Compile one workload in this (fresh) process; prints one JSON line of figures."""
    if lib == "pytensor":
        flags = os.environ.get("PYTENSOR_FLAGS", "")
        os.environ["PYTENSOR_FLAGS"] = ",".join(f for f in (flags, "base_compiledir=" + compiledir) if f)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pytensor as top
            import pytensor.tensor as T
            from pytensor.compile.mode import Mode
        mode = Mode(linker="cvm")
    else:
        import ffigraph as top
        import ffigraph.tensor as T
        from ffigraph import config
        config.compiledir = compiledir
        mode = None
        if opt:
            from ffigraph.linkers.c import build
            build.BASE_FLAGS[:] = with_opt(build.BASE_FLAGS, opt)
    if workload == "prime":   # PyTensor's support modules, built into the folder the cold runs copy
        x = T.dscalar("x")
        inputs, outputs, updates = [x], x + 1, None
    else:
        inputs, outputs, updates = GRAPHS[workload](top, T, layers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start, before = time.perf_counter(), os.times()
        f = top.function(inputs, outputs, updates=updates, mode=mode)
        seconds, after = time.perf_counter() - start, os.times()
    # CPU time of this process and of the compilers it ran: steadier than wall time on a busy machine
    cpu = sum(after[i] - before[i] for i in range(4))
    phases = dict(getattr(f.maker, "compile_times", None) or {})
    print(json.dumps(dict(seconds=seconds, cpu=cpu, nodes=len(f.maker.fgraph.apply_nodes), phases=phases)))


# ---------------------------------------------------------------------------- the parent

_PYCACHE = []   # [the folder of the children's bytecode], made on first use, removed at exit


def child_env():
    """The children's environment: bytecode written and read, in a folder of this run's own, as an
    installed package has it. Without (PYTHONDONTWRITEBYTECODE set, as on some CI machines), every
    module a warm function() imports lazily (the C code of each op kind) is compiled from source
    again in each process, some milliseconds that no installed ffigraph pays."""
    if not _PYCACHE:
        _PYCACHE.append(tempfile.mkdtemp(prefix="ffg-bench-compile-pyc-"))
        atexit.register(shutil.rmtree, _PYCACHE[0], True)
    env = dict(os.environ, PYTHONPYCACHEPREFIX=_PYCACHE[0])
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_child(python, lib, workload, layers, compiledir, opt, timeout):
    argv = [python, os.path.abspath(__file__), "--child", lib, workload, str(layers), compiledir]
    if opt:
        argv.append("--opt=" + opt)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=child_env())
    if proc.returncode:
        raise SystemExit("bench_compile: the %s child for %s failed:\n%s" % (lib, workload, proc.stderr[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(python, lib, workload, layers, warm_runs, opt, timeout, template=None):
    """``(cold figures, best warm figures)``, each a dict from a child (seconds, nodes, phases)."""
    scratch = tempfile.mkdtemp(prefix="ffg-bench-compile-")
    try:
        cachedir = os.path.join(scratch, "cache")
        if template is not None:
            shutil.copytree(template, cachedir)
        else:
            os.makedirs(cachedir)
        cold = run_child(python, lib, workload, layers, cachedir, opt, timeout)
        warm = min((run_child(python, lib, workload, layers, cachedir, opt, timeout) for _ in range(warm_runs)),
                   key=lambda r: r["seconds"])
        return cold, warm
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def fmt(t):
    if t is None:
        return "-"
    return "%.2f s" % t if t >= 1 else "%.1f ms" % (t * 1e3)


def phase_text(phases):
    if not phases:
        return ""
    return " + ".join("%.2f" % phases.get(p, 0.0) for p in ("rewrite", "codegen", "compiler", "load"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="layers %s, one warm run" % (QUICK_LAYERS,))
    parser.add_argument("--layers", type=int, nargs="+", default=None, help="MLP depths (default %s)" % (LAYERS,))
    parser.add_argument("--warm", type=int, default=None, help="warm runs, best of (default 3, quick 1)")
    parser.add_argument("--workloads", default="fused,logreg,mlp", help="comma-separated: fused, logreg, mlp")
    parser.add_argument("--pytensor", action="store_true", help="also compile the graphs with PyTensor (C backend)")
    parser.add_argument("--skip-ffigraph", action="store_true",
                        help="with --pytensor: PyTensor's figures only (bench/run_all.py's PyTensor venv run)")
    parser.add_argument("--pytensor-python", default=None,
                        help="the interpreter for PyTensor (default: this one if it imports pytensor, else %s)"
                             % PYTENSOR_PYTHON)
    parser.add_argument("--opt", default=None, help="ffigraph's optimisation flags for the run instead of the -O of "
                                                    "build.BASE_FLAGS: O2, or '-O2 -fvect-cost-model=dynamic'")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per child process")
    parser.add_argument("--json", metavar="PATH", help="also write the timings as JSON (bench/run_all.py reads it)")
    parser.add_argument("--child", nargs=4, metavar=("LIB", "WORKLOAD", "LAYERS", "COMPILEDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        lib, workload, layers, compiledir = args.child
        return child(lib, workload, int(layers), compiledir, args.opt)
    layers = args.layers or (QUICK_LAYERS if args.quick else LAYERS)
    warm_runs = args.warm if args.warm is not None else (1 if args.quick else 3)
    if warm_runs < 1 or min(layers) < 1:
        parser.error("--warm and --layers must be >= 1")
    workloads = []
    for name in args.workloads.split(","):
        if name not in ("fused", "logreg", "mlp"):
            parser.error("unknown workload %r" % name)
        workloads += [("mlp L=%d" % n, "mlp", n) for n in layers] if name == "mlp" else [(name, name, 0)]

    import numpy as np
    from ffigraph import config
    from ffigraph.linkers.c.build import BASE_FLAGS
    flags = with_opt(BASE_FLAGS, args.opt) if args.opt else BASE_FLAGS
    impl = "PyPy" if hasattr(sys, "pypy_version_info") else "CPython"
    print("%s %s, numpy %s, %s; compiler %s %s" % (impl, sys.version.split()[0], np.__version__, platform.machine(),
                                                   config.cxx, " ".join(flags)))
    notes = []
    libs = [] if args.skip_ffigraph and args.pytensor else [("ffigraph", sys.executable, None)]
    pt_template = None
    if args.pytensor:
        pt_python = args.pytensor_python
        if pt_python is None:
            here = subprocess.run([sys.executable, "-c", "import pytensor"], capture_output=True).returncode == 0
            pt_python = sys.executable if here else PYTENSOR_PYTHON
        version = subprocess.run([pt_python, "-c", "import pytensor; print(pytensor.__version__)"],
                                 capture_output=True, text=True)
        if version.returncode:
            notes.append("PyTensor does not import under %s: not measured" % pt_python)
        else:
            pt_template = tempfile.mkdtemp(prefix="ffg-bench-compile-pt-")
            run_child(pt_python, "pytensor", "prime", 0, pt_template, None, args.timeout)
            libs.append(("pytensor", pt_python, pt_template))
            notes.append("PyTensor %s (%s), Mode(linker='cvm')" % (version.stdout.strip(), pt_python))
    for note in notes:
        print(note)
    print("each figure one process; cold: empty compile cache; warm: a new process, best of %d; load average %s"
          % (warm_runs, load_average()))
    print()

    figures = {}   # (lib, workload) -> (cold, warm)
    start = time.perf_counter()
    try:
        for lib, python, template in libs:
            for name, workload, n in workloads:
                figures[lib, name] = measure(python, lib, workload, n, warm_runs, args.opt, args.timeout, template)
                cold, warm = figures[lib, name]
                print("  %-9s %-9s nodes %4d  cold %9s (CPU %9s)  warm %9s" % (
                    lib, name, cold["nodes"], fmt(cold["seconds"]), fmt(cold["cpu"]), fmt(warm["seconds"])))
                sys.stdout.flush()
    finally:
        if pt_template:
            shutil.rmtree(pt_template, ignore_errors=True)
    print()

    header, line = "| workload |", "|---|"
    have = [lib for lib, _, _ in libs]
    for lib in have:
        title = "PyTensor " if lib == "pytensor" else ""
        header += " %snodes | %scold function() | %scold CPU (with the compiler's) |" % (title, title, title)
        line += "---|---|---|"
        if lib == "ffigraph":
            header += " rewrite + codegen + compiler + load (s) |"
            line += "---|"
        header += " %swarm function() |" % title
        line += "---|"
    print(header)
    print(line)
    for name, _, _ in workloads:
        row = "| %s |" % name
        for lib in have:
            cold, warm = figures[lib, name]
            row += " %d | %s | %s |" % (cold["nodes"], fmt(cold["seconds"]), fmt(cold["cpu"]))
            if lib == "ffigraph":
                row += " %s |" % phase_text(cold["phases"])
            row += " %s |" % fmt(warm["seconds"])
        print(row)
    mlp_rows = [(n, name) for name, workload, n in workloads if workload == "mlp"]
    growth = {}
    if len(mlp_rows) > 1:
        (lo, lo_name), (hi, hi_name) = min(mlp_rows), max(mlp_rows)
        for lib, _, _ in libs:
            growth[lib] = figures[lib, hi_name][0]["seconds"] / figures[lib, lo_name][0]["seconds"]
        print()
        print("cold growth %d -> %d layers: %s" % (lo, hi, ", ".join("%s %.2fx" % kv for kv in growth.items())))

    if "ffigraph" in have:
        print_targets(figures, growth, mlp_rows)
    print()
    print("(took %.1f s; load average at end %s)" % (time.perf_counter() - start, load_average()))

    if args.json:
        seconds, nodes = {}, {}
        for (lib, name), (cold, warm) in figures.items():
            seconds.setdefault("compile " + name, {}).update({"%s cold" % lib: cold["seconds"],
                                                             "%s cold CPU" % lib: cold["cpu"],
                                                             "%s warm" % lib: warm["seconds"]})
            nodes.setdefault("compile " + name, {})[lib] = cold["nodes"]
        phases = {name: figures["ffigraph", name][0]["phases"] for name, _, _ in workloads if "ffigraph" in have}
        with open(args.json, "w") as fh:
            json.dump(dict(machine="%s %s, numpy %s, %s" % (impl, sys.version.split()[0], np.__version__,
                                                            platform.machine()),
                           quick=args.quick, warm_runs=warm_runs, flags=flags, notes=notes, seconds=seconds,
                           nodes=nodes, cold_phases=phases, growth=growth), fh, indent=1)


def print_targets(figures, growth, mlp_rows):
    print()
    print("Issue 26 targets (ffigraph):")
    print("| target | measured | verdict |")
    print("|---|---|---|")
    for name, which, limit in TARGETS:
        got = figures.get(("ffigraph", name))
        t = None if got is None else got[0 if which == "cold" else 1]["seconds"]
        print("| %s %s <= %s | %s | %s |" % (name, which, fmt(limit), fmt(t),
                                             "n/a" if t is None else ("PASS" if t <= limit else "MISS")))
    if "ffigraph" in growth:
        (lo, _), (hi, _) = min(mlp_rows), max(mlp_rows)
        ok = growth["ffigraph"] <= GROWTH_TARGET if (lo, hi) == (5, 50) else None
        print("| mlp cold growth %d -> %d layers <= %.0fx | %.2fx | %s |" % (
            lo, hi, GROWTH_TARGET, growth["ffigraph"], {True: "PASS", False: "MISS", None: "n/a (not 5 -> 50)"}[ok]))


if __name__ == "__main__":
    main()
