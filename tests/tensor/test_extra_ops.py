"""cumsum, cumprod, diff, searchsorted, bincount, unique, argwhere, median and ptp against numpy.

Each test compiles one function holding every case (dtypes, axes, a reversed view, empty and 0-d
inputs, NaN and inf) under the C linker and checks the Python linker agrees.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.gradient import verify_grad
from ffigraph.tensor.extra_ops import Unique

C, PY = Mode(linker="c"), Mode(linker="py")

pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")


def both(inputs, outputs, *values, mode=C):
    """The outputs under ``mode``, checked against the Python linker's (dtypes and shapes too)."""
    got = function(inputs, outputs, mode=mode)(*values)
    ref = function(inputs, outputs, mode=PY)(*values)
    for k, (g, r) in enumerate(zip(got, ref)):
        assert g.dtype == r.dtype and g.shape == r.shape, k
        rtol = {"float64": 1e-12, "float32": 1e-5}.get(g.dtype.name, 0)   # the result's dtype: exact for ints
        np.testing.assert_allclose(g, r, rtol=rtol, err_msg="output %d" % k)
    return got


def check(got, refs, rtol=1e-12):
    for k, (g, r) in enumerate(zip(got, refs)):
        r = np.asarray(r)
        assert g.shape == r.shape, (k, g.shape, r.shape)
        assert g.dtype == r.dtype, (k, g.dtype, r.dtype)
        np.testing.assert_allclose(g, r, rtol=rtol, err_msg="output %d" % k)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "bool"])
def test_cumsum_cumprod_diff(dtype):
    rng = np.random.default_rng(0)
    x3 = T.tensor(dtype, (None, None, None), name="x3")
    e = T.tensor(dtype, (None, None), name="e")
    s = T.tensor(dtype, (), name="s")
    if dtype == "bool":
        a3 = rng.random((3, 4, 5)) < 0.5
    elif dtype.startswith("float"):
        a3 = rng.uniform(-2, 2, (3, 4, 5)).astype(dtype)
    else:
        a3 = rng.integers(0, 3, (3, 4, 5)).astype(dtype)
    a3 = a3[::-1, :, ::-1]                                    # negative strides
    ae, a0 = np.zeros((0, 4), dtype=dtype), np.asarray(2, dtype=dtype)
    outs, refs = [], []
    for axis in (0, 1, 2, -1, None):
        outs += [T.cumsum(x3, axis), T.cumprod(x3, axis)]
        refs += [np.cumsum(a3, axis), np.cumprod(a3, axis)]
    for axis in (0, 1, None):
        outs += [T.cumsum(e, axis), T.cumprod(e, axis)]
        refs += [np.cumsum(ae, axis), np.cumprod(ae, axis)]
    outs += [T.cumsum(s), T.cumprod(s)]
    refs += [np.cumsum(a0), np.cumprod(a0)]
    for n, axis in ((1, -1), (2, 0), (0, 1), (3, 2), (1, -3)):
        outs.append(T.diff(x3, n, axis))
        refs.append(np.diff(a3, n, axis))
    outs.append(T.diff(e, 1, 0))
    refs.append(np.diff(ae, 1, 0))
    got = both([x3, e, s], outs, a3, ae, a0)
    check(got, refs, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_searchsorted():
    rng = np.random.default_rng(1)
    x, v = T.dvector("x"), T.dmatrix("v")
    xi, s0, ve = T.lvector("xi"), T.dscalar("s0"), T.dvector("ve")
    sorter = T.lvector("sorter")
    ax = np.array([-np.inf, -1.0, 0.0, 0.0, 0.0, 2.5, 7.0, np.inf, np.nan, np.nan])
    av = np.array([[-np.inf, -2, 0, 0.0], [2.5, 3, np.inf, np.nan], [8, -1, 7, 1e300]])[::-1]
    axi = np.array([1, 3, 3, 3, 9], dtype=np.int64)
    shuffled = rng.permutation(ax)
    order = np.argsort(shuffled, kind="stable")
    outs = [T.searchsorted(x, v), T.searchsorted(x, v, side="right"), T.searchsorted(xi, v),
            T.searchsorted(xi, v, "right"), T.searchsorted(x, s0), T.searchsorted(x, ve),
            T.searchsorted(ve, v), T.searchsorted(x[::-1], v, sorter=T.arange(9, -1, -1))]
    got = both([x, v, xi, s0, ve], outs, ax, av, axi, 2.5, np.zeros(0))
    refs = [np.searchsorted(ax, av), np.searchsorted(ax, av, "right"), np.searchsorted(axi, av),
            np.searchsorted(axi, av, "right"), np.searchsorted(ax, 2.5), np.searchsorted(ax, np.zeros(0)),
            np.searchsorted(np.zeros(0), av), np.searchsorted(ax[::-1], av, sorter=np.arange(9, -1, -1))]
    check(got, refs)
    for g in got:
        assert g.dtype == np.int64
    f = function([x, v, sorter], T.searchsorted(x, v, "right", sorter=sorter), mode=C)
    np.testing.assert_array_equal(f(shuffled, av, order), np.searchsorted(shuffled, av, "right", sorter=order))
    # a sorter entry out of range: a clear error, and the function still works afterwards
    with pytest.raises(ValueError, match="sorter index 10"):
        f(shuffled, av, np.where(order == 0, 10, order))
    with pytest.raises(ValueError, match="sorter has 3 entries"):
        f(shuffled, av, order[:3])
    np.testing.assert_array_equal(f(shuffled, av, order), np.searchsorted(shuffled, av, "right", sorter=order))
    with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
        T.searchsorted(x, v, side="middle")
    with pytest.raises(ValueError, match="vector"):
        T.searchsorted(v, x)


def test_bincount():
    x, xu, xb = T.lvector("x"), T.tensor("uint8", (None,), name="xu"), T.tensor("bool", (None,), name="xb")
    w, w32, wi = T.dvector("w"), T.fvector("w32"), T.lvector("wi")
    ax = np.array([3, 0, 1, 3, 3, 7, 0], dtype=np.int64)[::-1]
    axu, axb = ax.astype(np.uint8), ax > 2
    aw = np.linspace(0.5, 3.5, 7)
    outs = [T.bincount(x), T.bincount(x, minlength=12), T.bincount(xu, w), T.bincount(xb, w32, minlength=1),
            T.bincount(x, wi), T.bincount(x[:0]), T.bincount(x[:0], minlength=3), T.bincount(x, assert_nonneg=True)]
    got = both([x, xu, xb, w, w32, wi], outs, ax, axu, axb, aw, aw.astype(np.float32), ax * 2)
    refs = [np.bincount(ax), np.bincount(ax, minlength=12), np.bincount(axu, aw),
            np.bincount(axb, aw.astype(np.float32), minlength=1).astype(np.float32),
            np.bincount(ax, ax * 2), np.bincount(ax[:0]), np.bincount(ax[:0], minlength=3), np.bincount(ax)]
    check(got, refs)
    # negative values: a ValueError naming the value, in C and in Python; the function still works
    for mode in (C, PY):
        f = function([x], T.bincount(x), mode=mode)
        with pytest.raises(ValueError, match="negative values, found -2 at position 1"):
            f(np.array([1, -2, 3]))
        np.testing.assert_array_equal(f(np.array([1, 1, 3])), [0, 2, 0, 1])
    f = function([x, w], T.bincount(x, w), mode=C)
    with pytest.raises(ValueError, match="3 weights for 2 values"):
        f(np.array([1, 2]), np.ones(3))
    with pytest.raises(ValueError, match="minlength must not be negative"):
        T.bincount(x, minlength=-1)
    with pytest.raises(TypeError, match="integers"):
        T.bincount(w)


def test_bincount_weights_grad():
    x = np.array([2, 0, 2, 1, 4])
    verify_grad(lambda w: T.bincount(x, w, minlength=6), [np.linspace(1, 2, 5)], mode=C)


def test_unique_is_python_only():
    rng = np.random.default_rng(3)
    x, m = T.dvector("x"), T.lmatrix("m")
    ax = np.round(rng.normal(size=20))
    am = rng.integers(0, 2, (6, 3))
    cpy = Mode(linker="c|py")
    outs = [T.unique(x), *T.unique(x, True, True, True), *T.unique(m, return_inverse=True, axis=0),
            *T.unique(m, return_counts=True, axis=-1), *T.unique(m, return_index=True, return_inverse=True)]
    got = both([x, m], outs, ax, am, mode=cpy)
    refs = [np.unique(ax), *np.unique(ax, True, True, True), *np.unique(am, return_inverse=True, axis=0),
            *np.unique(am, return_counts=True, axis=1), *np.unique(am, return_index=True, return_inverse=True)]
    refs = [r if k in (5, 7) else np.asarray(r).reshape(-1) for k, r in enumerate(refs)]   # (inverses flat)
    check(got, [np.asarray(r, dtype=g.dtype) for g, r in zip(got, refs)])
    node = T.unique(x).owner
    with pytest.raises(MethodNotDefined, match="Python-only"):
        node.op.c_code(node, "n", ["x"], ["z"], {})
    with pytest.raises(ValueError, match="axis"):
        Unique(axis=-1)


def test_argwhere():
    a, b, s = T.dmatrix("a"), T.tensor("bool", (None, None, None), name="b"), T.dscalar("s")
    aa = np.array([[0, 1.5, 0], [2, 0, np.nan]])[:, ::-1]
    ab = np.random.default_rng(4).random((2, 3, 4)) < 0.3
    outs = [T.argwhere(a), T.argwhere(a[0]), T.argwhere(b), T.argwhere(s), T.argwhere(a[:0])]
    got = both([a, b, s], outs, aa, ab, 3.0)
    check(got, [np.argwhere(aa), np.argwhere(aa[0]), np.argwhere(ab), np.argwhere(3.0), np.argwhere(aa[:0])])
    got = function([s], T.argwhere(s), mode=C)(0.0)
    assert got.shape == np.argwhere(0.0).shape


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_median_ptp(dtype):
    rng = np.random.default_rng(5)
    x3, e, s = T.tensor(dtype, (None,) * 3, name="x3"), T.tensor(dtype, (None, None), name="e"), T.tensor(dtype, ())
    a3 = rng.integers(-5, 5, (4, 5, 6)).astype(dtype)[:, ::-1]
    if dtype.startswith("float"):
        a3[1, 2, 3], a3[2, 0, 0], a3[3, 1, 1] = np.nan, np.inf, -np.inf
    ae, a0 = np.zeros((0, 3), dtype=dtype), np.asarray(4, dtype=dtype)
    outs, refs = [], []
    for axis in (None, 0, 1, 2, -1, (0, 2), (2, 0, 1)):
        outs += [T.median(x3, axis), T.ptp(x3, axis)]
        refs += [np.median(a3, axis), np.ptp(a3, axis)]
    outs += [T.median(e, 0), T.median(e, 1), T.median(e), T.median(s), T.ptp(s), T.median(x3[:, :, :5], -1)]
    refs += [np.median(ae, 0), np.median(ae, 1), np.median(ae), np.median(a0), np.ptp(a0), np.median(a3[:, :, :5], -1)]
    got = both([x3, e, s], outs, a3, ae, a0)
    check(got, [np.asarray(r) for r in refs], rtol=1e-5 if dtype == "float32" else 1e-12)


def test_gradients():
    rng = np.random.default_rng(6)
    point = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1, 1], (3, 4))   # no zeros: cumprod divides by x
    for axis in (0, 1, None):
        verify_grad(lambda x, axis=axis: T.cumsum(x, axis), [point], mode=C)
        verify_grad(lambda x, axis=axis: T.cumprod(x, axis), [point], mode=C)
        verify_grad(lambda x, axis=axis: T.ptp(x, axis), [point], mode=C)
    verify_grad(lambda x: T.diff(x, 2, 1) + T.diff(x, 1, 0).sum(), [point], mode=C)
    verify_grad(lambda x: T.median(x, 1), [point], mode=C)


def test_bad_axes():
    x = T.dmatrix("x")
    for fn in (T.cumsum, T.cumprod):
        with pytest.raises(ValueError, match="out of range"):
            fn(x, 2)
    with pytest.raises(ValueError, match="out of range"):
        T.diff(x, 1, -3)
    with pytest.raises(ValueError, match="at least one dimensional"):
        T.diff(T.dscalar())
    with pytest.raises(ValueError, match="order"):
        T.diff(x, -1)
    with pytest.raises(ValueError, match="out of range"):
        T.median(x, 5)
    with pytest.raises(ValueError, match='unknown mode'):
        T.CumOp(0, "max")
