"""Construction functions (ffigraph/tensor/construct.py) and the constructors of basic.py, against numpy.

As in test_layout.py: ONE function per test holds every case as an output, run under the C linker
(C code for every node) and the Python one, which must agree; inputs are reversed views.
"""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode
from ffigraph.gradient import verify_grad
from test_layout import reversed_view, run_cases


def _sample(dtype, shape, rng):
    if dtype == "bool":
        return reversed_view(rng.integers(0, 2, shape).astype(bool))
    return reversed_view((rng.standard_normal(shape) * 10).astype(dtype))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_construct_values(dtype):
    m, v, t = T.matrix("m", dtype=dtype), T.vector("v", dtype=dtype), T.tensor3("t", dtype=dtype)
    n, k = T.lscalar("n"), T.lscalar("k")
    syms = [m, v, t, n, k]
    cases = [
        ("eye", lambda m, v, t, n, k: T.eye(n, dtype=dtype), lambda m, v, t, n, k: np.eye(n, dtype=dtype)),
        ("eye k", lambda m, v, t, n, k: T.eye(n, 4, k, dtype=dtype),
         lambda m, v, t, n, k: np.eye(n, 4, k, dtype=dtype)),
        ("identity_like", lambda m, v, t, n, k: T.identity_like(m),
         lambda m, v, t, n, k: np.eye(*m.shape, dtype=dtype)),
        ("tri", lambda m, v, t, n, k: T.tri(n, 3, k, dtype=dtype), lambda m, v, t, n, k: np.tri(n, 3, k, dtype=dtype)),
        ("tril", lambda m, v, t, n, k: T.tril(m), lambda m, v, t, n, k: np.tril(m)),
        ("tril k", lambda m, v, t, n, k: T.tril(t, k), lambda m, v, t, n, k: np.tril(t, k)),
        ("triu", lambda m, v, t, n, k: T.triu(m, -1), lambda m, v, t, n, k: np.triu(m, -1)),
        ("triu k", lambda m, v, t, n, k: T.triu(t, k), lambda m, v, t, n, k: np.triu(t, k)),
        ("diag v", lambda m, v, t, n, k: T.diag(v), lambda m, v, t, n, k: np.diag(v)),
        ("diag v 2", lambda m, v, t, n, k: T.diag(v, 2), lambda m, v, t, n, k: np.diag(v, 2)),
        ("diag v -1", lambda m, v, t, n, k: T.diag(v, -1), lambda m, v, t, n, k: np.diag(v, -1)),
        ("diag m", lambda m, v, t, n, k: T.diag(m), lambda m, v, t, n, k: np.diag(m)),
        ("diag m 1", lambda m, v, t, n, k: T.diag(m, 1), lambda m, v, t, n, k: np.diag(m, 1)),
        ("diag m -2", lambda m, v, t, n, k: T.diag(m, -2), lambda m, v, t, n, k: np.diag(m, -2)),
        ("diagonal", lambda m, v, t, n, k: T.diagonal(t, 1, 2, 0), lambda m, v, t, n, k: np.diagonal(t, 1, 2, 0)),
        ("diagonal -1", lambda m, v, t, n, k: T.diagonal(t, -1, -1, 1),
         lambda m, v, t, n, k: np.diagonal(t, -1, -1, 1)),
        ("fill_diagonal", lambda m, v, t, n, k: T.fill_diagonal(m, 1), lambda m, v, t, n, k: _filled(m, 1)),
        ("fill_diagonal wide", lambda m, v, t, n, k: T.fill_diagonal(m.T, 0), lambda m, v, t, n, k: _filled(m.T, 0)),
        ("fill_diagonal_offset", lambda m, v, t, n, k: T.fill_diagonal_offset(m, 1, k),
         lambda m, v, t, n, k: _filled_offset(m, 1, k)),
        ("fill_diagonal_offset wide", lambda m, v, t, n, k: T.fill_diagonal_offset(m.T, 0, -k),
         lambda m, v, t, n, k: _filled_offset(m.T, 0, -k)),
        ("full", lambda m, v, t, n, k: T.full((2, n), np.asarray(1, dtype=dtype)),
         lambda m, v, t, n, k: np.full((2, n), np.asarray(1, dtype=dtype))),
        ("full dtype", lambda m, v, t, n, k: T.full(n, 3, dtype=dtype),
         lambda m, v, t, n, k: np.full(n, 3, dtype=dtype)),
        ("full_like", lambda m, v, t, n, k: T.full_like(t, 1), lambda m, v, t, n, k: np.full_like(t, 1)),
        ("empty", lambda m, v, t, n, k: T.empty((n, 2), dtype=dtype).shape,
         lambda m, v, t, n, k: np.asarray((n, 2), dtype=np.int64)),
    ]
    if dtype != "bool":
        cases += [
            ("trace", lambda m, v, t, n, k: T.trace(m), lambda m, v, t, n, k: np.trace(m)),
            ("trace 3d", lambda m, v, t, n, k: T.trace(t, 1, 1, 2), lambda m, v, t, n, k: np.trace(t, 1, 1, 2)),
            ("outer", lambda m, v, t, n, k: T.outer(v, m), lambda m, v, t, n, k: np.outer(v, m)),
        ]
    rng = np.random.default_rng(0)
    full = (_sample(dtype, (4, 3), rng), _sample(dtype, (3,), rng), _sample(dtype, (2, 3, 4), rng), 3, 1)
    empty = (_sample(dtype, (0, 3), rng), _sample(dtype, (0,), rng), _sample(dtype, (2, 0, 4), rng), 0, -2)
    run_cases(syms, cases, [full, empty])


def _filled_offset(a, val, offset):
    """``a`` with ``val`` where column - row is ``offset`` (written by rows and columns)."""
    a = np.array(a, copy=True)
    for i in range(a.shape[0]):
        if 0 <= i + offset < a.shape[1]:
            a[i, i + offset] = val
    return a


def _filled(a, val):
    a = np.array(a, copy=True)
    np.fill_diagonal(a, val)
    return a


def test_ranges():
    """linspace, logspace and geomspace with constant and symbolic num, arrays of starts, both endpoints."""
    start, stop, n = T.dvector("start"), T.dscalar("stop"), T.lscalar("n")
    cases = [
        ("linspace", lambda start, stop, n: T.linspace(0, 1, 5), lambda start, stop, n: np.linspace(0, 1, 5)),
        ("linspace sym", lambda start, stop, n: T.linspace(start, stop, n),
         lambda start, stop, n: np.linspace(start, stop, n)),
        ("linspace open", lambda start, stop, n: T.linspace(start, stop, n, endpoint=False, axis=-1),
         lambda start, stop, n: np.linspace(start, stop, n, endpoint=False, axis=-1)),
        ("linspace step", lambda start, stop, n: T.linspace(0.0, stop, n, retstep=True)[1],
         lambda start, stop, n: np.linspace(0.0, stop, n, retstep=True)[1]),
        ("linspace end/steps", lambda start, stop, n: T.linspace(1.0, end=stop, steps=4),
         lambda start, stop, n: np.linspace(1.0, stop, 4)),
        ("linspace f32", lambda start, stop, n: T.linspace(0, stop, 7, dtype="float32"),
         lambda start, stop, n: np.linspace(0, stop, 7, dtype="float32")),
        ("linspace 1", lambda start, stop, n: T.linspace(2.0, stop, 1),
         lambda start, stop, n: np.linspace(2.0, stop, 1)),
        ("logspace", lambda start, stop, n: T.logspace(start, 2.0, n, base=2.0),
         lambda start, stop, n: np.logspace(start, 2.0, n, base=2.0)),
        ("logspace open", lambda start, stop, n: T.logspace(0, stop, 5, endpoint=False),
         lambda start, stop, n: np.logspace(0, stop, 5, endpoint=False)),
        ("geomspace", lambda start, stop, n: T.geomspace(1, 1000, n), lambda start, stop, n: np.geomspace(1, 1000, n)),
        ("geomspace neg", lambda start, stop, n: T.geomspace(-2.0, -32.0, 5, endpoint=False),
         lambda start, stop, n: np.geomspace(-2.0, -32.0, 5, endpoint=False)),
    ]
    values = [(reversed_view(np.array([0.5, -1.0, 3.0])), 2.5, 4), (np.array([1.0]), 0.5, 1),
              (reversed_view(np.array([0.5, 1.0])), -3.0, 0)]
    run_cases([start, stop, n], cases, values)


def test_constructors():
    """row, col, tensor5-7, their dtype forms and PyTensor's plurals."""
    assert T.row("r").type.shape == (1, None) and T.col().type.shape == (None, 1)
    assert T.frow().dtype == "float32" and T.lcol().type.shape == (None, 1) and T.zrow().dtype == "complex128"
    assert T.tensor5().ndim == 5 and T.itensor6().dtype == "int32" and T.dtensor7("x").ndim == 7
    with pytest.raises(ValueError):
        T.row(shape=(2, None))
    x, y = T.dmatrices("x", "y")
    assert (x.name, y.name, x.dtype) == ("x", "y", "float64")
    assert [v.name for v in T.fvectors("ab")] == ["a", "b"]          # PyTensor: one variable per character
    assert [v.name for v in T.lscalars("i, j k")] == ["i", "j", "k"]  # names separated by commas/spaces
    assert T.matrices("z").name == "z"                               # one name: one variable
    three = T.tensor5s(3)
    assert len(three) == 3 and all(v.ndim == 5 and v.name is None for v in three)
    assert T.drows(2)[0].type.shape == (1, None) and T.icols("c").dtype == "int32"


def test_construct_grads():
    """One verify_grad under the C linker through the differentiable construction functions."""
    def fun(m, v, val):
        parts = [T.diag(v), T.diag(v, -2), T.diag(m), T.diagonal(m, 1), T.trace(m, -1), T.tril(m), T.triu(m, 1),
                 T.outer(v, m), T.fill_diagonal(m, val.sum()), T.full_like(m, 2.0) * m, T.eye(3, 4) * m,
                 T.fill_diagonal_offset(m, val[0], 1), T.fill_diagonal_offset(m.T, val[1], -2), T.diagonal(m.T, -1)]
        return T.concatenate([p.flatten() for p in parts])

    rng = np.random.default_rng(2)
    verify_grad(fun, [rng.standard_normal((3, 4)), rng.standard_normal(3), rng.standard_normal(2)],
                mode=Mode(linker="c"))


@pytest.mark.parametrize("linker", ["py", "c"])
def test_mgrid_and_ogrid_match_numpy(linker):
    """PyTensor's mgrid/ogrid: a list of grids (numpy's mgrid stacks them), each of its range's
    dtype; symbolic bounds; a count step Nj as numpy's (inclusive)."""
    n = T.lscalar("n")
    dense = T.mgrid[0:5, 1:7:2]
    open_ = T.ogrid[0:5, 1:7:2]
    outs = dense + open_ + [T.mgrid[0:n]] + T.mgrid[0:1:5j, -2:n] + [T.mgrid[0.5:2.0:0.5, -1:1][0]]
    got = ffigraph.function([n], outs, mode=Mode(linker=linker))(3)
    for g, want in zip(got[:2], np.mgrid[0:5, 1:7:2]):
        np.testing.assert_array_equal(g, want)
        assert g.dtype == np.int64
    for g, want in zip(got[2:4], np.ogrid[0:5, 1:7:2]):
        assert g.shape == want.shape
        np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(got[4], np.arange(3))
    np.testing.assert_allclose(got[5], np.mgrid[0:1:5j, -2:3][0], rtol=1e-15)
    np.testing.assert_array_equal(got[6], np.mgrid[0:1:5j, -2:3][1])
    np.testing.assert_array_equal(got[7], np.mgrid[0.5:2.0:0.5, -1:1][0])
    assert repr(T.mgrid) == "mgrid" and repr(T.ogrid) == "ogrid"
    with pytest.raises(TypeError, match="must be a slice"):
        T.mgrid[0:2, 3]


@pytest.mark.parametrize("linker", ["py", "c"])
def test_diagonal_ops(linker):
    """PyTensor's ops: ExtractDiag (a view in C), FillDiagonal of an n-d cube, FillDiagonalOffset's
    checks; against numpy."""
    from ffigraph.tensor.extra_ops import FillDiagonal, FillDiagonalOffset

    mode = Mode(linker=linker)
    x, c, val, off = T.dtensor3("x"), T.dtensor3("c"), T.dscalar("val"), T.bscalar("off")
    d = T.diagonal(x, 2, 2, 0)
    assert isinstance(d.owner.op, T.ExtractDiag) and d.owner.op.view_map == {0: [0]}
    assert T.ExtractDiag(1, 0, 1)(T.tensor(shape=(3, 5, None))).type.shape == (None, 3)
    filled = T.fill_diagonal(c, val)
    assert isinstance(filled.owner.op, FillDiagonal)
    assert isinstance(T.fill_diagonal_offset(x[0], val, off).owner.op, FillDiagonalOffset)
    f = function = ffigraph.function([x, c, val, off], [d * 1, filled, T.fill_diagonal_offset(x[0], val, off)],
                                     mode=mode)
    xv = np.arange(24.0).reshape(2, 3, 4)[:, ::-1, ::-1]
    cube = np.zeros((3, 3, 3))
    got = f(xv, cube, 7.0, -1)
    np.testing.assert_array_equal(got[0], np.diagonal(xv, 2, 2, 0))
    want = cube.copy()
    np.fill_diagonal(want, 7.0)
    np.testing.assert_array_equal(got[1], want)
    np.testing.assert_array_equal(got[2], _filled_offset(xv[0], 7.0, -1))
    np.testing.assert_array_equal(f(xv, cube, 7.0, 127)[2], xv[0])   # past the last column: nothing
    np.testing.assert_array_equal(f(xv, cube, 7.0, -128)[2], xv[0])
    with pytest.raises(ValueError, match="all lengths equal"):
        function(xv, np.zeros((3, 2, 3)), 1.0, 0)
    with pytest.raises(TypeError, match="exactly two dimensions"):
        T.fill_diagonal_offset(x, val, off)
    with pytest.raises(TypeError, match="integer"):
        T.fill_diagonal_offset(x[0], val, val)
    with pytest.raises(TypeError, match="dtype"):
        T.fill_diagonal(T.fmatrix(), val)   # a float64 value does not go into float32 silently
