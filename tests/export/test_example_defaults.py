"""The example program of an export runs as generated: ``make && ./example`` with no example inputs
fills the inputs with 0, 1, 2, ... in shapes the graph accepts (a ``dot``'s inner axes equal, an
elementwise op's axes equal, a shared variable's length, a reshape's element count), prints them,
and prints the numbers the Python function gives for the same inputs.

Every graph the export tests export (the seed, the logistic-regression training step, the swap of
updates, the misfit of a shared vector, the hostile-names graph with a readable name, the collision
graph, a small twin of the threaded graph) plus products of matrices and vectors, integer and bool
dtypes. One test loops over them; each costs an export and a make (gcc) and one run.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode
from export_helpers import no_python_env, output_slot_names, parse_printed, run

# the functions run in Python (their rewritten graph is what the export compiles, once, into its library)
PY = Mode(linker="py")

pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in ("make", "gcc")),
                                reason="exports are built with make and gcc")


def _seed():
    x = T.dmatrix("x")
    s = ffigraph.shared(np.array([20.0, 23.0, 26.0, 29.0]), name="s")
    return ffigraph.function([x], [x * 2, x.sum(axis=0) + s], name="seed", mode=PY)


def _train():
    from logistic_regression import build

    return build("py")[0]


def _swap():
    a = ffigraph.shared(np.array([1.0, 2.0, 3.0]), name="a")
    b = ffigraph.shared(np.array([10.0, 20.0, 30.0]), name="b")
    n = ffigraph.shared(np.int64(0), name="n")
    x = T.dvector("x")
    return ffigraph.function([x], [a, a * x], updates=[(a, b), (b, a + x), (n, n + 1)], name="swap", mode=PY)


def _misfit():
    a = ffigraph.shared(np.array([1.0, 2.0]), name="a")
    x = T.dvector("x")
    return ffigraph.function([x], a + x, name="misfit", mode=PY)


def _named():
    x = T.dvector("v")
    s = ffigraph.shared(np.array([1.0, 2.0]), name="v")
    y = x * 2 + s
    y.name = "v"
    return ffigraph.function([x], y, updates=[(s, s + 1)], name="v", mode=PY)


def _collide():
    xs = [T.dvector(n) for n in ("p q", "p_q", "P_Q", "p.q")]   # (a newline in a name would split its printed line)
    total = xs[0] + xs[1] * 2 + xs[2] * 3 + xs[3] * 4
    for k, n in enumerate(("w w", "w_w", "W_W", "w\0w")):
        total = total + ffigraph.shared(np.full(2, float(k + 1)), name=n) * (10 ** (k + 1))
    return ffigraph.function(xs, total, name="col lide", mode=PY)


def _pool():
    x, y = T.dvector("x"), T.dvector("y")
    a, b = y.reshape((3, 4)), y.reshape((4, 3))
    return ffigraph.function([x, y], [T.exp(x) * y + T.tanh(x) - 1.5 * y, T.sum(T.exp(y) * x), T.argmax(x),
                                      T.dot(a, x[:4]), T.dot(a.T, x[:3]), T.dot(a, b)], name="fused", mode=PY)


def _products():
    x, y, v = T.dmatrix("x"), T.dmatrix("y"), T.dvector("v")
    s = ffigraph.shared(np.array([1.0, -1.0, 0.5, 2.0]), name="s")
    return ffigraph.function([x, y, v], [T.dot(x, y), T.dot(x, v) + 1, (x * 2).sum(axis=0) + s,
                                         T.dot(y.T, x).sum(axis=1), T.dot(v, T.dot(x, y))], name="dots", mode=PY)


def _dtypes():
    i, m = T.lvector("i"), T.imatrix("m")
    k = ffigraph.shared(np.array([3, 1, 4], dtype=np.int64), name="k")
    return ffigraph.function([i, m], [i * k + m.sum(axis=0), (m > 2).sum(), T.eq(i % 2, 0)], name="ints", mode=PY)


GRAPHS = [_seed, _train, _swap, _named, _collide, _pool, _products, _dtypes]   # (misfit's: test_export)


def _input_slot_names(f):
    """The names the library's description gives f's inputs and then its shared variables."""
    from ffigraph.linkers.c.codegen import unique_slot_names
    from ffigraph.linkers.c.linker import _graph_c_roles

    fgraph = f.maker.fgraph
    roles_in, roles_out = _graph_c_roles(fgraph)
    return unique_slot_names(fgraph.inputs, roles_in, fgraph.outputs, roles_out,
                             list(getattr(fgraph, "update_inputs", None) or [-1] * len(fgraph.outputs)),
                             list(getattr(fgraph, "output_names", None) or []))[0]


def _same(got, want, what):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind in "fc":   # (the export links its own BLAS: products may differ by an ulp)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def test_every_exported_graph_example_prints_pythons_numbers(tmp_path):
    env = no_python_env(tmp_path)
    for k, make in enumerate(GRAPHS):
        f = make()
        bundle = f.export(str(tmp_path / ("g%d" % k)))
        assert bundle.fill_shapes_problem is None, (make.__name__, bundle.fill_shapes_problem)
        run(["make", "-s"], bundle.directory, env)
        out = run(["./example"], bundle.directory, env).stdout
        assert "1 run(s) succeeded" in out, (make.__name__, out)
        printed = parse_printed(out)
        slots, n_in = _input_slot_names(f), len(f.maker.inputs)
        inputs = [printed[("input", slots[k])] for k in range(n_in)]
        # the shapes the bundle reports, filled with 0, 1, 2, ... in C order
        for spec, value in zip(f.maker.inputs, inputs):
            label = str(spec.name or spec.variable)
            assert value.shape == bundle.fill_shapes[label], (make.__name__, label)
            flat = np.arange(value.size)
            np.testing.assert_array_equal(value.ravel(), flat.astype(value.dtype), err_msg=make.__name__)
        want = f(*inputs)   # (the export started from the shared values of now: one call of each)
        want = want if isinstance(want, list) else [want]
        names = output_slot_names(f)
        for name, value in zip(names, want):
            _same(printed[("output", name)], value, "%s output %s" % (make.__name__, name))
        for slot, var in zip(slots[n_in:], f.maker.fgraph.inputs[n_in:]):   # after one run and one call
            _same(printed[("shared", slot)], var.get_value(), "%s shared %s" % (make.__name__, slot))


def test_default_shapes_satisfy_dot_and_shared_lengths():
    """The solved shapes themselves: x (a, b) . y (b, c), v (a,) . (x . y), and s (4,) on x's columns."""
    f = _products()
    shapes = ffigraph.export.bundle.make_plan(f).fill_shapes
    # x's columns: s's 4; y's rows: x's columns; dot(y.T, x) pairs y's rows with x's rows; y's columns
    # are free: the first free length, 3
    assert shapes == [(4, 4), (4, 3), (4,)]
    g = _pool()
    assert ffigraph.export.bundle.make_plan(g).fill_shapes == [(12,), (12,)]   # y.reshape((3, 4)); x like y


def test_graph_without_fitting_defaults_says_so_and_takes_shapes_from_the_command_line(tmp_path):
    """x[:5] . c needs x of length 5 at least, which no rule here derives: the example says so, and
    runs with -d."""
    x = T.dvector("x")
    c = T.constant(np.arange(10.0).reshape(5, 2))
    f = ffigraph.function([x], T.dot(x[:5], c), name="cut")
    bundle = f.export(str(tmp_path / "cut"))
    assert bundle.fill_shapes_problem is not None and "ValueError" in bundle.fill_shapes_problem
    env = no_python_env(tmp_path)
    run(["make", "-s"], bundle.directory, env)
    proc = run(["./example"], bundle.directory, env, check=False)
    assert proc.returncode == 1 and "give them with -d INPUT=SHAPE" in proc.stderr, proc
    out = run(["./example", "-d", "x=6"], bundle.directory, env)
    assert "give them with -d" not in out.stderr
    printed = parse_printed(out.stdout)
    _same(printed[("input", "x")], np.arange(6.0), "x")
    _same(printed[("output", output_slot_names(f)[0])], np.arange(5.0).dot(np.arange(10.0).reshape(5, 2)), "cut")
    usage = run(["./example", "-h"], bundle.directory, env, check=False)
    assert usage.returncode == 2 and "-d INPUT=SHAPE" in usage.stderr
