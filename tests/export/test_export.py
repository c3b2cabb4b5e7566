"""Exported libraries used from C with no Python: the seed example, training from C,
C++ hosts, two threads, bad input, and the c_callable linker.

Each export is built with ``make`` in an environment whose PATH holds only make and the C
toolchain (no python) and no PYTHON* variables, then run; its printed numbers are compared
with numpy's answer for the graph (written out in numpy by each test, never ffigraph's own call).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode
from ffigraph.export import undefined_symbols
from ffigraph.linkers.c import CLinker
from ffigraph.linkers.c.sanitize import sanitize_flags
from export_helpers import no_python_env, output_slot_names, parse_printed, run
from helpers import C_HOSTS

pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in ("make", "gcc", "nm")),
                                reason="exports are built with make and gcc, checked with nm; one is missing")


# ------------------------------------------------------------------ helpers


def build_and_run(bundle, env, *args):
    run(["make", "-s"], bundle.directory, env)
    return run(["./example"] + list(args), bundle.directory, env)


SEED_S = np.array([20.0, 23.0, 26.0, 29.0])


def seed_function(mode=None):
    """The seed's example: a 3x4 matrix input; outputs x*2 and a column sum plus a shared vector."""
    x = T.dmatrix("x")
    s = ffigraph.shared(SEED_S.copy(), name="s")
    return ffigraph.function([x], [x * 2, x.sum(axis=0) + s], name="seed", mode=mode)


def seed_numpy(x):
    """The seed graph in numpy: ``[x * 2, x.sum(axis=0) + s]``."""
    return [x * 2, x.sum(axis=0) + SEED_S]


def assert_printed(got, want):
    """A printed array equals numpy's ``want``: dtype, shape and every value (NaN == NaN, -0.0 != 0.0)."""
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    """The seed example exported, built with make in an environment without Python."""
    root = tmp_path_factory.mktemp("seed")
    f = seed_function()
    bundle = f.export(str(root / "seed"))
    env = no_python_env(root)
    printed = build_and_run(bundle, env).stdout
    return f, bundle, env, printed


# ------------------------------------------------------------------ the seed example


def test_seed_example_builds_and_runs_without_python(seed):
    f, bundle, env, printed = seed
    x = np.arange(12.0).reshape(3, 4)   # what main.c fills a (?, ?) input with: 0, 1, 2, ... in 3x4
    twice, total = seed_numpy(x)
    got = parse_printed(printed)
    names = output_slot_names(f)
    assert sorted(got) == sorted([("input", "x"), ("output", names[0]), ("output", names[1]), ("shared", "s")]), \
        sorted(got)
    assert_printed(got[("input", "x")], x)   # it prints the inputs it filled
    assert_printed(got[("output", names[0])], twice)
    assert_printed(got[("output", names[1])], total)
    np.testing.assert_array_equal(total, [32.0, 38.0, 44.0, 50.0])   # the numbers the seed text prints
    assert_printed(got[("shared", "s")], SEED_S)


def test_seed_folder_holds_what_the_issue_lists(seed):
    _, bundle, _, _ = seed
    files = set(os.listdir(bundle.directory))
    for name in ("libseed.so", "seed.h", "ffigraph_abi.h", "Makefile", "main.c", "s.npy", "README.md",
                 "ffg_npy.h", "ffg_npy.c", "seed.c"):
        assert name in files, name
    np.testing.assert_array_equal(np.load(bundle.shared_files["s"]), [20.0, 23.0, 26.0, 29.0])
    header = open(bundle.header).read()
    assert 'extern "C"' in header
    for row in ("0   x ", "0   s ", "initial value: s.npy", "float64  ndim 2, shape (?, ?)"):
        assert row in header, row
    readme = open(bundle.readme).read()
    assert "seed_run" in readme and "Threads" in readme


def test_library_has_no_python(seed):
    _, bundle, _, _ = seed
    ldd = subprocess.run(["ldd", bundle.library], stdout=subprocess.PIPE, universal_newlines=True).stdout
    assert "libpython" not in ldd and "not found" not in ldd, ldd
    undefined = undefined_symbols(bundle.library)
    assert undefined, "nm found no undefined symbols at all; the check would prove nothing"
    assert [s for s in undefined if s.startswith("Py") or s.startswith("_Py")] == []
    source = open(bundle.source).read()
    assert "Python.h" not in source and "numpy/" not in source


def test_make_library_rebuilds_it(seed, tmp_path):
    _, bundle, env, _ = seed
    copy = tmp_path / "copy"
    shutil.copytree(bundle.directory, str(copy))
    os.remove(str(copy / "libseed.so"))
    run(["make", "-s", "library"], copy, env)
    run(["make", "-s", "clean"], copy, env)
    out = run(["make", "-s"], copy, env)
    assert out.returncode == 0
    printed = run([str(copy / "example")], tmp_path, env).stdout   # run from elsewhere: files found beside it
    assert parse_printed(printed) and "1 run(s) succeeded" in printed


def test_example_inputs_are_shipped_and_used(tmp_path):
    f = seed_function()
    x = np.array([[1.5, -2.0, 0.25, 7.0], [3.0, 1e300, -0.0, np.inf]])
    bundle = f.export(str(tmp_path / "b"), example_inputs=[x])
    assert os.path.basename(bundle.input_files["x"]) == "input_x.npy"
    printed = parse_printed(build_and_run(bundle, no_python_env(tmp_path)).stdout)
    twice, total = seed_numpy(x)   # 1e300 * 2 stays finite, inf stays inf, -0.0 * 2 is -0.0
    names = output_slot_names(f)
    assert_printed(printed[("output", names[0])], twice)
    assert_printed(printed[("output", names[1])], total)


def test_c_callable_linker_exports_and_says_where(tmp_path):
    mode = Mode(linker=CLinker(c_callable=True))
    f = seed_function(mode)
    folder = f.fn.filename
    assert folder == f.library_dir and os.path.isdir(folder)
    assert os.path.isfile(os.path.join(folder, "libseed.so")) and os.path.isfile(os.path.join(folder, "s.npy"))
    again = seed_function(mode)
    assert again.fn.filename == folder   # the same graph and values: one folder, built once
    mine = seed_function(Mode(linker=CLinker(c_callable=True, export_dir=str(tmp_path / "here"))))
    assert mine.library_dir == str(tmp_path / "here")
    printed = parse_printed(build_and_run(ffigraph.export.bundle.ExportBundle(mine.library_dir, _plan(mine)),
                                          no_python_env(tmp_path)).stdout)
    assert printed[("shared", "s")].tolist() == [20.0, 23.0, 26.0, 29.0]


def _plan(f):
    from ffigraph.export.bundle import make_plan

    return make_plan(f)


def test_library_dir_of_plain_functions():
    x = T.dvector("x")
    f = ffigraph.function([x], x + 1, mode=Mode(linker="c"))
    assert os.path.isfile(os.path.join(f.library_dir, "lib.so"))
    assert f.fn.filename == f.library_dir
    assert ffigraph.function([x], x + 1, mode=Mode(linker="py")).library_dir is None


# ------------------------------------------------------------------ shared state and training from C


def numpy_training(x, y, steps):
    """``(w, b, prediction, cost)`` after ``steps`` steps of examples/logistic_regression.py's gradient
    descent from w = 0, b = 0, written by hand in numpy; ``prediction`` and ``cost`` are the last
    step's outputs (computed before its update, as ``train`` returns them).

    p = sigmoid(x.w + b), cost = mean(-y log p - (1-y) log(1-p)) + L2 |w|^2,
    d cost / dw = x.T (p - y) / n + 2 L2 w, d cost / db = mean(p - y)."""
    from logistic_regression import L2, LEARNING_RATE

    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x.dot(w) + b)))
        prediction, cost = p > 0.5, np.mean(-y * np.log(p) - (1 - y) * np.log(1 - p)) + L2 * np.sum(w ** 2)
        w, b = w - LEARNING_RATE * (x.T.dot(p - y) / x.shape[0] + 2 * L2 * w), b - LEARNING_RATE * np.mean(p - y)
    return w, b, prediction, cost


def test_training_step_100_runs_from_c_equals_numpy(tmp_path):
    from logistic_regression import build, make_data

    x, y = make_data()
    train, _, w, b = build("c")
    bundle = train.export(str(tmp_path / "train"), example_inputs=[x, y])
    env = no_python_env(tmp_path)
    saved = tmp_path / "after"
    saved.mkdir()
    out = build_and_run(bundle, env, "-n", "100", "-s", str(saved))
    assert "100 run(s) succeeded" in out.stdout
    w_ref, b_ref, prediction_ref, cost_ref = numpy_training(x, y, 100)
    assert np.abs(w_ref).max() > 1e-3   # it did train
    w_c, b_c = np.load(str(saved / "w.npy")), np.load(str(saved / "b.npy"))
    assert w_c.dtype == np.float64 and b_c.dtype == np.float64 and b_c.shape == ()
    # float64 against numpy after 100 steps: a few ulps per step, far below 1e-10
    np.testing.assert_allclose(w_c, w_ref, rtol=1e-10, atol=1e-10 * np.abs(w_ref).max())
    np.testing.assert_allclose(b_c, b_ref, rtol=1e-10, atol=0)
    printed = parse_printed(out.stdout)
    np.testing.assert_allclose(printed[("shared", "w")], w_ref, rtol=1e-10, atol=1e-10 * np.abs(w_ref).max())
    np.testing.assert_allclose(printed[("shared", "b")], b_ref, rtol=1e-10, atol=0)
    prediction_name, cost_name = output_slot_names(train)[:2]
    assert_printed(printed[("output", prediction_name)], prediction_ref)
    assert printed[("output", cost_name)].dtype == np.float64
    np.testing.assert_allclose(printed[("output", cost_name)], cost_ref, rtol=1e-10, atol=0)


def test_updates_run_inside_the_handle(tmp_path):
    a = ffigraph.shared(np.array([1.0, 2.0, 3.0]), name="a")
    bvar = ffigraph.shared(np.array([10.0, 20.0, 30.0]), name="b")
    n = ffigraph.shared(np.int64(0), name="n")
    x = T.dvector("x")
    f = ffigraph.function([x], [a, a * x], updates=[(a, bvar), (bvar, a + x), (n, n + 1)], name="swap")
    bundle = f.export(str(tmp_path / "swap"), example_inputs=[np.array([0.5, -1.0, 4.0])])
    saved = tmp_path / "after"
    saved.mkdir()
    printed = parse_printed(build_and_run(bundle, no_python_env(tmp_path), "-n", "5", "-s", str(saved)).stdout)
    # numpy: each call returns [a, a * x], then a <- b, b <- a + x, n <- n + 1 (from the old values)
    xv = np.array([0.5, -1.0, 4.0])
    a_ref, b_ref, n_ref = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0]), np.int64(0)
    for _ in range(5):
        outs = [a_ref, a_ref * xv]
        a_ref, b_ref, n_ref = b_ref, a_ref + xv, n_ref + 1
    assert_printed(printed[("output", output_slot_names(f)[0])], outs[0])
    assert_printed(printed[("output", output_slot_names(f)[1])], outs[1])
    for name, want in (("a", a_ref), ("b", b_ref), ("n", n_ref)):
        got = np.load(str(saved / ("%s.npy" % name)))
        assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want), (name, got.dtype, got.shape)
        np.testing.assert_array_equal(got, want)
        assert_printed(printed[("shared", name)], want)
    assert n_ref == 5
    # the header's slot map names outputs and updates as the library's description does
    with open(bundle.header) as fh:
        header = fh.read()
    names = output_slot_names(f)
    for k, name in enumerate(names[:2]):
        assert re.search(r"\*\s+%d\s+%s\s+" % (k, re.escape(name)), header), (k, name)
    # (the update slots come in the order of updates=; the shared slots in the graph's input order)
    shared_slots = [str(v) for v in f.maker.fgraph.inputs[1:]]
    for j, name in enumerate(["a", "b", "n"]):
        target = shared_slots.index(name)
        assert re.search(r"\*\s+%d\s+shared %d \(%s\) <- %s\.update\n" % (j, target, name, name), header), name


def test_example_reports_errors_through_the_error_record(tmp_path):
    """A fill shape from the command line (-d) that does not fit the graph: the error comes back as
    data. The default fill fits (x gets a's length)."""
    a = ffigraph.shared(np.array([1.0, 2.0]), name="a")
    x = T.dvector("x")
    f = ffigraph.function([x], a + x, name="misfit")
    bundle = f.export(str(tmp_path / "misfit"))
    assert bundle.fill_shapes == {"x": (2,)} and bundle.fill_shapes_problem is None
    env = no_python_env(tmp_path)
    run(["make", "-s"], bundle.directory, env)
    printed = parse_printed(run(["./example"], bundle.directory, env).stdout)
    assert_printed(printed[("output", output_slot_names(f)[0])], [1.0, 3.0])
    proc = run(["./example", "-d", "x=3"], bundle.directory, env, check=False)
    assert proc.returncode == 1, proc
    assert "misfit_run failed: error 2 at node" in proc.stderr
    proc = run(["./example", "-d", "0=3x2"], bundle.directory, env, check=False)   # by position; 2-d: refused
    assert proc.returncode == 2 and "has 1 dimensions, the shape 2" in proc.stderr, proc
    proc = run(["./example", "-d", "nope=3"], bundle.directory, env, check=False)
    assert proc.returncode == 2 and "no input named or numbered nope" in proc.stderr, proc


# ------------------------------------------------------------------ C hosts: C++, threads, bad input


def _compile_host(seed, tmp_path, source, compiler, extra=()):
    _, bundle, _, _ = seed
    exe = str(tmp_path / os.path.splitext(source)[0])
    npy_obj = str(tmp_path / "ffg_npy.o")
    run(["gcc", "-O2", "-c", "-I", bundle.directory, "-o", npy_obj, os.path.join(bundle.directory, "ffg_npy.c")],
        tmp_path, os.environ)
    flags = ["-std=c++11"] if compiler == "g++" else ["-std=c99"]
    run([compiler, "-O1", "-g", "-Wall", "-Wextra", "-Werror"] + flags + ["-I", bundle.directory, "-o", exe,
                                                                           os.path.join(C_HOSTS, source), npy_obj,
                                                                           "-L", bundle.directory, "-lseed",
                                                                           "-Wl,-rpath," + bundle.directory]
        + list(extra) + sanitize_flags(), tmp_path, os.environ)   # a host of an ASan-built library links ASan
    return exe


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler (g++) on PATH")
def test_cpp_host_includes_the_headers_and_links(seed, tmp_path):
    exe = _compile_host(seed, tmp_path, "export_host.cpp", "g++")
    out = run([exe, seed[1].directory], tmp_path, seed[2])
    assert out.stdout.strip() == "ok"


def test_two_threads_two_handles_from_c(seed, tmp_path):
    exe = _compile_host(seed, tmp_path, "export_threads.c", "gcc", ["-pthread"])
    out = run([exe], tmp_path, seed[2])
    lines = out.stdout.strip().splitlines()
    assert lines == ["thread 0: calls 3000, mismatches 0, errors 0", "thread 1: calls 3000, mismatches 0, errors 0"]


def test_one_handle_shared_by_two_threads_refuses_overlap_and_never_races(seed, tmp_path):
    """Misuse of the one-handle-per-thread rule: each call succeeds with right values or gets
    FFG_ERR_RUNTIME 'busy'; nothing else (how many overlap depends on the scheduler)."""
    exe = _compile_host(seed, tmp_path, "export_shared_handle.c", "gcc", ["-pthread"])
    out = run([exe], tmp_path, seed[2], check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    found = re.match(r"calls 200000, ok (\d+), refused busy (\d+), mismatches 0, other errors 0$", out.stdout.strip())
    assert found, out.stdout
    print(out.stdout.strip())
    assert int(found.group(1)) + int(found.group(2)) == 200000 and int(found.group(1)) > 0


def test_bad_input_from_c_gives_codes_and_messages(seed, tmp_path):
    exe = _compile_host(seed, tmp_path, "export_bad_input.c", "gcc")
    out = run([exe], tmp_path, seed[2], check=False)
    assert out.returncode == 0, out.stdout + out.stderr   # a crash would be a negative status
    assert "FAIL" not in out.stdout, out.stdout
    assert out.stdout.count("\nok ") >= 35 and "failures 0" in out.stdout


# ------------------------------------------------------------------ Python-side rules


def test_export_refuses_a_folder_of_other_files(tmp_path):
    f = seed_function()
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not empty"):
        f.export(str(tmp_path))
    assert (tmp_path / "mine.txt").read_text() == "keep me"
    target = tmp_path / "exp"
    f.export(str(target))
    f.export(str(target))   # an earlier export is replaced
    assert sorted(os.listdir(str(tmp_path))) == ["exp", "mine.txt"]


def test_export_checks_example_inputs():
    f = seed_function()
    with pytest.raises(ValueError, match="expected 1 values"):
        f.export("/nonexistent/never-written", example_inputs=[])
    with pytest.raises(TypeError, match="x"):
        f.export("/nonexistent/never-written", example_inputs=[np.zeros(3)])


def test_hostile_names_stay_inside_the_folder(tmp_path):
    s = ffigraph.shared(np.array([1.0, 2.0]), name="../../etc/passwd")
    t = ffigraph.shared(np.array([3.0, 4.0]), name='x; abort(); // "*/')
    x = T.dvector('in"put')
    f = ffigraph.function([x], x + s + t, name="../evil name")
    bundle = f.export(str(tmp_path / "out"), example_inputs=[np.array([5.0, 6.0])])
    assert bundle.name == "evil_name"
    assert sorted(os.listdir(str(tmp_path))) == ["out"]
    for path in list(bundle.shared_files.values()) + list(bundle.input_files.values()):
        assert os.path.dirname(path) == bundle.directory
    printed = parse_printed(build_and_run(bundle, no_python_env(tmp_path)).stdout)
    np.testing.assert_array_equal(printed[("output", output_slot_names(f)[0])], [9.0, 12.0])
    np.testing.assert_array_equal(printed[("shared", "../../etc/passwd")], [1.0, 2.0])


def test_export_needs_c_code_for_every_node(tmp_path):
    z = T.tensor("complex128", shape=(None,), name="z")   # complex ops have no C code yet
    f = ffigraph.function([z], z * 2, name="cplx")
    with pytest.raises(NotImplementedError, match=r"C code for every node.*#0 Elemwise\{mul\}"):
        f.export(str(tmp_path / "never"))
    assert not os.path.exists(str(tmp_path / "never"))
    assert os.listdir(str(tmp_path)) == []   # and no half-built folder beside it
