"""OpFromGraph and as_op (PyTensor's pytensor.compile.builders and compile.ops.as_op): values
against numpy and hand derivatives, under the C and Python linkers; PyTensor's documented
examples as they are written there (but for the import line)."""
import pickle

import numpy as np
import pytest

import ffigraph
from ffigraph import Mode, OpFromGraph, function, grad
from ffigraph import tensor as pt
from ffigraph.compile.ops import as_op
from ffigraph.tensor.gradient import NullType, disconnected_type

LINKERS = {"c": Mode(linker="c"), "py": Mode(linker="py")}


@pytest.fixture(params=sorted(LINKERS))
def mode(request):
    return LINKERS[request.param]


def test_pytensor_documented_examples():
    # 1. an op that behaves like any other
    x, y, z = pt.scalars("xyz")
    e = x + y * z
    op = OpFromGraph([x, y, z], [e])
    e2 = op(x, y, z) + op(z, y, x)
    fn = function([x, y, z], [e2])
    assert fn(1.0, 2.0, 3.0) == [(1 + 2 * 3) + (3 + 2 * 1)]
    # 2. with a shared variable (an implicit input, read at each call)
    s = ffigraph.shared(np.random.default_rng(0).random((2, 2)).astype(ffigraph.config.floatX))
    e = x + y * z + s
    op = OpFromGraph([x, y, z], [e])
    e2 = op(x, y, z) + op(z, y, x)
    fn = function([x, y, z], [e2])
    np.testing.assert_allclose(fn(1.0, 2.0, 3.0)[0], 12 + 2 * s.get_value(), rtol=1e-15)
    s.set_value(np.zeros((2, 2)))
    np.testing.assert_allclose(fn(1.0, 2.0, 3.0)[0], np.full((2, 2), 12.0), rtol=1e-15)

    # 3. a gradient override: the one with respect to y doubled
    def rescale_dy(inps, outputs, out_grads):
        x, y, z = inps
        g, = out_grads
        return z * 2

    op = OpFromGraph([x, y, z], [x + y * z], grad_overrides=["default", rescale_dy, "default"])
    e2 = op(x, y, z)
    dx, dy, dz = grad(e2, [x, y, z])
    fn = function([x, y, z], [dx, dy, dz])
    assert fn(2.0, 3.0, 4.0) == [1.0, 8.0, 3.0]


def test_values_several_outputs_and_nesting(mode):
    A, b = pt.dmatrix("A"), pt.dvector("b")
    lin = OpFromGraph([A, b], [pt.dot(A, b), A.T, pt.exp(b)])
    twice = OpFromGraph([A, b], [lin(A, b)[0] * 2 + pt.sum(lin(A, b)[2])])   # an OpFromGraph inside another
    av = np.arange(6.0).reshape(2, 3)[:, ::-1]
    bv = np.array([1.0, -2.0, 0.5])
    o1, o2, o3 = lin(A, b)
    f = function([A, b], [o1, o2 + 1, o3, twice(A, b)], mode=mode)
    got = f(av, bv)
    want = [av @ bv, av.T + 1, np.exp(bv), 2 * (av @ bv) + np.exp(bv).sum()]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)
    # nothing of the op is left in the compiled graph: the inner graph took its place
    assert not any(isinstance(n.op, OpFromGraph) for n in f.maker.fgraph.toposort())
    # empty and 0-d values; an op given constants folds through its own compiled graph
    e = f(np.zeros((0, 0)), np.zeros(0))
    assert [v.shape for v in e] == [(0,), (0, 0), (0,), (0,)]
    x = pt.dscalar("x")
    sq = OpFromGraph([x], [x * x])
    assert function([x], sq(x), mode=mode)(-3.0) == 9.0
    assert sq(pt.constant(4.0)).eval() == 16.0


def test_inline(mode):
    x, y = pt.dvectors("xy")
    inlined = OpFromGraph([x, y], [x * y + 1], inline=True)
    kept = OpFromGraph([x, y], [x * y + 1])
    f = function([x, y], [inlined(x, y) * 2, kept(x, y) * 2], mode=mode)
    xv, yv = np.array([1.0, 2.0, np.nan]), np.array([3.0, -1.0, 1.0])
    for got in f(xv, yv):
        np.testing.assert_array_equal(got, (xv * yv + 1) * 2)
    # an inner graph is rewritten once per mode, not once per use
    function([x, y], kept(x, y), mode=mode)
    assert len(kept._rewritten) == 1


def test_output_viewing_an_input_is_not_overwritten(mode):
    # the outer rewrites take the node's outputs for fresh memory; an inner output that is a view
    # of an inner input is copied before it takes the node's place
    a = pt.dvector("a")
    rev = OpFromGraph([a], [a[::-1]])
    t = pt.exp(a)
    f = function([a], [rev(t), t + 1, rev(a)], mode=mode)
    av = np.array([0.0, 1.0, 2.0])
    got = f(av)
    np.testing.assert_allclose(got[0], np.exp(av)[::-1], rtol=1e-15)
    np.testing.assert_allclose(got[1], np.exp(av) + 1, rtol=1e-15)
    np.testing.assert_array_equal(got[2], av[::-1])
    got[2][0] = 99.0
    assert av[2] == 2.0   # not a view of the caller's array


def test_gradients_and_rop():
    A, b = pt.dmatrix("A"), pt.dvector("b")
    lin = OpFromGraph([A, b], [pt.dot(A, b), pt.sum(b ** 2)])
    av, bv = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.5, -1.5])
    y, q = lin(A, b)
    cost = y.sum() + 3 * q
    gA, gb = grad(cost, [A, b])
    got = function([A, b], [gA, gb])(av, bv)
    np.testing.assert_allclose(got[0], np.outer(np.ones(2), bv), rtol=1e-15)
    np.testing.assert_allclose(got[1], av.sum(axis=0) + 6 * bv, rtol=1e-15)
    # only one output reached: the other output's gradient is disconnected
    g_only = function([A, b], grad(q, b))(av, bv)
    np.testing.assert_allclose(g_only, 2 * bv, rtol=1e-15)
    # the R-operator: J v
    vA, vb = pt.dmatrix("vA"), pt.dvector("vb")
    jv = ffigraph.Rop(y, [A, b], [vA, vb])
    va, vbv = np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([1.0, 1.0])
    np.testing.assert_allclose(function([A, b, vA, vb], jv)(av, bv, va, vbv), va @ bv + av @ vbv, rtol=1e-15)


def test_overrides():
    x, y = pt.dscalars("xy")
    # lop_overrides: PyTensor's L_op form (inputs, outputs, output grads)
    op = OpFromGraph([x, y], [x * y], lop_overrides=lambda inps, outs, gs: [gs[0] * 10, gs[0] * outs[0]])
    assert function([x, y], grad(op(x, y), [x, y]))(2.0, 3.0) == [10.0, 6.0]
    # grad_overrides with two arguments (inputs, output grads), a NullType and a DisconnectedType entry
    op = OpFromGraph([x, y], [x * y], grad_overrides=lambda inps, gs: [gs[0] * inps[1], gs[0]])
    assert function([x, y], grad(op(x, y), [x, y]), on_unused_input="ignore")(2.0, 3.0) == [3.0, 1.0]
    op = OpFromGraph([x, y], [x * y], lop_overrides=["default", NullType("no gradient for y")()])
    assert function([x, y], grad(op(x, y), x), on_unused_input="ignore")(2.0, 3.0) == 3.0
    with pytest.raises(TypeError, match="no gradient for y"):
        grad(op(x, y), y)
    op = OpFromGraph([x, y], [x * y], lop_overrides=[disconnected_type(), "default"])
    assert function([x, y], grad(op(x, y), x, disconnected_inputs="ignore"), on_unused_input="ignore")(2.0, 3.0) == 0.0
    op = OpFromGraph([x, y], [x * y], rop_overrides=lambda inps, points: [points[0] * 100])
    # (read by the R_op walk; Rop's default, two L-operators, goes through the gradient instead)
    rop = ffigraph.Rop(op(x, y), x, pt.constant(1.0), use_op_rop_implementation=True)
    assert function([x, y], rop, on_unused_input="ignore")(2.0, 3.0) == 100.0
    rop = ffigraph.Rop(OpFromGraph([x, y], [x * y])(x, y), x, pt.constant(1.0), use_op_rop_implementation=True)
    assert function([x, y], rop, on_unused_input="ignore")(2.0, 3.0) == 3.0
    with pytest.raises(ValueError, match="not both"):
        OpFromGraph([x], [x], lop_overrides=lambda *a: a, grad_overrides=lambda *a: a)


def test_errors_and_pickling():
    x, y = pt.dvectors("xy")
    with pytest.raises(TypeError, match="constant"):
        OpFromGraph([pt.constant(1.0)], [x])
    with pytest.raises(ValueError, match="depend on y"):
        OpFromGraph([x], [x + y])
    op = OpFromGraph([x], [x * 2], name="double")
    with pytest.raises(TypeError, match="takes 1 inputs, got 2"):
        op(x, y)
    with pytest.raises(TypeError, match="double: input 0"):
        op(pt.dmatrix())
    f = function([y], op(y) + 1)
    again = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(again(np.array([1.0, 2.0])), [3.0, 5.0])


def test_in_a_scan_body_and_exported(tmp_path):
    x = pt.dvector("x")
    step = OpFromGraph([x], [x * 2 + 1])
    out, _ = ffigraph.scan(lambda v: step(v), sequences=[], outputs_info=[x], n_steps=3)
    f = function([x], out[-1], mode=LINKERS["c"])
    np.testing.assert_array_equal(f(np.array([0.0, 1.0])), [7.0, 15.0])
    g = function([x], step(x), mode=LINKERS["c"])
    bundle = g.export(tmp_path / "ofg")
    with open(bundle.header) as header:
        assert "x " in header.read()


@pytest.mark.parametrize("linker", ["cvm", "py"])
def test_as_op(linker):
    # (Python-only: the whole-graph C linker refuses it, the others run it between compiled parts)
    mode = Mode(linker=linker)
    @as_op(itypes=[pt.dmatrix], otypes=[pt.dmatrix])
    def numpy_dot(a):
        return np.dot(a, a)

    m = pt.dmatrix("m")
    f = function([m], numpy_dot(m) + 1, mode=mode)
    mv = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(f(mv), mv @ mv + 1)

    def shape_of(fgraph, node, shapes):
        return [shapes[0]]

    @as_op(itypes=[pt.dvector, pt.lscalar], otypes=[pt.dvector], infer_shape=shape_of)
    def shifted(v, k):
        return np.roll(v, k)

    v, k = pt.dvector("v"), pt.lscalar("k")
    out = shifted(v, k)
    g = function([v, k], [out, out.shape[0]], mode=mode)
    got = g(np.array([1.0, 2.0, 3.0]), 1)
    np.testing.assert_array_equal(got[0], [3.0, 1.0, 2.0])
    assert got[1] == 3
    with pytest.raises(TypeError, match="input 0 must be of type"):
        numpy_dot(v)

    @as_op(itypes=[pt.dvector], otypes=[pt.dvector])
    def wrong(v):
        return np.zeros((2, 2))

    with pytest.raises(TypeError, match="output 0"):
        function([v], wrong(v), mode=mode)(np.zeros(2))
