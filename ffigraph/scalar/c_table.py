"""The C side of the scalar table: one C expression per elementwise op and dtype kind.

``c_expression(op, compute_dtype, operands)`` returns the expression (and an
optional per-element check) for operands that are already C locals of the
op's compute type. Semantics follow numpy: NaN-propagating maximum/minimum,
floor division and modulo with the divisor's sign, integer division by zero
giving 0, round half to even, and bool arithmetic as logic.
"""
from __future__ import annotations

import math

import numpy as np

from ffigraph.abi import c_element_type
from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.scalar import special_c

# float math from <math.h>; float32 uses the 'f' variants
_MATH = {"exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2",
         "log10": "log10", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
         "erf": "erf", "floor": "floor", "ceil": "ceil", "round": "rint",
         "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh",
         "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "exp2": "exp2", "trunc": "trunc",
         "round_half_to_even": "rint", "round_half_away_from_zero": "round", "erfc": "erfc",
         "gammaln": "lgamma"}
_MATH2 = {"arctan2": "atan2", "hypot": "hypot"}

# float functions with no <math.h> version: double-precision helpers (support_code); float32
# values go through the double one and are rounded once at the end
_SPECIAL = {"psi": "ffg_psi_f64", "tri_gamma": "ffg_trigamma_f64", "erfinv": "ffg_erfinv_f64",
            **special_c.FUNCTIONS}

# the ops whose expressions call helper functions: their nodes need support_code(compute dtype)
HELPER_OPS = ("int_div", "mod", "pow", "sigmoid", "softplus") + tuple(_SPECIAL)

_INTEGRAL_IDENTITY = ("floor", "ceil", "round")

_BINARY_C = {"eq": "==", "neq": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
             "and": "&", "or": "|", "xor": "^"}

_SUFFIX = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
           "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
           "float32": "f32", "float64": "f64", "bool": "u8"}


def suffix(dtype):
    return _SUFFIX[np.dtype(dtype).name]


def _fn(name, dtype):
    return name + "f" if np.dtype(dtype).name == "float32" else name


def _float_literal(value, dtype):
    """``value`` rounded to ``dtype``, as a C literal of that type (shortest round-trip digits)."""
    if np.dtype(dtype).name == "float32":
        return repr(float(np.float32(value))) + "f"
    return repr(float(value))


def c_expression(name, dtype, ops):
    """(expression, check) for scalar op ``name`` computed in ``dtype`` on C operands ``ops``.

    ``check`` is None or a C condition that, when true, makes the element an error
    (its message is the third item).
    """
    dt = np.dtype(dtype)
    kind = dt.kind
    if kind == "c":
        raise MethodNotDefined("no C code for %s on complex values yet (it runs in Python)" % name)
    a = ops[0] if ops else None
    b = ops[1] if len(ops) > 1 else None
    sfx = suffix(dt)
    if name in _MATH:
        if kind in "biu" and name in _INTEGRAL_IDENTITY:
            return a, None
        return "%s(%s)" % (_fn(_MATH[name], dt), a), None
    if name in _MATH2:
        return "%s(%s, %s)" % (_fn(_MATH2[name], dt), a, b), None
    if name in _SPECIAL:
        call = "%s(%s)" % (_SPECIAL[name], ", ".join(ops))
        return ("((float)%s)" % call if dt.name == "float32" else call), None
    if name == "reciprocal":
        return "(1 / %s)" % a, None
    if name in ("deg2rad", "rad2deg"):
        factor = math.pi / 180 if name == "deg2rad" else 180 / math.pi
        return "(%s * %s)" % (a, _float_literal(factor, dt)), None
    if name in ("xlogx", "xlogy0"):
        # Theano's XlogX / XlogY0: 0 where x is 0 (whatever y is), x log y elsewhere
        return "(%s == 0 ? %s : %s * %s(%s))" % (a, _float_literal(0, dt), a, _fn("log", dt),
                                                a if name == "xlogx" else b), None
    if name == "logaddexp":
        # numpy's npy_logaddexp: equal values (infinities too) give a + log 2; otherwise the larger
        # plus log1p(exp(smaller - larger)); NaN (no comparison holds) gives a - b, a NaN
        log1p_exp = "%s(%s(%%s - %%s))" % (_fn("log1p", dt), _fn("exp", dt))
        return ("(%s == %s ? %s + %s : (%s > %s ? %s + %s : (%s < %s ? %s + %s : %s - %s)))"
                % (a, b, a, _float_literal(math.log(2), dt), a, b, a, log1p_exp % (b, a),
                   a, b, b, log1p_exp % (a, b), a, b)), None
    simple = {
        "neg": "(-%s)" % a,
        "sqr": "(%s * %s)" % (a, a),
        "sigmoid": "ffg_sigmoid_%s(%s)" % (sfx, a),
        "softplus": "ffg_softplus_%s(%s)" % (sfx, a),
        "isnan": "(isnan(%s) != 0)" % a if kind == "f" else "0",
        "isinf": "(isinf(%s) != 0)" % a if kind == "f" else "0",
        "true_div": "(%s / %s)" % (a, b),
        "switch": "(%s ? %s : %s)" % tuple(ops) if len(ops) == 3 else None,
    }
    if name in simple and simple[name] is not None:
        return simple[name], None
    if name in _BINARY_C:
        return "(%s %s %s)" % (a, _BINARY_C[name], b), None
    if name == "abs":
        if kind == "b":
            return a, None
        if kind == "u":
            return a, None
        return ("%s(%s)" % (_fn("fabs", dt), a) if kind == "f" else "(%s < 0 ? -%s : %s)" % (a, a, a)), None
    if name == "invert":
        return ("(!%s)" % a if kind == "b" else "(~%s)" % a), None
    if name == "sign":
        if kind == "f":
            return "(%s > 0 ? 1 : (%s < 0 ? -1 : (%s == 0 ? 0 : %s)))" % (a, a, a, a), None
        if kind == "u":
            return "(%s > 0)" % a, None
        return "((%s > 0) - (%s < 0))" % (a, a), None
    if name == "add":
        return ("(%s | %s)" % (a, b) if kind == "b" else "(%s + %s)" % (a, b)), None
    if name == "mul":
        return ("(%s & %s)" % (a, b) if kind == "b" else "(%s * %s)" % (a, b)), None
    if name == "sub":
        return "(%s - %s)" % (a, b), None
    if name in ("int_div", "mod"):
        return "ffg_%s_%s(%s, %s)" % ("floordiv" if name == "int_div" else "mod", sfx, a, b), None
    if name == "pow":
        if kind == "f":
            return "%s(%s, %s)" % (_fn("pow", dt), a, b), None
        check = None if kind == "u" else ("(%s < 0)" % b, "Integers to negative integer powers are not allowed")
        return "ffg_ipow_%s(%s, %s)" % (sfx, a, b), check
    if name in ("maximum", "minimum"):
        cmp = ">=" if name == "maximum" else "<="
        if kind == "f":
            return "((%s %s %s || %s != %s) ? %s : %s)" % (a, cmp, b, a, a, a, b), None
        return "((%s %s %s) ? %s : %s)" % (a, cmp, b, a, b), None
    if name == "clip":
        lo = c_expression("maximum", dtype, [a, ops[1]])[0]
        return c_expression("minimum", dtype, [lo, ops[2]])[0], None
    # the parts of a real value (complex ones have no C code): itself, zero, and 0 or pi
    if name == "real":
        return a, None
    if name == "imag":
        return "0", None
    if name == "angle" and kind == "f":
        return "%s(0, %s)" % (_fn("atan2", dt), a), None
    raise MethodNotDefined("no C expression for scalar op %s on %s" % (name, dt.name))


def c_cast(expr, src_dtype, dst_dtype, ctype):
    """C converting ``expr`` (of src_dtype) to ``dst_dtype`` (C type ``ctype``) as numpy's astype does."""
    src, dst = np.dtype(src_dtype), np.dtype(dst_dtype)
    if src.kind == "c" or dst.kind == "c":
        raise MethodNotDefined("no C casts involving complex values yet")
    if src == dst:
        return expr
    if dst.kind == "b":
        return "(%s != 0)" % expr
    return "(%s)(%s)" % (ctype, expr)


def _int_helpers(ctype, sfx, signed):
    """floor division, modulo and power for one integer type, as numpy computes them."""
    if signed:
        div = ("if (b == 0) return 0;\n    { %(t)s q = a / b; if ((a %% b != 0) && ((a < 0) != (b < 0))) q -= 1; return q; }"
               % dict(t=ctype))
        mod = ("if (b == 0) return 0;\n    { %(t)s r = a %% b; if (r != 0 && ((r < 0) != (b < 0))) r += b; return r; }"
               % dict(t=ctype))
    else:
        div = "return b == 0 ? 0 : a / b;"
        mod = "return b == 0 ? 0 : a % b;"
    return """static %(t)s ffg_floordiv_%(s)s(%(t)s a, %(t)s b)
{
    %(div)s
}
static %(t)s ffg_mod_%(s)s(%(t)s a, %(t)s b)
{
    %(mod)s
}
static %(t)s ffg_ipow_%(s)s(%(t)s base, %(t)s exp)
{
    %(t)s result = 1;
    while (exp > 0) {
        if (exp & 1)
            result = (%(t)s)(result * base);
        base = (%(t)s)(base * base);
        exp >>= 1;
    }
    return result;
}
""" % dict(t=ctype, s=sfx, div=div, mod=mod)


def _float_helpers(ctype, sfx, f):
    """floor division and modulo as numpy's divmod, and stable sigmoid/softplus."""
    return """static %(t)s ffg_divmod_%(s)s(%(t)s a, %(t)s b, %(t)s *modulus)
{
    %(t)s mod, div, floordiv;
    mod = fmod%(f)s(a, b);
    if (!b) {
        *modulus = mod;
        return a / b;
    }
    div = (a - mod) / b;
    if (mod) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1;
        }
    } else {
        mod = copysign%(f)s(0, b);
    }
    if (div) {
        floordiv = floor%(f)s(div);
        if (div - floordiv > 0.5)
            floordiv += 1;
    } else {
        floordiv = copysign%(f)s(0, a / b);
    }
    *modulus = mod;
    return floordiv;
}
static %(t)s ffg_floordiv_%(s)s(%(t)s a, %(t)s b)
{
    %(t)s mod;
    if (!b)
        return a / b;
    return ffg_divmod_%(s)s(a, b, &mod);
}
static %(t)s ffg_mod_%(s)s(%(t)s a, %(t)s b)
{
    %(t)s mod;
    if (!b)
        return fmod%(f)s(a, b);
    ffg_divmod_%(s)s(a, b, &mod);
    return mod;
}
static %(t)s ffg_sigmoid_%(s)s(%(t)s x)
{
    if (x >= 0)
        return 1 / (1 + exp%(f)s(-x));
    {
        %(t)s e = exp%(f)s(x);
        return e / (1 + e);
    }
}
static %(t)s ffg_softplus_%(s)s(%(t)s x)
{
    return (x > 0 ? x : 0) + log1p%(f)s(exp%(f)s(-fabs%(f)s(x)));
}
""" % dict(t=ctype, s=sfx, f=f)


# digamma, trigamma and the inverse error function in double precision (float32 rounds their
# result). Reflection for x < 0, a recurrence up to x >= 10, where the asymptotic series (Bernoulli
# numbers, to x^-14) is below 1e-16; poles as scipy.special (psi: -inf at +0, +inf at -0, NaN at
# the negative integers; trigamma: +inf). erfinv: Winitzki's approximation (relative error ~2e-3),
# then three Halley steps (cubic convergence) on erf(x) - y, on erfc(x) - (1 - y) once |y| >= 0.5
# so that the residual keeps its digits near +-1. ffigraph.scalar.basic mirrors them in Python.
_SPECIAL_HELPERS = """static double ffg_psi_f64(double x)
{
    double result = 0, z, series;
    if (x <= 0) {
        if (x == floor(x))   /* a pole */
            return x == 0 ? copysign(INFINITY, -x) : NAN;
        /* psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi: x - rint(x) keeps its digits near a pole */
        return ffg_psi_f64(1 - x) - 3.141592653589793 / tan(3.141592653589793 * (x - rint(x)));
    }
    while (x < 10) {
        result -= 1 / x;
        x += 1;
    }
    z = 1 / (x * x);
    series = z * (1 / 12.0 - z * (1 / 120.0 - z * (1 / 252.0 - z * (1 / 240.0 - z * (1 / 132.0 - z * (
        691 / 32760.0 - z / 12.0))))));
    return result + log(x) - 0.5 / x - series;
}
static double ffg_trigamma_f64(double x)
{
    double result = 0, z, series;
    if (x <= 0) {
        double s;
        if (x == floor(x))   /* a pole */
            return INFINITY;
        /* psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x) */
        s = sin(3.141592653589793 * (x - rint(x)));   /* sin^2 has period pi */
        return 3.141592653589793 * 3.141592653589793 / (s * s) - ffg_trigamma_f64(1 - x);
    }
    while (x < 10) {
        result += 1 / (x * x);
        x += 1;
    }
    z = 1 / (x * x);
    series = z * (1 / 6.0 - z * (1 / 30.0 - z * (1 / 42.0 - z * (1 / 30.0 - z * (5 / 66.0 - z * (
        691 / 2730.0 - z * 7 / 6.0))))));
    return result + 1 / x + 0.5 * z + series / x;
}
static double ffg_erfinv_f64(double y)
{
    double a, w, t, x;
    int step;
    if (!(y >= -1 && y <= 1))   /* NaN too */
        return NAN;
    if (y == 0)
        return y;
    a = fabs(y);
    if (a == 1)
        return copysign(INFINITY, y);
    w = a < 0.5 ? log1p(-y * y) : log((1 - a) * (1 + a));
    t = 2 / (3.141592653589793 * 0.147) + w / 2;
    x = sqrt(sqrt(t * t - w / 0.147) - t);
    for (step = 0; step < 3; ++step) {
        double f = a < 0.5 ? erf(x) - a : (1 - a) - erfc(x);
        double ratio = f / (1.1283791670955126 * exp(-x * x));   /* f / f' */
        x -= ratio / (1 + x * ratio);
    }
    return copysign(x, y);
}
"""


def support_code(dtype, names=None):
    """The helper functions the expressions for ``dtype`` may call: of the special functions of
    special_c.py, those of the ops ``names`` (None: all of them)."""
    dt = np.dtype(dtype)
    special = ""
    if dt.kind in "iu":
        code = _int_helpers(c_element_type(dt), suffix(dt), dt.kind == "i")
    elif dt.kind == "f":
        code = _float_helpers(c_element_type(dt), suffix(dt), "f" if dt.itemsize == 4 else "")
        special = _guarded("FFG_SCALAR_HELPERS_SPECIAL", _SPECIAL_HELPERS) + special_c.helper_code(
            special_c.FUNCTIONS if names is None else names)
    elif dt.kind == "b":
        code = _int_helpers("uint8_t", "u8", False)
    else:
        return ""
    return _guarded("FFG_SCALAR_HELPERS_%s" % suffix(dt).upper(), code) + special


def _guarded(guard, code):
    # several ops may paste the same helpers into one translation unit
    return "#ifndef %s\n#define %s\n%s#endif\n" % (guard, guard, code)
