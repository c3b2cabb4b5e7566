"""IncSubtensor (inc_subtensor / set_subtensor): a fresh copy of x with x[idx] += y (or = y),
checked against numpy under every linker, on several memory layouts of x and y.

Many cases share one compiled function (one output per case) to keep the C compiles few.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.tensor.subtensor import IncSubtensor
from helpers import ALL_DTYPES, LAYOUTS, assert_matches, assert_raises as _raises, relayout, sample

# (x shape, index, y shape): y broadcasts to x[index]
CASES = [
    ((5, 4), (slice(1, 3), 0), (2,)),
    ((5, 4), (slice(1, 3), 0), ()),
    ((5, 4), (slice(None, None, -2),), (4,)),           # y broadcast over the rows, negative step
    ((5, 4), (slice(None, None, -2),), (3, 1)),
    ((5, 4), (-1,), (4,)),                              # negative index
    ((5, 4), (-2, -1), ()),                             # a 0-d region
    ((3, 4, 5), (slice(None), slice(3, 0, -1), 2), (1, 3)),
    ((3, 4, 5), (Ellipsis, slice(-2, None)), (4, 2)),
    ((6,), (slice(10, -10, -1),), (6,)),                # bounds clamped, reversed
    ((6,), (slice(2, 2),), ()),                         # an empty region
    ((6,), (slice(2, 2),), (0,)),
    ((0, 3), (slice(None, None, 2),), (3,)),            # an empty x
    ((), (), ()),                                       # 0-d x, the whole of it
]


def _id(v):
    return str(v).replace(" ", "")


def numpy_inc(x, idx, y, set_instead_of_inc):
    out = np.array(x, copy=True)
    y = np.asarray(y).astype(out.dtype)
    if set_instead_of_inc:
        out[idx] = y
    else:
        out[idx] += y
    return out


def ran_in_c(f, op_name="IncSubtensor"):
    """Under the C linkers, every node of type op_name ran in C (the 'c' linker has no other way)."""
    describe = getattr(f.maker.linker, "describe_nodes", None)
    if describe is None or getattr(f.maker.linker, "name", "") == "py":
        return
    names = [type(node.op).__name__ for node, how in describe() if how.startswith("C")]
    assert op_name in names, f.info()


def check_cases(mode, groups, special=True, layouts=LAYOUTS):
    """One function computing inc and set for every case of every group (cases, x dtype, y dtype or
    None for x's); compared with numpy on each layout. Each group draws its values from its own
    generator, so a group's values do not depend on what else is batched with it."""
    values, syms, outs, refs, dtypes = [], [], [], [], []
    for cases, xdtype, ydtype in groups:
        ydtype = ydtype or xdtype
        rng = np.random.default_rng(1)
        for xshape, idx, yshape in cases:
            k = len(syms) // 2
            xv = sample(xdtype, xshape, rng=rng, special=special)
            yv = sample(ydtype, yshape, rng=rng, special=special)
            x = T.tensor(xdtype, (None,) * len(xshape), name="x%d" % k)
            y = T.tensor(ydtype, (None,) * len(yshape), name="y%d" % k)
            values += [xv, yv]
            syms += [x, y]
            for set_ in (False, True):
                fn = T.set_subtensor if set_ else T.inc_subtensor
                outs.append(fn(x[idx] if idx != () else x, y))
                with np.errstate(all="ignore"):
                    refs.append(numpy_inc(xv, idx, yv, set_))
                dtypes.append(xdtype)   # the result keeps x's dtype (y is cast to it)
    f = function(syms, outs, mode=mode)
    ran_in_c(f)
    for layout in layouts:
        args = [relayout(v, layout) for v in values]
        got = f(*args)
        for g, want, out, dtype in zip(got, refs, outs, dtypes):
            assert_matches(g, want, out.type, dtype=dtype)
        for a, v in zip(args, values):   # the inputs are untouched, the outputs are fresh
            np.testing.assert_array_equal(a, v)
            assert not any(np.shares_memory(a, g) for g in got if a.size and g.size)
    # infer_shape agrees (graph logic: checked with the Python linker)
    shapes = [s for out in outs for s in T.inferred_shape(out)]
    if shapes:
        got = function(syms, shapes, mode="FAST_COMPILE", on_unused_input="ignore")(*values)
        want = [s for r in refs for s in r.shape]
        assert [int(s) for s in got] == want
    return f


def test_cases_float64(mode):
    check_cases(mode, [(CASES, "float64", None)])


def test_every_dtype(mode):
    """Two cases of CASES for every dtype of ALL_DTYPES, in one compiled function."""
    check_cases(mode, [([CASES[3], CASES[6]], dtype, None) for dtype in ALL_DTYPES])


Y_CAST = [("float32", "float64"), ("float64", "int32"), ("int32", "int64"), ("float32", "bool")]


def test_y_is_cast_to_x_dtype(mode):
    """Every (x dtype, y dtype) of Y_CAST, in one compiled function."""
    check_cases(mode, [([CASES[2]], xdtype, ydtype) for xdtype, ydtype in Y_CAST],
                layouts=("contiguous", "reversed"))


def test_symbolic_index_sweep(mode):
    """x[i:j:k, l] with every part symbolic: negative, clamped, reversed and empty slices; inc and set
    in one function."""
    x, y = T.dmatrix("x"), T.dvector("y")
    i, j, k, l = (T.lscalar(n) for n in "ijkl")
    outs = [T.inc_subtensor(x[i:j:k, l], y), T.set_subtensor(x[i:j:k, l], y)]
    f = function([x, y, i, j, k, l], outs, mode=mode)
    ran_in_c(f)
    xv = sample("float64", (6, 3), special=True)
    for start in (-8, -2, 0, 1, 5, 9):
        for stop in (-9, -1, 0, 3, 6, 10):
            for step in (-3, -1, 1, 2):
                for col in (-3, 2):
                    n = len(range(*slice(start, stop, step).indices(6)))
                    for yv in (np.arange(n, dtype="float64") + 0.5, np.array([7.25])):
                        got = f(relayout(xv, "reversed"), yv, start, stop, step, col)
                        for set_, g, out in zip((False, True), got, outs):
                            assert_matches(g, numpy_inc(xv, (slice(start, stop, step), col), yv, set_), out.type,
                                           dtype="float64")


def test_symbolic_3d_index(mode):
    x, y = T.tensor3("x"), T.dmatrix("y")
    i, j = T.lscalar("i"), T.iscalar("j")   # an int32 index is cast to int64
    out = T.inc_subtensor(x[i, ::j], y)
    f = function([x, y, i, j], out, mode=mode)
    xv, yv = sample("float64", (3, 4, 2)), sample("float64", (1, 2))
    for iv, jv in ((0, 1), (-1, -1), (2, 3), (-3, -2)):
        for lx in LAYOUTS:
            got = f(relayout(xv, lx), relayout(yv, lx), iv, jv)
            assert_matches(got, numpy_inc(xv, (iv, slice(None, None, jv)), yv, False), out.type, dtype="float64")


def test_whole_array_when_not_indexed(mode):
    """A plain variable (or x[:], which is x itself) stands for the whole of it."""
    x, y, s = T.dmatrix("x"), T.dvector("y"), T.iscalar("s")
    xi = T.imatrix("xi")
    outs = [T.inc_subtensor(x, y), T.set_subtensor(x, y), T.inc_subtensor(x[:], 2.5), T.set_subtensor(x[:, :], s),
            T.inc_subtensor(T.exp(x), y), T.set_subtensor(xi, s), T.inc_subtensor(s, 3)]
    assert all(isinstance(o.owner.op, IncSubtensor) and o.owner.op.idx_list == () for o in outs)
    f = function([x, y, s, xi], outs, mode=mode)
    ran_in_c(f)
    xv, yv, xiv = sample("float64", (3, 4), special=True), sample("float64", (4,)), sample("int32", (3, 4))
    got = f(relayout(xv, "strided"), relayout(yv, "reversed"), 7, xiv)
    with np.errstate(all="ignore"):
        want = [xv + yv, np.broadcast_to(yv, (3, 4)), xv + 2.5, np.full((3, 4), 7.0), np.exp(xv) + yv,
                np.full((3, 4), 7, dtype="int32"), np.array(10, dtype="int32")]
    dtypes = ["float64"] * 5 + ["int32"] * 2   # x's dtype: dmatrix, then imatrix and iscalar
    for g, w, o, dtype in zip(got, want, outs, dtypes):
        assert_matches(g, w, o.type, dtype=dtype)


def test_0d_inputs(mode):
    x0, y0 = T.dscalar("x0"), T.fscalar("y0")
    m, i = T.dmatrix("m"), T.lscalar("i")
    outs = [T.inc_subtensor(x0, y0), T.set_subtensor(x0, y0), T.inc_subtensor(m[i, -1], x0),
            T.set_subtensor(m[1, i], y0)]
    f = function([x0, y0, m, i], outs, mode=mode)
    mv = sample("float64", (2, 3))
    got = f(np.array(1.5), np.array(np.float32(-0.25)), mv, 0)
    want = [np.array(1.25), np.array(-0.25), numpy_inc(mv, (0, -1), 1.5, False), numpy_inc(mv, (1, 0), -0.25, True)]
    for g, w, o in zip(got, want, outs):
        assert_matches(g, w, o.type, dtype="float64")   # x's dtype (a float32 y is cast to it)


def test_integer_sums_wrap_and_bool_sums_are_or(mode):
    xi, yi = T.imatrix("xi"), T.ivector("yi")
    xb, yb = T.tensor("bool", (None,)), T.tensor("bool", ())
    outs = [T.inc_subtensor(xi[0], yi), T.inc_subtensor(xb[::2], yb)]
    f = function([xi, yi, xb, yb], outs, mode=mode)
    big = np.iinfo("int32").max
    got = f(np.full((2, 2), big, dtype="int32"), np.array([1, big], dtype="int32"),
            np.array([True, False, False]), np.array(True))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got[0], [[np.int32(big) + np.int32(1), np.int32(big) + np.int32(big)],
                                               [big, big]])
    np.testing.assert_array_equal(got[1], [True, False, True])
    assert got[0].dtype == np.int32 and got[1].dtype == np.bool_


# ------------------------------------------------------------------ errors at run time


def test_runtime_errors(mode):
    x, y = T.dmatrix("x"), T.dvector("y")
    i, j, k = T.lscalar("i"), T.lscalar("j"), T.lscalar("k")
    f_inc = function([x, y, i, k], T.inc_subtensor(x[::k, i], y), mode=mode)
    f_set = function([x, y, j], T.set_subtensor(x[j], y), mode=mode)
    xv = np.zeros((4, 3))
    # an index out of bounds
    _raises(IndexError, f_inc, (xv, np.zeros(4), 3, 1), "IncSubtensor{::?, ?}", "out of bounds", "(4, 3)")
    _raises(IndexError, f_inc, (relayout(xv, "reversed"), np.zeros(4), -4, 1), "IncSubtensor", "out of bounds")
    _raises(IndexError, f_set, (xv, np.zeros(3), 4), "SetSubtensor{?}", "out of bounds", "(4, 3)")
    _raises(IndexError, f_set, (np.zeros((0, 3)), np.zeros(3), 0), "SetSubtensor", "out of bounds", "(0, 3)")
    # a zero step
    _raises(ValueError, f_inc, (xv, np.zeros(4), 0, 0), "IncSubtensor", "step cannot be zero")
    # y does not broadcast to the region
    _raises(ValueError, f_inc, (xv, np.zeros(3), 0, 1), "IncSubtensor", "y of shape (3,)", "shape (4,)", "(4, 3)")
    _raises(ValueError, f_inc, (xv, np.zeros(3), 0, -2), "IncSubtensor", "y of shape (3,)", "shape (2,)")
    _raises(ValueError, f_set, (xv, np.zeros(4), 0), "SetSubtensor", "y of shape (4,)", "shape (3,)", "(4, 3)")
    # the functions still work afterwards
    np.testing.assert_array_equal(f_set(xv, np.ones(1), -1)[-1], [1, 1, 1])


def test_y_broadcast_error_on_empty_region(mode):
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], T.inc_subtensor(x[2:2], y), mode=mode)
    assert f(np.arange(4.0), np.zeros(1)).tolist() == [0, 1, 2, 3]   # length 1 stretches to 0
    _raises(ValueError, f, (np.arange(4.0), np.zeros(2)), "IncSubtensor{2:2:}", "(2,)", "(0,)")


# ------------------------------------------------------------------ errors when building


def test_build_errors():
    x = T.tensor("float64", (5, 4), name="x")
    xi = T.imatrix("xi")
    with pytest.raises(TypeError, match="IncSubtensor.*y=.*3 dimensions"):
        T.inc_subtensor(x[0], T.tensor3("y"))
    with pytest.raises(TypeError, match="SetSubtensor.*yf.*float64.*int32"):
        T.set_subtensor(xi[0], T.dvector("yf"))
    with pytest.raises(TypeError, match="IncSubtensor.*int32"):
        T.inc_subtensor(xi[0], 1.5)
    with pytest.raises(ValueError, match=r"IncSubtensor.*\(3,\).*\(2,\)"):
        T.inc_subtensor(x[1:3, 0], T.tensor("float64", (3,)))
    with pytest.raises(TypeError, match="newaxis"):
        T.inc_subtensor(x[1:3, None], T.dvector())
    with pytest.raises(TypeError, match="newaxis"):
        T.set_subtensor(x[1][None], T.dvector())
    with pytest.raises(IndexError, match="IncSubtensor"):
        IncSubtensor([("int", 7)])(x, 1.0)
    with pytest.raises(IndexError, match="IncSubtensor"):
        IncSubtensor([("int", 0)] * 3)(x, 1.0)
    with pytest.raises(ValueError, match="IncSubtensor"):
        IncSubtensor([("int", "?")])(x, 1.0)   # a symbolic part without its input


def test_op_identity_str_and_static_shape():
    x = T.tensor("float64", (5, None), name="x")
    out = T.inc_subtensor(x[1:3, -1], T.dscalar())
    op = out.owner.op
    assert op == IncSubtensor([("slice", 1, 3, None), ("int", -1)])
    assert op != IncSubtensor([("slice", 1, 3, None), ("int", -1)], set_instead_of_inc=True)
    assert hash(op) == hash(IncSubtensor((("slice", 1, 3, None), ("int", -1))))
    assert str(op) == "IncSubtensor{1:3:, -1}"
    assert str(T.set_subtensor(x[::-1], 0.0).owner.op) == "SetSubtensor{::-1}"
    assert str(IncSubtensor(())) == "IncSubtensor{}"
    assert out.type.shape == (5, None) and out.dtype == "float64"
    assert not op.view_map and not op.destroy_map
    i = T.lscalar()
    out = T.set_subtensor(x[i:, T.iscalar()], T.dvector())
    assert len(out.owner.inputs) == 4
    assert all(v.dtype == "int64" and v.ndim == 0 for v in out.owner.inputs[2:])
