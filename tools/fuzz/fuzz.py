"""Fuzz the run entry of a few compiled graphs with arbitrary descriptors (see fuzz_run.c).

For each graph: generate its C source (what CLinker builds), compile it together with
fuzz_run.c under AddressSanitizer and UBSan (-fno-sanitize-recover=all), run the seeded
driver for N iterations, and read back its figures. A signal or a sanitizer report is a
crash; so is garbage accepted with FFG_OK, a leak, or a bad output descriptor.

    python tools/fuzz/fuzz.py --iterations 20000 --seed 1
    python tools/fuzz/fuzz.py --graphs dot,subtensor --iterations 1000000 --jobs 2

Exit status: 0 when no graph crashed, 1 otherwise. ``run_all`` is the API the test uses.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

HARNESS = os.path.join(HERE, "fuzz_run.c")
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
CODE_NAMES = {0: "OK", 1: "TYPE", 2: "VALUE", 3: "INDEX", 4: "NOMEM", 5: "ABI", 6: "RUNTIME", 7: "CUDA", -1: "other"}
# the sanitizers abort on the first finding; a huge request is an allocation failure, not a report
# (a host whose memory ends at 1 GiB: a valid but huge result, e.g. the (2, 2**32) zeros of a dot of
# empty operands, is an allocation failure, FFG_ERR_NOMEM, not 32 GiB of RAM)
ASAN_OPTIONS = "abort_on_error=1:allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1"
UBSAN_OPTIONS = "abort_on_error=1:print_stacktrace=1:halt_on_error=1"


# ------------------------------------------------------------------ the graphs


def _graphs():
    import numpy as np

    import ffigraph
    import ffigraph.tensor as T

    def elemwise():
        x, y = T.dmatrix("x"), T.dmatrix("y")
        v = T.dvector("v")
        return [x, y, v], [T.exp(x) * y + v, (x - y).sum(axis=1)]

    def reduction():
        a = T.itensor3("a")
        s = ffigraph.shared(np.arange(3, dtype="int32"), name="s")
        return [a], [a.sum(axis=1), a.max(axis=(0, 2)), T.sum(a) + s.sum()]

    def dot():
        x, y, v = T.dmatrix("x"), T.dmatrix("y"), T.dvector("v")
        return [x, y, v], [T.dot(x, y), T.dot(x, v)]

    def subtensor():
        x = T.lmatrix("x")
        i = T.lscalar("i")
        j = T.lscalar("j")
        return [x, i, j], [x[i], x[1:, ::-1], x[i:j, j], T.set_subtensor(x[i, 1:], 7)]

    def dtypes():
        f = T.fvector("f")
        b = T.bvector("b")
        u = T.tensor("uint8", (None,), "u")
        c = T.zvector("c")
        st = T.tensor("float64", (2, None), "st")   # a static length: another way to be wrong
        out = T.cast(f, "float64") * b + u
        return [f, b, u, c, st], [out, c, T.gt(f, 0), st.sum(axis=0) + out[:1]]

    return dict(elemwise=elemwise, reduction=reduction, dot=dot, subtensor=subtensor, dtypes=dtypes)


GRAPH_NAMES = ("elemwise", "reduction", "dot", "subtensor", "dtypes")


def graph_source(name):
    """The generated library source of graph ``name`` (GraphSource)."""
    import ffigraph
    from ffigraph.linkers.c.linker import whole_graph_source
    from ffigraph.tensor import blas

    inputs, outputs = _graphs()[name]()
    f = ffigraph.function(inputs, outputs, name="fuzz_" + name)
    # the harness is a C program with no numpy loaded: link the package's OpenBLAS, not numpy's copy
    # (numpy 1.26's needs its libgfortran, found only through numpy's own search path)
    with blas.standalone():
        return whole_graph_source(f.maker.fgraph)


# ------------------------------------------------------------------ building and running


def sanitizers_available(workdir):
    """True when gcc can build and run a program with ASan + UBSan here."""
    if shutil.which("gcc") is None:
        return False
    src = os.path.join(workdir, "probe.c")
    exe = os.path.join(workdir, "probe")
    with open(src, "w") as fh:
        fh.write("#include <stdlib.h>\nint main(void){char *p = malloc(4); p[0] = 0; free(p); return 0;}\n")
    proc = subprocess.run(["gcc"] + SANITIZE + [src, "-o", exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        return False
    return subprocess.run([exe], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT).returncode == 0


def _env():
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ASAN_OPTIONS
    env["UBSAN_OPTIONS"] = UBSAN_OPTIONS
    return env


def build(name, workdir):
    """Compile graph ``name`` with the harness; returns the executable's path."""
    from ffigraph.linkers.c.build import compiler_command

    graph = graph_source(name)
    folder = os.path.join(workdir, name)
    os.makedirs(folder, exist_ok=True)
    src = os.path.join(folder, "graph.c")
    with open(src, "w") as fh:
        fh.write(graph.source)
    head, libs = compiler_command(graph.requirements, "gcc")
    drop = ("-shared", "-fvisibility=hidden", "-fPIC")
    flags = [f for f in head[1:] if f not in drop and not f.startswith("-O")]
    exe = os.path.join(folder, "fuzz")
    cmd = ["gcc", "-O1", "-g", "-fno-omit-frame-pointer"] + SANITIZE + flags \
        + ["-DFFG_P=" + graph.prefix, "-Wall", "-Wno-unused-function", HARNESS, src, "-o", exe] + libs
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if proc.returncode != 0:
        raise RuntimeError("building the fuzzer for %s failed:\n%s\n%s" % (name, " ".join(cmd), proc.stdout))
    return exe


class Figures:
    """What one run of the driver printed, plus how it ended."""

    def __init__(self, name, seed, iterations, returncode, stdout, stderr, seconds):
        self.name, self.seed, self.iterations = name, seed, iterations
        self.returncode, self.stdout, self.stderr, self.seconds = returncode, stdout, stderr, seconds
        self.executions = self.successes = 0
        self.codes = {}
        self.mutations = {}   # name -> (runs, rejected, accepted garbage)
        self.checks = {}      # null_err_bad, leaks, bad_outputs, empty_messages
        for line in stdout.splitlines():
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "executions":
                self.executions = int(parts[1])
            elif parts[0] == "successes":
                self.successes = int(parts[1])
            elif parts[0] == "code":
                self.codes[int(parts[1])] = int(parts[2])
            elif parts[0] == "mutation":
                self.mutations[parts[1]] = tuple(int(p) for p in parts[2:5])
            elif len(parts) == 2 and parts[1].isdigit():
                self.checks[parts[0]] = int(parts[1])

    @property
    def crashed(self):
        """A signal, a sanitizer report, or the driver's own failed checks (exit 3)."""
        return self.returncode != 0 or "ERROR: AddressSanitizer" in self.stderr or "runtime error:" in self.stderr

    def report(self):
        lines = ["%s: seed %d, %d executions in %.1f s, %d successes, crashes %d"
                 % (self.name, self.seed, self.executions, self.seconds, self.successes, int(self.crashed))]
        lines.append("  codes: " + ", ".join("%s=%d" % (CODE_NAMES.get(c, c), n)
                                             for c, n in sorted(self.codes.items()) if n))
        lines.append("  mutations (runs/rejected/accepted-garbage): " + ", ".join(
            "%s=%d/%d/%d" % ((m,) + v) for m, v in self.mutations.items()))
        bad = {k: v for k, v in self.checks.items() if v}
        if bad:
            lines.append("  FAILED CHECKS: %s" % bad)
        if self.crashed:
            lines.append("  exit status %d; stderr tail:\n%s" % (self.returncode, self.stderr[-3000:]))
        return "\n".join(lines)


def run(exe, name, seed, iterations, timeout=None):
    start = time.time()
    proc = subprocess.run([exe, str(seed), str(iterations)], env=_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    return Figures(name, seed, iterations, proc.returncode, proc.stdout, proc.stderr, time.time() - start)


def run_all(iterations, seed=1, graphs=GRAPH_NAMES, workdir=None, jobs=2, chunks=1, timeout=None):
    """Build every graph's fuzzer and run it ``iterations`` times (split in ``chunks`` runs with seeds
    seed, seed+1, ...); returns [Figures] (one per graph and chunk)."""
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="ffigraph-fuzz-")
    try:
        exes = {name: build(name, workdir) for name in graphs}
        per = max(1, iterations // chunks)
        tasks = [(name, seed + c) for name in graphs for c in range(chunks)]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(run, exes[name], name, s, per, timeout) for name, s in tasks]
            return [f.result() for f in futures]
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)


def summary(results):
    total = sum(r.executions for r in results)
    codes = {}
    for r in results:
        for c, n in r.codes.items():
            codes[c] = codes.get(c, 0) + n
    crashes = sum(int(r.crashed) for r in results)
    return ("TOTAL: %d executions, %d successes, crashes %d; codes: %s"
            % (total, sum(r.successes for r in results), crashes,
               ", ".join("%s=%d" % (CODE_NAMES.get(c, c), n) for c, n in sorted(codes.items()) if n)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=20000, help="per graph")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--graphs", default=",".join(GRAPH_NAMES))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--chunks", type=int, default=1, help="split each graph's run into this many seeds")
    parser.add_argument("--workdir", default=None, help="keep the builds here")
    args = parser.parse_args(argv)
    start = time.time()
    results = run_all(args.iterations, args.seed, args.graphs.split(","), args.workdir, args.jobs, args.chunks)
    for r in results:
        print(r.report())
    print(summary(results) + " (%.1f s)" % (time.time() - start))
    return 1 if any(r.crashed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
