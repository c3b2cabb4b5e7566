"""``sort`` and ``argsort`` against numpy (stable order, NaN last), C and Python linkers.

One compiled function per dtype covers every axis (None and negative ones included), a
reversed view, an empty array, a 0-d input and lanes long enough for the merge passes.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.gradient import verify_grad

C, PY = Mode(linker="c"), Mode(linker="py")


def both(inputs, outputs, *values):
    """The outputs under the C linker, checked equal to the Python linker's (dtypes too)."""
    got = function(inputs, outputs, mode=C)(*values)
    ref = function(inputs, outputs, mode=PY)(*values)
    for g, r in zip(got, ref):
        assert g.dtype == r.dtype and g.shape == r.shape
        np.testing.assert_array_equal(g, r)
    return got


def sample(dtype, shape, rng):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 7, shape).astype(dtype)   # many ties
    a = rng.integers(-4, 4, shape).astype(dtype)          # ties, and the special values
    flat = a.reshape(-1)
    if flat.size > 8:
        flat[[1, 5]] = np.nan
        flat[2], flat[7] = np.inf, -np.inf
    return a


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool"])
def test_sort_argsort_match_numpy(dtype):
    rng = np.random.default_rng(1)
    x3 = T.tensor(dtype, (None, None, None), name="x3")
    e = T.tensor(dtype, (None, None), name="e")
    s = T.tensor(dtype, (), name="s")
    long = T.tensor(dtype, (None,), name="long")
    outs, refs = [], []
    a3 = sample(dtype, (3, 5, 40), rng)[::-1]            # a reversed view: negative strides
    for axis in (0, 1, 2, -1, -2, None):
        outs += [T.sort(x3, axis), T.argsort(x3, axis)]
        refs += [np.sort(a3, axis, kind="stable"), np.argsort(a3, axis, kind="stable")]
    ae = np.zeros((0, 4), dtype=dtype)
    for axis in (0, 1, None):
        outs += [T.sort(e, axis), T.argsort(e, axis)]
        refs += [np.sort(ae, axis), np.argsort(ae, axis, kind="stable")]
    a0 = np.asarray(3, dtype=dtype)
    outs += [T.sort(s, None), T.argsort(s, None)]
    refs += [np.sort(a0, None), np.argsort(a0, None)]
    along = sample(dtype, (1000,), rng)
    outs += [T.sort(long, kind="mergesort"), T.argsort(long, kind="heapsort")]
    refs += [np.sort(along, kind="stable"), np.argsort(along, kind="stable")]
    got = both([x3, e, s, long], outs, a3, ae, a0, along)
    for k, (g, r) in enumerate(zip(got, refs)):
        assert g.shape == r.shape, k
        assert g.dtype == (np.int64 if k % 2 else np.dtype(dtype)), k
        np.testing.assert_array_equal(g, r, err_msg="output %d" % k)


def test_sort_grad():
    rng = np.random.default_rng(2)
    point = rng.permutation(24).reshape(4, 6).astype("float64") + rng.random((4, 6)) * 0.5
    for axis in (0, 1, -1, None):
        verify_grad(lambda x, axis=axis: T.sort(x, axis), [point], mode=C)
    verify_grad(lambda x: T.sort(x, 0) * 2 + T.argsort(x, 1), [point], mode=C)


def test_bad_arguments():
    x = T.dmatrix("x")
    with pytest.raises(ValueError, match="out of range"):
        T.sort(x, 2)
    with pytest.raises(ValueError, match="out of range"):
        T.argsort(x, -3)
    with pytest.raises(ValueError, match="order"):
        T.sort(x, order=["a"])
    with pytest.raises(ValueError, match="kind"):
        T.argsort(x, kind="bubble")
    with pytest.raises(ValueError, match="0-d"):
        T.sort(T.dscalar(), -1)
    with pytest.raises(TypeError, match="complex"):
        T.sort(T.zmatrix("z"))
