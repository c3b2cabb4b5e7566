"""Elementwise fusion: the rewritten graph's shape (one fused node), and its values against numpy
on every layout, dtype and broadcast case, under the Python and C linkers.

A test compiles its graphs (every dtype and shape of a case, or a few related graphs) into one
function: see ``Batch``. Each graph has inputs of its own, so fusion cannot join two of them, and
the nodes asserted are those of that graph's outputs alone.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.graph.basic import io_toposort
from ffigraph.tensor.elemwise import Elemwise
from ffigraph.tensor.fused import FusedElemwise, FusedReduce
from helpers import LAYOUTS, assert_matches, relayout, sample

LINKERS = ("py", "c", "cvm")


@pytest.fixture(params=LINKERS)
def fast(request):
    return Mode(linker=request.param, optimizer="fast_run")


def _ops(f):
    return [n.op for n in f.maker.fgraph.toposort()]


def _chain(x, y):
    return T.exp(x) * y + T.tanh(x) - 1.5 * y


def _chain_np(x, y):
    return np.exp(x) * y + np.tanh(x) - np.asarray(1.5, x.dtype) * y


class Batch:
    """Independent graphs, each ``(inputs, outputs)`` with inputs of its own, compiled into ONE
    function under ``mode``. ``ops(k)`` are the rewritten nodes' ops of graph ``k``'s outputs,
    ``types(k)`` their types; ``call(args)`` takes one argument list per graph and returns one
    output list per graph."""

    def __init__(self, graphs, mode):
        self.inputs, self.outputs, self.spans = [], [], []
        for ins, outs in graphs:
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            assert not set(ins) & set(self.inputs), "graphs of a Batch need inputs of their own"
            self.spans.append(slice(len(self.outputs), len(self.outputs) + len(outs)))
            self.inputs += ins
            self.outputs += outs
        self.f = function(self.inputs, self.outputs, mode=mode)

    def fgraph_outputs(self, k):
        return self.f.maker.fgraph.outputs[self.spans[k]]

    def ops(self, k):
        return [n.op for n in io_toposort(self.f.maker.fgraph.inputs, self.fgraph_outputs(k))]

    def types(self, k):
        return [v.type for v in self.fgraph_outputs(k)]

    def call(self, args):
        got = self.f(*[a for graph_args in args for a in graph_args])
        return [got[span] for span in self.spans]


# ------------------------------------------------------------------ structure


def test_fusion_structure(fast):
    """In one function: a chain becomes one fused node; siblings share one node with two outputs;
    a reduction absorbs its elementwise input; an intermediate used twice is an extra output, not
    recomputed; no cycle is made through an outside node."""
    x1, y1 = T.dvector("x"), T.dvector("y")
    x2, y2 = T.dmatrix("x"), T.dmatrix("y")
    x3, y3 = T.dmatrix("x"), T.dmatrix("y")
    x4 = T.dvector("x")
    e4 = T.exp(x4)
    # e feeds both the dot (outside) and the add; fusing e with the add would make a cycle
    x5, w5 = T.dmatrix("x"), T.dmatrix("w")
    e5 = T.exp(x5)
    b = Batch([([x1, y1], _chain(x1, y1)),
               ([x2, y2], [x2 + y2, x2 - y2]),
               ([x3, y3], T.sum(T.exp(x3) * y3)),
               ([x4], [e4 * 2, e4]),
               ([x5, w5], e5 + T.dot(e5, w5))], fast)
    ops = b.ops(0)
    assert len(ops) == 1 and isinstance(ops[0], FusedElemwise), ops
    assert len(ops[0].composite.steps) == 6
    ops = b.ops(1)
    assert len(ops) == 1 and isinstance(ops[0], FusedElemwise) and ops[0].composite.nout == 2, ops
    ops = b.ops(2)
    assert len(ops) == 1 and isinstance(ops[0], FusedReduce), ops
    assert len([op for op in b.ops(3) if isinstance(op, FusedElemwise)]) == 1
    a1, b1 = sample("float64", (5,)), sample("float64", (5,), rng=np.random.default_rng(1))
    a2, b2 = sample("float64", (3, 4)), sample("float64", (3, 4), rng=np.random.default_rng(1))
    a4 = sample("float64", (7,))
    a5, b5 = sample("float64", (3, 3)), sample("float64", (3, 3), rng=np.random.default_rng(2))
    got = b.call([[a1, b1], [a2, b2], [a2, b2], [a4], [a5, b5]])
    s, d = got[1]
    np.testing.assert_array_equal(s, a2 + b2)
    np.testing.assert_array_equal(d, a2 - b2)
    got2, got4 = got[3]
    np.testing.assert_allclose(got4, np.exp(a4), rtol=1e-15)
    np.testing.assert_allclose(got2, 2 * np.exp(a4), rtol=1e-15)
    np.testing.assert_allclose(got[4][0], np.exp(a5) + np.exp(a5) @ b5, rtol=1e-12)


def test_no_rewrites_mode_leaves_the_graph_alone():
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], _chain(x, y), mode=Mode(linker="c", optimizer=None))
    assert all(type(op) is Elemwise or type(op).__name__ == "DimShuffle" for op in _ops(f))


def test_excluding_fusion():
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], _chain(x, y), mode=Mode(linker="c", optimizer="fast_run").excluding("fusion"))
    assert not any(isinstance(op, (FusedElemwise, FusedReduce)) for op in _ops(f))


# ------------------------------------------------------------------ values

CHAIN_SHAPES = [(0,), (1,), (5,), (1000,), (3, 0), (4, 7), (2, 3, 5), ()]


def test_chain_values(fast):
    """float64 and float32 on every shape of CHAIN_SHAPES, in one function."""
    combos = [(dtype, shape) for dtype in ["float64", "float32"] for shape in CHAIN_SHAPES]
    graphs, args = [], []
    for dtype, shape in combos:
        x, y = T.tensor(dtype, (None,) * len(shape), "x"), T.tensor(dtype, (None,) * len(shape), "y")
        graphs.append(([x, y], _chain(x, y)))
        args.append([sample(dtype, shape, special=True), sample(dtype, shape, rng=np.random.default_rng(3))])
    b = Batch(graphs, fast)
    expected = [_chain_np(a, y) for a, y in args]
    for layout in LAYOUTS:
        with np.errstate(all="ignore"):
            got = b.call([[relayout(a, layout) for a in graph_args] for graph_args in args])
        for k, (dtype, shape) in enumerate(combos):
            try:
                assert_matches(got[k][0], expected[k], b.types(k)[0], rtol=4e-6 if dtype == "float32" else 1e-13,
                               dtype=dtype)
            except AssertionError as err:
                raise AssertionError("%s %s, layout %s: %s" % (dtype, shape, layout, err)) from None


BROADCAST_PAIRS = [((3, 1), (1, 4)), ((1, 5), (4, 5)), ((), (3, 2)), ((2, 1, 3), (4, 1)), ((1,), (0,)),
                   ((1, 1), (1, 1))]


def test_broadcasting_with_runtime_length_one(fast):
    """Every pair of BROADCAST_PAIRS in one function; and (a graph of its own in it) the broadcast
    error names the shapes."""
    graphs, args = [], []
    for sa, sb in BROADCAST_PAIRS:
        x, y = T.tensor("float64", (None,) * len(sa), "x"), T.tensor("float64", (None,) * len(sb), "y")
        graphs.append(([x, y], [T.exp(x) * 2, T.exp(x) * y + x]))
        args.append([sample("float64", sa), sample("float64", sb, rng=np.random.default_rng(4))])
    xe, ye = T.dvector("x"), T.dvector("y")
    graphs.append(([xe, ye], _chain(xe, ye)))
    b = Batch(graphs, fast)
    got = b.call(args + [[np.zeros(2), np.ones(2)]])
    for (sa, sb), (a, y), (e2, full) in zip(BROADCAST_PAIRS, args, got):
        nd = max(len(sa), len(sb))
        assert e2.shape == a.shape and full.shape == np.broadcast_shapes(sa, sb), (sa, sb)
        np.testing.assert_allclose(e2, np.exp(a) * 2, rtol=1e-14)
        np.testing.assert_allclose(full, np.exp(a) * y + a, rtol=1e-14)
        assert full.ndim == nd
    np.testing.assert_allclose(got[-1][0], _chain_np(np.zeros(2), np.ones(2)))
    with pytest.raises(ValueError, match="broadcast"):
        b.call(args + [[np.ones(3), np.ones(4)]])


def test_integer_bool_and_mixed_chains(fast):
    """int64, int32, uint8 and bool chains; mixed dtypes and casts (numpy with the casts and the
    dtypes of PyTensor's rules spelled out); an integer error inside a fused loop."""
    dtypes = ["int64", "int32", "uint8", "bool"]
    graphs, args, refs = [], [], []
    for dtype in dtypes:
        x, y = T.tensor(dtype, (None, None), "x"), T.tensor(dtype, (None, None), "y")
        if dtype == "bool":
            out, ref = (x | y) & ~(x ^ y), lambda a, b: (a | b) & ~(a ^ b)
        else:
            out = T.maximum(x * y + 3, y) % 5 - x // 2

            def ref(a, b, dtype=dtype):
                with np.errstate(all="ignore"):
                    return (np.maximum(a * b + np.asarray(3, dtype), b) % np.asarray(5, dtype)
                            - a // np.asarray(2, dtype))
        graphs.append(([x, y], out))
        refs.append(ref)
        args.append([sample(dtype, (4, 6), low=0 if dtype == "uint8" else -4, high=6),
                     sample(dtype, (4, 6), rng=np.random.default_rng(5), low=0 if dtype == "uint8" else -4, high=6)])
    xm, im = T.fvector("x"), T.ivector("i")
    mixed = [T.exp(im) * xm + T.cast(im, "float32") / 2, T.sqrt(xm * xm) + T.cast(xm > 0, "int8"),
             T.cast(T.exp(xm), "int16") * im]
    graphs.append(([xm, im], mixed))
    args.append([sample("float32", (33,)), sample("int32", (33,), rng=np.random.default_rng(6))])
    xp, yp = T.lvector("x"), T.lvector("y")
    graphs.append(([xp, yp], (xp + 1) ** yp * 2))
    args.append([np.array([1, 2]), np.array([2, 3])])
    b = Batch(graphs, fast)
    for layout in LAYOUTS:
        got = b.call([[relayout(a, layout) for a in graph_args] for graph_args in args])
        for k, dtype in enumerate(dtypes):
            assert_matches(got[k][0], refs[k](*args[k]), b.types(k)[0], dtype=dtype)
    got = b.call(args)
    a, i = args[len(dtypes)]
    # exp of an int32 is float64 (PyTensor upgrades int32 and wider to float64), times float32 is
    # float64; a float32 divided by a Python 2 stays float32; float32 + int8 is float32; a
    # float32 cast to int16 truncates toward zero, and int16 * int32 is int32.
    wants = [(np.exp(i.astype("float64")) * a.astype("float64")
              + (i.astype("float32") / np.float32(2)).astype("float64"), "float64", 1e-14),
             (np.sqrt(a * a) + (a > 0).astype("int8"), "float32", 1e-6),
             (np.exp(a).astype("int16").astype("int32") * i, "int32", 0)]
    for g, (want, dtype, rtol), var in zip(got[len(dtypes)], wants, mixed):
        assert want.dtype == dtype
        assert_matches(g, want, var.type, rtol=rtol, dtype=dtype)
    assert_matches(got[-1][0], np.array([8, 54]), b.types(len(dtypes) + 1)[0], dtype="int64")
    with pytest.raises(ValueError, match="negative integer powers"):
        b.call(args[:-1] + [[np.array([1, 2]), np.array([2, -1])]])


def test_special_values_and_signed_zeros(fast):
    """float64 and float32 in one function; a NaN constant inside a fused loop too."""
    dtypes = ["float64", "float32"]
    refs = [lambda a: np.exp(a) * 1.5, lambda a: np.tanh(a) + 0.0 * a, lambda a: np.log(a) - a,
            lambda a: np.sin(a) * np.cos(a), lambda a: np.expm1(a) * 2, lambda a: np.log1p(a) * 3,
            lambda a: a * 2 + np.nan]
    graphs, args = [], []
    for dtype in dtypes:
        vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310, 700, -800, 1e30, -1e30, 1, -1],
                        dtype=dtype)
        x = T.tensor(dtype, (None,), "x")
        graphs.append(([x], [T.exp(x) * 1.5, T.tanh(x) + 0.0 * x, T.log(x) - x, T.sin(x) * T.cos(x),
                             T.expm1(x) * 2, T.log1p(x) * 3,
                             x * 2 + T.constant(np.asarray(np.nan, dtype))]))  # a NaN literal in the loop
        args.append([vals])
    b = Batch(graphs, fast)
    with np.errstate(all="ignore"):
        got_all = b.call(args)
        for dtype, (vals,), got in zip(dtypes, args, got_all):
            for g, ref in zip(got, refs):
                want = ref(vals).astype(dtype)
                np.testing.assert_allclose(g, want, rtol=5e-6 if dtype == "float32" else 2e-15, equal_nan=True)
                same_zero = (want == 0)
                assert (np.signbit(g[same_zero]) == np.signbit(want[same_zero])).all()


# ------------------------------------------------------------------ fused reductions


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min", "mean"])
def test_fused_reductions(fast, kind):
    """Every axis (None, 0, 1, (0, 1), -1) of float64 and float32, in one function.

    A product of 11,100 factors is taken of factors near 1 (exp(x/10) * y with |x| <= 0.1 and y
    in [0.99, 1.01]), so that it neither underflows to 0 nor overflows: with atol=0, an answer
    of 0 (or inf) fails, and the tolerance is the same as the other reductions'."""
    combos = [(axis, dtype) for axis in [None, 0, 1, (0, 1), -1] for dtype in ["float64", "float32"]]
    x_range, y_range = ((-0.1, 0.1), (0.99, 1.01)) if kind == "prod" else ((-3, 3), (0.5, 1.5))
    graphs, args = [], []
    for axis, dtype in combos:
        x, y = T.tensor(dtype, (None, None), "x"), T.tensor(dtype, (None, None), "y")
        graphs.append(([x, y], getattr(T, kind)(T.exp(x * 0.1) * y, axis=axis)))
        args.append([sample(dtype, (37, 300), low=x_range[0], high=x_range[1]),
                     sample(dtype, (37, 300), rng=np.random.default_rng(7), low=y_range[0], high=y_range[1])])
    b = Batch(graphs, fast)
    expected = [getattr(np, kind)(np.exp(a * np.asarray(0.1, a.dtype)) * y, axis=axis)
                for (axis, _), (a, y) in zip(combos, args)]
    for (axis, dtype), want in zip(combos, expected):
        assert want.dtype == dtype and np.all(np.isfinite(want)) and np.all(np.abs(want) > 1e-3), (axis, dtype)
    for layout in LAYOUTS:
        got = b.call([[relayout(a, layout) for a in graph_args] for graph_args in args])
        for k, (axis, dtype) in enumerate(combos):
            rtol = 1e-4 if dtype == "float32" else 1e-11
            try:
                assert_matches(got[k][0], expected[k], b.types(k)[0], rtol=rtol, atol=0, dtype=dtype)
            except AssertionError as err:
                raise AssertionError("axis %s, %s, layout %s: %s" % (axis, dtype, layout, err)) from None


def test_fused_reduction_nan_and_empty(fast):
    """NaN, -inf and empty axes; max over an empty axis fails; and broadcast inputs (in one function)."""
    xf, xg, xh = T.dmatrix("x"), T.dmatrix("x"), T.dmatrix("x")
    xb, yb = T.dmatrix("x"), T.dmatrix("y")
    b = Batch([([xf], [T.max(xf * 2, axis=1), T.sum(xf * 2, axis=0), T.mean(xf * 2, axis=1)]),
               ([xg], [T.sum(T.exp(xg), axis=0), T.mean(T.exp(xg), axis=1)]),
               ([xh], T.max(T.exp(xh), axis=1)),
               ([xb, yb], T.sum(T.exp(xb) * yb, axis=0))], fast)
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf]])
    ab, bb = sample("float64", (5, 1)), sample("float64", (1, 4), rng=np.random.default_rng(8))
    args = [[a], [np.zeros((2, 0))], [np.zeros((0, 3))], [ab, bb]]
    got = b.call(args)
    mx, sm, mn = got[0]
    np.testing.assert_array_equal(mx, [np.nan, 10.0])
    np.testing.assert_array_equal(sm, [10.0, np.nan, -np.inf])
    np.testing.assert_array_equal(mn, [np.nan, -np.inf])
    sm, mn = got[1]
    assert sm.shape == (0,)
    np.testing.assert_array_equal(mn, [np.nan, np.nan])
    assert got[2][0].shape == (0,)
    np.testing.assert_allclose(got[3][0], np.sum(np.exp(ab) * bb, axis=0), rtol=1e-13)
    with pytest.raises(ValueError, match="empty"):
        b.call(args[:2] + [[np.zeros((2, 0))]] + args[3:])  # max over an empty axis
    np.testing.assert_array_equal(b.call(args[:2] + [[np.zeros((1, 2))]] + args[3:])[2][0], [1.0])


@pytest.mark.parametrize("linker", ["py", "c"])
def test_sigmoid_and_softplus_expand_into_vectorised_steps(linker):
    """Fusion writes sigmoid/softplus as exp(-|x|), log1p, divisions and a switch (so libmvec
    runs them a block at a time): same values as the stable reference, NaN and ±inf included
    (float64 and float32 in one function)."""
    from ffigraph.printing import debugprint

    dtypes = ["float64", "float32"]
    xs = [T.tensor(dtype, (None,), name="x") for dtype in dtypes]
    b = Batch([([x], [T.sigmoid(x), T.softplus(x)]) for x in xs], Mode(linker=linker))
    for k in range(len(dtypes)):
        text = debugprint(b.fgraph_outputs(k), file="str")
        assert "sigmoid(" not in text.split("Inner graphs")[-1] and "log1p" in text, text
    xv = np.concatenate([np.linspace(-120, 120, 601), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -800, 800]])
    values = [xv.astype(dtype) for dtype in dtypes]
    got_all = b.call([[v] for v in values])
    for dtype, v, (got_sigmoid, got_softplus) in zip(dtypes, values, got_all):
        wide = v.astype(np.longdouble)
        with np.errstate(all="ignore"):
            want_sigmoid = np.where(wide >= 0, 1 / (1 + np.exp(-np.abs(wide))),
                                    np.exp(-np.abs(wide)) / (1 + np.exp(-np.abs(wide))))
            want_softplus = np.maximum(wide, 0) + np.log1p(np.exp(-np.abs(wide)))
        rtol = 1e-14 if dtype == "float64" else 2e-6
        for got, want in ((got_sigmoid, want_sigmoid), (got_softplus, want_softplus)):
            assert got.dtype == np.dtype(dtype)
            np.testing.assert_allclose(got, want.astype(dtype), rtol=rtol, atol=0, equal_nan=True)
