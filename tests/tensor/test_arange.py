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


def ran_in_c(f):
    describe = getattr(f.maker.linker, "describe_nodes", None)
    if describe is None or getattr(f.maker.linker, "name", "") == "py":
        return
    assert any(type(node.op).__name__ == "ARange" and how.startswith("C") for node, how in describe()), f.info()


def check_ranges(mode, dtype, ranges):
    """One function of symbolic start/stop/step, swept over ``ranges``."""
    a, b, c = T.tensor(dtype, (), name="a"), T.tensor(dtype, (), name="b"), T.tensor(dtype, (), name="c")
    out = T.arange(a, b, c)
    assert out.dtype == np.result_type("int64", dtype).name and out.type.shape == (None,)
    out = T.arange(a, b, c, dtype=dtype)
    f = function([a, b, c], [out] + list(T.inferred_shape(out)), mode=mode)
    ran_in_c(f)
    for r in ranges:
        with np.errstate(all="ignore"):
            args = [np.asarray(v, dtype=dtype) for v in r]
            want = np.arange(*args, dtype=dtype)
        got, n = f(*args)
        assert_matches(got, want, out.type, rtol=0, atol=0)
        assert int(n) == len(want), (r, n)


@pytest.mark.parametrize("dtype", ("int64", "int32", "int8", "uint8"))
def test_integer_ranges(dtype, mode):
    rs = RANGES if np.dtype(dtype).kind == "i" else [r for r in RANGES if min(r) >= 0]
    check_ranges(mode, dtype, rs)


@pytest.mark.parametrize("dtype", ("float64", "float32"))
def test_float_ranges(dtype, mode):
    check_ranges(mode, dtype, RANGES + FLOAT_RANGES)


def test_constants_and_default_dtypes(mode):
    i, f32, i32 = T.lscalar("i"), T.fscalar("f"), T.iscalar("j")
    cases = [
        (T.arange(5), np.arange(5)),
        (T.arange(2, 9, 2), np.arange(2, 9, 2)),
        (T.arange(1.5), np.arange(1.5)),
        (T.arange(0, 1, 0.25), np.arange(0, 1, 0.25)),
        (T.arange(10, 0, -3), np.arange(10, 0, -3)),
        (T.arange(3, 1), np.arange(3, 1)),
        (T.arange(i), np.arange(4)),
        (T.arange(i, 10, 2.5), np.arange(4, 10, 2.5)),
        (T.arange(i32), np.arange(np.int32(7))),
        (T.arange(f32, 3), np.arange(np.float32(0.5), 3)),
        (T.arange(0, i32, dtype="float32"), np.arange(0, 7, dtype="float32")),
        (T.arange(5, dtype="int16"), np.arange(5, dtype="int16")),
    ]
    assert [o.type.shape for o, _ in cases[:6]] == [(len(w),) for _, w in cases[:6]]
    outs = [o for o, _ in cases]
    f = function([i, f32, i32], outs, mode=mode, on_unused_input="ignore")
    got = f(4, np.float32(0.5), 7)
    for g, (o, want) in zip(got, cases):
        assert o.dtype == want.dtype.name, (o, o.dtype, want.dtype)
        assert_matches(g, want, o.type, rtol=0, atol=0)


def test_nan_and_inf(mode):
    a, b, c = T.dscalar("a"), T.dscalar("b"), T.dscalar("c")
    f = function([a, b, c], T.arange(a, b, c), mode=mode)
    assert f(0.0, 5.0, np.inf).tolist() == [0.0]
    for args in [(0.0, np.nan, 1.0), (np.nan, 1.0, 1.0), (0.0, 1.0, np.nan), (np.inf, np.inf, 1.0)]:
        with pytest.raises(ValueError, match="arange: cannot compute a length"):
            f(*args)
    for args in [(0.0, np.inf, 1.0), (0.0, -np.inf, 1.0), (0.0, 1e300, 1e-300), (np.inf, 5.0, -1.0)]:
        with pytest.raises(ValueError, match="arange: the length.*too big"):
            f(*args)


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
