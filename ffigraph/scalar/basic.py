"""Scalar operations: one table that says, for each elementwise op, how it computes and types.

Each entry names the op, its arity, its numpy implementation (the reference
semantics used by ``perform``) and its output-dtype rule. The C backend adds
one C expression per entry to the same table, so there is one place that
lists every elementwise op.
"""
from __future__ import annotations

import math

import numpy as np

from ffigraph.config import config
from ffigraph.graph.utils import PropsIdentity

# ------------------------------------------------------------------ dtype rules


def upcast(*dtypes):
    """numpy's promotion of array dtypes (no value-based casting)."""
    return np.result_type(*[np.dtype(d) for d in dtypes]).name


def upgrade_to_float(dtype):
    """PyTensor's rule: small ints and bool become float32, wider ints float64, floats stay."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return dtype.name
    if dtype.kind == "b" or dtype.itemsize <= 2:
        return "float32"
    return "float64"


def _numpy_resolved(ufunc, dtypes):
    """The dtype numpy's own ufunc machinery picks for arrays of these dtypes."""
    try:
        return ufunc(*[np.empty(0, dtype=d) for d in dtypes]).dtype.name
    except TypeError:
        return None


class ScalarOp(PropsIdentity):
    """One elementwise operation on scalars; ``Elemwise`` lifts it to arrays.

    rule: how the output dtype follows from the (promoted) input dtypes:
      'numpy'   what numpy's ufunc gives for arrays of those dtypes;
      'float'   upgrade_to_float of the promoted dtype (inputs are cast to it first); true_div
                of integers and bools only gives floatX, as PyTensor's TrueDiv;
      'bool'    always bool;
      'same'    the promoted dtype.
    kinds: the dtype kinds accepted ('b' bool, 'i'/'u' ints, 'f' float, 'c' complex).
    """

    __props__ = ("name",)

    def __init__(self, name, nin, impl, rule, kinds="biufc"):
        self.name = name
        self.nin = nin
        self.impl = impl
        self.rule = rule
        self.kinds = kinds

    def output_dtype(self, dtypes):
        """The output dtype for these input dtypes, or raise TypeError naming the op."""
        for d in dtypes:
            if np.dtype(d).kind not in self.kinds:
                raise TypeError("%s does not support dtype %s" % (self.name, d))
        promoted = upcast(*dtypes)
        if self.rule == "float":
            if self.name == "true_div" and all(np.dtype(d).kind in "biu" for d in dtypes):
                return config.floatX   # PyTensor's TrueDiv: a quotient of integers (or bools) is a floatX
            return upgrade_to_float(promoted)
        if self.rule == "bool":
            return "bool"
        if self.rule == "same":
            return promoted
        resolved = _numpy_resolved(self.impl, dtypes)
        if resolved is None:
            raise TypeError("%s does not support dtypes %s" % (self.name, ", ".join(dtypes)))
        return resolved

    def compute(self, inputs, out_dtype):
        """Apply to numpy arrays (broadcasting as numpy does), returning out_dtype."""
        if self.rule == "float":
            inputs = [np.asarray(x, dtype=out_dtype) for x in inputs]
        with np.errstate(all="ignore"):
            result = self.impl(*inputs)
        result = np.asarray(result)
        if result.dtype != out_dtype:
            result = result.astype(out_dtype)
        return result

    def __str__(self):
        return self.name


class Cast(ScalarOp):
    """Conversion to ``dtype`` with C semantics for in-range values (numpy's astype)."""

    __props__ = ("name", "dtype")

    def __init__(self, dtype):
        super().__init__("cast_" + dtype, 1, None, "cast")
        self.dtype = dtype

    def output_dtype(self, dtypes):
        return self.dtype

    def compute(self, inputs, out_dtype):
        with np.errstate(all="ignore"):
            return np.asarray(inputs[0]).astype(out_dtype)


# ------------------------------------------------------------------ implementations


def _sigmoid(x):
    return np.exp(-np.logaddexp(x.dtype.type(0), -x))


def _softplus(x):
    return np.logaddexp(x.dtype.type(0), x)


_erf_vec = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    return _erf_vec(x) if x.size else np.empty(x.shape, np.float64)


def _integral_identity(fn):
    """floor/ceil/round leave integers (and bools) as they are, in their own dtype."""
    def impl(x):
        return x.copy() if x.dtype.kind in "biu" else fn(x)
    impl.__name__ = fn.__name__
    return impl


def _switch(cond, ift, iff):
    return np.where(cond, ift, iff)


# name -> (nin, impl, rule, kinds)
SCALAR_TABLE = {
    # unary
    "neg": (1, np.negative, "numpy", "iufc"),
    "abs": (1, np.absolute, "numpy", "biufc"),
    "exp": (1, np.exp, "float", "biufc"),
    "expm1": (1, np.expm1, "float", "biufc"),
    "log": (1, np.log, "float", "biufc"),
    "log1p": (1, np.log1p, "float", "biufc"),
    "log2": (1, np.log2, "float", "biufc"),
    "log10": (1, np.log10, "float", "biufc"),
    "sqrt": (1, np.sqrt, "float", "biufc"),
    "sqr": (1, np.square, "numpy", "iufc"),
    "sin": (1, np.sin, "float", "biufc"),
    "cos": (1, np.cos, "float", "biufc"),
    "tan": (1, np.tan, "float", "biufc"),
    "tanh": (1, np.tanh, "float", "biufc"),
    "sigmoid": (1, _sigmoid, "float", "biuf"),
    "softplus": (1, _softplus, "float", "biuf"),
    "floor": (1, _integral_identity(np.floor), "same", "biuf"),
    "ceil": (1, _integral_identity(np.ceil), "same", "biuf"),
    "round": (1, _integral_identity(np.rint), "same", "biuf"),
    "sign": (1, np.sign, "numpy", "iuf"),
    "erf": (1, _erf, "float", "biuf"),
    "isnan": (1, np.isnan, "bool", "biufc"),
    "isinf": (1, np.isinf, "bool", "biufc"),
    "invert": (1, np.invert, "numpy", "biu"),
    # binary
    "add": (2, np.add, "numpy", "biufc"),
    "sub": (2, np.subtract, "numpy", "iufc"),
    "mul": (2, np.multiply, "numpy", "biufc"),
    "true_div": (2, np.true_divide, "float", "biufc"),
    "int_div": (2, np.floor_divide, "numpy", "iuf"),
    "mod": (2, np.mod, "numpy", "iuf"),
    "pow": (2, np.power, "numpy", "iufc"),
    "maximum": (2, np.maximum, "numpy", "biuf"),
    "minimum": (2, np.minimum, "numpy", "biuf"),
    "eq": (2, np.equal, "bool", "biufc"),
    "neq": (2, np.not_equal, "bool", "biufc"),
    "lt": (2, np.less, "bool", "biuf"),
    "le": (2, np.less_equal, "bool", "biuf"),
    "gt": (2, np.greater, "bool", "biuf"),
    "ge": (2, np.greater_equal, "bool", "biuf"),
    "and": (2, np.bitwise_and, "numpy", "biu"),
    "or": (2, np.bitwise_or, "numpy", "biu"),
    "xor": (2, np.bitwise_xor, "numpy", "biu"),
    # ternary
    "switch": (3, _switch, "switch", "biufc"),
    "clip": (3, np.clip, "same", "biuf"),
}


class Switch(ScalarOp):
    """``cond ? ift : iff``; the condition's dtype does not take part in promotion."""

    def output_dtype(self, dtypes):
        return upcast(dtypes[1], dtypes[2])


class ComplexPart(ScalarOp):
    """``real``, ``imag`` or ``angle`` (numpy's ``np.real``, ``np.imag``, ``np.angle``): of a
    complex value, a float of its precision (float32 of complex64, float64 of complex128); of a
    real value, the value itself (real), zero (imag), both in its dtype, or 0 or pi (angle) as a
    float (``upgrade_to_float``), as PyTensor's Real, Imag and Angle."""

    _IMPL = {"real": np.real, "imag": np.imag, "angle": np.angle}

    def __init__(self, name):
        super().__init__(name, 1, self._IMPL[name], "float" if name == "angle" else "same")

    def output_dtype(self, dtypes):
        (dtype,) = dtypes
        dtype = np.dtype(dtype)
        if dtype.kind == "c":
            return "float32" if dtype.name == "complex64" else "float64"
        return upgrade_to_float(dtype.name) if self.name == "angle" else dtype.name

    def compute(self, inputs, out_dtype):
        # (not the 'float' rule's conversion of the input to out_dtype: that drops an imaginary part)
        with np.errstate(all="ignore"):
            return np.asarray(self.impl(np.asarray(inputs[0]))).astype(out_dtype)


# Not in SCALAR_TABLE (whose ops every elementwise op test and the GPU table enumerate): they
# have C code for real values only (complex values have no C code yet).
COMPLEX_PARTS = {name: ComplexPart(name) for name in ("real", "imag", "angle")}


def _make(name):
    nin, impl, rule, kinds = SCALAR_TABLE[name]
    cls = Switch if name == "switch" else ScalarOp
    return cls(name, nin, impl, rule, kinds)


SCALAR_OPS = {name: _make(name) for name in SCALAR_TABLE}
