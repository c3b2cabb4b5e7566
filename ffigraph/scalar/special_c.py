"""C helpers of the special functions (gamma, Bessel, scaled and inverse complementary error
functions, log1mexp, betaln, polygamma), in double precision; float32 values go through them and are rounded
once at the end (c_table). ffigraph.scalar.special mirrors each in Python, step for step, so
``perform`` and the C code agree to the last bit or two.

Each helper is pasted into a library only where a node calls it (``helper_code``), with its own
include guard, after the helpers it calls.
"""
from __future__ import annotations

from ffigraph.scalar import special   # (the zeta values of lgamma1p's series come from its mirror)

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

_helper("ffg_polygamma_f64", (), r"""
/* The Hurwitz zeta function sum_k (q + k)^-s for s > 1, q > 0: the terms summed directly while
 * they matter or until q + k is at least 10 and s (whichever comes last), then Euler-Maclaurin's
 * tail at w = q + k, w^(1-s) / (s - 1) + w^-s / 2 + sum_j B_2j / (2j)! s (s+1) ... (s+2j-2)
 * w^(-s-2j+1), to j = 12 ((2j)! / B_2j below); w >= s keeps the series converging. */
static double ffg_hurwitz_zeta_f64(double s, double q)
{
    const double factorial_over_bernoulli[12] = {   /* (not static: CUDA twins have no static locals) */
        12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
        -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
        1.8152105401943546773e17, -7.1661652561756670113e18};
    double sum = 0, w = q, term, rising = s, power;
    int j;
    while (w < 10 || w < s) {
        term = pow(w, -s);
        sum += term;
        w += 1;
        if (term <= sum * 1e-17)
            return sum;   /* (an infinite sum, too: q so small that q^-s overflows) */
    }
    power = pow(w, -s);
    sum += w * power / (s - 1) + 0.5 * power;
    power /= w;
    for (j = 0; j < 12; ++j) {
        term = rising * power / factorial_over_bernoulli[j];
        sum += term;
        if (fabs(term) <= fabs(sum) * 1e-17)
            break;
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2);
        power /= w * w;
    }
    return sum;
}

/* d^(k+1) / dx^(k+1) cot(pi x) / pi^(k+1) as a polynomial in c = cot(pi x): P_0 = c, and
 * P_(k+1) = -(1 + c^2) P_k'(c); evaluated for the reflection of polygamma below (n <= 170). */
static double ffg_cot_derivative_f64(int n, double c)
{
    double p[176], q[176], value = 0;
    int k, d;
    for (d = 0; d <= n + 1; ++d)
        p[d] = 0;
    p[1] = 1;
    for (k = 0; k < n; ++k) {
        for (d = 0; d <= n + 1; ++d)
            q[d] = 0;
        for (d = 1; d <= k + 1; ++d) {   /* -(1 + c^2) d p[d] c^(d-1) */
            q[d - 1] -= d * p[d];
            q[d + 1] -= d * p[d];
        }
        for (d = 0; d <= n + 1; ++d)
            p[d] = q[d];
    }
    for (d = n + 1; d >= 0; --d)
        value = value * c + p[d];
    return value;
}

/* polygamma(n, x), the n-th derivative of the digamma function, as scipy.special.polygamma: psi for
 * n = 0; (-1)^(n+1) n! zeta(n + 1, x) for x > 0; for x < 0 the reflection
 * psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)) (n <= 170; NaN above), which has
 * none of the cancellation of the zeta sum shifted to a positive argument (scipy's, off by
 * orders of magnitude at the negative half-integers for large even n).
 * +-inf at the poles (0 and the negative integers, and -inf), NaN where n is not a whole number
 * >= 0. */
static double ffg_polygamma_f64(double n, double x)
{
    const double pi = 3.141592653589793;
    double sign, s;
    if (isnan(n) || isnan(x))
        return n + x;
    if (n < 0 || n != floor(n))
        return NAN;
    if (n == 0)
        return ffg_psi_f64(x);
    sign = fmod(n, 2.0) == 0 ? -1 : 1;   /* (-1)^(n+1) */
    if (x == 0 || (x < 0 && x == floor(x)) || x == -INFINITY)
        return sign * INFINITY;
    if (x == INFINITY)
        return sign * 0.0;
    s = n + 1;
    if (x > 0)
        return sign * tgamma(s) * ffg_hurwitz_zeta_f64(s, x);
    if (n > 170)   /* n! overflows: so does the reflection's polynomial */
        return NAN;
    {
        /* cot(pi x) of the reduced argument t in [-1/2, 1/2] (cot has period 1): 1 / tan(pi t) near
         * the pole, tan(pi (1/2 - |t|)) with its sign elsewhere, where 1/2 - |t| is exact, so that
         * cot is 0 at the half-integers (an even n's P_n vanishes there, its huge slope with it) */
        const double t = x - rint(x), away = 0.5 - fabs(t);
        const double c = fabs(t) < 0.25 ? 1 / tan(pi * t) : copysign(tan(pi * away), t);
        return (fmod(n, 2.0) == 0 ? 1 : -1) * ffg_polygamma_f64(n, 1 - x) - pow(pi, s) * ffg_cot_derivative_f64((int)n, c);
    }
}
""")

_helper("ffg_gammainc_f64", ("ffg_betaln_f64",), r"""
/* lgamma(1 + a): for |a| < 0.2 the series -euler a + sum_k zeta(k) (-a)^k / k, k = 2..25 (1 + a
 * would round a's low digits away); lgamma elsewhere. */
static double ffg_lgamma1p_f64(double a)
{
    const double zeta[24] = {%(zeta)s};
    double total = 0, power = -a;
    int k;
    if (fabs(a) >= 0.2)
        return lgamma(1 + a);
    for (k = 2; k <= 25; ++k) {
        power *= -a;
        total += zeta[k - 2] * power / k;
    }
    return -0.57721566490153286 * a + total;
}

/* log(1 + t) - t, by its series for |t| < 0.1 (where the two would cancel). */
static double ffg_log1pmx_f64(double t)
{
    double total = 0, power = t, term;
    int k;
    if (fabs(t) >= 0.1)
        return log1p(t) - t;
    for (k = 2; k < 200; ++k) {
        power *= -t;
        term = power / k;
        total += term;
        if (fabs(term) <= fabs(total) * 1e-17)
            break;
    }
    return total;
}

/* log(x^a e^-x / Gamma(a)); for a >= 8 and x within [a/2, 2a], Stirling's form, whose large terms
 * cancel in log1pmx instead of in a log x - x - lgamma(a). */
static double ffg_gamma_log_prefactor_f64(double a, double x)
{
    if (a < 8 || x < 0.5 * a || x > 2 * a)
        return a * log(x) - x - lgamma(a);
    return a * ffg_log1pmx_f64((x - a) / a) - 0.5 * log(6.283185307179586 / a) - ffg_stirling_correction_f64(a);
}

/* The regularized incomplete gamma functions, as scipy.special's gammainc (P) and gammaincc (Q):
 * for x < a + 1, P by its series sum x^n / ((a + 1) ... (a + n)) and Q = 1 - P, or for a < 1,
 * Q = (1 - u) - u a sum_(n >= 1) (-x)^n / (n! (a + n)) with u = x^a / Gamma(1 + a) (no 1 - P
 * cancellation); for x >= a + 1, Q by Legendre's continued fraction (Lentz's method) and P = 1 - Q.
 * NaN where a < 0, x < 0 or both are 0; P = 1 where a = 0 < x, and the limits at 0 and infinity. */
static double ffg_incomplete_gamma_f64(double a, double x, int upper)
{
    double total, term, piece, log_u, b, c, d, h, an, step;
    int n;
    if (isnan(a) || isnan(x))
        return a + x;
    if (a < 0 || x < 0 || (a == 0 && x == 0))
        return NAN;
    if (a == 0 || isinf(x))
        return upper ? 0.0 : 1.0;
    if (x == 0 || isinf(a))
        return upper ? 1.0 : 0.0;
    if (x < a + 1) {
        if (upper && a < 1) {
            log_u = a * log(x) - ffg_lgamma1p_f64(a);
            total = 0;
            term = 1;
            for (n = 1; n < 100000; ++n) {
                term *= -x / n;
                piece = term / (a + n);
                total += piece;
                if (fabs(piece) <= fabs(total) * 1e-17)
                    break;
            }
            return -expm1(log_u) - exp(log_u) * a * total;
        }
        total = 1;
        term = 1;
        for (n = 1; n < 100000; ++n) {
            term *= x / (a + n);
            total += term;
            if (term <= total * 1e-17)
                break;
        }
        total *= exp(ffg_gamma_log_prefactor_f64(a, x)) / a;
        return upper ? 1 - total : total;
    }
    b = x + 1 - a;
    c = 1e300;
    d = b != 0 ? 1 / b : 1e300;
    h = d;
    for (n = 1; n < 100000; ++n) {
        an = -n * (n - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < 1e-300)
            d = 1e-300;
        c = b + an / c;
        if (fabs(c) < 1e-300)
            c = 1e-300;
        d = 1 / d;
        step = d * c;
        h *= step;
        if (fabs(step - 1) <= 1e-16)
            break;
    }
    h *= exp(ffg_gamma_log_prefactor_f64(a, x));
    return upper ? h : 1 - h;
}

static double ffg_gammainc_f64(double a, double x)
{
    return ffg_incomplete_gamma_f64(a, x, 0);
}

static double ffg_gammaincc_f64(double a, double x)
{
    return ffg_incomplete_gamma_f64(a, x, 1);
}
""" % {"zeta": ", ".join(repr(z) for z in special.ZETA_2_TO_25)})

# the op's name -> the C function its expression calls
FUNCTIONS = {"gamma": "ffg_gamma_f64", "j0": "ffg_j0_f64", "j1": "ffg_j1_f64", "i0": "ffg_i0_f64",
             "i1": "ffg_i1_f64", "erfcx": "ffg_erfcx_f64", "erfcinv": "ffg_erfcinv_f64",
             "log1mexp": "ffg_log1mexp_f64", "betaln": "ffg_betaln_f64", "polygamma": "ffg_polygamma_f64",
             "gammainc": "ffg_gammainc_f64", "gammaincc": "ffg_gammaincc_f64"}
# the helper text that defines each function (j1 beside j0, i1 beside i0)
_DEFINED_IN = {"ffg_j1_f64": "ffg_j0_f64", "ffg_i1_f64": "ffg_i0_f64", "ffg_gammaincc_f64": "ffg_gammainc_f64"}


# the base names of every helper here, for the CUDA backend's renaming to its __device__ twins
HELPER_BASES = ("square_parts", "gamma", "j0", "j1", "bessel_i", "i0", "i1", "erfcx", "erfcinv", "log1mexp",
                "stirling_correction", "betaln", "hurwitz_zeta", "cot_derivative", "polygamma", "lgamma1p", "log1pmx",
                "gamma_log_prefactor", "incomplete_gamma", "gammainc", "gammaincc")


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
