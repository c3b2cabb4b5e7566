"""cholesky and solve_triangular (ffigraph/tensor/linalg): against numpy on random, identity,
ill-conditioned and empty matrices, float32 and float64, batched with broadcasting batch axes,
transposed and reversed layouts; gradients through verify_grad; not positive definite and
singular inputs raising LinAlgError (or NaN with on_error='nan') under the py and C linkers.

One compiled function per linker holds every case as an output."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode
from ffigraph.gradient import verify_grad
from ffigraph.tensor.linalg import LinAlgError, cholesky, solve_triangular

LINKERS = ["py", "c"]


def spd(rng, *shape):
    """Symmetric positive-definite matrices of ``shape`` (last two equal)."""
    m = rng.standard_normal(shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def hilbert(n):
    i = np.arange(n)
    return 1.0 / (i[:, None] + i[None, :] + 1)


def _numpy_cases(a3, a2f, b, v, hb):
    """The numpy answers, in the order of _graph's outputs."""
    L3 = np.linalg.cholesky(a3)
    Lf = np.linalg.cholesky(a2f.astype(np.float64))
    Lh = np.linalg.cholesky(hb)
    L0 = L3[0]
    return [L3, np.swapaxes(L3, -1, -2), Lf, Lh, np.linalg.cholesky(a3[0].T[::-1, ::-1].T[::-1, ::-1]),
            np.linalg.solve(L3, np.broadcast_to(b, (3,) + b.shape)),           # batch (3,) with b (n, 2)
            np.linalg.solve(L0.T, v),                                          # trans=1
            np.linalg.solve(np.triu(a3[1]), b),                                # upper, read from a full matrix
            np.linalg.solve(np.tril(a3[2], -1) + np.eye(a3.shape[-1]), v),     # unit diagonal
            np.zeros((0, 0)), np.zeros((0, 2))]


def _graph():
    a3, a2f = T.dtensor3("a3"), T.fmatrix("a2f")
    b, v, hb = T.dmatrix("b"), T.dvector("v"), T.dmatrix("hb")
    empty = T.dmatrix("empty")
    L3 = cholesky(a3)
    outs = [L3, cholesky(a3, lower=False), cholesky(a2f), cholesky(hb), cholesky(a3[0]),
            solve_triangular(L3, b, lower=True),
            solve_triangular(L3[0], v, lower=True, trans=1),
            solve_triangular(a3[1], b, lower=False),
            solve_triangular(a3[2], v, lower=True, unit_diagonal=True),
            cholesky(empty), solve_triangular(empty, T.zeros((0, 2)), lower=True)]
    return [a3, a2f, b, v, hb, empty], outs


@pytest.mark.parametrize("linker", LINKERS)
def test_against_numpy(linker):
    rng = np.random.default_rng(1)
    n = 5
    f = ffigraph.function(*_graph(), mode=Mode(linker=linker))
    a3 = spd(rng, 3, n, n)
    a2f = spd(rng, n, n).astype(np.float32)
    b, v = rng.standard_normal((n, 2)), rng.standard_normal(n)
    hb = hilbert(6) + 1e-10 * np.eye(6)          # ill-conditioned (cond ~ 1e7 after the shift)
    for layout in ("plain", "reversed"):
        args = [a3, a2f, b, v, hb, np.zeros((0, 0))]
        if layout == "reversed":   # negative strides and transposed views: the same values
            args = [np.ascontiguousarray(a3[:, ::-1, ::-1])[:, ::-1, ::-1], np.asfortranarray(a2f),
                    np.ascontiguousarray(b[::-1])[::-1], np.ascontiguousarray(v[::-1])[::-1],
                    np.ascontiguousarray(hb.T).T, np.zeros((0, 0))]
        got = f(*args)
        want = _numpy_cases(a3, a2f, b, v, hb)
        tols = [1e-12, 1e-12, 1e-5, 1e-6, 1e-12, 1e-11, 1e-11, 1e-11, 1e-11, 0, 0]
        for k, (g, w, tol) in enumerate(zip(got, want, tols)):
            assert g.shape == w.shape, (k, g.shape, w.shape)
            assert g.dtype == (np.float32 if k == 2 else np.float64), (k, g.dtype)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg="output %d (%s)" % (k, layout))
    # the identity factors to itself; a batch with a broadcast axis
    x4 = T.dtensor4("x4")
    eye4 = np.broadcast_to(np.eye(3), (2, 1, 3, 3)).copy()
    rhs = rng.standard_normal((4, 3, 2))
    h = ffigraph.function([x4], [cholesky(x4), solve_triangular(x4, T.as_tensor_variable(rhs), lower=True)],
                          mode=Mode(linker=linker))
    chol, sol = h(eye4)
    np.testing.assert_array_equal(chol, eye4)
    assert sol.shape == (2, 4, 3, 2)
    np.testing.assert_allclose(sol, np.broadcast_to(rhs, (2, 4, 3, 2)), rtol=0, atol=0)


def test_integer_input_upcasts_and_dtypes():
    assert cholesky(T.lmatrix()).dtype == "float64"
    assert cholesky(T.fmatrix()).dtype == "float32"
    assert solve_triangular(T.fmatrix(), T.dvector()).dtype == "float64"
    with pytest.raises(TypeError, match="complex"):
        cholesky(T.zmatrix())
    with pytest.raises(ValueError, match="square"):
        cholesky(T.tensor("float64", (3, 4)))
    with pytest.raises(ValueError, match="at least 2"):
        cholesky(T.dvector())
    with pytest.raises(ValueError, match="b has 4 rows"):
        solve_triangular(T.tensor("float64", (3, 3)), T.tensor("float64", (4,)))
    with pytest.raises(ValueError, match="on_error"):
        cholesky(T.dmatrix(), on_error="ignore")


@pytest.mark.parametrize("linker", LINKERS)
def test_failures_raise_or_give_nan(linker):
    a, b = T.dtensor3("a"), T.dmatrix("b")
    f = ffigraph.function([a, b], [cholesky(a), cholesky(a, on_error="nan"), solve_triangular(a[0], b, lower=True)],
                          mode=Mode(linker=linker))
    rng = np.random.default_rng(2)
    good = spd(rng, 2, 3, 3)
    rhs = rng.standard_normal((3, 1))
    bad = good.copy()
    bad[1] = np.diag([1.0, -1.0, 1.0])                       # not positive definite, in batch entry 1
    with pytest.raises(LinAlgError, match="not positive definite") as info:
        f(bad, rhs)
    assert "Cholesky" in str(info.value)                     # the node is named
    g = ffigraph.function([a, b], [cholesky(a, on_error="nan"), solve_triangular(a[0], b, lower=True)],
                          mode=Mode(linker=linker))
    out = g(bad, rhs)[0]
    np.testing.assert_allclose(out[0], np.linalg.cholesky(good[0]), rtol=1e-12)
    assert np.isnan(out[1]).all()
    singular = good.copy()
    singular[0] = np.diag([1.0, 0.0, 2.0])
    with pytest.raises(LinAlgError, match="singular matrix: diagonal element 2 is zero"):
        g(singular, rhs)
    with pytest.raises(ValueError, match="infs or NaNs"):
        f(np.full((2, 3, 3), np.nan), rhs)
    with pytest.raises(ValueError, match="must be square"):
        f(np.zeros((2, 3, 4)), rhs)
    with pytest.raises(ValueError, match="b has 2 rows"):
        f(good, np.zeros((2, 1)))
    got = f(good, rhs)                                      # and it still works
    np.testing.assert_allclose(got[0], np.linalg.cholesky(good), rtol=1e-12)


@pytest.mark.finite_differences
@pytest.mark.grad_kernel
@pytest.mark.parametrize("linker", ["c", "py"])
def test_gradients(linker):
    rng = np.random.default_rng(3)
    mode = Mode(linker=linker)
    a = spd(rng, 2, 3, 3)
    low = np.linalg.cholesky(a)
    b = rng.standard_normal((3, 2))
    verify_grad(lambda x: cholesky(x), [a], rng=rng, mode=mode)
    verify_grad(lambda x: cholesky(x, lower=False), [a[0]], rng=rng, mode=mode)
    verify_grad(lambda l, r: solve_triangular(l, r, lower=True), [low, b], rng=rng, mode=mode)
    verify_grad(lambda l, r: solve_triangular(l, r, lower=True, trans=1, unit_diagonal=True),
                [low[0], b[:, 0]], rng=rng, mode=mode)
    verify_grad(lambda u, r: solve_triangular(u, r, trans="T"), [np.swapaxes(low, -1, -2), b], rng=rng, mode=mode)
    # a symmetric input built in the graph: the gradient of log det through the factor
    verify_grad(lambda m: T.log(T.diagonal(cholesky(T.dot(m, m.T) + 3 * T.eye(3)))).sum(),
                [rng.standard_normal((3, 3))], rng=rng, mode=mode)
    # second derivatives: CholeskyGrad's own gradient (its graph of ops, differentiated)
    weights = rng.standard_normal((3, 3))

    def through_the_gradient(m):
        low = cholesky(T.dot(m, m.T) + 3 * T.eye(3), lower=False)
        return (ffigraph.grad((low * weights).sum(), m) ** 2).sum()
    verify_grad(through_the_gradient, [rng.standard_normal((3, 3))], rng=rng, mode=mode)


def test_float32_gradient_stays_float32():
    x = T.fmatrix("x")
    g = ffigraph.grad(T.log(T.diagonal(cholesky(x))).sum(), x)
    assert g.dtype == "float32"
    f = ffigraph.function([x], g, mode=Mode(linker="c"))
    a = spd(np.random.default_rng(4), 4, 4)
    got = f(a.astype(np.float32))
    assert got.dtype == np.float32
    # d/dA sum(log diag L) = 0.5 A^-1 on the read (lower) triangle, symmetrised: tril(A^-1) - diag(A^-1)/2
    inv = np.linalg.inv(a)
    np.testing.assert_allclose(got, np.tril(inv) - np.diag(np.diag(inv)) / 2, rtol=2e-4, atol=2e-5)
