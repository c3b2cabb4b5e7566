"""C helpers of the special functions (gamma, Bessel, scaled and inverse complementary error
functions, log1mexp, betaln), in double precision; float32 values go through them and are rounded
once at the end (c_table). ffigraph.scalar.special mirrors each in Python, step for step, so
``perform`` and the C code agree to the last bit or two.

Each helper is pasted into a library only where a node calls it (``helper_code``), with its own
include guard, after the helpers it calls.
"""
from __future__ import annotations

# name -> (the C function, the helpers it calls, its text)
_HELPERS = {}


def _helper(name, calls, text):
    _HELPERS[name] = (calls, text.strip("\n") + "\n")


_helper("ffg_square_parts_f64", (), r"""
/* x * x as hi + lo exactly (Dekker's product: x split in two 26-bit halves), so that exp(x * x)
 * can be taken as exp(hi) (1 + lo) without the rounding of x * x, which exp would scale by x^2. */
static double ffg_square_parts_f64(double x, double *lo)
{
    const double c = 134217729.0 * x;   /* 2^27 + 1 */
    const double xh = c - (c - x), xl = x - xh, hi = x * x;
    *lo = ((xh * xh - hi) + 2 * xh * xl) + xl * xl;
    return hi;
}
""")

_helper("ffg_gamma_f64", (), r"""
/* Gamma(x): +inf at +0, -inf at -0, NaN at the negative integers and at -inf (scipy.special.gamma's
 * values, spelled out rather than left to the libm's tgamma), overflow to +-inf past the range. */
static double ffg_gamma_f64(double x)
{
    if (x == 0)
        return copysign(INFINITY, x);
    if (x < 0 && x == floor(x))
        return NAN;
    return tgamma(x);
}
""")

_helper("ffg_j0_f64", (), r"""
/* The Bessel functions of the first kind of orders 0 and 1 (the libm's j0, j1), 0 at +-inf, their
 * limit (scipy 1.17's Cephes routines give NaN there). */
static double ffg_j0_f64(double x)
{
    return isinf(x) ? 0.0 : j0(x);
}
static double ffg_j1_f64(double x)
{
    return isinf(x) ? 0.0 : j1(x);
}
""")

_helper("ffg_bessel_i_f64", (), r"""
/* The modified Bessel function I_nu(x) for nu = 0 or 1 and x >= 0. Up to x = 20, its power series
 * (x/2)^nu sum_k (x^2/4)^k / (k! (k + nu)!), whose terms are all positive (no cancellation); past
 * it, the asymptotic series e^x / sqrt(2 pi x) sum_k t_k, t_k = -t_(k-1) (4 nu^2 - (2k - 1)^2) / (8 x k),
 * summed until a term falls below 1e-17 of the sum (by k = 30 for x >= 20, well before the terms
 * turn to grow at k = 2x). e^x is taken as e^(x/2) twice, so that the result overflows only
 * where it is past the double range itself. */
static double ffg_bessel_i_f64(int nu, double x)
{
    double term = 1, sum = 1, half;
    int k;
    if (x <= 20) {
        const double q = 0.25 * x * x;
        for (k = 1; k < 200 && term > 1e-17 * sum; ++k) {
            term *= q / ((double)k * (double)(k + nu));
            sum += term;
        }
        return nu ? 0.5 * x * sum : sum;
    }
    if (isinf(x))
        return INFINITY;
    for (k = 1; k < 60; ++k) {
        const double odd = 2.0 * k - 1;
        term *= (odd * odd - 4.0 * nu * nu) / (8.0 * x * k);
        sum += term;
        if (fabs(term) < 1e-17 * sum)
            break;
    }
    half = exp(0.5 * x);
    return half * (half * sum / sqrt(6.283185307179586 * x));
}
""")

_helper("ffg_i0_f64", ("ffg_bessel_i_f64",), r"""
/* I0 (even) and I1 (odd); NaN stays NaN. */
static double ffg_i0_f64(double x)
{
    return isnan(x) ? x : ffg_bessel_i_f64(0, fabs(x));
}
static double ffg_i1_f64(double x)
{
    return isnan(x) ? x : copysign(ffg_bessel_i_f64(1, fabs(x)), x);
}
""")

_helper("ffg_erfcx_f64", ("ffg_square_parts_f64",), r"""
/* exp(x^2) erfc(x). Below x = 25, where erfc(x) is still a normal number, the product itself, with
 * exp(x^2) as exp(hi) (1 + lo) from the exact parts of x^2; from 25 on, the asymptotic series
 * 1 / (x sqrt(pi)) sum_n (-1)^n (2n - 1)!! / (2 x^2)^n, below 1e-17 after 7 terms. +inf below
 * -26.7 (the result is past the double range), 0 at +inf. */
static double ffg_erfcx_f64(double x)
{
    double lo, hi, term = 1, sum = 1, r;
    int n;
    if (x < -26.7)   /* 2 e^(x^2) and more: past the double range (-inf too) */
        return INFINITY;
    if (x < 25) {
        hi = ffg_square_parts_f64(x, &lo);
        return exp(hi) * (1 + lo) * erfc(x);
    }
    if (isinf(x))
        return 0.0;
    r = 1 / (2 * x * x);
    for (n = 1; n < 12; ++n) {
        term *= -(2.0 * n - 1) * r;
        sum += term;
    }
    return sum / (x * 1.7724538509055160);   /* sqrt(pi) */
}
""")

_helper("ffg_erfcinv_f64", ("ffg_erfcx_f64", "ffg_square_parts_f64", "ffg_erfinv_f64"), r"""
/* The inverse of erfc on [0, 2]: +inf at 0, -inf at 2, NaN outside. erfcinv(y) = -erfcinv(2 - y)
 * above 1 (2 - y is exact there) and erfinv(1 - y) on [0.5, 1] (exact too); below 0.5, x >= 0.48
 * with erfc(x) = y: Winitzki's approximation from w = log(y (2 - y)) (= log(1 - (1 - y)^2), kept
 * exact by never forming 1 - y), then Halley steps on erfc(x) - y taken through erfcx, so that
 * neither side underflows for the smallest y: (erfc(x) - y) / erfc'(x) = -(sqrt(pi) / 2)
 * (erfcx(x) - y e^(x^2)), with y e^(x^2) as exp(log(y) + hi) (1 + lo). */
static double ffg_erfcinv_f64(double y)
{
    double w, t, x, lo, hi, ratio;
    int step;
    if (!(y >= 0 && y <= 2))   /* NaN too */
        return NAN;
    if (y == 0)
        return INFINITY;
    if (y > 1)
        return -ffg_erfcinv_f64(2 - y);
    if (y >= 0.5)
        return ffg_erfinv_f64(1 - y);
    w = log(y * (2 - y));
    t = 2 / (3.141592653589793 * 0.147) + w / 2;
    x = sqrt(sqrt(t * t - w / 0.147) - t);
    for (step = 0; step < 3; ++step) {
        hi = ffg_square_parts_f64(x, &lo);
        ratio = -0.88622692545275801 * (ffg_erfcx_f64(x) - exp(log(y) + hi) * (1 + lo));   /* f / f' */
        x -= ratio / (1 + x * ratio);
    }
    return x;
}
""")

_helper("ffg_log1mexp_f64", (), r"""
/* log(1 - e^x) for x <= 0: log(-expm1(x)) above -log 2, log1p(-e^x) below (each keeps its digits
 * where the other loses them); -inf at 0, NaN above. */
static double ffg_log1mexp_f64(double x)
{
    return x > -0.69314718055994531 ? log(-expm1(x)) : log1p(-exp(x));
}
""")

_helper("ffg_betaln_f64", (), r"""
/* lgamma(x) - ((x - 1/2) log x - x + log(2 pi) / 2) for x >= 8: Stirling's series to x^-13 (its
 * next term, below 1e-15 at x = 8). */
static double ffg_stirling_correction_f64(double x)
{
    const double z = 1 / (x * x);
    return (1 / 12.0 - z * (1 / 360.0 - z * (1 / 1260.0 - z * (1 / 1680.0 - z * (1 / 1188.0 - z * (
        691 / 360360.0 - z / 156.0)))))) / x;
}

/* log|B(a, b)| = log|Gamma(a) Gamma(b) / Gamma(a + b)|, as scipy.special.betaln. With a <= b, both
 * positive: lgamma's sum while b < 8; else Stirling's form, whose large terms cancel in closed form
 * (log1p of the ratios) instead of in lgamma's values: lgamma(a) - (b - 1/2) log1p(a / b)
 * - a log(a + b) + a + the corrections, or with a >= 8 too, log(2 pi) / 2 - log(b) / 2
 * - (a - 1/2) log1p(b / a) - b log1p(a / b) + the corrections. +inf where a or b is 0, -inf where
 * one is +inf; other non-positive values through lgamma's sum. */
static double ffg_betaln_f64(double a, double b)
{
    double c;
    if (isnan(a) || isnan(b))
        return a + b;
    if (a > b) {
        c = a;
        a = b;
        b = c;
    }
    if (a == 0 || b == 0)
        return INFINITY;
    if (a < 0 || b < 8)
        return lgamma(a) + lgamma(b) - lgamma(a + b);
    if (isinf(b))
        return -INFINITY;
    c = ffg_stirling_correction_f64(b) - ffg_stirling_correction_f64(a + b);
    if (a < 8)
        return lgamma(a) - (b - 0.5) * log1p(a / b) - a * log(a + b) + a + c;
    return 0.91893853320467274 - 0.5 * log(b) - (a - 0.5) * log1p(b / a) - b * log1p(a / b)
        + ffg_stirling_correction_f64(a) + c;
}
""")

# the op's name -> the C function its expression calls
FUNCTIONS = {"gamma": "ffg_gamma_f64", "j0": "ffg_j0_f64", "j1": "ffg_j1_f64", "i0": "ffg_i0_f64",
             "i1": "ffg_i1_f64", "erfcx": "ffg_erfcx_f64", "erfcinv": "ffg_erfcinv_f64",
             "log1mexp": "ffg_log1mexp_f64", "betaln": "ffg_betaln_f64"}
# the helper text that defines each function (j1 beside j0, i1 beside i0)
_DEFINED_IN = {"ffg_j1_f64": "ffg_j0_f64", "ffg_i1_f64": "ffg_i0_f64"}


# the base names of every helper here, for the CUDA backend's renaming to its __device__ twins
HELPER_BASES = ("square_parts", "gamma", "j0", "j1", "bessel_i", "i0", "i1", "erfcx", "erfcinv", "log1mexp",
                "stirling_correction", "betaln")


def helper_code(names):
    """The C helpers the ops ``names`` call, each after the ones it calls, each once (own guard).
    Helpers not defined here (c_table's ffg_erfinv_f64) come with c_table's support code."""
    order, seen = [], set()

    def visit(helper):
        helper = _DEFINED_IN.get(helper, helper)
        if helper in seen or helper not in _HELPERS:
            return
        seen.add(helper)
        for called in _HELPERS[helper][0]:
            visit(called)
        order.append(helper)

    for name in names:
        if name in FUNCTIONS:
            visit(FUNCTIONS[name])
    parts = []
    for helper in order:
        guard = "FFG_HELPER_%s" % helper.upper()
        parts.append("#ifndef %s\n#define %s\n%s#endif\n" % (guard, guard, _HELPERS[helper][1]))
    return "".join(parts)
