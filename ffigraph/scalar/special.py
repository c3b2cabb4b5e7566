"""The special functions of special_c.py in Python, step for step (``perform``'s reference).

Each is a function of Python floats (C doubles): ``gamma``, ``j0``, ``j1``, ``i0``, ``i1``,
``erfcx``, ``erfcinv``, ``log1mexp``, ``betaln`` and ``polygamma``. They call the C library's own tgamma, j0, j1,
lgamma and erfc (through cffi), as the C code does (Python's math.gamma and math.lgamma are other
algorithms, a few ulp away), and repeat the C code's arithmetic around them. Their comments are in
special_c.py.
"""
from __future__ import annotations

import math

import cffi

_libm_ffi = cffi.FFI()
_libm_ffi.cdef("double j0(double); double j1(double); double tgamma(double); double lgamma(double); "
               "double erfc(double);")


def _open_libm():
    """The C math library by its usual file names (ctypes.util.find_library would run ldconfig in a
    subprocess at import), else the process's own symbols, which hold it where Python links it."""
    for name in ("libm.so.6", "libm.dylib", "libm.so"):
        try:
            return _libm_ffi.dlopen(name)
        except OSError:
            continue
    return _libm_ffi.dlopen(None)


_libm = _open_libm()

_SQRT_PI = 1.7724538509055160
_TWO_PI = 6.283185307179586


def _square_parts(x):
    c = 134217729.0 * x
    xh = c - (c - x)
    xl = x - xh
    hi = x * x
    return hi, ((xh * xh - hi) + 2 * xh * xl) + xl * xl


def gamma(x):
    if x == 0:
        return math.copysign(math.inf, x)
    if x < 0 and (math.isinf(x) or x == math.floor(x)):
        return math.nan
    return _libm.tgamma(x)


def j0(x):
    return 0.0 if math.isinf(x) else _libm.j0(x)


def j1(x):
    return 0.0 if math.isinf(x) else _libm.j1(x)


def _bessel_i(nu, x):
    term = total = 1.0
    if x <= 20:
        q = 0.25 * x * x
        k = 1
        while k < 200 and term > 1e-17 * total:
            term *= q / (float(k) * float(k + nu))
            total += term
            k += 1
        return 0.5 * x * total if nu else total
    if math.isinf(x):
        return math.inf
    for k in range(1, 60):
        odd = 2.0 * k - 1
        term *= (odd * odd - 4.0 * nu * nu) / (8.0 * x * k)
        total += term
        if abs(term) < 1e-17 * total:
            break
    half = _exp(0.5 * x)
    return half * (half * total / math.sqrt(_TWO_PI * x))


def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def i0(x):
    return x if math.isnan(x) else _bessel_i(0, abs(x))


def i1(x):
    return x if math.isnan(x) else math.copysign(_bessel_i(1, abs(x)), x)


def erfcx(x):
    if x < -26.7:
        return math.inf
    if x < 25:
        hi, lo = _square_parts(x)
        return _exp(hi) * (1 + lo) * _libm.erfc(x)
    if math.isinf(x):
        return 0.0
    r = 1 / (2 * x * x)
    term = total = 1.0
    for n in range(1, 12):
        term *= -(2.0 * n - 1) * r
        total += term
    return total / (x * _SQRT_PI)


def erfcinv(y, erfinv):
    """``erfinv``: the scalar erfinv the C helper calls on [0.5, 1] (ffigraph.scalar.basic's)."""
    if not 0 <= y <= 2:
        return math.nan
    if y == 0:
        return math.inf
    if y > 1:
        return -erfcinv(2 - y, erfinv)
    if y >= 0.5:
        return erfinv(1 - y)
    w = math.log(y * (2 - y))
    t = 2 / (math.pi * 0.147) + w / 2
    x = math.sqrt(math.sqrt(t * t - w / 0.147) - t)
    for _ in range(3):
        hi, lo = _square_parts(x)
        ratio = -0.88622692545275801 * (erfcx(x) - _exp(math.log(y) + hi) * (1 + lo))
        x -= ratio / (1 + x * ratio)
    return x


def log1mexp(x):
    if math.isnan(x):
        return x
    if x > 0:   # 1 - e^x < 0 (math.expm1 would raise past its range)
        return math.nan
    if x > -0.69314718055994531:
        inner = -math.expm1(x)
        return math.log(inner) if inner > 0 else (-math.inf if inner == 0 else math.nan)
    return math.log1p(-math.exp(x))


def _stirling_correction(x):
    z = 1 / (x * x)
    return (1 / 12.0 - z * (1 / 360.0 - z * (1 / 1260.0 - z * (1 / 1680.0 - z * (1 / 1188.0 - z * (
        691 / 360360.0 - z / 156.0)))))) / x


def _lgamma(x):
    return _libm.lgamma(x)


def betaln(a, b):
    if math.isnan(a) or math.isnan(b):
        return a + b
    if a > b:
        a, b = b, a
    if a == 0 or b == 0:
        return math.inf
    if a < 0 or b < 8:
        total = _lgamma(a) + _lgamma(b)
        rest = _lgamma(a + b)
        return math.nan if math.isinf(total) and math.isinf(rest) else total - rest
    if math.isinf(b):
        return -math.inf
    c = _stirling_correction(b) - _stirling_correction(a + b)
    if a < 8:
        return _lgamma(a) - (b - 0.5) * math.log1p(a / b) - a * math.log(a + b) + a + c
    return 0.91893853320467274 - 0.5 * math.log(b) - (a - 0.5) * math.log1p(b / a) - b * math.log1p(a / b) \
        + _stirling_correction(a) + c


_FACTORIAL_OVER_BERNOULLI = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
                             -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
                             1.8152105401943546773e17, -7.1661652561756670113e18)


def _pow(x, y):
    """C's pow: inf for a zero base and a negative exponent, no exception."""
    try:
        return math.pow(x, y)
    except (OverflowError, ValueError):
        if x == 0:
            return math.copysign(math.inf, x) if y == math.floor(y) and math.fmod(-y, 2) == 1 else math.inf
        return math.inf if abs(x) > 1 or (y < 0 and abs(x) < 1) else 0.0


def hurwitz_zeta(s, q):
    total, w, rising = 0.0, q, s
    while w < 10 or w < s:
        term = _pow(w, -s)
        total += term
        w += 1
        if term <= total * 1e-17:
            return total
    power = _pow(w, -s)
    total += w * power / (s - 1) + 0.5 * power
    power /= w
    for j in range(12):
        term = rising * power / _FACTORIAL_OVER_BERNOULLI[j]
        total += term
        if abs(term) <= abs(total) * 1e-17:
            break
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2)
        power /= w * w
    return total


def _cot_derivative(n, c):
    p = [0.0] * (n + 2)
    p[1] = 1.0
    for k in range(n):
        q = [0.0] * (n + 2)
        for d in range(1, k + 2):
            q[d - 1] -= d * p[d]
            q[d + 1] -= d * p[d]
        p = q
    value = 0.0
    for d in range(n + 1, -1, -1):
        value = value * c + p[d]
    return value


def _times(a, b):
    """a * b with C's rules for 0 * inf (NaN) and overflow (inf)."""
    try:
        return a * b
    except OverflowError:
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def polygamma(n, x, psi):
    if math.isnan(n) or math.isnan(x):
        return n + x
    if n < 0 or n != math.floor(n):
        return math.nan
    if n == 0:
        return psi(x)
    sign = -1.0 if math.fmod(n, 2) == 0 else 1.0
    if x == 0 or x == -math.inf or (x < 0 and x == math.floor(x)):
        return sign * math.inf
    if x == math.inf:
        return sign * 0.0
    s = n + 1
    if x > 0:
        return _times(sign * _libm.tgamma(s), hurwitz_zeta(s, x))
    if n > 170:
        return math.nan
    t = x - float(_rint(x))
    away = 0.5 - abs(t)
    c = 1 / math.tan(math.pi * t) if abs(t) < 0.25 else math.copysign(math.tan(math.pi * away), t)
    return (1.0 if math.fmod(n, 2) == 0 else -1.0) * polygamma(n, 1 - x, psi) \
        - _pow(math.pi, s) * _cot_derivative(int(n), c)


def _rint(x):
    """C's rint: to the nearest integer, halves to even (Python's round, for a float)."""
    return round(x)


# ---- the regularized incomplete gamma functions P(a, x) (gammainc) and Q(a, x) (gammaincc)

# zeta(2), ..., zeta(25): lgamma(1 + a) = -euler a + sum_k (-1)^k zeta(k) a^k / k for |a| < 1
ZETA_2_TO_25 = tuple(hurwitz_zeta(float(k), 1.0) for k in range(2, 26))
_EULER = 0.57721566490153286


def lgamma1p(a):
    if abs(a) >= 0.2:
        return _libm.lgamma(1 + a)
    total, power = 0.0, -a
    for k, zeta in enumerate(ZETA_2_TO_25, start=2):
        power *= -a   # (-a)^k
        total += zeta * power / k
    return -_EULER * a + total


def log1pmx(t):
    """log(1 + t) - t, without the cancellation of the two for small t."""
    if abs(t) >= 0.1:
        return math.log1p(t) - t
    total, power, k = 0.0, t, 2
    while True:
        power *= -t
        term = power / k
        total += term
        if abs(term) <= abs(total) * 1e-17:
            return total
        k += 1


def _log_prefactor(a, x):
    """log(x^a e^-x / Gamma(a)); for a >= 8 through Stirling's form, whose large terms cancel in
    log1pmx instead of in the values of a log x, x and lgamma(a) (where x is near a: elsewhere
    the value is tiny, or a small, and the direct form is exact enough)."""
    if a < 8 or not 0.5 * a <= x <= 2 * a:
        return a * math.log(x) - x - _libm.lgamma(a)
    return a * log1pmx((x - a) / a) - 0.5 * math.log(_TWO_PI / a) - _stirling_correction(a)


def _lower_series(a, x):
    """sum_n x^n / ((a + 1) ... (a + n)), n >= 0."""
    total, term, n = 1.0, 1.0, 1
    while n < 100000:
        term *= x / (a + n)
        total += term
        if term <= total * 1e-17:
            break
        n += 1
    return total


def _upper_fraction(a, x):
    """Q(a, x) e^x x^-a Gamma(a): Legendre's continued fraction, evaluated by Lentz's method."""
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b if b != 0 else 1 / tiny
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        h *= step
        if abs(step - 1) <= 1e-16:
            break
    return h


def _small_a_upper(a, x):
    """Q(a, x) for a < 1 and x < a + 1, without 1 - P's cancellation: with u = x^a / Gamma(1 + a),
    Q = (1 - u) - u a sum_(n >= 1) (-x)^n / (n! (a + n)), 1 - u as -expm1."""
    log_u = a * math.log(x) - lgamma1p(a)
    total, term, n = 0.0, 1.0, 1
    while n < 100000:
        term *= -x / n
        piece = term / (a + n)
        total += piece
        if abs(piece) <= abs(total) * 1e-17:
            break
        n += 1
    return -math.expm1(log_u) - math.exp(log_u) * a * total


def _incomplete_gamma(a, x, upper):
    if math.isnan(a) or math.isnan(x):
        return a + x
    if a < 0 or x < 0 or (a == 0 and x == 0):
        return math.nan
    if a == 0:
        return 0.0 if upper else 1.0
    if x == 0:
        return 1.0 if upper else 0.0
    if math.isinf(x):
        return 0.0 if upper else 1.0
    if math.isinf(a):
        return 1.0 if upper else 0.0
    if x < a + 1:
        p = math.exp(_log_prefactor(a, x)) / a * _lower_series(a, x)
        if not upper:
            return p
        return _small_a_upper(a, x) if a < 1 else 1 - p
    q = math.exp(_log_prefactor(a, x)) * _upper_fraction(a, x)
    return q if upper else 1 - q


def gammainc(a, x):
    return _incomplete_gamma(a, x, False)


def gammaincc(a, x):
    return _incomplete_gamma(a, x, True)
