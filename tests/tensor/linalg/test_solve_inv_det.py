"""solve / cho_solve / inv / det / slogdet: values against numpy (both linkers, one function per
linker holding every case), gradients by finite differences, and the failures."""
import numpy as np
import pytest

import ffigraph as fg
from ffigraph.gradient import verify_grad
from ffigraph.tensor import tensor
from ffigraph.tensor.linalg import lapack_c
from ffigraph.tensor.linalg.inverse import MatrixInverse, inv, matrix_inverse
from ffigraph.tensor.linalg.solve import Solve, cho_solve, solve
from ffigraph.tensor.linalg.summary import det, slogdet

LINKERS = ["py", "c"]
N, K = 4, 3


def _rng():
    return np.random.default_rng(20240611)


def _well(rng, n, dtype="float64", batch=()):
    """A well-conditioned matrix (diagonally dominant), not symmetric."""
    return (rng.standard_normal(batch + (n, n)) + 2 * n * np.eye(n)).astype(dtype)


def _spd_ish(rng, n):
    """Symmetric positive definite plus a small non-symmetric part: both triangles stand for a
    positive-definite matrix, and the triangle that is read matters."""
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n) + 0.1 * rng.standard_normal((n, n))


def _sym(a, lower):
    return np.tril(a) + np.tril(a, -1).T if lower else np.triu(a) + np.triu(a, 1).T


def _nsolve(a, b):
    """numpy's solve of matrices a against matrices b with broadcast batch axes (numpy 1.26 takes a
    b with one axis fewer than a for a stack of vectors)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.linalg.solve(np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:]))


def _hilbert(n):
    i = np.arange(n)
    return 1.0 / (i[:, None] + i[None, :] + 1)


def _var(name, dtype, ndim):
    return tensor(dtype, (None,) * ndim, name=name)


# ---------------------------------------------------------------- values: one function per linker

def _cases():
    """[(name, symbolic output, numpy expected (a function of the values), rtol, atol)], the
    inputs and their values."""
    rng = _rng()
    v = {}
    v["a"] = _well(rng, N)
    v["s"] = _spd_ish(rng, N)
    v["b"] = rng.standard_normal((N, K))
    v["bv"] = rng.standard_normal(N)
    v["a32"] = _well(rng, N, "float32")
    v["s32"] = _spd_ish(rng, N).astype("float32")
    v["b32"] = rng.standard_normal((N, K)).astype("float32")
    v["h"] = _hilbert(6)
    v["hb"] = rng.standard_normal((6, 2))
    v["A4"] = _well(rng, N, batch=(2, 1))
    v["B3"] = rng.standard_normal((3, N, K))
    v["V2"] = rng.standard_normal((3, N))
    v["big"] = _well(rng, 90) / 90   # (past LAPACK's block size: the blocked getrf / getri paths)
    v["bigb"] = rng.standard_normal((90, 5))
    v["e"] = np.empty((0, 0))
    v["eb"] = np.empty((0, K))
    v["E3"] = np.empty((2, 0, 0))
    v["ai"] = rng.integers(-3, 4, (N, N)) + 8 * np.eye(N, dtype="int64")
    # inputs passed as views: reversed both ways, and transposed
    v["rev"] = _well(rng, N)[::-1, ::-1]
    v["tr"] = _well(rng, N).T
    v["brev"] = rng.standard_normal((N, K))[::-1, ::-1]
    sym = {k: _var(k, str(x.dtype), x.ndim) for k, x in v.items()}
    a, s, b, bv, h, hb = (sym[k] for k in ("a", "s", "b", "bv", "h", "hb"))
    a32, s32, b32 = sym["a32"], sym["s32"], sym["b32"]
    A4, B3, V2 = sym["A4"], sym["B3"], sym["V2"]
    e, eb, E3 = sym["e"], sym["eb"], sym["E3"]
    rev, tr, brev = sym["rev"], sym["tr"], sym["brev"]
    L = np.linalg
    T64, T32 = (1e-10, 1e-12), (2e-4, 2e-5)
    cases = [
        # general
        ("gen", solve(a, b), lambda: L.solve(v["a"], v["b"]), T64),
        ("gen unchecked", solve(a, b, check_finite=False, overwrite_a=True, overwrite_b=True),
         lambda: L.solve(v["a"], v["b"]), T64),
        ("gen long name", solve(a, b, assume_a="general"), lambda: L.solve(v["a"], v["b"]), T64),
        ("gen vector", solve(a, bv), lambda: L.solve(v["a"], v["bv"]), T64),
        ("gen transposed", solve(a, b, transposed=True), lambda: L.solve(v["a"].T, v["b"]), T64),
        ("gen identity", solve(a * 0 + np.eye(N), b), lambda: v["b"], T64),
        # symmetric / positive definite, either triangle
        ("sym lower", solve(a, b, assume_a="sym", lower=True), lambda: L.solve(_sym(v["a"], True), v["b"]), T64),
        ("sym upper", solve(a, b, assume_a="symmetric"), lambda: L.solve(_sym(v["a"], False), v["b"]), T64),
        ("sym upper transposed", solve(a, b, assume_a="sym", transposed=True),
         lambda: L.solve(_sym(v["a"].T, True), v["b"]), T64),
        ("pos lower", solve(s, b, assume_a="pos", lower=True), lambda: L.solve(_sym(v["s"], True), v["b"]), T64),
        ("pos upper", solve(s, bv, assume_a="positive definite"),
         lambda: L.solve(_sym(v["s"], False), v["bv"]), T64),
        ("her", solve(a, b, assume_a="her", lower=True), lambda: L.solve(_sym(v["a"], True), v["b"]), T64),
        # the other structures of PyTensor's solve()
        ("lower triangular", solve(a, b, assume_a="lower triangular"), lambda: L.solve(np.tril(v["a"]), v["b"]), T64),
        ("upper triangular T", solve(a, b, assume_a="upper triangular", transposed=True),
         lambda: L.solve(np.triu(v["a"]).T, v["b"]), T64),
        ("diagonal", solve(a, b, assume_a="diagonal"), lambda: v["b"] / np.diag(v["a"])[:, None], T64),
        ("tridiagonal", solve(a, bv, assume_a="tridiagonal"),
         lambda: L.solve(np.triu(np.tril(v["a"], 1), -1), v["bv"]), T64),
        ("banded", solve(a, b, assume_a="banded"), lambda: L.solve(v["a"], v["b"]), T64),
        # cho_solve
        ("cho_solve lower", cho_solve((s, True), b),
         lambda: L.solve(np.tril(v["s"]) @ np.tril(v["s"]).T, v["b"]), T64),
        ("cho_solve upper", cho_solve((s, False), bv),
         lambda: L.solve(np.triu(v["s"]).T @ np.triu(v["s"]), v["bv"]), T64),
        # inv, det, slogdet
        ("inv", inv(a), lambda: L.inv(v["a"]), T64),
        ("matrix_inverse", matrix_inverse(s), lambda: L.inv(v["s"]), T64),
        ("inv identity", inv(a * 0 + np.eye(N)), lambda: np.eye(N), T64),
        ("det", det(a), lambda: L.det(v["a"]), T64),
        ("det identity", det(a * 0 + np.eye(N)), lambda: 1.0, T64),
        ("slogdet sign", slogdet(a)[0], lambda: L.slogdet(v["a"])[0], T64),
        ("slogdet log", slogdet(a)[1], lambda: L.slogdet(v["a"])[1], T64),
        ("slogdet neg sign", slogdet(-a[:3, :3])[0], lambda: L.slogdet(-v["a"][:3, :3])[0], T64),
        ("det neg", det(-a[:3, :3]), lambda: L.det(-v["a"][:3, :3]), T64),
        # row orders that make LU pivot (the sign of the permutation)
        ("pivot det", det(a[:3, :3][::-1]), lambda: L.det(v["a"][:3, :3][::-1]), T64),
        ("pivot slogdet sign", slogdet(a[:3, :3][::-1])[0], lambda: L.slogdet(v["a"][:3, :3][::-1])[0], T64),
        ("pivot slogdet sign 2", slogdet(-a[1:, 1:][::-1])[0], lambda: L.slogdet(-v["a"][1:, 1:][::-1])[0], T64),
        ("pivot batch sign", slogdet(A4[..., 1:, 1:][..., ::-1, :])[0],
         lambda: L.slogdet(v["A4"][..., 1:, 1:][..., ::-1, :])[0], T64),
        # float32
        ("f32 gen", solve(a32, b32), lambda: L.solve(v["a32"].astype("f8"), v["b32"]), T32),
        ("f32 pos", solve(s32, b32, assume_a="pos", lower=True),
         lambda: L.solve(_sym(v["s32"].astype("f8"), True), v["b32"]), T32),
        ("f32 sym", solve(s32, b32, assume_a="sym"), lambda: L.solve(_sym(v["s32"].astype("f8"), False), v["b32"]),
         T32),
        ("f32 inv", inv(a32), lambda: L.inv(v["a32"].astype("f8")), T32),
        ("f32 det", det(a32), lambda: L.det(v["a32"].astype("f8")), T32),
        ("f32 slogdet", slogdet(a32)[1], lambda: L.slogdet(v["a32"].astype("f8"))[1], T32),
        ("f32 cho_solve", cho_solve((s32, True), b32),
         lambda: L.solve(np.tril(v["s32"]).astype("f8") @ np.tril(v["s32"]).T.astype("f8"), v["b32"]), T32),
        # int input: float64
        ("int inv", inv(sym["ai"]), lambda: L.inv(v["ai"]), T64),
        # ill-conditioned: Hilbert 6 (condition number 1.5e7)
        ("hilbert solve", solve(h, hb), lambda: L.solve(v["h"], v["hb"]), (1e-6, 1e-6)),
        ("hilbert pos", solve(h, hb, assume_a="pos"), lambda: L.solve(v["h"], v["hb"]), (1e-6, 1e-6)),
        ("hilbert inv", inv(h), lambda: L.inv(v["h"]), (1e-6, 1e-3)),
        ("hilbert det", det(h), lambda: L.det(v["h"]), (1e-6, 0)),
        ("hilbert slogdet", slogdet(h)[1], lambda: L.slogdet(v["h"])[1], (1e-9, 0)),
        # larger than LAPACK's block size
        ("big solve", solve(sym["big"], sym["bigb"]), lambda: L.solve(v["big"], v["bigb"]), (1e-9, 1e-11)),
        ("big pos", solve(sym["big"], sym["bigb"], assume_a="pos", lower=True),
         lambda: L.solve(_sym(v["big"], True), v["bigb"]), (1e-9, 1e-11)),
        ("big inv", inv(sym["big"]), lambda: L.inv(v["big"]), (1e-9, 1e-11)),
        ("big slogdet", slogdet(sym["big"])[1], lambda: L.slogdet(v["big"])[1], (1e-10, 0)),
        # empty
        ("empty solve", solve(e, eb), lambda: np.empty((0, K)), T64),
        ("empty inv", inv(e), lambda: np.empty((0, 0)), T64),
        ("empty det", det(e), lambda: 1.0, T64),
        ("empty slogdet", slogdet(e)[0] * 10 + slogdet(e)[1], lambda: 10.0, T64),
        ("empty batch det", det(E3), lambda: np.ones(2), T64),
        ("empty batch inv", inv(E3), lambda: np.empty((2, 0, 0)), T64),
        ("empty rhs", solve(a, b[:, :0]), lambda: np.empty((N, 0)), T64),
        ("empty batch", solve(A4[:0], B3), lambda: np.empty((0, 3, N, K)), T64),
        # batched, broadcasting batch axes: (2, 1, n, n) with (3, n, k) and (3, n)
        ("batch gen", solve(A4, B3), lambda: L.solve(v["A4"], np.broadcast_to(v["B3"], (2, 3, N, K))), T64),
        ("batch vector", solve(A4, V2, b_ndim=1),
         lambda: L.solve(v["A4"], np.broadcast_to(v["V2"], (2, 3, N))[..., None])[..., 0], T64),
        ("batch sym", solve(A4, B3, assume_a="sym", lower=True),
         lambda: _nsolve(np.tril(v["A4"]) + np.swapaxes(np.tril(v["A4"], -1), -1, -2), v["B3"]), T64),
        ("batch pos", solve(A4, B3, assume_a="pos"),
         lambda: _nsolve(np.triu(v["A4"]) + np.swapaxes(np.triu(v["A4"], 1), -1, -2), v["B3"]), T64),
        ("batch b only", solve(a, B3), lambda: _nsolve(v["a"], v["B3"]), T64),
        ("batch inv", inv(A4), lambda: L.inv(v["A4"]), T64),
        ("batch det", det(A4), lambda: L.det(v["A4"]), T64),
        ("batch slogdet", slogdet(A4)[1], lambda: L.slogdet(v["A4"])[1], T64),
        ("batch cho_solve", cho_solve((A4, True), B3),
         lambda: _nsolve(np.tril(v["A4"]) @ np.swapaxes(np.tril(v["A4"]), -1, -2), v["B3"]), T64),
        ("batch shape", solve(A4, B3).shape, lambda: np.array([2, 3, N, K]), (0, 0)),
        ("det shape", det(A4).shape, lambda: np.array([2, 1]), (0, 0)),
        # strided inputs (negative strides, transposed) and views made in the graph
        ("rev solve", solve(rev, brev), lambda: L.solve(v["rev"], v["brev"]), T64),
        ("tr solve", solve(tr, b),
         lambda: L.solve(v["tr"], v["b"]), T64),
        ("rev inv", inv(rev), lambda: L.inv(v["rev"]), T64),
        ("tr det", det(tr), lambda: L.det(v["tr"]), T64),
        ("rev slogdet", slogdet(rev)[1], lambda: L.slogdet(v["rev"])[1], T64),
        ("graph view solve", solve(a[::-1, ::-1], b[::-1]), lambda: L.solve(v["a"][::-1, ::-1], v["b"][::-1]), T64),
        ("graph view sym", solve(a.T, b, assume_a="sym", lower=True),
         lambda: L.solve(_sym(v["a"].T, True), v["b"]), T64),
        ("graph view inv", inv(a.T[::-1]), lambda: L.inv(v["a"].T[::-1]), T64),
        ("graph view det", det(a[::-1]), lambda: L.det(v["a"][::-1]), T64),
        ("graph view cho_solve", cho_solve((s.T[::-1, ::-1], False), b[::-1, ::-1]),
         lambda: L.solve(np.triu(v["s"].T[::-1, ::-1]).T @ np.triu(v["s"].T[::-1, ::-1]), v["b"][::-1, ::-1]),
         T64),
        ("strided batch", solve(A4[..., ::-1, :], B3[:, ::-1]), lambda: _nsolve(v["A4"][..., ::-1, :],
                                                                            v["B3"][:, ::-1]), T64),
    ]
    return cases, sym, v


_FUNCS = {}


def _compiled(linker):
    if linker not in _FUNCS:
        cases, sym, v = _cases()
        names = list(v)
        f = fg.function([sym[k] for k in names], [c[1] for c in cases], mode=fg.Mode(linker=linker),
                        on_unused_input="ignore")
        _FUNCS[linker] = (f, cases, v, [v[k] for k in names])
    return _FUNCS[linker]


@pytest.mark.parametrize("linker", LINKERS)
def test_values_against_numpy(linker):
    f, cases, _, values = _compiled(linker)
    before = [np.array(x, copy=True) for x in values]
    # numpy's answers from the inputs as they are before the call (a call that wrote into its
    # inputs, as LAPACK does into the matrices it factors, must not also change the reference)
    wants = [np.asarray(expected()) for _, _, expected, _ in cases]
    got = f(*values)
    changed = [k for k, (x, x0) in enumerate(zip(values, before))
               if x.shape != x0.shape or x.tobytes() != x0.tobytes()]
    assert not changed, "the call changed its inputs %s" % changed
    failures = []
    for (name, out, _, (rtol, atol)), g, e in zip(cases, got, wants):
        if name.startswith("f32"):
            if g.dtype != np.float32:
                failures.append("%s: dtype %s" % (name, g.dtype))
        elif "shape" not in name and g.dtype != np.float64:
            failures.append("%s: dtype %s" % (name, g.dtype))
        if g.shape != e.shape:
            failures.append("%s: shape %s, expected %s" % (name, g.shape, e.shape))
        elif not np.allclose(g, e, rtol=rtol, atol=atol):
            failures.append("%s: max error %g" % (name, np.max(np.abs(g - e))))
    assert not failures, failures


@pytest.mark.parametrize("linker", LINKERS)
def test_hilbert_residual(linker):
    """The ill-conditioned Hilbert 6 x 6: the solve's residual is at rounding level."""
    f, cases, v, values = _compiled(linker)
    got = dict(zip([c[0] for c in cases], f(*values)))
    h, hb = v["h"], v["hb"]
    for name in ("hilbert solve", "hilbert pos"):
        x = got[name]
        assert np.linalg.norm(h @ x - hb) <= 1e-12 * np.linalg.norm(h) * np.linalg.norm(x), name
    assert np.allclose(h @ got["hilbert inv"], np.eye(6), atol=1e-8)


# ---------------------------------------------------------------- failures

_FAIL = {}


def _fail_fn(linker):
    if linker not in _FAIL:
        g, i, p, b = (_var(n, "float64", 2) for n in ("g", "i", "p", "b"))
        outs = [solve(g, b), solve(g, b, assume_a="sym"), inv(i), solve(p, b, assume_a="pos"), det(g),
                *slogdet(g)]
        _FAIL[linker] = fg.function([g, i, p, b], outs, mode=fg.Mode(linker=linker))
    return _FAIL[linker]


@pytest.mark.parametrize("linker", LINKERS)
def test_failures_name_the_op(linker):
    f = _fail_fn(linker)
    good = np.eye(3) * 2 + 0.1
    b = np.ones((3, 2))
    # rows 1 and 2 dependent (its upper triangle's symmetric matrix is not singular: only the
    # general solve fails)
    singular = np.array([[1.0, 0.0, 1.0], [2.0, 4.0, 6.0], [1.0, 2.0, 3.0]])
    sym_singular = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]])

    def ok():
        r = f(good, good, good, b)
        assert np.allclose(r[0], np.linalg.solve(good, b)) and np.allclose(r[2], np.linalg.inv(good))

    ok()
    # the C code's messages say which pivot and batch entry (and show that C ran)
    where = r" \(pivot \d+ is exactly zero; batch entry 0\)" if linker == "c" and lapack_c.library() else ""
    with pytest.raises(np.linalg.LinAlgError, match=r"(?s)solve: singular matrix%s.*Solve\{assume_a='gen'" % where):
        f(singular, good, good, b)
    ok()
    with pytest.raises(np.linalg.LinAlgError, match=r"(?s)solve: singular matrix%s.*Solve\{assume_a='sym'" % where):
        f(sym_singular + np.tril(np.ones((3, 3)), -1) * 5, good, good, b)   # (the lower triangle is ignored)
    ok()
    with pytest.raises(np.linalg.LinAlgError, match=r"(?s)inv: singular matrix%s.*MatrixInverse" % where):
        f(good, singular, good, b)
    ok()
    with pytest.raises(np.linalg.LinAlgError, match=r"(?s)solve: the matrix is not positive definite.*Solve"):
        f(good, good, -good, b)
    ok()
    with pytest.raises(ValueError, match="square"):
        f(np.ones((3, 2)), good, good, b)
    with pytest.raises(ValueError, match="rows"):
        f(good, good, good, np.ones((2, 2)))
    with pytest.raises(ValueError, match="infs or NaNs"):
        f(good, good, good, np.full((3, 2), np.nan))
    ok()


@pytest.mark.parametrize("linker", LINKERS)
def test_singular_det_is_zero(linker):
    """det and slogdet do not raise on a singular matrix, as numpy: 0, and (0, -inf)."""
    singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    d, (sgn, logabs) = _det_fn(linker)(np.stack([singular, np.zeros((3, 3)), np.eye(3)]))
    assert np.array_equal(d, [0.0, 0.0, 1.0])
    assert np.array_equal(sgn, [0.0, 0.0, 1.0])
    assert logabs[0] == -np.inf and logabs[1] == -np.inf and logabs[2] == 0


_DET = {}


def _det_fn(linker):
    if linker not in _DET:
        x = _var("x", "float64", 3)
        f = fg.function([x], [det(x), *slogdet(x)], mode=fg.Mode(linker=linker))
        _DET[linker] = lambda v: (lambda r: (r[0], (r[1], r[2])))(f(v))
    return _DET[linker]


def test_static_checks():
    a = tensor("float64", (3, 2), name="a")
    with pytest.raises(ValueError, match="square"):
        inv(a)
    with pytest.raises(ValueError, match="square"):
        det(a)
    with pytest.raises(ValueError, match="rows"):
        solve(tensor("float64", (3, 3)), tensor("float64", (2, 1)))
    with pytest.raises(ValueError, match="assume_a"):
        solve(tensor("float64", (3, 3)), tensor("float64", (3, 1)), assume_a="nonsense")
    assert Solve(assume_a="positive definite") == Solve(assume_a="pos")
    assert MatrixInverse() == MatrixInverse()
    x = solve(tensor("float32", (None, 5, 5)), tensor("float32", (7, 1, 5, 2)))
    assert x.type.shape == (7, None, 5, 2) and x.dtype == "float32"
    assert slogdet(tensor("float32", (2, 4, 4)))[1].type.shape == (2,)


# ---------------------------------------------------------------- gradients

def _grad_points():
    rng = np.random.default_rng(7)
    return dict(
        a=_well(rng, 3), s=_spd_ish(rng, 3), b=rng.standard_normal((3, 2)), bv=rng.standard_normal(3),
        A4=_well(rng, 3, batch=(2, 1)), B3=rng.standard_normal((3, 3, 2)), V2=rng.standard_normal((3, 3)),
        S4=np.stack([_spd_ish(rng, 3), _spd_ish(rng, 3)])[:, None])


def _solve_single(a, s, b, bv):
    """Every single-matrix solve, summed: gen (matrix and vector b, transposed), sym and pos from
    either triangle (a not symmetric: the gradient must keep to the triangle), cho_solve."""
    out = solve(a, b) + solve(a, b, transposed=True)
    out = out + solve(a, bv)[:, None]
    out = out + solve(a, b, assume_a="sym", lower=True) + solve(a, b, assume_a="sym", transposed=True)
    out = out + solve(s, b, assume_a="pos", lower=True) + solve(s, b, assume_a="pos")
    out = out + cho_solve((s, True), b) + cho_solve((s, False), bv)[:, None]
    return out


def _solve_batched(A4, S4, B3, V2):
    """(2, 1, n, n) with (3, n, k) and (3, n): the gradients summed back to each input's shape."""
    out = solve(A4, B3) + solve(A4, V2, b_ndim=1)[..., None] + solve(S4, B3, assume_a="pos", lower=True)
    return out + solve(A4, B3, assume_a="sym") + cho_solve((S4, False), B3)


def _inv_det(a, A4):
    """inv, det and slogdet (both outputs; the sign's gradient is zero), single and batched."""
    sign, logabs = slogdet(a)
    single = inv(a) + det(a) + logabs + 0.5 * sign
    sign4, logabs4 = slogdet(A4)
    batched = inv(A4) + (det(A4) + logabs4 + sign4)[..., None, None]
    return batched + single


@pytest.mark.finite_differences
@pytest.mark.parametrize("linker", ["c", "py"])
def test_gradients(linker):
    p = _grad_points()
    mode = fg.Mode(linker=linker)
    rng = np.random.default_rng(3)
    verify_grad(_solve_single, [p["a"], p["s"], p["b"], p["bv"]], rng=rng, mode=mode)
    verify_grad(_solve_batched, [p["A4"], p["S4"], p["B3"], p["V2"]], rng=rng, mode=mode)
    verify_grad(_inv_det, [p["a"], p["A4"]], rng=rng, mode=mode)
