"""Vectorised transcendental functions for the fused elementwise C loop.

The fused loop evaluates an expression block by block; for a transcendental
scalar op it calls a block helper generated here::

    static void ffg_vexp_f64(int64_t n, const double *x, double *y);   /* y may equal x */

On x86-64 with glibc the helpers call glibc's libmvec (the x86-64 vector
function ABI: ``_ZGVbN2v_exp`` for SSE, ``_ZGVdN4v_exp`` for AVX2,
``_ZGVeN8v_exp`` for AVX-512, and the ``f`` variants for float32), choosing
the widest level the CPU supports at run time with ``__builtin_cpu_supports``
(the level is detected once and cached). The code is compiled without any
``-march`` flag: only the functions that use 256/512-bit types carry a
``target`` attribute. A block's tail (``n`` not a multiple of the vector
width) is copied into a padded local vector and goes through the same vector
function, so an element's result does not depend on where it sits in the
array. Elsewhere (other architectures, other C libraries) the helpers are
plain scalar loops over ``<math.h>``.

libmvec keeps C99's special values (NaN, +-inf, signed zeros, log(0) = -inf,
log(<0) = NaN, overflow to inf, underflow to 0, subnormals, huge sin/cos
arguments) for every function listed in VECTOR_FUNCTIONS; tests/scalar/test_vmath.py
checks them against numpy on every dispatch level, and checks accuracy
(at most ``ULP_BOUND`` ulps against a long double reference).

A library whose source includes these helpers must link ``VMATH_LIBRARIES``.
"""
from __future__ import annotations

import os

import numpy as np

# scalar-op names (keys of ffigraph.scalar.basic.SCALAR_TABLE) with a vector helper,
# mapped to the glibc 2.x minor version whose libmvec first has the function
_MVEC_SINCE = {
    "exp": 22, "log": 22, "sin": 22, "cos": 22,
    "expm1": 35, "log1p": 35, "log2": 35, "log10": 35, "tan": 35, "tanh": 35, "erf": 35,
}

VECTOR_FUNCTIONS = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh", "erf")

# the accuracy tests/scalar/test_vmath.py asserts for every function, dtype and dispatch level
# (the x86-64 vector function ABI's own promise for libmvec is 4 ulp)
ULP_BOUND = 4

# dispatch levels, as ffg_vmath_set_level numbers them
LEVELS = ("scalar", "sse", "avx2", "avx512")

# dtype name -> (C type, suffix of the helper's name, libm suffix, SSE lanes)
_DTYPES = {"float64": ("double", "f64", "", 2), "float32": ("float", "f32", "f", 4)}


def _glibc_version():
    try:
        value = os.confstr("CS_GNU_LIBC_VERSION")  # 'glibc 2.36'; no subprocess, no file reads
    except (AttributeError, ValueError, OSError):
        return None
    if not value or not value.startswith("glibc "):
        return None
    try:
        return tuple(int(p) for p in value.split()[1].split(".")[:2])
    except ValueError:
        return None


def _uses_mvec():
    """Whether the generated C takes its libmvec branch on this platform (x86-64 glibc >= 2.22)."""
    if not hasattr(os, "uname"):
        return False
    uname = os.uname()
    if uname.sysname != "Linux" or uname.machine not in ("x86_64", "amd64"):
        return False
    version = _glibc_version()
    return version is not None and version >= (2, 22)


# libraries a library using these helpers must link
VMATH_LIBRARIES = ("mvec", "m") if _uses_mvec() else ("m",)


def _dtype_name(dtype):
    try:
        return np.dtype(dtype).name
    except TypeError:
        return None


def vector_function_name(name, dtype):
    """The C name of the block helper for scalar op ``name`` on ``dtype``, or None if there is none."""
    dt = _dtype_name(dtype)
    if name not in VECTOR_FUNCTIONS or dt not in _DTYPES:
        return None
    return "ffg_v%s_%s" % (name, _DTYPES[dt][1])


_COMMON = r"""
#ifndef FFG_VMATH_COMMON_DEFINED
#define FFG_VMATH_COMMON_DEFINED
#include <math.h>
#include <stdint.h>
/* libmvec: x86-64 glibc >= 2.22 (exp, log, sin, cos); >= 2.35 for the others.
   Defining FFG_VMATH_SCALAR_ONLY first gives the portable scalar loops everywhere. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GLIBC_MINOR__) \
    && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 22) && !defined(FFG_VMATH_SCALAR_ONLY)
#define FFG_VMATH_X86 1
#define FFG_VMATH_GLIBC_MINOR (__GLIBC__ > 2 ? 1000 : __GLIBC_MINOR__)
/* libmvec's vector types (<immintrin.h>'s __m128d, __m256, ...) in GCC's vector extension, and
   unaligned loads and stores through memcpy: the same code and calling convention without
   parsing <immintrin.h>, which took a quarter of a second of every build using these helpers. */
typedef double ffg_v2df __attribute__((vector_size(16)));
typedef double ffg_v4df __attribute__((vector_size(32)));
typedef double ffg_v8df __attribute__((vector_size(64)));
typedef float ffg_v4sf __attribute__((vector_size(16)));
typedef float ffg_v8sf __attribute__((vector_size(32)));
typedef float ffg_v16sf __attribute__((vector_size(64)));
#define FFG_VLOAD(type, p) __extension__ ({ type ffg_v_; __builtin_memcpy(&ffg_v_, (p), sizeof ffg_v_); ffg_v_; })
#define FFG_VSTORE(p, v) do { __typeof__(v) ffg_s_ = (v); __builtin_memcpy((p), &ffg_s_, sizeof ffg_s_); } while (0)
/* dispatch level: 0 scalar libm, 1 SSE2 (x86-64 baseline), 2 AVX2+FMA, 3 AVX-512F; -1 not yet known */
static int ffg_vmath_level_cache = -1;
static int ffg_vmath_detect(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return 3;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 2;
    return 1;
}
static inline int ffg_vmath_level(void)
{
    int level = __atomic_load_n(&ffg_vmath_level_cache, __ATOMIC_RELAXED);
    if (__builtin_expect(level < 0, 0)) {
        level = ffg_vmath_detect();
        __atomic_store_n(&ffg_vmath_level_cache, level, __ATOMIC_RELAXED);
    }
    return level;
}
#else
#define FFG_VMATH_X86 0
#define FFG_VMATH_GLIBC_MINOR 0
#endif
#endif /* FFG_VMATH_COMMON_DEFINED */
"""

_TEST_HOOKS = r"""
#ifndef FFG_VMATH_TEST_HOOKS_DEFINED
#define FFG_VMATH_TEST_HOOKS_DEFINED
/* Test hooks. ffg_vmath_cpu_level: the widest level this CPU supports (0 where the helpers are
   scalar loops). ffg_vmath_set_level(level): use min(level, cpu level) from now on (a negative
   level restores the detected one); returns the level in effect. */
__attribute__((visibility("default"))) int ffg_vmath_cpu_level(void)
{
#if FFG_VMATH_X86
    return ffg_vmath_detect();
#else
    return 0;
#endif
}
__attribute__((visibility("default"))) int ffg_vmath_set_level(int level)
{
#if FFG_VMATH_X86
    int cpu = ffg_vmath_detect();
    if (level < 0 || level > cpu)
        level = cpu;
    __atomic_store_n(&ffg_vmath_level_cache, level, __ATOMIC_RELAXED);
    return level;
#else
    (void)level;
    return 0;
#endif
}
#endif
"""

# one ISA's block loop: LD/ST unaligned load/store (macro heads), W lanes, SYM libmvec symbol
_ISA_LOOP = r"""
%(attr)sstatic void %(fn)s_%(isa)s(int64_t n, const %(t)s *x, %(t)s *y)
{
    int64_t i = 0, k, m;
    %(t)s buf[%(w)d];
    for (; i + %(w)d <= n; i += %(w)d)
        %(st)sy + i, %(sym)s(%(ld)sx + i)));
    m = n - i;
    if (m > 0) {
        /* the tail goes through the same vector function, padded with a harmless 1 */
        for (k = 0; k < %(w)d; k++)
            buf[k] = k < m ? x[i + k] : (%(t)s)1;
        %(st)sbuf, %(sym)s(%(ld)sbuf)));
        for (k = 0; k < m; k++)
            y[i + k] = buf[k];
    }
}
"""

_ISAS = (
    # isa, target attribute, mangling letter, width multiplier (x SSE lanes)
    ("sse", "", "b", 1),
    ("avx2", '__attribute__((target("avx2,fma"))) ', "d", 2),
    ("avx512", '__attribute__((target("avx512f"))) ', "e", 4),
)


def _function_code(name, dtype):
    ctype, sfx, fsuffix, sse_lanes = _DTYPES[dtype]
    fn = vector_function_name(name, dtype)
    guard = fn.upper() + "_DEFINED"
    libm = name + fsuffix
    out = ["#ifndef %s\n#define %s" % (guard, guard)]
    out.append("static void %s_scalar(int64_t n, const %s *x, %s *y)\n{\n    int64_t i;\n"
               "    for (i = 0; i < n; i++)\n        y[i] = %s(x[i]);\n}" % (fn, ctype, ctype, libm))
    out.append("#if FFG_VMATH_X86 && FFG_VMATH_GLIBC_MINOR >= %d" % _MVEC_SINCE[name])
    for isa, attr, letter, mult in _ISAS:
        w = sse_lanes * mult
        vtype = "ffg_v%d%s" % (w, "df" if dtype == "float64" else "sf")
        sym = "_ZGV%sN%dv_%s" % (letter, w, libm)
        out.append("%s%s %s(%s);" % (attr, vtype, sym, vtype))
        out.append(_ISA_LOOP % dict(attr=attr, fn=fn, isa=isa, t=ctype, w=w, sym=sym,
                                    ld="FFG_VLOAD(%s, " % vtype, st="FFG_VSTORE("))
    out.append(r"""__attribute__((unused)) static void %(fn)s(int64_t n, const %(t)s *x, %(t)s *y)
{
    switch (ffg_vmath_level()) {
    case 3: %(fn)s_avx512(n, x, y); return;
    case 2: %(fn)s_avx2(n, x, y); return;
    case 1: %(fn)s_sse(n, x, y); return;
    default: %(fn)s_scalar(n, x, y); return;
    }
}
#else
__attribute__((unused)) static void %(fn)s(int64_t n, const %(t)s *x, %(t)s *y)
{
    %(fn)s_scalar(n, x, y);
}
#endif
#endif /* %(guard)s */""" % dict(fn=fn, t=ctype, guard=guard))
    return "\n".join(out) + "\n"


def vmath_support_code(pairs, test_hooks=False):
    """C source defining the block helpers for an iterable of (scalar-op name, dtype) pairs.

    Each helper is ``static void ffg_v<name>_<f64|f32>(int64_t n, const T *x, T *y)`` (y may
    equal x) and every definition is guarded, so pasting the result (or another call's result)
    twice into one translation unit is harmless. ``test_hooks=True`` adds the exported
    ``int ffg_vmath_set_level(int)`` and ``int ffg_vmath_cpu_level(void)`` (see LEVELS).
    Raises ValueError for a pair with no helper (check ``vector_function_name`` first).
    """
    wanted = set()
    for name, dtype in pairs:
        if vector_function_name(name, dtype) is None:
            raise ValueError("no vector helper for %s on %s" % (name, dtype))
        wanted.add((name, _dtype_name(dtype)))
    parts = [_COMMON]
    if test_hooks:
        parts.append(_TEST_HOOKS)
    for name, dtype in sorted(wanted):
        parts.append(_function_code(name, dtype))
    return "\n".join(parts)
