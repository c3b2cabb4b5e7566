"""The vectorised transcendental helpers of ffigraph.scalar.vmath_c (libmvec on x86-64).

A small library is built from ``vmath_support_code`` (pasted twice, as the fused loop may),
exported wrappers around each helper, and long double reference functions from libm. Every
function and dtype is checked on every dispatch level this CPU supports (AVX-512, AVX2, SSE,
scalar libm): special values exactly as numpy gives them (NaN, +-inf, signed zeros, overflow,
underflow, saturation), accuracy within ``ULP_BOUND`` (4) ulps of the long double reference on
random points over several ranges, subnormals and huge arguments, tails and in-place calls.
"""
import math
import re

import numpy as np
import pytest

from ffigraph.scalar.basic import SCALAR_TABLE
from ffigraph.scalar.vmath_c import (LEVELS, VECTOR_FUNCTIONS, VMATH_LIBRARIES,
                                     vector_function_name, vmath_support_code)

DTYPES = ("float64", "float32")
# The documentation's claim (docs/tutorial/rewrites.rst), pinned here: the module's own ULP_BOUND may not loosen what is tested.
ULP_BOUND = 4
CTYPES = {"float64": "double", "float32": "float"}
LONGDOUBLE_OK = np.finfo(np.longdouble).nmant >= 63  # x87 80-bit (x86-64) or binary128
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _export_source():
    lines = ['#define T_EXPORT __attribute__((visibility("default")))']
    for name in VECTOR_FUNCTIONS:
        for dtype in DTYPES:
            fn, t = vector_function_name(name, dtype), CTYPES[dtype]
            lines.append("T_EXPORT void t_%s(int64_t n, const %s *x, %s *y) { %s(n, x, y); }" % (fn, t, t, fn))
        # the reference: libm's long double function, on double (or exactly widened float) inputs
        lines.append("T_EXPORT void r_%s(int64_t n, const double *x, long double *y)"
                     " { int64_t i; for (i = 0; i < n; i++) y[i] = %sl((long double)x[i]); }" % (name, name))
    return "\n".join(lines) + "\n"


def _cdef():
    lines = ["int ffg_vmath_set_level(int);", "int ffg_vmath_cpu_level(void);"]
    for name in VECTOR_FUNCTIONS:
        for dtype in DTYPES:
            t = CTYPES[dtype]
            lines.append("void t_%s(int64_t, const %s *, %s *);" % (vector_function_name(name, dtype), t, t))
        lines.append("void r_%s(int64_t, const double *, long double *);" % name)
    return "\n".join(lines)


def _pairs():
    return [(n, d) for n in VECTOR_FUNCTIONS for d in DTYPES]


class VmathLib:
    def __init__(self, path):
        import cffi

        self.path = path
        self.ffi = cffi.FFI()
        self.ffi.cdef(_cdef())
        self.lib = self.ffi.dlopen(path)
        self.cpu_level = self.lib.ffg_vmath_cpu_level()

    def set_level(self, level):
        return self.lib.ffg_vmath_set_level(level)

    def call(self, name, x, out=None, n=None):
        """The helper on contiguous ``x``; into ``out`` (may be ``x``) or a new array."""
        dtype = x.dtype.name
        y = np.empty_like(x) if out is None else out
        t = CTYPES[dtype]
        fn = getattr(self.lib, "t_" + vector_function_name(name, dtype))
        fn(x.size if n is None else n, self.ffi.from_buffer(t + "[]", x, require_writable=False),
           self.ffi.from_buffer(t + "[]", y))
        return y

    def reference(self, name, x):
        """The long double reference for ``x`` (any float dtype; converted exactly to float64)."""
        xd = np.ascontiguousarray(x, dtype=np.float64)
        y = np.empty(xd.shape, np.longdouble)
        getattr(self.lib, "r_" + name)(xd.size, self.ffi.from_buffer("double[]", xd),
                                       self.ffi.from_buffer("long double[]", y))
        return y


@pytest.fixture(scope="module")
def vm(tmp_path_factory):
    from ffigraph.linkers.c.build import build_library

    code = vmath_support_code(_pairs(), test_hooks=True)
    # pasted twice, and once more from a separate call for a subset: the guards make it harmless
    source = code + code + vmath_support_code([("exp", "float64")]) + _export_source()
    path = build_library(source, "test_vmath", {"libraries": VMATH_LIBRARIES},
                         directory=str(tmp_path_factory.mktemp("vmath")))
    return VmathLib(path)


_LEVEL_NEEDS = {3: "AVX-512F", 2: "AVX2 and FMA", 1: "x86-64 with glibc's libmvec"}


@pytest.fixture(params=[3, 2, 1, 0], ids=[LEVELS[i] for i in (3, 2, 1, 0)])
def level(request, vm):
    lv = request.param
    if lv > vm.cpu_level:
        pytest.skip("this CPU/platform lacks %s (best level here: %s)" % (_LEVEL_NEEDS[lv], LEVELS[vm.cpu_level]))
    assert vm.set_level(lv) == lv
    yield lv
    vm.set_level(-1)


def numpy_result(name, x):
    with np.errstate(all="ignore"):
        if name == "erf":  # as ffigraph.scalar.basic computes it: math.erf in float64
            return _erf(x.astype(np.float64)).astype(x.dtype)
        return getattr(np, name)(x)


def ulp_errors(y, ref, dtype):
    """|y - ref| in units of the last place of ``dtype`` at ``ref`` (long double ``ref``).

    Where ``ref`` rounds to +-inf or NaN, ``y`` must be that value (error 0) or the error is inf.
    """
    fi = np.finfo(dtype)
    y = np.asarray(y)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = ref.astype(dtype)
    err = np.zeros(ref.shape, np.longdouble)
    special = ~np.isfinite(rounded)
    same = (y == rounded) | (np.isnan(y) & np.isnan(rounded))
    err[special & ~same] = np.inf
    fin = ~special
    r = ref[fin]
    _, e = np.frexp(r)
    e = np.maximum(e.astype(np.int64) - 1, fi.minexp)  # |r| in [2**e, 2**(e+1)), subnormals share one ulp
    ulp = np.ldexp(np.ones(r.shape, np.longdouble), (e - fi.nmant).astype(np.int32))
    with np.errstate(all="ignore"):
        d = np.abs(y[fin].astype(np.longdouble) - r) / ulp
    err[fin] = np.where(np.isfinite(y[fin]), d, np.inf)
    return err


# ------------------------------------------------------------------------------- the API


def test_api():
    assert set(VECTOR_FUNCTIONS) <= set(SCALAR_TABLE)
    assert {"exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tanh"} <= set(VECTOR_FUNCTIONS)
    assert vector_function_name("exp", "float64") == "ffg_vexp_f64"
    assert vector_function_name("exp", np.float32) == "ffg_vexp_f32"
    assert vector_function_name("log1p", np.dtype("float64")) == "ffg_vlog1p_f64"
    for name, dtype in [("exp", "int64"), ("exp", "float16"), ("exp", "complex128"), ("exp", "bool"),
                        ("sqrt", "float64"), ("add", "float64"), ("nonsense", "float32"), ("exp", "nonsense")]:
        assert vector_function_name(name, dtype) is None
    with pytest.raises(ValueError):
        vmath_support_code([("exp", "int32")])
    assert "mvec" in VMATH_LIBRARIES or VMATH_LIBRARIES == ("m",)
    assert VMATH_LIBRARIES[-1] == "m"
    assert LEVELS == ("scalar", "sse", "avx2", "avx512")


def test_source_is_plain_c():
    code = vmath_support_code(_pairs())
    headers = set(re.findall(r"#\s*include\s*<([^>]+)>", code))
    assert headers <= {"math.h", "stdint.h", "immintrin.h"}, headers
    assert "Python.h" not in code and "numpy" not in code
    assert "ffg_vmath_set_level" not in code  # test hooks only when asked
    # deterministic (the compile cache keys on the source), whatever the order of the pairs
    assert vmath_support_code(reversed(_pairs())) == code
    for name, dtype in _pairs():
        fn = vector_function_name(name, dtype)
        assert "static void %s(int64_t n, const %s *x, %s *y)" % (fn, CTYPES[dtype], CTYPES[dtype]) in code
        assert "#ifndef %s_DEFINED" % fn.upper() in code


def test_library_exports_only_wrappers(vm):
    """The helpers are static: the test library exports only its wrappers and the test hooks."""
    import shutil
    import subprocess

    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm not found")
    out = subprocess.run([nm, "-D", "--defined-only", vm.path], stdout=subprocess.PIPE, universal_newlines=True)
    assert out.returncode == 0
    names = {line.split()[-1].split("@")[0] for line in out.stdout.splitlines() if line.strip()}
    names = {n for n in names if not n.startswith("_")}  # _init, _fini, __bss_start, ...
    expected = {"ffg_vmath_set_level", "ffg_vmath_cpu_level"}
    for name in VECTOR_FUNCTIONS:
        expected.add("r_" + name)
        expected.update("t_" + vector_function_name(name, d) for d in DTYPES)
    assert names == expected


def test_cpu_level(vm):
    assert 0 <= vm.cpu_level <= 3
    if "mvec" in VMATH_LIBRARIES:
        assert vm.cpu_level >= 1  # SSE2 is the x86-64 baseline
        flags = ""
        try:
            with open("/proc/cpuinfo") as fh:
                flags = fh.read()
        except OSError:
            pass
        if re.search(r"\bavx512f\b", flags):
            assert vm.cpu_level == 3
    assert vm.set_level(99) == vm.cpu_level
    assert vm.set_level(0) == 0
    assert vm.set_level(-1) == vm.cpu_level


def test_portable_fallback(vm, tmp_path):
    """With FFG_VMATH_SCALAR_ONLY (what other platforms get) the helpers are plain <math.h> loops:
    no libmvec symbol, level 0, and the same results as the scalar level on x86-64."""
    import shutil
    import subprocess

    from ffigraph.linkers.c.build import build_library

    source = "#define FFG_VMATH_SCALAR_ONLY 1\n" + vmath_support_code(_pairs(), test_hooks=True) + _export_source()
    scalar = VmathLib(build_library(source, "test_vmath_scalar", {"libraries": ("m",)}, directory=str(tmp_path)))
    assert scalar.cpu_level == 0 and scalar.set_level(3) == 0
    nm = shutil.which("nm")
    if nm is not None:
        out = subprocess.run([nm, "-u", scalar.path], stdout=subprocess.PIPE, universal_newlines=True).stdout
        assert "_ZGV" not in out and "__cpu_model" not in out
    vm.set_level(0)
    try:
        for name in VECTOR_FUNCTIONS:
            for dtype in DTYPES:
                x = np.concatenate([special_inputs(name, dtype), accuracy_points(name, dtype, 2000)])
                assert scalar.call(name, x).tobytes() == vm.call(name, x).tobytes(), (name, dtype)
    finally:
        vm.set_level(-1)


# ------------------------------------------------------------------------ special values


def special_inputs(name, dtype):
    fi = np.finfo(dtype)
    sub = float(fi.tiny) * 2.0 ** -(fi.nmant // 2)
    v = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 10.0,
         float(fi.tiny), -float(fi.tiny), sub, -sub, float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
         float(fi.max), -float(fi.max), 1e-20, -1e-20, 1e-7, -1e-7, 30.0, -30.0, 1e3, -1e3, 1e6, -1e6,
         1e30, -1e30]
    if dtype == "float64":
        v += [1e-300, -1e-300, 1e100, 1e300, -1e300, 1e22, -1e22, 2.0 ** 1000, 700.0, -700.0,
              709.7, -744.0, 710.0, -746.0, 1e5, -1e5]
    else:
        v += [1e-38, -1e-38, 1e20, 1e38, -1e38, 88.0, -87.0, 89.0, -104.0, 1e5, -1e5]
    if name in ("log1p",):
        v += [-0.999, -1.0 + float(fi.eps), -1.5, -2.0, -1e30]
    if name in ("sin", "cos", "tan"):
        v += [math.pi, -math.pi, math.pi / 2, 3 * math.pi / 2, 1e15, 1e200, 2.0 ** 120, 1e10, 1e300]
    if name in ("sin", "cos") and dtype == "float64":
        # the hardest case for argument reduction: cos is ~4.7e-19 (glibc's cos, numpy's, libmvec's
        # and the reference are all 7.95 ulp off); not for tan, where glibc's tan and tanl are 14 ulp
        # off but libmvec's tan is right (0.36 ulp), so neither numpy nor the reference can judge it
        v += [6381956970095103.0 * 2.0 ** 797, -6381956970095103.0 * 2.0 ** 797]
    if name in ("tanh", "erf"):
        v += [20.0, -20.0, 40.0, -40.0, 6.0, -6.0, 100.0, -100.0]
    if name == "expm1":
        v += [-40.0, -50.0, -100.0, 1e-300, -1e-300]
    with np.errstate(over="ignore"):
        return np.array(v, dtype=np.float64).astype(dtype)


def check_special(vm, name, dtype, x, y, where=""):
    """``y`` (the helper on ``x``) keeps numpy's special values exactly: NaN where numpy gives NaN;
    infinities, zeros (with numpy's sign) and saturation (tanh/erf -> +-1, expm1 -> -1) bit for
    bit. Other values are numpy's own or within ULP_BOUND of the long double reference, with
    numpy's sign (numpy's ufuncs may use other SIMD code than libm, so not always both)."""
    expect = numpy_result(name, x)
    nan = np.isnan(expect)
    saturated = (np.abs(expect) == 1) & (name in ("tanh", "erf", "expm1"))
    exact = ~nan & (np.isinf(expect) | (expect == 0) | saturated)
    same_sign = np.signbit(y) == np.signbit(expect)
    same = (y == expect) & same_sign
    close = np.isfinite(y) & same_sign & (ulp_errors(y, vm.reference(name, x), dtype) <= ULP_BOUND)
    ok = np.where(nan, np.isnan(y), np.where(exact, same, same | close))
    if not ok.all():
        bad = np.flatnonzero(~ok)[:10]
        raise AssertionError("%s_%s%s: x=%r got %r, numpy %r" % (name, dtype, where, x[bad].tolist(),
                                                              y[bad].tolist(), expect[bad].tolist()))


def test_special_values(vm, level):
    """Every function, float64 and float32, at this level."""
    for dtype in DTYPES:
        _check_special_values(vm, dtype)


def _check_special_values(vm, dtype):
    rng = np.random.RandomState(7)
    for name in VECTOR_FUNCTIONS:
        sp = special_inputs(name, dtype)
        # each special value alone (n = 1, all tail), then mixed into ordinary values at every
        # offset in a vector, where libmvec's per-lane special-case paths must leave the others alone
        alone = np.concatenate([vm.call(name, sp[i:i + 1]) for i in range(sp.size)])
        check_special(vm, name, dtype, sp, alone, " alone")
        ordinary = rng.uniform(0.1, 3.0, size=3 * sp.size).astype(dtype)
        x = np.concatenate([sp, ordinary])
        rng.shuffle(x)
        check_special(vm, name, dtype, x, vm.call(name, x), " mixed")
        xx = np.concatenate([sp, sp[::-1], sp])
        check_special(vm, name, dtype, xx, vm.call(name, xx), " repeated")


def test_same_result_anywhere(vm, level):
    """An element's result does not depend on its position (tails go through the same vector
    function), on the length of the block, or on computing in place (float64 and float32)."""
    for dtype in DTYPES:
        _check_same_result_anywhere(vm, dtype)


def _check_same_result_anywhere(vm, dtype):
    rng = np.random.RandomState(3)
    for name in VECTOR_FUNCTIONS:
        x = rng.uniform(-5.0, 5.0, size=71).astype(dtype)
        if name in ("log", "log2", "log10"):
            x = np.abs(x)
        if name == "log1p":
            x = np.abs(x) - 0.9
        full = vm.call(name, x)
        for off in range(0, 17):
            for n in (1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33):
                part = np.ascontiguousarray(x[off:off + n])
                got = vm.call(name, part)
                assert got.tobytes() == full[off:off + part.size].tobytes(), \
                    "%s_%s off=%d n=%d" % (name, dtype, off, n)
        inplace = x.copy()
        vm.call(name, inplace, out=inplace)
        np.testing.assert_array_equal(inplace.view(np.uint8), full.view(np.uint8))
        # n = 0 writes nothing; n < size writes only the first n
        sentinel = np.full(x.shape, 42, dtype)
        vm.call(name, x, out=sentinel, n=0)
        assert (sentinel == 42).all()
        vm.call(name, x, out=sentinel, n=13)
        np.testing.assert_array_equal(sentinel[:13], full[:13])
        assert (sentinel[13:] == 42).all()


# ---------------------------------------------------------------------------------- accuracy


def _logu(rng, lo, hi, size, signed=False):
    """log-uniform magnitudes in [10**lo, 10**hi], random signs when ``signed``."""
    x = 10.0 ** rng.uniform(lo, hi, size)
    return x * rng.choice([-1.0, 1.0], size) if signed else x


def accuracy_points(name, dtype, size=100000):
    """~``size`` random inputs of ``dtype`` over several ranges for function ``name``."""
    rng = np.random.RandomState(sum(map(ord, name + dtype)))
    f64 = dtype == "float64"
    k = size // 4
    u = rng.uniform
    if name == "exp":
        parts = [u(-745, 709.7, k) if f64 else u(-103, 88.7, k), u(-1, 1, k), u(-20, 20, k),
                 _logu(rng, -300 if f64 else -38, 0, k, True)]
    elif name == "expm1":
        parts = [u(-40, 709.7, k) if f64 else u(-20, 88.7, k), u(-1, 1, k), _logu(rng, -20, 0, k, True),
                 u(-0.5, 0.5, k)]
    elif name in ("log", "log2", "log10"):
        lo, hi = (-307, 300) if f64 else (-37, 38)
        parts = [_logu(rng, lo, hi, k), u(0.5, 2.0, k), u(0.9, 1.1, k),
                 float(np.finfo(dtype).tiny) * u(0, 1, k)]  # subnormals
    elif name == "log1p":
        lo, hi = (-300, 300) if f64 else (-37, 38)
        parts = [_logu(rng, lo, hi, k), u(-1, 1, k), _logu(rng, -20, 0, k, True), u(-1, -0.5, k)]
    elif name in ("sin", "cos", "tan"):
        parts = [u(-1e4, 1e4, k), u(-math.pi, math.pi, k), _logu(rng, -20, 0, k, True),
                 _logu(rng, 4, 300 if f64 else 38, k, True)]  # huge arguments
    elif name == "tanh":
        parts = [u(-20, 20, k), u(-1, 1, k), _logu(rng, -20, 0, k, True), u(-0.1, 0.1, k)]
    elif name == "erf":
        parts = [u(-6, 6, k), u(-1, 1, k), _logu(rng, -20, 0, k, True), u(-3, 3, k)]
    else:
        raise KeyError(name)
    return np.concatenate(parts).astype(dtype)


_REFS = {}


def max_ulp_error(vm, name, dtype, size=100000):
    """(max error in ulps, input where it happens) of the helper at the current level."""
    key = (name, dtype, size)
    if key not in _REFS:
        x = accuracy_points(name, dtype, size)
        _REFS[key] = x, vm.reference(name, x)
    x, ref = _REFS[key]
    err = ulp_errors(vm.call(name, x), ref, dtype)
    i = int(np.argmax(err))
    return float(err[i]), x[i]


@pytest.mark.skipif(not LONGDOUBLE_OK, reason="long double is not wider than double here")
@pytest.mark.parametrize("name", VECTOR_FUNCTIONS)
def test_accuracy(vm, level, name):
    """float64 and float32 of one function at this level."""
    for dtype in DTYPES:
        err, where = max_ulp_error(vm, name, dtype)
        assert err <= ULP_BOUND, "%s_%s at level %s: %.3g ulp at x=%r" % (name, dtype, LEVELS[level], err, where)


@pytest.mark.skipif(not LONGDOUBLE_OK, reason="long double is not wider than double here")
def test_reference_is_accurate(vm):
    """The long double reference agrees with mpmath to well under 0.01 ulp of float64."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 160
    fns = {"exp": mpmath.exp, "expm1": mpmath.expm1, "log": mpmath.log, "log1p": mpmath.log1p,
           "log2": lambda v: mpmath.log(v, 2), "log10": mpmath.log10, "sin": mpmath.sin, "cos": mpmath.cos,
           "tan": mpmath.tan, "tanh": mpmath.tanh, "erf": mpmath.erf}
    worst = {}
    for name in VECTOR_FUNCTIONS:
        x = accuracy_points(name, "float64", 400)
        ref = vm.reference(name, x)
        m, e = np.frexp(ref)
        m = np.ldexp(m, 64)  # an integer below 2**64: hi + lo holds it exactly, as doubles
        hi = m.astype(np.float64)
        lo = (m - hi).astype(np.float64)
        errs = []
        for v, h, l, k in zip(x.tolist(), hi.tolist(), lo.tolist(), (e - 64).tolist()):
            exact = fns[name](mpmath.mpf(v))
            if exact == 0 or not mpmath.isfinite(exact) or abs(exact) > 1e308:
                continue
            ulp = mpmath.ldexp(1, max(int(mpmath.floor(mpmath.log(abs(exact), 2))), -1022) - 52)
            errs.append(float(abs(mpmath.ldexp(mpmath.mpf(h) + mpmath.mpf(l), k) - exact) / ulp))
        worst[name] = max(errs)
    assert max(worst.values()) < 0.01, worst
