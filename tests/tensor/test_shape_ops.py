"""Shape ops: transpose/dimshuffle, reshape, flatten, shape/shape_i and basic indexing, against numpy.

Each test compiles ONE function for many cases (``helpers.check_cases``: each distinct graph its own
node, cases of the same graph share it): every dtype, shape and index pattern of an op is checked
in one library. Error tests give each graph its own inputs in one function and feed a bad value to
one graph at a time (``caller``).
"""
import itertools
import re

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from helpers import ALL_DTYPES, LAYOUTS, Case, assert_matches, caller, check_cases, relayout, sample


def _static_shape(pattern):
    return tuple(1 if p == "x" else None for p in pattern)


# ------------------------------------------------------------------ transpose / dimshuffle

TRANSPOSE_AXES = ((1, 0, 2), (2, 0, 1), (0, 1, 2), (-1, 0, -2), (-3, -1, -2))


def _transpose_cases(name, dtype):
    """(label, build, ref, value) of one way of writing a transpose, on ``dtype``."""
    x = sample(dtype, (2, 3, 4), special=True)
    m = sample(dtype, (3, 5))
    if name == "T.transpose":
        default = lambda v: T.transpose(v)   # noqa: E731 (one build: the 0-d case below is another node)
        out = [("3d", default, lambda a: a.transpose(), x)]
        out += [(str(axes), lambda v, axes=axes: T.transpose(v, axes), lambda a, axes=axes: np.transpose(a, axes), x)
                for axes in TRANSPOSE_AXES]
        out.append(("(-1,-2)", lambda v: T.transpose(v, (-1, -2)), lambda a: a.T, m))
        if dtype == "float64":   # a 0-d input (was test_transpose_of_0d)
            out.append(("0d", default, lambda a: a, np.asarray(2.5)))
        return out
    if name == "x.transpose(axes)":
        return [(str(axes), lambda v, axes=axes: v.transpose(axes), lambda a, axes=axes: a.transpose(axes), x)
                for axes in TRANSPOSE_AXES]
    if name == "x.transpose(*axes)":
        return [(str(axes), lambda v, axes=axes: v.transpose(*axes), lambda a, axes=axes: a.transpose(*axes), x)
                for axes in TRANSPOSE_AXES]
    assert name == "x.T"
    dot_t = lambda v: v.T   # noqa: E731 (one build: inputs of the same ndim share its node)
    out = [("3d", dot_t, lambda a: a.T, x), ("2d", dot_t, lambda a: a.T, m),
           ("T.T", lambda v: v.T.T, lambda a: a, m), ("1d", dot_t, lambda a: a.T, sample(dtype, (6,))),
           ("empty", dot_t, lambda a: a.T, np.zeros((0, 3), dtype=dtype))]
    if dtype == "float64":   # a 0-d input (was test_transpose_of_0d)
        out.append(("0d", dot_t, lambda a: a, np.asarray(2.5)))
    return out


@pytest.mark.parametrize("name", ["T.transpose", "x.transpose(axes)", "x.transpose(*axes)", "x.T"])
def test_transpose(name, mode):
    """One way of writing a transpose, every axes and dtype, in one compiled function."""
    cases = [Case("%s,%s" % (dtype, label), build, ref, [value], dtype=dtype)
             for dtype in ALL_DTYPES for label, build, ref, value in _transpose_cases(name, dtype)]
    check_cases(cases, mode)


def test_transpose_bad_axes_raise():
    x = T.dtensor3()
    for axes in ((0, 1), (0, 1, 1), (0, 1, 3), (0, -1, 2), (0, 1, 2, 3)):
        with pytest.raises(ValueError):
            T.transpose(x, axes)


DIMSHUFFLE_PATTERNS = [
    (("x", 0, 1), lambda a: a[None]),
    ((0, "x", 1), lambda a: a[:, None, :]),
    ((1, 0), lambda a: a.T),
    ((1, "x", 0), lambda a: a.T[:, None, :]),
    (("x", 1, "x", 0, "x"), lambda a: a.T[None, :, None, :, None]),
    ((0, 1, "x"), lambda a: a[..., None]),
]


@pytest.mark.parametrize("name", ["x.dimshuffle(*pattern)", "x.dimshuffle(pattern)"])
def test_dimshuffle_insert_and_permute(name, mode):
    """``x.dimshuffle(*pattern)`` or ``x.dimshuffle(pattern)``: every pattern and dtype in one function."""
    spread = name == "x.dimshuffle(*pattern)"
    cases = []
    for dtype in ALL_DTYPES:
        m = sample(dtype, (3, 4), special=True)
        for pattern, ref in DIMSHUFFLE_PATTERNS:
            if spread:
                build = lambda v, pattern=pattern: v.dimshuffle(*pattern)   # noqa: E731
            else:
                build = lambda v, pattern=pattern: v.dimshuffle(pattern)    # noqa: E731
            assert build(T.tensor(dtype, (None, None))).type.shape == _static_shape(pattern)
            cases.append(Case("%s,%s" % (dtype, pattern), build, ref, [m], dtype=dtype))
        if spread:
            v = sample(dtype, (5,))
            cases.append(Case(dtype + ",x0", lambda t: t.dimshuffle("x", 0), lambda a: a[None], [v], dtype=dtype))
            cases.append(Case(dtype + ",0x", lambda t: t.dimshuffle(0, "x"), lambda a: a[:, None], [v], dtype=dtype))
    if spread:   # of a 0-d input (was test_dimshuffle_of_0d)
        s = np.asarray(3.0)
        cases += [Case("0d,x", lambda t: t.dimshuffle("x"), lambda a: a[None], [s], dtype="float64"),
                  Case("0d,xx", lambda t: t.dimshuffle("x", "x"), lambda a: a[None, None], [s], dtype="float64"),
                  Case("0d,()", lambda t: t.dimshuffle(), lambda a: a, [s], dtype="float64")]
    check_cases(cases, mode)


def test_dimshuffle_drop_broadcastable_axis(mode):
    """Inputs of static shape (1, None) and (None, 1, None), every dtype, in one compiled function
    whose outputs are the results and their infer_shape."""
    inputs, values, outs, wants, shapes, dtypes = [], [], [], [], [], []
    for dtype in ALL_DTYPES:
        x = T.tensor(dtype, (1, None))
        value = sample(dtype, (1, 5), special=True)
        for pattern, ref in (((1,), lambda a: a[0]), (("x", 1), lambda a: a), ((1, "x"), lambda a: a.T)):
            out = x.dimshuffle(*pattern)
            assert out.type.shape == _static_shape(pattern)
            outs.append(out)
            wants.append(ref(value))
            dtypes.append(dtype)
            shapes.append(list(T.inferred_shape(out)))
        # 3-d, dropping the middle axis and permuting the rest
        y = T.tensor(dtype, (None, 1, None))
        v3 = sample(dtype, (3, 1, 4))
        outs.append(y.dimshuffle(2, 0))
        wants.append(v3[:, 0, :].T)
        dtypes.append(dtype)
        shapes.append(list(T.inferred_shape(outs[-1])))
        inputs += [x, y]
        values += [value, v3]
    f = function(inputs, outs + [s for shape in shapes for s in shape], mode=mode)
    for layout in LAYOUTS:
        got = f(*[relayout(v, layout) for v in values])
        for g, out, want, dtype in zip(got, outs, wants, dtypes):
            assert_matches(g, want, out.type, dtype=dtype)
        inferred = iter(got[len(outs):])
        for shape, want in zip(shapes, wants):
            assert tuple(int(next(inferred)) for _ in shape) == want.shape


def test_dimshuffle_drop_non_unit_axis_raises(mode):
    # static length known and not 1: when building
    with pytest.raises(ValueError):
        T.tensor("float64", (3, None)).dimshuffle(1)
    # length only known at run time: when running
    x = T.dmatrix()
    f = function([x], x.dimshuffle(1), mode=mode)
    np.testing.assert_array_equal(f(np.arange(4.0).reshape(1, 4)), np.arange(4.0))
    with pytest.raises(ValueError):
        f(np.zeros((2, 4)))
    with pytest.raises(ValueError):
        f(np.zeros((0, 4)))


def test_dimshuffle_bad_patterns_raise():
    x = T.dmatrix()
    with pytest.raises(ValueError):
        x.dimshuffle(0, 2)
    with pytest.raises(ValueError):
        x.dimshuffle(0, 0)
    with pytest.raises(ValueError):
        x.dimshuffle(1, -1)


# ------------------------------------------------------------------ reshape

RESHAPE_TARGETS = ((12,), (4, 3), (2, 6), (2, 2, 3), (1, 12, 1), (-1,), (2, -1), (-1, 3), (2, -1, 2), (12, 1))


def _reshape_builds(name):
    """(label, build, ref) of one way of writing a reshape to constant sizes."""
    if name == "x.reshape(shape)":
        return [(str(s), lambda v, s=s: v.reshape(s), lambda a, s=s: a.reshape(s)) for s in RESHAPE_TARGETS]
    if name == "T.reshape":
        return [(str(s), lambda v, s=s: T.reshape(v, s), lambda a, s=s: a.reshape(s)) for s in RESHAPE_TARGETS]
    assert name == "x.reshape(*shape)"
    return [(str(s), lambda v, s=s: v.reshape(*s), lambda a, s=s: a.reshape(s)) for s in RESHAPE_TARGETS] + [
        ("12", lambda v: v.reshape(12), lambda a: a.reshape(12)),
        ("-1", lambda v: v.reshape(-1), lambda a: a.reshape(-1))]


@pytest.mark.parametrize("name", ["x.reshape(shape)", "x.reshape(*shape)", "T.reshape"])
def test_reshape_with_ints(name, mode):
    """One way of writing a reshape, every target shape and dtype, in one compiled function."""
    cases = []
    for dtype in ALL_DTYPES:
        x = sample(dtype, (3, 4), special=True)
        cases += [Case("%s,%s" % (dtype, label), build, ref, [x], dtype=dtype)
                  for label, build, ref in _reshape_builds(name)]
        # static shape of a reshape to constant sizes
        out = T.tensor(dtype, (None, None)).reshape((2, -1, 3))
        assert out.type.shape[0] == 2 and out.type.shape[2] == 3 and out.ndim == 3
    check_cases(cases, mode)


def test_reshape_empty_and_0d(mode):
    """To and from 0-d (was test_reshape_to_and_from_0d) and empty arrays (test_reshape_empty)."""
    s = np.asarray(4.0)
    cases = [Case("[[7.5]]->()", lambda v: v.reshape(()), lambda a: a.reshape(()), [np.array([[7.5]])],
                  dtype="float64"),
             Case("0d->(1,)", lambda v: v.reshape((1,)), lambda a: a.reshape(1), [s], dtype="float64"),
             Case("0d->(1,-1)", lambda v: v.reshape((1, -1)), lambda a: a.reshape(1, -1), [s], dtype="float64")]
    for shape, target in (((0, 3), (3, 0)), ((0, 3), (-1,)), ((0, 3), (3, -1)), ((2, 0), (0, 5)),
                          ((0,), (0, 4, 0))):
        cases.append(Case("%s->%s" % (shape, target), lambda v, t=target: v.reshape(t),
                          lambda a, t=target: a.reshape(t), [np.zeros(shape)], dtype="float64"))
    check_cases(cases, mode)


def test_reshape_with_symbolic_sizes(mode):
    """Sizes from the input's shape or from scalar inputs, on float64, int32 and bool, in one function."""
    builds = [
        (lambda v: v.reshape((v.shape[0], -1)), lambda a: a.reshape((a.shape[0], -1))),
        (lambda v: v.reshape((v.shape[1], v.shape[0])), lambda a: a.reshape((a.shape[1], a.shape[0]))),
        (lambda v: v.reshape((2, v.shape[0] // 2, v.shape[1])), lambda a: a.reshape((2, 2, 6))),
        (lambda v: v.reshape((-1, v.shape[1] // 3, 3)), lambda a: a.reshape((-1, 2, 3))),
        (lambda v: T.reshape(v, [v.shape[0] * v.shape[1]]), lambda a: a.reshape(-1)),
        (lambda v: v.reshape(v.shape[::-1], ndim=2), lambda a: a.reshape(a.shape[::-1])),
    ]
    cases = []
    for dtype in ("float64", "int32", "bool"):
        x = sample(dtype, (4, 6))
        cases += [Case("%s,%d" % (dtype, k), build, ref, [x], dtype=dtype) for k, (build, ref) in enumerate(builds)]
        # a symbolic scalar given as an input: m an lscalar, n an iscalar
        cases.append(Case(dtype + ",m,n", lambda v, m, n: v.reshape((m, n, -1)),
                          lambda a, m, n: a.reshape(int(m), int(n), -1), [x, np.int64(3), np.int32(2)],
                          dtype=dtype))
    check_cases(cases, mode)


def test_reshape_shape_vector_needs_known_length():
    x = T.dmatrix()
    with pytest.raises(ValueError):
        x.reshape(T.lvector())


def test_reshape_size_mismatch_raises(mode):
    """Each graph its own inputs in one function: a bad size for one graph at a time."""
    fixed = Case("(5,2)", lambda v: v.reshape((5, 2)), lambda a: a.reshape(5, 2), [np.zeros((2, 5))],
                 dtype="float64")
    minus = Case("(5,-1)", lambda v: v.reshape((5, -1)), lambda a: a.reshape(5, -1), [np.arange(10.0).reshape(2, 5)],
                 dtype="float64")
    by_n = Case("(n,-1)", lambda v, n: v.reshape((n, -1)), lambda a, n: a.reshape(int(n), -1),
                [np.zeros((3, 4)), np.int64(3)], dtype="float64")
    by_n2 = Case("(n,-1,2)", lambda v, n: v.reshape((n, -1, 2)), lambda a, n: a.reshape(int(n), -1, 2),
                 [np.zeros((3, 4)), np.int64(2)], dtype="float64")
    cases = [fixed, minus, by_n, by_n2]
    call = caller(check_cases(cases, mode), cases)
    with pytest.raises(ValueError, match=re.escape("(3, 4)") + ".*" + re.escape("(5, 2)")):
        call(fixed, np.zeros((3, 4)))
    with pytest.raises(ValueError, match=re.escape("(3, 4)") + ".*" + re.escape("(5, -1)")):
        call(minus, np.zeros((3, 4)))
    # the function still works for a good shape after an error
    np.testing.assert_array_equal(call(minus, np.arange(10.0).reshape(2, 5)), np.arange(10.0).reshape(5, 2))
    with pytest.raises(ValueError):
        call(by_n, np.zeros((3, 4)), 5)
    with pytest.raises(ValueError):
        call(by_n, np.zeros((3, 4)), 0)
    with pytest.raises(ValueError):
        call(by_n2, np.zeros((3, 4)), -1)  # two -1 entries
    with pytest.raises(ValueError):
        call(by_n2, np.zeros((3, 4)), -3)  # a negative size other than -1


# ------------------------------------------------------------------ flatten


def _np_flatten(a, ndim):
    lead = a.shape[:ndim - 1]
    return a.reshape(lead + (int(np.prod(a.shape[ndim - 1:])),))


def _flatten_to(nd):
    def build(v):
        out = T.flatten(v, nd)
        assert out.ndim == nd
        return out
    return build


FLATTEN_SHAPES = [(2, 3, 4), (0, 3, 4), (3, 0, 4), (2, 3, 0), (1, 1, 1)]


def _flatten_builds(name):
    """(label, build, ref) of one way of writing a flatten."""
    if name == "x.flatten":
        return [("v.flatten(%d)" % nd, lambda v, nd=nd: v.flatten(nd), lambda a, nd=nd: _np_flatten(a, nd))
                for nd in (1, 2, 3)]
    assert name == "T.flatten"
    return [("T.flatten(v,%d)" % nd, _flatten_to(nd), lambda a, nd=nd: _np_flatten(a, nd)) for nd in (1, 2, 3)] + [
        ("T.flatten(v)", lambda v: T.flatten(v), lambda a: a.reshape(-1) if a.size else a.reshape(0))]


@pytest.mark.parametrize("name", ["T.flatten", "x.flatten"])
def test_flatten(name, mode):
    """T.flatten(v, nd) and T.flatten(v), or v.flatten(nd), on every shape of FLATTEN_SHAPES and every
    dtype, in one compiled function (the shapes of one dtype share each graph's node)."""
    cases = []
    for dtype in ALL_DTYPES:
        builds = _flatten_builds(name)
        for shape in FLATTEN_SHAPES:
            x = sample(dtype, shape, special=True)
            cases += [Case("%s,%s,%s" % (dtype, shape, label), build, ref, [x], dtype=dtype)
                      for label, build, ref in builds]
    check_cases(cases, mode)


def test_flatten_small_ranks(mode):
    cases = [Case("1d", lambda v: T.flatten(v), lambda a: a.reshape(-1), [sample("float64", (5,))], dtype="float64"),
             Case("2d,2", lambda v: T.flatten(v, 2), lambda a: a, [sample("float64", (4, 5))], dtype="float64"),
             Case("0d", lambda v: T.flatten(v), lambda a: a.reshape(1), [np.asarray(1.5)], dtype="float64")]
    check_cases(cases, mode)


def test_flatten_bad_ndim_raises():
    x = T.dtensor3()
    for nd in (0, 4, -1):
        with pytest.raises(ValueError):
            T.flatten(x, nd)


# ------------------------------------------------------------------ shape, shape_i

SHAPE_SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (1, 2, 3, 4)]


def test_shape(mode):
    """x.shape, T.shape, x.shape[i], x.shape[-i - 1] and T.shape_i of inputs of every shape of
    SHAPE_SHAPES (each its own input), in one compiled function."""
    dtype = "float32"
    inputs, values, outs, spans = [], [], [], []
    for shape in SHAPE_SHAPES:
        x = T.tensor(dtype, (None,) * len(shape))
        these = [x.shape, T.shape(x)] + [x.shape[i] for i in range(len(shape))] + \
            [x.shape[-i - 1] for i in range(len(shape))] + [T.shape_i(x, i) for i in range(len(shape))]
        for o in these:
            assert o.dtype == "int64"
        assert these[0].ndim == 1 and all(o.ndim == 0 for o in these[2:])
        inputs.append(x)
        values.append(sample(dtype, shape))
        spans.append((len(outs), len(outs) + len(these)))
        outs += these
    f = function(inputs, outs, mode=mode)
    for layout in LAYOUTS:
        results = f(*[relayout(v, layout) if v.ndim else np.array(v) for v in values])
        for shape, (lo, hi) in zip(SHAPE_SHAPES, spans):
            got = results[lo:hi]
            assert all(isinstance(g, np.ndarray) and g.dtype == np.int64 for g in got)
            np.testing.assert_array_equal(got[0], shape)
            assert got[0].shape == (len(shape),)
            np.testing.assert_array_equal(got[1], shape)
            n = len(shape)
            assert [int(g) for g in got[2:2 + n]] == list(shape)
            assert [int(g) for g in got[2 + n:2 + 2 * n]] == list(shape[::-1])
            assert [int(g) for g in got[2 + 2 * n:]] == list(shape)


def test_shape_via_check(mode):
    x = sample("int32", (3, 5))
    size = lambda v: v.size   # noqa: E731 (one build for both inputs: one node)
    # shapes and sizes are int64 (PyTensor's); the sum of an int32 input accumulates in int64
    check_cases([
        Case("shape", lambda v: v.shape, lambda a: np.asarray(a.shape, dtype=np.int64), [x], dtype="int64"),
        Case("shape[1]", lambda v: v.shape[1], lambda a: np.asarray(a.shape[1]), [x], dtype="int64"),
        Case("shape[::-1]", lambda v: v.shape[::-1], lambda a: np.asarray(a.shape[::-1]), [x], dtype="int64"),
        Case("shape_i*shape_i", lambda v: T.shape_i(v, 0) * T.shape_i(v, 1), lambda a: np.asarray(a.size), [x],
             dtype="int64"),
        Case("shape[0]+sum", lambda v: v.shape[0] + v.sum(), lambda a: a.shape[0] + a.sum(), [x], dtype="int64"),
        Case("size", size, lambda a: np.asarray(a.size, dtype=np.int64), [x], dtype="int64"),
        Case("size of empty", size, lambda a: np.asarray(a.size, dtype=np.int64), [np.zeros((3, 0))], dtype="int64"),
    ], mode)


def test_shape_i_static_and_errors(mode):
    x = T.tensor("float64", (3, None))
    static = T.shape_i(x, 0)   # the type knows the length: a constant, of the right value
    assert isinstance(static, T.TensorConstant), static
    assert static.dtype == "int64" and static.data.shape == () and static.data == 3, static.data
    outs = [static, T.shape_i(x, 1)]
    f = function([x], outs, mode=mode)
    a, b = f(np.zeros((3, 7)))
    assert_matches(a, np.int64(3), outs[0].type, dtype="int64")
    assert_matches(b, np.int64(7), outs[1].type, dtype="int64")
    with pytest.raises(ValueError):
        T.shape_i(T.dmatrix(), 2)
    m = T.dmatrix()
    with pytest.raises(IndexError):  # the shape vector has length 2: out of bounds when run
        function([m], m.shape[2], mode=mode)(np.zeros((2, 3)))


# ------------------------------------------------------------------ basic indexing

# every index pattern on a (3, 4, 5) input, by kind
INDICES_3D = {
    "integer": [0, 2, -1, -3, (1, 2), (-1, -2), (1, 2, 3), (-2, 0, -5)],
    "slice": [slice(None), slice(1, None), slice(None, 2), slice(None, None, 2), slice(-10, 10), slice(10, 20),
              slice(-20, -10), slice(2, 1), slice(1, 2, 5)],
    "reversed_slice": [slice(None, None, -1), slice(None, None, -2), slice(2, 0, -1), slice(-1, -10, -1),
                       slice(100, None, -1), slice(None, -100, -1)],
    "mixed": [(slice(None), 1), (slice(None), slice(None), -1), (slice(1, None), None, slice(None, None, -2)),
              (slice(None, None, -1), slice(None, None, -1), slice(None, None, -1)),
              (slice(-2, None), 0, slice(1, -1)), (slice(0, 0), 1), (1, slice(3, None))],
    "ellipsis": [Ellipsis, (Ellipsis, 1), (1, Ellipsis), (0, Ellipsis, 2), (Ellipsis, 1, 2, 3), (),
                 (Ellipsis, slice(None, None, -3))],
    "newaxis": [(Ellipsis, None), (None, Ellipsis), None, (None, 1, None), (None, None),
                (1, None, Ellipsis, None, -1)],
}


@pytest.mark.parametrize("kind", sorted(INDICES_3D))
def test_basic_indexing(kind, mode):
    """Every index pattern of this kind on every dtype, in one compiled function."""
    cases = []
    for dtype in ALL_DTYPES:
        x = sample(dtype, (3, 4, 5), special=True)
        cases += [Case("%s,%r" % (dtype, index), lambda v, index=index: v[index],
                       lambda a, index=index: np.asarray(a[index]), [x], dtype=dtype) for index in INDICES_3D[kind]]
    check_cases(cases, mode)


def test_basic_indexing_1d_and_0d(mode):
    """A 1-d int64 input (was test_basic_indexing_1d) and a 0-d input (test_indexing_0d_input)."""
    x = sample("int64", (6,))
    cases = [Case(repr(index), lambda v, index=index: v[index], lambda a, index=index: np.asarray(a[index]), [x],
                  dtype="int64")
             for index in (0, -1, slice(None, None, -1), slice(1, -1), None, Ellipsis,
                           (None, slice(None, None, 2)), slice(5, None))]
    s = np.asarray(2.0)
    cases += [Case("0d[...]", lambda v: v[...], lambda a: a[...], [s], dtype="float64"),
              Case("0d[None]", lambda v: v[None], lambda a: a[None], [s], dtype="float64"),
              Case("0d[()]", lambda v: v[()], lambda a: a[()], [s], dtype="float64"),
              Case("0d[None,...,None]", lambda v: v[None, ..., None], lambda a: a[None, ..., None], [s],
                   dtype="float64")]
    check_cases(cases, mode)


def test_all_integer_index_gives_0d_ndarray(mode):
    """Every dtype in one function: each result a 0-d ndarray of the input's dtype (assert_matches)."""
    cases = []
    for dtype in ALL_DTYPES:
        out = T.tensor(dtype, (None, None))[1, 2]
        assert out.ndim == 0 and out.dtype == dtype
        value = sample(dtype, (3, 4))
        cases += [Case(dtype + ",[1,2]", lambda v: v[1, 2], lambda a: np.asarray(a[1, 2]), [value], dtype=dtype),
                  Case(dtype + ",[-1,-1]", lambda v: v[-1, -1], lambda a: np.asarray(a[-1, -1]), [value], dtype=dtype),
                  Case(dtype + ",[0][3]", lambda v: v[0][3], lambda a: np.asarray(a[0, 3]), [value], dtype=dtype)]
    check_cases(cases, mode)


def test_static_shape_of_slices():
    x = T.tensor("float64", (5, None, 4))
    assert x[1:4].type.shape == (3, None, 4)
    assert x[::-2].type.shape == (3, None, 4)
    assert x[10:].type.shape == (0, None, 4)
    assert x[:, 1:].type.shape == (5, None, 4)
    assert x[0].type.shape == (None, 4)
    assert x[:, :, ::3].type.shape == (5, None, 2)
    assert x[None, ..., None].type.shape == (1, 5, None, 4, 1)
    assert x[1, None].type.shape == (1, None, 4)


def test_static_shape_of_constant_slices_sweep(mode):
    bounds = [None] + list(range(-7, 8))
    for n in (0, 1, 5):
        x = T.tensor("float64", (n,))
        for start, stop, step in itertools.product(bounds, bounds, (None, -3, -1, 1, 2)):
            sl = slice(start, stop, step)
            assert x[sl].type.shape == (len(range(n)[sl]),), (n, sl)
    # and the static shape agrees with what runs
    x = T.tensor("float64", (5, 4))
    value = np.arange(20.0).reshape(5, 4)
    outs = [x[1:4], x[::-2], x[-100:100, ::3], x[4:1:-1, -1], x[7:]]
    f = function([x], outs, mode=mode)
    for layout in LAYOUTS:
        for got, o, want in zip(f(relayout(value, layout)), outs,
                                (value[1:4], value[::-2], value[-100:100, ::3], value[4:1:-1, -1], value[7:])):
            assert_matches(got, want, o.type, dtype="float64")


def test_numpy_integer_indices(mode):
    x = sample("float64", (4, 5))
    check_cases([Case("[int64]", lambda v: v[np.int64(1)], lambda a: a[1], [x], dtype="float64"),
                 Case("[int32:, int8]", lambda v: v[np.int32(-1):, np.int8(2)], lambda a: a[-1:, 2], [x],
                      dtype="float64"),
                 Case("[::int64]", lambda v: v[::np.int64(-2)], lambda a: a[::-2], [x], dtype="float64")], mode)


SYMBOLIC_INDICES = [
    ("v[i]", lambda v, i: v[i], lambda a, i: np.asarray(a[int(i)]), (0, 4, -1, -5)),
    ("v[:,i]", lambda v, i: v[:, i], lambda a, i: np.asarray(a[:, int(i)]), (0, -6, 5)),
    ("v[i:]", lambda v, i: v[i:], lambda a, i: a[int(i):], (0, 2, -2, 7, -9)),
    ("v[:i:-1]", lambda v, i: v[:i:-1], lambda a, i: a[:int(i):-1], (0, 2, -2, 7, -9)),
    ("v[::i]", lambda v, i: v[::i], lambda a, i: a[::int(i)], (1, 2, -1, -3, 7, -9)),
    ("v[1:,None,i::-2]", lambda v, i: v[1:, None, i::-2], lambda a, i: a[1:, None, int(i)::-2], (0, 3, -1, 10)),
    ("v[i,1:i]", lambda v, i: v[i, 1:i], lambda a, i: a[int(i), 1:int(i)], (2, 4, -1)),
]


def test_symbolic_indices_via_check(mode):
    """Each graph of SYMBOLIC_INDICES with an int64 and an int32 index, every value of the index
    through the same node, in one compiled function."""
    x = sample("float64", (5, 6), special=True)
    # (dtype is the index's: the result keeps x's, float64)
    check_cases([Case("%s,%s,%d" % (label, dtype, val), build, ref, [x, np.asarray(val, dtype=dtype)],
                      dtype="float64")
                 for dtype in ("int64", "int32") for label, build, ref, values in SYMBOLIC_INDICES
                 for val in values], mode)


def test_symbolic_slice_sweep(mode):
    """Every start/stop/step combination on a length-5 and an empty axis: values and infer_shape."""
    x = T.dvector()
    a, b, c = T.lscalar(), T.lscalar(), T.lscalar()
    out = x[a:b:c]
    f = function([x, a, b, c], [out] + list(T.inferred_shape(out)), mode=mode)
    for n in (5, 0):
        value = np.arange(float(n))
        for start, stop, step in itertools.product(range(-7, 8), range(-7, 8), (-3, -2, -1, 1, 2, 4)):
            got, length = f(value, start, stop, step)
            want = value[start:stop:step]
            assert got.shape == want.shape and int(length) == len(want), (n, start, stop, step)
            np.testing.assert_array_equal(got, want)


def test_symbolic_slice_partial_sweep(mode):
    """Some bounds symbolic, others absent or Python ints: every graph in one compiled function."""
    x = T.dvector()
    i, j = T.iscalar(), T.lscalar()
    k = T.iscalar()   # the step of x[::k]: its own input, as a zero step is an error (not swept)
    builds = {
        "x[i:]": (x[i:], lambda v, p, q: v[p:]),
        "x[:i]": (x[:i], lambda v, p, q: v[:p]),
        "x[::i]": (x[::k], lambda v, p, q: v[::p]),
        "x[i::-1]": (x[i::-1], lambda v, p, q: v[p::-1]),
        "x[:i:-2]": (x[:i:-2], lambda v, p, q: v[:p:-2]),
        "x[i:j]": (x[i:j], lambda v, p, q: v[p:q]),
        "x[1:i:j]": (x[1:i:j], lambda v, p, q: v[1:p:q]),
        "x[i::j]": (x[i::j], lambda v, p, q: v[p::q]),
        "x[-2:i]": (x[-2:i], lambda v, p, q: v[-2:p]),
    }
    outs = []
    for out, _ in builds.values():
        outs += [out] + list(T.inferred_shape(out))
    f = function([x, i, j, k], outs, mode=mode, on_unused_input="ignore")
    for n in (6, 1, 0):
        value = np.arange(float(n)) + 1
        for p, q in itertools.product(range(-8, 9), (-3, -1, 1, 2, 5)):
            got = iter(f(value, p, q, p if p != 0 else 1))
            for name, (_, ref) in builds.items():
                result, length = next(got), next(got)
                if name == "x[::i]" and p == 0:
                    continue
                want = ref(value, p, q)
                assert result.shape == want.shape and int(length) == len(want), (name, n, p, q)
                np.testing.assert_array_equal(result, want)


def test_symbolic_int_index_out_of_bounds_raises(mode):
    v = np.zeros((3, 4))
    row = Case("x[i]", lambda x, i: x[i], lambda a, i: a[int(i)], [v, np.int64(0)], dtype="float64")
    col = Case("x[1, i]", lambda x, i: x[1, i], lambda a, i: np.asarray(a[1, int(i)]), [v, np.int64(0)],
               dtype="float64")
    cases = [row, col]
    call = caller(check_cases(cases, mode), cases)
    for bad in (3, -4, 100):
        with pytest.raises(IndexError):
            call(row, v, bad)
    for bad in (4, -5):
        with pytest.raises(IndexError):
            call(col, v, bad)
    assert call(row, v, -3).shape == (4,)


def test_index_out_of_bounds_raises_at_run_time(mode):
    """Each graph its own input in one function, fed a (5, 11) matrix but for the one that gets
    a bad input; building is fine: the length is only known at run time."""
    good = np.arange(55.0).reshape(5, 11)
    cases = [Case("v[3]", lambda v: v[3], lambda a: a[3], [good], dtype="float64"),
             Case("v[-4]", lambda v: v[-4], lambda a: a[-4], [good], dtype="float64"),
             Case("v[0, 4]", lambda v: v[0, 4], lambda a: np.asarray(a[0, 4]), [good], dtype="float64"),
             Case("v[:, -5]", lambda v: v[:, -5], lambda a: a[:, -5], [good], dtype="float64"),
             Case("v[..., 10]", lambda v: v[..., 10], lambda a: a[..., 10], [good], dtype="float64")]
    first_row = Case("v[0]", lambda v: v[0], lambda a: a[0], [good], dtype="float64")
    call = caller(check_cases(cases + [first_row], mode), cases + [first_row])
    for case in cases:
        with pytest.raises(IndexError):
            call(case, np.zeros((3, 4)))
    with pytest.raises(IndexError):
        call(first_row, np.zeros((0, 4)))


def test_too_many_indices_raise_when_building():
    x = T.dmatrix()
    for index in ((0, 0, 0), (slice(None),) * 3, (Ellipsis, 0, 0, 0), (None, 0, None, 0, 0), (0, Ellipsis, 0, 0)):
        with pytest.raises(IndexError):
            x[index]
    with pytest.raises(IndexError):
        T.dscalar()[0]
    with pytest.raises(IndexError):
        x[..., ...]


def test_slice_step_zero_raises(mode):
    x = T.dmatrix()
    with pytest.raises(ValueError):
        x[::0]
    with pytest.raises(ValueError):
        x[:, 1:3:0]
    i = T.lscalar()
    f = function([x, i], x[::i], mode=mode)
    with pytest.raises(ValueError):
        f(np.zeros((3, 4)), 0)
    np.testing.assert_array_equal(f(np.arange(12.0).reshape(3, 4), -1), np.arange(12.0).reshape(3, 4)[::-1])


def test_advanced_indexing_goes_to_the_advanced_ops():
    """Arrays and masks in an index make it advanced (tests/tensor/test_advanced_indexing.py checks them)."""
    from ffigraph.tensor.advanced_subtensor import AdvancedSubtensor, AdvancedSubtensor1

    x = T.dmatrix()
    for index in ([0, 1], np.array([0, 1]), (slice(None), [1, 2]), T.lvector(), (0, np.array([True, False]))):
        assert isinstance(x[index].owner.op, (AdvancedSubtensor, AdvancedSubtensor1)), index


def test_bad_index_types_raise():
    x = T.dmatrix()
    for index in (1.5, "a", T.dscalar(), slice(0.5, None)):
        with pytest.raises(TypeError):
            x[index]


# ------------------------------------------------------------------ no aliasing of inputs (DeepCopyOp)

VIEW_BUILDS = {
    "x.T": lambda x: x.T,
    "x[1:]": lambda x: x[1:],
    "x[::-1]": lambda x: x[::-1],
    "x[...]": lambda x: x[...],
    "x[()]": lambda x: x[()],
    "x[:]": lambda x: x[:],
    "x[1]": lambda x: x[1],
    "x[1, 2]": lambda x: x[1, 2],
    "x[None]": lambda x: x[None],
    "x[:, None]": lambda x: x[:, None],
    "dimshuffle": lambda x: x.dimshuffle(1, "x", 0),
    "transpose id": lambda x: T.transpose(x, (0, 1)),
    "reshape": lambda x: x.reshape((4, 3)),
    "reshape -1": lambda x: x.reshape(-1),
    "flatten": lambda x: T.flatten(x),
    "flatten 2": lambda x: T.flatten(x, 2),
    "identity": lambda x: x,
}


def build_ref(name, a):
    return {
        "x.T": lambda: a.T, "x[1:]": lambda: a[1:], "x[::-1]": lambda: a[::-1], "x[...]": lambda: a[...],
        "x[()]": lambda: a[()], "x[:]": lambda: a[:], "x[1]": lambda: a[1], "x[1, 2]": lambda: a[1, 2],
        "x[None]": lambda: a[None], "x[:, None]": lambda: a[:, None],
        "dimshuffle": lambda: a.T[:, None, :], "transpose id": lambda: a, "reshape": lambda: a.reshape(4, 3),
        "reshape -1": lambda: a.reshape(-1), "flatten": lambda: a.reshape(-1), "flatten 2": lambda: a,
        "identity": lambda: a,
    }[name]()


def test_outputs_do_not_alias_inputs(mode):
    """Every build of VIEW_BUILDS, each on its own input, in one compiled function."""
    names = list(VIEW_BUILDS)
    xs = [T.dmatrix() for _ in names]
    outs = [VIEW_BUILDS[name](x) for name, x in zip(names, xs)]
    f = function(xs, outs, mode=mode)
    value = np.arange(12.0).reshape(3, 4)
    wants = [np.asarray(build_ref(name, value)).copy() for name in names]
    for layout in LAYOUTS:
        inps = [relayout(value, layout) for _ in names]
        for name, got, out, want, inp in zip(names, f(*inps), outs, wants, inps):
            assert_matches(got, want, out.type, dtype="float64")
            assert not np.shares_memory(got, inp), name
            got[...] = -1.0
            np.testing.assert_array_equal(inp, value)
        # a second call is not affected by writing into the first results
        for name, got, want in zip(names, f(*inps), wants):
            np.testing.assert_array_equal(got, want, err_msg=name)


def test_outputs_do_not_alias_each_other_or_earlier_results(mode):
    x = T.dmatrix()
    f = function([x], [x.T, x.T, x[1:], x], mode=mode)
    value = np.arange(6.0).reshape(2, 3)
    r1 = f(value)
    for p, q in itertools.combinations(r1 + [value], 2):
        assert not np.shares_memory(p, q)
    r1[0][...] = 100.0
    np.testing.assert_array_equal(r1[1], value.T)
    r2 = f(value * 2)
    np.testing.assert_array_equal(r1[2], value[1:])
    np.testing.assert_array_equal(r2[2], 2 * value[1:])
    for p, q in itertools.product(r1, r2):
        assert not np.shares_memory(p, q)


def test_constant_outputs_are_not_shared(mode):
    c = T.constant(np.arange(6.0).reshape(2, 3))
    f = function([], [c.T, c[1:]], mode=mode)
    a, b = f()
    a[...] = 0.0
    b[...] = 0.0
    a2, b2 = f()
    np.testing.assert_array_equal(a2, np.arange(6.0).reshape(2, 3).T)
    np.testing.assert_array_equal(b2, np.arange(6.0).reshape(2, 3)[1:])


# ------------------------------------------------------------------ composites


def test_composite_shape_graph(mode):
    x = sample("float64", (4, 6), special=False)
    check_cases([
        Case("chain", lambda v: v[1:, None, ::-2].dimshuffle(2, 1, 0).reshape((v.shape[1] // 2, -1)).T[::-1],
             lambda a: a[1:, None, ::-2].transpose(2, 1, 0).reshape((a.shape[1] // 2, -1)).T[::-1], [x],
             dtype="float64"),
        Case("flatten", lambda v: T.flatten(v.T[:, 1:3], 1)[::2], lambda a: a.T[:, 1:3].reshape(-1)[::2], [x],
             dtype="float64"),
    ], mode)
