"""``topk``, ``argtopk`` and ``topk_and_argtopk`` against a lane-by-lane reference written here
(Python's ``sorted`` over each lane: numpy's order with NaN above every number, ties by position),
under the C and Python linkers.

One compiled function per linker covers six dtypes, every axis (None and negative ones), both
orders, a symbolic ``kth`` of either sign up to the whole lane, reversed and transposed views and
lanes long enough for the heap to be replaced many times.
"""
import importlib
import math

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.gradient import verify_grad
from ffigraph.tensor.sort import TopKOp

LINKERS = {"c": Mode(linker="c"), "py": Mode(linker="py")}
DTYPES = ["float64", "float32", "int8", "uint8", "int64", "bool"]


def _key(v):
    """numpy's sort order as a Python key: NaN above every number."""
    v = v.item()
    return (1, 0) if isinstance(v, float) and math.isnan(v) else (0, v)


def reference(a, kth, axis, sorted_):
    """(values, positions) of the |kth| top elements of each lane along ``axis`` (None: flattened)."""
    a = np.asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    moved = np.moveaxis(a, axis, -1)
    m = abs(kth)
    values = np.empty(moved.shape[:-1] + (m,), a.dtype)
    positions = np.empty(moved.shape[:-1] + (m,), np.int64)
    for lane_index in np.ndindex(*moved.shape[:-1]):
        lane = moved[lane_index]
        if kth > 0:   # the largest first; equal values: the lower position first
            ranked = sorted(range(lane.size), key=lambda p: (_key(lane[p]), -p), reverse=True)
        else:
            ranked = sorted(range(lane.size), key=lambda p: (_key(lane[p]), p))
        chosen = ranked[:m] if sorted_ else sorted(ranked[:m])
        positions[lane_index] = chosen
        values[lane_index] = lane[chosen]
    return np.moveaxis(values, -1, axis), np.moveaxis(positions, -1, axis)


def sample(dtype, shape, rng):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 6, shape).astype(dtype)      # many ties
    a = rng.integers(-3, 4, shape).astype(dtype)            # ties, -0.0 beside 0.0, the special values
    flat = a.reshape(-1)
    flat[[1, 6, 11]] = np.nan
    flat[[2, 9]], flat[[3, 13]], flat[4] = np.inf, -np.inf, -0.0
    return a


# (axis, sorted) combinations per dtype: every axis and both orders for float64, fewer for the
# others (the same C with another element type and comparison)
CASES = {"float64": [(a, s) for a in (0, 1, 2, -2, None) for s in (True, False)]}
for _dtype in DTYPES[1:]:
    CASES[_dtype] = [(-1, True), (0, False), (None, True)]


@pytest.fixture(scope="module", params=sorted(LINKERS))
def compiled(request):
    xs = {d: T.tensor(d, (None, None, None), name="x_" + d) for d in DTYPES}
    long = T.dvector("long")
    kth = T.lscalar("kth")
    outputs, labels = [], []
    for dtype, cases in CASES.items():
        for axis, sorted_ in cases:
            outputs += list(T.topk_and_argtopk(xs[dtype], kth, axis=axis, sorted=sorted_))
            labels.append((dtype, axis, sorted_))
    outputs += [T.topk(long, kth), T.argtopk(long, kth, sorted=False)]
    f = function([xs[d] for d in DTYPES] + [long, kth], outputs, mode=LINKERS[request.param])
    return f, labels


@pytest.mark.parametrize("kth", [1, 3, 4, -1, -2, -4])
def test_values_and_positions_match_the_reference(compiled, kth):
    f, labels = compiled
    rng = np.random.default_rng(abs(kth) + 7 * (kth < 0))
    data = {}
    for dtype in DTYPES:
        a = sample(dtype, (4, 5, 6), rng)
        # layouts: a reversed view (negative strides), a transposed one, plain C order
        data[dtype] = {"float64": a[::-1, :, ::-1], "float32": a.transpose(0, 2, 1)}.get(dtype, a)
    long = rng.standard_normal(1000)
    long[::7] = long[3]                                     # ties across the lane
    got = f(*[data[d] for d in DTYPES], long, kth)
    for n, (dtype, axis, sorted_) in enumerate(labels):
        values, positions = reference(data[dtype], kth, axis, sorted_)
        assert got[2 * n].dtype == data[dtype].dtype and got[2 * n + 1].dtype == np.int64
        np.testing.assert_array_equal(got[2 * n], values, err_msg=str((dtype, axis, sorted_)))
        np.testing.assert_array_equal(got[2 * n + 1], positions, err_msg=str((dtype, axis, sorted_)))
    values, positions = reference(long, kth, 0, True)
    np.testing.assert_array_equal(got[-2], values)
    np.testing.assert_array_equal(got[-1], np.sort(positions))


def test_whole_lane_signed_zeros_and_errors(compiled):
    """kth = the lane's length sorts it whole (-0.0 and 0.0 tie, by position); kth = 0 or more
    than the lane holds is a ValueError naming kth, and the function still works afterwards."""
    f, labels = compiled
    rng = np.random.default_rng(5)
    args = [sample(d, (4, 5, 6), rng) for d in DTYPES] + [rng.standard_normal(1000)]
    for kth in (4, -4):
        got = f(*args, kth)
        n = labels.index(("float64", 0, True))
        values, positions = reference(args[0], kth, 0, True)
        np.testing.assert_array_equal(got[2 * n + 1], positions)
        np.testing.assert_array_equal(np.signbit(got[2 * n]), np.signbit(values))
    for kth, message in [(0, "kth must not be 0"), (5, "kth = 5 asks for more than the 4 elements along axis 0"),
                         (-5, "kth = -5 asks for more than the 4 elements along axis 0")]:
        with pytest.raises(ValueError, match=message):
            f(*args, kth)
    np.testing.assert_array_equal(f(*args, 1)[-2], [args[-1].max()])


@pytest.mark.parametrize("linker", sorted(LINKERS))
def test_empty_inputs_index_dtypes_and_kth_types(linker):
    mode = LINKERS[linker]
    x = T.dmatrix("x")
    k8 = T.scalar("k8", dtype="uint8")
    v = T.topk(x, k8, axis=1)
    p8 = T.argtopk(x, -2, axis=1, idx_dtype="int8")
    pu8 = T.argtopk(x, 1, axis=1, idx_dtype="uint8")
    assert p8.dtype == "int8" and p8.type.shape == (None, 2) and v.type.shape == (None, None)
    f = function([x, k8], [v, p8, pu8], mode=mode)
    # no lanes: outputs with no rows
    got = f(np.zeros((0, 5)), 3)
    assert [g.shape for g in got] == [(0, 3), (0, 2), (0, 1)]
    # positions up to 199 fit uint8, not int8
    a = np.arange(200.0)[None, :] * np.array([[1.0], [-1.0]])
    with pytest.raises(ValueError, match="idx_dtype int8 cannot hold the positions 0 .. 199 along axis 1"):
        f(a, 1)
    small = a[:, :120]
    got = f(small, 2)
    np.testing.assert_array_equal(got[0], [[119.0, 118.0], [0.0, -1.0]])
    np.testing.assert_array_equal(got[1], [[0, 1], [119, 118]])
    np.testing.assert_array_equal(got[2], [[119], [0]])
    # an empty lane has no top element
    with pytest.raises(ValueError, match="kth = 1 asks for more than the 0 elements"):
        f(np.zeros((3, 0)), 1)
    # a uint8 kth above the lane's length; below a length that uint8 cannot hold
    with pytest.raises(ValueError, match="kth = 200 asks for more than the 120 elements"):
        f(small, 200)
    wide = np.arange(300.0)[None, :]
    np.testing.assert_array_equal(function([x, k8], v, mode=mode)(wide, 100), wide[:, :-101:-1])


def test_build_time_checks_and_the_op():
    x = T.dmatrix("x")
    with pytest.raises(ValueError, match="at least one dimension"):
        T.topk(T.dscalar("s"), 1)
    with pytest.raises(IndexError, match="axis 2 is out of range"):
        T.topk(x, 1, axis=2)
    with pytest.raises(TypeError, match="kth must be an integer scalar"):
        T.topk(x, T.dscalar("k"))
    with pytest.raises(TypeError, match="kth must be an integer scalar"):
        T.topk(x, T.lvector("k"))
    with pytest.raises(ValueError, match="kth must not be 0"):
        T.topk(x, 0)
    with pytest.raises(TypeError, match="idx_dtype"):
        T.argtopk(x, 1, idx_dtype="float32")
    with pytest.raises(TypeError, match="complex"):
        T.topk(T.zmatrix("z"), 1)
    with pytest.raises(ValueError, match="nothing to return"):
        TopKOp(return_values=False, return_indices=False)
    assert TopKOp(axis=1, sorted=False) == TopKOp(axis=1, sorted=False) != TopKOp(axis=1)
    assert str(TopKOp(axis=-1)) == "TopKOp{axis=-1, sorted=True}"
    # axis=None flattens: one lane of every element
    assert T.topk(T.tensor3("t"), 3, axis=None).type.shape == (3,)
    sort_module = importlib.import_module("ffigraph.tensor.sort")   # Theano's home of the three
    assert sort_module.topk is T.topk and sort_module.topk_and_argtopk is T.topk_and_argtopk


def test_gradient_goes_to_the_chosen_positions():
    """d sum(w * topk(x)) / dx is w at the positions topk took, zero elsewhere (hand derivation);
    the positions' gradient is zero, an integer input's too."""
    x = T.dmatrix("x")
    w = T.dmatrix("w")
    values, positions = T.topk_and_argtopk(x, -2, axis=0, sorted=False)
    cost = (w * values).sum() + positions.sum()
    f = function([x, w], T.grad(cost, x), mode=LINKERS["c"])
    a = np.array([[3.0, -1.0, 7.0], [1.0, 5.0, 2.0], [2.0, 0.0, 9.0]])
    wv = np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])
    expected = np.zeros_like(a)
    # column 0: the two smallest are rows 1, 2 (in position order); column 1: rows 0, 2; column 2: rows 0, 1
    expected[1, 0], expected[2, 0] = 10.0, 40.0
    expected[0, 1], expected[2, 1] = 20.0, 50.0
    expected[0, 2], expected[1, 2] = 30.0, 60.0
    np.testing.assert_array_equal(f(a, wv), expected)
    i = T.lmatrix("i")
    g = T.grad(T.topk(i, 1).sum() * 1.0, i)
    assert g.dtype.startswith("float")
    np.testing.assert_array_equal(function([i], g)(np.ones((2, 3), "int64")), np.zeros((2, 3)))


@pytest.mark.finite_differences
def test_verify_grad():
    rng = np.random.default_rng(2)
    a = rng.permutation(24).reshape(2, 3, 4) + rng.random((2, 3, 4)) * 0.5   # distinct values
    verify_grad(lambda t: T.topk(t, 2, axis=1) * T.argtopk(t, -3, axis=2).sum(), [a], rng=rng,
                mode=LINKERS["c"])
    verify_grad(lambda t: T.topk(t, -5, axis=None, sorted=False), [a], rng=rng, mode=LINKERS["c"])
