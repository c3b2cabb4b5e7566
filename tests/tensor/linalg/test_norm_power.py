"""norm / matrix_power / expm: values against numpy (one function per linker holding every case),
gradients by finite differences, and the errors. scipy's expm is a reference only where scipy
is installed (not on PyPy); elsewhere exp(A) is checked against closed forms and eigen
decompositions."""
import functools

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.gradient import verify_grad
from ffigraph.tensor.linalg.norm import norm
from ffigraph.tensor.linalg.power import expm, matrix_power
from helpers import relayout

LINKERS = ("py", "c")
MODES = {linker: Mode(linker=linker) for linker in LINKERS}
GRAD_MODE = MODES["c"]
INF = np.inf


def _rng():
    return np.random.default_rng(20270612)


def _tol(dtype):
    return (2e-5, 1e-6) if np.dtype(dtype) == np.float32 else (1e-10, 1e-12)


def _values():
    rng = _rng()
    v = {}
    v["X3"] = relayout(rng.standard_normal((2, 3, 4)), "reversed")
    vec = rng.standard_normal(5).astype("float32")
    vec[1] = 0
    v["V32"] = vec
    v["M32"] = np.swapaxes(rng.standard_normal((5, 3)), 0, 1).astype("float32")   # 3 x 5
    v["IV"] = rng.integers(-3, 4, 6).astype("int32")
    v["BM"] = rng.integers(0, 2, (3, 3)).astype(bool)
    v["EV"] = np.zeros((0,))
    v["EM"] = np.zeros((0, 3))
    # matrix_power / expm
    v["P"] = relayout(rng.standard_normal((2, 3, 3)) / 2 + 2 * np.eye(3), "reversed")
    v["PI"] = rng.integers(-2, 3, (3, 3)).astype("int64")
    v["E0"] = np.zeros((2, 0, 0))
    scales = [1e-3, 0.1, 0.5, 1.5, 3.0, 8.0, 60.0]   # every Padé degree, and scaling by 2^-s
    v["A"] = np.stack([rng.standard_normal((4, 4)) * s / 4 for s in scales])
    v["AT"] = np.swapaxes(v["A"][:3], -1, -2)                                        # transposed views
    v["A32"] = rng.standard_normal((3, 3)).astype("float32")
    s = rng.standard_normal((4, 4))
    v["SYM"] = s + s.T
    v["NIL"] = np.triu(rng.standard_normal((4, 4)), 1)                               # nilpotent
    v["ROT"] = np.array([[0.0, -2.5], [2.5, 0.0]])
    nan = rng.standard_normal((2, 2, 2))
    nan[1, 0, 1] = np.nan
    v["ANAN"] = nan
    return v


def _norm_cases():
    """(input name, ord, axis, keepdims)."""
    cases = []
    for o in [None, INF, -INF, 0, 1, 2, 3, -1.5, 0.5, "inf"]:
        cases += [("V32", o, None, False), ("IV", o, None, True), ("X3", o, 1, False), ("X3", o, -1, True)]
    for o in [None, "fro", "f", "nuc", 1, -1, 2, -2, INF, -INF, "-inf"]:
        cases += [("M32", o, None, False), ("X3", o, (-2, -1), False), ("X3", o, (2, 0), True),
                  ("M32", o, (1, 0), True)]
    cases += [("X3", None, None, False), ("X3", None, None, True), ("M32", "fro", None, True),
              ("BM", None, None, False), ("BM", 1, None, False),
              # empty: the orders numpy 2 reduces with initial=0, and the sums
              ("EV", None, None, False), ("EV", INF, None, False), ("EV", 1, None, False), ("EV", 0, None, False),
              ("EM", None, None, False), ("EM", 1, None, False), ("EM", INF, None, False), ("EM", 2, None, False),
              ("EM", "nuc", None, False), ("EM", "fro", (0, 1), True)]
    return cases


def _np_norm(x, o, axis, keepdims):
    o = {"inf": INF, "-inf": -INF}.get(o, o)
    with np.errstate(divide="ignore"):    # (|0| to a negative power: inf, as ffigraph gives too)
        return np.linalg.norm(x, ord=o, axis=axis, keepdims=keepdims)


def _expm_ref(name, a):
    """exp(a) without scipy: closed forms and eigen decompositions."""
    if name == "SYM":
        w, v = np.linalg.eigh(a)
        return (v * np.exp(w)) @ v.T
    if name == "NIL":
        return np.eye(4) + a + a @ a / 2 + a @ a @ a / 6
    if name == "ROT":
        c, s = np.cos(2.5), np.sin(2.5)
        return np.array([[c, -s], [s, c]])
    w, v = np.linalg.eig(a)                       # random matrices: distinct eigenvalues
    return np.real((v * np.exp(w)[..., None, :]) @ np.linalg.inv(v))


POWERS = (0, 1, 2, 3, 5, 8, -1, -3)


@functools.lru_cache(maxsize=None)
def _run(linker):
    values = _values()
    syms = {k: T.tensor(v.dtype, (None,) * v.ndim, name=k) for k, v in values.items()}
    norms = [norm(syms[n], ord=o, axis=a, keepdims=k) for n, o, a, k in _norm_cases()]
    powers = [matrix_power(syms["P"], n) for n in POWERS] + [matrix_power(syms["PI"], n) for n in (0, 2, 5)] \
        + [matrix_power(syms["E0"], n) for n in (0, 3)]
    expms = [expm(syms[n]) for n in ("A", "AT", "A32", "SYM", "NIL", "ROT", "ANAN", "E0")] \
        + [expm(T.zeros((3, 3)))]
    names = sorted(values)
    f = function([syms[n] for n in names], norms + powers + expms, mode=MODES[linker])
    out = f(*[values[n] for n in names])
    return values, out[:len(norms)], out[len(norms):len(norms) + len(powers)], out[len(norms) + len(powers):]


@pytest.mark.parametrize("linker", LINKERS)
def test_norm_values(linker):
    values, got, _, _ = _run(linker)
    for (name, o, axis, keepdims), g in zip(_norm_cases(), got):
        label = "norm(%s, ord=%r, axis=%r, keepdims=%r)" % (name, o, axis, keepdims)
        try:
            want = np.asarray(_np_norm(values[name], o, axis, keepdims))
        except ValueError:
            # numpy 1.26 reduces an empty input's max without initial=0; numpy 2's answer is 0
            assert values[name].size == 0 and np.__version__ < "2", label
            want = np.zeros((), np.float64)
        assert g.dtype == want.dtype and g.shape == want.shape, (label, g.dtype, want.dtype, g.shape, want.shape)
        rtol, atol = _tol(g.dtype)
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, err_msg=label)


def test_norm_errors():
    m, v, x3 = T.dmatrix("m"), T.dvector("v"), T.dtensor3("x")
    with pytest.raises(ValueError, match="Invalid norm order 'fro' for vectors"):
        norm(v, "fro")
    with pytest.raises(ValueError, match="Invalid norm order for matrices"):
        norm(m, 3)
    with pytest.raises(ValueError, match="Improper number of dimensions"):
        norm(x3, 2)
    with pytest.raises(ValueError, match="Duplicate axes"):
        norm(m, axis=(1, 1))
    with pytest.raises(TypeError, match="axis"):
        norm(m, axis=1.5j)
    with pytest.raises(ValueError, match="out of bounds"):
        norm(m, axis=2)


@pytest.mark.parametrize("linker", LINKERS)
def test_matrix_power_values(linker):
    values, _, got, _ = _run(linker)
    wants = [np.linalg.matrix_power(values["P"], n) for n in POWERS] \
        + [np.linalg.matrix_power(values["PI"], n) for n in (0, 2, 5)] + [np.zeros((2, 0, 0))] * 2
    for k, (g, w) in enumerate(zip(got, wants)):
        assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, w.dtype, g.shape, w.shape)
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=str(k))
        else:
            np.testing.assert_array_equal(g, w, err_msg=str(k))


def test_matrix_power_errors():
    m = T.dmatrix("m")
    with pytest.raises(TypeError, match="integer"):
        matrix_power(m, 1.5)
    with pytest.raises(ValueError, match="square"):
        matrix_power(T.tensor("float64", (2, 3)), 2)
    with pytest.raises(ValueError, match="two-dimensional"):
        matrix_power(T.dvector("v"), 2)


@pytest.mark.parametrize("linker", LINKERS)
def test_expm_values(linker):
    values, _, _, got = _run(linker)
    a_, at, a32, sym, nil, rot, anan, e0, zero = got
    for name, g in (("SYM", sym), ("NIL", nil), ("ROT", rot)):
        np.testing.assert_allclose(g, _expm_ref(name, values[name]), rtol=1e-10, atol=1e-10, err_msg=name)
    for name, g in (("A", a_), ("AT", at)):
        want = np.stack([_expm_ref(name, x) for x in values[name]])
        scale = np.abs(want).max(axis=(-2, -1), keepdims=True)
        np.testing.assert_array_less(np.abs(g - want) / scale, 1e-9, err_msg=name)
    assert a32.dtype == np.float32
    np.testing.assert_allclose(a32, _expm_ref("A32", values["A32"].astype(np.float64)), rtol=1e-5, atol=1e-6)
    assert np.all(np.isnan(anan[1])) and np.all(np.isfinite(anan[0])), "NaN: that batch entry NaN"
    np.testing.assert_allclose(anan[0], _expm_ref("A", values["ANAN"][0]), rtol=1e-10, atol=1e-12)
    assert e0.shape == (2, 0, 0)
    np.testing.assert_array_equal(zero, np.eye(3))


def test_expm_against_scipy():
    sl = pytest.importorskip("scipy.linalg")
    values, _, _, got = _run("c")
    want = np.stack([sl.expm(x) for x in values["A"]])
    scale = np.abs(want).max(axis=(-2, -1), keepdims=True)
    np.testing.assert_array_less(np.abs(got[0] - want) / scale, 1e-12)


def test_expm_errors():
    with pytest.raises(ValueError, match="square"):
        expm(T.tensor("float64", (2, 3)))


# ---------------------------------------------------------------- gradients

@pytest.mark.finite_differences
def test_grad_expm():
    rng = _rng()
    a = rng.standard_normal((2, 3, 3))
    a[1] *= 4    # (scaled and squared)
    verify_grad(expm, [a], rng=rng, mode=GRAD_MODE)
    verify_grad(expm, [a[0]], rng=rng, mode=MODES["py"])


@pytest.mark.finite_differences
def test_grad_matrix_power():
    rng = _rng()
    a = rng.standard_normal((2, 3, 3)) / 2 + 2 * np.eye(3)
    verify_grad(lambda x: matrix_power(x, 5) + matrix_power(x, -2), [a], rng=rng, mode=GRAD_MODE)


@pytest.mark.finite_differences
def test_grad_norm():
    rng = _rng()
    x = rng.standard_normal((2, 3, 4))

    def norms(x):
        return T.stack([norm(x, "fro", axis=(-2, -1)), norm(x, "nuc", axis=(-2, -1)), norm(x, 2, axis=(-2, -1)),
                        norm(x, -2, axis=(1, 2)), norm(x, 1, axis=(-2, -1)), norm(x, INF, axis=(-2, -1)),
                        norm(x[:, 0], 3, axis=-1), norm(x[:, 1], None, axis=-1), norm(x[:, 2], INF, axis=-1)])
    verify_grad(norms, [x], rng=rng, mode=GRAD_MODE)
