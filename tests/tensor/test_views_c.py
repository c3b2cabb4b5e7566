"""The plain-C code of Reshape, Subtensor (views), Alloc and Join (fresh arrays), against numpy.

Every test runs under the whole-graph C linker ('c'), each compiling ONE function for many cases
(``helpers.check_cases``: each distinct graph its own node; error tests give each graph its own
inputs and feed a bad value to one graph at a time, see ``caller``). The per-node linker 'c|py'
builds the very same node libraries (tests/linkers/test_c_backend.py shows it), so it runs here
only where it does something of its own: complex values fall back to Python.
"""
import re

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import In, Mode, Out, function
from helpers import ALL_DTYPES, LAYOUTS, Case, assert_matches, caller, check_cases, relayout, sample

C_OPS = ("Reshape", "Subtensor", "Alloc", "Join")


@pytest.fixture(params=["c"])
def cmode(request):
    return Mode(linker=request.param, optimizer=None)


def ran_in_c(f):
    """Assert that every Reshape/Subtensor/Alloc/Join node of ``f`` runs in C."""
    describe = getattr(f.maker.linker, "describe_nodes", None)
    if describe is None:
        return
    for node, how in describe():
        if type(node.op).__name__ in C_OPS:
            assert how.startswith("C"), "%s ran as %r" % (node, how)


def ccheck_cases(cases, mode, **kw):
    f = check_cases(cases, mode, **kw)
    ran_in_c(f)
    return f


def _reshape_case(label, x, target, *, dtype):
    return Case(label, lambda v, t=target: v.reshape(t), lambda a, t=target: a.reshape(t), [x], dtype=dtype)


# ------------------------------------------------------------------ reshape

RESHAPE_TARGETS = {
    "2d": ((3, 4), ((12,), (4, 3), (2, 2, 3), (1, 12, 1), (-1,), (2, -1, 2), (-1, 1, 3), (3, 4))),
    "3d": ((2, 3, 4), ((6, 4), (2, 12), (24,), (4, 3, 2), (2, 1, 3, 1, 4))),
}


@pytest.mark.parametrize("name", sorted(RESHAPE_TARGETS))
def test_reshape_ints(name, cmode):
    """Every target of a 2-d (or 3-d) input, on every dtype, in one compiled function."""
    shape, targets = RESHAPE_TARGETS[name]
    cases = []
    for dtype in ALL_DTYPES:
        x = sample(dtype, shape, special=name == "2d")
        cases += [_reshape_case("%s,%s" % (dtype, target), x, target, dtype=dtype) for target in targets]
    ccheck_cases(cases, cmode)


def test_reshape_symbolic_sizes(cmode):
    """Sizes from the input's shape or from two lscalar inputs (several values through one node), on
    float64, int32 and bool, in one compiled function."""
    cases = []
    for dtype in ("float64", "int32", "bool"):
        x = sample(dtype, (4, 6))
        cases += [Case(dtype + ",(s1,s0)", lambda v: v.reshape((v.shape[1], v.shape[0])),
                       lambda a: a.reshape(6, 4), [x], dtype=dtype),
                  Case(dtype + ",(s0,-1)", lambda v: v.reshape((v.shape[0], -1)), lambda a: a.reshape(4, -1), [x],
                       dtype=dtype)]
        by_mn = lambda v, m, n: v.reshape((m, -1, n))   # noqa: E731 (one node for every (m, n))
        cases += [Case("%s,(%d,-1,%d)" % (dtype, a, b), by_mn, lambda v, m, n: v.reshape(int(m), -1, int(n)),
                       [x, np.int64(a), np.int64(b)], dtype=dtype) for a, b in ((2, 3), (4, 1), (1, 24), (3, 2))]
    ccheck_cases(cases, cmode)


def test_reshape_empty_and_0d(cmode):
    """To and from 0-d (was test_reshape_to_and_from_0d) and empty arrays (test_reshape_empty)."""
    s = np.asarray(4.0)
    cases = [_reshape_case("[[7.5]]->()", np.array([[7.5]]), (), dtype="float64"),
             _reshape_case("3->(1,1,-1)", np.asarray(3, dtype="int64"), (1, 1, -1), dtype="int64"),
             _reshape_case("0d->(1,)", s, (1,), dtype="float64"),
             _reshape_case("0d->(-1,1)", s, (-1, 1), dtype="float64")]
    for shape, target in (((0, 3), (3, 0)), ((0, 3), (-1,)), ((0, 3), (3, -1)), ((2, 0), (0, 5)),
                          ((0,), (0, 4, 0)), ((3, 0, 2), (0,))):
        cases.append(_reshape_case("%s->%s" % (shape, target), np.zeros(shape, "float32"), target, dtype="float32"))
    ccheck_cases(cases, cmode)


def test_reshape_of_non_contiguous_input(cmode):
    """A transposed or strided input cannot be merged in C order: reshape copies. Four dtypes, one function."""
    cases = []
    for dtype in ("float64", "float32", "int32", "bool"):
        x = sample(dtype, (3, 4))
        cases += [Case(dtype + ",T(-1)", lambda v: v.T.reshape(-1), lambda a: a.T.reshape(-1), [x], dtype=dtype),
                  Case(dtype + ",T(2,6)", lambda v: v.T.reshape((2, 6)), lambda a: a.T.reshape(2, 6), [x],
                       dtype=dtype),
                  Case(dtype + ",[:,::-2](-1)", lambda v: v[:, ::-2].reshape((-1,)),
                       lambda a: a[:, ::-2].reshape(-1), [x], dtype=dtype),
                  Case(dtype + ",[::2](1,-1)", lambda v: v[::2].reshape((1, -1)), lambda a: a[::2].reshape(1, -1),
                       [x], dtype=dtype)]
    ccheck_cases(cases, cmode)


VIEW_CASES = [
    # (how the 4x6 input is laid out, target shape); numpy decides view or copy
    (lambda a: a, (24,)),
    (lambda a: a, (2, 2, 6)),
    (lambda a: a[:, ::2], (-1,)),             # copy: the rows are not contiguous with each other
    (lambda a: a[:, ::2], (2, 2, 3)),         # view: only the leading axis is split
    (lambda a: a[:, ::2], (4, 1, 3, 1)),      # view: length-1 axes go anywhere
    (lambda a: a[::2], (12,)),                # copy
    (lambda a: a[::2], (2, 2, 3)),            # view
    (lambda a: a.T, (24,)),                   # copy
    (lambda a: a.T, (3, 2, 4)),               # view
    (lambda a: a[::-1], (2, 2, 6)),           # view with a negative stride
    (lambda a: a[::-1, ::-1], (24,)),         # view: reversed on both axes is still one run
    (lambda a: a[::-1, ::2], (12,)),          # copy
    (lambda a: a[:1], (6,)),                  # contiguous slice: view
    (lambda a: a[:, :1], (4,)),               # one column: view (its stride is 6)
    (lambda a: a[:, 1:2].reshape(2, 2), (4,)),  # copy... or not: numpy decides
]


def test_reshape_views_where_numpy_does(cmode):
    """With borrow=True on the input and the output the result may view the input: it does exactly
    when numpy's reshape does. Every case of VIEW_CASES on its own input (its own buffer), in one
    compiled function."""
    xs = [T.dmatrix() for _ in VIEW_CASES]
    outs = [x.reshape(target) for x, (_, target) in zip(xs, VIEW_CASES)]
    f = function([In(x, borrow=True) for x in xs], [Out(out, borrow=True) for out in outs], mode=cmode)
    values = [layout(np.arange(4 * 6, dtype="float64").reshape(4, 6)) for layout, _ in VIEW_CASES]
    for case, got, out, value in zip(range(len(VIEW_CASES)), f(*values), outs, values):
        target = VIEW_CASES[case][1]
        want = value.reshape(target)
        assert_matches(got, want, out.type, dtype="float64")
        assert np.shares_memory(got, value) == np.shares_memory(want, value), (case, value.strides, target)


def test_reshape_errors(cmode):
    """Each graph its own inputs in one function: a bad size for one graph at a time."""
    minus = _reshape_case("(5,-1)", np.arange(10.0).reshape(2, 5), (5, -1), dtype="float64")
    seven = _reshape_case("(7,)", np.arange(7.0)[None], (7,), dtype="float64")
    by_nm = Case("(n,m)", lambda v, n, m: v.reshape((n, m)), lambda a, n, m: a.reshape(int(n), int(m)),
                 [np.arange(12.0).reshape(3, 4), np.int64(-1), np.int64(6)], dtype="float64")
    cases = [minus, seven, by_nm]
    call = caller(ccheck_cases(cases, cmode), cases)
    with pytest.raises(ValueError, match=re.escape("cannot reshape an array of shape (3, 4) (size 12) into (5, -1)")):
        call(minus, np.zeros((3, 4)))
    np.testing.assert_array_equal(call(minus, np.arange(10.0).reshape(2, 5)), np.arange(10.0).reshape(5, 2))
    with pytest.raises(ValueError, match=re.escape("(3, 4) (size 12) into (7,)")):
        call(seven, np.zeros((3, 4)))
    np.testing.assert_array_equal(call(seven, np.arange(7.0)[None]), np.arange(7.0))
    for bad_n, bad_m in ((-1, -1), (-3, 4), (2, -2)):
        with pytest.raises(ValueError, match="at most one -1"):
            call(by_nm, np.zeros((3, 4)), bad_n, bad_m)
    for bad_n, bad_m in ((0, -1), (5, -1), (2**62, 2**62), (-1, 0)):
        with pytest.raises(ValueError, match="cannot reshape"):
            call(by_nm, np.zeros((3, 4)), bad_n, bad_m)
    with pytest.raises(ValueError, match="cannot reshape"):
        call(by_nm, np.zeros((0, 4)), 0, -1)   # numpy: the -1 of an empty array is ambiguous
    np.testing.assert_array_equal(call(by_nm, np.arange(12.0).reshape(3, 4), -1, 6), np.arange(12.0).reshape(2, 6))
    np.testing.assert_array_equal(call(by_nm, np.zeros((0, 4)), 0, 7), np.zeros((0, 7)))


def test_flatten(cmode):
    """T.flatten(v) and T.flatten(v, 2) on four shapes (one node each per dtype), every dtype."""
    flat1 = lambda v: T.flatten(v)      # noqa: E731 (one build: the shapes of a dtype share its node)
    flat2 = lambda v: T.flatten(v, 2)   # noqa: E731
    cases = []
    for dtype in ALL_DTYPES:
        for shape in ((2, 3, 4), (0, 3, 4), (2, 3, 0), (1, 1, 1)):
            x = sample(dtype, shape)
            cases += [Case("%s,%s,1" % (dtype, shape), flat1, lambda a: a.reshape(-1) if a.size else a.reshape(0), [x],
                           dtype=dtype),
                      Case("%s,%s,2" % (dtype, shape), flat2, lambda a: a.reshape(a.shape[0], -1) if a.size
                           else a.reshape(a.shape[0], int(np.prod(a.shape[1:]))), [x], dtype=dtype)]
    ccheck_cases(cases, cmode)


# ------------------------------------------------------------------ basic indexing

# every index pattern on a (3, 4, 5) input, by kind
INDICES = {
    "integer": [0, 2, -1, -3, (1, 2), (-1, -2, -5), (2, 3, 4)],
    "slice": [slice(None), slice(1, None), slice(None, 2), slice(None, None, 2), slice(-10, 10), slice(10, 20),
              slice(-20, -10), slice(2, 1), slice(1, 2, 5)],
    "reversed_slice": [slice(None, None, -1), slice(None, None, -2), slice(2, 0, -1), slice(-1, -10, -1),
                       slice(100, None, -1), slice(None, -100, -1)],
    "mixed": [(slice(None), 1), (slice(None), slice(None), -1), (slice(1, None), None, slice(None, None, -2)),
              (slice(None, None, -1),) * 3, (slice(-2, None), 0, slice(1, -1)), (slice(0, 0), 1),
              (1, slice(3, None))],
    "ellipsis_newaxis": [Ellipsis, (Ellipsis, 1), (0, Ellipsis, 2), (None, Ellipsis), (1, None, Ellipsis, None, -1),
                         (Ellipsis, slice(None, None, -3))],
}


@pytest.mark.parametrize("kind", sorted(INDICES))
def test_basic_indexing(kind, cmode):
    """Every index pattern of this kind on every dtype, in one compiled function."""
    cases = []
    for dtype in ALL_DTYPES:
        x = sample(dtype, (3, 4, 5), special=True)
        cases += [Case("%s,%r" % (dtype, index), lambda v, index=index: v[index],
                       lambda a, index=index: np.asarray(a[index]), [x], dtype=dtype) for index in INDICES[kind]]
    ccheck_cases(cases, cmode)


def test_python_bounds_beyond_int64(cmode):
    # clamped like Python clamps slice bounds (infer_shape is not checked: it cannot make
    # int64 constants of such bounds, a limitation of Subtensor.infer_shape, not of the C code)
    x = sample("float64", (4, 5))
    ccheck_cases([Case(repr(index), lambda v, index=index: v[index], lambda a, index=index: a[index], [x],
                       dtype="float64")
                  for index in (slice(10**30, None, -1), slice(-10**30, 10**30, 3),
                                (slice(None, -10**25, -1), 2**70 - 2**70 + 1))], cmode, check_shape=False)


def test_all_integer_index_is_0d(cmode):
    """Every dtype in one function: each result a 0-d ndarray of the input's dtype (assert_matches)."""
    cases = []
    for dtype in ALL_DTYPES:
        assert T.tensor(dtype, (None, None))[1, 2].dtype == dtype
        value = sample(dtype, (3, 4))
        cases += [Case(dtype + ",[1,2]", lambda v: v[1, 2], lambda a: np.asarray(a[1, 2]), [value], dtype=dtype),
                  Case(dtype + ",[-1,-4]", lambda v: v[-1, -4], lambda a: np.asarray(a[-1, -4]), [value], dtype=dtype),
                  Case(dtype + ",[0][3]", lambda v: v[0][3], lambda a: np.asarray(a[0, 3]), [value], dtype=dtype)]
    ccheck_cases(cases, cmode)


def test_symbolic_slice_sweep(cmode):
    x = T.dvector()
    a, b, c = T.lscalar(), T.lscalar(), T.lscalar()
    out = x[a:b:c]
    f = function([x, a, b, c], out, mode=cmode)
    ran_in_c(f)
    bounds = [-7, -5, -4, -1, 0, 1, 2, 4, 5, 6, 2**63 - 1, -2**63]
    for n in (0, 1, 5):
        value = np.arange(float(n))
        for start in bounds:
            for stop in bounds:
                for step in (-2**63, -3, -1, 1, 2, 2**63 - 1):
                    want = value[start:stop:step]
                    assert_matches(f(value, start, stop, step), want, out.type, dtype="float64")
                    assert_matches(f(value[::-1], start, stop, step), value[::-1][start:stop:step], out.type,
                                   dtype="float64")


def test_symbolic_parts_in_order(cmode):
    """Symbolic parts are taken in the order start, stop, step, then the next entry's."""
    x = sample("int64", (6, 7, 8))
    i, j, k, m = T.lscalar(), T.lscalar(), T.lscalar(), T.lscalar()
    xv = T.tensor("int64", (None, None, None))
    out = xv[i:j:k, m, ::k]
    f = function([xv, i, j, k, m], out, mode=cmode)
    ran_in_c(f)
    for vals in ((1, 5, 2, 3), (5, 0, -2, -1), (-1, -7, -1, 6), (0, 100, 3, 0)):
        a, b, c, d = vals
        for layout in LAYOUTS:
            assert_matches(f(relayout(x, layout), *vals), x[a:b:c, d, ::c], out.type, dtype="int64")


def test_symbolic_indices_via_check(cmode):
    """Each graph with an int64 and an int32 index, every value of the index through the same node."""
    x = sample("float32", (5, 6))
    graphs = [
        (lambda v, i: v[i], lambda a, i: np.asarray(a[int(i)]), (0, 4, -1, -5)),
        (lambda v, i: v[:, i], lambda a, i: np.asarray(a[:, int(i)]), (0, -6, 5)),
        (lambda v, i: v[i::-1], lambda a, i: a[int(i)::-1], (0, 2, -2, 7, -9)),
        (lambda v, i: v[1:, None, i::-2], lambda a, i: a[1:, None, int(i)::-2], (0, 3, -1, 10)),
    ]
    # (dtype is the index's: the result keeps x's, float32)
    ccheck_cases([Case("%s,%d,%d" % (dtype, g, val), build, ref, [x, np.asarray(val, dtype=dtype)], dtype="float32")
                  for dtype in ("int64", "int32") for g, (build, ref, values) in enumerate(graphs)
                  for val in values], cmode)


def test_index_errors(cmode):
    """Each graph its own inputs in one function: a bad index for one graph at a time."""
    value = np.arange(12.0).reshape(3, 4)
    col = Case("x[1, i]", lambda v, i: v[1, i], lambda a, i: np.asarray(a[1, int(i)]), [value, np.int64(-1)],
               dtype="float64")
    row = Case("x[i]", lambda v, i: v[i], lambda a, i: a[int(i)], [value, np.int64(2)], dtype="float64")
    step = Case("x[::i]", lambda v, i: v[::i], lambda a, i: a[::int(i)], [value, np.int64(-2)], dtype="float64")
    both = Case("x[5, ::i]", lambda v, i: v[5, ::i], lambda a, i: a[5, ::int(i)], [np.zeros((6, 4)), np.int64(1)],
                dtype="float64")
    cases = [col, row, step, both]
    call = caller(ccheck_cases(cases, cmode), cases)
    for bad in (4, -5, 2**63 - 1, -2**63):
        with pytest.raises(IndexError, match=r"index %d is out of bounds for axis 1 with size 4" % bad):
            call(col, value, bad)
        assert call(col, value, -1) == 7.0   # still works after the error
    with pytest.raises(IndexError, match="axis 0 with size 0"):
        call(row, np.zeros((0, 4)), 0)
    np.testing.assert_array_equal(call(row, value, 2), value[2])
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        call(step, value, 0)
    np.testing.assert_array_equal(call(step, value, -2), value[::-2])
    # a zero step is reported before an index out of range (as perform does)
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        call(both, value, 0)
    with pytest.raises(IndexError):
        call(both, value, 1)


def test_indexing_0d_and_new_axes(cmode):
    s = T.dscalar()
    f = function([s], [s[...], s[None], s[()], s[None, ..., None]], mode=cmode)
    got = f(np.asarray(2.0))
    assert [g.shape for g in got] == [(), (1,), (), (1, 1)]
    assert all(float(g.reshape(())) == 2.0 for g in got)


# ------------------------------------------------------------------ aliasing


def test_outputs_never_alias_the_callers_input(cmode):
    x = T.dmatrix()
    outs = [x[1:], x.reshape(-1), x[::-1, 1], x[0, 0], x.T.reshape(-1), T.concatenate([x]), x[:, :]]
    f = function([x], outs, mode=cmode)
    value = np.arange(12.0).reshape(3, 4)
    got = f(value)
    for g, want in zip(got, (value[1:], value.reshape(-1), value[::-1, 1], value[0, 0], value.T.reshape(-1),
                             value, value)):
        np.testing.assert_array_equal(g, want)
        assert not np.shares_memory(g, value)
    for a in got:
        for b in got:
            if a is not b:
                assert not np.shares_memory(a, b)
    # and changing the input afterwards does not change earlier results
    value[...] = -1
    np.testing.assert_array_equal(got[0], np.arange(4.0, 12.0).reshape(2, 4))


def test_borrowed_view_outputs(cmode):
    x, y = T.dmatrix(), T.dmatrix()
    f = function([In(x, borrow=True), In(y, borrow=True)],
                 [Out(x[1:], borrow=True), Out(x.reshape((2, 6)), borrow=False), Out(y[1:, ::-1], borrow=True)],
                 mode=cmode)
    for layout in LAYOUTS:
        value = relayout(np.arange(12.0).reshape(3, 4), layout)
        a, b, _ = f(value, np.zeros((3, 4)))
        np.testing.assert_array_equal(a, value[1:])
        np.testing.assert_array_equal(b, value.reshape(2, 6))
        assert not np.shares_memory(b, value)
    # the borrowed result stays valid after further calls with other inputs
    x_value = np.arange(12.0).reshape(3, 4)
    v1 = np.arange(12.0).reshape(3, 4)
    a1 = f(x_value, v1)[2]
    f(x_value, np.zeros((5, 4)))
    f(x_value, np.ones((2, 4))[:, ::2])
    del v1
    np.testing.assert_array_equal(a1, np.arange(12.0).reshape(3, 4)[1:, ::-1])


def test_views_of_intermediate_values(cmode):
    x = T.dmatrix()
    y = (x * 2)[::-1, 1:].reshape(-1)[2:]
    f = function([x], [y, (x + 1).T.reshape((2, 6))[1]], mode=cmode)
    value = np.arange(12.0).reshape(3, 4)
    for layout in LAYOUTS:
        a, b = f(relayout(value, layout))
        np.testing.assert_array_equal(a, (value * 2)[::-1, 1:].reshape(-1)[2:])
        np.testing.assert_array_equal(b, (value + 1).T.reshape(2, 6)[1])


# ------------------------------------------------------------------ alloc, zeros_like, ones_like


def test_alloc_values(cmode):
    """Every (value shape, shape) pair on every dtype, in one compiled function."""
    cases = []
    for dtype in ALL_DTYPES:
        for vshape, shape in (((), (3, 4)), ((), ()), ((), (0, 3)), ((4,), (3, 4)), ((1,), (2, 5)),
                              ((3, 1), (2, 3, 4)), ((1, 4), (3, 4)), ((2, 3), (2, 3)), ((5,), (0, 5))):
            v = sample(dtype, vshape, special=True)
            cases.append(Case("%s,%s->%s" % (dtype, vshape, shape), lambda t, shape=shape: T.alloc(t, *shape),
                              lambda a, shape=shape: np.broadcast_to(a, shape).copy(), [v], dtype=dtype))
    ccheck_cases(cases, cmode)


def test_alloc_symbolic_sizes_and_errors(cmode):
    v = T.dvector()
    m, n = T.lscalar(), T.iscalar()
    out = T.alloc(v, m, n)
    f = function([v, m, n], out, mode=cmode)
    ran_in_c(f)
    value = np.array([1.5, -2.0, 3.0])
    assert_matches(f(value, 2, 3), np.broadcast_to(value, (2, 3)), out.type, dtype="float64")
    assert_matches(f(value[::-1], 0, 3), np.zeros((0, 3)), out.type, dtype="float64")
    assert_matches(f(value[:1], 4, 5), np.full((4, 5), 1.5), out.type, dtype="float64")
    with pytest.raises(ValueError, match="negative"):
        f(value, -1, 3)
    with pytest.raises(ValueError, match="negative"):
        f(value, 2, -3)
    with pytest.raises(ValueError, match=re.escape("alloc: value of shape (3,) cannot be broadcast to (2, 4)")):
        f(value, 2, 4)
    with pytest.raises(ValueError, match="broadcast"):
        f(np.zeros(0), 2, 1)   # a length-0 value does not stretch to length 1
    with pytest.raises(ValueError):
        f(value, 2**62, 3)    # too big
    assert_matches(f(value, 1, 3), value[None], out.type, dtype="float64")


def test_zeros_ones_like(cmode):
    """zeros_like, ones_like and zeros_like(dtype="int32") of four shapes and five dtypes, in one function."""
    zeros_int32 = lambda t: T.zeros_like(t, dtype="int32")   # noqa: E731 (one build: one node per dtype and ndim)
    cases = []
    for dtype in ("float64", "float32", "int64", "int32", "bool"):
        for shape in ((3, 4), (0, 2), (), (5,)):
            x = sample(dtype, shape)
            cases += [Case("%s,%s,zeros" % (dtype, shape), T.zeros_like, np.zeros_like, [x], dtype=dtype),
                      Case("%s,%s,ones" % (dtype, shape), T.ones_like, np.ones_like, [x], dtype=dtype),
                      Case("%s,%s,zeros int32" % (dtype, shape), zeros_int32,
                           lambda a: np.zeros_like(a, dtype="int32"), [x], dtype="int32")]
    ccheck_cases(cases, cmode)


def test_zeros_ones_symbolic_shape(cmode):
    n = T.lscalar()
    f = function([n], [T.zeros((n, 3)), T.ones((2, n), dtype="int32")], mode=cmode)
    a, b = f(4)
    np.testing.assert_array_equal(a, np.zeros((4, 3)))
    np.testing.assert_array_equal(b, np.ones((2, 4), dtype="int32"))
    assert b.dtype == np.int32
    with pytest.raises(ValueError, match="negative"):
        f(-2)
    assert f(0)[0].shape == (0, 3)


# ------------------------------------------------------------------ concatenate / stack


def test_concatenate(cmode):
    """Every (axis, shapes) case on every dtype, in one compiled function."""
    concat_cases = [
        (0, [(2, 3), (1, 3), (4, 3)]), (1, [(2, 3), (2, 1), (2, 4)]), (-1, [(2, 3), (2, 1)]),
        (0, [(0, 3), (2, 3), (0, 3)]), (1, [(2, 0), (2, 0)]), (0, [(3,), (0,), (2,)]),
        (2, [(2, 3, 1), (2, 3, 2)]), (1, [(2, 1, 3), (2, 2, 3), (2, 0, 3)]), (0, [(0,), (0,)]),
    ]
    cases = []
    for dtype in ALL_DTYPES:
        rng = np.random.default_rng(1)
        for axis, shapes in concat_cases:
            values = [sample(dtype, s, rng=rng) for s in shapes]
            cases.append(Case("%s,%d,%s" % (dtype, axis, shapes),
                              lambda *v, axis=axis: T.concatenate(list(v), axis=axis),
                              lambda *a, axis=axis: np.concatenate(a, axis=axis), values, dtype=dtype))
    ccheck_cases(cases, cmode)


def test_stack(cmode):
    cases = []
    for dtype in ("float64", "int32", "bool"):
        for axis in (0, 1, -1):
            for shape, count in (((2, 3), 3), ((4,), 2), ((0, 2), 2)):
                values = [sample(dtype, shape, rng=np.random.default_rng(k)) for k in range(count)]
                if not -len(shape) - 1 <= axis <= len(shape):
                    continue
                cases.append(Case("%s,%d,%s*%d" % (dtype, axis, shape, count),
                                  lambda *v, axis=axis: T.stack(list(v), axis=axis),
                                  lambda *a, axis=axis: np.stack(a, axis=axis), values, dtype=dtype))
        cases.append(Case(dtype + ",0d", lambda a, b: T.stack([a, b]), lambda a, b: np.stack([a, b]),
                          [np.asarray(1.5).astype(dtype), np.asarray(0.0).astype(dtype)], dtype=dtype))
    ccheck_cases(cases, cmode)


def test_concatenate_mixed_dtypes_and_same_input_twice(cmode):
    a, b = T.ivector(), T.dvector()
    f = function([a, b], [T.concatenate([a, b, a]), T.concatenate([b, b], axis=0)], mode=cmode)
    u, v = f(np.array([1, 2], dtype="int32"), np.array([0.5]))
    np.testing.assert_array_equal(u, [1.0, 2.0, 0.5, 1.0, 2.0])
    assert u.dtype == np.float64
    np.testing.assert_array_equal(v, [0.5, 0.5])


def test_concatenate_mismatch(cmode):
    """Both graphs in one function: mismatched shapes for one at a time."""
    concat = Case("concatenate", lambda x, y: T.concatenate([x, y], axis=1),
                  lambda a, b: np.concatenate([a, b], axis=1), [np.ones((2, 1)), np.zeros((2, 2))], dtype="float64")
    stack = Case("stack", lambda x, y: T.stack([x, y], axis=-1), lambda a, b: np.stack([a, b], axis=-1),
                 [np.ones((1, 2)), np.zeros((1, 2))], dtype="float64")
    call = caller(ccheck_cases([concat, stack], cmode), [concat, stack])
    with pytest.raises(ValueError, match=re.escape("[(2, 3), (3, 3)] do not match")):
        call(concat, np.zeros((2, 3)), np.zeros((3, 3)))
    np.testing.assert_array_equal(call(concat, np.ones((2, 1)), np.zeros((2, 2))), [[1, 0, 0], [1, 0, 0]])
    with pytest.raises(ValueError, match="do not match"):
        call(stack, np.zeros((2, 3)), np.zeros((2, 4)))
    np.testing.assert_array_equal(call(stack, np.ones((1, 2)), np.zeros((1, 2))), [[[1, 0], [1, 0]]])


# ------------------------------------------------------------------ complex falls back to Python


def test_complex_runs_in_python_under_c_py():
    mode = Mode(linker="c|py", optimizer=None)
    z = T.zmatrix()
    outs = [z.reshape(-1), z[1, ::-1], T.concatenate([z, z]), T.alloc(z[0, 0], 2, 2)]
    f = function([z], outs, mode=mode)
    value = (np.arange(6) + 1j * np.arange(6)).reshape(2, 3)
    for got, want in zip(f(value), (value.reshape(-1), value[1, ::-1], np.concatenate([value, value]),
                                    np.full((2, 2), value[0, 0]))):
        np.testing.assert_array_equal(got, want)
    hows = {type(n.op).__name__: how for n, how in f.maker.linker.describe_nodes()}
    for name in C_OPS:
        assert hows[name].startswith("python"), hows


def test_generated_code_is_plain_c():
    x, i = T.dmatrix(), T.lscalar()
    f = function([x, i], [x[i, ::-1].reshape((1, -1)), T.concatenate([x, T.alloc(1.0, 1, x.shape[1])])],
                 mode=Mode(linker="c", optimizer=None))
    src = f.maker.linker.source()
    assert "Python.h" not in src and "numpy/" not in src and "Py_" not in src and "PyObject" not in src
    for comment in ("/* Subtensor{", "/* Reshape:", "/* Join:", "/* Alloc:"):
        assert comment in src


def test_get_canonical_form_slice_against_python_slicing():
    """x[canonical][::direction] is x[slice] (numpy's slicing the oracle) for symbolic parts of
    every sign, steps of both signs, and Python ints (which give ints)."""
    from ffigraph.tensor.subtensor import get_canonical_form_slice

    start, stop, step, length = T.lscalars("start", "stop", "step", "length")
    canonical, direction = get_canonical_form_slice(slice(start, stop, step), length)
    f = function([start, stop, step, length], [canonical.start, canonical.stop, canonical.step, direction])
    a = np.arange(10)
    for s0 in range(-12, 13, 3):
        for e0 in (-11, -3, 0, 4, 9, 12):
            for st in (-7, -2, -1, 1, 3):
                b, e, s, d = f(s0, e0, st, 10)
                assert 0 <= b <= e <= 10 and s > 0 and d in (1, -1)
                np.testing.assert_array_equal(a[b:e:s][::d], a[s0:e0:st])
    for sl in (slice(None, None, -1), slice(-3, None), slice(20, -30, -2), slice(None, 5, 4)):
        c, d = get_canonical_form_slice(sl, 10)
        assert all(isinstance(v, int) for v in (c.start, c.stop, c.step, d))
        np.testing.assert_array_equal(a[c][::d], a[sl])
    assert get_canonical_form_slice(-3, 10) == (7, 1)
    i = T.lscalar("i")
    index, one = get_canonical_form_slice(i, length)
    g = function([i, length], index)
    assert one == 1 and (g(-2, 10), g(3, 10)) == (8, 3)
    with pytest.raises(ValueError, match="cannot be zero"):
        get_canonical_form_slice(slice(0, 4, 0), 10)
