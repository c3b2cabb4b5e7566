"""Programs the program fuzzer (tools/fuzz/programs.py) found wrong, each reduced to the few
outputs that still fail together and checked against numpy by hand.

Replay the original: ``python tools/fuzz/programs.py --replay SEED:INDEX`` (on the tree it was found on).
"""
from __future__ import annotations

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_a_value_and_its_gradient_beside_another_programs_gradient(linker):
    """Seed 3, programs 4176 and 4191 in one function. On 641989e the fuzzer's batch raised
    KeyError: Shape(Elemwise{sqrt}.out) under py, and this reduction raises "SumToShape: cannot
    sum g of shape (2,) to shape (0,)" under py and cvm: the default rewrites order a Shape before
    the fused node it reads (the cycle of issue 44, defect 6). Each program's value and gradient
    are outputs; the two share only the input q."""
    q, w = T.fvector("q"), T.fmatrix("w")
    w1 = np.array([0.75, 1.25])
    w2 = np.array([1.5, 0.5])
    a = T.sqrt(T.cos(q))
    b = T.dot(w, T.sin(q))
    ga = ffigraph.grad(T.sum(a * T.constant(w1)), q)
    gw, gq = ffigraph.grad(T.sum(b * T.constant(w2)), [w, q])
    f = ffigraph.function([q, w], [a, ga, b, gw, gq], mode=Mode(linker=linker))
    qv = np.array([0.3, -0.7], "float32")
    wv = np.array([[1.0, -2.0], [0.5, 3.0]], "float32")
    got = f(qv, wv)
    q64, w64 = qv.astype("float64"), wv.astype("float64")
    want = [np.sqrt(np.cos(q64)), w1 * -np.sin(q64) / (2 * np.sqrt(np.cos(q64))), w64 @ np.sin(q64),
            np.outer(w2, np.sin(q64)), (w64.T @ w2) * np.cos(q64)]
    for g, e in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, e, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_a_min_minus_its_operand_beside_a_broadcast_difference(linker):
    """Seed 3, programs 397 and 404 in one function. On 641989e the fuzzer's batch raised
    KeyError: DimShuffle{x,0}(Composite{cos(i0), ...}) under py, and this reduction raises
    "SumToShape: the target shape has 0 entries but g of shape (2,) has 1 dimensions" (py) or
    "cannot sum g of shape (2,) to shape (0,)" (cvm): as above, a shape read before the fused
    node that writes it."""
    q, u = T.fvector("q"), T.dcol("u")
    w1 = np.array([0.6, 1.4])
    w2 = np.array([[0.5, 1.5], [1.25, 0.75]])
    a = T.sqr(T.cos(T.sin(q)))
    first = T.min(a) - a
    g1 = ffigraph.grad(T.sum(first * T.constant(w1)), q)
    second = u - T.cos(q)
    gu, gq = ffigraph.grad(T.sum(second * T.constant(w2)), [u, q])
    f = ffigraph.function([q, u], [first, g1, second, gu, gq], mode=Mode(linker=linker))
    qv = np.array([0.4, -1.1], "float32")
    uv = np.array([[2.0], [-3.0]])
    got = f(qv, uv)
    q64 = qv.astype("float64")
    av = np.cos(np.sin(q64)) ** 2
    dadq = -2 * np.cos(np.sin(q64)) * np.sin(np.sin(q64)) * np.cos(q64)
    dcost_da = -w1 + w1.sum() * (np.arange(2) == np.argmin(av))
    want = [av.min() - av, dcost_da * dadq, uv - np.cos(q64), w2.sum(axis=1, keepdims=True),
            (w2 * np.sin(q64)).sum(axis=0)]
    for g, e, dtype in zip(got, want, ["float32", "float32", "float64", "float64", "float32"]):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, e, rtol=2e-6 if dtype == "float32" else 1e-12, atol=1e-6)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_dot_of_a_zero_and_an_infinity_is_nan_under_every_linker():
    """Seed 20261203, program 3733 (found on PyPy, the same on CPython): einsum('i,j->ij') of
    max(u) = -0.0 and a vector holding -inf, which the rewrites turn into a Dot of a (1, 1) and a
    (1, 2) matrix. 0 * inf is NaN (IEEE, numpy's matmul and einsum, the C linkers); the py
    linker's Dot.perform called np.dot, whose 1-element operand becomes a BLAS scale by 0 that
    writes zeros (641989e: [[0, 0]] under py, [[nan, 0]] under c)."""
    x, y = T.dmatrix("x"), T.dmatrix("y")
    v, m = T.dvector("v"), T.dmatrix("m")
    outs = [T.dot(x, y), T.dot(v, m), T.einsum("i,j->ij", T.max(x, axis=0), y[0])]
    xv = np.array([[-0.0]])
    yv = np.array([[-np.inf, 0.58]])
    vv = np.array([0.0, 2.0])
    mv = np.array([[np.inf, 1.0], [1.0, np.nan]])
    with np.errstate(invalid="ignore"):
        want = [np.array([[np.nan, 0.0]]), np.array([np.nan, np.nan]), np.array([[np.nan, -0.0]])]
    for linker in ("py", "cvm"):
        f = ffigraph.function([x, y, v, m], outs, mode=Mode(linker=linker), on_unused_input="ignore")
        for got, e in zip(f(xv, yv, vv, mv), want):
            np.testing.assert_array_equal(got, e)   # NaN where NaN, values exact


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_a_self_dot_beside_an_outer_product_of_the_same_input(linker):
    """Seed 3, programs 3219 and 3233 in one function: dot(q, sin(q)) and tanh(outer(cos(q), v)),
    with gradients. On 641989e the fuzzer's batch raised KeyError: Composite{cos(i1), ...} under
    py; this reduction raises "TypeError: unsupported operand type(s) for *: 'float' and
    'NoneType'" (py) or "input shapes cannot be broadcast together: (0,) and (3,)" (cvm): a fused
    Composite reading a value not computed yet."""
    q, v = T.fvector("q"), T.dvector("v")
    w0 = 0.8
    w1 = np.array([[0.6], [1.2], [0.9]])
    a = T.dot(q, T.sin(q))
    ga = ffigraph.grad(a * w0, q)
    b = T.tanh(T.einsum("i,j->ij", T.cos(q), v))
    gv, gq = ffigraph.grad(T.sum(b * T.constant(w1)), [v, q])
    f = ffigraph.function([q, v], [a, ga, b, gv, gq], mode=Mode(linker=linker))
    qv = np.array([0.2, -0.5, 1.1], "float32")
    vv = np.array([0.7])
    got = f(qv, vv)
    q64 = qv.astype("float64")
    bv = np.tanh(np.outer(np.cos(q64), vv))
    db = w1 * (1 - bv ** 2)
    want = [q64 @ np.sin(q64), w0 * (np.sin(q64) + q64 * np.cos(q64)), bv, db.T @ np.cos(q64),
            -np.sin(q64) * (db @ vv)]
    for g, e, dtype in zip(got, want, ["float32", "float32", "float64", "float64", "float32"]):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, e, rtol=2e-6 if dtype == "float32" else 1e-12, atol=1e-6)


@pytest.mark.parametrize("linker", ["c", "cvm"])
def test_a_fused_node_never_overwrites_an_input_another_output_reads_broadcast(linker):
    """Seed 20261204, program 1918 (found on PyPy, the same under CPython and on 641989e): with its
    gradient beside it, ``t - -(sigmoid(u) * abs(t))[[-2]]`` fuses into one node with two outputs
    of different shapes, ``neg(i0)`` of shape (1, 2, 2) and ``t - neg(i0)`` of shape (3, 2, 2). The
    inplace rewrite let the small output overwrite i0, which the large output's loop then read
    broadcast, negated: every row after the first came out wrong."""
    u, t = T.dmatrix("u"), T.dtensor3("t")
    rng = np.random.default_rng(1918)
    uv, tv = rng.normal(size=(2, 1)), rng.normal(size=(3, 2, 2))
    weights = rng.uniform(0.5, 1.5, size=(3, 2, 2))
    out = t - (-(T.sigmoid(u) * abs(t))[[-2]])
    gt = ffigraph.grad((out * T.constant(weights)).sum(), t)
    value, grad_t = ffigraph.function([u, t], [out, gt], mode=Mode(linker=linker))(uv, tv)
    sig = 1 / (1 + np.exp(-uv))
    np.testing.assert_allclose(value, tv + (sig * np.abs(tv))[[-2]], rtol=1e-12)
    want = weights.copy()
    want[-2] += weights.sum(axis=0) * sig * np.sign(tv[-2])
    np.testing.assert_allclose(grad_t, want, rtol=1e-12)
