"""Canonicalize, shape and stabilize rewrites: which ops remain, and that values do not change.

Every graph is compiled twice per linker: with the rewrites (``fast_run`` minus
fusion and inplace, so the rewritten graph is what these rewrites made) and
with none. Canonicalizing rewrites must give the same values bit for bit
(NaN where NaN, the sign of zero aside for x + 0), shape rewrites numpy's
shapes, and stabilizing rewrites the exact function's value, finite where
the plain graph overflows.

A test compiles its graphs (every dtype and shape of one rewrite, or a few related
expressions) together: see ``Batch``. Each graph has inputs of its own, so no rewrite sees two
graphs at once, and the ops asserted are those of that graph's outputs alone.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from helpers import op_names
from ffigraph import Mode, function
from ffigraph.compile.ops import DeepCopyOp, Shape, Shape_i
from ffigraph.graph.basic import io_toposort
from ffigraph.scalar.basic import Cast
from ffigraph.tensor.elemwise import Elemwise

LINKERS = ["py", "c"]

F_SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2.5, -3.75, 1e-300, 1e300]


def rewrite_mode(linker):
    return Mode(linker=linker, optimizer="fast_run").excluding("fusion", "inplace")


def plain_mode(linker):
    return Mode(linker=linker, optimizer=None)


def float_values(dtype, shape=(len(F_SPECIAL),)):
    with np.errstate(over="ignore"):
        base = np.array(F_SPECIAL, dtype=dtype)
    n = int(np.prod(shape))
    return np.resize(base, n).reshape(shape).astype(dtype)


def int_values(dtype, shape=(7,)):
    info = np.iinfo(dtype)
    base = np.array([0, 1, -1 if info.min < 0 else 2, info.max, info.min, 7, 42], dtype=dtype)
    n = int(np.prod(shape))
    return np.resize(base, n).reshape(shape).astype(dtype)


def values_for(dtype, shape):
    kind = np.dtype(dtype).kind
    if kind == "f":
        return float_values(dtype, shape)
    if kind == "b":
        return (np.arange(int(np.prod(shape))) % 3 == 0).reshape(shape)
    return int_values(dtype, shape)


SHAPES = [(), (0,), (11,), (3, 4), (0, 5)]


def sym(dtype, ndim, name="x"):
    return T.tensor(dtype, (None,) * ndim, name=name)


def assert_same(got, want):
    """Same dtype, shape and values; NaN matches NaN; -0.0 matches 0.0."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def assert_close(got, want, dtype):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
    np.testing.assert_allclose(got, np.asarray(want, dtype=dtype), rtol=rtol, atol=0, equal_nan=True)


class Batch:
    """Independent graphs compiled together: ONE function with the rewrites (``mode``, by default
    ``rewrite_mode(linker)``) and, unless ``plain=False``, ONE with none, instead of two per graph.

    ``graphs`` is a list of ``(inputs, outputs)`` (``outputs`` one variable or a list). No two
    graphs may share an input, so no rewrite can relate them (merging needs common inputs) and each
    graph's rewritten nodes are what they would be were it compiled alone: ``op_names(k)``,
    ``ops(k)`` and ``nodes(k)`` are those of graph ``k``'s outputs only.
    """

    def __init__(self, graphs, linker, mode=None, plain=True):
        self.inputs, self.outputs, self.in_spans, self.out_spans = [], [], [], []
        for ins, outs in graphs:
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            assert not set(ins) & set(self.inputs), "graphs of a Batch need inputs of their own"
            self.in_spans.append(slice(len(self.inputs), len(self.inputs) + len(ins)))
            self.out_spans.append(slice(len(self.outputs), len(self.outputs) + len(outs)))
            self.inputs += ins
            self.outputs += outs
        self.f = function(self.inputs, self.outputs, mode=mode or rewrite_mode(linker))
        self.g = function(self.inputs, self.outputs, mode=plain_mode(linker)) if plain else None

    def __len__(self):
        return len(self.in_spans)

    def fgraph_outputs(self, k):
        """Graph ``k``'s outputs in the rewritten function's graph."""
        return self.f.maker.fgraph.outputs[self.out_spans[k]]

    def nodes(self, k):
        return io_toposort(self.f.maker.fgraph.inputs, self.fgraph_outputs(k))

    def ops(self, k):
        return [n.op for n in self.nodes(k)]

    def op_names(self, k):
        return op_names(self.nodes(k))

    def _call(self, fn, args):
        flat = [a for graph_args in args for a in graph_args]
        assert len(flat) == len(self.inputs)
        outs = fn(*flat)
        return [outs[span] for span in self.out_spans]

    def run(self, args):
        """Call both functions on ``args`` (one list of arguments per graph); returns the outputs
        of each graph (a list per graph), rewritten and plain."""
        return self._call(self.f, args), (self._call(self.g, args) if self.g is not None else None)

    def rounds(self, datasets):
        """``datasets``: for each graph, the list of argument lists to call it on. Call both
        functions once per round, each graph on its next dataset (or its last again); returns, for
        each graph, a list of (args, rewritten outputs, plain outputs), one per dataset."""
        results = [[] for _ in datasets]
        for r in range(max(len(d) for d in datasets)):
            args = [d[min(r, len(d) - 1)] for d in datasets]
            fo, go = self.run(args)
            for k, d in enumerate(datasets):
                if r < len(d):
                    results[k].append((args[k], fo[k], go[k] if go is not None else None))
        return results


def _one(batch, args):
    """Each graph's first output, rewritten and plain, for graphs of one output each."""
    fo, go = batch.run(args)
    return [o[0] for o in fo], ([o[0] for o in go] if go is not None else None)


# ------------------------------------------------------------------ x op constant -> x

IDENTITIES = {
    # name: (build, dtypes it applies to)
    "mul_one_right": (lambda x: x * 1, ("float64", "float32", "int64", "int32", "uint8")),
    "mul_one_left": (lambda x: 1 * x, ("float64", "float32", "int64", "int32", "uint8")),
    "add_zero_right": (lambda x: x + 0, ("float64", "float32", "int64", "int32", "uint8")),
    "add_zero_left": (lambda x: 0 + x, ("float64", "float32", "int64", "int32", "uint8")),
    "sub_zero": (lambda x: x - 0, ("float64", "float32", "int64", "int32", "uint8")),
    "div_one": (lambda x: x / 1, ("float64", "float32")),
    "pow_one": (lambda x: x ** 1, ("float64", "float32", "int64", "int32")),
    "mul_one_float": (lambda x: x * 1.0, ("float64", "float32")),
    "add_neg_zero": (lambda x: x + (-0.0), ("float64", "float32")),
    "mul_true": (lambda x: x * True, ("bool",)),
    "add_false": (lambda x: x + False, ("bool",)),
}


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("name", sorted(IDENTITIES))
def test_identity_with_constant(name, linker):
    """Every dtype and shape of one identity, in one function."""
    build, dtypes = IDENTITIES[name]
    combos = [(dtype, shape) for dtype in dtypes for shape in SHAPES]
    graphs = []
    for dtype, shape in combos:
        x = sym(dtype, len(shape))
        graphs.append(([x], build(x)))
    b = Batch(graphs, linker)
    values = [values_for(dtype, shape) for dtype, shape in combos]
    got, want = _one(b, [[v] for v in values])
    for k, (dtype, shape) in enumerate(combos):
        assert b.op_names(k) == [], (name, dtype, shape, b.op_names(k))
        v = values[k]
        assert_same(got[k], want[k])
        assert_same(got[k], v)
        assert not np.shares_memory(got[k], v)  # the output is still a fresh array


@pytest.mark.parametrize("linker", LINKERS)
def test_identity_edge_cases(linker):
    """In one function: x + 0 keeps -0.0; an identity looks through a DimShuffle of the constant;
    a size-1 constant of higher ndim keeps the broadcast; a bigger constant, an identity that
    casts and other constants are no identities."""
    x_negzero = sym("float64", 1)
    x_ds = sym("float64", 2)
    one = T.constant(np.ones((), dtype="float64"))
    x_size1 = sym("float64", 1)
    x_bigger = sym("float64", 1)
    x_cast = sym("float32", 1)
    out_cast = T.mul(x_cast, T.constant(np.float64(1.0)))
    assert out_cast.dtype == "float64"  # float32 x times a float64 constant 1 computes in float64: not x
    b_bool = sym("bool", 1)
    others = [(lambda x: x * 2, "mul"), (lambda x: x + 1, "add"), (lambda x: 0 - x, "sub"),
              (lambda x: 1 / x, "true_div"), (lambda x: x ** 3, "pow"), (lambda x: x * np.nan, "mul")]
    x_others = [sym("float64", 1) for _ in others]
    graphs = [([x_negzero], x_negzero + 0),
              ([x_ds], x_ds * T.dimshuffle(one, ("x", "x"))),
              ([x_size1], x_size1 * np.ones((1, 1))),
              ([x_bigger], x_bigger * np.ones(3)),
              ([x_cast], out_cast),
              ([b_bool], b_bool * 1)]  # bool times int 1 is int64, not bool
    graphs += [([x], build(x)) for x, (build, _) in zip(x_others, others)]
    b = Batch(graphs, linker)
    v11 = float_values("float64", (11,))
    datasets = [[[np.array([-0.0, 0.0, np.nan])]],
                [[float_values("float64", (2, 11))]],
                [[float_values("float64", (11,))], [np.zeros(0)]],
                [[np.array([np.nan])]],
                [[float_values("float32", (11,))]],
                [[values_for("bool", (5,))]]]
    datasets += [[[v11]] for _ in others]
    res = b.rounds(datasets)
    # the one accepted difference: (-0.0) + 0.0 is +0.0, the rewrite keeps -0.0
    (_, got, want), = res[0]
    assert_same(got[0], want[0])
    assert np.signbit(got[0][0]) and not np.signbit(want[0][0])
    # x * dimshuffle(1) is x
    assert b.op_names(1) == []
    (args, got, want), = res[1]
    assert_same(got[0], want[0])
    assert_same(got[0], args[0])
    # the constant adds an axis: the output is (1, n), not x's (n,); x is padded to (1, n)
    # when the node is made, and that padded x is what replaces the product
    assert b.op_names(2) == ["DimShuffle"]
    assert len(res[2]) == 2
    for args, got, want in res[2]:
        assert_same(got[0], want[0])
        assert got[0].shape == (1, args[0].shape[0])
    # x of length 1 times ones(3) has length 3: x * ones(3) is not x
    assert "mul" in b.op_names(3)
    (_, got, want), = res[3]
    assert_same(got[0], want[0])
    assert got[0].shape == (3,)
    # identities that cast are kept
    for k in (4, 5):
        assert "mul" in b.op_names(k), k
        (_, got, want), = res[k]
        assert_same(got[0], want[0])
    # other constants
    for k, (_, name) in enumerate(others, start=6):
        assert name in b.op_names(k), (name, b.op_names(k))
        (_, got, want), = res[k]
        assert_same(got[0], want[0])


@pytest.mark.parametrize("linker", LINKERS)
def test_excluding_local_mul_one_keeps_the_mul(linker):
    x, x2 = sym("float64", 1), sym("float64", 1)
    b = Batch([([x], x * 1), ([x2], (x2 * 1) + 0)], linker,
              mode=rewrite_mode(linker).excluding("local_mul_one"), plain=False)
    assert b.op_names(0) == ["mul"]
    v = float_values("float64", (11,))
    got, _ = _one(b, [[v], [v]])
    assert_same(got[0], v)
    # the other identities still run
    assert b.op_names(1) == ["mul"]


# ------------------------------------------------------------------ unary chains


@pytest.mark.parametrize("linker", LINKERS)
def test_neg_neg(linker):
    combos = [(dtype, shape) for dtype in ["float64", "float32", "int32", "int8", "uint8"] for shape in SHAPES]
    xs = [sym(dtype, len(shape)) for dtype, shape in combos]
    b = Batch([([x], -(-x)) for x in xs], linker)
    values = [values_for(dtype, shape) for dtype, shape in combos]
    got, want = _one(b, [[v] for v in values])
    for k, combo in enumerate(combos):
        assert b.op_names(k) == [], combo
        assert_same(got[k], want[k])
        assert_same(got[k], values[k])


@pytest.mark.parametrize("linker", LINKERS)
def test_abs_abs(linker):
    combos = [(dtype, shape) for dtype in ["float64", "float32", "int64", "int8"] for shape in SHAPES]
    xs = [sym(dtype, len(shape)) for dtype, shape in combos]
    b = Batch([([x], abs(abs(x))) for x in xs], linker)
    values = [values_for(dtype, shape) for dtype, shape in combos]
    got, want = _one(b, [[v] for v in values])
    for k, combo in enumerate(combos):
        assert b.op_names(k) == ["abs"], combo
        assert_same(got[k], want[k])
        with np.errstate(over="ignore"):
            assert_same(got[k], np.abs(values[k]))


@pytest.mark.parametrize("linker", LINKERS)
def test_useless_cast(linker):
    dtypes = ["float64", "float32", "int32", "bool"]
    graphs, others = [], []
    for dtype in dtypes:
        x, x2 = sym(dtype, 2), sym(dtype, 2)
        other = "float32" if dtype != "float32" else "float64"
        others.append(other)
        graphs += [([x], Elemwise(Cast(dtype))(x)), ([x2], T.cast(x2, other))]  # a real cast stays
    b = Batch(graphs, linker)
    values = [values_for(dtype, (3, 4)) for dtype in dtypes]
    got, want = _one(b, [[v] for v in values for _ in range(2)])
    for i, (dtype, other, v) in enumerate(zip(dtypes, others, values)):
        assert b.op_names(2 * i) == [], dtype
        assert_same(got[2 * i], want[2 * i])
        assert_same(got[2 * i], v)
        assert b.op_names(2 * i + 1) == ["cast"], dtype
        with np.errstate(all="ignore"):
            assert_same(got[2 * i + 1], v.astype(other))


@pytest.mark.parametrize("linker", LINKERS)
def test_sub_self(linker):
    """x - x of ints is zeros (a constant when the shape is static); of floats it is kept, as
    inf - inf and nan - nan are nan."""
    int_combos = [(dtype, shape) for dtype in ["int64", "int32", "uint8"] for shape in SHAPES]
    graphs, values = [], []
    for dtype, shape in int_combos:
        x = sym(dtype, len(shape))
        graphs.append(([x], x - x))
        values.append(values_for(dtype, shape))
    static = ["int64", "int32", "uint8"]
    for dtype in static:
        x = T.tensor(dtype, (2, 3), name="x")
        graphs.append(([x], x - x))
        values.append(values_for(dtype, (2, 3)))
    floats = ["float64", "float32"]
    for dtype in floats:
        x = sym(dtype, 1)
        graphs.append(([x], x - x))
        values.append(float_values(dtype, (11,)))
    b = Batch(graphs, linker)
    got, want = _one(b, [[v] for v in values])
    for k, (dtype, shape) in enumerate(int_combos):
        assert "sub" not in b.op_names(k), (dtype, shape)
        assert_same(got[k], want[k])
        assert_same(got[k], np.zeros(shape, dtype=dtype))
    # static shape: a constant
    for k, dtype in enumerate(static, start=len(int_combos)):
        assert b.op_names(k) == [], dtype
        assert_same(got[k], np.zeros((2, 3), dtype=dtype))
    for k, dtype in enumerate(floats, start=len(int_combos) + len(static)):
        assert b.op_names(k) == ["sub"], dtype
        assert_same(got[k], want[k])
        assert np.isnan(got[k][:3]).all()


# ------------------------------------------------------------------ DimShuffle


@pytest.mark.parametrize("linker", LINKERS)
def test_dimshuffle_chains(linker):
    """Chains of DimShuffle become one (or none); one that drops an axis still checks that the
    axis has length 1."""
    v = float_values("float64", (3, 4))
    chains = [
        (lambda x: x.T.T, 0, v),
        (lambda x: x.dimshuffle(0, "x", 1).dimshuffle(2, 0, 1), 1, v.T[:, :, None].transpose(0, 1, 2)),
        (lambda x: x.dimshuffle("x", 1, 0).dimshuffle(1, 2), 1, v.T),
        (lambda x: x.dimshuffle(1, "x", 0).dimshuffle(2, 1, 0).dimshuffle(0, 2, "x"), 1, v[:, :, None]),
        (lambda x: x.dimshuffle(0, 1), 0, v),
    ]
    xs = [sym("float64", 2) for _ in range(len(chains) + 1)]
    graphs = [([x], build(x)) for x, (build, _, _) in zip(xs, chains)]
    graphs.append(([xs[-1]], xs[-1].dimshuffle(0).dimshuffle("x", 0)))  # drops axis 1: it must have length 1
    b = Batch(graphs, linker)
    e = np.zeros((0, 4))
    dropping = np.array([[1.0], [np.nan]])
    res = b.rounds([[[v], [e]] for _ in chains] + [[[dropping]]])
    for k, (_, n_dimshuffles, want) in enumerate(chains):
        names = b.op_names(k)
        assert names.count("DimShuffle") == n_dimshuffles, names
        assert set(names) <= {"DimShuffle"}
        want = np.asarray(want)
        (_, got, plain), (_, got_e, plain_e) = res[k]
        assert_same(got[0], plain[0])
        assert_same(got[0], want.reshape(plain[0].shape))
        assert_same(got_e[0], plain_e[0])
    assert b.op_names(len(chains)) == ["DimShuffle"]
    (_, got, plain), = res[len(chains)]
    assert_same(got[0], plain[0])
    good = [[v] for _ in chains]
    for fn in (b.f, b.g):
        with pytest.raises(Exception):
            b._call(fn, good + [[np.ones((2, 3))]])


# ------------------------------------------------------------------ Reshape


@pytest.mark.parametrize("linker", LINKERS)
def test_reshape_reshape(linker):
    v = float_values("float64", (3, 4))
    x1, x2, x3, x4 = [sym("float64", 2) for _ in range(4)]
    n = T.lscalar("n")
    b = Batch([([x1], x1.reshape((12,)).reshape((4, 3))),
               ([x2], x2.reshape((-1,)).reshape((2, -1))),
               ([x3, n], x3.reshape((2, 6)).reshape((n, -1, 2))),
               ([x4], x4.reshape((-1,)).reshape((0, 5)))], linker)
    e = np.zeros((0, 3))
    got, want = _one(b, [[v], [v], [v, 3], [e]])
    for k in range(3):
        assert b.op_names(k).count("Reshape") == 1, b.op_names(k)
        assert_same(got[k], want[k])
    assert_same(got[3], want[3])


@pytest.mark.parametrize("linker", LINKERS)
def test_useless_reshape(linker):
    v = float_values("float64", (3, 4))
    useless = [lambda xs: xs.reshape((3, 4)), lambda xs: xs.reshape((3, -1)), lambda xs: xs.reshape((-1, 4))]
    statics = [T.tensor("float64", (3, 4), name="xs") for _ in range(len(useless) + 1)]
    graphs = [([xs], build(xs)) for xs, build in zip(statics, useless)]
    graphs.append(([statics[-1]], statics[-1].reshape((4, 3))))  # a different shape stays
    # to its own symbolic shape, and a vector to [-1]
    x, x0, vec = sym("float64", 2), sym("float64", 2), sym("float64", 1)
    symbolic = [(x, x.reshape(x.shape), v), (vec, vec.reshape((-1,)), v.ravel()),
                (x0, x0.reshape(x0.shape), np.zeros((0, 2)))]
    graphs += [([inp], out) for inp, out, _ in symbolic]
    # a 0-d tensor reshaped to ()
    s = sym("float64", 0)
    graphs.append(([s], T.reshape(s, [])))
    b = Batch(graphs, linker)
    args = [[v]] * (len(useless) + 1) + [[val] for _, _, val in symbolic] + [[np.float64(np.nan)]]
    got, want = _one(b, args)
    for k in range(len(useless)):
        assert b.op_names(k) == []
        assert_same(got[k], want[k])
        assert_same(got[k], v)
    k = len(useless)
    assert b.op_names(k) == ["Reshape"]
    assert_same(got[k], v.reshape(4, 3))
    for k in range(len(useless) + 1, len(useless) + 1 + len(symbolic)):
        assert b.op_names(k) == []
        assert_same(got[k], want[k])
    k = len(graphs) - 1
    assert b.op_names(k) == []
    assert_same(got[k], np.array(np.nan))


# ------------------------------------------------------------------ shapes


def _numpy_shape(*arrays):
    return np.array(np.broadcast_shapes(*[a.shape for a in arrays]), dtype=np.int64)


def _computes(batch, k, names):
    """Whether graph ``k`` still has an elementwise node of one of ``names``."""
    return any(isinstance(n.op, Elemwise) and n.op.scalar_op.name in names for n in batch.nodes(k))


@pytest.mark.parametrize("linker", LINKERS)
def test_shape_of_a_computation_does_not_compute_it(linker):
    """The shape of an elementwise graph (of ranks that broadcast, through Shape_i and an indexed
    shape, through reshape, dimshuffle and a reduction) needs none of its elementwise nodes; a
    static shape becomes a constant."""
    a, b_ = sym("float64", 1, "a"), sym("float64", 1, "b")
    a2, b3, c2 = sym("float64", 1, "a"), sym("float64", 3, "b"), sym("float32", 2, "c")
    a3, b4 = sym("float64", 2, "a"), sym("float64", 1, "b")
    out3 = T.sqrt(a3) + b4
    x5 = sym("float64", 2)
    xs, ys = T.tensor("float64", (2, 3), name="x"), T.tensor("float64", (1, 3), name="y")
    s = sym("float64", 0)
    graphs = [([a, b_], (T.exp(a) * b_).shape),
              ([a2, b3, c2], (T.exp(a2) * b3 + T.log(c2)).shape),
              ([a3, b4], [T.shape_i(out3, 0), T.shape_i(out3, 1), out3.shape[1]]),
              ([x5], T.exp(x5).reshape((-1, 2)).dimshuffle(1, "x", 0).sum(axis=1).shape),
              ([xs, ys], (T.exp(xs) + ys).shape),
              ([s], T.exp(s).shape)]
    b = Batch(graphs, linker)
    assert not _computes(b, 0, ("exp", "mul"))
    assert not _computes(b, 1, ("exp", "log", "mul", "add"))
    assert not _computes(b, 2, ("sqrt", "add"))
    assert not _computes(b, 3, ("exp",))
    for k in (4, 5):
        assert [op for op in b.ops(k) if not isinstance(op, DeepCopyOp)] == []
    lengths = [(3, 3), (1, 4), (4, 1), (1, 1), (0, 0), (1, 0), (0, 1)]
    ranks = [((4,), (2, 3, 4), (3, 4)), ((1,), (2, 3, 4), (3, 1)), ((4,), (2, 1, 1), (1, 4)),
             ((0,), (2, 3, 1), (1, 1)), ((1,), (0, 1, 1), (5, 1))]
    indexed = [((2, 3), (3,)), ((2, 1), (5,)), ((0, 1), (4,)), ((3, 1), (0,)), ((2, 3), (1,))]
    reshaped = [(3, 4), (2, 1), (0, 6), (6, 0)]
    res = b.rounds([
        [[np.ones(la), np.ones(lb)] for la, lb in lengths],
        [[np.ones(sa), np.ones(sb), np.ones(sc, dtype="float32")] for sa, sb, sc in ranks],
        [[np.ones(sa), np.ones(sb)] for sa, sb in indexed],
        [[np.ones(shape)] for shape in reshaped],
        [[np.ones((2, 3)), np.ones((1, 3))]],
        [[np.float64(1)]],
    ])
    assert len(res[0]) == len(lengths) and len(res[1]) == len(ranks) and len(res[2]) == len(indexed)
    for k in (0, 1):
        for args, got, want in res[k]:
            assert_same(got[0], _numpy_shape(*args))
            assert_same(got[0], want[0])
    for (va, vb), got, want in res[2]:
        shape = np.broadcast_shapes(va.shape, vb.shape)
        assert [int(x) for x in got] == [shape[0], shape[1], shape[1]]
        for x in got:
            assert np.asarray(x).dtype == np.int64
        assert [int(x) for x in want] == [int(x) for x in got]
    assert len(res[3]) == len(reshaped)
    for (v,), got, want in res[3]:
        expected = np.exp(v).reshape((-1, 2)).transpose(1, 0)[:, None, :].sum(axis=1).shape
        assert_same(got[0], np.array(expected, dtype=np.int64))
        assert_same(want[0], got[0])
    (_, got, want), = res[4]
    assert_same(got[0], np.array([2, 3], dtype=np.int64))
    assert_same(want[0], got[0])
    # 0-d: an empty shape
    (_, got, want), = res[5]
    assert_same(got[0], np.zeros(0, dtype=np.int64))
    assert_same(want[0], np.zeros(0, dtype=np.int64))


@pytest.mark.parametrize("linker", LINKERS)
def test_shape_of_what_is_there_anyway(linker):
    """The shape of an input is read from it (Shape, Shape_i); the shape of a value computed
    anyway is read from that value; zeros_like of an elementwise x needs no x."""
    x, x1 = sym("float64", 2), sym("float64", 2)
    a, b2 = sym("float64", 1, "a"), sym("float64", 2, "b")
    out = T.exp(a) * b2
    # x - x of ints becomes an alloc of x's shape; the shape of an elementwise x needs no x
    ia, ib = sym("int32", 1, "a"), sym("int32", 2, "b")
    prod = ia * ib
    b = Batch([([x], x.shape), ([x1], T.shape_i(x1, 1)), ([a, b2], [out, out.shape]), ([ia, ib], prod - prod)],
              linker)
    assert [type(op) for op in b.ops(0) if not isinstance(op, DeepCopyOp)] == [Shape]
    assert [type(op) for op in b.ops(1) if not isinstance(op, DeepCopyOp)] == [Shape_i]
    assert Shape in [type(op) for op in b.ops(2)]
    assert "mul" not in b.op_names(3) and "sub" not in b.op_names(3)
    computed = [((3,), (2, 3)), ((1,), (2, 4)), ((0,), (2, 1)), ((1,), (0, 1))]
    zeros_like = [((3,), (2, 3)), ((1,), (2, 4)), ((0,), (1, 1))]
    res = b.rounds([
        [[np.ones((0, 3))]],
        [[np.ones((0, 3))]],
        [[float_values("float64", sa), float_values("float64", sb)] for sa, sb in computed],
        [[np.ones(sa, dtype="int32"), np.ones(sb, dtype="int32")] for sa, sb in zeros_like],
    ])
    (_, got, _), = res[0]
    assert_same(got[0], np.array([0, 3], dtype=np.int64))
    assert len(res[2]) == len(computed)
    for _, got, want in res[2]:
        assert_same(got[0], want[0])
        assert_same(got[1], np.array(want[0].shape, dtype=np.int64))
    assert len(res[3]) == len(zeros_like)
    for (va, vb), got, want in res[3]:
        assert_same(got[0], np.zeros(np.broadcast_shapes(va.shape, vb.shape), dtype="int32"))
        assert_same(got[0], want[0])


# ------------------------------------------------------------------ stabilize

Z = np.array([-800.0, -50.0, -1.0, -1e-8, -0.0, 0.0, 1e-8, 1.0, 50.0, 800.0, np.nan, np.inf, -np.inf])


def _softplus(x):
    with np.errstate(all="ignore"):
        return np.logaddexp(np.zeros((), x.dtype), x)


def _sigmoid(x):
    with np.errstate(all="ignore"):
        return np.exp(-np.logaddexp(np.zeros((), x.dtype), -x))


def _finite_agree(got, plain, dtype, mask):
    """Where the plain graph does not overflow, both give the same value (to rounding)."""
    got, plain = np.asarray(got), np.asarray(plain)
    assert plain.dtype == got.dtype
    rtol = 1e-4 if np.dtype(dtype) == np.float32 else 1e-9
    np.testing.assert_allclose(got[mask], plain[mask], rtol=rtol, atol=1e-30, equal_nan=True)


STABILIZE = {
    # name: (build, exact reference, ops that must remain, ops that must be gone, "safe" mask)
    "log_sigmoid": (lambda x: T.log(T.sigmoid(x)), lambda v: -_softplus(-v),
                    {"softplus"}, {"log", "sigmoid"}, lambda v: np.abs(v) < 30),
    "log_one_minus_sigmoid": (lambda x: T.log(1 - T.sigmoid(x)), lambda v: -_softplus(v),
                              {"softplus"}, {"log", "sigmoid", "sub"}, lambda v: np.abs(v) < 30),
    "one_minus_sigmoid": (lambda x: 1 - T.sigmoid(x), lambda v: _sigmoid(-v),
                          {"sigmoid", "neg"}, {"sub"}, lambda v: np.abs(v) < 30),
    "log_one_plus": (lambda x: T.log(1 + x), np.log1p, {"log1p"}, {"log", "add"},
                     lambda v: np.abs(v) > 1e-3),
    "log_plus_one": (lambda x: T.log(x + 1), np.log1p, {"log1p"}, {"log", "add"},
                     lambda v: np.abs(v) > 1e-3),
    "log_one_plus_exp": (lambda x: T.log(1 + T.exp(x)), _softplus, {"softplus"}, {"log", "add", "exp", "log1p"},
                         lambda v: np.abs(v) < 30),
    "log1p_exp": (lambda x: T.log1p(T.exp(x)), _softplus, {"softplus"}, {"exp", "log1p"},
                  lambda v: v < 30),
    "exp_minus_one": (lambda x: T.exp(x) - 1, np.expm1, {"expm1"}, {"exp", "sub"},
                      lambda v: np.abs(v) > 1e-3),
    "log_exp": (lambda x: T.log(T.exp(x)), lambda v: v.copy(), set(), {"log", "exp"},
                lambda v: (np.abs(v) > 0.5) & (np.abs(v) < 30)),
}

STABILIZE_SHAPES = [(), (0,), (0, 3), (2, 3)]


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("name", sorted(STABILIZE))
def test_stabilize(name, linker):
    """float64 and float32, on Z's special values and on 0-d, empty and 2-d inputs, in one function."""
    build, ref, present, absent, safe = STABILIZE[name]
    dtypes = ["float64", "float32"]
    combos = [(dtype, None) for dtype in dtypes] + [(dtype, shape) for dtype in dtypes for shape in STABILIZE_SHAPES]
    graphs, args = [], []
    for dtype, shape in combos:
        x = sym(dtype, 1 if shape is None else len(shape))
        graphs.append(([x], build(x)))
        if shape is None:
            with np.errstate(over="ignore"):
                args.append([Z.astype(dtype)])
        else:
            args.append([np.resize(np.array([0.5, -2.0, 3.0], dtype=dtype), int(np.prod(shape))).reshape(shape)])
    b = Batch(graphs, linker)
    got, plain = _one(b, args)
    for k, (dtype, shape) in enumerate(combos):
        if shape is None:
            names = set(b.op_names(k))
            assert present <= names, (dtype, names, present)
            assert not names & absent, (dtype, names, absent)
            v = args[k][0]
            assert got[k].dtype == np.dtype(dtype)
            with np.errstate(all="ignore"):
                want = ref(v)
            assert_close(got[k], want, dtype)
            _finite_agree(got[k], plain[k], dtype, safe(v) & np.isfinite(v))
        else:
            # 0-d, empty, 2-d
            assert_close(got[k], np.asarray(plain[k]), dtype)


@pytest.mark.parametrize("linker", LINKERS)
def test_stabilize_int_inputs_cast_before_negating(linker):
    # sigmoid of ints works in floats: -x must be taken in floats too (int8 -128 would wrap)
    builds = [(lambda x: T.log(T.sigmoid(x)), lambda v: -_softplus(-v)),
              (lambda x: T.log(1 - T.sigmoid(x)), lambda v: -_softplus(v)),
              (lambda x: 1 - T.sigmoid(x), lambda v: _sigmoid(-v))]
    combos = [(dtype, build, ref) for dtype in ["int8", "int32", "uint8", "bool"] for build, ref in builds]
    xs = [sym(dtype, 1) for dtype, _, _ in combos]
    outs = [build(x) for x, (_, build, _) in zip(xs, combos)]
    b = Batch([([x], out) for x, out in zip(xs, outs)], linker)
    values = [values_for(dtype, (7,)) for dtype, _, _ in combos]
    got, _ = _one(b, [[v] for v in values])
    for k, ((dtype, _, ref), out, v) in enumerate(zip(combos, outs, values)):
        names = b.op_names(k)
        assert "softplus" in names or "sigmoid" in names, (dtype, names)
        assert got[k].dtype == np.dtype(out.dtype)
        assert_close(got[k], ref(v.astype(out.dtype)), out.dtype)


@pytest.mark.parametrize("linker", LINKERS)
def test_stabilize_keeps_what_it_must(linker):
    """Graphs the stabilizing rewrites must leave as written (or not take for another); and
    -log(sigmoid(x)) becomes neg(softplus(-x)) with no double negation."""
    # log(1 + x) of ints: 1 + x could wrap around, so the graph stays as written
    i, i2 = sym("int8", 1), sym("int8", 1)
    # float32 x plus a float64 constant: the original computes in float64
    x = sym("float32", 1)
    y = sym("float64", 1)
    z = sym("float64", 1)
    b = Batch([([i], T.log(1 + i)),
               ([x], T.log(T.add(T.constant(np.float64(1.0)), x))),
               ([i2], T.log(T.exp(i2))),                    # log(exp(x)) of ints is float: not x
               ([y], T.log(2 - T.sigmoid(y))),              # log(2 - sigmoid(x)) is not log(1 - sigmoid(x))
               ([z], -T.log(T.sigmoid(z)))], linker)
    assert "log" in b.op_names(0) and "add" in b.op_names(0)
    assert b.fgraph_outputs(1)[0].dtype == "float64"
    assert "log" in b.op_names(2)
    assert "softplus" not in b.op_names(3)
    assert b.op_names(4) == ["neg", "softplus"]
    v = np.array([127, 0, -1, 5], dtype="int8")
    vx = np.array([1e-10, 2.0], dtype="float32")
    vy = np.array([0.5, -3.0, np.nan])
    with np.errstate(all="ignore"):
        got, want = _one(b, [[v], [vx], [v], [vy], [Z.copy()]])
    with np.errstate(all="ignore"):
        assert_close(got[0], want[0], "float32")
    assert_close(got[1], want[1], "float64")
    assert_close(got[3], want[3], "float64")
    assert_close(got[4], _softplus(-Z), "float64")


def _cross_entropy_reference(z, y):
    # -y*log(sigmoid(z)) - (1-y)*log(1-sigmoid(z)) = y*softplus(-z) + (1-y)*softplus(z)
    return y * _softplus(-z) + (1 - y) * _softplus(z)


def _cross_entropy(dtype):
    z = sym(dtype, 1, "z")
    y = sym(dtype, 1, "y")
    p = T.sigmoid(z)
    cost = -y * T.log(p) - (1 - y) * T.log(1 - p)
    return z, y, cost


def test_cross_entropy_default_mode():
    """float64 and float32 in one function of the default mode."""
    dtypes = ["float64", "float32"]
    graphs = [_cross_entropy(dtype) for dtype in dtypes]
    inputs = [v for z, y, _ in graphs for v in (z, y)]
    costs = [cost for _, _, cost in graphs]
    f = function(inputs, costs)  # the default mode
    args = []
    for dtype in dtypes:
        args += [np.array([800, -800, 800, -800, 0, 3, -3, 40], dtype=dtype),
                 np.array([1, 1, 0, 0, 1, 0.25, 0.75, 1], dtype=dtype)]
    got_all = f(*args)
    with np.errstate(all="ignore"):
        plain_all = function(inputs, costs, mode=Mode(optimizer=None))(*args)
    for k, dtype in enumerate(dtypes):
        vz, vy = args[2 * k], args[2 * k + 1]
        got = got_all[k]
        assert got.dtype == np.dtype(dtype)
        assert np.isfinite(got).all()
        assert_close(got, _cross_entropy_reference(vz, vy), dtype)
        np.testing.assert_allclose(got[:4], [0, 800, 800, 0], atol=0, rtol=0)
        assert not np.isfinite(plain_all[k][:4]).any()


@pytest.mark.parametrize("linker", LINKERS)
def test_cross_entropy(linker):
    dtypes = ["float64", "float32"]
    graphs = [_cross_entropy(dtype) for dtype in dtypes]
    b = Batch([([z, y], cost) for z, y, cost in graphs], linker)
    args = []
    for dtype in dtypes:
        args.append([np.array([800, -800, 800, -800, 0, 3, -3, 40, np.nan, np.inf, -np.inf], dtype=dtype),
                     np.array([1, 1, 0, 0, 1, 0.25, 0.75, 1, 1, 1, 0], dtype=dtype)])
    got_all, plain_all = _one(b, args)
    for k, dtype in enumerate(dtypes):
        names = b.op_names(k)
        assert "log" not in names and "sigmoid" not in names
        vz, vy = args[k]
        got, plain = got_all[k], plain_all[k]
        assert got.dtype == np.dtype(dtype)
        assert np.isfinite(got[:8]).all()
        assert_close(got[:8], _cross_entropy_reference(vz[:8], vy[:8]), dtype)
        # z = nan gives nan; z = +-inf gives 0 * inf = nan in the (1-y) or y term, as the plain graph does
        assert np.isnan(got[8:]).all() and np.isnan(plain[8:]).all()
        assert not np.isfinite(plain[:4]).any()
        _finite_agree(got, plain, dtype, np.abs(vz) < 30)


def test_pow_two_and_minus_one_are_specialized_exactly(mode):
    """x**2 -> sqr(x) and (floats) x**-1 -> 1/x: no pow left, and numpy's values bit for bit
    (float64, float32 and int64 in one function)."""
    from ffigraph.printing import debugprint

    dtypes = ["float64", "float32", "int64"]
    xs = [T.tensor(dtype, (None,), name="x") for dtype in dtypes]
    outs, spans = [], []
    for dtype, x in zip(dtypes, xs):
        these = [x ** 2] + ([x ** -1] if dtype != "int64" else [])
        spans.append(slice(len(outs), len(outs) + len(these)))
        outs += these
    f = function(xs, outs, mode=Mode(linker=mode.linker.name))
    text = debugprint(f, file="str")
    assert "pow" not in text, text
    values = []
    for dtype in dtypes:
        if dtype == "int64":
            values.append(np.array([-3, 0, 7, 2 ** 31], dtype=dtype))
        else:
            values.append(np.array([-3.5, -0.0, 0.0, 1e-30, np.inf, -np.inf, np.nan, 7.25], dtype=dtype))
    got_all = f(*values)
    for dtype, xv, span in zip(dtypes, values, spans):
        got = got_all[span]
        with np.errstate(all="ignore"):
            expected = [np.power(xv, 2)] + ([np.power(xv, np.asarray(-1, dtype))] if dtype != "int64" else [])
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g, e)
            np.testing.assert_array_equal(np.signbit(g), np.signbit(e))
