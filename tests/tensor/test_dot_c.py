"""The C code of ``Dot`` (ffigraph/tensor/dot_c.py) against numpy's ``np.dot``.

Every test runs under the whole-graph C linker, each compiling ONE function for many cases
(``helpers.check_cases``: each distinct graph its own node; odd layouts and errors go to one graph
of that function at a time, see ``caller``). The float tests run twice: through BLAS
(numpy's own OpenBLAS where it is shared, else scipy-openblas64: tests/tensor/test_blas.py) and
through the blocked C kernel (``dot_c.USE_BLAS`` switched
off, so a fresh library is built). The op-wise linker 'c|py' builds the very same node libraries
(tests/linkers/test_c_backend.py shows it); it runs here where it does something of its own: its
own wording of errors, and complex values in Python.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor import blas, dot_c
from helpers import Case, assert_matches, caller, check_cases, relayout, sample

SHAPES = {"vv": ((7,), (7,)), "mv": ((3, 7), (7,)), "vm": ((7,), (7, 4)), "mm": ((3, 7), (7, 4))}
DTYPES = ("float64", "float32", "int64", "int32", "bool")


@pytest.fixture(params=["c"])
def mode(request):
    return Mode(linker=request.param, optimizer=None)


@pytest.fixture(params=["blas", "blocked"])
def path(request, monkeypatch):
    """Which float implementation the next compiled Dot uses. scipy-openblas64 is a dependency:
    the BLAS path is never skipped, and a BLAS that fails to load fails the run."""
    if request.param == "blas":
        assert dot_c.blas_info() is not None, "scipy-openblas64, a dependency of ffigraph, is not installed"
    monkeypatch.setattr(dot_c, "USE_BLAS", request.param == "blas")
    return request.param


def on_path(dtype, path):
    """Whether a result of ``dtype`` is checked on ``path``: integers and bool never use BLAS, so the
    blas path leaves them to the blocked one."""
    return path != "blas" or np.dtype(dtype).kind == "f"


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


def test_dot_dtypes_and_shapes(mode, path):
    """Every kind of SHAPES (vector/matrix operands) on every dtype of DTYPES, in one function."""
    cases = []
    for dtype in DTYPES:
        if not on_path(dtype, path):
            continue
        for kind in sorted(SHAPES):
            xs, ys = SHAPES[kind]
            a, b = sample(dtype, xs), sample(dtype, ys, rng=np.random.default_rng(1))
            cases.append(Case("%s,%s" % (kind, dtype), typed_dot(dtype), np.dot, [a, b], **tol(dtype), dtype=dtype))
    check_cases(cases, mode)


MIXED_DTYPES = [("float32", "float64"), ("int32", "float64"), ("float64", "int32"), ("bool", "float32"),
                ("int32", "int64"), ("bool", "int32"), ("int8", "uint8"), ("int64", "uint64"), ("float32", "int16")]


def test_dot_mixed_dtypes(mode, path):
    """Every pair of MIXED_DTYPES on every kind of SHAPES, in one function."""
    cases = []
    for dx, dy in MIXED_DTYPES:
        want = np.result_type(dx, dy).name
        if not on_path(want, path):
            continue
        for kind in sorted(SHAPES):
            xs, ys = SHAPES[kind]
            a = sample(dx, xs, low=0 if dx.startswith("u") else -3)
            b = sample(dy, ys, rng=np.random.default_rng(2), low=0 if dy.startswith("u") else -3)
            cases.append(Case("%s,%s,%s" % (dx, dy, kind), typed_dot(want), np.dot, [a, b], **tol(want), dtype=want))
    check_cases(cases, mode)


def test_dot_special_values(mode, path):
    a = np.array([[1.0, np.inf], [0.0, 2.0], [np.nan, 1.0]])
    b = np.array([[0.0, 1.0], [3.0, -np.inf]])
    check_cases([Case("mm", T.dot, np.dot, [a, b], dtype="float64"), Case("vm", T.dot, np.dot, [a[1], b], dtype="float64"),
                 Case("mv", T.dot, np.dot, [a, b[0]], dtype="float64")], mode)


def test_dot_integer_overflow_wraps_like_numpy(mode):
    cases = []
    for dtype in ("int32", "int8", "int64", "uint32"):
        info = np.iinfo(dtype)
        rng = np.random.default_rng(3)
        a = rng.integers(info.max // 2, info.max, size=(5, 9), dtype=dtype)
        b = rng.integers(info.max // 2, info.max, size=(9, 6), dtype=dtype)
        cases += [Case(dtype + ",mm", T.dot, np.dot, [a, b], dtype=dtype),
                  Case(dtype + ",vv", T.dot, np.dot, [a[0], b[:, 0]], dtype=dtype)]
    check_cases(cases, mode)


def test_dot_bool_is_or_of_ands(mode):
    a = np.array([[True, False, False], [False, False, False], [True, True, True]])
    b = np.array([[False, True], [True, False], [False, False]])
    table = np.array([[False, True], [False, False], [True, True]])

    def ref(p, q):
        want = np.dot(p, q)
        np.testing.assert_array_equal(want, table)
        return want

    # (bool results are compared exactly: the result is numpy's, which is this table)
    check_cases([Case("bool", typed_dot("bool"), ref, [a, b], dtype="bool")], mode)


# ------------------------------------------------------------------ layouts


def test_dot_transposed_inputs(mode, path):
    """float64 and float32 in one function; transposed (Fortran-ordered) values go to its plain dots."""
    cases, fortran = [], []
    for dtype in ("float64", "float32"):
        a, b = sample(dtype, (7, 3)), sample(dtype, (4, 7), rng=np.random.default_rng(4))
        v = sample(dtype, (7,), rng=np.random.default_rng(5))
        t = dict(tol(dtype), dtype=dtype)
        cases += [Case(dtype + ",x.T,y.T", lambda x, y: T.dot(x.T, y.T), lambda p, q: np.dot(p.T, q.T), [a, b], **t),
                  Case(dtype + ",x.T,v", lambda x, y: T.dot(x.T, y), lambda p, q: np.dot(p.T, q), [a, v], **t),
                  Case(dtype + ",v,y.T", lambda x, y: T.dot(x, y.T), lambda p, q: np.dot(p, q.T), [v, b], **t),
                  Case(dtype + ",x.T,x", lambda x, y: T.dot(x.T, y), lambda p, q: np.dot(p.T, q), [a, a], **t)]
        # transposed (Fortran-ordered) values given to a plain dot
        plain = Case(dtype + ",plain", T.dot, np.dot, [a.T.copy(), b.T.copy()], **t)
        cases.append(plain)
        fortran.append((plain, t, ((a.T, b.T), (np.asfortranarray(a.T), b.T.copy()),
                                   (a.T.copy(), np.asfortranarray(b.T)))))
    call = caller(check_cases(cases, mode), cases)
    for plain, t, pairs in fortran:
        for p, q in pairs:
            assert_matches(call(plain, p, q), np.dot(p, q), call.type(plain), **t)


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


MANY_LAYOUT_SHAPES = [((4, 5), (5, 3)), ((1, 5), (5, 3)), ((4, 5), (5, 1)), ((4, 1), (1, 3)), ((1, 5), (5, 1)),
                      ((5,), (5, 3)), ((4, 5), (5,)), ((5,), (5,)), ((1,), (1, 3)), ((4, 1), (1,)),
                      ((3, 5), (5, 3))]


def test_dot_many_layouts(mode, path):
    """Every shape pair of MANY_LAYOUT_SHAPES (the pairs of one kind share its node) in one function,
    each operand in every layout of ``_layouts``."""
    cases, operands = [], []
    for xs, ys in MANY_LAYOUT_SHAPES:
        rng = np.random.default_rng(6)
        a, b = sample("float64", xs, rng), sample("float64", ys, rng)
        case = Case("%s,%s" % (xs, ys), T.dot, np.dot, [a, b], dtype="float64")
        cases.append(case)
        ones_a, ones_b = np.full(xs, 1.5), np.full(ys, -0.5)
        operands.append((case, ((a, b), (ones_a, b), (a, ones_b), (ones_a, ones_b))))
    call = caller(check_cases(cases, mode), cases)
    for case, pairs in operands:
        vtype = call.type(case)
        for left, right in pairs:
            for p in _layouts(left):
                for q in _layouts(right):
                    assert_matches(call(case, p, q), np.dot(p, q), vtype, dtype="float64")


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

BLOCKING_SHAPES = [((70, 130), (130, 90)),
                   # more than MC rows, more than KC inner, edge tiles everywhere
                   ((dot_c.MC + 5, dot_c.KC + 7), (dot_c.KC + 7, 3 * dot_c.NR + 3)),
                   # more than NC columns
                   ((9, 20), (20, dot_c.NC + 9)),
                   ((130, 300), (300,)), ((300,), (300, 70)), ((1000,), (1000,))]


@pytest.mark.parametrize("name", ["dot", "transposed"])
def test_dot_blocking_sizes(name, mode, path):
    """Every shape pair of BLOCKING_SHAPES on four dtypes, in one function: T.dot (contiguous and
    reversed), or T.dot(p.T, q.T) of the 2-d pairs (contiguous and strided)."""
    cases = []
    for dtype in ("float64", "float32", "int64", "int32"):
        if not on_path(dtype, path):
            continue
        transposed = lambda p, q: T.dot(p.T, q.T)   # noqa: E731 (one build: one node per dtype)
        for xs, ys in BLOCKING_SHAPES:
            rng = np.random.default_rng(8)
            a, b = sample(dtype, xs, rng), sample(dtype, ys, rng)
            t = dict(tol(dtype, xs[-1]), dtype=dtype)
            label = "%s,%s,%s" % (dtype, xs, ys)
            if name == "dot":
                cases.append(Case(label, T.dot, np.dot, [a, b], **t))
            elif len(xs) == 2 and len(ys) == 2:
                cases.append(Case(label, transposed, lambda p, q: np.dot(p.T, q.T), [a.T.copy(), b.T.copy()], **t))
    check_cases(cases, mode, layouts=("contiguous", "reversed") if name == "dot" else ("contiguous", "strided"))


EMPTY_SHAPES = [((3, 0), (0, 4)), ((0,), (0,)), ((3, 0), (0,)), ((0,), (0, 2)), ((0, 3), (3, 2)), ((2, 3), (3, 0)),
                ((0, 3), (3, 0)), ((0, 0), (0, 0)), ((0, 3), (3,)), ((3,), (3, 0))]


def _dot_of_empty(p, q):
    want = np.dot(p, q)
    assert not want.any()
    return want


def test_dot_empty(mode, path):
    """Every shape pair of EMPTY_SHAPES on four dtypes, in one function. Compared exactly (rtol=atol=0)
    with numpy's result, which is all zeros: the result has numpy's shape and nothing but zeros."""
    cases = []
    for dtype in ("float64", "float32", "int32", "bool"):
        if not on_path(dtype, path):
            continue
        build = typed_dot(dtype)   # one build: the pairs of one kind share its node
        cases += [Case("%s,%s,%s" % (dtype, xs, ys), build, _dot_of_empty,
                       [np.ones(xs, dtype=dtype), np.ones(ys, dtype=dtype)], rtol=0, atol=0, dtype=dtype)
                  for xs, ys in EMPTY_SHAPES]
    check_cases(cases, mode)


def test_dot_zero_d_operand(mode):
    cases = []
    for dtype in ("float64", "int32"):
        s = np.asarray(2.5 if dtype == "float64" else 3, dtype=dtype)
        m, v = sample(dtype, (3, 4)), sample(dtype, (4,))
        build = typed_dot(dtype)
        cases += [Case("%s,%d" % (dtype, k), build, np.dot, args, dtype=dtype)
                  for k, args in enumerate(([s, m], [m, s], [v, s], [s, s]))]
    check_cases(cases, mode)


# ------------------------------------------------------------------ errors

NOT_ALIGNED = [((3, 4), (5, 2)), ((4,), (5,)), ((3, 4), (3,)), ((4,), (3, 4)), ((3, 0), (1, 2)), ((2, 3), (0, 2))]


@pytest.mark.parametrize("linker", ["c", "c|py"])
def test_dot_not_aligned_raises_and_function_keeps_working(linker, path):
    """Every pair of NOT_ALIGNED on float64 and int64 in one function (the pairs of one kind share its
    node), one bad pair at a time. Under 'c|py' too: it may word the error in its own way."""
    mode = Mode(linker=linker, optimizer=None)
    assert str(mode) == "Mode(linker=%s, optimizer=None)" % linker   # (how a failure report names it)
    cases, bad = [], []
    for dtype in ("float64", "int64"):
        for xs, ys in NOT_ALIGNED:
            good = (xs[:-1] + (ys[0],), ys)
            case = Case("%s,%s,%s" % (dtype, xs, ys), T.dot, np.dot, [np.ones(good[0], dtype), np.ones(good[1], dtype)],
                        dtype=dtype)
            cases.append(case)
            bad.append((case, xs, ys))
    call = caller(check_cases(cases, mode), cases)
    for case, xs, ys in bad:
        dtype = case.values[0].dtype
        a, b = case.values
        assert_matches(call(case, a, b), np.dot(a, b), call.type(case), dtype=dtype)
        for _ in range(3):
            with pytest.raises(ValueError) as info:
                call(case, np.ones(xs, dtype), np.ones(ys, dtype))
            message = str(info.value)
            assert "not aligned" in message
            if linker == "c":   # the message the C code wrote (c|py may add context of its own)
                assert str(tuple(xs)) in message and str(tuple(ys)) in message, message
            assert_matches(call(case, a, b), np.dot(a, b), call.type(case), dtype=dtype)


# ------------------------------------------------------------------ generated code


def _source(build, dtypes, ndims=(2, 2)):
    x, y = [T.tensor(d, (None,) * n) for d, n in zip(dtypes, ndims)]
    f = function([x, y], build(x, y), mode=Mode(linker="c", optimizer=None))
    return f.maker.linker.source()


def test_generated_code_chooses_blas_or_kernel(monkeypatch):
    monkeypatch.setattr(dot_c, "USE_BLAS", False)
    src = _source(T.dot, ("float64", "float64"))
    assert "cblas_" not in src and "ffg_dot_gemm_float64(" in src
    assert "Python.h" not in src and "Py_" not in src
    assert dot_c.blas_info() is not None, "scipy-openblas64, a dependency of ffigraph, is not installed"
    monkeypatch.setattr(dot_c, "USE_BLAS", True)
    lib = blas.library()    # numpy's own OpenBLAS or the package: the names differ (numpy 1.26: cblas_sgemm64_)
    src = _source(T.dot, ("float32", "float32"))
    assert lib.symbol("sgemm") + "(" in src and "ffg_dot_gemm_float32(" not in src
    src = _source(T.dot, ("int32", "float64"))          # converted first, then BLAS
    assert "ffg_dot_copy_int32_float64(" in src and lib.symbol("dgemm") + "(" in src
    src = _source(T.dot, ("int32", "int64"))            # integers: the kernel
    assert "cblas_" not in src and "ffg_dot_gemm_int64(" in src


def test_blas_info_fails_loudly_when_the_installed_blas_is_broken(monkeypatch, tmp_path):
    """An installed but broken scipy-openblas64 raises (it used to fall back to the kernel
    silently); only a missing one falls back, with a warning. The package is found without being
    imported (its import loads its library into the global scope: ffigraph.tensor.blas)."""
    assert dot_c.blas_info() is not None
    monkeypatch.setattr(blas, "_package_cache", [])
    monkeypatch.setattr(blas, "_package_dir", lambda: str(tmp_path))     # no lib/ folder in it
    with pytest.raises(RuntimeError, match="scipy-openblas64 is installed but broken: .*No such file"):
        dot_c.blas_info()
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libscipy_openblas64_.a").write_bytes(b"")     # no shared library in it
    with pytest.raises(RuntimeError, match="scipy-openblas64 is installed but broken: no shared library"):
        dot_c.blas_info()
    monkeypatch.setattr(blas, "_package_dir", lambda: None)              # not installed
    with pytest.warns(RuntimeWarning, match="not installed"):
        assert dot_c.blas_info() is None
    monkeypatch.setattr(blas, "SHARE_NUMPY_BLAS", False)
    assert not dot_c.blas_enabled()       # no package and numpy's OpenBLAS not shared: the kernel
    monkeypatch.setattr(blas, "SHARE_NUMPY_BLAS", True)
    assert dot_c.blas_enabled() == (blas.numpy_library()[0] is not None)   # numpy's needs no package


def test_temporaries_are_released_in_cleanup(monkeypatch):
    monkeypatch.setattr(dot_c, "USE_BLAS", False)
    src = _source(T.dot, ("int32", "float64"))
    body = src.split("node #0:")[1]
    code, cleanup = body.split("__label_node0:;")
    for tmp in ("node0_xtmp", "node0_ytmp", "node0_pack"):
        assert "void *%s = NULL;" % tmp in code
        assert "ffg_release(state->allocator, %s);" % tmp in cleanup


@pytest.mark.parametrize("linker", ["c", "c|py"])
def test_complex_dot_has_no_c_code(linker):
    """No C code: 'c' refuses the graph, 'c|py' falls back to perform."""
    mode = Mode(linker=linker, optimizer=None)
    x, y = T.tensor("complex128", (None, None)), T.tensor("complex128", (None,))
    node = T.dot(x, y).owner
    with pytest.raises(MethodNotDefined):
        node.op.c_code(node, "n", ["a", "b"], ["c"], dict(fail="", err="err", allocator="al"))
    a = np.array([[1 + 2j, 3], [0, 1j]])
    b = np.array([1j, 2])
    if linker == "c|py":    # falls back to perform
        f = function([x, y], T.dot(x, y), mode=mode)
        np.testing.assert_allclose(f(a, b), np.dot(a, b))
    else:
        with pytest.raises(NotImplementedError):
            function([x, y], T.dot(x, y), mode=mode)
