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
