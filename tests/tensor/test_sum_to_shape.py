"""SumToShape / sum_to_shape (the gradient of broadcasting), checked against numpy under every
linker, on several memory layouts; many cases share one compiled function."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.tensor.sum_to_shape import SumToShape
from helpers import LAYOUTS, assert_matches, relayout, sample

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


def numpy_sum_to(g, target):
    axes = tuple(a for a, (s, t) in enumerate(zip(g.shape, target)) if s != t)
    with np.errstate(all="ignore"):
        return np.sum(g, axis=axes, keepdims=True, dtype=g.dtype) if axes else g


def ran_in_c(f):
    describe = getattr(f.maker.linker, "describe_nodes", None)
    if describe is None or getattr(f.maker.linker, "name", "") == "py":
        return
    assert any(type(node.op).__name__ == "SumToShape" and how.startswith("C") for node, how in describe()), f.info()


def check_cases(mode, cases, dtype, symbolic_target=True, special=True):
    rng = np.random.default_rng(2)
    values, syms, outs, refs = [], [], [], []
    for k, (gshape, target) in enumerate(cases):
        gv = sample(dtype, gshape, rng=rng, special=special)
        g = T.tensor(dtype, (None,) * len(gshape), name="g%d" % k)
        values.append(gv)
        syms.append(g)
        if symbolic_target:
            s = T.lvector("s%d" % k)
            values.append(np.array(target, dtype="int64").reshape(len(target)))
            syms.append(s)
            outs.append(T.sum_to_shape(g, s))
        else:
            outs.append(T.sum_to_shape(g, target))
            assert outs[-1].type.shape == target
        refs.append(numpy_sum_to(gv, target))
    f = function(syms, outs, mode=mode)
    ran_in_c(f)
    atol = 1e-5 if dtype == "float32" else None   # (numpy sums pairwise, the C loop in order)
    for layout in LAYOUTS:
        got = f(*[relayout(v, layout) for v in values])
        for g, want, out in zip(got, refs, outs):
            assert_matches(g, want, out.type, atol=atol)
    shapes = [s for out in outs for s in T.inferred_shape(out)]
    got = function(syms, shapes, mode="FAST_COMPILE", on_unused_input="ignore")(*values)
    assert [int(s) for s in got] == [s for r in refs for s in r.shape]


@pytest.mark.parametrize("dtype", DTYPES)
def test_symbolic_target(dtype, mode):
    check_cases(mode, CASES, dtype)


@pytest.mark.parametrize("dtype", ("float64", "int32"))
def test_constant_target(dtype, mode):
    check_cases(mode, CASES, dtype, symbolic_target=False)


def test_target_from_scalars(mode):
    g, n = T.dtensor3("g"), T.iscalar("n")
    outs = [T.sum_to_shape(g, (1, n, 1)), T.sum_to_shape(g, [g.shape[0], 1, T.constant(4, dtype="int16")]),
            T.sum_to_shape(g, T.ivector("s32"))]
    f = function([g, n, outs[2].owner.inputs[1].owner.inputs[0]], outs, mode=mode)
    gv = sample("float64", (2, 3, 4), special=True)
    got = f(relayout(gv, "reversed"), 3, np.array([2, 1, 1], dtype="int32"))
    for r, out, target in zip(got, outs, [(1, 3, 1), (2, 1, 4), (2, 1, 1)]):
        assert_matches(r, numpy_sum_to(gv, target), out.type)


def test_integer_sums_wrap(mode):
    g = T.ivector("g")
    f = function([g], T.sum_to_shape(g, (1,)), mode=mode)
    big = np.iinfo("int32").max
    with np.errstate(all="ignore"):
        assert f(np.array([big, big, 3], dtype="int32")).tolist() == [int(np.int32(big) + np.int32(big) + np.int32(3))]


def test_nan_and_inf(mode):
    g = T.dmatrix("g")
    f = function([g], [T.sum_to_shape(g, (1, 3)), T.sum_to_shape(g, (2, 1))], mode=mode)
    gv = np.array([[np.nan, np.inf, 1.0], [2.0, -np.inf, np.inf]])
    a, b = f(gv)
    np.testing.assert_array_equal(a, [[np.nan, np.nan, np.inf]])
    np.testing.assert_array_equal(b, [[np.nan], [np.nan]])


@pytest.mark.parametrize("gshape,target,message", [
    ((3, 4), [2, 4], r"cannot sum g of shape \(3, 4\) to shape \(2, 4\)"),
    ((3, 4), [3, 0], r"cannot sum g of shape \(3, 4\) to shape \(3, 0\)"),
    ((3, 4), [-1, 1], r"cannot sum g of shape \(3, 4\) to shape \(-1, 1\)"),
    ((0, 4), [2, 1], r"cannot sum g of shape \(0, 4\) to shape \(2, 1\)"),
    ((3, 4), [3], r"the target shape has 1 entries but g of shape \(3, 4\) has 2 dimensions"),
    ((3, 4), [3, 4, 1], r"the target shape has 3 entries but g of shape \(3, 4\) has 2 dimensions"),
])
def test_runtime_errors(gshape, target, message, mode):
    g, s = T.dmatrix("g"), T.lvector("s")
    f = function([g, s], T.sum_to_shape(g, s), mode=mode)
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
