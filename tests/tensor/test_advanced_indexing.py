"""Advanced indexing (integer arrays, boolean masks, mixed with ints, slices, None and ...) against
numpy: reading (AdvancedSubtensor1, AdvancedSubtensor), writing (inc_subtensor / set_subtensor of an
advanced index: AdvancedIncSubtensor1, AdvancedIncSubtensor), take / nonzero / flatnonzero, errors
and gradients, under the 'py' and 'c' linkers (the ``mode`` fixture) and once under DebugMode.

Many cases share one compiled function (helpers.check_cases: one output per case, called on
contiguous, strided and reversed copies of every value, index arrays and masks included).
"""
import shutil

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.gradient import verify_grad
from ffigraph.tensor.advanced_subtensor import (AdvancedIncSubtensor, AdvancedIncSubtensor1, AdvancedSubtensor,
                                                AdvancedSubtensor1)
from helpers import FROM_NUMPY, Case, assert_raises as _raises, check_cases, sample

RNG = np.random.default_rng(7)
X3 = sample("float64", (4, 5, 6), rng=RNG, special=True)
IDX = np.array([3, -1, 0, 3, -4])                  # negative and repeated
IDX2 = np.array([[1, -2], [0, 3]], dtype="int32")  # a matrix of indices
COL = np.array([[2], [0], [-1]], dtype="int16")    # broadcasts against a vector
ROW = np.array([4, 0, -5, 1], dtype="int8")
MASK3 = X3 > 0.5
MASK2 = sample("bool", (4, 5), rng=RNG)
MASK1 = np.array([True, False, True, True, False])  # along axis 1 (5)
EMPTY = np.zeros(0, dtype="int64")


def _cases():
    c = []

    def add(label, build, ref, values, dtype=FROM_NUMPY):
        c.append(Case(label, build, ref, values, dtype=dtype))

    add("vector", lambda x, i: x[i], lambda x, i: x[i], [X3, IDX])
    add("matrix_of_indices", lambda x, i: x[i], lambda x, i: x[i], [X3, IDX2])
    add("broadcast_pair", lambda x, i, j: x[i, j], lambda x, i, j: x[i, j], [X3, COL, ROW])
    add("slice_then_array", lambda x, i: x[:, i], lambda x, i: x[:, i], [X3, IDX[:2] + 1])
    add("apart", lambda x, i, j: x[i, :, j], lambda x, i, j: x[i, :, j], [X3, IDX, IDX + 1])
    add("int_apart", lambda x, j: x[0, :, j], lambda x, j: x[0, :, j], [X3, ROW])
    add("int_adjacent", lambda x, i: x[:, i, -1], lambda x, i: x[:, i, -1], [X3, ROW])
    add("mask_all_axes", lambda x, m: x[m], lambda x, m: x[m], [X3, MASK3])
    add("mask_two_axes", lambda x, m: x[m], lambda x, m: x[m], [X3, MASK2])
    add("mask_axis1", lambda x, m: x[:, m], lambda x, m: x[:, m], [X3, MASK1])
    add("mask_and_array", lambda x, m, j: x[1:, m, j], lambda x, m, j: x[1:, m, j],
        [X3, MASK1, np.array([0, -1, 2])])
    add("mask_all_false", lambda x, m: x[m], lambda x, m: x[m], [X3, np.zeros((4, 5), bool)])
    add("mask_all_true", lambda x, m: x[:, m], lambda x, m: x[:, m], [X3, np.ones(5, bool)])
    add("newaxis", lambda x, i: x[i, None, 1:4], lambda x, i: x[i, None, 1:4], [X3, IDX])
    add("newaxis_first", lambda x, i: x[None, :, i], lambda x, i: x[None, :, i], [X3, IDX[:3] + 1])
    add("newaxis_between", lambda x, i: x[i, None, i], lambda x, i: x[i, None, i], [X3, IDX[:3]])
    add("ellipsis", lambda x, i: x[..., i], lambda x, i: x[..., i], [X3, IDX])
    add("ellipsis_apart", lambda x, i, j: x[i, ..., j], lambda x, i, j: x[i, ..., j], [X3, IDX[:4], ROW])
    add("empty_ellipsis_apart", lambda x, i, j: x[:, i, ..., j], lambda x, i, j: x[:, i, ..., j],
        [X3, IDX[:2] + 1, ROW[:2]])
    add("composed", lambda x, i, j: x[i][:, j], lambda x, i, j: x[i][:, j], [X3, IDX, IDX2])
    add("negative_steps", lambda x, i: x[::-2, i, 4:0:-2], lambda x, i: x[::-2, i, 4:0:-2], [X3, IDX])
    add("symbolic_slice", lambda x, i, a, b: x[a:b, i], lambda x, i, a, b: x[a:b, i],
        [X3, IDX2, np.array(-3), np.array(4)])
    add("symbolic_int", lambda x, i, a: x[i, a], lambda x, i, a: x[i, a], [X3, IDX, np.array(-2)])
    add("list_index", lambda x: x[[0, -1, 0], :, [2, 3, 4]], lambda x: x[[0, -1, 0], :, [2, 3, 4]], [X3])
    add("constant_masks", lambda x: x[True] + x[[False, True, True, False]].sum(),
        lambda x: x[True] + x[[False, True, True, False]].sum(), [X3])
    add("empty_index", lambda x, i: x[i], lambda x, i: x[i], [X3, EMPTY])
    add("empty_index_apart", lambda x, i: x[i, 1:3, i], lambda x, i: x[i, 1:3, i], [X3, EMPTY])
    add("empty_x", lambda x, i: x[:, i], lambda x, i: x[:, i], [np.zeros((0, 3)), np.array([2, -3, 0])])
    add("empty_x_rows", lambda x, i: x[i], lambda x, i: x[i], [np.zeros((0, 3)), EMPTY])
    add("vector_x", lambda v, i: v[i], lambda v, i: v[i], [X3[0, 0], IDX2])
    add("zero_d_result", lambda v, i: AdvancedSubtensor([("array",)])(v, i),
        lambda v, i: np.array(v[int(i)]), [X3[0, 0], np.array(-2)])
    add("zero_d_mask_of_scalar", lambda s: s[True], lambda s: s[True], [np.array(2.5)])
    for dtype in ["int8", "int16", "int32", "uint16", "uint32", "uint64"]:   # index dtypes
        add("index_%s" % dtype, lambda x, i: x[:, i], lambda x, i: x[:, i], [X3, (IDX[:3] % 5).astype(dtype)])
    for dtype in ["float32", "int64", "bool", "complex128", "uint8"]:                  # x dtypes
        xv = sample(dtype, (4, 5), rng=np.random.default_rng(1))
        if dtype == "complex128":
            xv = xv + 1j * xv[::-1]
        add("x_%s_rows" % dtype, lambda x, i: x[i], lambda x, i: x[i], [xv, IDX])
        add("x_%s_mixed" % dtype, lambda x, m, i: x[m, i], lambda x, m, i: x[m, i], [xv, MASK2[:, 0], IDX[:1]])
    return c


CASES = _cases()


def test_reading(mode):
    """Every case of CASES in one compiled function, on three layouts; infer_shape agrees."""
    f = check_cases(CASES, mode)
    ops = [type(n.op) for n in f.maker.fgraph.apply_nodes]
    assert AdvancedSubtensor1 in ops and AdvancedSubtensor in ops
    _check_plain_c(f, mode)


def _check_plain_c(f, mode):
    """Under the C linker every node ran in C, from source that knows nothing of Python or numpy."""
    if mode.linker.name != "c":
        return
    src = f.c_source()
    assert "Python.h" not in src and "numpy/" not in src and "Py_" not in src


def test_op_choice_and_names():
    x, i = T.dmatrix("x"), T.lvector("i")
    assert isinstance(x[i].owner.op, AdvancedSubtensor1)
    assert isinstance(x[i, :].owner.op, AdvancedSubtensor1)       # a trailing full slice changes nothing
    assert isinstance(x[i, ...].owner.op, AdvancedSubtensor1)
    assert isinstance(x[[1, 2]].owner.op, AdvancedSubtensor1)
    assert isinstance(x[:, i].owner.op, AdvancedSubtensor)
    assert str(x[:, i].owner.op) == "AdvancedSubtensor{:, array}"
    assert str(x[i, None, ::-1].owner.op) == "AdvancedSubtensor{array, None, ::-1}"
    assert str(x[x > 0].owner.op) == "AdvancedSubtensor{mask}"
    assert str(T.inc_subtensor(x[i], 1.0).owner.op) == "AdvancedIncSubtensor1"
    assert str(T.set_subtensor(x[i], 1.0).owner.op) == "AdvancedSetSubtensor1"
    assert str(T.set_subtensor(x[1:, i], 1.0).owner.op) == "AdvancedSetSubtensor{1:, array}"
    assert x[i].type.shape == (None, None) and x[:, [1, 2, 3]].type.shape == (None, 3)
    assert T.tensor("float64", (4, 3))[[True, False, True, True]].type.shape == (3, 3)
    # a 0-d integer array indexes as an int (basic indexing, a view), as in numpy
    assert type(x[np.array(1)].owner.op).__name__ == "Subtensor"


# ------------------------------------------------------------------ writing


def _inc(x, idx, y):
    out = np.array(x, copy=True)
    np.add.at(out, idx, np.asarray(y).astype(out.dtype))
    return out


def _set(x, idx, y):
    out = np.array(x, copy=True)
    out[idx] = np.asarray(y).astype(out.dtype)
    return out


def _write_cases():
    c = []
    X2 = sample("float64", (5, 4), rng=np.random.default_rng(3))
    rep = np.array([1, -4, 3, 1, 1])          # row 1 three times (-4 is 1)
    for name, fn, ref in (("inc", T.inc_subtensor, _inc), ("set", T.set_subtensor, _set)):
        def add(label, build, values, ref=ref):
            c.append(Case("%s_%s" % (name, label), build, ref, values, dtype=FROM_NUMPY))
        # ref(x, idx, y) with idx built from the values the same way as the graph's index
        add("rows_repeated", lambda x, i, y, fn=fn: fn(x[i], y), [X2, rep, sample("float64", (5, 4))],
            ref=lambda x, i, y, ref=ref: ref(x, (i,), y))
        add("rows_broadcast_y", lambda x, i, y, fn=fn: fn(x[i], y), [X2, rep, sample("float64", (4,))],
            ref=lambda x, i, y, ref=ref: ref(x, (i,), y))
        add("pairs_repeated", lambda x, i, j, y, fn=fn: fn(x[i, j], y), [X2, rep, np.array([0, 3, -1, 0, 0]),
                                                                          sample("float64", (5,))],
            ref=lambda x, i, j, y, ref=ref: ref(x, (i, j), y))
        add("column", lambda x, i, y, fn=fn: fn(x[:, i], y), [X2, np.array([2, 2, -1]), sample("float64", (5, 1))],
            ref=lambda x, i, y, ref=ref: ref(x, (slice(None), i), y))
        add("mask", lambda x, m, y, fn=fn: fn(x[m], y), [X2, X2 > 0, np.array(1.5)],
            ref=lambda x, m, y, ref=ref: ref(x, (m,), y))
        add("mask_rows", lambda x, m, y, fn=fn: fn(x[m, 1:], y), [X2, X2[:, 0] > 0, sample("float64", (3,))],
            ref=lambda x, m, y, ref=ref: ref(x, (m, slice(1, None)), y))
        add("apart", lambda x, i, y, fn=fn: fn(x[i, ::-1, i], y), [X3, np.array([0, 0, -1]),
                                                                     sample("float64", (3, 5))],
            ref=lambda x, i, y, ref=ref: ref(x, (i, slice(None, None, -1), i), y))
        add("empty_index", lambda x, i, y, fn=fn: fn(x[i], y), [X2, EMPTY, sample("float64", (1, 4))],
            ref=lambda x, i, y, ref=ref: ref(x, (i,), y))
        add("y_cast_int", lambda x, i, y, fn=fn: fn(x[i], y), [X2.astype("int32"), rep, np.array([7, -1, 2, 3])],
            ref=lambda x, i, y, ref=ref: ref(x, (i,), y))
        add("bool_x", lambda x, i, y, fn=fn: fn(x[i], y), [X2 > 0, rep, X2[0] < 0],
            ref=lambda x, i, y, ref=ref: ref(x, (i,), y))
        add("complex_x", lambda x, i, y, fn=fn: fn(x[:, i], y), [X2 * 1j + 1, np.array([1, 1]), np.array(2 - 1j)],
            ref=lambda x, i, y, ref=ref: ref(x, (slice(None), i), y))
    return c


WRITE_CASES = _write_cases()


def test_writing(mode):
    """inc (repeats add up, as numpy.add.at) and set (the last write wins, as x[idx] = y), in one function."""
    f = check_cases(WRITE_CASES, mode)
    ops = {type(n.op) for n in f.maker.fgraph.apply_nodes}
    assert {AdvancedIncSubtensor1, AdvancedIncSubtensor} <= ops
    _check_plain_c(f, mode)


def test_debugmode():
    """perform and C agree node by node (DebugMode), reading and writing, masks included."""
    x, i, m, y = T.dmatrix("x"), T.lvector("i"), T.tensor("bool", (None,), name="m"), T.dvector("y")
    outs = [x[i], x[m, ::-1], x[i, None, i], T.inc_subtensor(x[i], y), T.set_subtensor(x[i, 1:], y[1:]),
            T.inc_subtensor(x[m], y), T.take(x, i, axis=1)]
    f = function([x, i, m, y], outs, mode="DebugMode")
    xv = sample("float64", (4, 4))[::-1]
    iv, mv, yv = np.array([2, -1, 2, 0]), np.array([True, False, True, True]), sample("float64", (4,))
    got = f(xv, iv, mv, yv)
    want = [xv[iv], xv[mv, ::-1], xv[iv, None, iv], _inc(xv, (iv,), yv), _set(xv, (iv, slice(1, None)), yv[1:]),
            _inc(xv, (mv,), yv), np.take(xv, iv, axis=1)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


# ------------------------------------------------------------------ take, nonzero, flatnonzero


def test_take_nonzero(mode):
    a, i, b = T.dmatrix("a"), T.tensor("int32", (None, None), name="i"), T.tensor("int8", (None, None), name="b")
    outs = [T.take(a, i), T.take(a, i, axis=1), T.take(a, i, axis=-2, mode="wrap"), T.take(a, i, axis=0, mode="clip"),
            T.take(a, [1, -1]), T.take(a, 3, axis=1)]
    outs += list(T.nonzero(b)) + [T.flatnonzero(b), T.flatnonzero(b[0])]
    f = function([a, i, b], outs, mode=mode)
    av, iv = sample("float64", (3, 4)), np.array([[0, -1], [3, -4]], dtype="int32")
    bv = np.array([[0, 1, 0], [2, 0, -1]], dtype="int8")
    got = f(av, iv, bv)
    want = [np.take(av, iv), np.take(av, iv, axis=1), np.take(av, iv, axis=-2, mode="wrap"),
            np.take(av, iv, axis=0, mode="clip"), np.take(av, [1, -1]), np.take(av, 3, axis=1)]
    want += list(np.nonzero(bv)) + [np.flatnonzero(bv), np.flatnonzero(bv[0])]
    for g, w, o in zip(got, want, outs):
        assert g.dtype == np.asarray(w).dtype and g.shape == np.shape(w), o
        np.testing.assert_array_equal(g, w)
    with pytest.raises(IndexError, match="out of bounds"):
        f(av, np.array([[0, 7]], dtype="int32"), bv)   # take(a, i): 7 in range; take(a, i, axis=1) not
    with pytest.raises(ValueError, match="0d"):
        T.nonzero(T.dscalar())


# ------------------------------------------------------------------ errors


def test_runtime_errors(mode):
    x, i, j, m, y = T.dmatrix("x"), T.lvector("i"), T.tensor("uint8", (None,), name="j"), \
        T.tensor("bool", (None,), name="m"), T.dvector("y")
    f1 = function([x, i], x[i], mode=mode)
    f2 = function([x, i, j], x[1:, i, None] + x[j, 0][None, :, None], mode=mode)
    fm = function([x, m], x[:, m], mode=mode)
    fi = function([x, i, y], T.inc_subtensor(x[i], y), mode=mode)
    fs = function([x, i, j, y], T.set_subtensor(x[i, j], y), mode=mode)
    xv = np.zeros((5, 3))
    _raises(IndexError, f1, (xv, np.array([0, 7])), "AdvancedSubtensor1", "index 7 is out of bounds for axis 0 with size 5")
    _raises(IndexError, f1, (xv[::-1], np.array([-6])), "index -6 is out of bounds for axis 0 with size 5")
    _raises(IndexError, f1, (np.zeros((0, 3)), np.array([0])), "index 0 is out of bounds for axis 0 with size 0")
    _raises(IndexError, f2, (xv, np.array([3]), np.array([1], "uint8")), "index 3 is out of bounds for axis 1 with size 3")
    _raises(IndexError, f2, (xv, np.array([-4]), np.array([1], "uint8")), "index -4 is out of bounds for axis 1")
    _raises(IndexError, f2, (xv, np.array([1]), np.array([200], "uint8")), "index 200 is out of bounds for axis 0")
    _raises(IndexError, fs, (xv, np.array([1, 2]), np.array([1, 2, 0], "uint8"), np.zeros(1)), "shape mismatch")
    _raises(IndexError, fm, (xv, np.array([True, False])), "boolean index did not match indexed array along axis 1",
            "size of axis is 3", "boolean axis is 2")
    _raises(IndexError, fi, (xv, np.array([5]), np.zeros(3)), "AdvancedIncSubtensor1", "index 5 is out of bounds")
    _raises(ValueError, fi, (xv, np.array([1, 2]), np.zeros(2)), "AdvancedIncSubtensor1", "y of shape (2,)", "(2, 3)")
    _raises(IndexError, fs, (xv, np.array([1]), np.array([9], "uint8"), np.zeros(1)), "AdvancedSetSubtensor",
            "index 9 is out of bounds for axis 1 with size 3")
    # the functions still work afterwards
    np.testing.assert_array_equal(f1(np.arange(5.0)[:, None] * np.ones(3), np.array([4, -5]))[:, 0], [4, 0])


def test_build_errors():
    x, f = T.dmatrix("x"), T.dvector("f")
    with pytest.raises(IndexError, match="integer .or boolean. type"):
        x[f]
    with pytest.raises(IndexError, match="integer .or boolean. type"):
        x[np.array([1.0, 2.0])]
    with pytest.raises(IndexError, match="integer .or boolean. type"):
        x[:, [0.5]]
    with pytest.raises(IndexError, match="too many indices"):
        x[[0], [0], [0]]
    with pytest.raises(IndexError, match="too many indices"):
        x[T.tensor("bool", (None, None, None))]
    with pytest.raises(IndexError, match="boolean index did not match.*axis 0.*size of axis is 4.*is 3"):
        T.tensor("float64", (4, 2))[np.array([True, False, True])]
    with pytest.raises(IndexError, match="shape mismatch"):
        x[np.array([0, 1]), np.array([0, 1, 2])]
    with pytest.raises(IndexError, match="single ellipsis"):
        T.tensor3()[..., [0], ...]
    with pytest.raises(TypeError, match="AdvancedIncSubtensor1.*y=.*3 dimensions"):
        T.inc_subtensor(x[[0, 1]], T.tensor3("y"))
    with pytest.raises(TypeError, match="AdvancedSetSubtensor.*cannot be cast"):
        T.set_subtensor(T.imatrix()[:, [0]], T.dvector())
    with pytest.raises(TypeError, match="integer vector"):
        AdvancedSubtensor1()(x, T.dvector())


# ------------------------------------------------------------------ gradients


def test_verify_grad(mode):
    """verify_grad of AdvancedSubtensor1, AdvancedSubtensor (mixed with a slice, and a mask), inc and
    set (wrt x and y) in one cost: each case's output flattened and joined."""
    idx, idx2 = np.array([2, 0, 2, -1]), np.array([1, -1])
    mask = np.array([[True, False, True], [False, False, True], [True, True, False], [False, True, True]])

    def fun(a, b, c):
        parts = [
            a[idx],                                          # AdvancedSubtensor1, a row read twice
            a[1:, idx2] * 2.0,                               # AdvancedSubtensor with a slice
            a[idx, idx2[:, None]],                           # broadcast pair
            a[mask] ** 2,                                    # mask
            T.inc_subtensor(a[idx], b),                      # repeated rows add up
            T.set_subtensor(a[[3, 0, 1]], b[:3]),            # no repeats: each y element lands
            T.inc_subtensor(a[mask], c),                     # y broadcast over the mask's elements
            T.set_subtensor(a[idx2, 1:], c),
        ]
        return T.concatenate([p.flatten() for p in parts])

    pt = [sample("float64", (4, 3), rng=np.random.default_rng(2)), sample("float64", (4, 3)), np.array(0.7)]
    verify_grad(fun, pt, mode=mode)


def test_integer_x_gradients_are_zero():
    x, w, i = T.imatrix("x"), T.dscalar("w"), T.lvector("i")
    cost = (x[i] * w).sum() + (T.inc_subtensor(x[:, i], 2) * w).sum()
    g = T.grad(cost, w)
    f = function([x, w, i], g, mode=Mode(linker="py", optimizer=None))
    xv = np.arange(6, dtype="int32").reshape(2, 3)
    assert float(f(xv, 1.0, np.array([1, 1]))) == float(xv[[1, 1]].sum() + _inc(xv, (slice(None), [1, 1]), 2).sum())
    # the ops' own gradient wrt an integer x: zeros (floatX), as in PyTensor
    for out in (x[i], x[:, i], T.inc_subtensor(x[i], 2), T.set_subtensor(x[:, i], 2)):
        gx = out.owner.op.L_op(out.owner.inputs, [out], [T.dmatrix()])[0]
        v = function([x, i], gx, mode=Mode(linker="py", optimizer=None), on_unused_input="ignore")(xv, np.array([0]))
        assert v.shape == xv.shape and not v.any() and v.dtype.kind == "f"


def test_nll_idiom(mode):
    """-log(p)[arange(n), y]: numpy's value, and its gradient wrt p matches a central difference."""
    p, y = T.dmatrix("p"), T.lvector("y")
    nll = -T.log(p)[T.arange(p.shape[0]), y]
    cost = nll.mean()
    f = function([p, y], [nll, cost, T.grad(cost, p)], mode=mode)
    rng = np.random.default_rng(5)
    pv = rng.uniform(0.1, 1.0, size=(5, 3))
    pv /= pv.sum(axis=1, keepdims=True)
    yv = np.array([0, 2, 2, 1, 0])
    got_nll, got_cost, got_g = f(pv, yv)
    np.testing.assert_allclose(got_nll, -np.log(pv)[np.arange(5), yv])
    np.testing.assert_allclose(got_cost, np.mean(-np.log(pv)[np.arange(5), yv]))
    numeric = np.zeros_like(pv)
    eps = 1e-6
    for k in np.ndindex(*pv.shape):
        hi, lo = pv.copy(), pv.copy()
        hi[k] += eps
        lo[k] -= eps
        numeric[k] = (np.mean(-np.log(hi)[np.arange(5), yv]) - np.mean(-np.log(lo)[np.arange(5), yv])) / (2 * eps)
    np.testing.assert_allclose(got_g, numeric, rtol=1e-5, atol=1e-7)
    verify_grad(lambda q: -T.log(q)[T.arange(q.shape[0]), yv], [pv], mode=mode)


def test_default_mode_rewrites():
    """The default mode (rewrites, shape inference through a mask's count) gives numpy's answers."""
    x, m, i = T.dmatrix("x"), T.tensor("bool", (None, None), name="m"), T.lvector("i")
    sel = x[m]
    outs = [sel.shape[0], sel * 2, T.set_subtensor(x[i], 0.0).shape, x[i, :][:, i].shape]
    f = function([x, m, i], outs)
    xv = sample("float64", (3, 4))
    got = f(xv, xv > 0, np.array([0, 0, 2]))
    assert int(got[0]) == int((xv > 0).sum())
    np.testing.assert_array_equal(got[1], xv[xv > 0] * 2)
    assert tuple(got[2]) == (3, 4) and tuple(got[3]) == (3, 3)


def test_bounds_checked_on_empty_results(mode):
    """numpy 2's rules, whatever the numpy: an index array is checked unless the advanced indices
    broadcast to an empty shape; an int is always checked."""
    x, i, i2, j, k = T.dmatrix("x"), T.lvector("i"), T.lvector("i2"), T.lmatrix("j"), T.lscalar("k")
    f = function([x, i, i2, j, k], [x[i, 2:2], x[j, i2], x[j, k]], mode=mode)
    xv, none = np.zeros((3, 4)), np.zeros((0, 1), dtype="int64")
    got = f(xv, np.array([1]), np.array([7]), none, 0)   # i2 broadcast to nothing: not checked
    assert [g.shape for g in got] == [(1, 0), (0, 1), (0, 1)]
    _raises(IndexError, f, (xv, np.array([5]), np.array([0]), none, 0), "index 5 is out of bounds for axis 0 with size 3")
    _raises(IndexError, f, (xv, np.array([1]), np.array([0]), none, 9), "index 9 is out of bounds for axis 1 with size 4")


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("make", "gcc")),
                    reason="exports are built with make and gcc; one is missing")
def test_bad_index_from_a_c_host(tmp_path):
    """An exported x[idx] run from C with an index out of range returns FFG_ERR_INDEX with the
    message, never a crash; with good indices it prints numpy's answer."""
    from export_helpers import no_python_env, output_slot_names, parse_printed, run

    x = T.dmatrix("x")
    idx = T.lvector("idx")
    f = function([x, idx], [x[idx], x[:, idx]], name="gather")
    xv = np.arange(12.0).reshape(3, 4)
    env = no_python_env(tmp_path)
    good = f.export(str(tmp_path / "good"), example_inputs=[xv, np.array([2, -1, 0])])
    run(["make", "-s"], good.directory, env)
    printed = parse_printed(run(["./example"], good.directory, env).stdout)
    outs = output_slot_names(f)
    np.testing.assert_array_equal(printed[("output", outs[0])], xv[[2, -1, 0]])
    np.testing.assert_array_equal(printed[("output", outs[1])], xv[:, [2, -1, 0]])
    bad = f.export(str(tmp_path / "bad"), example_inputs=[xv, np.array([0, 3])])
    run(["make", "-s"], bad.directory, env)
    proc = run(["./example"], bad.directory, env, check=False)
    assert proc.returncode == 1, proc
    assert "error 3" in proc.stderr and "index 3 is out of bounds for axis 0 with size 3" in proc.stderr, proc.stderr


def test_pytensor_module_names():
    """The names pytensor.tensor.subtensor (and math.logsumexp) give, at the same paths here."""
    from ffigraph.tensor.math import logsumexp
    from ffigraph.tensor.subtensor import (AdvancedSubtensor1, advanced_inc_subtensor, advanced_inc_subtensor1,
                                           advanced_set_subtensor, advanced_set_subtensor1, advanced_subtensor,
                                           advanced_subtensor1)

    x, y, i = T.dmatrix("x"), T.dmatrix("y"), T.lvector("i")
    assert isinstance(advanced_subtensor1, AdvancedSubtensor1)
    f = function([x, i, y], [advanced_subtensor1(x, i), advanced_inc_subtensor1(x, y, i),
                             advanced_set_subtensor1(x, y, i), advanced_subtensor(x, slice(None), i),
                             advanced_inc_subtensor(x, y[0], i, 1), advanced_set_subtensor(x, y[0], i, 1),
                             logsumexp(x, axis=1)])
    xv, iv, yv = np.arange(9.0).reshape(3, 3), np.array([2, 0, 2]), np.arange(9.0, 18.0).reshape(3, 3)
    inc, inc_at, set_at = xv.copy(), xv.copy(), xv.copy()
    np.add.at(inc, iv, yv)
    np.add.at(inc_at, (iv, 1), yv[0])
    set_at[iv, 1] = yv[0]
    setv = xv.copy()
    setv[iv] = yv
    want = [xv[iv], inc, setv, xv[:, iv], inc_at, set_at, np.log(np.exp(xv).sum(axis=1))]
    for got, w in zip(f(xv, iv, yv), want):
        np.testing.assert_allclose(got, w, rtol=1e-14)
    with pytest.raises(AttributeError):
        from ffigraph.tensor import subtensor
        subtensor.no_such_name
