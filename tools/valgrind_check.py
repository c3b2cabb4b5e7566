"""valgrind memcheck on an exported graph: its ./example, and a C host calling it many times.

    python tools/valgrind_check.py [--calls N] [--runs R] [--keep DIR]

Exports a small graph with a shared variable and an update ("leak": input x, a float64
matrix; shared w; outputs x * 2, x.sum(axis=0) + w, (x * x).sum(); w <- w + 1), builds the
bundle's ./example with make and tests/export/c/leak_host.c against it, and runs both under

    valgrind --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite
             --show-leak-kinds=definite

./example runs R times (-n R, default 100); the host makes N calls (default 10000), half of
them failing ones (wrong dtype, ndim, NULL data, NULL inputs, a shape that fails inside the
graph), and checks every result. Prints, per program, valgrind's ERROR SUMMARY count and the
bytes definitely lost (plus the host's own summary line), then one line per program:

    valgrind example: errors 0, definitely lost 0 bytes, exit 0
    valgrind leak_host: errors 0, definitely lost 0 bytes, exit 0 (calls 10000 good 5000 failing 5000 ...)

Exits 0 only when every program exits 0 with 0 errors and 0 bytes definitely lost; 2 when
valgrind, make or gcc is missing. The export is made with the sanitizers off (valgrind and
AddressSanitizer do not mix), whatever FFIGRAPH_FLAGS says.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST_C = os.path.join(ROOT, "tests", "export", "c", "leak_host.c")
VALGRIND = ["valgrind", "--error-exitcode=9", "--leak-check=full", "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite"]

_ERRORS = re.compile(r"ERROR SUMMARY: ([\d,]+) errors")
_DEFINITE = re.compile(r"definitely lost: ([\d,]+) bytes")


def export_graph(directory):
    """Export the "leak" graph into ``directory``; the bundle."""
    sys.path.insert(0, ROOT)
    import numpy as np

    import ffigraph
    import ffigraph.tensor as T
    from ffigraph.config import config

    config.sanitize = ""
    x = T.dmatrix("x")
    w = ffigraph.shared(np.array([1.0, 2.0, 3.0, 4.0]), name="w")
    f = ffigraph.function([x], [x * 2, x.sum(axis=0) + w, (x * x).sum()], updates=[(w, w + 1)], name="leak")
    return f.export(directory, example_inputs=[np.arange(12.0).reshape(3, 4)])


def run(argv, cwd):
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    if proc.returncode != 0:
        raise SystemExit("%s failed (exit %d):\n%s" % (" ".join(argv), proc.returncode, proc.stdout[-4000:]))
    return proc.stdout


def memcheck(label, argv, cwd):
    """Run argv under valgrind; (ok, one-line summary)."""
    log = os.path.join(cwd, "valgrind-%s.log" % label)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}   # e.g. libasan, from a sanitizer run
    proc = subprocess.run(VALGRIND + ["--log-file=" + log] + argv, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, env=env)
    with open(log) as fh:
        text = fh.read()
    errors = _ERRORS.findall(text)
    definite = _DEFINITE.findall(text)
    n_errors = int(errors[-1].replace(",", "")) if errors else -1
    # valgrind prints no "definitely lost" line when nothing at all was left allocated
    lost = int(definite[-1].replace(",", "")) if definite else (0 if "All heap blocks were freed" in text else -1)
    own = proc.stdout.strip().splitlines()
    summary = "valgrind %s: errors %d, definitely lost %d bytes, exit %d%s" % (
        label, n_errors, lost, proc.returncode, " (%s)" % own[-1] if own and label != "example" else "")
    ok = proc.returncode == 0 and n_errors == 0 and lost == 0
    if not ok:
        print("---- %s: program output\n%s\n---- valgrind log %s\n%s" % (label, proc.stdout[-4000:], log,
                                                                       text[-8000:]))
    else:
        for line in text.splitlines():
            if "ERROR SUMMARY" in line or "definitely lost" in line or "All heap blocks" in line:
                print("  %s: %s" % (label, line.split("== ", 1)[-1]))
    return ok, summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10000, help="calls the C host makes (default 10000)")
    parser.add_argument("--runs", type=int, default=100, help="runs of ./example (default 100)")
    parser.add_argument("--keep", help="export and build into this folder (kept) instead of a temporary one")
    args = parser.parse_args(argv)
    missing = [tool for tool in ("valgrind", "make", "gcc") if shutil.which(tool) is None]
    if missing:
        print("valgrind_check: %s not on PATH" % ", ".join(missing))
        return 2
    work = args.keep or tempfile.mkdtemp(prefix="ffigraph-valgrind-")
    try:
        bundle = export_graph(os.path.join(work, "leak"))
        folder = bundle.directory
        run(["make", "-s", "CFLAGS=-O1 -g -std=c99 -Wall"], folder)
        host = os.path.join(folder, "leak_host")
        run(["gcc", "-O1", "-g", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", folder, "-o", host, HOST_C,
             "-L", folder, "-lleak", "-Wl,-rpath," + folder], folder)
        results = [memcheck("example", ["./example", "-n", str(args.runs)], folder),
                   memcheck("leak_host", [host, str(args.calls)], folder)]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    for _, summary in results:
        print(summary)
    return 0 if all(ok for ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
