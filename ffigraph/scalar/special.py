"""The special functions of special_c.py in Python, step for step (``perform``'s reference).

Each is a function of Python floats (C doubles): ``gamma``, ``j0``, ``j1``, ``i0``, ``i1``,
``erfcx``, ``erfcinv``, ``log1mexp`` and ``betaln``. They call the C library's own tgamma, j0, j1,
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
