"""Blockwise, vectorize_graph and vectorize (PyTensor's), against numpy loops over the batch, under
the C linker (where a Blockwise compiles as a loop: no Blockwise node is left) and Python's."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as pt
from ffigraph import Mode, function
from ffigraph.graph import vectorize_graph
from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op
from ffigraph.tensor.blockwise import Blockwise, parse_signature

LINKERS = {"c": Mode(linker="c"), "py": Mode(linker="py")}


@pytest.fixture(params=sorted(LINKERS))
def mode(request):
    return LINKERS[request.param]


class RowMoments(Op):
    """A core op of one vector: its mean and its centred copy (two outputs), Python only."""
    __props__ = ()
    gufunc_signature = "(n)->(),(n)"

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [pt.dscalar(), pt.dvector()])

    def perform(self, node, inputs, out):
        (x,) = inputs
        out[0][0] = np.asarray(x.mean())
        out[1][0] = x - x.mean()


def test_pytensor_documented_examples(mode):
    x = pt.vector("x")
    y = pt.exp(x) / pt.sum(pt.exp(x))
    new_x = pt.matrix("new_x")
    fn = function([new_x], vectorize_graph(y, replace={x: new_x}), mode=mode)
    want = np.array([[0.09003057, 0.24472847, 0.66524096], [0.66524096, 0.24472847, 0.09003057]])
    np.testing.assert_allclose(fn([[0, 1, 2], [2, 1, 0]]), want, rtol=1e-7)

    def func(x):
        return pt.exp(x) / pt.sum(pt.exp(x))

    vec_func = pt.vectorize(func, signature="(a)->(a)")
    m = pt.matrix("m")
    np.testing.assert_allclose(function([m], vec_func(m), mode=mode)([[0, 1, 2], [2, 1, 0]]), want, rtol=1e-7)


def test_any_op_batches_as_a_loop(mode):
    # sort and cumsum have no batching rule: they become Blockwise nodes, compiled as one loop
    x = pt.dvector("x")
    core = [pt.sort(x)[::-1] * 2 + x.sum(), pt.cumsum(x), x[1:] - x[:-1]]
    m = pt.dtensor3("m")
    batched = vectorize_graph(core, {x: m})
    assert [v.type.ndim for v in batched] == [3, 3, 3]
    f = function([m], batched, mode=mode)
    assert not any(isinstance(n.op, Blockwise) for n in f.maker.fgraph.toposort())
    mv = np.random.default_rng(0).standard_normal((2, 3, 5))[:, ::-1]
    got = f(mv)
    np.testing.assert_allclose(got[0], np.sort(mv, -1)[..., ::-1] * 2 + mv.sum(-1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(got[1], np.cumsum(mv, -1), rtol=1e-14)
    np.testing.assert_allclose(got[2], np.diff(mv, axis=-1), rtol=1e-14)
    # an empty batch keeps the core shapes; a batch of one
    assert [g.shape for g in f(np.zeros((0, 2, 5)))] == [(0, 2, 5), (0, 2, 5), (0, 2, 4)]
    assert [g.shape for g in f(np.ones((1, 1, 3)))] == [(1, 1, 3), (1, 1, 3), (1, 1, 2)]


def test_blockwise_broadcasts_batch_axes(mode):
    a, b = pt.dvector("a"), pt.dvector("b")
    core = pt.dot(pt.sort(a), b)   # a scalar from two vectors
    A, B = pt.dtensor3("A"), pt.dmatrix("B")   # batch (2, 1) and (4,): broadcast to (2, 4)
    out = vectorize_graph(core, {a: A, b: B})
    assert out.type.ndim == 2
    av = np.random.default_rng(1).standard_normal((2, 1, 3))
    bv = np.random.default_rng(2).standard_normal((4, 3))
    want = np.sum(np.sort(av, -1) * bv, -1)
    np.testing.assert_allclose(function([A, B], out, mode=mode)(av, bv), want, rtol=1e-14)
    with pytest.raises(ValueError, match="do not broadcast"):
        vectorize_graph(core, {a: pt.tensor("float64", shape=(2, 3)), b: pt.tensor("float64", shape=(5, 3))})


def test_blockwise_of_an_op_with_a_signature_and_two_outputs():
    x = pt.dmatrix("x")
    mean, centred = Blockwise(RowMoments())(x)
    assert mean.type.ndim == 1 and centred.type.ndim == 2
    f = function([x], [mean, centred], mode=Mode(linker="cvm"))
    xv = np.arange(6.0).reshape(2, 3) ** 2
    got = f(xv)
    np.testing.assert_allclose(got[0], xv.mean(-1), rtol=1e-15)
    np.testing.assert_allclose(got[1], xv - xv.mean(-1, keepdims=True), rtol=1e-15)
    assert parse_signature("(m,n),(n)->(m)") == ([("m", "n"), ("n",)], [("m",)])
    with pytest.raises(ValueError, match="signature"):
        Blockwise(RowMoments(), "(n)")
    with pytest.raises(ValueError, match="fewer than its 1 core"):
        Blockwise(RowMoments())(pt.dscalar())
    with pytest.raises(ValueError, match="gufunc_signature"):
        Blockwise(pt.sort(x).owner.op)


def test_gradients_sum_over_broadcast_batch_axes():
    a, b = pt.dvector("a"), pt.dvector("b")
    core = pt.dot(pt.cumsum(a), b)
    A, B = pt.dmatrix("A"), pt.dvector("B")    # b is not batched: its gradient adds up the batch
    cost = vectorize_graph(core, {a: A, b: B}).sum()
    gA, gB = ffigraph.grad(cost, [A, B])
    av, bv = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]]), np.array([1.0, -2.0, 0.5])
    got = function([A, B], [gA, gB])(av, bv)
    # d/dA_ij sum_k cumsum(A_i)_k b_k = sum_{k >= j} b_k ; d/db_k = sum_i cumsum(A_i)_k
    np.testing.assert_allclose(got[0], np.broadcast_to(np.cumsum(bv[::-1])[::-1], av.shape), rtol=1e-15)
    np.testing.assert_allclose(got[1], np.cumsum(av, -1).sum(0), rtol=1e-15)


def test_vectorize_without_a_signature_is_elementwise(mode):
    f = pt.vectorize(lambda u, v: pt.switch(u > v, u - v, v * 2))
    u, v = pt.dmatrix("u"), pt.dvector("v")
    out = f(u, v)
    uv, vv = np.array([[1.0, 5.0], [-1.0, 2.0]]), np.array([0.0, 3.0])
    np.testing.assert_array_equal(function([u, v], out, mode=mode)(uv, vv), np.where(uv > vv, uv - vv, vv * 2))
