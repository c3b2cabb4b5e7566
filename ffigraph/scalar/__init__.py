"""Scalar operations and scalar-typed variables: PyTensor's ``pytensor.scalar``.

``ffigraph.scalar.basic`` holds the table every elementwise op is built from (each op applies to
scalar variables too: ``add(x, y)``), ``ffigraph.scalar.type`` the ScalarType and its variables,
``ffigraph.scalar.composite`` the Composite program fusion makes (or a user, from scalar variables).
"""
from ffigraph.scalar.basic import *  # noqa: F401,F403
from ffigraph.scalar.basic import __all__ as _basic_all
from ffigraph.scalar.basic import __getattr__ as _basic_getattr
from ffigraph.scalar.composite import Composite
from ffigraph.scalar.type import (Scalar, ScalarConstant, ScalarType, ScalarVariable, all_types, as_scalar, autocast_dtype,
                                  bool_, complex64, complex128, complex_types, complexs, constant, continuous_types,
                                  discrete_types, float16, float32, float64, float_types, floats, get_scalar_type,
                                  int8, int16, int32, int64, int_types, integer_types, ints, uint8, uint16, uint32,
                                  uint64, uint_types)

__all__ = list(_basic_all) + [
    "Composite", "Scalar", "ScalarConstant", "ScalarType", "ScalarVariable", "all_types", "as_scalar", "autocast_dtype",
    "bool_", "complex64", "complex128", "complex_types", "complexs", "constant", "continuous_types",
    "discrete_types", "float16", "float32", "float64", "float_types", "floats", "get_scalar_type", "int8", "int16",
    "int32", "int64", "int_types", "integer_types", "ints", "uint8", "uint16", "uint32", "uint64", "uint_types"]


def __getattr__(attr):
    # PyTensor's names that are Python builtins (bool, abs, pow, round): attributes only
    return _basic_getattr(attr)
