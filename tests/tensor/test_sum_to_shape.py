"""SumToShape / sum_to_shape (the gradient of broadcasting), checked against numpy under every
linker, on several memory layouts (``helpers.check_cases``); many cases share one compiled function."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.tensor.sum_to_shape import SumToShape
from helpers import Case, assert_matches, check_cases, relayout, sample

# (g shape, target shape)
CASES = [
    ((3, 4), (1, 4)),
    ((3, 4), (3, 1)),
    ((3, 4), (1, 1)),
    ((3, 4), (3, 4)),           # nothing to sum: g itself
    ((2, 3, 4), (2, 1, 4)),
    ((2, 3, 4), (1, 3, 1)),
    ((5,), (1,)),
    ((), ()),
    ((1, 3), (1, 1)),
    ((4, 1), (1, 1)),
    ((0, 3), (1, 3)),           # summing an empty axis gives zeros
    ((0, 3), (0, 1)),
    ((2, 0), (2, 1)),
]
DTYPES = ("float64", "float32", "int64", "int32", "uint8")


def _id(v):
    return str(v).replace(" ", "")


def numpy_sum_to(g, target):
    axes = tuple(a for a, (s, t) in enumerate(zip(g.shape, target)) if s != t)
    with np.errstate(all="ignore"):
        return np.sum(g, axis=axes, keepdims=True, dtype=g.dtype) if axes else g


def ran_in_c(f):
    describe = getattr(f.maker.linker, "describe_nodes", None)
    if describe is None or getattr(f.maker.linker, "name", "") == "py":
        return
    assert any(type(node.op).__name__ == "SumToShape" and how.startswith("C") for node, how in describe()), f.info()


def _atol(dtype):
    return 1e-5 if dtype == "float32" else None   # (numpy sums pairwise, the C loop in order)


def _sum_to_target(g, s):
    return numpy_sum_to(g, tuple(int(n) for n in s))


def test_symbolic_target(mode):
    """Every dtype of DTYPES on every case of CASES, the target a symbolic int64 vector, in one
    function: cases with the same dtype and g's ndim share a node."""
    cases = []
    for dtype in DTYPES:
        rng = np.random.default_rng(2)
        for gshape, target in CASES:
            gv = sample(dtype, gshape, rng=rng, special=True)
            assert T.sum_to_shape(T.tensor(dtype, (None,) * len(gshape)), T.lvector()).dtype == dtype
            cases.append(Case("%s,%s->%s" % (dtype, _id(gshape), _id(target)), T.sum_to_shape, _sum_to_target,
                              [gv, np.array(target, dtype="int64").reshape(len(target))], atol=_atol(dtype),
                              dtype=dtype))
    ran_in_c(check_cases(cases, mode))


_TO_CONSTANT = {}


def _to_constant(target):
    """The build summing to the constant ``target`` (one per target, so its cases share a node)."""
    if target not in _TO_CONSTANT:
        _TO_CONSTANT[target] = lambda g: T.sum_to_shape(g, target)
    return _TO_CONSTANT[target]


def test_constant_target(mode):
    """float64 and int32 on every case of CASES, the target a constant (so a static shape), with NaN
    and inf and int32 sums that wrap, in one function."""
    cases = []
    for dtype in ("float64", "int32"):
        rng = np.random.default_rng(2)
        for gshape, target in CASES:
            gv = sample(dtype, gshape, rng=rng, special=True)
            assert T.sum_to_shape(T.tensor(dtype, (None,) * len(gshape)), target).type.shape == target
            cases.append(Case("%s,%s->%s" % (dtype, _id(gshape), _id(target)), _to_constant(target),
                              lambda g, target=target: numpy_sum_to(g, target), [gv], atol=_atol(dtype),
                              dtype=dtype))
    # NaN and inf
    gv = np.array([[np.nan, np.inf, 1.0], [2.0, -np.inf, np.inf]])
    cases += [Case("nan-inf->(1,3)", _to_constant((1, 3)), lambda g: np.array([[np.nan, np.nan, np.inf]]), [gv],
                   rtol=0, atol=0, dtype="float64"),
              Case("nan-inf->(2,1)", _to_constant((2, 1)), lambda g: np.array([[np.nan], [np.nan]]), [gv],
                   rtol=0, atol=0, dtype="float64")]
    # integer sums wrap around
    big = np.iinfo("int32").max
    with np.errstate(all="ignore"):
        wrapped = int(np.int32(big) + np.int32(big) + np.int32(3))
    cases.append(Case("int32-wraps", _to_constant((1,)), lambda g: np.array([wrapped]),
                      [np.array([big, big, 3], dtype="int32")], dtype="int32"))   # (numpy's answer is int64)
    ran_in_c(check_cases(cases, mode))


def test_target_from_scalars(mode):
    g, n = T.dtensor3("g"), T.iscalar("n")
    outs = [T.sum_to_shape(g, (1, n, 1)), T.sum_to_shape(g, [g.shape[0], 1, T.constant(4, dtype="int16")]),
            T.sum_to_shape(g, T.ivector("s32"))]
    f = function([g, n, outs[2].owner.inputs[1].owner.inputs[0]], outs, mode=mode)
    gv = sample("float64", (2, 3, 4), special=True)
    got = f(relayout(gv, "reversed"), 3, np.array([2, 1, 1], dtype="int32"))
    for r, out, target in zip(got, outs, [(1, 3, 1), (2, 1, 4), (2, 1, 1)]):
        assert_matches(r, numpy_sum_to(gv, target), out.type, dtype="float64")


RUNTIME_ERRORS = [
    ((3, 4), [2, 4], r"cannot sum g of shape \(3, 4\) to shape \(2, 4\)"),
    ((3, 4), [3, 0], r"cannot sum g of shape \(3, 4\) to shape \(3, 0\)"),
    ((3, 4), [-1, 1], r"cannot sum g of shape \(3, 4\) to shape \(-1, 1\)"),
    ((0, 4), [2, 1], r"cannot sum g of shape \(0, 4\) to shape \(2, 1\)"),
    ((3, 4), [3], r"the target shape has 1 entries but g of shape \(3, 4\) has 2 dimensions"),
    ((3, 4), [3, 4, 1], r"the target shape has 3 entries but g of shape \(3, 4\) has 2 dimensions"),
]


def test_runtime_errors(mode):
    """Each bad (g shape, target) of RUNTIME_ERRORS raises, and the function is still usable afterwards."""
    g, s = T.dmatrix("g"), T.lvector("s")
    f = function([g, s], T.sum_to_shape(g, s), mode=mode)
    for gshape, target, message in RUNTIME_ERRORS:
        with pytest.raises(ValueError, match="SumToShape: " + message):
            f(np.zeros(gshape), target)
        assert f(np.zeros((3, 4)), [1, 4]).shape == (1, 4)   # still usable afterwards


def test_build_errors_and_static_shapes():
    g = T.tensor("float64", (1, None, 3), name="g")
    s = T.lvector("s")
    assert T.sum_to_shape(g, s).type.shape == (1, None, None)
    assert T.sum_to_shape(g, (1, 5, 1)).type.shape == (1, 5, 1)
    assert T.sum_to_shape(g, T.ivector()).owner.inputs[1].dtype == "int64"
    assert T.sum_to_shape(g, s).dtype == "float64"
    assert T.sum_to_shape(T.ivector(), (1,)).dtype == "int32"
    with pytest.raises(ValueError, match=r"SumToShape.*\(1, None, 3\).*\(1, 5, 2\)"):
        T.sum_to_shape(g, (1, 5, 2))
    with pytest.raises(ValueError, match="SumToShape"):
        T.sum_to_shape(g, (2, 5, 3))
    with pytest.raises(ValueError, match=r"SumToShape.*\(1, -1, 3\)"):
        T.sum_to_shape(g, (1, -1, 3))
    with pytest.raises(TypeError, match="SumToShape.*bool"):
        T.sum_to_shape(T.tensor("bool", (None,)), (1,))
    with pytest.raises(TypeError, match="SumToShape.*complex128"):
        T.sum_to_shape(T.zvector(), (1,))
    with pytest.raises(TypeError, match="SumToShape.*integer vector"):
        T.sum_to_shape(T.dvector(), T.dvector())
    with pytest.raises(TypeError, match="SumToShape.*integer vector"):
        SumToShape()(T.dvector(), T.lscalar())
    with pytest.raises(TypeError, match="SumToShape.*2 entries"):
        T.sum_to_shape(T.dvector(), (1, 1))
    with pytest.raises(TypeError, match="sum_to_shape.*integer scalar"):
        T.sum_to_shape(T.dvector(), (T.dscalar(),))
    assert SumToShape() == SumToShape() and str(SumToShape()) == "SumToShape"
    assert SumToShape.view_map == {0: [0]}
