"""The C code of ``Dot`` (ffigraph/tensor/dot_c.py) against numpy's ``np.dot``.

Every test runs under the whole-graph C linker and the op-wise one, and the float
tests run twice: through BLAS (scipy-openblas64, when installed) and through the
blocked C kernel (``dot_c.USE_BLAS`` switched off, so a fresh library is built).
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.linkers.c.interface import MethodNotDefined
from ffigraph.tensor import dot_c
from helpers import assert_matches, check, relayout, sample

SHAPES = {"vv": ((7,), (7,)), "mv": ((3, 7), (7,)), "vm": ((7,), (7, 4)), "mm": ((3, 7), (7, 4))}
DTYPES = ("float64", "float32", "int64", "int32", "bool")


@pytest.fixture(params=["c", "c|py"])
def mode(request):
    return Mode(linker=request.param, optimizer=None)


@pytest.fixture(params=["blas", "blocked"])
def path(request, monkeypatch):
    """Which float implementation the next compiled Dot uses."""
    if request.param == "blas" and dot_c.blas_info() is None:
        pytest.skip("scipy-openblas64 is not installed")
    monkeypatch.setattr(dot_c, "USE_BLAS", request.param == "blas")
    return request.param


def tol(dtype, k=8, scale=9.0):
    """Tolerances for a sum of k products of magnitude <= scale, summed in any order."""
    if np.dtype(dtype) == np.float32:
        return dict(rtol=1e-4, atol=1e-6 * k * scale)
    if np.dtype(dtype) == np.float64:
        return dict(rtol=1e-9, atol=1e-14 * k * scale)
    return {}


def typed_dot(build_dtype):
    def build(x, y):
        out = T.dot(x, y)
        assert out.dtype == build_dtype, (out.dtype, build_dtype)
        return out
    return build


# ------------------------------------------------------------------ values, dtypes and shapes


@pytest.mark.parametrize("kind", sorted(SHAPES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_dot_dtypes_and_shapes(kind, dtype, mode, path):
    if path == "blas" and not dtype.startswith("float"):
        pytest.skip("integers and bool never use BLAS")
    xs, ys = SHAPES[kind]
    a, b = sample(dtype, xs), sample(dtype, ys, rng=np.random.default_rng(1))
    check(typed_dot(dtype), np.dot, [a, b], mode, **tol(dtype))


@pytest.mark.parametrize("dx,dy", [("float32", "float64"), ("int32", "float64"), ("float64", "int32"),
                                   ("bool", "float32"), ("int32", "int64"), ("bool", "int32"),
                                   ("int8", "uint8"), ("int64", "uint64"), ("float32", "int16")])
@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_dot_mixed_dtypes(dx, dy, kind, mode, path):
    want = np.result_type(dx, dy).name
    if path == "blas" and not want.startswith("float"):
        pytest.skip("integer results never use BLAS")
    xs, ys = SHAPES[kind]
    a, b = sample(dx, xs, low=0 if dx.startswith("u") else -3), sample(dy, ys, rng=np.random.default_rng(2),
                                                                       low=0 if dy.startswith("u") else -3)
    check(typed_dot(want), np.dot, [a, b], mode, **tol(want))


def test_dot_special_values(mode, path):
    a = np.array([[1.0, np.inf], [0.0, 2.0], [np.nan, 1.0]])
    b = np.array([[0.0, 1.0], [3.0, -np.inf]])
    check(T.dot, np.dot, [a, b], mode)
    check(T.dot, np.dot, [a[1], b], mode)
    check(T.dot, np.dot, [a, b[0]], mode)


@pytest.mark.parametrize("dtype", ["int32", "int8", "int64", "uint32"])
def test_dot_integer_overflow_wraps_like_numpy(dtype, mode):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    a = rng.integers(info.max // 2, info.max, size=(5, 9), dtype=dtype)
    b = rng.integers(info.max // 2, info.max, size=(9, 6), dtype=dtype)
    check(T.dot, np.dot, [a, b], mode)
    check(T.dot, np.dot, [a[0], b[:, 0]], mode)


def test_dot_bool_is_or_of_ands(mode):
    a = np.array([[True, False, False], [False, False, False], [True, True, True]])
    b = np.array([[False, True], [True, False], [False, False]])
    f = check(typed_dot("bool"), np.dot, [a, b], mode)
    got = f(a, b)
    np.testing.assert_array_equal(got, [[False, True], [False, False], [True, True]])


# ------------------------------------------------------------------ layouts


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dot_transposed_inputs(dtype, mode, path):
    a, b = sample(dtype, (7, 3)), sample(dtype, (4, 7), rng=np.random.default_rng(4))
    v = sample(dtype, (7,), rng=np.random.default_rng(5))
    t = tol(dtype)
    check(lambda x, y: T.dot(x.T, y.T), lambda p, q: np.dot(p.T, q.T), [a, b], mode, **t)
    check(lambda x, y: T.dot(x.T, y), lambda p, q: np.dot(p.T, q), [a, v], mode, **t)
    check(lambda x, y: T.dot(x, y.T), lambda p, q: np.dot(p, q.T), [v, b], mode, **t)
    check(lambda x, y: T.dot(x.T, y), lambda p, q: np.dot(p.T, q), [a, a], mode, **t)
    # transposed (Fortran-ordered) values given to a plain dot
    x, y = T.matrix(dtype=dtype), T.matrix(dtype=dtype)
    f = function([x, y], T.dot(x, y), mode=mode)
    for p, q in ((a.T, b.T), (np.asfortranarray(a.T), b.T.copy()), (a.T.copy(), np.asfortranarray(b.T))):
        assert_matches(f(p, q), np.dot(p, q), f.maker.fgraph.outputs[0].type, **t)


def _layouts(arr):
    """The same values in many memory layouts, BLAS-friendly or not."""
    arr = np.asarray(arr)
    out = [arr.copy(), relayout(arr, "strided"), relayout(arr, "reversed")]
    if arr.ndim == 2:
        rows, cols = arr.shape
        out.append(np.asfortranarray(arr))                             # strides (1, rows)
        big = np.zeros((rows + 3, cols + 5), arr.dtype)
        big[1:rows + 1, 2:cols + 2] = arr
        out.append(big[1:rows + 1, 2:cols + 2])                        # leading dimension > cols
        out.append(np.asfortranarray(big)[1:rows + 1, 2:cols + 2])     # leading dimension > rows
        out.append(np.ascontiguousarray(arr[::-1])[::-1])              # negative row stride
        out.append(np.ascontiguousarray(arr[:, ::-1])[:, ::-1])        # negative column stride
        wide = np.zeros((rows, 2 * cols), arr.dtype)
        wide[:, ::2] = arr
        out.append(wide[:, ::2])                                       # unit-less column stride
        if rows == 1:
            out.append(np.broadcast_to(arr, (1, cols)))
        if len(np.unique(arr, axis=0)) == 1:
            out.append(np.broadcast_to(arr[:1], arr.shape))            # zero row stride
        if len(np.unique(arr, axis=1)) == 1:
            out.append(np.broadcast_to(arr[:, :1], arr.shape))         # zero column stride
    else:
        if len(np.unique(arr)) == 1:
            out.append(np.broadcast_to(arr[:1], arr.shape))            # zero stride
    return out


@pytest.mark.parametrize("xs,ys", [((4, 5), (5, 3)), ((1, 5), (5, 3)), ((4, 5), (5, 1)), ((4, 1), (1, 3)),
                                   ((1, 5), (5, 1)), ((5,), (5, 3)), ((4, 5), (5,)), ((5,), (5,)),
                                   ((1,), (1, 3)), ((4, 1), (1,)), ((3, 5), (5, 3))], ids=str)
def test_dot_many_layouts(xs, ys, mode, path):
    rng = np.random.default_rng(6)
    a, b = sample("float64", xs, rng), sample("float64", ys, rng)
    ones_a, ones_b = np.full(xs, 1.5), np.full(ys, -0.5)
    x, y = T.tensor("float64", (None,) * len(xs)), T.tensor("float64", (None,) * len(ys))
    f = function([x, y], T.dot(x, y), mode=mode)
    vtype = f.maker.fgraph.outputs[0].type
    for left, right in ((a, b), (ones_a, b), (a, ones_b), (ones_a, ones_b)):
        for p in _layouts(left):
            for q in _layouts(right):
                assert_matches(f(p, q), np.dot(p, q), vtype)


def test_dot_inputs_are_not_modified_and_output_is_fresh(mode, path):
    a, b = sample("float32", (5, 6)), sample("float64", (6, 3))
    x, y = T.fmatrix(), T.dmatrix()
    f = function([x, y], T.dot(x, y), mode=mode)
    pa, pb = a.copy(), b.copy()
    out1 = f(pa, pb)
    out2 = f(pa, pb)
    np.testing.assert_array_equal(pa, a)
    np.testing.assert_array_equal(pb, b)
    assert not np.shares_memory(out1, out2)
    assert out1.flags.c_contiguous


# ------------------------------------------------------------------ sizes


@pytest.mark.parametrize("xs,ys", [((70, 130), (130, 90)),
                                   # more than MC rows, more than KC inner, edge tiles everywhere
                                   ((dot_c.MC + 5, dot_c.KC + 7), (dot_c.KC + 7, 3 * dot_c.NR + 3)),
                                   # more than NC columns
                                   ((9, 20), (20, dot_c.NC + 9)),
                                   ((130, 300), (300,)), ((300,), (300, 70)), ((1000,), (1000,))], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_dot_blocking_sizes(xs, ys, dtype, mode, path):
    if path == "blas" and not dtype.startswith("float"):
        pytest.skip("integers never use BLAS")
    rng = np.random.default_rng(8)
    a, b = sample(dtype, xs, rng), sample(dtype, ys, rng)
    k = xs[-1]
    check(T.dot, np.dot, [a, b], mode, layouts=("contiguous", "reversed"), **tol(dtype, k))
    if len(xs) == 2 and len(ys) == 2:
        check(lambda p, q: T.dot(p.T, q.T), lambda p, q: np.dot(p.T, q.T), [a.T.copy(), b.T.copy()], mode,
              layouts=("contiguous", "strided"), **tol(dtype, k))


@pytest.mark.parametrize("xs,ys", [((3, 0), (0, 4)), ((0,), (0,)), ((3, 0), (0,)), ((0,), (0, 2)),
                                   ((0, 3), (3, 2)), ((2, 3), (3, 0)), ((0, 3), (3, 0)), ((0, 0), (0, 0)),
                                   ((0, 3), (3,)), ((3,), (3, 0))], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_dot_empty(xs, ys, dtype, mode, path):
    if path == "blas" and not dtype.startswith("float"):
        pytest.skip("integers and bool never use BLAS")
    a, b = np.ones(xs, dtype=dtype), np.ones(ys, dtype=dtype)
    f = check(typed_dot(dtype), np.dot, [a, b], mode)
    got = f(a, b)
    assert got.shape == np.dot(a, b).shape
    assert not got.any()


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_dot_zero_d_operand(dtype, mode):
    s = np.asarray(2.5 if dtype == "float64" else 3, dtype=dtype)
    m, v = sample(dtype, (3, 4)), sample(dtype, (4,))
    for args in ([s, m], [m, s], [v, s], [s, s]):
        check(typed_dot(dtype), np.dot, args, mode)


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("xs,ys", [((3, 4), (5, 2)), ((4,), (5,)), ((3, 4), (3,)), ((4,), (3, 4)),
                                   ((3, 0), (1, 2)), ((2, 3), (0, 2))], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_dot_not_aligned_raises_and_function_keeps_working(xs, ys, dtype, mode, path):
    x = T.tensor(dtype, (None,) * len(xs))
    y = T.tensor(dtype, (None,) * len(ys))
    f = function([x, y], T.dot(x, y), mode=mode)
    good = (xs[:-1] + (ys[0],), ys)
    a, b = np.ones(good[0], dtype), np.ones(good[1], dtype)
    np.testing.assert_allclose(f(a, b), np.dot(a, b))
    for _ in range(3):
        with pytest.raises(ValueError) as info:
            f(np.ones(xs, dtype), np.ones(ys, dtype))
        message = str(info.value)
        assert "not aligned" in message
        if mode.linker_spec == "c":   # the message the C code wrote (c|py may add context of its own)
            assert str(tuple(xs)) in message and str(tuple(ys)) in message, message
        np.testing.assert_allclose(f(a, b), np.dot(a, b))


# ------------------------------------------------------------------ generated code


def _source(build, dtypes, ndims=(2, 2)):
    x, y = [T.tensor(d, (None,) * n) for d, n in zip(dtypes, ndims)]
    f = function([x, y], build(x, y), mode=Mode(linker="c", optimizer=None))
    return f.maker.linker.source()


def test_generated_code_chooses_blas_or_kernel(monkeypatch):
    monkeypatch.setattr(dot_c, "USE_BLAS", False)
    src = _source(T.dot, ("float64", "float64"))
    assert "scipy_cblas" not in src and "ffg_dot_gemm_float64(" in src
    assert "Python.h" not in src and "Py_" not in src
    if dot_c.blas_info() is None:
        return
    monkeypatch.setattr(dot_c, "USE_BLAS", True)
    src = _source(T.dot, ("float32", "float32"))
    assert "scipy_cblas_sgemm64_(" in src and "ffg_dot_gemm_float32(" not in src
    src = _source(T.dot, ("int32", "float64"))          # converted first, then BLAS
    assert "ffg_dot_copy_int32_float64(" in src and "scipy_cblas_dgemm64_(" in src
    src = _source(T.dot, ("int32", "int64"))            # integers: the kernel
    assert "scipy_cblas" not in src and "ffg_dot_gemm_int64(" in src


def test_temporaries_are_released_in_cleanup(monkeypatch):
    monkeypatch.setattr(dot_c, "USE_BLAS", False)
    src = _source(T.dot, ("int32", "float64"))
    body = src.split("node #0:")[1]
    code, cleanup = body.split("__label_node0:;")
    for tmp in ("node0_xtmp", "node0_ytmp", "node0_pack"):
        assert "void *%s = NULL;" % tmp in code
        assert "ffg_release(state->allocator, %s);" % tmp in cleanup


def test_complex_dot_has_no_c_code(mode):
    x, y = T.tensor("complex128", (None, None)), T.tensor("complex128", (None,))
    node = T.dot(x, y).owner
    with pytest.raises(MethodNotDefined):
        node.op.c_code(node, "n", ["a", "b"], ["c"], dict(fail="", err="err", allocator="al"))
    a = np.array([[1 + 2j, 3], [0, 1j]])
    b = np.array([1j, 2])
    if mode.linker_spec == "c|py":    # falls back to perform
        f = function([x, y], T.dot(x, y), mode=mode)
        np.testing.assert_allclose(f(a, b), np.dot(a, b))
    else:
        with pytest.raises(NotImplementedError):
            function([x, y], T.dot(x, y), mode=mode)
