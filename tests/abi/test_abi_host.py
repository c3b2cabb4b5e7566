"""A C host written against ffigraph_abi.h alone (tests/abi/c/abi_host.c) runs cache and exported
libraries of many kinds of graph, under ASan+UBSan and valgrind; a host built against ABI 1's
header is refused with a code and a message it can read.

abi_host finds ``ffg_library_api``, checks versions and layout, runs each graph three times
(plain, with offered blocks, with offers overlapping an input, which must be declined), hands the
outputs on as DLPack tensors and counts every block back through its allocator; the values it
writes are compared with numpy here. One compiled function per kind of graph, shared by the tests.
"""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ffigraph as fg
import ffigraph.tensor as T
from ffigraph import In, Out
from ffigraph.compile.mode import Mode

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ABI_DIR = os.path.join(ROOT, "ffigraph", "abi")
SUPPORT_DIR = os.path.join(ROOT, "ffigraph", "export", "c")
CC = shutil.which("gcc") or shutil.which("cc")
VALGRIND = shutil.which("valgrind")
PYPY = platform.python_implementation() == "PyPy"

pytestmark = pytest.mark.skipif(CC is None or not sys.platform.startswith("linux"),
                                reason="needs a C compiler and dlopen (Linux)")

C_MODE = Mode(linker="c")


def _build(out, sources, include_dirs, extra):
    cmd = [CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-o", out] + sources \
        + ["-I" + d for d in include_dirs] + extra + ["-ldl"]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert done.returncode == 0, done.stdout
    return out


def _sanitizers_work(tmp):
    probe = os.path.join(tmp, "probe.c")
    with open(probe, "w") as fh:
        fh.write("int main(void) { return 0; }\n")
    done = subprocess.run([CC, "-fsanitize=address,undefined", "-o", probe[:-2], probe],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return done.returncode == 0 and subprocess.run([probe[:-2]]).returncode == 0


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """{'asan': path, 'plain': path} of abi_host builds (asan None where sanitizers cannot run)."""
    tmp = str(tmp_path_factory.mktemp("abi_host"))
    sources = [os.path.join(HERE, "c", "abi_host.c"), os.path.join(SUPPORT_DIR, "ffg_npy.c"),
               os.path.join(SUPPORT_DIR, "ffg_dlpack.c")]
    dirs = [ABI_DIR, SUPPORT_DIR]
    built = {"plain": _build(os.path.join(tmp, "abi_host"), sources, dirs, ["-O1"])}
    built["asan"] = _build(os.path.join(tmp, "abi_host_asan"), sources, dirs,
                           ["-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                            "-fno-omit-frame-pointer"]) if _sanitizers_work(tmp) else None
    return built


def _graphs():
    """name -> (function, input values in slot order, shared values included, expected outputs)."""
    rng = np.random.default_rng(7)
    x, y = T.dmatrix("x"), T.dmatrix("y")
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((3, 4))
    graphs = {}
    graphs["elementwise"] = (fg.function([x, y], T.exp(x) * 2 + y, mode=C_MODE), [a, b], [np.exp(a) * 2 + b])
    graphs["reduction"] = (fg.function([x], [x.sum(axis=0), x.max()], mode=C_MODE), [a],
                           [a.sum(axis=0), np.array(a.max())])
    w = T.dmatrix("w")
    wv = rng.standard_normal((4, 2))
    graphs["dot"] = (fg.function([x, w], T.dot(x, w), mode=C_MODE), [a, wv], [a @ wv])
    # a training step: shared w and b are input slots after x and t, their updates output slots
    t = T.dvector("t")
    sw = fg.shared(np.zeros(4), name="sw")
    sb = fg.shared(np.float64(0.5), name="sb")
    p = T.nnet.sigmoid(T.dot(x, sw) + sb)
    cost = T.nnet.binary_crossentropy(p, t).mean()
    gw, gb = fg.grad(cost, [sw, sb])
    train = fg.function([x, t], cost, updates=[(sw, sw - 0.1 * gw), (sb, sb - 0.1 * gb)], mode=C_MODE)
    tv = (rng.random(3) > 0.5).astype(float)
    pv = 1 / (1 + np.exp(-(a @ np.zeros(4) + 0.5)))
    costv = -np.mean(tv * np.log(pv) + (1 - tv) * np.log(1 - pv))
    gwv = a.T @ (pv - tv) / 3
    gbv = np.mean(pv - tv)
    graphs["training"] = (train, [a, tv, np.zeros(4), np.float64(0.5)],
                          [np.array(costv), np.zeros(4) - 0.1 * gwv, np.array(0.5 - 0.1 * gbv)])
    iv = T.ivector("iv")
    ints = np.array([-7, 0, 5, 123456, -2 ** 31], dtype=np.int32)
    graphs["int"] = (fg.function([iv], iv // 3 + iv % 5, mode=C_MODE), [ints], [ints // 3 + ints % 5])
    f32 = T.fmatrix("f32")
    af = a.astype(np.float32)
    graphs["float32"] = (fg.function([f32], T.tanh(f32) * np.float32(3), mode=C_MODE), [af],
                         [np.tanh(af) * np.float32(3)])
    s, r = T.dscalar("s"), T.dscalar("r")
    graphs["0-d"] = (fg.function([s, r], s * r + 1, mode=C_MODE), [np.float64(2.5), np.float64(-4.0)],
                     [np.array(2.5 * -4.0 + 1)])
    e = np.zeros((0, 3))
    graphs["empty"] = (fg.function([x], [x + 1, x.sum(axis=0)], mode=C_MODE), [e], [e + 1, e.sum(axis=0)])
    graphs["aliased"] = (fg.function([In(x, borrow=True)], [Out(x.T, borrow=True), x * 2], mode=C_MODE), [a],
                         [a.T, a * 2])
    return graphs


@pytest.fixture(scope="module")
def graphs():
    return _graphs()


def _run_host(host, library, values, tmp, valgrind=False):
    os.makedirs(tmp, exist_ok=True)
    paths = []
    for k, value in enumerate(values):
        paths.append(os.path.join(tmp, "in%d.npy" % k))
        np.save(paths[-1], np.asarray(value))
    cmd = [host, library, tmp] + paths
    if valgrind:
        cmd = [VALGRIND, "-q", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite",
               "--suppressions=" + os.path.join(HERE, "c", "valgrind.supp")] + cmd
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="halt_on_error=1")
    env.pop("LD_PRELOAD", None)   # the sanitizer phase preloads libasan for Python; the host has its own
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                          timeout=300)


def _check_outputs(done, tmp, expected):
    assert done.returncode == 0, done.stdout + done.stderr
    assert "overlapping offers declined" in done.stdout and "all released" in done.stdout
    assert "dlpack in and out" in done.stdout
    for k, want in enumerate(expected):
        got = np.load(os.path.join(tmp, "out%d.npy" % k))
        want = np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape, (k, got, want)
        np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float32 else 1e-12)


KINDS = ["elementwise", "reduction", "dot", "training", "int", "float32", "0-d", "empty", "aliased"]


@pytest.mark.parametrize("kind", KINDS)
def test_header_only_host_runs_cache_libraries_under_asan(hosts, graphs, kind, tmp_path):
    if hosts["asan"] is None:
        pytest.skip("AddressSanitizer programs cannot be built or run here")
    f, values, expected = graphs[kind]
    done = _run_host(hosts["asan"], f.library_path, values, str(tmp_path))
    _check_outputs(done, str(tmp_path), expected)
    if kind == "aliased":
        assert "output 0 alias_of 0" in done.stdout   # x.T is a view of the host's input
        assert "dlpack in and out, 1 view(s) kept their input alive" in done.stdout
    if kind == "training":   # the description maps each update to its shared variable, by name
        assert re.search(r"slot in 2 shared sw ", done.stdout) and re.search(r"slot in 3 shared sb ", done.stdout)
        assert "slot out 1 update sw.update ndim 1 updates 2" in done.stdout
        assert "slot out 2 update sb.update ndim 0 updates 3" in done.stdout


@pytest.mark.skipif(VALGRIND is None, reason="valgrind is not installed")
@pytest.mark.skipif(PYPY, reason="the C host does not involve Python: one interpreter's libraries suffice")
def test_header_only_host_runs_every_kind_under_valgrind(hosts, graphs, tmp_path):
    for kind in KINDS:
        f, values, expected = graphs[kind]
        done = _run_host(hosts["plain"], f.library_path, values, str(tmp_path / kind), valgrind=True)
        _check_outputs(done, str(tmp_path / kind), expected)


def test_header_only_host_runs_an_exported_library(hosts, graphs, tmp_path):
    f, values, expected = graphs["training"]
    bundle = f.export(str(tmp_path / "bundle"), name="train")
    library = os.path.join(bundle.directory, "libtrain.so")
    host = hosts["asan"] or hosts["plain"]
    done = _run_host(host, library, values, str(tmp_path / "run"))
    _check_outputs(done, str(tmp_path / "run"), expected)


def test_header_only_host_reads_the_node_table_on_error(hosts, graphs, tmp_path):
    host = hosts["asan"] or hosts["plain"]
    f, _, _ = graphs["dot"]
    done = _run_host(host, f.library_path, [np.ones((3, 4)), np.ones((5, 2))], str(tmp_path / "dot"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "error code 2" in done.stdout                       # FFG_ERR_VALUE
    node = re.search(r"error node (\d+): op (\S+) \| (.*)", done.stdout)
    assert node and "Dot" in node.group(2) and "(x, w)" in node.group(3), done.stdout
    assert "error input -1" in done.stdout   # both inputs feed the node: neither alone is at fault
    # a node that depends on one input only: that input is named
    x = T.dvector("x")
    g = fg.function([x], T.exp(x).reshape((2, 2)), mode=C_MODE)
    done = _run_host(host, g.library_path, [np.ones(5)], str(tmp_path / "reshape"))
    assert done.returncode == 3 and "error input 0: x" in done.stdout, done.stdout + done.stderr


def test_a_host_built_against_abi_1_is_refused_with_a_code_and_message(graphs, tmp_path):
    host = _build(str(tmp_path / "old_host"), [os.path.join(HERE, "c", "old_host.c")],
                  [os.path.join(HERE, "c", "v1")], [])
    f, _, _ = graphs["elementwise"]
    prefix = re.search(r"ffg_[0-9a-f]{24}", open(f.library_path, "rb").read().decode("latin-1")).group(0)
    done = subprocess.run([host, f.library_path, prefix], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    assert done.returncode == 0, done.stdout
    assert "host ABI 1003, library ABI 2001" in done.stdout
    assert "create(NULL): state NULL, code 5" in done.stdout and "create(&allocator): state NULL, code 5" in done.stdout
    assert "speaks ABI 2.1" in done.stdout and "rebuild" in done.stdout
