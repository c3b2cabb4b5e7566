"""Loops split over threads (``ffigraph/tensor/threads_c.py``): fused and plain elementwise loops,
reductions and BLAS products (Dot), with ``config.threads`` 1, 2, 3 and 7 and a threshold low enough
that small arrays are cut into chunks.

Each thread count compiles ONE function holding every case (elementwise with NaN and inf, broadcast,
negative strides, float32, ints, empty and 0-d; reductions full and along each axis, cut along a kept
or a reduced axis, float32 accumulating in float64, ints, max/argmax with NaN, any/all). Every output
is compared with numpy; then with the one-thread function's: elementwise outputs, and reductions that
only pick or count (max, argmax, ints, any), must be the same bits; float sums, products and means must
be the same bits from call to call (the cut is fixed by the shape and the thread count, and chunks are
combined in chunk order whichever threads ran them).
"""
from __future__ import annotations

import ctypes
import os
import threading
import time

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import config, function
from ffigraph.config import MAX_THREADS, _default_threads
from ffigraph.tensor import blas, dot_c
from ffigraph.tensor.fused import FusedElemwise, FusedReduce
from ffigraph.tensor.elemwise import Elemwise
from ffigraph.tensor.math import ArgReduce, Reduce
from helpers import assert_matches

THREADS = (3, 1, 2, 7)   # a threaded count first: the sanitizer phase (--one-per-test) keeps the first case
MIN_SIZE = 64   # elements: loops over more are cut, so that small arrays exercise the chunks


def _values():
    rng = np.random.default_rng(23)
    v = rng.uniform(-3, 3, 3001)
    v[[5, 1700, 2999]] = [np.nan, np.inf, -np.inf]
    m = rng.uniform(-3, 3, (9, 700))
    m_special = m.copy()
    m_special[2, [3, 400]] = [np.nan, np.inf]           # one row with a NaN (max and argmax pick it)
    m_special[6, 650] = -np.inf
    ties = np.repeat(rng.integers(0, 5, (3, 1)), 1500, axis=1).astype("float64")   # every element ties
    ties[1, 1400] = 9.0
    return dict(
        v=v,
        w=rng.uniform(-3, 3, 3001),
        m=m,
        ms=m_special,
        mrev=np.ascontiguousarray(m[::-1, ::-1])[::-1, ::-1],   # the same values, negative strides
        col=rng.uniform(-1, 1, (9, 1)),
        row=rng.uniform(-1, 1, (1, 700)),
        thin=rng.uniform(-1, 1, (3, 1500)),                   # kept axis too short: a reduced axis is cut
        ties=ties,
        f=rng.uniform(-3, 3, (9, 700)).astype("float32"),
        i=rng.integers(-1000, 1000, (9, 700)).astype("int32"),
        big=np.full(4000, 2 ** 61, dtype="int64"),             # sums that wrap around, as numpy's
        e=np.zeros((0, 700)),
        s=np.array(0.75),
    )


def _cases(x):
    """[(label, output, numpy's answer, dtype, how it compares across thread counts)]: 'bits' (the
    same bits as one thread) or 'stable' (the same bits from call to call, close to one thread's)."""
    exp, tanh = T.exp, T.tanh
    V = _values()
    ew = [
        ("fused vector with NaN/inf", exp(x["v"]) * x["w"] + tanh(x["v"]) - 1.5 * x["w"],
         np.exp(V["v"]) * V["w"] + np.tanh(V["v"]) - 1.5 * V["w"], "float64"),
        ("fused broadcast, negative strides", exp(x["mrev"]) * x["row"] + x["col"],
         np.exp(V["mrev"]) * V["row"] + V["col"], "float64"),
        ("fused float32", x["f"] * np.float32(2.5) + T.sin(x["f"]), V["f"] * np.float32(2.5) + np.sin(V["f"]),
         "float32"),
        ("plain add, broadcast", x["ms"] + x["row"], V["ms"] + V["row"], "float64"),
        ("plain int_div", x["i"] // 7, V["i"] // 7, "int32"),
        ("plain on negative strides", x["mrev"] * x["col"], V["mrev"] * V["col"], "float64"),
        ("empty", exp(x["e"]) + 1, np.exp(V["e"]) + 1, "float64"),
        ("0-d", exp(x["s"]) * x["s"] + 1, np.exp(V["s"]) * V["s"] + 1, "float64"),
    ]
    exact = [
        ("fused max with NaN, rows", T.max(exp(x["ms"]) * 2, axis=1), np.max(np.exp(V["ms"]) * 2, axis=1), "float64"),
        ("fused min, columns", T.min(exp(x["m"]) - x["row"], axis=0), np.min(np.exp(V["m"]) - V["row"], axis=0),
         "float64"),
        ("max with NaN, full", T.max(x["ms"]), np.max(V["ms"]), "float64"),
        ("argmax with NaN, rows", T.argmax(x["ms"], axis=1), np.argmax(V["ms"], axis=1), "int64"),
        ("argmax of ties, reduced axis cut", T.argmax(x["ties"], axis=1), np.argmax(V["ties"], axis=1), "int64"),
        ("argmin of ties, full", T.argmin(x["ties"].flatten()), np.argmin(V["ties"]), "int64"),
        ("argmin, columns", T.argmin(x["m"], axis=0), np.argmin(V["m"], axis=0), "int64"),
        ("int sum, columns", x["i"].sum(axis=0), V["i"].sum(axis=0, dtype="int64"), "int64"),
        ("int sum, full", x["i"].sum(), V["i"].sum(dtype="int64"), "int64"),
        ("int sum that wraps", x["big"].sum(), V["big"].sum(), "int64"),
        ("any, rows", T.any(x["i"] > 990, axis=1), np.any(V["i"] > 990, axis=1), "bool"),
        ("all, columns", T.all(x["i"] > -999, axis=0), np.all(V["i"] > -999, axis=0), "bool"),
        ("empty sum, columns", x["e"].sum(axis=0), V["e"].sum(axis=0), "float64"),
        ("empty sum, full", x["e"].sum(), V["e"].sum(), "float64"),
    ]
    stable = [
        ("fused sum with NaN, full", T.sum(exp(x["v"]) * x["w"]), np.sum(np.exp(V["v"]) * V["w"]), "float64"),
        ("fused sum, full, finite", T.sum(exp(x["w"]) * x["w"]), np.sum(np.exp(V["w"]) * V["w"]), "float64"),
        ("fused sum, axis 0", T.sum(exp(x["m"]) * x["col"], axis=0), np.sum(np.exp(V["m"]) * V["col"], axis=0),
         "float64"),
        ("fused sum, axis 0, folded as computed", T.sum(exp(x["mrev"]) * x["m"], axis=0),
         np.sum(np.exp(V["mrev"]) * V["m"], axis=0), "float64"),
        ("fused prod, axis 0, a constant in the last step", T.prod(T.cos(x["thin"]) * 0.5 + 1, axis=0),
         np.prod(np.cos(V["thin"]) * 0.5 + 1, axis=0), "float64"),
        ("fused sum, axis 1", T.sum(exp(x["m"]) * x["row"], axis=1), np.sum(np.exp(V["m"]) * V["row"], axis=1),
         "float64"),
        ("fused sum, thin rows", T.sum(exp(x["thin"]) * 2, axis=1), np.sum(np.exp(V["thin"]) * 2, axis=1),
         "float64"),
        ("fused float32 mean, columns", T.mean(x["f"] * np.float32(3), axis=0),
         np.mean((V["f"] * np.float32(3)).astype("float64"), axis=0).astype("float32"), "float32"),
        ("sum, full", x["m"].sum(), V["m"].sum(), "float64"),
        ("sum, columns", x["m"].sum(axis=0), V["m"].sum(axis=0), "float64"),
        ("sum, thin rows", x["thin"].sum(axis=1), V["thin"].sum(axis=1), "float64"),
        ("mean, rows", x["m"].mean(axis=1), V["m"].mean(axis=1), "float64"),
        ("float32 sum, full", x["f"].sum(), V["f"].astype("float64").sum().astype("float32"), "float32"),
        ("prod, columns", (x["thin"] * 0.01 + 1).prod(axis=1), (V["thin"] * 0.01 + 1).prod(axis=1), "float64"),
    ]
    return ([(label, out, ref, dt, "bits") for label, out, ref, dt in ew + exact]
            + [(label, out, ref, dt, "stable") for label, out, ref, dt in stable])


def _compile(threads):
    V = _values()
    x = {k: T.tensor(str(a.dtype), (None,) * a.ndim, name=k) for k, a in V.items()}
    cases = _cases(x)
    with config.change_flags(threads=threads, threads_min_size=MIN_SIZE):
        f = function(list(x.values()), [out for _, out, _, _, _ in cases], on_unused_input="ignore")
    return f, cases, list(V.values())


@pytest.fixture(scope="module")
def one_thread():
    f, cases, values = _compile(1)
    return [np.array(r, copy=True) for r in f(*values)]


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("threads", THREADS)
def test_loops_split_over_threads_give_numpys_answer_and_one_threads(threads, one_thread):
    f, cases, values = _compile(threads)
    ops = {type(n.op) for n in f.maker.fgraph.apply_nodes}
    assert {FusedElemwise, FusedReduce, Elemwise, Reduce, ArgReduce} <= ops, ops   # every generator is here
    source = f.c_source()
    assert ("#define FFG_THREADS %d\n" % threads in source) == (threads > 1)       # one thread: no pool at all
    got = f(*values)
    again = f(*values)
    for (label, out, want, dtype, compare), g, g2, g1 in zip(cases, got, again, one_thread):
        try:
            assert_matches(g, np.asarray(want, dtype=dtype), out.type, rtol=1e-12 if dtype == "float64" else None,
                           dtype=dtype)
            if compare == "stable":
                assert_matches(g, g1, out.type, rtol=1e-13 if dtype == "float64" else 1e-6, dtype=dtype)
        except AssertionError as exc:
            raise AssertionError("%s, %d threads: %s" % (label, threads, exc)) from None
        assert _same_bits(g, g2), "%s: two calls differ with %d threads" % (label, threads)
        if compare == "bits":
            assert _same_bits(g, g1), "%s: %d threads differ from one" % (label, threads)


def test_the_cut_depends_on_the_shape_and_thread_count_only():
    """A reduction cut along a reduced axis: the same bits however the chunks are run -- by the pool, or
    all by the caller when the pool is busy with another call of the same library."""
    n = 200000
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=n), rng.normal(size=n)
    x, y = T.dvector("x"), T.dvector("y")
    with config.change_flags(threads=3, threads_min_size=1000):
        fs = [function([x, y], [T.sum(T.exp(x) * y), T.exp(x) * y - 1]) for _ in range(2)]   # one library
    want = [np.array(r, copy=True) for r in fs[0](a, b)]
    results, errors = [], []

    def work(f):
        try:
            for _ in range(40):
                results.append(f(a, b))
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(f,)) for f in fs]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not errors, errors
    assert len(results) == 80
    for total, values in results:
        assert _same_bits(total, want[0]) and _same_bits(values, want[1])
    np.testing.assert_allclose(want[0], np.sum(np.exp(a) * b), rtol=1e-12)


def test_an_element_error_in_a_chunk_is_the_one_thread_error():
    """A failing element (an integer to a negative power) fails the call with the message one thread
    gives; the chunks after it cannot make it another."""
    i, j = T.lvector("i"), T.lvector("j")
    base = np.arange(5000, dtype="int64") % 7 + 1
    expo = np.full(5000, 2, dtype="int64")
    expo[[3100, 4200]] = -1
    messages = []
    for threads in (1, 4):
        with config.change_flags(threads=threads, threads_min_size=100):
            f = function([i, j], i ** j)
        assert np.array_equal(f(base, np.full(5000, 2, dtype="int64")), base ** 2)
        with pytest.raises(Exception) as info:
            f(base, expo)
        messages.append(str(info.value).splitlines()[0])
    assert messages[0] == messages[1] and "negative integer powers" in messages[0], messages


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here")
def test_a_forked_child_gets_a_pool_of_its_own():
    """After the parent's pool has run, a child made by fork() (with none of the parent's workers)
    computes with a new pool instead of waiting forever for workers it does not have."""
    x, y = T.dvector("x"), T.dvector("y")
    with config.change_flags(threads=2, threads_min_size=1000):
        f = function([x, y], T.sum(T.exp(x) * y))
    a = np.linspace(-1, 1, 100000)
    want = f(a, a)   # the parent's pool is started
    pid = os.fork()
    if pid == 0:   # the child: exit 0 when the answer is right; never return into pytest
        code = 1
        try:
            code = 0 if _same_bits(f(a, a), want) and _same_bits(f(a, a), want) else 2
        finally:
            os._exit(code)
    deadline = time.time() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.time() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung in the threaded loop")
        time.sleep(0.02)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert _same_bits(f(a, a), want)   # and the parent's pool still works


def test_threads_flags_and_the_cache_key():
    with pytest.raises(ValueError, match="threads"):
        config.threads = 0
    with pytest.raises(ValueError, match="threads_min_size"):
        config.threads_min_size = -1
    assert config.threads >= 1
    if hasattr(os, "sched_getaffinity"):   # (the suite itself runs with threads=1: conftest.py)
        assert _default_threads() == min(len(os.sched_getaffinity(0)), MAX_THREADS)
    x = T.dvector("x")
    sources = {}
    for threads, min_size in ((2, 100), (3, 100), (3, 500)):
        with config.change_flags(threads=threads, threads_min_size=min_size):
            sources[threads, min_size] = function([x], T.exp(x) * 2).c_source()
    # both values are written into the C, so the compile cache key (a hash of the source) covers them
    assert len(set(sources.values())) == 3
    assert "#define FFG_THREADS 3\n#define FFG_THREADS_MIN_SIZE 500LL" in sources[3, 500]
    # a loop whose static shape is small is not cut: no chunk function
    s = T.tensor("float64", (5, 3), name="s")
    with config.change_flags(threads=4, threads_min_size=100):
        small = function([s], T.exp(s) + s.sum())
    assert "_chunk(void *ctx" not in small.c_source()


# ---------------------------------------------------------------- Dot through BLAS, split over threads


def _dot_values():
    rng = np.random.default_rng(31)
    a = rng.uniform(-1, 1, (40, 300))
    return dict(
        a=a,                                        # 40 x 300: gemv cut along rows, a^T v along the sum
        u=rng.uniform(-1, 1, 40),
        v=rng.uniform(-1, 1, 300),
        wide=rng.uniform(-1, 1, (3, 3000)),         # y of 3 elements: a x cut along the sum, a^T x along y
        long=rng.uniform(-1, 1, 3000),
        short=rng.uniform(-1, 1, 3),
        b=rng.uniform(-1, 1, (300, 50)),            # gemm cut along rows of c
        tall=rng.uniform(-1, 1, (3000, 3)),         # tall.T @ tall: 3 x 3, cut along the sum
        f=rng.uniform(-1, 1, (40, 300)).astype("float32"),
        fv=rng.uniform(-1, 1, 300).astype("float32"),
        fb=rng.uniform(-1, 1, (300, 50)).astype("float32"),
        e=np.zeros((0, 300)),
        e0=np.zeros(0),
    )


def _dot_cases(x):
    """[(label, output, numpy's answer, dtype)]: every way a Dot reaches BLAS, on operands of every
    layout (transposed views, negative and non-unit strides, which are copied or passed as they are)."""
    V = _dot_values()
    dot = T.dot
    cases = [
        ("a v", dot(x["a"], x["v"]), V["a"] @ V["v"]),
        ("a^T u", dot(x["a"].T, x["u"]), V["a"].T @ V["u"]),
        ("u a", dot(x["u"], x["a"]), V["u"] @ V["a"]),
        ("a v reversed", dot(x["a"], x["v"][::-1]), V["a"] @ V["v"][::-1]),
        ("a^T u reversed", dot(x["a"].T, x["u"][::-1]), V["a"].T @ V["u"][::-1]),
        ("a[::-1] v[::2]", dot(x["a"][::-1, ::2], x["v"][::2]), V["a"][::-1, ::2] @ V["v"][::2]),
        ("wide long", dot(x["wide"], x["long"]), V["wide"] @ V["long"]),
        ("wide long reversed", dot(x["wide"], x["long"][::-1]), V["wide"] @ V["long"][::-1]),
        ("wide^T short", dot(x["wide"].T, x["short"]), V["wide"].T @ V["short"]),
        ("long tall", dot(x["long"], x["tall"]), V["long"] @ V["tall"]),
        ("long[::-1] tall", dot(x["long"][::-1], x["tall"]), V["long"][::-1] @ V["tall"]),
        ("a b", dot(x["a"], x["b"]), V["a"] @ V["b"]),
        ("a[:3] b (few rows)", dot(x["a"][:3], x["b"]), V["a"][:3] @ V["b"]),
        ("a[:3] a^T", dot(x["a"][:3], x["a"].T), V["a"][:3] @ V["a"].T),
        ("wide wide^T", dot(x["wide"], x["wide"].T), V["wide"] @ V["wide"].T),
        ("b^T a^T", dot(x["b"].T, x["a"].T), V["b"].T @ V["a"].T),
        ("a[::-1] b[:, ::-1]", dot(x["a"][::-1], x["b"][:, ::-1]), V["a"][::-1] @ V["b"][:, ::-1]),
        ("tall^T tall", dot(x["tall"].T, x["tall"]), V["tall"].T @ V["tall"]),
        ("float32 f fv", dot(x["f"], x["fv"]), V["f"] @ V["fv"]),
        ("float32 f^T", dot(x["f"].T, x["f"][:, 0]), V["f"].T @ V["f"][:, 0]),
        ("float32 f fb", dot(x["f"], x["fb"]), V["f"] @ V["fb"]),
        ("empty rows", dot(x["e"], x["v"]), V["e"] @ V["v"]),
        ("empty sum", dot(x["e"].T, x["e0"]), V["e"].T @ V["e0"]),
    ]
    return [(label, out, want, str(np.asarray(want).dtype)) for label, out, want in cases]


@pytest.fixture
def blas_threads():
    """Sets the thread count of the OpenBLAS the next compiled Dot calls (``set(n)``); restored after.
    There is always one (scipy-openblas64 is a dependency, and numpy's own is shared where it can be):
    finding none is a failure that says why, not a skip that hides the BLAS path of the split."""
    lib = blas.library()
    assert dot_c.blas_enabled() and lib is not None, "Dot found no BLAS: %s" % blas.why()
    ob = blas.probe(lib.path, handle=ctypes.CDLL(lib.path))   # (numpy's: already loaded, nothing new)
    assert ob is not None, "%s is not an OpenBLAS (no thread count to set)" % lib.path
    before = blas.get_threads(ob)
    yield lambda n: blas.set_threads(ob, n)
    blas.set_threads(ob, before)


@pytest.mark.parametrize("threads", THREADS)
def test_dot_split_over_threads_gives_numpys_answer_and_the_same_bits_every_call(threads, blas_threads):
    V = _dot_values()
    x = {k: T.tensor(str(a.dtype), (None,) * a.ndim, name=k) for k, a in V.items()}
    cases = _dot_cases(x)
    with config.change_flags(threads=threads, threads_min_size=MIN_SIZE):
        f = function(list(x.values()), [out for _, out, _, _ in cases], on_unused_input="ignore")
    source = f.c_source()
    assert ("ffg_dot_par_gemm_float64(" in source) == (threads > 1)   # one thread: the plain BLAS calls
    values = list(V.values())
    blas_threads(1)   # the split is for a BLAS that runs one thread (OPENBLAS_NUM_THREADS=1)
    got = [np.array(r, copy=True) for r in f(*values)]
    again = f(*values)
    blas_threads(2)   # a threaded BLAS threads each whole call itself
    threaded_blas = f(*values)
    for (label, out, want, dtype), g, g2, g3 in zip(cases, got, again, threaded_blas):
        rtol = 1e-12 if dtype == "float64" else 1e-5
        try:
            assert_matches(g, want, out.type, rtol=rtol, atol=rtol, dtype=dtype)
            assert_matches(g3, want, out.type, rtol=rtol, atol=rtol, dtype=dtype)
        except AssertionError as exc:
            raise AssertionError("%s, %d threads: %s" % (label, threads, exc)) from None
        assert _same_bits(g, g2), "%s: two calls differ with %d threads" % (label, threads)
