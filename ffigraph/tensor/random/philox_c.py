"""Plain-C code of the random-variable ops (op.py): Philox4x32-10 and the samplers of philox.py.

The support code is philox.py written again in C, operation for operation: the same counter
layout, the same bit extraction, and the same IEEE double arithmetic in the same order (the
polynomial coefficients are printed from philox.py's tuples as exact hexadecimal literals). The
library is built with ``-ffp-contract=off`` so that no multiply-add is fused, and never with
``-ffast-math``; ``sqrt`` is correctly rounded everywhere. So a draw from C has the bits of the
draw from ``perform``.

Each node's code: read the state [key, call counter], work out the output's shape (``size``, which
the parameters must broadcast to, or the parameters' broadcast shape), check every parameter value
the output uses (a bad one is ``FFG_ERR_VALUE`` naming it), allocate the output, then fill it in C
order, element e from the Philox blocks of (key, call, e).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor.ctype import c_element_type
from ffigraph.tensor.random import philox


def _hex(value):
    """An exact C literal of a float64."""
    return float(value).hex()


def _horner_c(var, z, coeffs):
    """C statements computing ``var = c0 + z*(c1 + z*(...))`` in philox._horner's order."""
    lines = ["%s = %s;" % (var, _hex(coeffs[-1]))]
    for c in coeffs[-2::-1]:
        lines.append("%s = %s + %s * %s;" % (var, _hex(c), z, var))
    return "\n    ".join(lines)


def _support():
    d = dict(
        log_poly=_horner_c("r", "z", philox.LOG_COEFFS), sin_poly=_horner_c("r", "z", philox.SIN_COEFFS),
        cos_poly=_horner_c("r", "z", philox.COS_COEFFS), ln2_hi=_hex(philox.LN2_HI), ln2_lo=_hex(philox.LN2_LO),
        sqrt2=_hex(philox.SQRT2), pio2=_hex(philox.PIO2), magic=_hex(philox.ROUND_MAGIC),
        M0=int(philox.PHILOX_M0), M1=int(philox.PHILOX_M1), W0=int(philox.PHILOX_W0), W1=int(philox.PHILOX_W1),
        rounds=philox.PHILOX_ROUNDS)
    return r"""
#ifndef FFG_PHILOX_DEFINED
#define FFG_PHILOX_DEFINED
/* ---- ffigraph.tensor.random: Philox4x32-10 and its samplers ----
 * The same steps as ffigraph/tensor/random/philox.py, in the same order: keep them in step.
 * Built with -ffp-contract=off (no fused multiply-add) so every double operation rounds once. */

/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11): x holds the counter on entry and the four
 * random words on exit; (k0, k1) is the key. */
static void ffg_philox4x32_10(uint32_t x[4], uint32_t k0, uint32_t k1)
{
    int r;
    for (r = 0; r < %(rounds)d; ++r) {
        uint64_t p0, p1;
        uint32_t x1, x3;
        if (r > 0) {
            /* the key schedule: Weyl increments between rounds */
            k0 += 0x%(W0)XU;
            k1 += 0x%(W1)XU;
        }
        p0 = (uint64_t)0x%(M0)XU * x[0];
        p1 = (uint64_t)0x%(M1)XU * x[2];
        x1 = x[1];
        x3 = x[3];
        x[0] = (uint32_t)(p1 >> 32) ^ x1 ^ k0;
        x[1] = (uint32_t)p1;
        x[2] = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
        x[3] = (uint32_t)p0;
    }
}

/* Block j of element e of a variable with this key, at this call:
 * counter (j, e_lo, call_lo, call_hi), key (key_lo, key_hi ^ e_hi). */
static void ffg_rng_block(uint64_t key, uint64_t call, uint64_t e, uint32_t j, uint32_t x[4])
{
    x[0] = j;
    x[1] = (uint32_t)e;
    x[2] = (uint32_t)call;
    x[3] = (uint32_t)(call >> 32);
    ffg_philox4x32_10(x, (uint32_t)key, (uint32_t)(key >> 32) ^ (uint32_t)(e >> 32));
}

/* Two words as one 64-bit word, hi above lo. */
static uint64_t ffg_rng_bits64(uint32_t lo, uint32_t hi)
{
    return ((uint64_t)hi << 32) | lo;
}

/* A double in [0, 1) from the top 53 bits of the 64-bit word (hi, lo). */
static double ffg_rng_u53(uint32_t lo, uint32_t hi)
{
    return (double)(ffg_rng_bits64(lo, hi) >> 11) * 0x1p-53;
}

/* A double in [0, 1) on the float32 grid, from the top 24 bits of a word. */
static double ffg_rng_u24(uint32_t w)
{
    return (double)(w >> 8) * 0x1p-24;
}

/* log(x) for positive normal x, from + - * / only (about 1 ulp): x = 2^k m, m in
 * (sqrt(2)/2, sqrt(2)], f = m - 1, s = f/(2+f), log(1+f) = f - f*f/2 + s*(f*f/2 + R(s*s)). */
static double ffg_rng_log(double x)
{
    uint64_t b;
    int64_t e;
    double m, k, f, s, z, r, hfsq;
    memcpy(&b, &x, sizeof b);
    e = (int64_t)((b >> 52) & 0x7FF) - 1023;
    b = (b & 0xFFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL;   /* the mantissa, in [1, 2) */
    memcpy(&m, &b, sizeof m);
    if (m > %(sqrt2)s) {
        m = m * 0.5;
        e = e + 1;
    }
    k = (double)e;
    f = m - 1.0;
    s = f / (2.0 + f);
    z = s * s;
    %(log_poly)s
    r = z * r;
    hfsq = 0.5 * f * f;
    return k * %(ln2_hi)s - ((hfsq - (s * (hfsq + r) + k * %(ln2_lo)s)) - f);
}

/* sin(a) for |a| <= pi/4: Taylor through a^19. */
static double ffg_rng_ksin(double a)
{
    double z = a * a, r;
    %(sin_poly)s
    return a + a * z * r;
}

/* cos(a) for |a| <= pi/4: Taylor through a^20, 1 - z/2 compensated. */
static double ffg_rng_kcos(double a)
{
    double z = a * a, r, hz, w;
    %(cos_poly)s
    hz = 0.5 * z;
    w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + z * z * r);
}

/* cos(2 pi u) for u in [0, 1): quarter turns q = round(4u), exact remainder, then a kernel. */
static double ffg_rng_cos2pi(double u)
{
    const double t = 4.0 * u;
    const double q = (t + %(magic)s) - %(magic)s;
    const double a = (t - q) * %(pio2)s;
    const double s = ffg_rng_ksin(a), c = ffg_rng_kcos(a);
    switch ((int64_t)q & 3) {
    case 0: return c;
    case 1: return -s;
    case 2: return -c;
    default: return s;
    }
}

/* A uniform double in [0, 1) for element e: 53 bits (float64) or 24 bits (float32) of block 0. */
static double ffg_rng_uniform(uint64_t key, uint64_t call, uint64_t e, int bits24)
{
    uint32_t x[4];
    ffg_rng_block(key, call, e, 0, x);
    return bits24 ? ffg_rng_u24(x[0]) : ffg_rng_u53(x[0], x[1]);
}

/* A standard normal for element e: Box-Muller on block 0, u1 in (0, 1], u2 in [0, 1). */
static double ffg_rng_std_normal(uint64_t key, uint64_t call, uint64_t e)
{
    uint32_t x[4];
    double u1, u2;
    ffg_rng_block(key, call, e, 0, x);
    u1 = 1.0 - ffg_rng_u53(x[0], x[1]);
    u2 = ffg_rng_u53(x[2], x[3]);
    return sqrt(-2.0 * ffg_rng_log(u1)) * ffg_rng_cos2pi(u2);
}

/* An unbiased integer in [0, rm1] for element e, by masked rejection: two tries per block
 * (words 1:0, then 3:2), blocks 0, 1, 2, ... of the element until one fits. */
static uint64_t ffg_rng_bounded(uint64_t key, uint64_t call, uint64_t e, uint64_t rm1)
{
    uint64_t mask = rm1, v;
    uint32_t x[4], j;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    for (j = 0;; ++j) {
        ffg_rng_block(key, call, e, j, x);
        v = ffg_rng_bits64(x[0], x[1]) & mask;
        if (v <= rm1)
            return v;
        v = ffg_rng_bits64(x[2], x[3]) & mask;
        if (v <= rm1)
            return v;
    }
}

/* Binomial(n, p) for element e: n Bernoulli trials, trial t from block t/2 (words 1:0 for even
 * t, 3:2 for odd t). O(n). */
static int64_t ffg_rng_binomial(uint64_t key, uint64_t call, uint64_t e, int64_t n, double p)
{
    int64_t t, hits = 0;
    uint32_t x[4];
    for (t = 0; t < n; t += 2) {
        ffg_rng_block(key, call, e, (uint32_t)(t / 2), x);
        hits += ffg_rng_u53(x[0], x[1]) < p;
        if (t + 1 < n)
            hits += ffg_rng_u53(x[2], x[3]) < p;
    }
    return hits;
}

/* Sorting positions by random keys (permutation, choice without replacement). */
typedef struct ffg_rng_keyed {
    uint64_t key;
    int64_t pos;
} ffg_rng_keyed;

static int ffg_rng_keyed_cmp(const void *a, const void *b)
{
    const ffg_rng_keyed *x = (const ffg_rng_keyed *)a, *y = (const ffg_rng_keyed *)b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);   /* ties: by position, so the order is total */
}

/* keys[0..n) sorted: positions 0..n-1 by the 64-bit keys of elements first + i (words 1:0 of block 0). */
static void ffg_rng_sorted_positions(uint64_t key, uint64_t call, uint64_t first, int64_t n, ffg_rng_keyed *keys)
{
    int64_t i;
    uint32_t x[4];
    for (i = 0; i < n; ++i) {
        ffg_rng_block(key, call, first + (uint64_t)i, 0, x);
        keys[i].key = ffg_rng_bits64(x[0], x[1]);
        keys[i].pos = i;
    }
    if (n > 1)
        qsort(keys, (size_t)n, sizeof *keys, ffg_rng_keyed_cmp);
}
#endif /* FFG_PHILOX_DEFINED */
""" % d


SUPPORT_C = _support()


def c_support_code(op):
    return SUPPORT_C


def c_headers(op):
    return ["<math.h>"]


def c_compile_args(op):
    return ["-ffp-contract=off"]


def c_code_cache_version(op):
    return (1,)


def _message(text):
    """Text safe inside a C string literal used as a printf format."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("?", "\\?")


def _indent(text, n=4):
    pad = " " * n
    return "\n".join(pad + line if line.strip() else line for line in text.split("\n"))


def _error(d, fmt, *args):
    """C that sets a value error (``fmt`` is a printf format) and fails."""
    call = "ffg_set_error(%s, FFG_ERR_VALUE, -1, \"%s\"%s);" % (d["err"], fmt, "".join(", " + a for a in args))
    return "%s\n%s" % (call, d["fail"])


def _read_state(d):
    return """/* the state: [key, call counter] */
if (%(state)s.shape[0] != 2) {
    %(bad_state)s
}
key = *(const uint64_t *)%(state)s.data;
call = *(const uint64_t *)(%(state)s.data + %(state)s.strides[0] * (int64_t)sizeof(uint64_t));""" % dict(
        d, bad_state=_indent(_error(d, "%s: the random state must be a vector [key, counter] of length 2, got "
                                       "length %%lld" % d["label"], "(long long)%s.shape[0]" % d["state"])).strip())


def _read_size(d, nd):
    """C reading the size vector into shape[0..nd) (each >= 0)."""
    return """/* the output's shape: size */
if (%(size)s.shape[0] != %(nd)d) {
    %(bad_len)s
}
for (d = 0; d < %(nd)d; ++d) {
    shape[d] = *(const int64_t *)(%(size)s.data + d * %(size)s.strides[0] * (int64_t)sizeof(int64_t));
    if (shape[d] < 0) {
        %(bad_neg)s
    }
}""" % dict(d, nd=nd,
            bad_len=_indent(_error(d, "%s: size has %%lld entries, expected %d" % (d["label"], nd),
                                   "(long long)%s.shape[0]" % d["size"])).strip(),
            bad_neg=_indent(_error(d, "%s: negative dimensions are not allowed in size (%%lld)" % d["label"],
                                   "(long long)shape[d]"), 8).strip())


# ------------------------------------------------------------------ the elementwise distributions

# name -> (check of one element's parameters: (condition that is bad, printf format, args), the
# expression drawing element e); parameters are the C locals named as in op.param_names
_CHECKS = {
    "uniform": [],
    "normal": [("scale < 0", "normal: scale must be >= 0, got %.17g", ["scale"])],
    "integers": [("low >= high", "integers: low >= high (low=%lld, high=%lld)", ["(long long)low", "(long long)high"])],
    "bernoulli": [("!(p >= 0 && p <= 1)", "bernoulli: p must be in [0, 1], got %.17g", ["p"])],
    "binomial": [("n < 0", "binomial: n must be >= 0, got %lld", ["(long long)n"]),
                 ("n > 4294967296LL", "binomial: n must be <= 2**32 (n trials are drawn one by one), got %lld",
                  ["(long long)n"]),
                 ("!(p >= 0 && p <= 1)", "binomial: p must be in [0, 1], got %.17g", ["p"])],
}


def _draw_expr(op, ctype):
    dist = op.dist
    if dist == "uniform":
        bits24 = "1" if op.dtype == "float32" else "0"
        return "(%s)(low + (high - low) * ffg_rng_uniform(key, call, (uint64_t)e, %s))" % (ctype, bits24)
    if dist == "normal":
        return "(%s)(loc + scale * ffg_rng_std_normal(key, call, (uint64_t)e))" % ctype
    if dist == "integers":
        return ("(%s)(int64_t)((uint64_t)low + ffg_rng_bounded(key, call, (uint64_t)e, "
                "(uint64_t)high - (uint64_t)low - 1))" % ctype)
    if dist == "bernoulli":
        return "(%s)(ffg_rng_uniform(key, call, (uint64_t)e, 0) < p)" % ctype
    if dist == "binomial":
        return "(%s)ffg_rng_binomial(key, call, (uint64_t)e, n, p)" % ctype
    raise MethodNotDefined("%s has no C code" % op)


def _walk(nd, params, body):
    """C walking the output's n elements in C order (an odometer over shape[0..nd)), with each
    parameter's value read into a local of its name (its offset follows its broadcast strides)."""
    reads = "\n    ".join("const %s %s = *(const %s *)(%s.data + off_%s * (int64_t)sizeof(%s));"
                          % (ct, pn, ct, var, pn, ct) for pn, var, ct, _ in params)
    zero = " ".join("off_%s = 0;" % pn for pn, _, _, _ in params)
    step = "\n        ".join("off_%s += st_%s[d];" % (pn, pn) for pn, _, _, _ in params)
    back = "\n        ".join("off_%s -= shape[d] * st_%s[d];" % (pn, pn) for pn, _, _, _ in params)
    return """%(zero)s
for (d = 0; d < %(nd)d; ++d)
    idx[d] = 0;
for (e = 0; e < n; ++e) {
    %(reads)s
    %(body)s
    /* the next element: the last axis fastest */
    for (d = %(nd)d - 1; d >= 0; --d) {
        %(step)s
        if (++idx[d] < shape[d])
            break;
        %(back)s
        idx[d] = 0;
    }
}""" % dict(zero=zero, nd=nd, reads=reads, body=_indent(body).strip(), step=step, back=back)


def _elementwise_code(op, node, name, inputs, outputs, sub):
    (z,) = outputs
    nd = op.ndim
    nd1 = max(nd, 1)
    state = inputs[0]
    size = inputs[1] if op.has_size else None
    pvars = inputs[2:] if op.has_size else inputs[1:]
    pnodes = node.inputs[2:] if op.has_size else node.inputs[1:]
    ctype = c_element_type(op.dtype)
    label = _message(op)
    d = dict(state=state, size=size, z=z, nd=nd, nd1=nd1, err=sub["err"], fail=sub["fail"],
             allocator=sub["allocator"], label=label, ctype=ctype)
    params = [(pn, var, c_element_type(pv.type.dtype), pv.type.ndim)
              for pn, var, pv in zip(op.param_names, pvars, pnodes)]

    decl = ["uint64_t key, call;",
            "int64_t shape[%d], idx[%d], n, e;" % (nd1, nd1),
            "int d;"]
    for pn, _, _, _ in params:
        decl.append("int64_t st_%s[%d], off_%s;   /* %s's strides over the output's axes (0: broadcast) */"
                    % (pn, nd1, pn, pn))
    parts = ["\n".join(decl), _read_state(d)]
    if op.has_size:
        parts.append(_read_size(d, nd))
        fits = []
        for pn, var, _, pd in params:
            for a in range(pd):
                fits.append("""if (%(var)s.shape[%(a)d] != 1 && %(var)s.shape[%(a)d] != shape[%(o)d]) {
    char sp[160], ss[160];
    ffg_format_shape(sp, sizeof sp, %(pd)d, %(var)s.shape);
    ffg_format_shape(ss, sizeof ss, %(nd)d, shape);
    %(err)s
}""" % dict(var=var, a=a, o=nd - pd + a, pd=pd, nd=nd,
                    err=_indent(_error(d, "%s: parameter %s of shape %%s does not broadcast to size %%s"
                                       % (label, pn), "sp", "ss")).strip()))
        if fits:
            parts.append("/* every parameter must broadcast to size */\n" + "\n".join(fits))
    else:
        lines = ["/* the output's shape: the parameters' broadcast shape */",
                 "for (d = 0; d < %d; ++d)\n    shape[d] = 1;" % nd1]
        for pn, var, _, pd in params:
            for a in range(pd):
                lines.append("""if (ffg_broadcast_dim(&shape[%(o)d], %(var)s.shape[%(a)d])) {
    %(err)s
}""" % dict(o=nd - pd + a, var=var, a=a,
                    err=_indent(_error(d, "%s: parameter %s (axis %d, length %%lld) does not broadcast with the "
                                       "others" % (label, pn, a), "(long long)%s.shape[%d]" % (var, a))).strip()))
        parts.append("\n".join(lines))
    strides = ["/* each parameter's strides over the output's axes: 0 where it is broadcast */"]
    for pn, var, _, pd in params:
        for o in range(nd):
            a = o - (nd - pd)
            if a < 0:
                strides.append("st_%s[%d] = 0;" % (pn, o))
            else:
                strides.append("st_%s[%d] = %s.shape[%d] == 1 ? 0 : %s.strides[%d];" % (pn, o, var, a, var, a))
    parts.append("\n".join(strides))
    parts.append("n = ffg_size(%d, shape);" % nd)
    checks = _CHECKS[op.dist][:]
    if op.dist == "integers" and op.dtype != "int64":
        info = np.iinfo(op.dtype)
        checks.append(("low < %dLL || high - 1 > %dLL" % (info.min, info.max),
                       "integers: low=%%lld, high=%%lld do not fit dtype %s" % op.dtype,
                       ["(long long)low", "(long long)high"]))
    if checks:
        body = "\n".join("""if (%s) {
    %s
}""" % (cond, _indent(_error(d, fmt, *args)).strip()) for cond, fmt, args in checks)
        parts.append("/* check the parameters of every element before drawing */\n" + _walk(nd, params, body))
    parts.append("""/* the output, then element e from the Philox blocks of (key, call, e) */
if (ffg_alloc_array(&%(z)s, %(nd)d, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
    %(fail)s""" % d)
    parts.append("{\n    %s *out = (%s *)%s.data;\n%s\n}" % (
        ctype, ctype, z, _indent(_walk(nd, params, "out[e] = %s;" % _draw_expr(op, ctype)))))
    return "/* %s: a draw from the Philox4x32-10 stream of %s */\n{\n%s\n}" % (
        label.replace("*/", "* /"), state, _indent("\n".join(parts)))


# ------------------------------------------------------------------ choice and permutation


def _choice_code(op, node, name, inputs, outputs, sub):
    (z,) = outputs
    nd = op.ndim
    nd1 = max(nd, 1)
    state = inputs[0]
    pos = 2 if op.has_size else 1
    size = inputs[1] if op.has_size else None
    a = inputs[pos]
    a_node = node.inputs[pos]
    p = inputs[pos + 1] if op.has_p else None
    ctype = c_element_type(op.dtype)
    label = _message(op)
    d = dict(state=state, size=size, z=z, nd=nd, nd1=nd1, err=sub["err"], fail=sub["fail"],
             allocator=sub["allocator"], label=label, ctype=ctype, a=a, p=p, name=name,
             tol=_hex(_tolerance(op)), pctype=c_element_type(op.p_dtype))
    parts = ["uint64_t key, call;\nint64_t shape[%d], k, n, e;%s" % (nd1, "\nint d;" if op.has_size else ""),
             _read_state(d)]
    if op.has_size:
        parts.append(_read_size(d, nd))
    parts.append("k = ffg_size(%d, shape);   /* the number of draws */" % nd)
    if a_node.type.ndim == 0:
        parts.append("n = *(const int64_t *)%(a)s.data;   /* the population: range(n) */" % d)
    else:
        parts.append("n = %(a)s.shape[0];   /* the population: the entries of a */" % d)
    parts.append("""if (n < 0) {
    %s
}
if (n == 0 && k > 0) {
    %s
}""" % (_indent(_error(d, "%s: a must be a positive integer, got %%lld" % label, "(long long)n")).strip(),
        _indent(_error(d, "%s: a cannot be empty unless no samples are taken" % label)).strip()))
    if op.has_p:
        parts.append("""/* p: one non-negative weight per entry, summing to 1 (added left to right, as in perform) */
if (%(p)s.shape[0] != n) {
    %(bad_len)s
}
{
    double acc = 0.0;
    int64_t i;
    for (i = 0; i < n; ++i) {
        const double v = (double)*(const %(pctype)s *)(%(p)s.data + i * %(p)s.strides[0] * (int64_t)sizeof(%(pctype)s));
        if (!(v >= 0)) {
            %(bad_neg)s
        }
        acc = acc + v;
    }
    if (!(fabs(acc - 1.0) <= %(tol)s)) {
        %(bad_sum)s
    }
}""" % dict(d, bad_len=_indent(_error(d, "%s: p must have the same size as a (%%lld), got %%lld" % label,
                                      "(long long)n", "(long long)%s.shape[0]" % p)).strip(),
            bad_neg=_indent(_error(d, "%s: p must be non-negative, got %%.17g" % label, "v"), 12).strip(),
            bad_sum=_indent(_error(d, "%s: p must sum to 1, its sum is %%.17g" % label, "acc"), 8).strip()))
    if not op.replace:
        parts.append("""if (k > n) {
    %s
}""" % _indent(_error(d, "%s: cannot take a larger sample (%%lld) than the population (%%lld) when "
                          "replace=False" % label, "(long long)k", "(long long)n")).strip())
    parts.append("""if (ffg_alloc_array(&%(z)s, %(nd)d, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
    %(fail)s""" % d)
    if a_node.type.ndim == 0:
        put = "out[e] = (%s)i;" % ctype
    else:
        put = "out[e] = *(const %(ctype)s *)(%(a)s.data + i * %(a)s.strides[0] * (int64_t)sizeof(%(ctype)s));" % d
    if not op.replace:
        draw = """/* without replacement: the population sorted by random keys, the first k kept */
if (k > 0) {
    ffg_rng_keyed *keys;
    %(name)s_tmp = ffg_malloc(%(allocator)s, (size_t)n * sizeof(ffg_rng_keyed));
    if (%(name)s_tmp == NULL) {
        ffg_set_error(%(err)s, FFG_ERR_NOMEM, -1, "%(label)s: cannot allocate the sort keys");
        %(fail)s
    }
    keys = (ffg_rng_keyed *)%(name)s_tmp;
    ffg_rng_sorted_positions(key, call, 0, n, keys);
    for (e = 0; e < k; ++e) {
        const int64_t i = keys[e].pos;
        %(put)s
    }
}""" % dict(d, put=put)
    elif op.has_p:
        draw = """/* with p: the first index whose running sum passes u * sum(p) */
if (k > 0) {
    double *cdf, acc = 0.0;
    int64_t i, last;
    %(name)s_tmp = ffg_malloc(%(allocator)s, (size_t)n * sizeof(double));
    if (%(name)s_tmp == NULL) {
        ffg_set_error(%(err)s, FFG_ERR_NOMEM, -1, "%(label)s: cannot allocate the running sums of p");
        %(fail)s
    }
    cdf = (double *)%(name)s_tmp;
    for (i = 0; i < n; ++i) {
        acc = acc + (double)*(const %(pctype)s *)(%(p)s.data + i * %(p)s.strides[0] * (int64_t)sizeof(%(pctype)s));
        cdf[i] = acc;
    }
    last = n - 1;   /* the last index with a non-zero weight, for a u that rounds past the end */
    while (last > 0 && cdf[last] == cdf[last - 1])
        --last;
    for (e = 0; e < k; ++e) {
        const double target = ffg_rng_uniform(key, call, (uint64_t)e, 0) * cdf[n - 1];
        int64_t lo = 0, hi = n;   /* the first i in [lo, hi) with cdf[i] > target */
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (cdf[mid] > target)
                hi = mid;
            else
                lo = mid + 1;
        }
        i = lo < n ? lo : last;
        %(put)s
    }
}""" % dict(d, put=put)
    else:
        draw = """/* with replacement: uniform indices in [0, n) */
for (e = 0; e < k; ++e) {
    const int64_t i = (int64_t)ffg_rng_bounded(key, call, (uint64_t)e, (uint64_t)n - 1);
    %(put)s
}""" % dict(d, put=put)
    parts.append("{\n    %s *out = (%s *)%s.data;\n%s\n}" % (ctype, ctype, z, _indent(draw)))
    return "void *%s_tmp = NULL;   /* sort keys or running sums, released in the cleanup */\n" \
           "/* %s: draws from the Philox4x32-10 stream of %s */\n{\n%s\n}" % (
               name, label.replace("*/", "* /"), state, _indent("\n".join(parts)))


def _tolerance(op):
    return float(np.sqrt(np.finfo(np.float32 if op.p_dtype == "float32" else np.float64).eps))


def _permutation_code(op, node, name, inputs, outputs, sub):
    (z,) = outputs
    nd = op.ndim
    lead = nd - 1
    state = inputs[0]
    size = inputs[1] if op.has_size else None
    x = inputs[-1]
    x_node = node.inputs[-1]
    ctype = c_element_type(op.dtype)
    label = _message(op)
    d = dict(state=state, size=size, z=z, nd=nd, err=sub["err"], fail=sub["fail"], allocator=sub["allocator"],
             label=label, ctype=ctype, x=x, name=name, lead=lead)
    parts = ["uint64_t key, call;\nint64_t shape[%d], batch, n, b;%s" % (nd, "\nint d;" if op.has_size else ""),
             _read_state(d)]
    if op.has_size:
        parts.append(_read_size(d, lead))
    parts.append("batch = ffg_size(%d, shape);   /* the number of permutations */" % lead)
    if x_node.type.ndim == 0:
        parts.append("n = *(const int64_t *)%(x)s.data;   /* permute range(n) */" % d)
        put = "out[b * n + i] = (%s)keys[i].pos;" % ctype
    else:
        parts.append("n = %(x)s.shape[0];   /* permute the entries of x */" % d)
        put = ("out[b * n + i] = *(const %(ctype)s *)(%(x)s.data + keys[i].pos * %(x)s.strides[0] "
               "* (int64_t)sizeof(%(ctype)s));" % d)
    parts.append("""if (n < 0) {
    %s
}
shape[%d] = n;""" % (_indent(_error(d, "%s: x must be a non-negative integer, got %%lld" % label,
                                    "(long long)n")).strip(), lead))
    parts.append("""if (ffg_alloc_array(&%(z)s, %(nd)d, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
    %(fail)s""" % d)
    parts.append("""/* row b: positions 0..n-1 sorted by the keys of elements b*n + i, ties by position */
if (n > 0 && batch > 0) {
    %(ctype)s *out = (%(ctype)s *)%(z)s.data;
    ffg_rng_keyed *keys;
    int64_t i;
    %(name)s_tmp = ffg_malloc(%(allocator)s, (size_t)n * sizeof(ffg_rng_keyed));
    if (%(name)s_tmp == NULL) {
        ffg_set_error(%(err)s, FFG_ERR_NOMEM, -1, "%(label)s: cannot allocate the sort keys");
        %(fail)s
    }
    keys = (ffg_rng_keyed *)%(name)s_tmp;
    for (b = 0; b < batch; ++b) {
        ffg_rng_sorted_positions(key, call, (uint64_t)(b * n), n, keys);
        for (i = 0; i < n; ++i)
            %(put)s
    }
}""" % dict(d, put=put))
    return "void *%s_tmp = NULL;   /* the sort keys, released in the cleanup */\n" \
           "/* %s: permutations from the Philox4x32-10 stream of %s */\n{\n%s\n}" % (
               name, label.replace("*/", "* /"), state, _indent("\n".join(parts)))


def c_code(op, node, name, inputs, outputs, sub):
    dist = op.dist
    if dist == "choice":
        return _choice_code(op, node, name, inputs, outputs, sub)
    if dist == "permutation":
        return _permutation_code(op, node, name, inputs, outputs, sub)
    if dist in _CHECKS:
        return _elementwise_code(op, node, name, inputs, outputs, sub)
    raise MethodNotDefined("%s has no C code" % op)


def c_code_cleanup(op, node, name, inputs, outputs, sub):
    if op.dist in ("choice", "permutation"):
        return "ffg_release(%s, %s_tmp);   /* NULL when never allocated */" % (sub["allocator"], name)
    return ""
