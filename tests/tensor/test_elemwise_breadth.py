"""PyTensor's further elementwise functions (inverse trig and hyperbolic, rounding, special
functions, logaddexp, isclose...) checked against numpy, and scipy.special where it is installed.

Each check compiles ONE function with every case as an output, under the C linker, and compares
it with the reference and with the py linker (the ops' numpy ``perform``). The expected output
dtypes are spelled out here from PyTensor's rules. The tables (UNARY, BINARY, unary_ref,
binary_ref) are also the GPU tier's oracle for these ops (tests/cuda/test_cuda_elemwise.py).
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function, grad
from ffigraph.gradient import verify_grad

C, PY = Mode(linker="c"), Mode(linker="py")


def upgrade_to_float(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return dtype.name
    return "float32" if dtype.kind == "b" or dtype.itemsize <= 2 else "float64"


def expected_dtype(rule, dtypes):
    promoted = np.result_type(*[np.dtype(d) for d in dtypes]).name
    return upgrade_to_float(promoted) if rule == "float" else promoted   # "float" or "same"


def _scipy(name, *lead):
    """scipy.special.<name> (with leading arguments), imported when called: the comparisons that need
    it skip where scipy is missing (PyPy)."""
    def ref(x):
        special = pytest.importorskip("scipy.special")
        return getattr(special, name)(*(lead + (x,)))
    return ref


def _gammaln(x):
    # C99's lgamma: +inf at the poles and at -inf (scipy gives -inf there)
    def one(v):
        try:
            return math.lgamma(v)
        except (ValueError, OverflowError):
            return math.inf
    return np.vectorize(one, otypes=[np.float64])(x) if x.size else np.empty(x.shape)


def _round_half_away_exact(x):
    """C's round(): |x| rounded half up, computed in Python's exact integer arithmetic."""
    def one(v):
        if not math.isfinite(v):
            return v
        f = Fraction(abs(v))
        n = math.floor(f + Fraction(1, 2))
        return math.copysign(float(n), v)
    return np.vectorize(one, otypes=[x.dtype])(x) if x.size else x.copy()


def _xlogx_ref(x):
    # Theano's XlogX: the limit 0 at x = 0
    return np.where(x == 0, 0, x * np.log(x))


def _xlogy0_ref(x, y):
    # Theano's XlogY0: 0 wherever x is 0, whatever y
    return np.where(x == 0, 0, x * np.log(y))


# name -> (ffigraph function, reference, accepted kinds, dtype rule); scipy-only references skip
# without scipy
UNARY = {
    "xlogx": (T.xlogx.xlogx, _xlogx_ref, "biuf", "float"),
    "arcsin": (T.arcsin, np.arcsin, "biuf", "float"),
    "arccos": (T.arccos, np.arccos, "biuf", "float"),
    "arctan": (T.arctan, np.arctan, "biuf", "float"),
    "sinh": (T.sinh, np.sinh, "biuf", "float"),
    "cosh": (T.cosh, np.cosh, "biuf", "float"),
    "arcsinh": (T.arcsinh, np.arcsinh, "biuf", "float"),
    "arccosh": (T.arccosh, np.arccosh, "biuf", "float"),
    "arctanh": (T.arctanh, np.arctanh, "biuf", "float"),
    "reciprocal": (T.reciprocal, np.reciprocal, "biuf", "float"),
    "exp2": (T.exp2, np.exp2, "biuf", "float"),
    "deg2rad": (T.deg2rad, np.deg2rad, "biuf", "float"),
    "rad2deg": (T.rad2deg, np.rad2deg, "biuf", "float"),
    "trunc": (T.trunc, np.trunc, "biuf", "float"),
    "round_half_to_even": (T.round_half_to_even, np.rint, "f", "same"),
    "round_half_away_from_zero": (T.round_half_away_from_zero, _round_half_away_exact, "f", "same"),
    "erfc": (T.erfc, _scipy("erfc"), "biuf", "float"),
    "erfinv": (T.erfinv, _scipy("erfinv"), "biuf", "float"),
    "gammaln": (T.gammaln, _gammaln, "biuf", "float"),
    "psi": (T.psi, _scipy("psi"), "biuf", "float"),
    "tri_gamma": (T.tri_gamma, _scipy("polygamma", 1), "biuf", "float"),
}

BINARY = {
    "arctan2": (T.arctan2, np.arctan2, "biuf", "float"),
    "hypot": (T.hypot, np.hypot, "biuf", "float"),
    "logaddexp": (T.logaddexp, np.logaddexp, "biuf", "float"),
    "xlogy0": (T.xlogx.xlogy0, _xlogy0_ref, "biuf", "float"),
}


def unary_ref(name, dtype):
    _, ref, _, rule = UNARY[name]
    out = expected_dtype(rule, [dtype])

    def run(x):
        with np.errstate(all="ignore"):
            return np.asarray(ref(np.asarray(x).astype(out))).astype(out)
    return run, out


def binary_ref(name, da, db):
    _, ref, _, rule = BINARY[name]
    out = expected_dtype(rule, [da, db])

    def run(a, b):
        with np.errstate(all="ignore"):
            return np.asarray(ref(np.asarray(a).astype(out), np.asarray(b).astype(out))).astype(out)
    return run, out


SCIPY_ONLY = {"erfc", "erfinv", "psi", "tri_gamma"}

PUBLIC = ["arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
          "reciprocal", "power", "trunc", "exp2", "deg2rad", "rad2deg", "hypot", "logaddexp", "gammaln", "psi",
          "digamma", "erfc", "erfinv", "round_half_to_even", "round_half_away_from_zero", "isclose", "allclose",
          "conj"]


def test_names_are_public():
    for name in PUBLIC:
        assert name in T.__all__, name
        assert callable(getattr(T, name)), name
    assert T.digamma is T.psi and T.power is T.pow


# ------------------------------------------------------------------ values

EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.5, -3.0, -3.5, 1e-8, 0.999999, -0.999999, 30.0,
         -30.0, 1e-300, 0.49999999999999994, np.nan, np.inf, -np.inf]


def _values(dtype, rng):
    """Edges and random values of ``dtype`` (a 1-d array)."""
    if np.dtype(dtype).kind == "b":
        return np.array([True, False, True, False, True])
    if np.dtype(dtype).kind in "iu":
        low = 0 if np.dtype(dtype).kind == "u" else -9
        return np.concatenate([[0, 1, 2, 7], rng.integers(low, 10, size=8)]).astype(dtype)
    with np.errstate(all="ignore"):
        return np.concatenate([np.array(EDGES), rng.uniform(-4, 4, 12), rng.uniform(-1, 1, 8)]).astype(dtype)


def _tolerance(dtype):
    return (2e-6, 1e-6) if np.dtype(dtype).name == "float32" else (1e-13, 1e-14)


def _compare(got, want, dtype, label):
    assert got.dtype == np.dtype(dtype), "%s: dtype %s, expected %s" % (label, got.dtype, dtype)
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (label, got.shape, want.shape)
    rtol, atol = _tolerance(dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=label)


def _run_both(inputs, outputs, values):
    """The outputs under the C linker and under the py linker, which must agree."""
    got_c = function(inputs, outputs, mode=C, on_unused_input="ignore")(*values)
    got_py = function(inputs, outputs, mode=PY, on_unused_input="ignore")(*values)
    for k, (c, p) in enumerate(zip(got_c, got_py)):
        assert c.dtype == p.dtype and c.shape == p.shape, k
        if c.dtype.kind == "f":
            rtol, atol = _tolerance(c.dtype)
            np.testing.assert_allclose(c, p, rtol=rtol, atol=atol, equal_nan=True, err_msg=str(outputs[k]))
        else:
            np.testing.assert_array_equal(c, p)
    return got_c


UNARY_DTYPES = ["float64", "float32", "int8", "int32", "uint16", "bool"]


def _unary_cases():
    """(name, dtype) of every unary op on every dtype of UNARY_DTYPES it accepts."""
    return [(name, dt) for name in sorted(UNARY) for dt in UNARY_DTYPES if np.dtype(dt).kind in UNARY[name][2]]


def test_unary_ops_match_numpy_and_perform():
    """Every unary op on every accepted dtype: 1-d edges and random values, a reversed view, an empty
    and a 0-d input, all outputs of one function per linker."""
    rng = np.random.default_rng(0)
    cases = _unary_cases()
    syms, outs, values = [], [], []
    for name, dt in cases:
        x = _values(dt, rng)
        for k, v in enumerate([x, x[::-1], x[:0], x[3]]):
            sym = T.tensor(dt, (None,) * np.ndim(v), name="%s_%s_%d" % (name, dt, k))
            out = UNARY[name][0](sym)
            assert out.dtype == unary_ref(name, dt)[1], (name, dt)
            syms.append(sym)
            outs.append(out)
            values.append(np.asarray(v))
    got = _run_both(syms, outs, values)
    for (name, dt), k in zip([c for c in cases for _ in range(4)], range(len(outs))):
        ref, out_dtype = unary_ref(name, dt)
        try:
            want = ref(values[k])
        except pytest.skip.Exception:   # no scipy (PyPy): C against perform only, above
            continue
        if name == "gammaln" or name in SCIPY_ONLY:
            # libm's lgamma against Python's own; scipy's psi loses digits next to the poles
            rtol = 1e-12 if out_dtype == "float64" else 2e-6
            x = values[k].astype("float64")
            with np.errstate(invalid="ignore"):
                    far = ~((x < 0) & (np.abs(x - np.rint(x)) < 1e-3)) if name in ("psi", "tri_gamma") else True
            np.testing.assert_allclose(np.where(far, got[k], 0), np.where(far, want, 0), rtol=rtol, atol=rtol,
                                       equal_nan=True, err_msg=name)
            continue
        _compare(got[k], want, out_dtype, "%s on %s (%d)" % (name, dt, k))


BINARY_PAIRS = [("float64", "float64"), ("float32", "float32"), ("int32", "float32"), ("int8", "int16"),
                ("bool", "uint8")]


def test_binary_ops_match_numpy_and_perform():
    """arctan2, hypot, logaddexp on mixed dtypes, every pairing of edge values (infinities and NaN
    among them), broadcast (n, 1) against (m,), reversed and empty inputs, in one function per linker."""
    rng = np.random.default_rng(1)
    syms, outs, values, refs = [], [], [], []
    for name in sorted(BINARY):
        for da, db in BINARY_PAIRS:
            a, b = _values(da, rng), _values(db, rng)
            for va, vb in [(a[:, None], b), (a[::-1][:, None], b[::-1]), (a[:0], b[:0]), (a[1], b[2])]:
                sa = T.tensor(da, (None,) * np.ndim(va))
                sb = T.tensor(db, (None,) * np.ndim(vb))
                out = BINARY[name][0](sa, sb)
                ref, out_dtype = binary_ref(name, da, db)
                assert out.dtype == out_dtype, (name, da, db)
                syms += [sa, sb]
                outs.append(out)
                values += [np.asarray(va), np.asarray(vb)]
                refs.append((ref, out_dtype, "%s(%s, %s)" % (name, da, db)))
    got = _run_both(syms, outs, values)
    for k, (ref, out_dtype, label) in enumerate(refs):
        _compare(got[k], ref(values[2 * k], values[2 * k + 1]), out_dtype, label)


def test_domain_edges():
    """Poles and the ends of domains, exactly: arccosh(1), arctanh(+-1), erfinv(+-1) and beyond,
    psi at 0 and the negative integers, gammaln of negative non-integers, logaddexp of infinities,
    round half away from zero and to even on halves, trunc."""
    x = T.dvector("x")
    outs = [T.arccosh(x), T.arctanh(x), T.erfinv(x), T.psi(x), T.gammaln(x), T.tri_gamma(x),
            T.round_half_away_from_zero(x), T.round_half_to_even(x), T.trunc(x)]
    f_c = function([x], outs, mode=C)
    f_py = function([x], outs, mode=PY)
    v = np.array([1.0, -1.0, 1.5, -1.5, 0.0, -0.0, -1.0, -2.0, -2.5, -0.5, 2.5, 0.5, np.nan])
    inf, nan = np.inf, np.nan
    for got in (f_c(v), f_py(v)):
        acosh, atanh, erfinv, psi, gammaln, trigamma, away, even, trunc = got
        np.testing.assert_array_equal(acosh[:4], [0.0, nan, np.arccosh(1.5), nan])
        np.testing.assert_array_equal(atanh[:2], [inf, -inf])
        assert np.isnan(atanh[2:4]).all()
        np.testing.assert_array_equal(erfinv[:6], [inf, -inf, nan, nan, 0.0, -0.0])
        assert np.signbit(erfinv[5])
        np.testing.assert_array_equal(psi[4:8], [-inf, inf, nan, nan])
        # (the values of mpmath)
        np.testing.assert_allclose(psi[8:10], [1.103156640645243, 0.03648997397857652], rtol=1e-14)
        np.testing.assert_allclose(gammaln[8:10], [-0.05624371649767403, 1.2655121234846454], rtol=1e-13)
        np.testing.assert_array_equal(gammaln[4:8], [inf, inf, inf, inf])
        np.testing.assert_array_equal(trigamma[4:8], [inf, inf, inf, inf])
        np.testing.assert_allclose(trigamma[8:10], [9.539246644989124, 8.934802200544679], rtol=1e-14)
        np.testing.assert_array_equal(away[8:12], [-3.0, -1.0, 3.0, 1.0])
        np.testing.assert_array_equal(even[8:12], [-2.0, -0.0, 2.0, 0.0])
        np.testing.assert_array_equal(trunc[:4], [1.0, -1.0, 1.0, -1.0])
        assert all(np.isnan(out[-1]) for out in got)


def test_round_half_away_from_zero_next_to_halves():
    """0.49999999999999994 (the double below 1/2) rounds to 0, where floor(x + 0.5) gives 1."""
    x = T.dvector()
    v = np.array([0.49999999999999994, -0.49999999999999994, 2.5000000000000004, 4503599627370495.5, -0.3])
    want = np.array([0.0, -0.0, 3.0, 4503599627370496.0, -0.0])
    for mode in (C, PY):
        got = function([x], T.round_half_away_from_zero(x), mode=mode)(v)
        np.testing.assert_array_equal(got, want)
        assert np.signbit(got[[1, 4]]).all()


def test_special_functions_against_scipy_on_a_grid():
    """psi, trigamma, erfinv, erfc and gammaln over wide grids, float64 and float32, against scipy."""
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(2)
    grid = np.concatenate([rng.uniform(-20, 20, 400), np.logspace(-8, 3, 60), [1.4616321449683622]])
    grid = grid[np.abs(grid - np.rint(grid)) > 1e-3]   # scipy itself is inaccurate right next to the poles
    inner = np.concatenate([rng.uniform(-1, 1, 300), 1 - np.logspace(-15, -1, 30), -1 + np.logspace(-15, -1, 30)])
    for dt, rtol in (("float64", 1e-12), ("float32", 2e-6)):
        x, y = T.tensor(dt, (None,)), T.tensor(dt, (None,))
        f = function([x, y], [T.psi(x), T.tri_gamma(x), T.gammaln(x), T.erfc(x), T.erfinv(y)], mode=C)
        g, u = grid.astype(dt), inner.astype(dt)
        got = f(g, u)
        gd, ud = g.astype("float64"), u.astype("float64")
        wants = [special.psi(gd), special.polygamma(1, gd), special.gammaln(gd), special.erfc(gd), special.erfinv(ud)]
        for name, a, w in zip(["psi", "tri_gamma", "gammaln", "erfc", "erfinv"], got, wants):
            assert a.dtype == dt
            np.testing.assert_allclose(a, w.astype(dt), rtol=rtol, atol=rtol, err_msg="%s %s" % (name, dt))


# ------------------------------------------------------------------ built from other ops


def test_isclose_and_allclose_follow_numpy():
    a_vals = np.array([1e10, 1e-7, 1e-8, 1.0, np.nan, np.inf, np.inf, -np.inf, 1.0, np.nan, 0.0, 5.0])
    b_vals = np.array([1.00001e10, 1e-8, 1e-9, 1.0, np.nan, np.inf, -np.inf, -np.inf, np.inf, 1.0, 1e-9, 5.00001])
    ints_a, ints_b = np.array([0, 255, 3], dtype="uint8"), np.array([1, 0, 3], dtype="uint8")
    a, b = T.dvector(), T.dvector()
    fa, fb = T.fvector(), T.fvector()
    ia, ib = T.tensor("uint8", (None,)), T.tensor("uint8", (None,))
    outs = [T.isclose(a, b), T.isclose(a, b, equal_nan=True), T.isclose(a, b, rtol=0, atol=0),
            T.isclose(a, b, rtol=1e-3, atol=1e-3), T.isclose(fa, fb), T.isclose(ia, ib, atol=1),
            T.allclose(a[:4], b[:4]), T.allclose(a, b), T.allclose(a[4:6], b[4:6], equal_nan=True),
            T.isclose(a[:, None], b)]
    for out in outs[:6] + outs[9:]:
        assert out.dtype == "bool"
    assert outs[6].dtype == "bool" and outs[6].ndim == 0
    args = [a_vals, b_vals, a_vals.astype("float32"), b_vals.astype("float32"), ints_a, ints_b]
    got = _run_both([a, b, fa, fb, ia, ib], outs, args)
    want = [np.isclose(a_vals, b_vals), np.isclose(a_vals, b_vals, equal_nan=True),
            np.isclose(a_vals, b_vals, rtol=0, atol=0), np.isclose(a_vals, b_vals, rtol=1e-3, atol=1e-3),
            np.isclose(args[2], args[3]), np.isclose(ints_a, ints_b, atol=1),
            np.allclose(a_vals[:4], b_vals[:4]), np.allclose(a_vals, b_vals),
            np.allclose(a_vals[4:6], b_vals[4:6], equal_nan=True), np.isclose(a_vals[:, None], b_vals)]
    assert got[0][:3].tolist() == [True, False, True]   # PyTensor's docstring examples
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=str(k))


def test_conj_power_digamma_logaddexp_forms():
    x, y = T.dvector(), T.dvector()
    assert T.conj(x) is x
    z = T.tensor("complex128", (None,))
    assert T.conj(z).dtype == "complex128"
    zv = np.array([1 + 2j, -3j])
    np.testing.assert_array_equal(function([z], T.conj(z), mode=PY)(zv), np.conj(zv))
    i8 = T.tensor("int8", (None,))
    assert T.logaddexp(i8).dtype == "float32"
    outs = [T.power(x, y), T.digamma(x), T.logaddexp(x, y, x), T.logaddexp(x)]
    xv, yv = np.array([0.5, 2.0, 3.0]), np.array([2.0, -1.0, 0.5])
    got = _run_both([x, y], outs, [xv, yv])
    np.testing.assert_allclose(got[0], xv ** yv)
    np.testing.assert_allclose(got[2], np.log(2 * np.exp(xv) + np.exp(yv)), rtol=1e-14)
    np.testing.assert_array_equal(got[3], xv)


def test_dtype_rules():
    """PyTensor's: upgrade_to_float (int8, uint16 and bool give float32, wider ints float64); the
    rounding ops take floats only."""
    b, i8, u16, i32, f32 = (T.tensor(d, (None,)) for d in ("bool", "int8", "uint16", "int32", "float32"))
    assert T.arcsin(i8).dtype == T.reciprocal(b).dtype == T.trunc(u16).dtype == "float32"
    assert T.gammaln(i32).dtype == T.psi(i32).dtype == T.erfinv(i32).dtype == "float64"
    assert T.arctan2(i8, f32).dtype == "float32" and T.hypot(i32, f32).dtype == "float64"
    assert T.logaddexp(f32, f32).dtype == "float32"
    assert T.round_half_to_even(f32).dtype == T.round_half_away_from_zero(f32).dtype == "float32"
    for fn in (T.round_half_to_even, T.round_half_away_from_zero):
        with pytest.raises(TypeError, match="int32"):
            fn(i32)
    c128 = T.tensor("complex128", (None,))
    for build in (T.erfinv, T.gammaln, T.psi, lambda v: T.arctan2(v, v), lambda v: T.hypot(v, v)):
        with pytest.raises(TypeError):
            build(c128)


# ------------------------------------------------------------------ gradients

def _point(low, high, seed, shape=(3, 2)):
    return [np.random.default_rng(seed).uniform(low, high, shape)]


@pytest.mark.parametrize("fun,low,high", [
    (lambda x: T.arcsin(x) + 2 * T.arccos(x) + 3 * T.arctanh(x) + T.erfinv(x), -0.8, 0.8),
    (lambda x: T.arctan(x) + 2 * T.sinh(x) + 3 * T.cosh(x) + T.arcsinh(x) + T.erfc(x) + T.exp2(x), -2, 2),
    (lambda x: T.arccosh(x) + 2 * T.reciprocal(x) + T.gammaln(x) + 3 * T.psi(x) + T.deg2rad(x)
     + 5 * T.rad2deg(x), 1.5, 4),
], ids=["inverse_trig", "hyperbolic_exp2_erfc", "gamma_family"])
def test_unary_gradients(fun, low, high):
    verify_grad(fun, _point(low, high, 3), mode=C)


def test_binary_gradients_and_zero_gradient_rounding():
    def fun(x, y):
        return T.arctan2(x, y) + 2 * T.hypot(x, y) + 3 * T.logaddexp(x, y) + T.trunc(x) \
            + T.round_half_to_even(y) + T.round_half_away_from_zero(x)
    point = [np.random.default_rng(4).uniform(0.2, 0.45, (3, 2)) + np.arange(6).reshape(3, 2),
             np.random.default_rng(5).uniform(-2.4, -2.1, (3, 2))]
    verify_grad(fun, point, mode=C)
    x = T.dvector()
    g = function([x], grad(T.sum(T.trunc(x) + T.round_half_to_even(x)), x), mode=C)(np.array([0.3, 1.7]))
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_tri_gamma_gradient_is_polygamma_2():
    # (checked against mpmath in tests/scalar/test_special_functions.py)
    x = T.dvector()
    g = function([x], grad(T.sum(T.tri_gamma(x)), x), mode=C)(np.array([1.0]))
    np.testing.assert_allclose(g, [-2.4041138063191885], rtol=1e-14)   # -2 zeta(3)
