"""var, std and max_and_argmax (and all/any's axis and keepdims) against numpy, C and Python linkers."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.gradient import verify_grad

C, PY = Mode(linker="c"), Mode(linker="py")

pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning",
                                        "ignore:Degrees of freedom <= 0:RuntimeWarning",
                                        "ignore:divide by zero:RuntimeWarning")


def both(inputs, outputs, *values):
    got = function(inputs, outputs, mode=C)(*values)
    ref = function(inputs, outputs, mode=PY)(*values)
    for k, (g, r) in enumerate(zip(got, ref)):
        assert g.dtype == r.dtype and g.shape == r.shape, k
        rtol = {"float64": 1e-12, "float32": 1e-5}.get(g.dtype.name, 0)   # the result's dtype: exact for ints
        np.testing.assert_allclose(g, r, rtol=rtol, err_msg="output %d" % k)
    return got


def check(got, refs, rtol):
    for k, (g, r) in enumerate(zip(got, refs)):
        r = np.asarray(r)
        assert g.shape == r.shape, (k, g.shape, r.shape)
        assert g.dtype == r.dtype, (k, g.dtype, r.dtype)
        np.testing.assert_allclose(g, r, rtol=rtol, atol=1e-6 if rtol > 1e-9 else 1e-12, err_msg="output %d" % k)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_var_std(dtype):
    rng = np.random.default_rng(0)
    x3, e, s = T.tensor(dtype, (None,) * 3, name="x3"), T.tensor(dtype, (None, None), name="e"), T.tensor(dtype, ())
    if dtype == "bool":
        a3 = rng.random((3, 4, 5)) < 0.5
    else:
        a3 = (rng.normal(size=(3, 4, 5)) * 3 + 10).astype(dtype)
    a3 = a3[::-1, :, ::-1]
    ae, a0 = np.zeros((0, 3), dtype=dtype), np.asarray(2, dtype=dtype)
    outs, refs = [], []
    for axis in (None, 0, 1, -1, (0, 2), (2, 1, 0)):
        for ddof in (0, 1, 2):
            for keepdims in (False, True):
                outs += [T.var(x3, axis, ddof, keepdims), T.std(x3, axis, ddof, keepdims)]
                refs += [np.var(a3, axis, ddof=ddof, keepdims=keepdims), np.std(a3, axis, ddof=ddof, keepdims=keepdims)]
        outs += [T.var(x3, axis, corrected=True), T.std(x3, axis, 1, True, corrected=True)]
        refs += [np.var(a3, axis), np.std(a3, axis, ddof=1, keepdims=True)]
    outs += [T.var(e, 0), T.var(e, 1), T.std(e), T.var(s), T.std(s, ddof=0, keepdims=True)]
    refs += [np.var(ae, 0), np.var(ae, 1), np.std(ae), np.var(a0), np.std(a0, keepdims=True)]
    got = both([x3, e, s], outs, a3, ae, a0)
    if dtype == "float32":
        refs = [np.asarray(r, dtype=np.float32) for r in refs]   # (numpy: float32 too)
    check(got, refs, rtol=1e-4 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool"])
def test_max_and_argmax(dtype):
    rng = np.random.default_rng(1)
    x3, s = T.tensor(dtype, (None,) * 3, name="x3"), T.tensor(dtype, ())
    a3 = rng.integers(0, 4, (3, 4, 5)).astype(dtype)[:, ::-1]   # ties: the first maximum wins
    if dtype.startswith("float"):
        a3[0, 1, 2], a3[2, 3, 4] = np.inf, -np.inf
    a0 = np.asarray(1, dtype=dtype)
    outs, refs = [], []
    for axis in (None, 0, 1, -1, 2):
        for keepdims in (False, True):
            outs += T.max_and_argmax(x3, axis, keepdims)
            refs += [np.max(a3, axis, keepdims=keepdims), np.argmax(a3, axis, keepdims=keepdims)]
    outs += T.max_and_argmax(x3, (0, 2))
    refs += [np.max(a3, (0, 2)), np.argmax(a3.transpose(1, 0, 2).reshape(4, -1), -1)]
    outs += T.max_and_argmax(s)
    refs += [np.max(a0), np.argmax(a0)]
    # all and any take axis and keepdims as PyTensor's
    outs += [T.all(x3, axis=1, keepdims=True), T.any(x3, axis=(0, -1), keepdims=False), T.all(x3), T.any(s)]
    refs += [np.all(a3, 1, keepdims=True), np.any(a3, (0, 2)), np.all(a3), np.any(a0)]
    got = both([x3, s], outs, a3, a0)
    check(got, [np.asarray(r, dtype=np.int64) if np.asarray(r).dtype.kind == "i" and k % 2 and k < len(refs) - 4
                else np.asarray(r) for k, r in enumerate(refs)], rtol=0)


def test_gradients():
    """The 13 gradients in one check: verify_grad projects the concatenated outputs on a random
    direction, so a wrong term shows (one compile of the cost and one of its gradient, not 26)."""
    rng = np.random.default_rng(2)
    point = rng.normal(size=(3, 4))

    def every_statistic(x):
        outs = []
        for axis in (None, 0, 1, (0, 1)):
            outs += [T.var(x, axis), T.std(x, axis, ddof=1, corrected=True), T.max_and_argmax(x, axis)[0]]
        outs.append(T.var(x, 1, ddof=1, keepdims=True) * x)
        return T.concatenate([T.flatten(o) for o in outs])

    verify_grad(every_statistic, [point], mode=C)


def test_bad_arguments():
    x = T.dmatrix("x")
    with pytest.raises(ValueError, match="out of range"):
        T.var(x, 2)
    with pytest.raises(ValueError, match="out of range"):
        T.max_and_argmax(x, -3)
    with pytest.raises(ValueError, match="keepdims is the 4th parameter"):
        T.std(x, 0, True)
    with pytest.raises(TypeError, match="complex"):
        T.var(T.zmatrix("z"))
