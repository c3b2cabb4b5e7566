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
from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op
from ffigraph.scalar import special
from ffigraph.scalar.type import OPERATOR_OPS, as_scalar, get_scalar_type

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


class ComplexError(NotImplementedError, TypeError):
    """An op that has no meaning for complex values was given one (PyTensor's ComplexError)."""


# How a scalar op's gradient is built: through its Elemwise's, on 0-d tensors (ffigraph.tensor,
# a later layer, registers it when it loads)
_GRADIENT = []


def set_gradient_builder(build):
    """Register ``build(op, inputs, outputs, output_grads)``, the gradient of a scalar-op node."""
    _GRADIENT[:] = [build]


class ScalarOp(Op):
    """One elementwise operation on scalars; ``Elemwise`` lifts it to arrays, and applied to scalar
    variables it makes a node of scalars (``add(x, y)``, ``x + y``).

    rule: how the output dtype follows from the (promoted) input dtypes::

      'numpy'   what numpy's ufunc gives for arrays of those dtypes;
      'float'   upgrade_to_float of the promoted dtype (inputs are cast to it first); true_div
                of integers and bools only gives floatX, as PyTensor's TrueDiv;
      'bool'    always bool;
      'same'    the promoted dtype.

    kinds: the dtype kinds accepted ('b' bool, 'i'/'u' ints, 'f' float, 'c' complex).
    """

    __props__ = ("name",)

    nin = None
    nout = 1

    def __init__(self, name=None, nin=None, impl=None, rule="numpy", kinds="biufc"):
        self.name = type(self).__name__.lower() if name is None else name
        if nin is not None:
            self.nin = nin
        self.impl = impl
        self.rule = rule
        self.kinds = kinds

    def output_dtype(self, dtypes):
        """The output dtype for these input dtypes, or raise TypeError naming the op."""
        for d in dtypes:
            if np.dtype(d).kind not in self.kinds:
                error = ComplexError if np.dtype(d).kind == "c" else TypeError
                raise error("%s does not support dtype %s" % (self.name, d))
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

    # ---- as an op on scalar variables

    def __call__(self, *inputs, **kwargs):
        if self.name in _VARIADIC and len(inputs) != 2 and type(self) is _VARIADIC_CLASS[self.name]:
            if not inputs:
                raise TypeError("%s needs at least one input" % self.name)
            result = as_scalar(inputs[0])   # PyTensor's add and mul take any number of inputs
            for x in inputs[1:]:
                result = Op.__call__(self, result, x, **kwargs)
            return result
        return Op.__call__(self, *inputs, **kwargs)

    def make_node(self, *inputs):
        if self.nin is not None and len(inputs) != self.nin:
            raise TypeError("%s takes %d inputs, got %d" % (self.name, self.nin, len(inputs)))
        inputs = [as_scalar(x) for x in inputs]
        out_dtype = self.output_dtype([x.type.dtype for x in inputs])
        return Apply(self, inputs, [get_scalar_type(out_dtype)()])

    def perform(self, node, inputs, output_storage):
        for cell, out in zip(output_storage, node.outputs):
            value = self.compute([np.asarray(x) for x in inputs], out.type.numpy_dtype)
            cell[0] = out.type.numpy_dtype.type(np.asarray(value)[()])

    def L_op(self, inputs, outputs, output_grads):
        if not _GRADIENT:
            raise NotImplementedError("the gradient of scalar op %s needs ffigraph.tensor (import it)" % self.name)
        return _GRADIENT[0](self, inputs, outputs, output_grads)

    def infer_shape(self, fgraph, node, input_shapes):
        return [() for _ in node.outputs]


class Cast(ScalarOp):
    """Conversion to ``dtype`` with C semantics for in-range values (numpy's astype)."""

    __props__ = ("name", "dtype")

    def __init__(self, dtype):
        dtype = config.floatX if dtype == "floatX" else np.dtype(dtype).name
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


def _xlogx(x):
    # Theano's XlogX: 0 where x is 0 (the limit), x log x elsewhere
    return np.where(x == 0, x.dtype.type(0), x * np.log(np.where(x == 0, x.dtype.type(1), x)))


def _xlogy0(x, y):
    # Theano's XlogY0: 0 where x is 0, whatever y, x log y elsewhere
    x, y = np.broadcast_arrays(x, y)
    return np.where(x == 0, x.dtype.type(0), x * np.log(np.where(x == 0, y.dtype.type(1), y)))


_erf_vec = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    return _erf_vec(x) if x.size else np.empty(x.shape, np.float64)


def _integral_identity(fn):
    """floor/ceil/round leave integers (and bools) as they are, in their own dtype."""
    def impl(x):
        return x.copy() if x.dtype.kind in "biu" else fn(x)
    impl.__name__ = fn.__name__
    return impl


def _vectorized(fn):
    """``fn`` (a function of one Python float) over an array, as float64 (an empty array stays empty)."""
    vec = np.vectorize(fn, otypes=[np.float64])

    def impl(x):
        return vec(x) if x.size else np.empty(x.shape, np.float64)
    impl.__name__ = fn.__name__
    return impl


def _vectorized2(fn):
    """``fn`` (a function of two Python floats) over two broadcasting arrays, as float64."""
    vec = np.vectorize(fn, otypes=[np.float64])

    def impl(a, b):
        shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        return vec(a, b) if math.prod(shape) else np.empty(shape, np.float64)
    impl.__name__ = fn.__name__
    return impl


def _erfc(x):
    return math.erfc(x)


def _gammaln(x):
    """log|Gamma(x)|, +inf at the poles (0 and the negative integers) and at -inf, as C's lgamma."""
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):   # Python raises at the poles and past the float range
        return math.inf


def _psi(x):
    """The digamma function, computed as the C helper ffg_psi_f64 does (c_table): reflection for
    x < 0, the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series.
    Poles as scipy.special.psi: -inf at +0, +inf at -0, NaN at the negative integers and -inf."""
    x = np.float64(x)   # C's arithmetic: 1 / 0 is inf, not an exception
    if x <= 0:
        if math.isinf(x) or x == math.floor(x):
            return math.copysign(math.inf, -x) if x == 0 else math.nan
        # psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi: x - rint(x) keeps its digits near a pole
        return _psi(1 - x) - math.pi / math.tan(math.pi * (x - np.rint(x)))
    result = 0.0
    while x < 10:
        result -= 1 / x
        x += 1
    z = 1 / (x * x)
    series = z * (1 / 12.0 - z * (1 / 120.0 - z * (1 / 252.0 - z * (1 / 240.0 - z * (1 / 132.0 - z * (
        691 / 32760.0 - z / 12.0))))))
    return result + math.log(x) - 0.5 / x - series


def _tri_gamma(x):
    """The trigamma function psi'(x), as the C helper ffg_trigamma_f64: reflection for x < 0,
    psi'(x) = psi'(x + 1) + 1/x^2 up to x >= 10, then the asymptotic series; +inf at the poles."""
    x = np.float64(x)
    if x <= 0:
        if math.isinf(x) or x == math.floor(x):
            return math.inf
        s = math.sin(math.pi * (x - np.rint(x)))
        return math.pi * math.pi / (s * s) - _tri_gamma(1 - x)
    result = 0.0
    while x < 10:
        result += 1 / (x * x)
        x += 1
    z = 1 / (x * x)
    series = z * (1 / 6.0 - z * (1 / 30.0 - z * (1 / 42.0 - z * (1 / 30.0 - z * (5 / 66.0 - z * (
        691 / 2730.0 - z * 7 / 6.0))))))
    return result + 1 / x + 0.5 * z + series / x


def _erfinv(y):
    """The inverse of erf, as the C helper ffg_erfinv_f64: Winitzki's approximation, then Halley
    steps on erf(x) - y (on erfc near +-1, where 1 - |y| is exact); +-inf at +-1, NaN outside."""
    if not -1 <= y <= 1:
        return math.nan
    if y == 0 or abs(y) == 1:
        return y * math.inf if y else y
    a, w = abs(y), (math.log1p(-y * y) if abs(y) < 0.5 else math.log((1 - abs(y)) * (1 + abs(y))))
    t = 2 / (math.pi * 0.147) + w / 2
    x = math.sqrt(math.sqrt(t * t - w / 0.147) - t)
    for _ in range(3):
        f = math.erf(x) - a if a < 0.5 else (1 - a) - math.erfc(x)
        ratio = f / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= ratio / (1 + x * ratio)
    return math.copysign(x, y)


def _round_half_away_from_zero(x):
    # x - trunc(x) is exact, so halves are seen as halves (floor(x + 0.5) rounds 0.49999999999999994 up)
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


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
    "arcsin": (1, np.arcsin, "float", "biufc"),
    "arccos": (1, np.arccos, "float", "biufc"),
    "arctan": (1, np.arctan, "float", "biufc"),
    "sinh": (1, np.sinh, "float", "biufc"),
    "cosh": (1, np.cosh, "float", "biufc"),
    "arcsinh": (1, np.arcsinh, "float", "biufc"),
    "arccosh": (1, np.arccosh, "float", "biufc"),
    "arctanh": (1, np.arctanh, "float", "biufc"),
    "reciprocal": (1, np.reciprocal, "float", "biufc"),
    "exp2": (1, np.exp2, "float", "biufc"),
    "deg2rad": (1, np.deg2rad, "float", "biuf"),
    "rad2deg": (1, np.rad2deg, "float", "biuf"),
    "trunc": (1, np.trunc, "float", "biuf"),
    # PyTensor's rounding ops take floats only
    "round_half_to_even": (1, np.rint, "same", "f"),
    "round_half_away_from_zero": (1, _round_half_away_from_zero, "same", "f"),
    "erfc": (1, _vectorized(_erfc), "float", "biuf"),
    "erfinv": (1, _vectorized(_erfinv), "float", "biuf"),
    "gammaln": (1, _vectorized(_gammaln), "float", "biuf"),
    "psi": (1, _vectorized(_psi), "float", "biuf"),
    "tri_gamma": (1, _vectorized(_tri_gamma), "float", "biuf"),
    # scipy.special's (PyTensor's tensor.math names): special.py, special_c.py
    "gamma": (1, _vectorized(special.gamma), "float", "biuf"),
    "j0": (1, _vectorized(special.j0), "float", "biuf"),
    "j1": (1, _vectorized(special.j1), "float", "biuf"),
    "i0": (1, _vectorized(special.i0), "float", "biuf"),
    "i1": (1, _vectorized(special.i1), "float", "biuf"),
    "erfcx": (1, _vectorized(special.erfcx), "float", "biuf"),
    "erfcinv": (1, _vectorized(lambda y: special.erfcinv(y, _erfinv)), "float", "biuf"),
    "log1mexp": (1, _vectorized(special.log1mexp), "float", "biuf"),
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
    "arctan2": (2, np.arctan2, "float", "biuf"),
    "hypot": (2, np.hypot, "float", "biuf"),
    "logaddexp": (2, np.logaddexp, "float", "biuf"),
    "betaln": (2, _vectorized2(special.betaln), "float", "biuf"),
    "polygamma": (2, _vectorized2(lambda n, x: special.polygamma(n, x, _psi)), "float", "biuf"),
    "gammainc": (2, _vectorized2(special.gammainc), "float", "biuf"),
    "gammaincc": (2, _vectorized2(special.gammaincc), "float", "biuf"),
    # Theano's theano.tensor.xlogx module
    "xlogx": (1, _xlogx, "float", "biuf"),
    "xlogy0": (2, _xlogy0, "float", "biuf"),
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
# The conjugate, for complex values only (``conj`` returns a real tensor itself); no C code.
CONJ = ScalarOp("conj", 1, np.conjugate, "same", "c")


# PyTensor's class of each op of the table, so that ``EQ()`` or ``IntDiv()`` is the op ``eq`` or
# ``int_div`` (equal to it, and the same C)
_CLASS_NAMES = {
    "neg": "Neg", "abs": "Abs", "exp": "Exp", "expm1": "Expm1", "log": "Log", "log1p": "Log1p", "log2": "Log2",
    "log10": "Log10", "sqrt": "Sqrt", "sqr": "Sqr", "sin": "Sin", "cos": "Cos", "tan": "Tan", "tanh": "Tanh",
    "sigmoid": "Sigmoid", "softplus": "Softplus", "floor": "Floor", "ceil": "Ceil", "round": "Round",
    "sign": "Sign", "erf": "Erf", "isnan": "IsNan", "isinf": "IsInf", "invert": "Invert", "arcsin": "ArcSin",
    "arccos": "ArcCos", "arctan": "ArcTan", "sinh": "Sinh", "cosh": "Cosh", "arcsinh": "ArcSinh",
    "arccosh": "ArcCosh", "arctanh": "ArcTanh", "reciprocal": "Reciprocal", "exp2": "Exp2",
    "deg2rad": "Deg2Rad", "rad2deg": "Rad2Deg", "trunc": "Trunc", "round_half_to_even": "RoundHalfToEven",
    "round_half_away_from_zero": "RoundHalfAwayFromZero", "erfc": "Erfc", "erfinv": "Erfinv",
    "gammaln": "GammaLn", "psi": "Psi", "tri_gamma": "TriGamma", "gamma": "Gamma", "j0": "J0", "j1": "J1",
    "i0": "I0", "i1": "I1", "erfcx": "Erfcx", "erfcinv": "Erfcinv", "log1mexp": "Log1mexp", "add": "Add",
    "sub": "Sub", "mul": "Mul", "true_div": "TrueDiv", "int_div": "IntDiv", "mod": "Mod", "pow": "Pow",
    "maximum": "ScalarMaximum", "minimum": "ScalarMinimum", "eq": "EQ", "neq": "NEQ", "lt": "LT", "le": "LE",
    "gt": "GT", "ge": "GE", "and": "AND", "or": "OR", "xor": "XOR", "arctan2": "ArcTan2", "hypot": "Hypot",
    "logaddexp": "LogAddExp", "betaln": "BetaLn", "polygamma": "Polygamma", "gammainc": "GammaInc", "gammaincc": "GammaIncC", "xlogx": "XlogX", "xlogy0": "XlogY0", "switch": "Switch",
    "clip": "Clip",
}


class _OrderFirst(ScalarOp):
    """An op whose first input is an order (polygamma's n): integers only, as PyTensor's."""

    def output_dtype(self, dtypes):
        if np.dtype(dtypes[0]).kind not in "biu":
            raise TypeError("%s: the order (its first input) must be an integer, got dtype %s" % (self.name, dtypes[0]))
        return super().output_dtype(dtypes)


_BASES = {"switch": Switch, "polygamma": _OrderFirst}


def _op_class(name):
    """The class of table op ``name``: made with no arguments, as PyTensor's (``Add()``)."""
    nin, impl, rule, kinds = SCALAR_TABLE[name]
    base = _BASES.get(name, ScalarOp)

    def __init__(self):
        base.__init__(self, name, nin, impl, rule, kinds)

    cls_name = _CLASS_NAMES[name]
    return type(cls_name, (base,), {"__init__": __init__, "__module__": __name__, "__qualname__": cls_name,
                                    "__doc__": "The scalar op ``%s`` (%d input%s)." % (name, nin, "s"[:nin > 1])})


_CLASSES = {name: _op_class(name) for name in SCALAR_TABLE}
globals().update({cls.__name__: cls for cls in _CLASSES.values()})
Switch = _CLASSES["switch"]   # (the class PyTensor names; its base above keeps the dtype rule)

SCALAR_OPS = {name: cls() for name, cls in _CLASSES.items()}
_VARIADIC = ("add", "mul")
_VARIADIC_CLASS = {name: _CLASSES[name] for name in _VARIADIC}

# the ops of a scalar variable's operators (ffigraph.scalar.type)
OPERATOR_OPS.update(SCALAR_OPS)
OPERATOR_OPS["real"] = COMPLEX_PARTS["real"]


def cast(x, dtype):
    """``x`` as a scalar of ``dtype`` ('floatX' is config.floatX); ``x`` itself when it has it."""
    x = as_scalar(x)
    dtype = config.floatX if dtype == "floatX" else np.dtype(dtype).name
    return x if x.type.dtype == dtype else Cast(dtype)(x)


OPERATOR_OPS["cast"] = cast

# PyTensor's names of the ops (ffigraph.scalar.basic.add is the op; add(x, y) a scalar variable).
# Names that are Python builtins (abs, pow, round, bool) are reached as attributes of the module
# only (module __getattr__), so that this module's own code keeps the builtins.
_SHADOWING = {"abs": "abs", "pow": "pow", "round": "round"}
_RENAMED = {"and": "and_", "or": "or_", "maximum": "scalar_maximum", "minimum": "scalar_minimum"}
globals().update({_RENAMED.get(name, name): op for name, op in SCALAR_OPS.items() if name not in _SHADOWING})
abs_ = SCALAR_OPS["abs"]
real, imag, angle = COMPLEX_PARTS["real"], COMPLEX_PARTS["imag"], COMPLEX_PARTS["angle"]
conj = CONJ


def __getattr__(attr):
    if attr in _SHADOWING:
        return SCALAR_OPS[_SHADOWING[attr]]
    if attr == "bool":
        return get_scalar_type("bool")
    raise AttributeError("module %r has no attribute %r" % (__name__, attr))


__all__ = ["SCALAR_OPS", "SCALAR_TABLE", "ScalarOp", "Cast", "ComplexError", "upcast", "upgrade_to_float",
           "cast", "abs_", "real", "imag", "angle", "conj", "COMPLEX_PARTS", "CONJ"]
__all__ += [cls.__name__ for cls in _CLASSES.values()]
__all__ += [_RENAMED.get(name, name) for name in SCALAR_OPS if name not in _SHADOWING]

