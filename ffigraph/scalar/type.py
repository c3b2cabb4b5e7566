"""Scalar-typed variables: PyTensor's ``ScalarType``, ``ScalarVariable`` and ``ScalarConstant``.

A ScalarType holds one number of a dtype (its values are numpy scalars, as PyTensor's). Scalar
ops (``ffigraph.scalar.basic``) apply to scalar variables and give scalar variables, so a user
may build a graph of scalars, a ``Composite`` from one, or mix them with tensors through
``tensor_from_scalar`` / ``scalar_from_tensor`` (``ffigraph.tensor``).

How a scalar graph compiles: a scalar is a 0-d slot. ``function`` turns each scalar variable into
a 0-d tensor and each scalar-op node into its ``Elemwise`` before rewriting (see
``ffigraph.tensor.scalar_graph``), so a scalar graph runs under every linker, fuses, exports and
reaches C hosts as 0-d tensors; a scalar output comes back as a numpy scalar.
"""
from __future__ import annotations

import builtins

import numpy as np

from ffigraph.config import config
from ffigraph.graph.basic import Apply, Constant, Variable
from ffigraph.graph.type import Type

# the dtypes a scalar may have (float16 too: a ScalarType of it exists, as PyTensor's; ffigraph's
# tensors have none, so a graph that computes one says so when it compiles)
SCALAR_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "float32", "float64", "complex64", "complex128")


class ScalarType(Type):
    """The type of a variable holding one number of ``dtype`` (a numpy scalar)."""

    __props__ = ("dtype",)
    ndim = 0
    shape = ()
    broadcastable = ()

    def __init__(self, dtype):
        if dtype == "floatX":
            dtype = config.floatX
        name = np.dtype(dtype).name
        if name not in SCALAR_DTYPES:
            raise TypeError("ScalarType: unsupported dtype %r (supported: %s)" % (dtype, ", ".join(SCALAR_DTYPES)))
        self.dtype = name
        self.numpy_dtype = np.dtype(name)

    # ---- values

    def filter(self, data, strict=False, allow_downcast=None):
        """``data`` as a numpy scalar of this dtype. strict: it must already be one (a numpy scalar
        or 0-d array of exactly this dtype). Otherwise a value converts when it keeps its value, or
        when ``allow_downcast`` is true; with ``allow_downcast=None`` a Python float also converts
        to floatX (PyTensor's rule)."""
        if isinstance(data, Variable):
            raise TypeError("%s: expected a value, got the symbolic variable %s" % (self, data))
        if strict:
            if isinstance(data, (np.generic, np.ndarray)) and data.dtype == self.numpy_dtype and np.ndim(data) == 0:
                return self.numpy_dtype.type(data[()] if isinstance(data, np.ndarray) else data)
            raise TypeError("%s (strict): expected a %s scalar, got %r of type %s"
                            % (self, self.dtype, data, type(data).__name__))
        array = np.asarray(data)
        if array.ndim != 0:
            raise TypeError("%s: expected a scalar, got a value of shape %s" % (self, array.shape))
        if array.dtype.kind not in "biufc":
            raise TypeError("%s: cannot convert %r (dtype %s) to a number" % (self, data, array.dtype))
        if array.dtype == self.numpy_dtype:
            return self.numpy_dtype.type(array[()])
        with np.errstate(all="ignore"):
            converted = array.astype(self.numpy_dtype)
            kept = bool(converted == array) or (bool(np.isnan(array)) if array.dtype.kind in "fc" else False)
        if self.numpy_dtype.kind in "biu" and array.dtype.kind in "fc":
            kept = kept and bool(np.isfinite(array))
        python_float = builtins.type(data) is float and self.dtype == config.floatX
        if allow_downcast or kept or (allow_downcast is None and python_float):
            return self.numpy_dtype.type(converted[()])
        raise TypeError("%s: %r cannot be converted to %s without changing its value (allow_downcast=True "
                        "casts it)" % (self, data, self.dtype))

    def values_eq(self, a, b):
        if bool(np.asarray(a) == np.asarray(b)):
            return True
        return self.numpy_dtype.kind in "fc" and bool(np.isnan(a) and np.isnan(b))

    def values_eq_approx(self, a, b, rtol=None, atol=None):
        tol = 1e-4 if self.dtype in ("float16", "float32", "complex64") else 1e-8
        return bool(np.allclose(a, b, rtol=tol if rtol is None else rtol, atol=tol if atol is None else atol,
                                equal_nan=True))

    def constant_key(self, data):
        return (self.dtype, np.asarray(data).tobytes())

    def copy_value(self, data):
        return data

    def __str__(self):
        return self.dtype

    def __repr__(self):
        return "ScalarType(%s)" % self.dtype

    def upcast(self, *others):
        """PyTensor's ``ScalarType.upcast``: the promoted dtype of this and ``others``."""
        return np.result_type(self.numpy_dtype, *[o.numpy_dtype for o in others]).name

    def clone(self, dtype=None, **kwargs):
        return get_scalar_type(self.dtype if dtype is None else dtype)

    def convert_variable(self, var):
        return var if var.type == self else None

    def make_variable(self, name=None):
        return ScalarVariable(self, None, None, name)

    def make_constant(self, value, name=None):
        return ScalarConstant(self, value, name)


Scalar = ScalarType   # Theano's name of it

_TYPES = {}


def get_scalar_type(dtype):
    """The one ScalarType of ``dtype`` (PyTensor's ``get_scalar_type``)."""
    name = config.floatX if dtype == "floatX" else np.dtype(dtype).name
    found = _TYPES.get(name)
    if found is None:
        found = _TYPES[name] = ScalarType(name)
    return found


# ------------------------------------------------------------------ variables

# The operators of a scalar variable apply the scalar ops by name. Those ops are made by
# ffigraph.scalar.basic, which imports this module (its ops make variables of these types) and
# fills this table as it loads; it is always loaded with the package.
OPERATOR_OPS = {}


def _apply(name, *args):
    return OPERATOR_OPS[name](*args)


class _ScalarOperators:
    """Python's operators on a scalar variable, as PyTensor's ``_scalar_py_operators``."""

    # (ComplexError and the "is not supported" TypeErrors come from the ops themselves)
    def __add__(self, other): return _apply("add", self, other)
    def __radd__(self, other): return _apply("add", other, self)
    def __sub__(self, other): return _apply("sub", self, other)
    def __rsub__(self, other): return _apply("sub", other, self)
    def __mul__(self, other): return _apply("mul", self, other)
    def __rmul__(self, other): return _apply("mul", other, self)
    def __truediv__(self, other): return _apply("true_div", self, other)
    def __rtruediv__(self, other): return _apply("true_div", other, self)
    def __floordiv__(self, other): return _apply("int_div", self, other)
    def __rfloordiv__(self, other): return _apply("int_div", other, self)
    def __mod__(self, other): return _apply("mod", self, other)
    def __rmod__(self, other): return _apply("mod", other, self)
    def __pow__(self, other): return _apply("pow", self, other)
    def __rpow__(self, other): return _apply("pow", other, self)
    def __neg__(self): return _apply("neg", self)
    def __abs__(self): return _apply("abs", self)
    def __invert__(self): return _apply("invert", self)
    def __and__(self, other): return _apply("and", self, other)
    def __rand__(self, other): return _apply("and", other, self)
    def __or__(self, other): return _apply("or", self, other)
    def __ror__(self, other): return _apply("or", other, self)
    def __xor__(self, other): return _apply("xor", self, other)
    def __rxor__(self, other): return _apply("xor", other, self)
    def __lt__(self, other): return _apply("lt", self, other)
    def __le__(self, other): return _apply("le", self, other)
    def __gt__(self, other): return _apply("gt", self, other)
    def __ge__(self, other): return _apply("ge", self, other)
    # == and != keep Python's identity (variables are dict keys); eq() and neq() compare values

    __hash__ = Variable.__hash__

    __array_priority__ = 1000   # numpy's operators defer to ours, as for tensor variables

    def __bool__(self):
        """True (``if x:`` tests an optional argument for None), except for the result of a
        comparison, whose truth is only known when the graph runs, as for tensor variables."""
        owner = self.owner
        if owner is not None and getattr(owner.op, "name", None) in ("lt", "le", "gt", "ge", "eq", "neq"):
            raise TypeError("the truth value of a symbolic comparison (%s) is only known when the graph runs: "
                            "use switch(), or compile a function to get a value" % (self,))
        return True

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def ndim(self):
        return 0

    @property
    def broadcastable(self):
        return ()

    @property
    def shape(self):
        """PyTensor's: an empty int64 vector (a tensor constant; ffigraph.tensor provides it)."""
        return _apply("shape", self)

    def astype(self, dtype):
        return _apply("cast", self, dtype)

    @property
    def real(self):
        return _apply("real", self)


class ScalarVariable(_ScalarOperators, Variable):
    """A variable of a ScalarType."""


class ScalarConstant(_ScalarOperators, Constant):
    """A scalar constant; its ``data`` is a numpy scalar."""

    def __init__(self, type, data, name=None):
        Constant.__init__(self, type, data, name)

    __hash__ = Constant.__hash__

    def __str__(self):
        if self.name is not None:
            return self.name
        return str(self.data.item() if hasattr(self.data, "item") else self.data)


# ------------------------------------------------------------------ constants and conversion


def autocast_dtype(value):
    """The dtype PyTensor gives a Python number (its autocasting, cast_policy 'custom'): a bool
    bool; an int the first of int8, int16, int32, int64 that holds it (uint64 beyond); a float
    floatX when that is float32, otherwise float32 when float32 holds it exactly, else float64; a
    complex complex128. A numpy scalar keeps its dtype."""
    if isinstance(value, (np.generic, np.ndarray)):
        return np.asarray(value).dtype.name
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        for dtype in ("int8", "int16", "int32", "int64"):
            if np.iinfo(dtype).min <= value <= np.iinfo(dtype).max:
                return dtype
        return "uint64"
    if isinstance(value, complex):
        return "complex128"
    with np.errstate(all="ignore"):
        exact = np.float64(np.float32(value)) == np.float64(value)   # (in float64: NEP 50 would compare in float32)
    return "float32" if config.floatX == "float32" or exact else "float64"


def constant(value, name=None, dtype=None):
    """A ScalarConstant of ``value``; without ``dtype``, PyTensor's autocasting (``autocast_dtype``)."""
    array = np.asarray(value)
    if array.ndim != 0:
        raise TypeError("scalar constant: expected a number, got a value of shape %s" % (array.shape,))
    if dtype is None:
        dtype = autocast_dtype(value)
    stype = get_scalar_type(dtype)
    return ScalarConstant(stype, stype.filter(value, allow_downcast=True), name=name)


# how a 0-d tensor variable becomes a scalar (``scalar_from_tensor``): set by ffigraph.tensor, a
# later layer, when it loads
_FROM_TENSOR = []


def set_tensor_converter(convert):
    """Register how ``as_scalar`` turns a tensor variable into a scalar one."""
    _FROM_TENSOR[:] = [convert]


def as_scalar(x, name=None):
    """``x`` as a scalar variable: a scalar variable passes through, a 0-d tensor variable goes
    through ``scalar_from_tensor``, a number becomes a ScalarConstant (PyTensor's ``as_scalar``)."""
    if isinstance(x, Apply):
        if len(x.outputs) != 1:
            raise ValueError("as_scalar: %s has %d outputs; pass one of them" % (x.op, len(x.outputs)))
        x = x.outputs[0]
    if isinstance(x, Variable):
        if isinstance(x.type, ScalarType):
            return x
        if _FROM_TENSOR and getattr(x.type, "ndim", None) == 0:
            return _FROM_TENSOR[0](x)
        raise TypeError("as_scalar: %s has type %s, not a scalar type (a tensor must be 0-d)" % (x, x.type))
    try:
        return constant(x, name=name)
    except (TypeError, ValueError) as err:
        raise TypeError("as_scalar: cannot convert %r to a scalar: %s" % (x, err)) from None


# ------------------------------------------------------------------ the types by dtype

bool_ = get_scalar_type("bool")
int8, int16, int32, int64 = (get_scalar_type(d) for d in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (get_scalar_type(d) for d in ("uint8", "uint16", "uint32", "uint64"))
float16, float32, float64 = (get_scalar_type(d) for d in ("float16", "float32", "float64"))
complex64, complex128 = get_scalar_type("complex64"), get_scalar_type("complex128")

int_types = (int8, int16, int32, int64)
uint_types = (uint8, uint16, uint32, uint64)
float_types = (float16, float32, float64)
complex_types = (complex64, complex128)
integer_types = int_types + uint_types
discrete_types = (bool_,) + integer_types
continuous_types = float_types + complex_types
all_types = discrete_types + continuous_types


def _several(stype):
    def make(*names):
        """One variable per name: ``floats('xyz')`` or ``floats('x', 'y', 'z')``."""
        if len(names) == 1:
            names = names[0]
            if isinstance(names, int):
                return [stype() for _ in range(names)]
        return [stype(n) for n in names]
    return make


floats = _several(float64)
ints = _several(int64)
complexs = _several(complex128)
