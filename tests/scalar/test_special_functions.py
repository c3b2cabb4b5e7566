"""gamma, j0, j1, i0, i1, erfcx, erfcinv, log1mexp and betaln against mpmath at 40 digits (the
oracle: scipy 1.17 is itself off by 1e-12 on betaln(10, 1e5), and gives NaN or an early overflow
at some of the edges below), under the C and Python linkers.

One compiled function per linker takes every function over float64 edge values: 0 and -0, the
poles, tiny, huge, negative, NaN and the infinities; the float32 and integer inputs, the empty and
0-d ones go through a second one. Gradients: verify_grad, and the limits at 0 by hand.
"""
import math

import mpmath
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.gradient import verify_grad

LINKERS = {"c": Mode(linker="c"), "py": Mode(linker="py")}
mpmath.mp.dps = 40

INF, NAN = math.inf, math.nan
UNARY = {
    "gamma": (lambda x: mpmath.gamma(x),
              [0.5, 1.0, 2.5, 10.0, 170.5, 171.7, 1e-300, -0.5, -2.5, -170.5, -180.5, 1e-8]),
    "j0": (lambda x: mpmath.besselj(0, x), [0.0, 0.5, 2.404825557695773, 5.5, -7.25, 30.0, 1e5, 1e-12]),
    "j1": (lambda x: mpmath.besselj(1, x), [0.0, -0.0, 0.5, 3.5, -7.25, 30.0, 1e5, 1e-12]),
    "i0": (lambda x: mpmath.besseli(0, x), [0.0, 0.5, -3.5, 19.9, 20.0, 20.1, 100.0, -700.0, 1e-12]),
    "i1": (lambda x: mpmath.besseli(1, x), [0.0, -0.0, 0.5, -3.5, 19.9, 20.0, 20.1, 100.0, -700.0, 1e-12]),
    # (past 1e10, the series' first two terms: mpmath's erfc refuses such arguments)
    "erfcx": (lambda x: mpmath.exp(x * x) * mpmath.erfc(x) if x < 1e10 else
              (1 - 1 / (2 * mpmath.mpf(x) ** 2)) / (x * mpmath.sqrt(mpmath.pi)),
              [0.0, 0.5, -3.0, 5.0, 24.9, 25.0, 26.0, 1e4, 1e300, -26.0, 1e-12]),
    "erfcinv": (lambda y: _erfinv_of_one_minus(y),
                [1.0, 0.5, 0.3, 1e-10, 1e-300, 5e-324, 1.5, 1.9999999999, 2 - 2 ** -52, 0.9999]),
    "log1mexp": (lambda x: mpmath.log(1 - mpmath.exp(x)), [-1e-20, -0.1, -0.693, -0.7, -5.0, -50.0, -800.0]),
}
# (input, expected) where the oracle has no finite value, or where scipy and numpy agree on a convention
EDGES = {
    "gamma": [(0.0, INF), (-0.0, -INF), (-1.0, NAN), (-4.0, NAN), (INF, INF), (-INF, NAN), (NAN, NAN), (172.0, INF)],
    "j0": [(INF, 0.0), (-INF, 0.0), (NAN, NAN)],
    "j1": [(INF, 0.0), (-INF, 0.0), (NAN, NAN)],
    "i0": [(INF, INF), (-INF, INF), (NAN, NAN), (714.0, INF)],
    "i1": [(INF, INF), (-INF, -INF), (NAN, NAN), (-714.0, -INF)],
    "erfcx": [(INF, 0.0), (-INF, INF), (NAN, NAN), (-27.0, INF)],
    "erfcinv": [(0.0, INF), (2.0, -INF), (-0.1, NAN), (2.1, NAN), (NAN, NAN)],
    "log1mexp": [(0.0, -INF), (-INF, 0.0), (0.5, NAN), (NAN, NAN)],
}
BETALN = [((0.5, 0.5), None), ((1.0, 1.0), None), ((2.0, 3.0), None), ((7.9, 8.1), None), ((10.0, 1e5), None),
          ((1e5, 10.0), None), ((0.3, 1e10), None), ((1e8, 1e9), None), ((50.0, 50.0), None), ((1e-300, 1.0), None),
          ((-0.5, 2.0), None), ((0.0, 1.0), INF), ((1.0, 0.0), INF), ((3.0, INF), -INF), ((NAN, 1.0), NAN)]


def _erfinv_of_one_minus(y):
    if not 0 <= y <= 2:
        return mpmath.nan
    with mpmath.workdps(400):   # 1 - y keeps every digit of y, down to 5e-324
        return +mpmath.erfinv(1 - mpmath.mpf(y))


def _polygamma_oracle(n, x):
    """mpmath's polygamma at 250 digits (at 40, its sum for negative arguments loses every digit
    at the half-integers for large n), with scipy's conventions at the poles."""
    if n < 0 or n != math.floor(n):
        return NAN
    if n == 0 and (math.isinf(x) or x == 0 or (x < 0 and x == math.floor(x))):   # psi's (scipy's)
        return math.copysign(INF, -x) if x == 0 else (INF if x == INF else NAN)
    if x == -INF or x == 0 or (x < 0 and x == math.floor(x)):
        return INF if n % 2 else -INF
    if x == INF:
        return 0.0 if n % 2 else -0.0
    with mpmath.workdps(250):
        return float(mpmath.polygamma(int(n), mpmath.mpf(x)))


def _incomplete_gamma_oracle(a, x, upper):
    """mpmath's regularized incomplete gamma functions, with scipy's values at the edges."""
    if a < 0 or x < 0 or (a == 0 and x == 0):
        return NAN
    if a == 0 or math.isinf(x):
        return 0.0 if upper else 1.0
    if x == 0 or math.isinf(a):
        return 1.0 if upper else 0.0
    a, x = mpmath.mpf(a), mpmath.mpf(x)
    return float(mpmath.gammainc(a, x, mpmath.inf, regularized=True) if upper
                 else mpmath.gammainc(a, 0, x, regularized=True))


def _oracle(name, x):
    """mpmath's value at the double ``x`` (made an mpf first, so that x * x is exact)."""
    if name in ("gammainc", "gammaincc"):
        return _incomplete_gamma_oracle(*x, name == "gammaincc")
    if name == "polygamma":
        return _polygamma_oracle(*x)
    if name == "betaln":
        a, b = x
        return float(mpmath.log(abs(mpmath.beta(mpmath.mpf(a), mpmath.mpf(b)))))
    return float(UNARY[name][0](mpmath.mpf(x)))


def _value(name, *args):
    """The oracle at doubles ``args``, with the conventions of EDGES where mpmath has none."""
    if any(math.isnan(a) for a in args):
        return NAN
    for edge, want in EDGES.get(name, []):
        if (edge,) == args:
            return want
    if name == "betaln":
        for pair, want in BETALN:
            if pair == args and want is not None:
                return want
    try:
        return _oracle(name, args if name in BINARY_NAMES else args[0])
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):   # (TypeError: a complex value)
        return NAN


def numpy_reference(name, dtype):
    """(a function of arrays giving op ``name``'s value for ``dtype`` inputs, its output dtype): the
    GPU tier's oracle (tests/cuda/test_cuda_elemwise.py). Integers and bools of up to 16 bits give
    float32, the others float64 (PyTensor's upgrade_to_float)."""
    dt = np.dtype(dtype)
    out = dt.name if dt.kind == "f" else ("float32" if dt.kind == "b" or dt.itemsize <= 2 else "float64")

    def run(*arrays):
        arrays = [np.asarray(a).astype(out).astype(np.float64) for a in arrays]
        one = np.vectorize(lambda *v: _value(name, *[float(t) for t in v]), otypes=[np.float64])
        return one(*arrays).astype(out)
    return run, out


BINARY_NAMES = ("betaln", "polygamma", "gammainc", "gammaincc")
SPECIAL_NAMES = list(UNARY) + list(BINARY_NAMES)


@pytest.fixture(scope="module", params=sorted(LINKERS))
def compiled(request):
    x, a, b = T.dvector("x"), T.dvector("a"), T.dvector("b")
    f = function([x, a, b], [getattr(T, name)(x) for name in UNARY] + [T.betaln(a, b)], mode=LINKERS[request.param])
    return f


def _close(got, want, name, x):
    if math.isnan(want):
        assert math.isnan(got), (name, x, got)
    elif math.isinf(want) or want == 0:   # (a zero's sign: the odd functions' below)
        assert got == want, (name, x, got, want)
    else:
        # j0 and j1 near their zeros: an absolute error of a few ulp of their scale (about 1)
        tol = 4e-15 * max(abs(want), 1.0 if name in ("j0", "j1") else 0.0) + 4e-15 * abs(want)
        assert abs(got - want) <= tol, (name, x, got, want, abs(got - want) / abs(want))


def test_float64_values_match_mpmath(compiled):
    columns = [[v for v in points] + [e[0] for e in EDGES[name]] for name, (_, points) in UNARY.items()]
    width = max(len(c) for c in columns + [BETALN])
    # one input vector per function would need one function per length: pad each to the longest
    padded = [c + [c[0]] * (width - len(c)) for c in columns]
    pairs = [p for p, _ in BETALN] + [BETALN[0][0]] * (width - len(BETALN))
    outs = []
    for k, name in enumerate(UNARY):
        x = np.array(padded[k])
        outs.append(compiled(x, np.ones(width), np.ones(width))[k])
    betaln = compiled(np.ones(width), np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))[-1]
    for k, (name, (_, points)) in enumerate(UNARY.items()):
        wants = [_oracle(name, v) for v in points] + [e[1] for e in EDGES[name]]
        for x, got, want in zip(padded[k], outs[k], wants):
            _close(float(got), want, name, x)
    # the odd ones keep the sign of zero
    assert math.copysign(1, outs[list(UNARY).index("j1")][1]) == -1 and \
        math.copysign(1, outs[list(UNARY).index("i1")][1]) == -1
    for (pair, want), got in zip(BETALN, betaln):
        _close(float(got), _oracle("betaln", pair) if want is None else want, "betaln", pair)


def test_scipy_agrees_where_it_is_accurate():
    """scipy.special, where its values are within a few ulp of mpmath's (not betaln's large
    arguments, nor the edges above where it gives NaN), gives what ffigraph gives."""
    special = pytest.importorskip("scipy.special")
    x = np.linspace(-6, 6, 49)
    pos = np.linspace(0.05, 1.95, 39)
    v, a, b = T.dvector("v"), T.dvector("a"), T.dvector("b")
    f = function([v, a, b], [T.gamma(v), T.j0(v), T.j1(v), T.i0(v), T.i1(v), T.erfcx(v), T.erfcinv(a),
                             T.log1mexp(-T.abs(v) - 1e-3), T.betaln(a, b)], mode=LINKERS["c"])
    got = f(x, pos, pos[::-1] * 3)
    want = [special.gamma(x), special.j0(x), special.j1(x), special.i0(x), special.i1(x), special.erfcx(x),
            special.erfcinv(pos), np.log(-np.expm1(-np.abs(x) - 1e-3)), special.betaln(pos, pos[::-1] * 3)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-14, atol=1e-15)


@pytest.mark.parametrize("linker", sorted(LINKERS))
def test_dtypes_empty_and_0d(linker):
    """float32 computes in double and rounds once; int8 (and bool) give float32, int64 float64, as
    every float function does (PyTensor's upgrade_to_float); empty and 0-d inputs keep their shape."""
    f32, i8, i64, e, s = T.fvector("f32"), T.bvector("i8"), T.lvector("i64"), T.dmatrix("e"), T.dscalar("s")
    outs = [T.gamma(f32), T.i1(f32), T.erfcx(f32), T.erfcinv(f32), T.betaln(f32, f32), T.gamma(i8), T.j0(i64),
            T.log1mexp(e), T.betaln(e, e), T.i0(s)]
    f = function([f32, i8, i64, e, s], outs, mode=LINKERS[linker])
    x32 = np.array([0.5, 3.25, 1.5], np.float32)
    got = f(x32, np.array([1, 4], np.int8), np.array([0, 3], np.int64), np.zeros((0, 3)), 2.0)
    assert [g.dtype.name for g in got] == ["float32"] * 6 + ["float64"] * 4
    x64 = x32.astype(np.float64)
    for g, name in zip(got[:4], ["gamma", "i1", "erfcx", "erfcinv"]):
        np.testing.assert_array_equal(g, np.array([_oracle(name, v) for v in x64], np.float32))
    np.testing.assert_array_equal(got[4], np.array([_oracle("betaln", (v, v)) for v in x64], np.float32))
    np.testing.assert_array_equal(got[5], np.array([1.0, 6.0], np.float32))
    np.testing.assert_allclose(got[6], [1.0, _oracle("j0", 3.0)], rtol=1e-15)
    assert got[7].shape == got[8].shape == (0, 3) and got[9].shape == ()
    np.testing.assert_allclose(got[9], _oracle("i0", 2.0), rtol=1e-15)


def test_gradients_at_zero_and_by_hand():
    """d/dx j1 and i1 at 0 are 1/2 (their limit; the general form divides by x); every gradient's
    closed form at a few points, against mpmath's numerical derivative (40 digits)."""
    points = {"gamma": [0.7, -1.3, 4.5], "j0": [0.0, 0.7, -1.3], "j1": [0.0, 0.7, -1.3], "i0": [0.0, 0.7, -1.3],
              "i1": [0.0, 0.7, -1.3], "erfcx": [0.0, 0.7, -1.3], "erfcinv": [0.3, 1.0, 1.6],
              "log1mexp": [-0.1, -0.7, -5.0]}
    xs = {name: T.dvector(name) for name in points}
    a, b = T.dvector("a"), T.dvector("b")
    grads = [T.grad(getattr(T, name)(v).sum(), v) for name, v in xs.items()] + list(T.grad(T.betaln(a, b).sum(), [a, b]))
    f = function(list(xs.values()) + [a, b], grads, mode=LINKERS["c"])
    av, bv = [0.5, 2.0, 30.0], [3.0, 2.0, 0.25]
    got = f(*[np.array(p) for p in points.values()], np.array(av), np.array(bv))
    assert got[2][0] == 0.5 and got[4][0] == 0.5   # j1, i1 at 0
    for k, (name, at) in enumerate(points.items()):
        for v, g in zip(at, got[k]):
            want = float(mpmath.diff(UNARY[name][0], mpmath.mpf(v)))
            assert abs(g - want) <= 1e-13 * max(abs(want), 1.0), (name, v, g, want)
    for k, (ai, bi) in enumerate(zip(av, bv)):
        da = float(mpmath.diff(lambda t: mpmath.log(mpmath.beta(t, bi)), ai))
        db = float(mpmath.diff(lambda t: mpmath.log(mpmath.beta(ai, t)), bi))
        assert abs(got[-2][k] - da) <= 1e-13 * max(1.0, abs(da)), ("a", ai, bi, got[-2][k], da)
        assert abs(got[-1][k] - db) <= 1e-13 * max(1.0, abs(db)), ("b", ai, bi, got[-1][k], db)


def test_polygamma_against_mpmath():
    """polygamma(n, x) for orders 0 to 100 over positive, negative (reflected: the half-integers
    too, where scipy loses every digit for large even n) and tiny arguments, the poles, the
    infinities and negative orders; its gradient in x is polygamma(n + 1, x)
    (tri_gamma's is polygamma(2, x)), checked against mpmath's derivative."""
    orders = [0, 1, 2, 3, 4, 7, 8, 30, 100]
    xs = [0.5, 2.0, 1e-5, 7.25, 9.1356, 44.0, 1e10, -0.5, -2.5, -25.5, -3.7, -0.999, -70.3, -1e-300, 0.0, -1.0,
          -4.0, INF, -INF, NAN]
    n, x = T.lvector("n"), T.dvector("x")
    pairs = [(k, v) for k in orders for v in xs] + [(-1, 2.0), (171, 1.0), (172, 1.0)]
    nv, xv = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    for linker, mode in LINKERS.items():
        got = function([n, x], T.polygamma(n, x), mode=mode)(nv, xv)
        for (k, v), g in zip(pairs, got):
            want = _value("polygamma", k, v)
            if math.isnan(want) or math.isinf(want) or want == 0:
                assert g == want or (math.isnan(g) and math.isnan(want)), (linker, k, v, g, want)
            else:
                assert abs(g - want) <= 4e-14 * abs(want), (linker, k, v, g, want, abs(g - want) / abs(want))
    # past order 170 n! overflows: -inf or inf for x > 0 (as the true value), NaN for x < 0 (the
    # reflection's polynomial overflows; the documented limit)
    assert np.isnan(function([n, x], T.polygamma(n, x), mode=LINKERS["c"])([172], [-0.5])[0])
    with pytest.raises(TypeError, match="order"):   # PyTensor's rule: the order is an integer
        T.polygamma(x, x)
    # gradients: d/dx polygamma(n, x) and tri_gamma's, at a few points of each sign
    order = T.lscalar("order")
    g_poly = T.grad(T.polygamma(order, x).sum(), x)
    g_tri = T.grad(T.tri_gamma(x).sum(), x)
    points = np.array([0.3, 2.5, -1.7])
    f = function([order, x], [g_poly, g_tri], mode=LINKERS["c"])
    for k in (0, 2):
        dpoly, dtri = f(k, points)
        for v, d1, d2 in zip(points, dpoly, dtri):
            want = float(mpmath.diff(lambda t: mpmath.polygamma(k, t), mpmath.mpf(v)))
            assert abs(d1 - want) <= 1e-13 * abs(want), (k, v, d1, want)
            want_tri = float(mpmath.diff(lambda t: mpmath.polygamma(1, t), mpmath.mpf(v)))
            assert abs(d2 - want_tri) <= 1e-13 * abs(want_tri), (v, d2, want_tri)


def test_incomplete_gamma_against_mpmath():
    """gammainc and gammaincc (regularized: P and Q) over small, moderate and huge shapes, the
    arguments around each (Q straight from the continued fraction beyond a + 1, and without 1 - P's
    cancellation for a < 1 below it), and the edges; gammau and gammal; the gradient in x."""
    shapes = [1e-10, 1e-5, 0.01, 0.5, 1.0, 1.7, 7.9, 8.0, 15.0, 100.0, 1e4]
    args = [1e-300, 1e-3, 0.5, 0.9, 1.0, 2.0, 7.0, 8.5, 14.0, 16.0, 95.0, 105.0, 950.0, 1e4 - 300, 1e4, 1e4 + 50]
    pairs = [(k, v) for k in shapes for v in args]
    edges = [(0.0, 1.0), (0.0, 0.0), (1.0, 0.0), (1.0, INF), (INF, 1.0), (-1.0, 1.0), (1.0, -1.0), (0.5, NAN)]
    a, x = T.dvector("a"), T.dvector("x")
    av = np.array([p[0] for p in pairs + edges])
    xv = np.array([p[1] for p in pairs + edges])
    for linker, mode in LINKERS.items():
        lower, upper = function([a, x], [T.gammainc(a, x), T.gammaincc(a, x)], mode=mode)(av, xv)
        for name, got in (("gammainc", lower), ("gammaincc", upper)):
            for (k, v), g in zip(pairs + edges, got):
                want = _value(name, k, v)
                if math.isnan(want) or want in (0.0, 1.0) and (k, v) in edges:
                    assert g == want or (math.isnan(g) and math.isnan(want)), (linker, name, k, v, g, want)
                elif want > 1e-290:
                    assert abs(g - want) <= 2e-13 * want, (linker, name, k, v, g, want, abs(g - want) / want)
    k, v = T.dscalar("k"), T.dscalar("v")
    upper_full, lower_full = function([k, v], [T.gammau(k, v), T.gammal(k, v)])(2.5, 1.5)
    assert abs(upper_full - float(mpmath.gammainc(2.5, 1.5))) <= 1e-14 * upper_full
    assert abs(lower_full - float(mpmath.gammainc(2.5, 0, 1.5))) <= 1e-14 * lower_full
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) = -d/dx Q(a, x); a's gradient is not implemented
    n = T.lscalar("n")
    gp, gq = T.grad(T.gammainc(n, x).sum(), x), T.grad(T.gammaincc(n, x).sum(), x)
    dp, dq = function([n, x], [gp, gq], mode=LINKERS["c"])(3, np.array([0.5, 2.0, 9.0]))
    for point, d1, d2 in zip([0.5, 2.0, 9.0], dp, dq):
        want = float(mpmath.diff(lambda t: mpmath.gammainc(3, 0, t, regularized=True), point))
        assert abs(d1 - want) <= 1e-13 * want and abs(d2 + want) <= 1e-13 * want, (point, d1, d2, want)
    with pytest.raises(NotImplementedError, match="with respect to a"):
        T.grad(T.gammainc(a, x).sum(), a)


@pytest.mark.finite_differences
def test_verify_grad():
    rng = np.random.default_rng(4)
    pos = rng.uniform(0.3, 3.0, (2, 3))
    verify_grad(lambda t: T.gamma(t) + T.j0(t) + T.j1(t) + T.i0(t) + T.i1(t) + T.erfcx(t), [pos], rng=rng,
                mode=LINKERS["c"])
    verify_grad(lambda t: T.erfcinv(t / 4) + T.log1mexp(-t), [pos], rng=rng, mode=LINKERS["c"])
    verify_grad(lambda s, t: T.betaln(s, t), [pos, pos[::-1] + 1], rng=rng, mode=LINKERS["c"])


def test_c_and_python_agree_on_awkward_values():
    """Every function over the same awkward doubles (subnormals, the ends of each method's range,
    overflow, infinities, NaN): no exception in Python, the same values from C (the C helpers and
    ffigraph.scalar.special are the same steps)."""
    values = np.array([0.0, -0.0, 1e-320, -1e-320, 1e-300, 1.0, -1.0, 0.3, 1.5, 2.0, 8.0, 19.999, 20.0, 24.999,
                       25.0, -26.7, -27.0, 171.7, 172.0, 700.0, 713.0, 714.0, 1e300, -1e300, INF, -INF, NAN])
    a, b = (v.ravel() for v in np.meshgrid(values, values))
    x, p, q = T.dvector("x"), T.dvector("p"), T.dvector("q")
    orders = np.array([0, 1, 2, 5, 30, 171, -1])
    n = T.lvector("n")
    m, y = (v.ravel() for v in np.meshgrid(orders, values))
    outs = [getattr(T, name)(x) for name in UNARY] + [T.betaln(p, q), T.polygamma(n, q[:len(y)]), T.gammainc(p, q),
                                                     T.gammaincc(p, q)]
    got = {linker: function([x, p, q, n], outs, mode=mode)(values, a, np.concatenate([y, b[len(y):]]), m)
           for linker, mode in LINKERS.items()}
    for name, c, py in zip(SPECIAL_NAMES, got["c"], got["py"]):
        np.testing.assert_allclose(c, py, rtol=4e-16, atol=0, equal_nan=True, err_msg=name)
