"""Complex to real: ``cast`` refuses it (which real number is meant is the caller's choice), and
``real``, ``imag``, ``angle`` and ``abs`` give the parts, against numpy.

Complex values have no C code yet: their cases run under the Python linker and ``c|py`` (where
they fall back to Python); the parts of real values (int and float) run under ``py`` and ``c``.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph.compile.mode import Mode
from helpers import Case, check_cases


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_cast_of_complex_to_real_raises_naming_the_parts(dtype):
    """PyTensor's message; a cast to a complex dtype is fine."""
    z = T.tensor(dtype, (None,), "z")
    for target in ("float64", "float32", "int64", "int8", "uint8", "bool"):
        for build in (lambda: T.cast(z, target), lambda: z.astype(target)):
            with pytest.raises(TypeError, match=r"Casting from complex to real is ambiguous: consider real\(\), "
                                                r"imag\(\), angle\(\) or abs\(\)"):
                build()
    assert T.cast(z, "complex64").dtype == "complex64" and z.astype("complex128").dtype == "complex128"


ZV = np.array([[1 + 2j, -3 - 0.5j, 0j], [-1e30 + 1e-30j, 2j, -0.0 - 1j]])


@pytest.mark.parametrize("linker", ["py", "c|py"])
def test_parts_of_complex_values(linker):
    """real, imag (also as properties), angle and abs of complex64 and complex128, in one function."""
    cases = []
    for dtype, part in (("complex64", "float32"), ("complex128", "float64")):
        v = ZV.astype(dtype)
        cases += [
            Case("%s real" % dtype, T.real, np.real, [v], dtype=part),
            Case("%s .real" % dtype, lambda z: z.real, np.real, [v], dtype=part),
            Case("%s imag" % dtype, T.imag, np.imag, [v], dtype=part),
            Case("%s .imag" % dtype, lambda z: z.imag, np.imag, [v], dtype=part),
            Case("%s angle" % dtype, T.angle, np.angle, [v], dtype=part),
            Case("%s abs" % dtype, T.abs, np.abs, [v], dtype=part),
            Case("%s abs()" % dtype, abs, np.abs, [v], dtype=part),
        ]
    check_cases(cases, Mode(linker=linker, optimizer=None))


def test_parts_of_real_values(mode):
    """Of a real value: itself and zero in its dtype, and its angle (0 or pi, NaN for NaN) as a float,
    as numpy (np.angle of an int32 is float64), in C too."""
    x = np.array([[1.5, -2.0, -0.0], [np.nan, np.inf, 0.0]])
    i = np.array([[3, -4, 0]], dtype="int32")
    cases = []
    for v in (x, x.astype("float32"), i):
        dt = v.dtype.name
        angle_dtype = "float64" if dt == "int32" else dt
        cases += [Case("%s real" % dt, T.real, np.real, [v], dtype=dt),
                  Case("%s imag" % dt, lambda a: a.imag, np.imag, [v], dtype=dt),
                  Case("%s angle" % dt, T.angle, lambda a: np.angle(a).astype(angle_dtype), [v], dtype=angle_dtype)]
    check_cases(cases, mode)
