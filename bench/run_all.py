#!/usr/bin/env python3
"""Every benchmark in bench/, under every interpreter that has it, into one JSON, bar charts and
the issue-23 targets; with ``--compare REV``, the same before (REV) and after (this tree).

    python bench/run_all.py [--quick] [--out PATH.json] [--only call,fusion,...]
                            [--interpreters cpython,pypy,pytensor] [--compare REV [--rounds N]]

Each script runs as its own process (``python bench/<script>.py ... --json TMP``) with
PYTHONPATH set to the tree whose ffigraph is measured; what the script writes with ``--json``
(``{workload: {implementation: seconds}}`` and its settings) is collected. Interpreters:

  cpython    .venv/bin/python of this repository
  pypy       .venv-pypy/bin/python (the scripts that run on PyPy)
  pytensor   /root/venv-bench/bin/python, a CPython venv with PyTensor installed: the scripts
             that can time PyTensor's C backend (Mode(linker='cvm') / mode "CVM") run there too,
             and from those runs only the PyTensor columns are charted

(``--python``, ``--pypy``, ``--pytensor-python`` point elsewhere; a missing one is skipped and
said so.) The jobs, and what ``--quick`` makes of them, are in JOBS below:

  call, fusion, logreg, c, mlp     per-call and per-workload timings (PyTensor where it imports)
  scan                             a scan loop's time per step (PyTensor where it imports)
  dot, dot-alternate               dot vs numpy; numpy and ffigraph dots in turn vs alone
  vmath, loop-threads              C-level figures (one interpreter: the call path is not timed)
  threads, profile, trace          the lock, profiling and traceback costs
  cache                            whole-process compile times, cold and warm cache
  compile                          function() cold (empty cache) and warm (new process): fused,
                                   logreg, MLP steps of 5-50 layers (issue 26; PyTensor's in its venv)
  conv                             LeNet forward/step and a 3x3 conv layer vs JAX CPU and numpy
                                   (issue 47; JAX from /root/venv-jax in a subprocess)
  topk, special                    top-k and the special functions vs numpy/scipy, JAX and
                                   PyTensor (issue 48; each in its own venv, a subprocess)
Left out: bench_memory.py (resident-memory growth over 2,000 compiled graphs: megabytes, not
seconds, and minutes of compiling) and bench_profile.py's --baseline (``--compare`` does that
for every script).

Output: ``bench/results/<timestamp>.json`` (``--out``) with every run (command, exit status,
wall time, which ffigraph it imported, its output and figures), the merged figures
(``results[tree][interpreter][job][workload][implementation]``, best over rounds) and the
targets; one bar chart per job next to it (``<stem>-<job>.png``, bench/plot.py: time relative
to numpy) when matplotlib imports here or in one of the interpreters (the chart is then drawn
there); else the charts are skipped and the reason printed. Then the issue-23 targets: each
measured ratio, the target and PASS/MISS (``--quick`` takes fewer rounds, and smaller sizes in
bench_call's large rows and bench_dot: noisier verdicts).

``--compare REV``: ``git worktree add --detach /tmp/ffg-<REV> REV`` (kept and reused; remove it
with ``git worktree remove``), and each job runs for REV and for this tree in turn (ABAB,
``--rounds`` times each: default 2, 1 with --quick). Both run the scripts of *this* bench/ folder
(copied, with examples/, into a temporary folder so that their ``sys.path`` insertions cannot
pick up either package) against each tree's package through PYTHONPATH, so a script REV lacks
or that changed since is measured the same way on both sides; each run is checked to have
imported the ffigraph it was meant to. REV's runs get their own compile cache
(FFIGRAPH_COMPILEDIR=/tmp/ffg-cache-<sha>); this tree's keep the usual one. A script that needs what REV lacks (bench_loop_threads needs
config.threads, bench_dot's --alternate ffigraph.tensor.blas) fails there and the table says so.
Printed: a markdown table workload / before / after / after÷before, numpy's own ratio (the same
code on both sides: the noise) under it.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

INTERPRETERS = {   # name -> default path
    "cpython": os.path.join(REPO, ".venv", "bin", "python"),
    "pypy": os.path.join(REPO, ".venv-pypy", "bin", "python"),
    "pytensor": "/root/venv-bench/bin/python",
}

# name -> (script, full arguments, --quick arguments, interpreters)
JOBS = {
    "call": ("bench_call.py", [], ["--quick"], ("cpython", "pypy", "pytensor")),
    # --quick keeps the target sizes (1e7, 1000x10000), in float64 and 2 rounds
    "fusion": ("bench_fusion.py", [], ["--repeat", "2", "--dtypes", "float64"], ("cpython", "pypy", "pytensor")),
    "logreg": ("bench_logreg.py", [], ["--quick"], ("cpython", "pypy", "pytensor")),
    "c": ("bench_c.py", [], ["--quick"], ("cpython", "pypy", "pytensor")),
    "mlp": ("bench_mlp.py", [], ["--quick"], ("cpython", "pypy", "pytensor")),
    "scan": ("bench_scan.py", [], ["--quick"], ("cpython", "pypy", "pytensor")),
    "dot": ("bench_dot.py", [], ["--sizes", "128", "--dtypes", "float64", "--repeat", "3", "--rounds", "1",
                                  "--pause", "0.05"], ("cpython", "pypy")),
    "dot-alternate": ("bench_dot.py", ["--alternate", "--sizes", "64", "128", "256", "512", "--dtypes", "float64"],
                      ["--alternate", "--sizes", "128", "512", "--dtypes", "float64", "--repeat", "5", "--rounds", "1",
                       "--pause", "0.05"], ("cpython",)),
    "vmath": ("bench_vmath.py", [], ["--quick", "--n", "100000"], ("cpython",)),
    "loop-threads": ("bench_loop_threads.py", [], ["--repeat", "3"], ("cpython",)),
    "threads": ("bench_threads.py", [], ["--calls", "100"], ("cpython", "pypy")),
    "profile": ("bench_profile.py", [], [], ("cpython", "pypy")),
    "trace": ("bench_trace.py", [], ["--nodes", "100", "--rounds", "3"], ("cpython", "pypy")),
    "cache": ("bench_cache.py", [], [], ("cpython", "pypy")),
    # issue 26: function() cold (empty cache) and warm (new process); --quick: 5, 20, 50 layers, one warm run
    "compile": ("bench_compile.py", [], ["--quick"], ("cpython", "pypy", "pytensor")),
    # issue 47: LeNet and a 3x3 conv layer vs JAX CPU (its own venv, a subprocess) and numpy im2col
    "conv": ("bench_conv.py", [], ["--quick"], ("cpython",)),
    # issue 48: top-k and the special functions vs numpy/scipy, JAX and PyTensor (their venvs, subprocesses)
    "topk": ("bench_topk.py", [], ["--quick"], ("cpython",)),
    "special": ("bench_special.py", [], ["--quick"], ("cpython",)),
}
# Extra arguments a job takes under one interpreter only.
EXTRA = {("logreg", "pytensor"): ["--pytensor"], ("mlp", "pytensor"): ["--pytensor"],
         ("scan", "pytensor"): ["--pytensor"], ("compile", "pytensor"): ["--pytensor", "--skip-ffigraph"]}

# Runs a bench script exactly as ``python script.py args`` would (its folder first on sys.path),
# then writes where the ffigraph it imported lives to $FFG_RUN_ALL_WHERE.
WRAPPER = r"""
import atexit, os, runpy, sys
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(script))
def _where():
    module = sys.modules.get("ffigraph")
    with open(os.environ["FFG_RUN_ALL_WHERE"], "w") as fh:
        fh.write(os.path.dirname(os.path.abspath(module.__file__)) if module is not None else "")
atexit.register(_where)
runpy.run_path(script, run_name="__main__")
"""

# Implementation names that are not ffigraph's: left out of the before/after table.
NOT_FFIGRAPH = ("numpy", "np.", "pytensor", "PyTensor", "memory bound", "BLAS floor", "JAX", "scipy")

PYPY_TOLERANCE = 1.2     # issue 23: PyPy within 1.2x of CPython for every bench_call row
ALTERNATE_TOLERANCE = 1.1   # "no slowdown": alternating / alone, with this much room for noise


# ---------------------------------------------------------------------------- running

def git(*args, cwd=REPO):
    return subprocess.run(["git"] + list(args), cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def worktree(rev):
    """A checkout of ``rev`` in /tmp/ffg-<rev> (made, or reused when it is at that commit)."""
    sha = git("rev-parse", "--verify", rev + "^{commit}")
    path = os.path.join(tempfile.gettempdir(), "ffg-" + rev.replace("/", "_"))
    if os.path.isdir(path):
        if git("rev-parse", "HEAD", cwd=path) != sha:
            raise SystemExit("run_all: %s exists but is not at %s; remove it (git worktree remove %s)"
                             % (path, rev, path))
    else:
        git("worktree", "add", "--detach", path, sha)
    return path, sha


def stage_scripts():
    """This tree's bench/ and examples/ copied into a fresh folder holding no ffigraph package."""
    root = tempfile.mkdtemp(prefix="ffg-run-all-")
    for name in ("bench", "examples"):
        shutil.copytree(os.path.join(REPO, name), os.path.join(root, name),
                        ignore=shutil.ignore_patterns("__pycache__", "results", "*.png"))
    return os.path.join(root, "bench")


def run_one(python, script, args, tree, compiledir, timeout):
    """Run one bench script; returns the run's record (its figures under "data")."""
    fd, json_path = tempfile.mkstemp(prefix="ffg-run-all-", suffix=".json")
    os.close(fd)
    where_path = json_path + ".where"
    env = dict(os.environ, PYTHONPATH=tree, FFG_RUN_ALL_WHERE=where_path)
    if compiledir:
        env["FFIGRAPH_COMPILEDIR"] = compiledir
    argv = [python, "-c", WRAPPER, script] + list(args) + ["--json", json_path]
    start = time.perf_counter()
    record = {"argv": [python, script] + list(args), "tree": tree, "compiledir": compiledir}
    try:
        proc = subprocess.run(argv, cwd=os.path.dirname(script), env=env, capture_output=True, text=True,
                              timeout=timeout)
        record.update(rc=proc.returncode, stdout=proc.stdout, stderr=proc.stderr[-4000:])
    except subprocess.TimeoutExpired as exc:
        record.update(rc=None, stdout=exc.stdout or "", stderr="timed out after %d s" % timeout)
        if isinstance(record["stdout"], bytes):
            record["stdout"] = record["stdout"].decode(errors="replace")
    record["wall_s"] = round(time.perf_counter() - start, 2)
    try:
        with open(where_path) as fh:
            record["ffigraph"] = fh.read() or None
    except OSError:
        record["ffigraph"] = None
    try:
        with open(json_path) as fh:
            record["data"] = json.load(fh)
    except (OSError, ValueError):
        record["data"] = None
    for path in (json_path, where_path):
        if os.path.exists(path):
            os.unlink(path)
    error = None
    if record["rc"] != 0:
        lines = [line for line in (record["stderr"] or "").strip().splitlines() if line.strip()]
        error = lines[-1] if lines else "exit status %s" % record["rc"]
    elif record["data"] is None:
        error = "wrote no --json figures"
    expected = os.path.join(os.path.realpath(tree), "ffigraph")
    if record["ffigraph"] and os.path.realpath(record["ffigraph"]) != expected:
        error = "imported ffigraph from %s, not %s" % (record["ffigraph"], expected)
        record["data"] = None
    record["error"] = error
    return record


def plan(args):
    """[(job, interpreter)] in order, and the interpreters skipped with why."""
    wanted = args.interpreters.split(",")
    paths = {"cpython": args.python, "pypy": args.pypy, "pytensor": args.pytensor_python}
    have, skipped = {}, {}
    for name in wanted:
        if name not in INTERPRETERS:
            raise SystemExit("run_all: unknown interpreter %r (%s)" % (name, ", ".join(INTERPRETERS)))
        path = paths[name]
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            skipped[name] = "%s not found" % path
        elif name == "pytensor" and subprocess.run([path, "-c", "import pytensor"], capture_output=True).returncode:
            skipped[name] = "%s cannot import pytensor" % path
        else:
            have[name] = path
    jobs = args.only.split(",") if args.only else list(JOBS)
    for job in jobs:
        if job not in JOBS:
            raise SystemExit("run_all: unknown job %r (%s)" % (job, ", ".join(JOBS)))
    todo = [(job, interp) for job in jobs for interp in JOBS[job][3] if interp in have]
    return todo, have, skipped


def job_args(job, interp, quick):
    script, full, quick_args, _ = JOBS[job]
    return (quick_args if quick else full) + EXTRA.get((job, interp), [])


# ---------------------------------------------------------------------------- merging, targets, tables

def merge(runs):
    """``{tree: {interpreter: {job: {workload: {implementation: seconds}}}}}``, the best (least) of each
    figure over the runs that produced it; failed runs contribute nothing."""
    out = {}
    for run in runs:
        data = run.get("data")
        if run.get("error") or not data:
            continue
        jobs = out.setdefault(run["label"], {}).setdefault(run["interpreter"], {}).setdefault(run["job"], {})
        for workload, timings in data.get("seconds", {}).items():
            slot = jobs.setdefault(workload, {})
            for impl, t in timings.items():
                if isinstance(t, (int, float)) and t == t and t > 0:
                    slot[impl] = min(slot.get(impl, float("inf")), float(t))
    return out


def _get(results, interp, job, workload, impl):
    try:
        return results[interp][job][workload][impl]
    except KeyError:
        return None


def _float64(workloads, prefix):
    """bench_fusion's float64 workloads whose name starts with ``prefix``."""
    return [name for name in workloads if name.startswith(prefix) and name.endswith(" float64")]


def fmt_time(t):
    if t is None:
        return "-"
    if t < 1e-6:
        return "%.3g ns" % (t * 1e9)
    if t < 1e-3:
        return "%.3g µs" % (t * 1e6)
    if t < 1.0:
        return "%.3g ms" % (t * 1e3)
    return "%.3g s" % t


def targets(results, quick=False):
    """The issue-23 targets as rows ``{"target", "measured", "ok" (True/False/None: not measured),
    "note"}`` from one tree's merged results (``{interpreter: {job: ...}}``)."""
    rows = []

    def add(target, measured, ok, note=""):
        rows.append({"target": target, "measured": measured, "ok": ok, "note": note})

    def limit_row(target, value, limit, note=""):
        add(target, fmt_time(value) if value is not None else "not measured",
            None if value is None else value <= limit, note)

    def ratio_row(target, num, den, limit, note="", below=True):
        if num is None or den is None:
            add(target, "not measured", None, note)
        else:
            r = num / den
            add(target, "%.2fx" % r, r <= limit if below else r >= limit, note)

    call = "x+y 1 elem"
    for interp, label in (("cpython", "CPython"), ("pypy", "PyPy")):
        limit_row("x+y 1 elem, %s, default <= 2.0 µs" % label, _get(results, interp, "call", call, "ffigraph"), 2.0e-6)
        limit_row("x+y 1 elem, %s, trusted <= 0.8 µs" % label,
                  _get(results, interp, "call", call, "ffigraph trusted"), 0.8e-6)
    for ffg, pt in (("ffigraph", "pytensor cvm"), ("ffigraph trusted", "pytensor cvm trusted")):
        ratio_row("x+y 1 elem, %s / %s < 1 (one run, PyTensor's venv)" % (ffg, pt),
                  _get(results, "pytensor", "call", call, ffg), _get(results, "pytensor", "call", call, pt), 1.0 - 1e-9)

    def per_extra(interp, impl):
        t2, t50 = _get(results, interp, "call", call, impl), _get(results, interp, "call", "50 inputs", impl)
        return None if t2 is None or t50 is None else max(0.0, (t50 - t2) / 48)

    limit_row("50 inputs, CPython trusted: per extra input <= 0.1 µs", per_extra("cpython", "ffigraph trusted"),
              0.1e-6, "(t(50 inputs) - t(x+y)) / 48")
    limit_row("50 inputs, CPython default: per extra input <= 0.8 µs", per_extra("cpython", "ffigraph"), 0.8e-6)
    ratio_row("50 inputs, per extra input: ffigraph trusted / pytensor cvm trusted <= 1",
              per_extra("pytensor", "ffigraph trusted"), per_extra("pytensor", "pytensor cvm trusted"), 1.0)

    call_rows = list(results.get("cpython", {}).get("call", {}))
    if not call_rows:
        add("PyPy within 1.2x of CPython, every bench_call row", "not measured", None)
    for workload in call_rows:
        worst = None
        for impl in ("ffigraph", "ffigraph trusted"):
            cp, pp = _get(results, "cpython", "call", workload, impl), _get(results, "pypy", "call", workload, impl)
            if cp and pp:
                worst = max(worst or 0.0, pp / cp)
        add("PyPy / CPython, bench_call %r (worst of default, trusted) <= %.1f" % (workload, PYPY_TOLERANCE),
            "not measured" if worst is None else "%.2fx" % worst, None if worst is None else worst <= PYPY_TOLERANCE)

    fusion = results.get("cpython", {}).get("fusion", {})
    smaller = "[smaller than the target size: indicative]"
    ew = [(float(name.split("n=")[1].split()[0]), name) for name in _float64(fusion, "exp(x)*y+tanh(x)-1.5*y n=")]
    if ew:
        name = max(ew)[1]   # the largest size run
        ratio_row("fused exp(x)*y+tanh(x)-1.5*y, %s: >= 2.5x numpy's speed" % name.split(" ", 1)[1],
                  fusion[name].get("numpy"), fusion[name].get("ffigraph default"), 2.5,
                  "" if max(ew)[0] >= 1e7 else smaller, below=False)
    else:
        add("fused exp(x)*y+tanh(x)-1.5*y 1e7 f64 >= 2.5x numpy", "not measured", None)
    for axis in ("None", "0", "1"):
        found = _float64(fusion, "sum(exp(x)*y, axis=%s) " % axis)
        if found:
            name = found[0]
            ratio_row("sum(exp(x)*y), axis=%s, %s: >= 3x numpy's speed" % (axis, name.split(" ", 2)[2]),
                      fusion[name].get("numpy"), fusion[name].get("ffigraph default"), 3.0,
                      "" if " 1000x10000 " in name else smaller, below=False)
        else:
            add("sum(exp(x)*y) 1e7 axis=%s >= 3x numpy" % axis, "not measured", None)

    logreg = results.get("cpython", {}).get("logreg", {})
    step = next(iter(logreg.values()), {})
    ratio_row("logistic-regression step 400x784: ffigraph default <= 0.5x numpy's time",
              step.get("ffigraph default"), step.get("numpy"), 0.5)

    alternate = results.get("cpython", {}).get("dot-alternate", {})
    shared = [name for name in alternate if name.startswith("alternate shared ")]
    if not shared:
        add("numpy dot then ffigraph dot alternating: no slowdown", "not measured", None)
    for name in shared:
        t = alternate[name]
        try:
            worst = max(t["numpy alternating"] / t["numpy"], t["ffigraph alternating"] / t["ffigraph"])
        except (KeyError, ZeroDivisionError):
            add("dot alternating, %s" % name, "not measured", None)
            continue
        add("numpy and ffigraph dots alternating, %s: alternating / alone <= %.1f (worst of the two)"
            % (name[len("alternate shared "):], ALTERNATE_TOLERANCE), "%.2fx" % worst, worst <= ALTERNATE_TOLERANCE,
            "median of a block of %s" % ("5 calls (quick)" if quick else "10 calls, best of 3 blocks"))

    # issue 26 (bench_compile.py): one run each, CPython
    for workload, which, limit in (("mlp L=20", "cold", 1.5), ("logreg", "cold", 1.0), ("fused", "warm", 0.020),
                                   ("logreg", "warm", 0.020), ("mlp L=20", "warm", 0.060)):
        limit_row("issue 26: %s, function() %s, CPython <= %s" % (workload, which, fmt_time(limit)),
                  _get(results, "cpython", "compile", "compile " + workload, "ffigraph " + which), limit,
                  "empty compile cache" if which == "cold" else "new process, cache populated")
    ratio_row("issue 26: MLP cold function(), 50 layers / 5 layers <= 2x",
              _get(results, "cpython", "compile", "compile mlp L=50", "ffigraph cold"),
              _get(results, "cpython", "compile", "compile mlp L=5", "ffigraph cold"), 2.0)
    return rows


def verdict(ok):
    return {True: "PASS", False: "MISS", None: "n/a"}[ok]


def targets_table(rows):
    lines = ["| target | measured | verdict | note |", "|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %s | %s |" % (r["target"], r["measured"], verdict(r["ok"]), r["note"]))
    counts = {v: sum(verdict(r["ok"]) == v for r in rows) for v in ("PASS", "MISS", "n/a")}
    lines.append("")
    lines.append("%(PASS)d PASS, %(MISS)d MISS, %(n/a)d not measured" % counts)
    return lines


def compare_rows(results, before, after):
    """``[(job, interpreter, workload, implementation, before s, after s)]`` for every ffigraph figure
    both trees have, and numpy's own after/before ratios (the noise)."""
    rows, noise = [], []
    a, b = results.get(before, {}), results.get(after, {})
    order = {name: i for i, name in enumerate(list(JOBS) + list(INTERPRETERS))}
    pairs = sorted(((job, interp) for interp, jobs in b.items() for job in jobs),
                   key=lambda p: (order.get(p[0], len(order)), order.get(p[1], len(order))))
    for job, interp in pairs:
        for workload, timings in b[interp][job].items():
            for impl, t_after in timings.items():
                t_before = a.get(interp, {}).get(job, {}).get(workload, {}).get(impl)
                if t_before is None:
                    continue
                if impl == "numpy":
                    noise.append(t_after / t_before)
                if impl.startswith(NOT_FFIGRAPH):
                    continue
                rows.append((job, interp, workload, impl, t_before, t_after))
    return rows, noise


def compare_table(results, before, after, failures=()):
    rows, noise = compare_rows(results, before, after)
    lines = ["| job | interpreter | workload | implementation | before (%s) | after (%s) | after/before |"
             % (before, after), "|---|---|---|---|---|---|---|"]
    for job, interp, workload, impl, t_before, t_after in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %.2f |" % (job, interp, workload.replace("\n", " "), impl,
                                                                 fmt_time(t_before), fmt_time(t_after),
                                                                 t_after / t_before))
    lines.append("")
    if noise:
        off = sum(not 0.8 <= r <= 1.25 for r in noise)
        lines.append("numpy's own after/before (the same code on both sides: the noise): median %.3g, range %.3g-%.3g,"
                     " %d of %d figures off by more than 1.25x" % (statistics.median(noise), min(noise), max(noise),
                                                                   off, len(noise)))
    for failure in failures:
        lines.append("not compared: %s" % failure)
    return lines


def chart_data(results, current, job, others=()):
    """``{workload: {implementation: seconds}}`` for one job's chart: CPython's figures (less
    bench_fusion's np.copyto/np.copy: the memory bound stands for them), PyPy's suffixed " [pypy]"
    (less the bounds too), only the PyTensor columns of PyTensor's venv, and the ffigraph columns
    of each tree in ``others`` suffixed " [<tree>]"."""
    out = {}

    def put(interp, tree, keep, suffix):
        for workload, timings in results.get(tree, {}).get(interp, {}).get(job, {}).items():
            for impl, t in timings.items():
                if keep(impl):
                    out.setdefault(workload, {})[impl + suffix] = t

    put("cpython", current, lambda impl: not impl.startswith("np."), "")
    put("pytensor", current, lambda impl: impl.lower().startswith("pytensor"), "")
    put("pypy", current, lambda impl: not impl.startswith(("np.", "memory bound", "BLAS floor")), " [pypy]")
    for tree in others:
        put("cpython", tree, lambda impl: not impl.startswith(NOT_FFIGRAPH), " [%s]" % tree)
    return out


def draw_charts(charts, stem, pythons, note=None):
    """Write one PNG per job with bench/plot.py, here if matplotlib imports, else under the first of
    ``pythons`` where it does. Returns (paths, why none were drawn or None)."""
    charts = {job: data for job, data in charts.items() if any("numpy" in t for t in data.values())}
    if not charts:
        return [], "no job had numpy figures to draw against"
    jobs_path = stem + "-charts.json"
    with open(jobs_path, "w") as fh:
        json.dump({job: {"path": "%s-%s.png" % (stem, job), "results": data} for job, data in charts.items()}, fh)
    code = ("import json, sys; sys.path.insert(0, %r); import plot\n"
            "for job, c in json.load(open(%r)).items():\n"
            "    plot.bar_chart(c['results'], c['path'], title='ffigraph %%s: time relative to numpy' %% job,"
            " note=%r)\n" % (HERE, jobs_path, note))
    candidates = [sys.executable] + [p for p in pythons if p != sys.executable]
    why = "matplotlib imports in none of %s" % ", ".join(candidates)
    try:
        for python in candidates:
            if subprocess.run([python, "-c", "import matplotlib"], capture_output=True).returncode:
                continue
            proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
            if proc.returncode == 0:
                return ["%s-%s.png" % (stem, job) for job in charts], None
            why = "drawing under %s failed: %s" % (python, (proc.stderr.strip().splitlines() or ["?"])[-1])
            break
    finally:
        os.unlink(jobs_path)
    return [], why


# ---------------------------------------------------------------------------- main

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer rounds, some sizes smaller")
    parser.add_argument("--out", help="the JSON to write (default bench/results/<timestamp>.json)")
    parser.add_argument("--only", help="comma-separated jobs (%s)" % ", ".join(JOBS))
    parser.add_argument("--interpreters", default="cpython,pypy,pytensor", help="comma-separated (default: all)")
    parser.add_argument("--python", default=INTERPRETERS["cpython"])
    parser.add_argument("--pypy", default=INTERPRETERS["pypy"])
    parser.add_argument("--pytensor-python", default=INTERPRETERS["pytensor"])
    parser.add_argument("--compare", metavar="REV", help="also run every job against the ffigraph of git revision REV")
    parser.add_argument("--rounds", type=int, default=None,
                        help="runs of each job per tree, interleaved (default 1; 2 with --compare but not --quick)")
    parser.add_argument("--timeout", type=int, default=None, help="seconds per run (default 1800, quick 600)")
    parser.add_argument("--verbose", "-v", action="store_true", help="print each run's output")
    parser.add_argument("--no-chart", action="store_true")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.compare and not args.quick else 1)
    timeout = args.timeout or (600 if args.quick else 1800)

    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or os.path.join(HERE, "results", stamp + ".json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    todo, pythons, skipped = plan(args)
    for name, why in skipped.items():
        print("interpreter %s skipped: %s" % (name, why))

    current = "current"
    trees = [(current, REPO, None, HERE)]   # (label, package root, compile dir, bench folder)
    meta = {"started": stamp, "quick": args.quick, "argv": sys.argv[1:] if argv is None else list(argv),
            "host": platform.node(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "interpreters": pythons, "skipped": skipped, "rounds": rounds,
            "trees": {current: {"path": REPO, "rev": git("rev-parse", "HEAD"),
                                "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}}}
    if args.compare:
        path, sha = worktree(args.compare)
        label = args.compare
        compiledir = os.path.join(tempfile.gettempdir(), "ffg-cache-" + sha[:12])
        bench = stage_scripts()
        # before first, then after: ABAB
        trees = [(label, path, compiledir, bench), (current, REPO, None, bench)]
        meta["trees"][label] = {"path": path, "rev": sha, "compiledir": compiledir}
        meta["scripts"] = bench
    try:
        meta["load_start"] = os.getloadavg()
    except (AttributeError, OSError):
        pass

    runs = []
    total = len(todo) * rounds * len(trees)
    try:
        for job, interp in todo:
            for r in range(rounds):
                for label, root, compiledir, bench in trees:   # ABAB
                    run = run_one(pythons[interp], os.path.join(bench, JOBS[job][0]),
                                  job_args(job, interp, args.quick), root, compiledir, timeout)
                    run.update(job=job, interpreter=interp, label=label, round=r)
                    runs.append(run)
                    print("[%d/%d] %-13s %-8s %-9s %6.1f s  %s" % (
                        len(runs), total, job, interp, label, run["wall_s"],
                        "ok" if not run["error"] else "FAILED: " + run["error"]))
                    if args.verbose:
                        print(run["stdout"])
                    sys.stdout.flush()
    finally:
        if args.compare:
            shutil.rmtree(os.path.dirname(trees[0][3]), ignore_errors=True)   # the staged scripts

    results = merge(runs)
    rows = targets(results.get(current, {}), quick=args.quick)
    document = {"meta": meta, "runs": runs, "results": results, "targets": rows}
    if args.compare:
        failures = sorted({"%s under %s for %s: %s" % (r["job"], r["interpreter"], r["label"], r["error"])
                           for r in runs if r["error"]})
        document["compare"] = compare_rows(results, args.compare, current)[0]
    try:
        meta["load_end"] = os.getloadavg()
    except (AttributeError, OSError):
        pass
    with open(out, "w") as fh:
        json.dump(document, fh, indent=1)
    print("\nfigures of %d runs written to %s" % (len(runs), out))

    if not args.no_chart:
        others = [args.compare] if args.compare else []
        charts = {job: chart_data(results, current, job, others) for job in dict.fromkeys(j for j, _ in todo)}
        note = "bench/run_all.py: [pypy] PyPy's run%s; PyTensor's columns from its venv" % (
            ", [%s] that revision's" % args.compare if args.compare else "")
        paths, why = draw_charts(charts, os.path.splitext(out)[0], list(pythons.values()), note)
        print("charts: %s" % (", ".join(paths) if paths else "skipped (%s)" % why))

    print("\nIssue 23 and 26 targets (this tree%s):" % (", --quick: fewer rounds, noisier" if args.quick else ""))
    print("\n".join(targets_table(rows)))
    if args.compare:
        print("\nBefore (%s) / after (this tree), best of %d run(s) each, interleaved:" % (args.compare, rounds))
        print("\n".join(compare_table(results, args.compare, current, failures)))
    # REV lacking what a script needs is expected (and listed); this tree's failures are not
    return 1 if any(r["error"] for r in runs if r["label"] == current) else 0


if __name__ == "__main__":
    sys.exit(main())
