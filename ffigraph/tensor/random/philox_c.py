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

from ffigraph.graph.c_interface import MethodNotDefined, c_format_text as _message
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


def _rounds_body():
    """The Philox rounds written out (no loop, so the batch loop around them vectorises): lanes x0..x3
    of type LANE, round r's key (k0 + r*W0, k1 + r*W1) in 32 bits."""
    lines = []
    for r in range(philox.PHILOX_ROUNDS):
        k0 = "k0" if r == 0 else "(uint32_t)(k0 + 0x%XU)" % ((r * int(philox.PHILOX_W0)) & 0xFFFFFFFF)
        k1 = "k1" if r == 0 else "(uint32_t)(k1 + 0x%XU)" % ((r * int(philox.PHILOX_W1)) & 0xFFFFFFFF)
        lines.append("{ const uint64_t p0 = (uint64_t)0x%XU * x0, p1 = (uint64_t)0x%XU * x2; "
                     "const LANE n0 = (LANE)(uint32_t)(p1 >> 32) ^ x1 ^ %s; "
                     "const LANE n2 = (LANE)(uint32_t)(p0 >> 32) ^ x3 ^ %s; "
                     "x1 = (LANE)(uint32_t)p1; x3 = (LANE)(uint32_t)p0; x0 = n0; x2 = n2; }"
                     % (int(philox.PHILOX_M0), int(philox.PHILOX_M1), k0, k1))
    return " \\\n        ".join(lines)


def _support():
    d = dict(
        log_poly=_horner_c("r", "z", philox.LOG_COEFFS), sin_poly=_horner_c("r", "z", philox.SIN_COEFFS),
        cos_poly=_horner_c("r", "z", philox.COS_COEFFS), ln2_hi=_hex(philox.LN2_HI), ln2_lo=_hex(philox.LN2_LO),
        sqrt2_mant=int(np.float64(philox.SQRT2).view(np.uint64)) & ((1 << 52) - 1), pio2=_hex(philox.PIO2), magic=_hex(philox.ROUND_MAGIC),
        rounds_body=_rounds_body(), M0=int(philox.PHILOX_M0), M1=int(philox.PHILOX_M1), W0=int(philox.PHILOX_W0), W1=int(philox.PHILOX_W1),
        rounds=philox.PHILOX_ROUNDS)
    return r"""
#ifndef FFG_PHILOX_DEFINED
#define FFG_PHILOX_DEFINED
/* ---- ffigraph.tensor.random: Philox4x32-10 and its samplers ----
 * The same steps as ffigraph/tensor/random/philox.py, in the same order: keep them in step.
 * Built with -ffp-contract=off (no fused multiply-add) so every double operation rounds once. */

/* One Philox4x32 round on the words x0..x3 (uint32_t lvalues) with round key (k0, k1): words 0 and
 * 2 times the multipliers as 32x32 -> 64-bit products. */
#define FFG_PHILOX_ROUND(x0, x1, x2, x3, k0, k1) do { \
        const uint64_t ffg_p0_ = (uint64_t)0x%(M0)XU * (x0), ffg_p1_ = (uint64_t)0x%(M1)XU * (x2); \
        const uint32_t ffg_n0_ = (uint32_t)(ffg_p1_ >> 32) ^ (x1) ^ (k0); \
        const uint32_t ffg_n2_ = (uint32_t)(ffg_p0_ >> 32) ^ (x3) ^ (k1); \
        (x1) = (uint32_t)ffg_p1_; \
        (x3) = (uint32_t)ffg_p0_; \
        (x0) = ffg_n0_; \
        (x2) = ffg_n2_; \
    } while (0)

/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11): x holds the counter on entry and the four
 * random words on exit; (k0, k1) is the key, grown by the Weyl increments between rounds. */
static inline void ffg_philox4x32_10(uint32_t x[4], uint32_t k0, uint32_t k1)
{
    int r;
    for (r = 0; r < %(rounds)d; ++r) {
        FFG_PHILOX_ROUND(x[0], x[1], x[2], x[3], k0, k1);
        k0 += 0x%(W0)XU;
        k1 += 0x%(W1)XU;
    }
}

/* Block (i, j) of a variable with this key, at this call:
 * counter (j, i_lo, call_lo, call_hi), key (key_lo, key_hi ^ i_hi). j = 0: the shared blocks, cut
 * into elements; j >= 1: element i's own further blocks (integer retries, binomial trials). */
static inline void ffg_rng_block(uint64_t key, uint64_t call, uint64_t i, uint32_t j, uint32_t x[4])
{
    x[0] = j;
    x[1] = (uint32_t)i;
    x[2] = (uint32_t)call;
    x[3] = (uint32_t)(call >> 32);
    ffg_philox4x32_10(x, (uint32_t)key, (uint32_t)(key >> 32) ^ (uint32_t)(i >> 32));
}

/* Two words as one 64-bit word, hi above lo. */
static inline uint64_t ffg_rng_bits64(uint32_t lo, uint32_t hi)
{
    return ((uint64_t)hi << 32) | lo;
}

/* The 64-bit word of element e: words (1:0) of block (e/2, 0) for even e, (3:2) for odd e. */
static inline uint64_t ffg_rng_word64(uint64_t key, uint64_t call, uint64_t e)
{
    uint32_t x[4];
    ffg_rng_block(key, call, e >> 1, 0, x);
    return (e & 1) ? ffg_rng_bits64(x[2], x[3]) : ffg_rng_bits64(x[0], x[1]);
}

/* The 32-bit word of element e: word e%%4 of block (e/4, 0). */
static inline uint32_t ffg_rng_word32(uint64_t key, uint64_t call, uint64_t e)
{
    uint32_t x[4];
    ffg_rng_block(key, call, e >> 2, 0, x);
    return x[e & 3];
}

/* ---- the batch: the 64-bit words of m <= FFG_RNG_BATCH consecutive shared blocks ----
 * wa[t] = words (1:0) and wb[t] = words (3:2) of block (i0 + t, 0): the 64-bit words of elements
 * 2(i0 + t) and 2(i0 + t) + 1, or (low half first) the 32-bit words of elements 4(i0 + t) .. +3.
 * Straight-line rounds over independent lanes, two separate outputs (an interleaved store stops
 * gcc's vectoriser): the compiler vectorises the loop. */
#define FFG_RNG_BATCH 64
#define FFG_RNG_WORDS_BODY(LANE) \
    int t; \
    for (t = 0; t < m; ++t) { \
        LANE x0 = 0, x1 = lo + (uint32_t)t, x2 = c2, x3 = c3; \
        %(rounds_body)s \
        wa[t] = ((uint64_t)x1 << 32) | (uint32_t)x0; \
        wb[t] = ((uint64_t)x3 << 32) | (uint32_t)x2; \
    }

/* 32-bit lanes: what SSE2 (the x86-64 baseline) and other targets do best */
static void ffg_rng_words_lanes32(uint32_t k0, uint32_t k1, uint32_t c2, uint32_t c3, uint32_t lo, int m,
                                  uint64_t *restrict wa, uint64_t *restrict wb)
{
    FFG_RNG_WORDS_BODY(uint32_t)
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(FFG_RNG_PORTABLE)
#define FFG_RNG_X86 1
/* 64-bit lanes holding 32 bits: AVX-512 multiplies eight of them at once (vpmuludq) */
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
static void ffg_rng_words_avx512(uint32_t k0, uint32_t k1, uint32_t c2, uint32_t c3, uint32_t lo, int m,
                                 uint64_t *restrict wa, uint64_t *restrict wb)
{
    FFG_RNG_WORDS_BODY(uint64_t)
}

/* the CPU's level, detected once: 0 the x86-64 baseline, 1 AVX2, 2 AVX-512; -1 not yet known. Only
 * the speed depends on it: every level runs the same integer and IEEE double operations. */
static int ffg_rng_level_cache = -1;
static inline int ffg_rng_level(void)
{
    int level = __atomic_load_n(&ffg_rng_level_cache, __ATOMIC_RELAXED);
    if (__builtin_expect(level < 0, 0)) {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
            && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
            level = 2;
        else
            level = __builtin_cpu_supports("avx2") ? 1 : 0;
        __atomic_store_n(&ffg_rng_level_cache, level, __ATOMIC_RELAXED);
    }
    return level;
}
#define FFG_RNG_WORDS_KERNEL (ffg_rng_level() == 2 ? ffg_rng_words_avx512 : ffg_rng_words_lanes32)
#else
#define FFG_RNG_WORDS_KERNEL ffg_rng_words_lanes32
#endif

/* wa[0 .. m) and wb[0 .. m) from blocks (i0 .. i0 + m - 1, 0), m <= FFG_RNG_BATCH; a run that crosses a multiple of
 * 2^32 (where the key's high word changes) is done in two parts. */
static void ffg_rng_words(uint64_t key, uint64_t call, uint64_t i0, int m, uint64_t *wa, uint64_t *wb)
{
    const uint32_t lo = (uint32_t)i0;
    const uint64_t room = (uint64_t)0x100000000ULL - lo;   /* blocks before i_lo wraps */
    const int first = (uint64_t)m > room ? (int)room : m;
    FFG_RNG_WORDS_KERNEL((uint32_t)key, (uint32_t)(key >> 32) ^ (uint32_t)(i0 >> 32), (uint32_t)call,
                         (uint32_t)(call >> 32), lo, first, wa, wb);
    if (first < m)
        ffg_rng_words(key, call, i0 + (uint64_t)first, m - first, wa + first, wb + first);
}

/* A double in [0, 1) from the top 53 bits of a 64-bit word. */
static inline double ffg_rng_u53(uint64_t w)
{
    return (double)(int64_t)(w >> 11) * 0x1p-53;
}

/* ffg_rng_u53 from bit operations and exact double arithmetic only (vectorises without a 64-bit
 * integer conversion): the top 52 bits as 1.b - 1, plus the 53rd bit's 2^-53 (the sum is exact). */
static inline double ffg_rng_u53v(uint64_t w)
{
    const uint64_t hb = 0x3FF0000000000000ULL | (w >> 12);
    const uint64_t lb = (0 - ((w >> 11) & 1)) & 0x3CA0000000000000ULL;   /* 2^-53 or 0 */
    double h, l;
    memcpy(&h, &hb, sizeof h);
    memcpy(&l, &lb, sizeof l);
    return (h - 1.0) + l;
}

/* A double in [0, 1) on the float32 grid, from the top 24 bits of a word. */
static inline double ffg_rng_u24(uint32_t w)
{
    return (double)(int32_t)(w >> 8) * 0x1p-24;
}

/* log(x) for positive normal x, from + - * / only (about 1 ulp): x = 2^k m, m in
 * (sqrt(2)/2, sqrt(2)], f = m - 1, s = f/(2+f), log(1+f) = f - f*f/2 + s*(f*f/2 + R(s*s)).
 * No branches and no selects (the halving of m is one off its exponent), so a loop of it vectorises. */
static inline double ffg_rng_log(double x)
{
    uint64_t b, mant, big, eb, mb;
    double m, k, f, s, z, r, hfsq;
    memcpy(&b, &x, sizeof b);
    mant = b & 0xFFFFFFFFFFFFFULL;
    big = (int64_t)mant > (int64_t)%(sqrt2_mant)dLL;            /* the mantissa 1.mant > sqrt(2) */
    mb = mant | (0x3FF0000000000000ULL - (big << 52));          /* m, halved when big */
    memcpy(&m, &mb, sizeof m);
    eb = (((b >> 52) & 0x7FF) + big) | 0x4330000000000000ULL;   /* 2^52 + the biased exponent (+1) */
    memcpy(&k, &eb, sizeof k);
    k = k - (0x1p52 + 1023.0);                                  /* the exponent, exactly */
    f = m - 1.0;
    s = f / (2.0 + f);
    z = s * s;
    %(log_poly)s
    r = z * r;
    hfsq = 0.5 * f * f;
    return k * %(ln2_hi)s - ((hfsq - (s * (hfsq + r) + k * %(ln2_lo)s)) - f);
}

/* sin(a) for |a| <= pi/4: Taylor through a^19. */
static inline double ffg_rng_ksin(double a)
{
    double z = a * a, r;
    %(sin_poly)s
    return a + a * z * r;
}

/* cos(a) for |a| <= pi/4: Taylor through a^20, 1 - z/2 compensated. */
static inline double ffg_rng_kcos(double a)
{
    double z = a * a, r, hz, w;
    %(cos_poly)s
    hz = 0.5 * z;
    w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + z * z * r);
}

/* cos(2 pi u) and sin(2 pi u) for u in [0, 1): quarter turns q = round(4u) (read from the bits of
 * t + 1.5*2^52), exact remainder, one pair of kernels, then the quadrant's swap and signs as bit
 * masks (no branches, so a loop of it vectorises). */
static inline void ffg_rng_sincos2pi(double u, double *cosv, double *sinv)
{
    const double t = 4.0 * u;
    const double tm = t + %(magic)s;
    const double q = tm - %(magic)s;
    const double a = (t - q) * %(pio2)s;
    const double s = ffg_rng_ksin(a), c = ffg_rng_kcos(a);
    uint64_t qb, quad, swap, sb, cb, cosb, sinb;
    memcpy(&qb, &tm, sizeof qb);
    quad = qb & 3;                  /* round(4u) mod 4: cos = c, -s, -c, s; sin = s, c, -s, -c */
    swap = 0 - (quad & 1);
    memcpy(&sb, &s, sizeof sb);
    memcpy(&cb, &c, sizeof cb);
    cosb = ((cb & ~swap) | (sb & swap)) ^ (((quad ^ (quad >> 1)) & 1) << 63);
    sinb = ((sb & ~swap) | (cb & swap)) ^ ((quad >> 1) << 63);
    memcpy(cosv, &cosb, sizeof cosb);
    memcpy(sinv, &sinb, sizeof sinb);
}

/* A uniform double in [0, 1) for element e: 53 bits of its 64-bit word (float64) or 24 bits of its
 * 32-bit word (float32). */
static inline double ffg_rng_uniform(uint64_t key, uint64_t call, uint64_t e, int bits24)
{
    return bits24 ? ffg_rng_u24(ffg_rng_word32(key, call, e)) : ffg_rng_u53(ffg_rng_word64(key, call, e));
}

/* The pairs of normals of m <= FFG_RNG_BATCH blocks (words wa[t], wb[t]): ev[t] and od[t], as
 * ffg_rng_normal_pair below, in two loops: the log and the sine and cosine (vectorised where the target has
 * 64-bit compares), then sqrt. */
#define FFG_RNG_NORMAL_BODY \
    double y[FFG_RNG_BATCH]; \
    int t; \
    for (t = 0; t < m; ++t) { \
        const double u1 = 1.0 - ffg_rng_u53v(wa[t]), u2 = ffg_rng_u53v(wb[t]); \
        y[t] = -2.0 * ffg_rng_log(u1); \
        ffg_rng_sincos2pi(u2, &ev[t], &od[t]); \
    } \
    for (t = 0; t < m; ++t) { \
        const double r = sqrt(y[t]); \
        ev[t] = r * ev[t]; \
        od[t] = r * od[t]; \
    }

static void ffg_rng_normal_pairs_base(const uint64_t *restrict wa, const uint64_t *restrict wb, int m,
                                      double *restrict ev, double *restrict od)
{
    FFG_RNG_NORMAL_BODY
}

#ifdef FFG_RNG_X86
/* the same operations (no contraction: -ffp-contract=off), eight lanes at a time */
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
static void ffg_rng_normal_pairs_avx512(const uint64_t *restrict wa, const uint64_t *restrict wb, int m,
                                        double *restrict ev, double *restrict od)
{
    FFG_RNG_NORMAL_BODY
}
/* AVX2: four lanes, with the 64-bit compares SSE2 lacks */
__attribute__((target("avx2")))
static void ffg_rng_normal_pairs_avx2(const uint64_t *restrict wa, const uint64_t *restrict wb, int m,
                                      double *restrict ev, double *restrict od)
{
    FFG_RNG_NORMAL_BODY
}
#define ffg_rng_normal_pairs (ffg_rng_level() == 2 ? ffg_rng_normal_pairs_avx512 \
                              : ffg_rng_level() == 1 ? ffg_rng_normal_pairs_avx2 : ffg_rng_normal_pairs_base)
#else
#define ffg_rng_normal_pairs ffg_rng_normal_pairs_base
#endif

/* Box-Muller on the pair of words (w0, w1) = words (1:0), (3:2) of one block: u1 = 1 - u53(w0) in
 * (0, 1], u2 = u53(w1) in [0, 1), r = sqrt(-2 log u1); the cosine half r cos(2 pi u2) (even element)
 * and the sine half r sin(2 pi u2) (odd element). */
static inline void ffg_rng_normal_pair(uint64_t w0, uint64_t w1, double *even, double *odd)
{
    ffg_rng_normal_pairs_base(&w0, &w1, 1, even, odd);
}

/* A standard normal for element e: its half of the pair from block (e/2, 0). */
static inline double ffg_rng_std_normal(uint64_t key, uint64_t call, uint64_t e)
{
    uint32_t x[4];
    double even, odd;
    ffg_rng_block(key, call, e >> 1, 0, x);
    ffg_rng_normal_pair(ffg_rng_bits64(x[0], x[1]), ffg_rng_bits64(x[2], x[3]), &even, &odd);
    return (e & 1) ? odd : even;
}

/* The smallest 2^b - 1 >= rm1. */
static inline uint64_t ffg_rng_range_mask(uint64_t rm1)
{
    uint64_t mask = rm1;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    return mask;
}

/* Element e's retries of a masked rejection whose first try (its 64-bit word) failed: two tries per
 * own block (e, j), j = 1, 2, ... (words 1:0, then 3:2), until one fits. */
static uint64_t ffg_rng_bounded_retry(uint64_t key, uint64_t call, uint64_t e, uint64_t rm1, uint64_t mask)
{
    uint64_t v;
    uint32_t x[4], j;
    for (j = 1;; ++j) {
        ffg_rng_block(key, call, e, j, x);
        v = ffg_rng_bits64(x[0], x[1]) & mask;
        if (v <= rm1)
            return v;
        v = ffg_rng_bits64(x[2], x[3]) & mask;
        if (v <= rm1)
            return v;
    }
}

/* An unbiased integer in [0, rm1] for element e, by masked rejection: its 64-bit word first, then
 * its own blocks. */
static inline uint64_t ffg_rng_bounded(uint64_t key, uint64_t call, uint64_t e, uint64_t rm1)
{
    const uint64_t mask = ffg_rng_range_mask(rm1);
    const uint64_t v = ffg_rng_word64(key, call, e) & mask;
    return v <= rm1 ? v : ffg_rng_bounded_retry(key, call, e, rm1, mask);
}

/* The integer threshold of u53(w) < p: u53(w) < p exactly when (w >> 11) < ceil(p * 2^53) (the
 * scaling by 2^53 is exact), for p in [0, 1]. */
static inline uint64_t ffg_rng_threshold53(double p)
{
    const double t = p * 0x1p53;
    uint64_t c = (uint64_t)t;
    if ((double)c < t)
        ++c;
    return c;
}

/* Binomial(n, p) for element e: trial 0 from its 64-bit word, trial t >= 1 from its own block
 * ((t+1)/2) (words 1:0 for odd t, 3:2 for even t). O(n). */
static int64_t ffg_rng_binomial(uint64_t key, uint64_t call, uint64_t e, int64_t n, double p)
{
    int64_t t, hits;
    uint32_t x[4];
    if (n <= 0)
        return 0;
    hits = ffg_rng_u53(ffg_rng_word64(key, call, e)) < p;
    for (t = 1; t < n; t += 2) {
        ffg_rng_block(key, call, e, (uint32_t)((t + 1) / 2), x);
        hits += ffg_rng_u53(ffg_rng_bits64(x[0], x[1])) < p;
        if (t + 1 < n)
            hits += ffg_rng_u53(ffg_rng_bits64(x[2], x[3])) < p;
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

/* keys[0..n) sorted: positions 0..n-1 by the 64-bit words of elements first + i. */
static void ffg_rng_sorted_positions(uint64_t key, uint64_t call, uint64_t first, int64_t n, ffg_rng_keyed *keys)
{
    int64_t i;
    for (i = 0; i < n; ++i) {
        keys[i].key = ffg_rng_word64(key, call, first + (uint64_t)i);
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
    return (2,)



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
            "int d, same = 1;",
            "%s *out;" % ctype]
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
    check = "\n".join("""if (%s) {
    %s
}""" % (cond, _indent(_error(d, fmt, *args)).strip()) for cond, fmt, args in checks)
    alloc = """if (ffg_alloc_array(&%(z)s, %(nd)d, shape, sizeof(%(ctype)s), %(allocator)s, %(err)s))
    %(fail)s
out = (%(ctype)s *)%(z)s.data;""" % d
    uniform = " && ".join("st_%s[d] == 0" % pn for pn, _, _, _ in params) or "1"
    reads = "\n".join("const %s %s = *(const %s *)%s.data;" % (ct, pn, ct, var) for pn, var, ct, _ in params)
    fast = "\n".join(x for x in ["const int64_t nel = n;   /* the element count */", reads,
                                 "/* check the parameters once */\nif (nel > 0) {\n%s\n}" % _indent(check)
                                 if check else "", alloc, _fast_fill(op, ctype)] if x)
    general = "\n".join(x for x in [
        "/* check the parameters of every element before drawing */\n" + _walk(nd, params, check) if check else "",
        alloc, "/* element e from the Philox blocks of (key, call, e), in C order */",
        _walk(nd, params, "out[e] = %s;" % _draw_expr(op, ctype))] if x)
    parts.append("""/* every parameter the same for every element (0-d, or broadcast along every axis)? */
for (d = 0; d < %(nd)d; ++d)
    same = same && %(uniform)s;
if (same) {
    /* the common case: one value per parameter, the contiguous output filled in batches */
%(fast)s
} else {
%(general)s
}""" % dict(nd=nd, uniform=uniform, fast=_indent(fast), general=_indent(general)))
    return "/* %s: a draw from the Philox4x32-10 stream of %s */\n{\n%s\n}" % (
        label.replace("*/", "* /"), state, _indent("\n".join(parts)))


def _batched(per_block, body, decl=""):
    """C filling out[0..nel) in runs of up to ``per_block * FFG_RNG_BATCH`` elements: the run's
    shared blocks into wa, wb (ffg_rng_words), then ``body`` for its m elements e0 + [0, m)."""
    return """{
    %(decl)s
    uint64_t wa[FFG_RNG_BATCH], wb[FFG_RNG_BATCH];
    int64_t e0, t;
    for (e0 = 0; e0 < nel; e0 += %(per)d * FFG_RNG_BATCH) {
        const int64_t m = nel - e0 < %(per)d * FFG_RNG_BATCH ? nel - e0 : %(per)d * FFG_RNG_BATCH;
        ffg_rng_words(key, call, (uint64_t)e0 / %(per)d, (int)((m + %(per)d - 1) / %(per)d), wa, wb);
        %(body)s
    }
}""" % dict(per=per_block, body=_indent(body, 8).strip(), decl=decl)


def _pairs(expr):
    """The body of a run of 64-bit elements: element e0 + 2t from wa[t], e0 + 2t + 1 from wb[t];
    ``expr`` is the value, a format of the word."""
    return """for (t = 0; t < m / 2; ++t) {
    out[e0 + 2 * t] = %s;
    out[e0 + 2 * t + 1] = %s;
}
if (m & 1)
    out[e0 + m - 1] = %s;""" % (expr % "wa[t]", expr % "wb[t]", expr % "wa[m / 2]")


def _fast_fill(op, ctype):
    """C filling the contiguous output ``out`` of ``nel`` elements when every parameter is one value
    (the locals named as the parameters; binomial's ``n`` hides the element count): the bits of
    _draw_expr, a batch of blocks at a time, with no odometer and nothing called per element."""
    dist = op.dist
    if dist == "uniform" and op.dtype == "float32":
        u = "(%s)(low + (high - low) * ffg_rng_u24((uint32_t)(%%s)))" % ctype
        return _batched(4, """for (t = 0; t < m / 4; ++t) {
    out[e0 + 4 * t] = %s;
    out[e0 + 4 * t + 1] = %s;
    out[e0 + 4 * t + 2] = %s;
    out[e0 + 4 * t + 3] = %s;
}
for (t = m & ~(int64_t)3; t < m; ++t)
    out[e0 + t] = %s;""" % (u % "wa[t]", u % "wa[t] >> 32", u % "wb[t]", u % "wb[t] >> 32",
                        u % "((t & 2) ? wb : wa)[t >> 2] >> (32 * (t & 1))"))
    if dist == "uniform":
        return _batched(2, _pairs("(%s)(low + (high - low) * ffg_rng_u53(%%s))" % ctype))
    if dist in ("bernoulli", "binomial"):
        one = _batched(2, _pairs("(%s)((int64_t)(%%s >> 11) < thr)" % ctype),
                       "const int64_t thr = (int64_t)ffg_rng_threshold53(p);   /* u53(w) < p as integers */")
        if dist == "bernoulli":
            return one
        return """if (n == 1) {   /* one trial: Bernoulli (n is the parameter here) */
%s
} else {
    int64_t e;
    for (e = 0; e < nel; ++e)
        out[e] = (%s)ffg_rng_binomial(key, call, (uint64_t)e, n, p);
}""" % (_indent(one), ctype)
    if dist == "integers":
        put = "out[e0 + %%s] = (%s)(int64_t)((uint64_t)low + (%%s));" % ctype
        return _batched(2, """int nrej = 0;
for (t = 0; t < m / 2; ++t) {   /* the first tries, without branches */
    const uint64_t v0 = wa[t] & mask, v1 = wb[t] & mask;
    %s
    %s
    rej[nrej] = (int)(2 * t);
    nrej += v0 > rm1;
    rej[nrej] = (int)(2 * t + 1);
    nrej += v1 > rm1;
}
if (m & 1) {
    const uint64_t v0 = wa[m / 2] & mask;
    %s
    rej[nrej] = (int)(m - 1);
    nrej += v0 > rm1;
}
for (t = 0; t < nrej; ++t)   /* the rejected ones: their own blocks */
    %s""" % (put % ("2 * t", "v0"), put % ("2 * t + 1", "v1"), put % ("m - 1", "v0"),
             put % ("rej[t]", "ffg_rng_bounded_retry(key, call, (uint64_t)(e0 + rej[t]), rm1, mask)")),
                        "const uint64_t rm1 = (uint64_t)high - (uint64_t)low - 1, mask = ffg_rng_range_mask(rm1);\n"
                        "    int rej[2 * FFG_RNG_BATCH + 1];")
    if dist == "normal":
        return _batched(2, """ffg_rng_normal_pairs(wa, wb, (int)((m + 1) / 2), ev, od);
for (t = 0; t < m / 2; ++t) {
    out[e0 + 2 * t] = (%s)(loc + scale * ev[t]);
    out[e0 + 2 * t + 1] = (%s)(loc + scale * od[t]);
}
if (m & 1)
    out[e0 + m - 1] = (%s)(loc + scale * ev[m / 2]);""" % (ctype, ctype, ctype), "double ev[FFG_RNG_BATCH], od[FFG_RNG_BATCH];")
    raise MethodNotDefined("%s has no C code" % op)


# ------------------------------------------------------------------ choice and permutation


def _head(op, d, decl, nd, count, what):
    """The first parts of choice's and permutation's code: the locals (``decl``), the state, the
    ``nd`` dimensions of ``size`` (when the op has it) and ``count``, their product."""
    parts = ["uint64_t key, call;\n%s%s" % (decl, "\nint d;" if op.has_size else ""), _read_state(d)]
    if op.has_size:
        parts.append(_read_size(d, nd))
    parts.append("%s = ffg_size(%d, shape);   /* %s */" % (count, nd, what))
    return parts


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
    parts = _head(op, d, "int64_t shape[%d], k, n, e;" % nd1, nd, "k", "the number of draws")
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
    parts = _head(op, d, "int64_t shape[%d], batch, n, b;" % nd, lead, "batch", "the number of permutations")
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
