"""The accumulator of sum, prod and mean (``acc_dtype``) and their ``dtype``, as PyTensor has them.

float32 sums, products and means accumulate in float64 and are rounded to float32 once (PyTensor's
default ``acc_dtype``), so ``[1e8, 1, -1e8]`` sums to 1 and not to 0; ``dtype`` is the dtype of the
result, ``acc_dtype`` the accumulator's. The references are numpy spelled out per case: the input
converted to the accumulator, reduced by numpy, and converted to the result's dtype (for the
default, ``np.sum(x.astype('float64')).astype('float32')``). Each test compiles one function for
all its cases (``helpers.check_cases``), run on every layout, under the Python linker (each op's
``perform``) and the C linker (the reductions' C code); the fused reductions (``FusedReduce``) have a
test of their own.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function, shared
from ffigraph.compile.mode import Mode
from ffigraph.tensor.fused import FusedReduce
from ffigraph.tensor.math import Reduce
from helpers import Case, check_cases

F32, F64 = np.float32, np.float64

# sums whose float32 accumulation loses everything: 1e8 + 1 is 1e8 in float32
CANCEL = np.array([1e8, 1, -1e8], dtype="float32")
# every row and every column cancels the same way, in a different order
CANCEL_2D = np.array([[1e8, 1, -1e8, 2], [-1e8, 1e8, 3, 1e8], [5, -1e8, 1e8, -1e8]], dtype="float32")


def _sum64(a, axis=None, keepdims=False):
    return np.sum(np.asarray(a).astype("float64"), axis=axis, keepdims=keepdims)


def _count(a, axis):
    axes = range(a.ndim) if axis is None else [axis] if np.ndim(axis) == 0 else axis
    return int(np.prod([a.shape[d] for d in axes]))


def _checked(build, dtype):
    """``build``, asserting the output dtype when the graph is built."""
    def checked(*xs):
        out = build(*xs)
        assert out.dtype == dtype, (out.dtype, dtype)
        return out

    return checked


def _case(label, build, ref, values, dtype, exact=False):
    tol = dict(rtol=0, atol=0) if exact else {}
    return Case(label, _checked(build, dtype), ref, values, dtype=dtype, **tol)


def _default_cases():
    """float32 input, default dtype and acc_dtype: float32 results of float64 accumulation."""
    rng = np.random.default_rng(0)
    cube = rng.standard_normal((3, 4, 5)).astype("float32") * F32(1000)
    cases = []
    for axis in (None, 0, 1, -1):
        a = CANCEL if axis in (None, 0, -1) else CANCEL_2D
        cases += [
            _case("sum %s" % (axis,), lambda x, axis=axis: T.sum(x, axis=axis),
                  lambda v, axis=axis: _sum64(v, axis).astype("float32"), [CANCEL_2D], "float32", exact=True),
            _case("mean %s" % (axis,), lambda x, axis=axis: T.mean(x, axis=axis),
                  lambda v, axis=axis: _sum64(v, axis).astype("float32") / F32(_count(v, axis)), [CANCEL_2D],
                  "float32", exact=True),
            _case("prod %s" % (axis,), lambda x, axis=axis: T.prod(x, axis=axis),
                  lambda v, axis=axis: np.prod(v.astype("float64"), axis=axis).astype("float32"), [a + F32(3)],
                  "float32"),
        ]
    cases += [
        _case("vector sum", lambda x: T.sum(x), lambda v: _sum64(v).astype("float32"), [CANCEL], "float32",
              exact=True),
        _case("vector mean", lambda x: T.mean(x), lambda v: _sum64(v).astype("float32") / F32(3), [CANCEL],
              "float32", exact=True),
        _case("method sum keepdims", lambda x: x.sum(axis=0, keepdims=True),
              lambda v: _sum64(v, 0, keepdims=True).astype("float32"), [CANCEL_2D], "float32", exact=True),
        _case("method mean keepdims", lambda x: x.mean(axis=1, keepdims=True),
              lambda v: _sum64(v, 1, keepdims=True).astype("float32") / F32(4), [CANCEL_2D], "float32", exact=True),
        _case("method prod", lambda x: x.prod(axis=(0, 2)),
              lambda v: np.prod(v.astype("float64"), axis=(0, 2)).astype("float32"), [cube / F32(1000)],
              "float32"),
    ]
    for axis in (None, 0, (0, 2), (1, 2), ()):
        cases.append(_case("cube sum %s" % (axis,), lambda x, axis=axis: T.sum(x, axis=axis),
                           lambda v, axis=axis: _sum64(v, axis).astype("float32"), [cube], "float32"))
        cases.append(_case("cube mean %s" % (axis,), lambda x, axis=axis: x.mean(axis=axis),
                           lambda v, axis=axis: _sum64(v, axis).astype("float32") / F32(_count(v, axis)), [cube],
                           "float32"))
    return cases


def _explicit_cases():
    """``dtype`` and ``acc_dtype`` spelled out, as functions (PyTensor's positional order: axis, dtype)
    and as methods."""
    ints = np.array([[100, 100, 100], [-7, 90, 127], [1, 2, 3]], dtype="int8")
    f64 = np.array([[0.75, 0.75, 0.75], [-2.5, 1.25, 0.5], [-0.5, 1.0, 4.25]])   # row sums 2.25, -0.75, 4.75
    return [
        # float32 input: a float64 result; a float32 accumulator (numpy's own float32 sum: 0 here)
        _case("sum dtype float64", lambda x: T.sum(x, None, "float64"), lambda v: _sum64(v), [CANCEL], "float64",
              exact=True),
        _case("sum acc float32", lambda x: T.sum(x, acc_dtype="float32"),
              lambda v: np.add.reduce(v.astype("float32")), [CANCEL], "float32", exact=True),
        _case("method sum acc float32 axis 1", lambda x: x.sum(axis=1, acc_dtype="float32"),
              lambda v: np.add.reduce(v.astype("float32"), axis=1), [CANCEL_2D], "float32", exact=True),
        _case("prod acc float32", lambda x: x.prod(acc_dtype="float32"),
              lambda v: np.multiply.reduce(v.astype("float32")), [CANCEL + F32(2)], "float32"),
        _case("mean dtype float64", lambda x: T.mean(x, 0, "float64"),
              lambda v: _sum64(v, 0) / F64(3), [CANCEL_2D], "float64", exact=True),
        _case("mean acc float32", lambda x: x.mean(acc_dtype="float32"),
              lambda v: np.add.reduce(v.astype("float32")) / F32(3), [CANCEL], "float32", exact=True),
        # int8 input: accumulated in int64, then converted (wrapping) to int8; a float64 accumulator
        # for ints is allowed and its sum is converted to the default int64
        _case("sum int8 dtype int8", lambda x: x.sum(axis=0, dtype="int8"),
              lambda v: np.sum(v.astype("int64"), axis=0).astype("int8"), [ints], "int8"),
        _case("sum int8 default", lambda x: T.sum(x, 1), lambda v: np.sum(v.astype("int64"), axis=1), [ints],
              "int64"),
        _case("sum int8 acc float64", lambda x: T.sum(x, acc_dtype="float64"),
              lambda v: np.sum(v.astype("float64")).astype("int64"), [ints], "int64"),
        _case("prod int8 dtype int16", lambda x: T.prod(x, axis=1, dtype="int16"),
              lambda v: np.prod(v.astype("int64"), axis=1).astype("int16"), [ints], "int16"),
        # a float64 sum converted to int64 once (numpy's np.sum(x, dtype='int64') truncates each element)
        _case("sum float64 dtype int64", lambda x: x.sum(axis=1, dtype="int64"),
              lambda v: np.sum(v, axis=1).astype("int64"), [f64], "int64"),
        # mean: ints divide an int64 sum by a float64 count, whatever ``dtype``; a float32 sum by a
        # float32 count
        _case("mean int8", lambda x: T.mean(x, axis=0), lambda v: np.sum(v.astype("int64"), axis=0) / 3.0, [ints],
              "float64", exact=True),
        _case("mean int8 dtype int8", lambda x: x.mean(axis=0, dtype="int8"),
              lambda v: np.sum(v.astype("int64"), axis=0).astype("int8") / 3.0, [ints], "float64", exact=True),
        _case("mean int8 dtype float32", lambda x: T.mean(x, 1, "float32"),
              lambda v: np.sum(v.astype("int64"), axis=1).astype("float32") / F32(3), [ints], "float32",
              exact=True),
        _case("mean float64 dtype float32", lambda x: T.mean(x, dtype="float32"),
              lambda v: np.float32(np.sum(v)) / F32(9), [f64], "float32"),
    ]


def test_accumulator_and_dtype(mode):
    """Every case of ``_default_cases`` and ``_explicit_cases``, in one compiled function."""
    check_cases(_default_cases() + _explicit_cases(), mode)


def test_shared_float32_cancellation(mode):
    """The issue's example: the sum and mean of a float32 shared variable [1e8, 1, -1e8]."""
    s = shared(CANCEL.copy())
    f = function([], [s.sum(), s.mean(), T.sum(s, acc_dtype="float32")], mode=mode)
    total, mean, in_float32 = f()
    assert total.dtype == np.float32 and mean.dtype == np.float32
    assert total == F32(1) and mean == F32(1) / F32(3)
    assert in_float32 == F32(0)   # numpy's float32 sum, as asked


@pytest.fixture(params=["py", "c"])
def fusing(request):
    return Mode(linker=request.param, optimizer="fast_run")


def test_fused_reductions_accumulate_in_float64(fusing):
    """A float32 sum or mean of an elementwise expression is one FusedReduce (under the C linker, its
    C loop), accumulating in float64: over the last axis, over a kept last axis (the accumulators
    are a temporary there), over every axis; and with acc_dtype='float32' given, in float32."""
    cases = []
    for axis in (None, 0, 1):
        cases += [
            _case("2x sum %s" % (axis,), lambda x, axis=axis: (x * 2).sum(axis=axis),
                  lambda v, axis=axis: _sum64(v * F32(2), axis).astype("float32"), [CANCEL_2D], "float32",
                  exact=True),
            _case("mean %s" % (axis,), lambda x, axis=axis: T.mean(x - 1, axis=axis),
                  lambda v, axis=axis: (_sum64(v - F32(1), axis).astype("float32") / F32(_count(v, axis))),
                  [CANCEL_2D], "float32", exact=True),
        ]
    cases += [
        _case("exp prod", lambda x: T.exp(x / 1e8).prod(axis=0),
              lambda v: np.prod(np.exp(v / F32(1e8)).astype("float64"), axis=0).astype("float32"), [CANCEL_2D],
              "float32"),
        _case("max", lambda x: (x * 3).max(axis=1), lambda v: (v * F32(3)).max(axis=1), [CANCEL_2D], "float32",
              exact=True),
        _case("acc float32", lambda x: T.sum(x + 0.5, acc_dtype="float32"),
              lambda v: np.add.reduce(v + F32(0.5)), [CANCEL], "float32", exact=True),
    ]
    f = check_cases(cases, fusing)
    fused = [n.op for n in f.maker.fgraph.toposort() if isinstance(n.op, FusedReduce)]
    assert len(fused) == len(cases), [str(n.op) for n in f.maker.fgraph.toposort()]
    assert sorted(op.accumulator_dtype() for op in fused) == ["float32"] * 2 + ["float64"] * (len(cases) - 2)
    assert not any(isinstance(n.op, Reduce) for n in f.maker.fgraph.toposort())


def test_dtype_rules_and_precision_loss():
    """Output dtypes (PyTensor's), and an accumulator that would lose precision is refused when the
    graph is built."""
    f, d, i, b = T.fvector(), T.dvector(), T.ivector(), T.tensor("bool", (None,))
    assert [T.sum(f).dtype, T.prod(f).dtype, T.mean(f).dtype] == ["float32"] * 3
    assert [T.sum(i).dtype, T.sum(b).dtype, T.mean(i).dtype, T.mean(b).dtype] == ["int64", "int64", "float64",
                                                                                  "float64"]
    assert T.mean(i, dtype="int32").dtype == "float64" and T.mean(f, dtype="float64").dtype == "float64"
    assert T.sum(i, acc_dtype="float32").dtype == "int64"   # a float accumulator for ints is allowed
    assert T.sum(f, acc_dtype="float64", dtype="float32").owner.op.accumulator_dtype("float32") == "float64"
    assert T.sum(f).owner.op.accumulator_dtype("float32") == "float64"
    assert T.sum(i).owner.op.accumulator_dtype("int32") == "int64"
    for build in (lambda: T.sum(d, acc_dtype="float32"), lambda: d.prod(acc_dtype="float32"),
                  lambda: T.mean(i, acc_dtype="int16"), lambda: f.sum(acc_dtype="int64")):
        with pytest.raises(TypeError, match="precision would be lost"):
            build()
