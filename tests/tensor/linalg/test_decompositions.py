"""eigh / eigvalsh / svd / qr / pinv / lstsq: values against numpy (one function per linker
holding every case as an output), gradients by finite differences, and the failures.

Eigenvectors and singular vectors are only defined up to sign (and, for a repeated eigenvalue,
up to a rotation), so they are checked through what does not depend on that: reconstructions
(``v diag(w) v^T``, ``U diag(s) Vh``, ``Q R``), orthogonality, and ``|v^T v_numpy|`` being the
identity where the eigenvalues are distinct. Inputs come in every layout: contiguous, reversed
(negative strides on every axis), transposed views, empty, float32, and integers (upcast).
"""
import functools

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function, grad
from ffigraph.gradient import verify_grad
from ffigraph.tensor.gradient import NullTypeGradError
from ffigraph.tensor.linalg.eigen import eigh, eigvalsh
from ffigraph.tensor.linalg.pinv_lstsq import lstsq, pinv
from ffigraph.tensor.linalg.qr import qr
from ffigraph.tensor.linalg.svd import svd
from ffigraph.tensor.products import matmul
from helpers import relayout

LINKERS = ("py", "c")
MODES = {linker: Mode(linker=linker) for linker in LINKERS}


def _rng():
    return np.random.default_rng(20270611)


def _tol(dtype):
    """(rtol, atol scale) for results of ``dtype``."""
    return (2e-4, 2e-4) if np.dtype(dtype) == np.float32 else (1e-9, 1e-10)


def _sym(a, lower=True):
    a = np.asarray(a, np.float64)
    t = np.swapaxes
    return np.tril(a) + t(np.tril(a, -1), -1, -2) if lower else np.triu(a) + t(np.triu(a, 1), -1, -2)


def _mT(a):
    return np.swapaxes(a, -1, -2)


def _close(label, got, want, dtype, scale=1.0):
    rtol, atol = _tol(dtype)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol * max(scale, 1.0),
                               err_msg=label)


def _eye_like(x):
    return np.broadcast_to(np.eye(x.shape[-1]), x.shape[:-2] + (x.shape[-1], x.shape[-1]))


# ---------------------------------------------------------------- the values

def _values():
    rng = _rng()
    v = {}
    sym = rng.standard_normal((3, 4, 4))
    v["S"] = relayout(sym, "reversed")                                    # batch, not symmetric, negative strides
    v["S32"] = rng.standard_normal((5, 5)).astype("float32")
    q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    v["ILL"] = (q * np.logspace(-12, 0, 5)) @ q.T                         # condition number 1e12
    v["EYE"] = np.eye(4)                                                  # one eigenvalue, four times
    v["SI"] = rng.integers(-3, 4, (3, 3)).astype("int32")                 # integers: float64
    nan = sym[:2].copy()
    nan[1, 2, 0] = np.nan                                                 # in the lower triangle: entry 1 is NaN
    nan[0, 0, 3] = np.nan                                                 # in the upper one: ignored (lower=True)
    v["SNAN"] = nan
    v["E3"] = np.zeros((2, 0, 0))
    v["W"] = _mT(rng.standard_normal((3, 6, 4)))                         # wide 4 x 6, a transposed view
    v["TL"] = relayout(rng.standard_normal((2, 6, 4)), "reversed")       # tall 6 x 4
    v["F32"] = rng.standard_normal((5, 3)).astype("float32")
    hil = 1.0 / (np.arange(6)[:, None] + np.arange(6)[None, :] + 1)
    v["HIL"] = hil                                                        # Hilbert: condition number 1e7
    v["EW"] = np.zeros((2, 0, 3))
    v["ET"] = np.zeros((3, 0))
    a = rng.standard_normal((6, 3))
    v["LA"] = a
    v["LB"] = rng.standard_normal((6, 2))
    v["LBV"] = rng.standard_normal(6)
    rank = rng.standard_normal((4, 4))
    rank[:, 3] = rank[:, 0] + rank[:, 1]                                  # rank 3
    v["LR"] = rank
    v["LRB"] = rng.standard_normal((4, 2))
    v["LWA"] = rng.standard_normal((3, 5))                                # m < n: no residuals
    v["LWB"] = rng.standard_normal(3)
    v["L32"] = rng.standard_normal((5, 2)).astype("float32")
    v["L32B"] = rng.standard_normal((5, 3)).astype("float32")
    return v


def _symbols(values):
    return {name: T.tensor(val.dtype, (None,) * val.ndim, name=name) for name, val in values.items()}


# ---------------------------------------------------------------- the cases

def _eig_checks(s, v):
    """(label, outputs, check(results, values))."""
    cases = []

    def eig_case(name, lower, distinct=True):
        w, vec = eigh(s[name], lower=lower)
        wonly = eigvalsh(s[name], lower=lower)

        def check(r, val, name=name, lower=lower, distinct=distinct):
            got_w, got_v, got_w2 = r
            a = _sym(val[name], lower)
            want_w, want_v = np.linalg.eigh(a)
            dt = val[name].dtype if val[name].dtype.kind == "f" else np.float64
            label = "eigh %s lower=%s" % (name, lower)
            assert got_w.dtype == got_v.dtype == got_w2.dtype == dt, label
            assert got_w.shape == want_w.shape and got_v.shape == want_v.shape, label
            scale = np.abs(a).max(initial=0)
            _close(label + " w", got_w, want_w, dt, scale)
            _close(label + " eigvalsh", got_w2, want_w, dt, scale)
            _close(label + " v diag(w) v^T", (got_v * got_w[..., None, :]) @ _mT(got_v), a, dt, scale)
            _close(label + " v^T v", _mT(got_v) @ got_v, _eye_like(got_v), dt)
            if distinct:
                _close(label + " |v^T v_numpy|", np.abs(_mT(got_v) @ want_v), _eye_like(got_v), dt)
        cases.append(("eigh %s %s" % (name, lower), [w, vec, wonly], check))

    eig_case("S", True)
    eig_case("S", False)
    eig_case("S32", True)
    eig_case("SI", False)
    eig_case("EYE", True, distinct=False)
    eig_case("E3", True)

    w, vec = eigh(s["ILL"])

    def check_ill(r, val):
        # eigenvalues to the absolute accuracy of the largest; the eigenvectors of the small ones
        # are not well determined: reconstruction and orthogonality only
        got_w, got_v = r
        want_w = np.linalg.eigvalsh(val["ILL"])
        np.testing.assert_allclose(got_w, want_w, rtol=0, atol=1e-14, err_msg="eigh ill-conditioned")
        np.testing.assert_allclose((got_v * got_w) @ got_v.T, val["ILL"], rtol=0, atol=1e-14)
        np.testing.assert_allclose(got_v.T @ got_v, np.eye(5), rtol=0, atol=1e-13)
    cases.append(("eigh ill-conditioned", [w, vec], check_ill))

    w, vec = eigh(s["SNAN"])

    def check_nan(r, val):
        got_w, got_v = r
        assert np.all(np.isnan(got_w[1])) and np.all(np.isnan(got_v[1])), "NaN in the triangle read: NaN results"
        assert np.all(np.isfinite(got_w[0])) and np.all(np.isfinite(got_v[0])), "NaN in the other triangle: ignored"
        _close("eigh beside NaN", got_w[0], np.linalg.eigvalsh(_sym(val["SNAN"][0])), np.float64, 4)
    cases.append(("eigh NaN", [w, vec], check_nan))
    return cases


def _svd_checks(s, v):
    cases = []
    for name in ("W", "TL", "F32", "HIL", "EW", "ET"):
        outs = list(svd(s[name])) + list(svd(s[name], full_matrices=False)) + [svd(s[name], compute_uv=False)]

        def check(r, val, name=name):
            a = val[name]
            dt = a.dtype
            m, n = a.shape[-2:]
            k = min(m, n)
            uf, sf, vf, ur, sr, vr, so = r
            want_s = np.linalg.svd(a, compute_uv=False) if a.size else np.zeros(a.shape[:-2] + (0,))
            label = "svd %s" % name
            assert uf.shape == a.shape[:-2] + (m, m) and vf.shape == a.shape[:-2] + (n, n), label
            assert ur.shape == a.shape[:-2] + (m, k) and vr.shape == a.shape[:-2] + (k, n), label
            assert all(x.dtype == dt for x in r), label
            scale = np.abs(a).max(initial=0)
            for got in (sf, sr, so):
                _close(label + " s", got, want_s, dt, scale)
            _close(label + " U diag(s) Vh (reduced)", (ur * sr[..., None, :]) @ vr, a, dt, scale)
            _close(label + " U diag(s) Vh (full)", (uf[..., :, :k] * sf[..., None, :]) @ vf[..., :k, :], a, dt, scale)
            for u in (uf, ur):
                _close(label + " U^T U", _mT(u) @ u, _eye_like(u), dt)
            for vh in (vf, vr):
                _close(label + " Vh Vh^T", vh @ _mT(vh), _eye_like(_mT(vh)), dt)
            if a.size == 0:
                assert np.array_equal(uf, _eye_like(uf)) and np.array_equal(vf, _eye_like(vf)), label + " identities"
            elif name != "HIL":    # (distinct, well-separated singular values: the vectors match up to sign)
                want_u, _, want_vh = np.linalg.svd(a, full_matrices=False)
                _close(label + " |U^T U_numpy|", np.abs(_mT(ur) @ want_u), _eye_like(_mT(ur) @ want_u), dt)
                _close(label + " |Vh Vh_numpy^T|", np.abs(vr @ _mT(want_vh)), _eye_like(vr @ _mT(want_vh)), dt)
        cases.append(("svd %s" % name, outs, check))
    return cases


def _householder_q(h, tau):
    """Q (m x m) from geqrf's reflectors (``h`` m x n, ``tau`` k)."""
    m = h.shape[0]
    q = np.eye(m)
    for i in range(tau.shape[0]):
        vec = np.zeros(m)
        vec[i] = 1
        vec[i + 1:] = h[i + 1:, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(vec, vec))
    return q


def _qr_checks(s, v):
    cases = []
    for name in ("W", "TL", "F32", "LR", "EW", "ET"):
        outs = list(qr(s[name])) + list(qr(s[name], mode="economic")) + [qr(s[name], mode="r")] \
            + list(qr(s[name], mode="raw")) + list(qr(s[name], mode="reduced"))

        def check(r, val, name=name):
            a = val[name]
            dt = a.dtype
            m, n = a.shape[-2:]
            k = min(m, n)
            qf, rf, qe, re_, ronly, h, tau, rraw, qe2, re2 = r
            label = "qr %s" % name
            b = a.shape[:-2]
            shapes = [(m, m), (m, n), (m, k), (k, n), (m, n), (m, n), (k,), (k, n), (m, k), (k, n)]
            assert [x.shape for x in r] == [b + sh for sh in shapes], (label, [x.shape for x in r])
            assert all(x.dtype == dt for x in r), label
            scale = np.abs(a).max(initial=0)
            _close(label + " Q R (full)", qf @ rf, a, dt, scale)
            _close(label + " Q R (economic)", qe @ re_, a, dt, scale)
            _close(label + " Q^T Q", _mT(qf) @ qf, _eye_like(qf), dt)
            _close(label + " Q^T Q (economic)", _mT(qe) @ qe, _eye_like(_mT(qe) @ qe), dt)
            for rr in (rf, re_, ronly, rraw):
                assert np.array_equal(rr, np.triu(rr)), label + " R upper triangular"
            assert np.array_equal(ronly, rf) and np.array_equal(rraw, re_), label + " mode r / raw R"
            assert np.array_equal(qe2, qe) and np.array_equal(re2, re_), label + " 'reduced' is 'economic'"
            # LAPACK's signs (numpy's routine): the sign-normalized factors equal numpy's
            want_q, want_r = np.linalg.qr(a, mode="reduced") if a.size else (qe, re_)
            sign = np.sign(np.diagonal(re_, axis1=-2, axis2=-1)) * np.sign(np.diagonal(want_r, axis1=-2, axis2=-1))
            sign = np.where(sign == 0, 1, sign)
            _close(label + " Q vs numpy", qe * sign[..., None, :], want_q, dt)
            _close(label + " R vs numpy", re_ * sign[..., :, None], want_r, dt, scale)
            for idx in np.ndindex(*b):
                if m:
                    q_raw = _householder_q(np.asarray(h[idx], np.float64), np.asarray(tau[idx], np.float64))
                    _close(label + " raw: Householder Q R", q_raw[:, :k] @ rraw[idx], a[idx], dt, scale)
                assert np.array_equal(np.triu(h[idx])[:k], rraw[idx]), label + " raw: H holds R"
        cases.append(("qr %s" % name, outs, check))
    return cases


def _pinv_lstsq_checks(s, v):
    cases = []
    for name in ("W", "TL", "F32", "LR", "EW"):
        def check(r, val, name=name):
            a = val[name]
            want = np.linalg.pinv(a) if a.size else np.zeros(a.shape[:-2] + a.shape[-1:] + a.shape[-2:-1])
            assert r[0].dtype == a.dtype and r[0].shape == want.shape, name
            _close("pinv %s" % name, r[0], want, a.dtype, np.abs(want).max(initial=0))
        cases.append(("pinv %s" % name, [pinv(s[name])], check))
    for name in ("S", "S32", "E3"):
        def check_h(r, val, name=name):
            a = val[name]
            want = np.linalg.pinv(a, hermitian=True) if a.size else np.zeros(a.shape)
            assert r[0].dtype == a.dtype and r[0].shape == want.shape, name
            _close("pinv hermitian %s" % name, r[0], want, a.dtype, np.abs(want).max(initial=0))
        cases.append(("pinv hermitian %s" % name, [pinv(s[name], hermitian=True)], check_h))
    for a_name, b_name, rcond in (("LA", "LB", None), ("LA", "LBV", None), ("LR", "LRB", None), ("LR", "LRB", -1),
                                  ("LR", "LRB", 0.5), ("LWA", "LWB", None), ("L32", "L32B", None),
                                  ("ET", "LBV", None)):
        if a_name == "ET":
            out = lstsq(s["ET"], s["LBV"][:3])
        else:
            out = lstsq(s[a_name], s[b_name], rcond=rcond)

        def check_l(r, val, a_name=a_name, b_name=b_name, rcond=rcond):
            a, b = val[a_name], val[b_name]
            if a_name == "ET":
                b = b[:3]
            want = np.linalg.lstsq(a, b, rcond=rcond)
            label = "lstsq %s %s rcond=%s" % (a_name, b_name, rcond)
            for k, (got, w) in enumerate(zip(r, want)):
                w = np.asarray(w)
                assert got.shape == w.shape and got.dtype == w.dtype, (label, k, got.shape, w.shape, got.dtype, w.dtype)
                if k == 2:
                    assert int(got) == int(w), (label, "rank", got, w)
                else:
                    _close("%s output %d" % (label, k), got, w, got.dtype, np.abs(w).max(initial=0))
        cases.append(("lstsq %s %s %s" % (a_name, b_name, rcond), list(out), check_l))
    return cases


@functools.lru_cache(maxsize=None)
def _run(linker):
    """Every case's results from ONE compiled function of ``linker``."""
    values = _values()
    syms = _symbols(values)
    cases = {"eigh": _eig_checks(syms, values), "svd": _svd_checks(syms, values), "qr": _qr_checks(syms, values),
             "pinv_lstsq": _pinv_lstsq_checks(syms, values)}
    outputs = [o for group in cases.values() for _, outs, _ in group for o in outs]
    names = sorted(values)
    f = function([syms[n] for n in names], outputs, mode=MODES[linker])
    results = iter(f(*[values[n] for n in names]))
    return values, {area: [(label, [next(results) for _ in outs], check) for label, outs, check in group]
                    for area, group in cases.items()}


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("area", ["eigh", "svd", "qr", "pinv_lstsq"])
def test_values(area, linker):
    values, cases = _run(linker)
    for label, results, check in cases[area]:
        check(results, values)


def test_same_results_both_linkers():
    """The C code and perform agree closely (both call LAPACK's routines)."""
    _, py = _run("py")
    _, c = _run("c")
    for area in py:
        for (label, rp, _), (_, rc, _) in zip(py[area], c[area]):
            if area in ("eigh",) or label.startswith("qr"):
                for x, y in zip(rp, rc):
                    rtol = 1e-3 if x.dtype == np.float32 else 1e-8
                    np.testing.assert_allclose(np.abs(y), np.abs(x), rtol=rtol, atol=rtol, err_msg=label)


# ---------------------------------------------------------------- failures

@pytest.mark.parametrize("linker", LINKERS)
def test_runtime_failures(linker):
    x = T.dmatrix("x")
    f = function([x], [svd(x, compute_uv=False)], mode=MODES[linker])
    with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
        f(np.array([[1.0, np.inf], [0.0, 1.0]]))
    g = function([x], eigh(x), mode=MODES[linker])
    with pytest.raises(ValueError, match="square"):
        g(np.zeros((2, 3)))


def test_build_errors():
    x = T.dmatrix("x")
    with pytest.raises(NotImplementedError, match="generalized"):
        eigh(x, x)
    with pytest.raises(NotImplementedError, match="generalized"):
        eigvalsh(x, x)
    with pytest.raises(ValueError, match="driver"):
        eigh(x, driver="ev")
    with pytest.raises(ValueError, match="square"):
        eigh(T.tensor("float64", (2, 3)))
    with pytest.warns(DeprecationWarning):
        eigh(x, UPLO="U")
    with pytest.raises(NotImplementedError, match="pivoting"):
        qr(x, pivoting=True)
    with pytest.raises(ValueError, match="Invalid mode"):
        qr(x, mode="thin")
    with pytest.raises(TypeError, match="complex"):
        svd(T.zmatrix("z"))
    with pytest.raises(ValueError, match="rows"):
        lstsq(T.tensor("float64", (4, 2)), T.tensor("float64", (3,)))
    # the gradients PyTensor does not have either
    with pytest.raises(NullTypeGradError, match="full_matrices=True"):
        grad(svd(x)[0].sum(), x)
    with pytest.raises(NullTypeGradError, match="mode=raw"):
        grad(qr(x, mode="raw")[0].sum(), x)
    tall = T.tensor("float64", (5, 3))
    with pytest.raises(NullTypeGradError, match="m > n"):
        grad(qr(tall)[0].sum(), tall)
    grad(qr(tall)[1].sum(), tall)    # R alone: fine


# ---------------------------------------------------------------- gradients

GRAD_MODE = MODES["c"]


def _separated(rng, shape, gaps=3.0):
    """Random matrices whose symmetric part has well-separated eigenvalues."""
    n = shape[-1]
    return 0.3 * rng.standard_normal(shape) + np.diag(gaps * np.arange(n))


@pytest.mark.finite_differences
def test_grad_eigh():
    rng = _rng()
    a = _separated(rng, (2, 4, 4))
    # sign-invariant: the eigenvalues, squared eigenvector entries, v v^T weighted by w
    verify_grad(lambda x: eigh(x)[0][..., None, :] + eigh(x)[1] ** 2, [a], rng=rng, mode=GRAD_MODE)
    verify_grad(lambda x: (lambda w, v: matmul(v * w[..., None, :] ** 2, T.swapaxes(v, -1, -2)))(*eigh(x, lower=False)),
                [a], rng=rng, mode=GRAD_MODE)
    verify_grad(lambda x: eigvalsh(x, lower=False), [a], rng=rng, mode=GRAD_MODE)
    verify_grad(lambda x: eigh(x)[1] ** 2, [a[0]], rng=rng, mode=MODES["py"])


def test_grad_eigh_repeated_eigenvalues_w_only():
    """A cost of the eigenvalues alone never divides by an eigenvalue gap (the identity)."""
    x = T.dmatrix("x")
    g = function([x], grad(eigh(x)[0].sum(), x), mode=GRAD_MODE)(np.eye(3))
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)


@pytest.mark.finite_differences
def test_grad_svd():
    rng = _rng()
    wide = rng.standard_normal((2, 3, 5))
    tall = rng.standard_normal((5, 3))

    def gram(m):
        return matmul(m, T.swapaxes(m, -1, -2))

    verify_grad(lambda x: svd(x, compute_uv=False), [wide], rng=rng, mode=GRAD_MODE)
    verify_grad(lambda x: svd(x)[1], [tall], rng=rng, mode=GRAD_MODE)       # full factors, s alone: fine
    for a in (wide, tall):
        verify_grad(lambda x: (lambda u, s, vh: gram(u) + s.sum() + gram(T.swapaxes(vh, -1, -2))[..., :1, :1])(
            *svd(x, full_matrices=False)), [a], rng=rng, mode=GRAD_MODE)


@pytest.mark.finite_differences
def test_grad_qr():
    rng = _rng()
    wide = rng.standard_normal((2, 3, 5))
    tall = rng.standard_normal((5, 3))
    verify_grad(lambda x: (lambda q, r: (q ** 3).sum() + (r ** 3).sum())(*qr(x, mode="economic")), [wide],
                rng=rng, mode=GRAD_MODE)
    verify_grad(lambda x: (lambda q, r: (q ** 3).sum() + (r ** 3).sum())(*qr(x, mode="economic")), [tall],
                rng=rng, mode=GRAD_MODE)
    verify_grad(lambda x: (lambda q, r: (q ** 3).sum() + (r ** 3).sum())(*qr(x)), [wide], rng=rng, mode=GRAD_MODE)
    verify_grad(lambda x: qr(x, mode="r"), [tall], rng=rng, mode=GRAD_MODE)


@pytest.mark.finite_differences
def test_grad_qr_static_and_full_tall():
    """Static shapes take the m >= n formula (verify_grad's inputs have none): the same values;
    mode='full' with m > n known only at run time: R alone has a gradient, a used Q gives NaN."""
    rng = _rng()
    tall = rng.standard_normal((5, 3))
    xs, xd = T.tensor("float64", (5, 3), name="xs"), T.dmatrix("xd")

    def cost(x, mode):
        q, r = qr(x, mode=mode)
        return (q ** 3).sum() + (r ** 3).sum()
    outs = [grad(cost(xs, "economic"), xs), grad(cost(xd, "economic"), xd),
            grad((qr(xd)[1] ** 3).sum(), xd), grad((qr(xd, mode="economic")[1] ** 3).sum(), xd),
            grad(cost(xd, "full"), xd)]
    static, dynamic, full_r, econ_r, full_q = function([xs, xd], outs, mode=GRAD_MODE)(tall, tall)
    np.testing.assert_allclose(static, dynamic, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(full_r, econ_r, rtol=1e-10, atol=1e-12)
    assert np.all(np.isnan(full_q))


@pytest.mark.finite_differences
def test_grad_pinv_lstsq():
    rng = _rng()
    verify_grad(pinv, [rng.standard_normal((2, 3, 4))], rng=rng, mode=GRAD_MODE)
    verify_grad(lambda x: pinv(x, hermitian=True), [_separated(rng, (3, 3))], rng=rng, mode=GRAD_MODE)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    verify_grad(lambda a, b: (lambda x, res, rank, s: x.sum() + res.sum() + s.sum())(*lstsq(a, b)), [a, b],
                rng=rng, mode=GRAD_MODE)
