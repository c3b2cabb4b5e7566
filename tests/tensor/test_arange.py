"""ARange / arange, checked against numpy.arange under every linker."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.tensor.basic import ARange
from helpers import assert_matches

RANGES = [(0, 10, 1), (2, 11, 3), (10, 0, -1), (10, -3, -4), (5, 5, 1), (5, 0, 1), (0, 5, -1), (-7, 7, 2),
          (3, 4, 100), (3, 2, -100)]
FLOAT_RANGES = [(0.1, 1.0, 0.3), (0.0, 1.0, 0.1), (1.0, -1.0, -0.25), (-2.5, 2.5, 0.7), (0.0, 5.0, np.inf),
                (0.0, -5.0, np.inf), (0.0, 1e-300, 1e300), (1.0, 1.0, 0.5), (0.0, -1.0, 0.5), (0.5, 3.0, 1)]
# dtype -> the ranges swept for it (unsigned: those with no negative entry)
DTYPE_RANGES = {
    "int64": RANGES, "int32": RANGES, "int8": RANGES, "uint8": [r for r in RANGES if min(r) >= 0],
    "float64": RANGES + FLOAT_RANGES, "float32": RANGES + FLOAT_RANGES,
}
# PyTensor's dtype of arange(a, b, c) without a dtype, for a, b, c all of one dtype: that dtype, but any
# signed integer widened to int64 and unsigned to uint64 (numpy's arange would give float64 for float32)
DEFAULT_DTYPE = {"int64": "int64", "int32": "int64", "int8": "int64", "uint8": "uint64",
                 "float64": "float64", "float32": "float32"}


def ran_in_c(f):
    describe = getattr(f.maker.linker, "describe_nodes", None)
    if describe is None or getattr(f.maker.linker, "name", "") == "py":
        return
    assert any(type(node.op).__name__ == "ARange" and how.startswith("C") for node, how in describe()), f.info()


def ranges_function(mode):
    """One function: for each dtype of DTYPE_RANGES, ``arange(a, b, c, dtype)`` of symbolic 0-d a, b, c of
    that dtype, and its inferred length. Returns the function, the arange outputs and their dtypes."""
    syms, outs, lengths = [], [], []
    for dtype in DTYPE_RANGES:
        a, b, c = (T.tensor(dtype, (), name="%s_%s" % (n, dtype)) for n in "abc")
        out = T.arange(a, b, c)
        assert out.dtype == DEFAULT_DTYPE[dtype] and out.type.shape == (None,), (dtype, out.dtype)
        out = T.arange(a, b, c, dtype=dtype)
        syms += [a, b, c]
        outs.append(out)
        lengths += list(T.inferred_shape(out))
    f = function(syms, outs + lengths, mode=mode)
    ran_in_c(f)
    return f, outs, list(DTYPE_RANGES)


def test_ranges(mode):
    """Every dtype of DTYPE_RANGES swept over its ranges, in one function (round r gives each dtype its
    r-th range, or its last one again)."""
    f, outs, dtypes = ranges_function(mode)
    for r in range(max(len(rs) for rs in DTYPE_RANGES.values())):
        chosen = [DTYPE_RANGES[d][min(r, len(DTYPE_RANGES[d]) - 1)] for d in dtypes]
        args, wants = [], []
        for dtype, rng in zip(dtypes, chosen):
            with np.errstate(all="ignore"):
                values = [np.asarray(v, dtype=dtype) for v in rng]
                wants.append(np.arange(*values, dtype=dtype))
            args += values
        got = f(*args)
        for k, (dtype, rng, want, out) in enumerate(zip(dtypes, chosen, wants, outs)):
            assert_matches(got[k], want, out.type, rtol=0, atol=0, dtype=dtype)
            n = got[len(outs) + k]
            assert int(n) == len(want), (dtype, rng, n)


def test_constants_and_default_dtypes(mode):
    """The default dtype is PyTensor's: the upcast of the arguments' dtypes, a Python number typed as
    PyTensor types it (an int the smallest of int8..int64 holding it, a float float32 when that holds
    it exactly), then signed integers widened to int64. numpy's answer gives the values only."""
    i, f32, i32 = T.lscalar("i"), T.fscalar("f"), T.iscalar("j")
    cases = [
        (T.arange(5), np.arange(5), "int64"),
        (T.arange(2, 9, 2), np.arange(2, 9, 2), "int64"),
        (T.arange(1.5), np.arange(1.5), "float32"),             # 1.5 is a float32 to PyTensor
        (T.arange(0, 1, 0.25), np.arange(0, 1, 0.25), "float32"),
        (T.arange(0.5, 2, 0.1), np.arange(0.5, 2, 0.1), "float64"),   # 0.1 is not a float32
        (T.arange(10, 0, -3), np.arange(10, 0, -3), "int64"),
        (T.arange(3, 1), np.arange(3, 1), "int64"),
        (T.arange(i), np.arange(4), "int64"),
        (T.arange(i, 10, 2.5), np.arange(4, 10, 2.5), "float64"),   # int64 and float32: float64
        (T.arange(i32), np.arange(np.int32(7)), "int64"),
        (T.arange(f32, 3), np.arange(np.float32(0.5), 3), "float32"),   # (numpy's: float64)
        (T.arange(0, i32, dtype="float32"), np.arange(0, 7, dtype="float32"), "float32"),
        (T.arange(5, dtype="int16"), np.arange(5, dtype="int16"), "int16"),
    ]
    assert [o.type.shape for o, _, _ in cases[:7]] == [(len(w),) for _, w, _ in cases[:7]]
    outs = [o for o, _, _ in cases]
    f = function([i, f32, i32], outs, mode=mode, on_unused_input="ignore")
    got = f(4, np.float32(0.5), 7)
    for g, (o, want, dtype) in zip(got, cases):
        assert o.dtype == dtype, (o, o.dtype, dtype)
        assert_matches(g, want, o.type, rtol=0, atol=0, dtype=dtype)


def test_nan_and_inf(mode):
    """On the float64 arange of test_ranges' function (the same library), the others given a plain range."""
    f, _, dtypes = ranges_function(mode)
    k = dtypes.index("float64")

    def call(*abc):
        args = []
        for j, dtype in enumerate(dtypes):
            args += [np.asarray(v, dtype=dtype) for v in (abc if j == k else (0, 3, 1))]
        return f(*args)

    assert call(0.0, 5.0, np.inf)[k].tolist() == [0.0]
    for args in [(0.0, np.nan, 1.0), (np.nan, 1.0, 1.0), (0.0, 1.0, np.nan), (np.inf, np.inf, 1.0)]:
        with pytest.raises(ValueError, match="arange: cannot compute a length"):
            call(*args)
    for args in [(0.0, np.inf, 1.0), (0.0, -np.inf, 1.0), (0.0, 1e300, 1e-300), (np.inf, 5.0, -1.0)]:
        with pytest.raises(ValueError, match="arange: the length.*too big"):
            call(*args)


def test_step_zero(mode):
    a, b, c = T.lscalar("a"), T.lscalar("b"), T.lscalar("c")
    d = T.dscalar("d")
    f = function([a, b, c, d], [T.arange(a, b, c), T.arange(0.0, 1.0, d)], mode=mode)
    with pytest.raises(ValueError, match="arange: step cannot be zero"):
        f(0, 5, 0, 1.0)
    with pytest.raises(ValueError, match="arange: step cannot be zero"):
        f(0, 5, 1, -0.0)
    with pytest.raises(ValueError, match="arange: step cannot be zero"):
        T.arange(0, 5, 0)
    with pytest.raises(ValueError, match="arange: step cannot be zero"):
        T.arange(a, 5, 0.0)


def test_build_errors():
    with pytest.raises(TypeError, match="arange: stop must be a real scalar"):
        T.arange(0, T.dvector())
    with pytest.raises(TypeError, match="arange: start must be a real scalar"):
        T.arange(1j, 5)
    with pytest.raises(TypeError, match="arange: dtype"):
        T.arange(3, dtype="bool")
    op = T.arange(T.lscalar()).owner.op
    assert op == ARange("int64") and op != ARange("int32") and str(op) == "ARange{int64}"
    assert isinstance(op, T.ARange)
