"""An exported library whose loops split over threads, run from a C host with no Python.

The graph (a fused elementwise loop, a fused sum, a plain argmax, and three BLAS products: a x,
a^T x and a b) is exported with ``config.threads=3`` and a threshold below its inputs' size;
``tests/export/c/export_pool.c`` reads the inputs from .npy files, runs the graph twice and writes
the outputs: numpy's answer, the very bits of the Python call of the same graph for the loops (the
export's BLAS is the scipy-openblas64 package, which may not be the OpenBLAS the Python call uses),
the same bits twice, and two more threads in the host afterwards (the library's workers). The host
runs with OPENBLAS_NUM_THREADS=1, so the products are split over the library's own threads. Under
valgrind (when installed) the host makes no memory error and loses nothing: the workers are joined
when the program exits.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import config, function
from ffigraph.linkers.c.sanitize import sanitize_flags
from export_helpers import no_python_env, run
from helpers import C_HOSTS

pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in ("make", "gcc")) or
                                not os.path.exists("/proc/self/status"),
                                reason="exports are built with make and gcc; the host counts threads in /proc")

N = 120000


def _numpy(x, y):
    a, b = y.reshape(300, 400), y.reshape(400, 300)
    return [np.exp(x) * y + np.tanh(x) - 1.5 * y, np.sum(np.exp(y) * x), np.argmax(x),
            a @ x[:400], a.T @ x[:300], a @ b]


def _graph(x, y):
    a, b = y.reshape((300, 400)), y.reshape((400, 300))
    return [T.exp(x) * y + T.tanh(x) - 1.5 * y, T.sum(T.exp(y) * x), T.argmax(x),
            T.dot(a, x[:400]), T.dot(a.T, x[:300]), T.dot(a, b)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("pool")
    x, y = T.dvector("x"), T.dvector("y")
    with config.change_flags(threads=3, threads_min_size=10000):
        f = function([x, y], _graph(x, y), name="fused")
        bundle = f.export(str(root / "fused"))
    env = dict(no_python_env(root), OPENBLAS_NUM_THREADS="1")   # the products split over the library's threads
    run(["make", "-s"], bundle.directory, env)   # the bundle's own Makefile builds with no Python
    exe = str(root / "export_pool")
    npy_obj = str(root / "ffg_npy.o")
    run(["gcc", "-O2", "-c", "-I", bundle.directory, "-o", npy_obj, os.path.join(bundle.directory, "ffg_npy.c")],
        root, os.environ)
    run(["gcc", "-O1", "-g", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", bundle.directory, "-o", exe,
         os.path.join(C_HOSTS, "export_pool.c"), npy_obj, "-L", bundle.directory, "-lfused",
         "-Wl,-rpath," + bundle.directory] + sanitize_flags(), root, os.environ)
    rng = np.random.default_rng(11)
    xv, yv = rng.uniform(-2, 2, N), rng.uniform(-2, 2, N)
    xv[90000] = np.inf   # argmax picks it; the sum is inf
    work = root / "work"
    work.mkdir()
    np.save(str(work / "x.npy"), xv)
    np.save(str(work / "y.npy"), yv)
    return f, bundle, env, exe, work, xv, yv


def _threads(text, when):
    return int(re.search(r"^threads %s (-?\d+)$" % when, text, re.M).group(1))


def test_exported_threaded_graph_from_c_gives_numpys_answer_and_pythons_bits(exported):
    f, bundle, env, exe, work, xv, yv = exported
    source = open(bundle.source).read()
    assert "#define FFG_THREADS 3\n" in source and "ffg_parallel(" in source
    assert "ffg_dot_par_gemm_float64(" in source and "scipy_openblas_get_num_threads64_(void)" in source
    assert "loops over 10000 elements or more split over 3 threads" in open(bundle.readme).read()
    out = run([exe], work, env).stdout
    assert "same 1" in out, out
    assert _threads(out, "after") >= _threads(out, "before") + 2, out   # the library's two workers
    got = [np.load(str(work / ("out%d.npy" % k))) for k in range(6)]
    want = _numpy(xv, yv)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    assert got[2] == want[2]
    python = f(xv, yv)   # the same graph and thread count in Python: the very same bits for the loops
    for g, p in zip(got[:3], python):
        assert g.dtype == p.dtype and g.shape == p.shape and g.tobytes() == np.asarray(p).tobytes()
    for g, w, p in zip(got[3:], want[3:], python[3:]):   # the products: another OpenBLAS build, maybe
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(g, p, rtol=1e-11, atol=1e-11)


@pytest.mark.skipif(shutil.which("valgrind") is None or bool(sanitize_flags()),
                    reason="needs valgrind (apt-get install -y valgrind), which does not mix with the sanitizers")
def test_exported_threaded_graph_is_valgrind_clean(exported):
    _, _, env, exe, work, _, _ = exported
    valgrind = os.path.realpath(shutil.which("valgrind"))
    env = dict(env, PATH=os.path.dirname(valgrind) + os.pathsep + env["PATH"])
    proc = subprocess.run([valgrind, "--error-exitcode=9", "--leak-check=full", "--errors-for-leak-kinds=definite",
                           exe], cwd=str(work), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "same 1" in proc.stdout and "ERROR SUMMARY: 0 errors" in proc.stdout, proc.stdout[-4000:]
    assert re.search(r"definitely lost: 0 bytes|All heap blocks were freed", proc.stdout), proc.stdout[-4000:]
