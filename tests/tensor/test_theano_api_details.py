"""The small API details Theano and PyTensor programs depend on (issue 46, items 2-5, 7, 9-11,
13-15): each against what Theano 1.0 or PyTensor document, with values from numpy or by hand."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.graph import Apply, Op, Type, Variable, equal_computations, graph_inputs, graph_replace, is_same_graph
from ffigraph.tensor import nnet, special
from ffigraph.tensor.extra_ops import to_one_hot
from ffigraph.tensor.variable import TensorVariable

LINKERS = ["py", "c"]


# ------------------------------------------------------------------ types (items 2 and 11)


def test_tensor_type_takes_theano_arguments():
    # Theano: TensorType(dtype, broadcastable, name=None), numpy booleans included
    t = T.TensorType("float64", (np.True_, np.False_), name="rowtype")
    assert t.shape == (1, None) and t.broadcastable == (True, False)
    assert str(t) == "rowtype"
    assert t == T.TensorType("float64", (1, None)) == T.TensorType("float64", broadcastable=(True, False))
    assert hash(t) == hash(T.TensorType("float64", (1, None)))   # the name is not part of the identity
    assert T.TensorType("int32", broadcastable=[np.bool_(False)] * 3).shape == (None, None, None)
    with pytest.raises(TypeError, match="name must be a string"):
        T.TensorType("float64", (False,), name=3)
    with pytest.raises(TypeError, match="not both"):
        T.TensorType("float64", (None,), broadcastable=(False,))


def test_prefixed_constructors_are_types():
    x = T.dscalar("x")
    assert isinstance(T.dscalar, T.TensorType) and x.type == T.dscalar and x.name == "x"
    assert T.fmatrix == T.TensorType("float32", (False, False)) and T.drow.broadcastable == (True, False)
    assert T.dmatrix("m").type != T.dscalar
    assert T.lvector(name="v").type == T.lvector
    assert T.dmatrix("s", shape=(2, None)).type.shape == (2, None)   # ffigraph's static-shape form
    with pytest.raises(ValueError, match="keep the static sizes"):
        T.drow("r", shape=(2, 3))
    a, b = T.dmatrices("a", "b")
    assert a.type == b.type == T.dmatrix and (a.name, b.name) == ("a", "b")


# ------------------------------------------------------------------ truth values (item 13)


def test_truth_value_follows_theano():
    W = T.dmatrix("W")
    assert bool(W) and bool(W + 1) and bool(T.constant(0.0))   # "if not W:" tests for None
    taken = "yes" if W else "no"
    assert taken == "yes"
    a, b, c = T.dscalars("a", "b", "c")
    for comparison in (a < b, a <= b, a > b, a >= b, T.eq(a, b), T.neq(a, b)):
        with pytest.raises(TypeError, match="truth value of a symbolic comparison"):
            bool(comparison)
    with pytest.raises(TypeError, match="comparison"):
        a < b < c   # noqa: B015  (Python's chain calls bool on the first comparison)


# ------------------------------------------------------------------ iteration (item 3) and numpy on the left (item 7)


@pytest.mark.parametrize("linker", LINKERS)
def test_shape_unpacking_numpy_on_the_left_and_lists_of_slices(linker):
    x = T.dtensor4("x")
    n, c, h, w = x.shape
    v = T.dvector("v")
    m = T.dmatrix("m")
    left = [np.arange(3.0) + v, np.full(3, 2.0) * v, np.arange(3.0) - v, np.float64(3.0) / v, np.arange(3.0) < v]
    assert all(isinstance(e, TensorVariable) for e in left)
    first, second = T.stack([v.sum(), v.max()])
    outs = [n * 1000 + c * 100 + h * 10 + w, first, second] + left + \
        [m[[slice(None), slice(1, 3)]], m[[slice(1, None), None]], m[[Ellipsis, 0]]]
    f = ffigraph.function([x, v, m], outs, mode=ffigraph.Mode(linker=linker))
    xv, vv = np.zeros((2, 3, 4, 5)), np.array([1.0, -2.0, 4.0])
    mv = np.arange(12.0).reshape(3, 4)[::-1]   # negative strides
    got = f(xv, vv, mv)
    expected = [2345, vv.sum(), vv.max(), np.arange(3.0) + vv, 2 * vv, np.arange(3.0) - vv, 3.0 / vv,
                np.arange(3.0) < vv, mv[:, 1:3], mv[1:, None], mv[..., 0]]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    with pytest.raises(TypeError, match="length known before it runs"):
        iter(v)
    with pytest.raises(TypeError, match="only when it is a vector"):
        list(m)
    assert T.get_vector_length(m.shape) == 2 and T.get_vector_length(T.as_tensor_variable([4, 5, 6])) == 3
    with pytest.raises(ValueError, match="not a vector"):
        T.get_vector_length(m)


# ------------------------------------------------------------------ graph_inputs order (item 4)


class _Node(Op):
    __props__ = ()

    def make_node(self, *inputs):
        return Apply(self, list(inputs), [inputs[0].type()])


class _Kind(Type):
    def filter(self, data, strict=False, allow_downcast=None):
        return data


def _leaves(*names):
    return [Variable(_Kind(), name=n) for n in names]


def test_graph_inputs_in_theano_order():
    # Theano's stack_search: the outputs from the last one, each node's inputs from the first one
    r1, r2, r3 = _leaves("r1", "r2", "r3")
    o1 = _Node()(r1, r2)
    o2 = _Node()(r3, o1)
    assert graph_inputs([o2]) == [r3, r1, r2]
    assert graph_inputs([o1, _Node()(r3)]) == [r3, r1, r2]
    x = T.dmatrix("x")
    W, b = ffigraph.shared(np.ones((3, 2)), name="W"), ffigraph.shared(np.zeros(2), name="b")
    layer = T.tanh(T.dot(x, W) + b)
    W2, b2 = ffigraph.shared(np.ones((2, 2)), name="W2"), ffigraph.shared(np.zeros(2), name="b2")
    out = T.dot(layer, W2) + b2
    assert [v.name for v in graph_inputs([out])] == ["x", "W", "b", "W2", "b2"]


# ------------------------------------------------------------------ nnet.softmax of a vector (item 14)


def test_nnet_softmax_of_a_vector_is_a_row():
    v = T.dvector("v")
    s, ls, ps = nnet.softmax(v), nnet.logsoftmax(v), special.softmax(v)
    assert (s.ndim, ls.ndim, ps.ndim) == (2, 2, 1)
    f = ffigraph.function([v], [s[:, 0], s, ls, ps], mode=ffigraph.Mode(linker="py"))
    vv = np.array([1.0, 2.0, -3.0])
    ref = np.exp(vv - vv.max()) / np.exp(vv - vv.max()).sum()
    first, row, log_row, flat = f(vv)
    np.testing.assert_allclose(row, ref[None, :], rtol=1e-13)
    np.testing.assert_allclose(log_row, np.log(ref)[None, :], rtol=1e-13)
    np.testing.assert_allclose(flat, ref, rtol=1e-13)
    np.testing.assert_allclose(first, ref[:1], rtol=1e-13)


# ------------------------------------------------------------------ xlogx, to_one_hot, broadcast patterns (items 10, 15)


@pytest.mark.parametrize("linker", LINKERS)
def test_xlogx_one_hot_and_broadcast_patterns(linker):
    x, y = T.dvector("x"), T.dvector("y")
    labels = T.lvector("labels")
    col = T.dmatrix("col")
    cost = (T.xlogx.xlogx(x) + T.xlogx.xlogy0(x, y)).sum()
    row = T.addbroadcast(col, 1)
    back = T.unbroadcast(row, 1)
    assert row.broadcastable == (False, True) and back.broadcastable == (False, False)
    assert T.patternbroadcast(col, (False, True)).broadcastable == (False, True)
    assert T.patternbroadcast(row, (False, False)).broadcastable == (False, False)
    assert T.unbroadcast(col, 0) is col and T.addbroadcast(row, 1) is row
    outs = [T.xlogx.xlogx(x), T.xlogx.xlogy0(x, y)] + T.grad(cost, [x, y]) + \
        [to_one_hot(labels, 4), to_one_hot(labels, 3, dtype="int32"), back * 2, T.grad((back * y[:2]).sum(), col)]
    f = ffigraph.function([x, y, labels, col], outs, mode=ffigraph.Mode(linker=linker))
    xv = np.array([0.0, 1.0, 2.0, 0.5, np.nan])
    yv = np.array([5.0, 3.0, 0.5, np.inf, 1.0])
    colv = np.array([[1.5], [-2.0]])
    got = f(xv, yv, [2, 0, 2], colv)
    with np.errstate(divide="ignore", invalid="ignore"):
        xlx = np.where(xv == 0, 0.0, xv * np.log(xv))
        xly = np.where(xv == 0, 0.0, xv * np.log(yv))
        expected = [xlx, xly, 1 + np.log(xv) + np.log(yv), xv / yv,
                    np.eye(4)[[2, 0, 2]], np.eye(3, dtype=np.int32)[[2, 0, 2]], colv * 2,
                    np.full((2, 1), yv[:2].sum())]
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-14, atol=0)
    assert got[4].dtype == np.dtype(ffigraph.config.floatX)
    with pytest.raises(IndexError, match="out of bounds"):
        f(xv, yv, [4], colv)
    with pytest.raises(ValueError, match="col"):
        f(xv, yv, [1], np.ones((2, 2)))   # addbroadcast checks the length 1 when it runs
    np.testing.assert_array_equal(f(xv, yv, [1], colv)[4], [[0, 1, 0, 0]])   # still works


# ------------------------------------------------------------------ stack, Rop/Lop, clone, graph comparisons (item 10)


def test_stack_forms_and_rop_lop():
    a, b, c = T.dvectors("a", "b", "c")
    av, bv, cv = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, -6.0])
    y = a ** 2
    outs = [T.stack(a, b, c), T.stack([a, b], 1), T.stack([a, b], axis=1), T.stack(a, b, axis=1),
            T.Rop(y, a, b), T.Lop(y, a, b)]
    got = ffigraph.function([a, b, c], outs, mode=ffigraph.Mode(linker="py"))(av, bv, cv)
    expected = [np.stack([av, bv, cv]), np.stack([av, bv], 1), np.stack([av, bv], 1), np.stack([av, bv], 1),
                2 * av * bv, 2 * av * bv]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    with pytest.raises(TypeError, match="positional arguments after the list"):
        T.stack([a, b], 0, 1)


def test_clone_with_theano_signature_and_graph_replace():
    x, y, z = T.dvectors("x", "y", "z")
    w = ffigraph.shared(np.array([10.0, 20.0]), name="w")
    expr = x * 2 + y + w
    swapped = ffigraph.clone(expr, replace={y: z * 3})
    assert graph_inputs([swapped])[0] is x and z in graph_inputs([swapped]) and y not in graph_inputs([swapped])
    xv, zv = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    np.testing.assert_array_equal(ffigraph.function([x, z], swapped)(xv, zv), xv * 2 + zv * 3 + [10.0, 20.0])
    # share_inputs=False: new free variables and a copy of w that shares its storage
    copied = ffigraph.clone(expr, share_inputs=False)
    leaves = [v for v in graph_inputs([copied]) if not isinstance(v, T.TensorConstant)]
    assert not set(leaves) & {x, y, w} and sorted(v.name for v in leaves) == ["w", "x", "y"]
    copy_of_w = [v for v in leaves if v.name == "w"][0]
    w.set_value(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(copy_of_w.get_value(), [1.0, 1.0])
    # strict=False: a replacement of another type, the nodes above it made again
    f32 = T.fvector("f32")
    loose = ffigraph.clone(T.exp(x) + x, replace=[(x, f32)], strict=False)
    assert loose.dtype == "float32"
    with pytest.raises(TypeError):
        ffigraph.clone(x * 2, replace=[(x, T.fmatrix("bad"))])
    # lists and tuples keep their form; an intermediate variable can be replaced
    inner = x * 2
    outer = inner + 1
    pair = ffigraph.clone((outer, inner), replace={inner: z})
    assert isinstance(pair, tuple) and pair[1] is z
    replaced = graph_replace(outer, {inner: y})
    np.testing.assert_array_equal(ffigraph.function([y], replaced)(zv), zv + 1)
    with pytest.raises(ValueError, match="do not depend on z"):
        graph_replace(outer, {z: y})
    assert graph_replace([outer], {z: y}, strict=False)[0] is not outer


def test_is_same_graph_and_equal_computations():
    # the cases of Theano's test_graph.py for is_same_graph, by hand
    x, y, z = T.dvectors("x", "y", "z")
    assert is_same_graph(x, x) and not is_same_graph(x, y)
    assert is_same_graph(x + y, x + y) and not is_same_graph(x + y, y + x)
    assert not is_same_graph(x * (y * z), (x * y) * z)
    assert is_same_graph(x, y, givens={x: y})
    assert is_same_graph(x + z, y + z, givens={x: y}) and not is_same_graph(x + z, y + x, givens={x: y})
    assert is_same_graph(x * 2.0, x * 2.0) and not is_same_graph(x * 2.0, x * 3.0)
    assert equal_computations([x + y], [z + y], in_xs=[x], in_ys=[z])
    assert not equal_computations([x + y], [z + y])
    assert not equal_computations([x], [x, y])
    big = small = x
    for _ in range(3000):   # deep graphs: no recursion limit
        big, small = big + 1.0, small + 1.0
    assert equal_computations([big], [small])
    m = T.dmatrix("m")
    assert equal_computations(list(T.max_and_argmax(m)), list(T.max_and_argmax(m))) if hasattr(T, "max_and_argmax") \
        else equal_computations([T.max(m, axis=0)], [T.max(m, axis=0)])
    assert not equal_computations([T.max(m, axis=0)], [T.max(m, axis=1)])


# ------------------------------------------------------------------ scan(strict=True) (item 9)


def test_scan_strict_accepts_free_variables_refuses_unlisted_shared():
    x0 = T.dvector("x0")
    w = T.dvector("w")
    out, _ = ffigraph.scan(lambda h: h * w, outputs_info=x0, n_steps=3, strict=True)
    f = ffigraph.function([x0, w], out[-1], mode=ffigraph.Mode(linker="py"))
    np.testing.assert_array_equal(f([1.0, 2.0], [2.0, -1.0]), [8.0, -2.0])
    gain = ffigraph.shared(np.array([3.0, 3.0]), name="gain")
    listed, _ = ffigraph.scan(lambda h, g: h * g, outputs_info=x0, non_sequences=[gain], n_steps=2, strict=True)
    np.testing.assert_array_equal(ffigraph.function([x0], listed[-1], mode=ffigraph.Mode(linker="py"))([1.0, 2.0]),
                                  [9.0, 18.0])
    with pytest.raises(ValueError, match="shared variable gain"):
        ffigraph.scan(lambda h: h * gain, outputs_info=x0, n_steps=2, strict=True)
