"""Gradients and integers, as PyTensor has them (its tests/test_gradient.py: test_grad_int, test_dxdx,
test_known_grads, test_known_grads_integers, test_undefined_cost_grad).

Gradients are always float. An integer variable has one like a float variable: the gradient w.r.t.
an integer input equals the one w.r.t. a float input of the same values; the gradient of a cost
w.r.t. itself is 1 (in floatX for an integer cost). Ops that are piecewise constant (casts to an
int, comparisons, floor/round, argmax, integer arithmetic, integer sums) give zero gradients through
their own ``L_op``. Each test compiles its graphs into one function and compares with numpy.
"""
from collections import OrderedDict

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function, grad
from ffigraph.gradient import NullType, NullTypeGradError


def _sigmoid(z):
    return np.exp(-np.logaddexp(0.0, -z))


def test_grad_int_equals_grad_float(mode):
    """PyTensor's test_grad_int: d sum(sigmoid(X W + b)) / dX for an int32 X equals the float64 one
    (and numpy's); and the issue's dot(X_int, W).sum(), which was all zeros."""
    W, b = T.dmatrix("W"), T.dvector("b")

    def grad_of(X):
        return grad(T.sigmoid(T.dot(X, W) + b).sum(), X)

    Xi, Xf, Xj = T.imatrix("Xi"), T.dmatrix("Xf"), T.imatrix("Xj")
    gi, gf, gj = grad_of(Xi), grad_of(Xf), grad(T.dot(Xj, W).sum(), Xj)
    assert (gi.dtype, gf.dtype, gj.dtype) == ("float64", "float64", "float64")
    f = function([Xi, Xf, Xj, W, b], [gi, gf, gj], mode=mode)
    rng = np.random.default_rng([2012, 9, 5])
    X = (rng.standard_normal((5, 3)) * 3.0).astype("int32")   # (PyTensor's test scales by 127: saturated)
    Wv, bv = rng.standard_normal((3, 4)), rng.standard_normal(4)
    got_int, got_float, got_dot = f(X, X.astype("float64"), X, Wv, bv)
    h = _sigmoid(X.astype("float64") @ Wv + bv)
    np.testing.assert_allclose(got_int, (h * (1 - h)) @ Wv.T, rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(got_int, got_float)
    np.testing.assert_allclose(got_dot, np.ones((5, 4)) @ Wv.T, rtol=1e-14)


def test_piecewise_constant_ops_give_zeros(mode):
    """Casts to ints, comparisons, floor, round, argmax, integer arithmetic and integer sums give zero
    (and float) gradients; a float path from an integer variable gives its gradient."""
    x, i, j, v = T.dvector("x"), T.iscalar("i"), T.iscalar("j"), T.ivector("v")
    fx = T.cast(x, "float64")
    cases = [
        # (label, gradient, expected from the values below)
        ("cast to int", grad(T.sum(T.cast(x, "int32") * 1.5), x), lambda xv, *_: np.zeros(3)),
        ("comparison", grad(T.sum(T.cast(T.gt(x, 0), "float64") * x), x), lambda xv, *_: (xv > 0) * 1.0),
        ("floor and round", grad(T.sum(T.floor(x) * x + T.round(x)), x), lambda xv, *_: np.floor(xv)),
        ("argmax", grad(T.cast(T.argmax(x), "float64") + T.sum(fx), x), lambda xv, *_: np.ones(3)),
        ("integer arithmetic", grad(T.cast(i * 2 + i // 3 - j, "float64"), i), lambda *_: 0.0),
        ("integer true_div", grad(i / j, i), lambda *_: 0.0),   # PyTensor's TrueDiv: int / int is flat
        ("cast int to float", grad(T.cast(i, "float64") * 2.5 + T.cast(j, "float32"), [i, j]), lambda *_: [2.5, 1.0]),
        ("exp of an int", grad(T.exp(i), i), lambda xv, iv, jv, vv: np.exp(iv)),
        ("int sum", grad(T.cast(T.sum(v), "float64"), v), lambda *a: np.zeros(4)),
        ("int sum into float64", grad(T.sum(v, dtype="float64") * 2, v), lambda *a: np.full(4, 2.0)),
        ("int mean", grad(T.mean(v), v), lambda *a: np.zeros(4)),   # an int64 sum over a count
        ("int mean of a float64 sum", grad(T.mean(v, dtype="float64"), v), lambda *a: np.full(4, 0.25)),
        ("int subtensor", grad(T.cast(v[1], "float64"), v), lambda *a: np.zeros(4)),
        ("int max", grad(T.cast(T.max(v), "float64") * 3, v), lambda xv, iv, jv, vv: 3.0 * (np.arange(4) == 2)),
    ]
    outs = []
    for _, g, _ in cases:
        outs += g if isinstance(g, list) else [g]
    for g in outs:
        assert g.dtype in ("float32", "float64"), g.dtype
    f = function([x, i, j, v], outs, mode=mode, on_unused_input="ignore")
    values = (np.array([-1.5, 0.25, 2.5]), np.int32(7), np.int32(2), np.array([3, -1, 9, 4], dtype="int32"))
    got = iter(f(*values))
    for label, g, ref in cases:
        want = ref(*values)
        for w in (want if isinstance(g, list) else [want]):
            np.testing.assert_allclose(next(got), w, rtol=1e-15, err_msg=label)


def test_grad_of_an_int_cost_wrt_itself_is_one(mode):
    """PyTensor's test_dxdx: 1 in floatX; and known_grads on an int variable (test_known_grads_integers)."""
    i, k = T.iscalar("i"), T.iscalar("k")
    g = grad(i, i)
    assert g.dtype == ffigraph.config.floatX
    gv = T.dscalar("gv")
    known = grad(cost=None, known_grads={k: gv}, wrt=k)
    assert known.dtype == "float64"
    f = function([i, k, gv], [g, known], mode=mode, on_unused_input="ignore")
    one, back = f(12, -3, 0.6)
    assert one == 1.0 and back == 0.6


def test_known_grads_integer_index(mode):
    """PyTensor's test_known_grads: the gradient from ``known_grads`` given at each layer of a graph
    with an integer index t (into an int arange and a float vector) equals the gradient of the cost
    (and numpy's). Its layer [ct, x, ft] is the issue's ``known_grads={T.arange(10)[t]: g}``, which
    raised TypeError."""
    full_range = T.arange(10)
    x, t, coeffs = T.dscalar("x"), T.iscalar("t"), T.dvector("c")
    ft = full_range[t]
    ct = coeffs[t]
    p = x ** ft
    y = ct * p
    cost = T.sqr(y)
    layers = [[cost], [y], [ct, p], [ct, x, ft], [coeffs, t, full_range, x]]
    inputs = [coeffs, t, x]
    true_grads = grad(cost, inputs, disconnected_inputs="ignore")
    outs = list(true_grads)
    for layer in layers:
        first = grad(cost, layer, disconnected_inputs="ignore")
        known = OrderedDict(zip(layer, first))
        outs += grad(cost=None, known_grads=known, wrt=inputs, disconnected_inputs="ignore")
    f = function(inputs, outs, mode=mode, on_unused_input="ignore")
    rng = np.random.default_rng([2012, 11, 15])
    cv, tv, xv = rng.standard_normal(10), np.int32(rng.integers(10)), 1.3
    got = f(cv, tv, xv)
    # numpy: cost = (c[t] x^t)^2
    yv = cv[tv] * xv ** tv
    want_c = np.zeros(10)
    want_c[tv] = 2 * yv * xv ** tv
    want = [want_c, 0.0, 2 * yv * cv[tv] * tv * xv ** (tv - 1)]
    assert got[1].dtype == ffigraph.config.floatX   # t only indexes: disconnected, zeros in floatX
    for k in range(len(layers) + 1):
        for a, b, name in zip(got[3 * k:3 * k + 3], want, ("c", "t", "x")):
            np.testing.assert_allclose(a, b, rtol=1e-12, err_msg="layer %d, d/d%s" % (k - 1, name))


def test_undefined_cost_grad():
    """PyTensor's test_undefined_cost_grad: an undefined known gradient of an int cost is undefined
    for its inputs; and a known gradient must be float."""
    x, y = T.iscalar("x"), T.iscalar("y")
    cost = x + y
    with pytest.raises(NullTypeGradError):
        grad(cost, [x, y], known_grads={cost: NullType()()})
    with pytest.raises(TypeError, match="always float"):
        grad(None, x, known_grads={cost: T.constant(1)})
