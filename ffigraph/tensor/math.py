"""Elementwise math (one function per scalar-table entry), reductions and ``dot``."""
from __future__ import annotations

import builtins

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.scalar.basic import COMPLEX_PARTS, CONJ, SCALAR_OPS, upcast, upgrade_to_float
from ffigraph.tensor.basic import as_tensor_variable, cast, normalize_axis
from ffigraph.tensor.elemwise import DimShuffle, Elemwise
from ffigraph.tensor.type import TensorType, normalize_dtype

# ------------------------------------------------------------------ elementwise

ELEMWISE = {name: Elemwise(sop) for name, sop in SCALAR_OPS.items()}


def _elemwise_function(name, public):
    op = ELEMWISE[name]

    def fn(*inputs, name=None, return_list=False, **kwargs):
        return op(*inputs, name=name, return_list=return_list, **kwargs)

    fn.__name__ = public
    fn.__qualname__ = public
    fn.__doc__ = "Elementwise %s (numpy broadcasting)." % name
    return fn


# The public names: Theano's, with trailing underscores where Python keywords collide.
_PUBLIC = {
    "neg": "neg", "abs": "abs", "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p",
    "log2": "log2", "log10": "log10", "sqrt": "sqrt", "sqr": "sqr", "sin": "sin", "cos": "cos",
    "tan": "tan", "tanh": "tanh", "sigmoid": "sigmoid", "softplus": "softplus", "floor": "floor",
    "ceil": "ceil", "round": "round", "sign": "sgn", "erf": "erf", "isnan": "isnan", "isinf": "isinf",
    "invert": "invert", "add": "add", "sub": "sub", "mul": "mul", "true_div": "true_div",
    "int_div": "int_div", "mod": "mod", "pow": "pow", "maximum": "maximum", "minimum": "minimum",
    "eq": "eq", "neq": "neq", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "and": "and_",
    "or": "or_", "xor": "xor",
    # PyTensor's names (numpy's, but for gammaln, psi and tri_gamma, which are scipy.special's)
    "arcsin": "arcsin", "arccos": "arccos", "arctan": "arctan", "arctan2": "arctan2", "sinh": "sinh",
    "cosh": "cosh", "arcsinh": "arcsinh", "arccosh": "arccosh", "arctanh": "arctanh",
    "reciprocal": "reciprocal", "trunc": "trunc", "exp2": "exp2", "deg2rad": "deg2rad", "rad2deg": "rad2deg",
    "hypot": "hypot", "gammaln": "gammaln", "psi": "psi", "tri_gamma": "tri_gamma", "erfc": "erfc",
    "erfinv": "erfinv", "round_half_to_even": "round_half_to_even",
    "gamma": "gamma", "j0": "j0", "j1": "j1", "i0": "i0", "i1": "i1", "erfcx": "erfcx", "erfcinv": "erfcinv",
    "log1mexp": "log1mexp", "betaln": "betaln", "polygamma": "polygamma",
    "gammainc": "gammainc", "gammaincc": "gammaincc",
    "round_half_away_from_zero": "round_half_away_from_zero",
}
for _name, _public in _PUBLIC.items():
    globals()[_public] = _elemwise_function(_name, _public)
del _name, _public

abs_ = globals()["abs"]
pow_ = globals()["pow"]
round_ = globals()["round"]
sign = globals()["sgn"]
bitwise_and, bitwise_or, bitwise_xor = globals()["and_"], globals()["or_"], globals()["xor"]
divide = true_div = globals()["true_div"]
floor_div = globals()["int_div"]
power = globals()["pow"]
digamma = globals()["psi"]


def _nary_elemwise(name, public):
    """PyTensor's ``add(a, b, c, ...)``/``mul(...)``: any number of inputs, folded left to right over
    the binary op (numpy's order of evaluation); the fusion rewrite makes the chain one loop. One input
    is itself, as PyTensor's one-input Elemwise{add} computes."""
    op = ELEMWISE[name]

    def fn(*args, name=None, return_list=False):
        if not args:
            raise TypeError("%s needs at least one input" % public)
        out = args[0]
        if len(args) == 1:   # (no node to name: the input itself keeps its name)
            out = as_tensor_variable(out)
        for k, x in enumerate(args[1:], 2):
            out = op(out, x, name=name if k == len(args) else None)
        return [out] if return_list else out

    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = "Elementwise %s of one or more inputs (numpy broadcasting), folded left to right." % name
    return fn


add = _nary_elemwise("add", "add")
mul = _nary_elemwise("mul", "mul")


def logaddexp(*xs):
    """``log(exp(x0) + exp(x1) + ...)`` elementwise, without overflow (numpy's ``logaddexp``, folded
    over the inputs as PyTensor's ``logaddexp(*xs)``)."""
    if not xs:
        raise TypeError("logaddexp needs at least one input")
    if len(xs) == 1:   # log(exp(x)) is x, as a float
        x = as_tensor_variable(xs[0])
        return cast(x, upgrade_to_float(x.dtype))
    out = xs[0]
    for x in xs[1:]:
        out = ELEMWISE["logaddexp"](out, x)
    return out


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` as a bool tensor, with numpy's semantics: ``b``
    must be finite, unless ``a == b`` (equal infinities are close), and NaNs are close to NaNs only
    with ``equal_nan``. Integer and bool values of ``b`` are compared as float64, as numpy does."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if b.dtype.startswith("complex") or a.dtype.startswith("complex"):
        raise TypeError("isclose: complex values are not supported (%s, %s)" % (a.dtype, b.dtype))
    if _is_discrete(b.dtype):
        b = cast(b, "float64")   # numpy: b becomes result_type(b, 1.0), so a - b cannot wrap
    finite_b = ELEMWISE["invert"](ELEMWISE["or"](ELEMWISE["isnan"](b), ELEMWISE["isinf"](b)))
    within = ELEMWISE["le"](abs_(a - b), atol + rtol * abs_(b))
    close = ELEMWISE["or"](ELEMWISE["and"](within, finite_b), ELEMWISE["eq"](a, b))
    if equal_nan:
        close = ELEMWISE["or"](close, ELEMWISE["and"](ELEMWISE["isnan"](a), ELEMWISE["isnan"](b)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of ``a`` is close to ``b`` (``all`` of ``isclose``): a 0-d bool tensor."""
    return all(isclose(a, b, rtol, atol, equal_nan))


_conj = Elemwise(CONJ)


def conj(x):
    """The complex conjugate of ``x``; a real tensor is returned as it is (PyTensor's ``conjugate``)."""
    x = as_tensor_variable(x)
    return _conj(x) if x.dtype.startswith("complex") else x


conjugate = conj


def clip(x, a_min, a_max):
    """Elementwise ``min(max(x, a_min), a_max)``."""
    return ELEMWISE["clip"](x, a_min, a_max)


_PARTS = {name: Elemwise(sop) for name, sop in COMPLEX_PARTS.items()}


def real(z):
    """The real part of a complex tensor (float32 of complex64, float64 of complex128); a real
    tensor's values, in its dtype."""
    return _PARTS["real"](z)


def imag(z):
    """The imaginary part of a complex tensor (float32 of complex64, float64 of complex128); zeros
    for a real tensor, in its dtype."""
    return _PARTS["imag"](z)


def angle(z):
    """The angle of each complex value (``numpy.angle``), a float; of a real value, 0 or pi."""
    return _PARTS["angle"](z)


# ------------------------------------------------------------------ reductions


def _reduce_dtype(kind, dtype):
    """The output dtype of reduction ``kind`` of a ``dtype`` input when no ``dtype`` is asked for."""
    d = np.dtype(dtype)
    if kind in ("sum", "prod"):
        return _UPCAST_DISCRETE.get(d.name, d.name)
    if kind in ("all", "any"):
        return "bool"
    if kind == "mean":
        return reduce_output_dtype("mean", d.name, None)
    return d.name  # max, min


# PyTensor's CAReduce rules (Sum, Prod, and the sum inside mean).
# The default output dtype: bools and ints narrower than 64 bits give int64, unsigned ones uint64.
_UPCAST_DISCRETE = {"bool": "int64", "int8": "int64", "int16": "int64", "int32": "int64",
                    "uint8": "uint64", "uint16": "uint64", "uint32": "uint64"}
# The default accumulator: the same for integers, and one step wider for floats and complexes.
_DEFAULT_ACC = dict(_UPCAST_DISCRETE, float16="float32", float32="float64", complex64="complex128")

ACCUMULATING = ("sum", "prod", "mean")


def _is_discrete(dtype):
    return np.dtype(dtype).kind in "biu"


def reduce_acc_dtype(op, in_dtype, acc_dtype):
    """The dtype a sum, product or mean of an ``in_dtype`` input accumulates in (PyTensor's
    ``CAReduce._acc_dtype``): ``acc_dtype``, or by default the input's widened to 64 bits (float16
    to float32, float32 to float64, complex64 to complex128, small ints to int64/uint64). An
    ``acc_dtype`` that would lose precision (not an upcast of the input's) is a TypeError; a float
    accumulator for integers is allowed."""
    in_dtype = np.dtype(in_dtype).name
    if acc_dtype is None:
        return _DEFAULT_ACC.get(in_dtype, in_dtype)
    acc_dtype = np.dtype(acc_dtype).name
    if np.dtype(acc_dtype).kind in "fc" and _is_discrete(in_dtype):
        return acc_dtype
    upcasted = upcast(in_dtype, acc_dtype)
    if acc_dtype != upcasted:
        raise TypeError(
            "Cannot build %s node with input dtype %s and acc_dtype %s, as precision would be lost. "
            "To correct this error, you can:\n"
            "  - not specify acc_dtype, or\n"
            "  - use an acc_dtype at least as precise as %s.\n"
            '  - specify "dtype" instead of "acc_dtype", so the reduction will be precise, but the '
            'result will be casted into "dtype" at the end.\n'
            "If you are expecting the precision loss, you can use tensor.cast(..., dtype=\"%s\"), "
            "on your input." % (op, in_dtype, acc_dtype, upcasted, acc_dtype))
    return acc_dtype


def reduce_sum_dtype(kind, in_dtype, dtype):
    """The dtype of the sum or product (for a mean: of the sum it divides): ``dtype``, or the
    input's with small ints and bools widened to int64/uint64 (a float16 mean sums in float32)."""
    in_dtype = np.dtype(in_dtype).name
    if dtype is not None:
        return np.dtype(dtype).name
    if kind == "mean" and in_dtype == "float16":
        return "float32"
    return _UPCAST_DISCRETE.get(in_dtype, in_dtype)


def mean_divide_dtype(sum_dtype):
    """(the dtype of the count, the dtype of ``sum / count``) in PyTensor's ``mean``: the count is
    float32 for a float16, float32 or complex64 sum and float64 otherwise, and the quotient has the
    promoted dtype (a float64 for an integer or bool sum)."""
    count = "float32" if sum_dtype in ("float16", "float32", "complex64") else "float64"
    return count, upcast(sum_dtype, count)


def reduce_output_dtype(kind, in_dtype, dtype):
    """The output dtype of reduction ``kind`` (with the ``dtype`` argument, None by default)."""
    in_dtype = np.dtype(in_dtype).name
    if kind in ("sum", "prod"):
        return reduce_sum_dtype(kind, in_dtype, dtype)
    if kind == "mean":
        _, quotient = mean_divide_dtype(reduce_sum_dtype(kind, in_dtype, dtype))
        if dtype == "float16" or (dtype is None and in_dtype == "float16"):
            return "float16"
        return quotient
    if dtype is not None:
        return np.dtype(dtype).name
    return _reduce_dtype(kind, in_dtype)


_NUMPY_REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
                 "all": np.all, "any": np.any, "mean": None}


class Reduce(DelegatedCOp, Op):
    """Reduce over ``axis`` (a sorted tuple of axes) with ``kind``: sum, prod, max, min, all, any, mean.

    For sum, prod and mean, as PyTensor's ``Sum``/``Prod``/``mean``: ``dtype`` is the dtype of
    the result of the sum or product (of a mean: of the sum it divides, see ``reduce_output_dtype``),
    None for the default (the input's, small ints and bools widened to int64/uint64); ``acc_dtype``
    the dtype it accumulates in, None for the default (float32 in float64, ints in int64, see
    ``reduce_acc_dtype``). The input is converted to the accumulator's dtype, reduced, and the
    result converted to ``dtype``: a float32 sum is a float64 sum rounded once to float32.
    """

    c_impl = "ffigraph.tensor.reduce_c"
    __props__ = ("kind", "axis", "dtype", "acc_dtype")

    def __init__(self, kind, axis, dtype=None, acc_dtype=None):
        if kind not in _NUMPY_REDUCE:
            raise ValueError("unknown reduction %r" % (kind,))
        self.kind = kind
        self.axis = tuple(axis)
        self.dtype = None if dtype is None else np.dtype(dtype).name
        self.acc_dtype = None if acc_dtype is None else np.dtype(acc_dtype).name

    def output_dtype(self, in_dtype):
        return reduce_output_dtype(self.kind, in_dtype, self.dtype)

    def sum_dtype(self, in_dtype):
        """The dtype the accumulated value is converted to (for a mean, before the division)."""
        if self.kind not in ACCUMULATING:
            return self.output_dtype(in_dtype)
        return reduce_sum_dtype(self.kind, in_dtype, self.dtype)

    def accumulator_dtype(self, in_dtype):
        if self.kind not in ACCUMULATING:
            return np.dtype(in_dtype).name
        return reduce_acc_dtype(self, in_dtype, self.acc_dtype)

    def make_node(self, x):
        x = as_tensor_variable(x)
        if self.kind in ("max", "min") and x.dtype.startswith("complex"):
            raise TypeError("%s: complex values have no order (input %s)" % (self, x))
        self.accumulator_dtype(x.dtype)   # a precision-losing acc_dtype is a TypeError here
        out_dtype = self.output_dtype(x.dtype)
        shape = tuple(s for a, s in enumerate(x.type.shape) if a not in self.axis)
        return Apply(self, [x], [TensorType(out_dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        out_dtype = node.outputs[0].type.numpy_dtype
        if self.kind in ("max", "min") and builtins.any(x.shape[a] == 0 for a in self.axis):
            raise ValueError("%s: cannot take the %s over an empty axis (input shape %s, axes %s)"
                             % (self, self.kind, x.shape, self.axis))
        in_dtype = np.asarray(x).dtype.name   # (FusedReduce hands over its own node: read the value)
        with np.errstate(all="ignore"):
            if self.kind in ACCUMULATING:
                # as PyTensor's CAReduce: convert to the accumulator, reduce there, convert the result
                acc = np.dtype(self.accumulator_dtype(in_dtype))
                total = (np.prod if self.kind == "prod" else np.sum)(np.asarray(x, dtype=acc), axis=self.axis,
                                                                      dtype=acc)
                result = np.asarray(total, dtype=self.sum_dtype(in_dtype))
                if self.kind == "mean":
                    count_dtype, quotient = mean_divide_dtype(result.dtype.name)
                    count = np.dtype(count_dtype).type(int(np.prod([x.shape[a] for a in self.axis])))
                    result = np.true_divide(result.astype(quotient), count, dtype=quotient)
            else:
                result = _NUMPY_REDUCE[self.kind](x, axis=self.axis)
        # a reduction over no axes may hand back its input: copy so the output is fresh
        result = np.asarray(result, dtype=out_dtype)
        output_storage[0][0] = result.copy() if not self.axis else result

    def infer_shape(self, fgraph, node, input_shapes):
        (shp,) = input_shapes
        return [tuple(s for a, s in enumerate(shp) if a not in self.axis)]

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.reduce_grad import reduce_input_grad

        return [reduce_input_grad(self, inputs[0], outputs[0], output_grads[0])]

    def __str__(self):
        return "%s{axis=%s}" % (self.kind.capitalize(), ",".join(map(str, self.axis)))


class ArgReduce(DelegatedCOp, Op):
    """Index (int64) of the max/min over ``axis``, counted in C order over those axes."""

    c_impl = "ffigraph.tensor.reduce_c"
    __props__ = ("kind", "axis")

    def __init__(self, kind, axis):
        self.kind = kind
        self.axis = tuple(axis)

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.dtype.startswith("complex"):
            raise TypeError("%s: complex values have no order (input %s)" % (self, x))
        shape = tuple(s for a, s in enumerate(x.type.shape) if a not in self.axis)
        return Apply(self, [x], [TensorType("int64", shape)()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        if builtins.any(x.shape[a] == 0 for a in self.axis):
            raise ValueError("%s: an empty axis has no %s (input shape %s, axes %s)"
                             % (self, self.kind, x.shape, self.axis))
        kept = [a for a in range(x.ndim) if a not in self.axis]
        moved = x.transpose(kept + list(self.axis))
        reduced = int(np.prod([x.shape[a] for a in self.axis], dtype=np.int64))
        flat = moved.reshape(moved.shape[:len(kept)] + (reduced,))
        fn = np.argmax if self.kind == "argmax" else np.argmin
        output_storage[0][0] = np.asarray(fn(flat, axis=-1), dtype=np.int64)

    def L_op(self, inputs, outputs, output_grads):
        """An index is piecewise constant in the values: zero (floatX for an integer input)."""
        from ffigraph.tensor.basic import zeros_like

        (x,) = inputs
        return [zeros_like(x, dtype=None if x.type.dtype.startswith("float") else "floatX")]

    def infer_shape(self, fgraph, node, input_shapes):
        (shp,) = input_shapes
        return [tuple(s for a, s in enumerate(shp) if a not in self.axis)]

    def __str__(self):
        return "%s{axis=%s}" % (self.kind.capitalize(), ",".join(map(str, self.axis)))


def _normalize_axes(axis, ndim, what, ordered=True):
    """``axis`` (None: all, an int, or a sequence; negative counts from the end) as a tuple of
    distinct axes: sorted, or in the given order (``ordered=False``)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (list, tuple)):
        axes = [normalize_axis(a, ndim, what) for a in axis]
    else:
        axes = [normalize_axis(axis, ndim, what)]
    if len(set(axes)) != len(axes):
        raise ValueError("%s: repeated axis in %s" % (what, axis))
    return tuple(sorted(axes)) if ordered else tuple(axes)


def _keep(out, axes, ndim):
    """Put back the reduced axes as length-1 axes (``keepdims=True``)."""
    pattern, k = [], 0
    for a in range(ndim):
        if a in axes:
            pattern.append("x")
        else:
            pattern.append(k)
            k += 1
    return DimShuffle(out.ndim, pattern)(out)


def _reduction(kind):
    def fn(x, axis=None, keepdims=False, dtype=None, acc_dtype=None):
        x = as_tensor_variable(x)
        axes = _normalize_axes(axis, x.ndim, kind)
        out = Reduce(kind, axes, None if dtype is None else normalize_dtype(dtype),
                     None if acc_dtype is None else normalize_dtype(acc_dtype))(x)
        return _keep(out, axes, x.ndim) if keepdims else out

    fn.__name__ = kind
    fn.__doc__ = "%s over ``axis`` (an int, a tuple, or None for all axes)." % kind.capitalize()
    return fn


def _accumulating(kind, doc):
    inner = _reduction(kind)

    # PyTensor's signature: (input, axis=None, dtype=None, keepdims=False, acc_dtype=None)
    def fn(input, axis=None, dtype=None, keepdims=False, acc_dtype=None):
        return inner(input, axis=axis, keepdims=keepdims, dtype=dtype, acc_dtype=acc_dtype)

    fn.__name__ = kind
    fn.__qualname__ = kind
    fn.__doc__ = doc
    return fn


_ACC_DOC = """

    ``dtype``: the dtype of the result (by default the input's, with bools and ints narrower than
    64 bits widened to int64, unsigned ones to uint64). ``acc_dtype``: the dtype it accumulates
    in (by default the input's widened: float32 accumulates in float64, float16 in float32, ints
    in int64/uint64); one that loses precision against the input's is a TypeError. The input is
    converted to ``acc_dtype``, reduced, and the result converted to ``dtype``, as in PyTensor."""

sum = _accumulating("sum", "The sum over ``axis`` (an int, a tuple, or None for all axes)." + _ACC_DOC)
_prod = _accumulating("prod", "")


def prod(input, axis=None, dtype=None, keepdims=False, acc_dtype=None, no_zeros_in_input=False):
    return _prod(input, axis=axis, dtype=dtype, keepdims=keepdims, acc_dtype=acc_dtype)


prod.__doc__ = "The product over ``axis`` (an int, a tuple, or None for all axes)." + _ACC_DOC + """

    ``no_zeros_in_input`` (PyTensor's promise that no input is zero, which lets its gradient
    divide) is accepted and changes nothing: the gradient here is right with zeros either way."""
mean = _accumulating("mean", """The mean over ``axis`` (an int, a tuple, or None for all axes).

    As PyTensor's ``mean``: the sum (``dtype`` and ``acc_dtype`` as for ``sum``; a float16 input
    sums into float32) divided by the count, which is float32 for a float16, float32 or complex64
    sum and float64 otherwise; so the mean of ints is float64 whatever ``dtype``, and a float16
    mean (or ``dtype='float16'``) is converted back to float16.""")


def _plain_reduction(kind):
    inner = _reduction(kind)

    def fn(x, axis=None, keepdims=False):
        return inner(x, axis=axis, keepdims=keepdims)

    fn.__name__ = kind
    fn.__doc__ = inner.__doc__
    return fn


max = _plain_reduction("max")
min = _plain_reduction("min")
all = _plain_reduction("all")
any = _plain_reduction("any")


def _arg_reduction(kind):
    def fn(x, axis=None, keepdims=False):
        x = as_tensor_variable(x)
        axes = _normalize_axes(axis, x.ndim, kind)
        out = ArgReduce(kind, axes)(x)
        return _keep(out, axes, x.ndim) if keepdims else out

    fn.__name__ = kind
    fn.__doc__ = "Index of the %s over ``axis`` (C order over several axes)." % kind[3:]
    return fn


argmax = _arg_reduction("argmax")
argmin = _arg_reduction("argmin")


# ------------------------------------------------------------------ dot


class Dot(DelegatedCOp, Op):
    """Inner product of 1-d and 2-d tensors (vector·vector, matrix·vector, vector·matrix, matrix·matrix).

    The op ``dot`` builds for operands of at most two dimensions. The BLAS rewrites
    (``ffigraph.rewriting.blas``) rename a compiled float32/float64 node by its BLAS role, as
    Theano and PyTensor do: ``Dot22`` (matrix·matrix) and ``Gemv`` (matrix·vector,
    vector·matrix) are subclasses with this very C code; vector·vector stays ``Dot``."""

    c_impl = "ffigraph.tensor.dot_c"
    __props__ = ()

    def make_node(self, x, y):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        if x.ndim not in (1, 2) or y.ndim not in (1, 2):
            raise TypeError("%s (the op) takes 1-d and 2-d inputs; got %s (%d-d) and %s (%d-d) (the function "
                            "ffigraph.tensor.dot takes every rank)" % (type(self).__name__, x, x.ndim, y, y.ndim))
        kx, ky = x.type.shape[-1], y.type.shape[0]
        if kx is not None and ky is not None and kx != ky:
            raise ValueError("dot: %s has %d columns but %s has %d rows" % (x, kx, y, ky))
        shape = x.type.shape[:-1] + y.type.shape[1:]
        return Apply(self, [x, y], [TensorType(upcast(x.dtype, y.dtype), shape)()])

    def perform(self, node, inputs, output_storage):
        x, y = inputs
        if x.shape[-1] != y.shape[0]:
            raise ValueError("dot: shapes %s (%s) and %s (%s) are not aligned"
                             % (x.shape, node.inputs[0], y.shape, node.inputs[1]))
        out_dtype = node.outputs[0].type.numpy_dtype
        # matmul, not np.dot (the same product for 1-d and 2-d operands): np.dot turns a 1-element
        # operand into a BLAS scale, which writes zeros for 0 * inf where IEEE and the C linkers give NaN
        output_storage[0][0] = np.asarray(np.matmul(x, y), dtype=out_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        sx, sy = input_shapes
        return [tuple(sx[:-1]) + tuple(sy[1:])]

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.reduce_grad import dot_input_grads

        return dot_input_grads(inputs[0], inputs[1], output_grads[0])


_dot = Dot()


def dot(a, b):
    """Theano's and PyTensor's ``dot``: ``numpy.dot`` for operands of every rank.

    - a 0-d operand multiplies elementwise (``a * b``);
    - operands of one or two dimensions: the ``Dot`` op (vector·vector, matrix·vector,
      vector·matrix, matrix·matrix);
    - otherwise (one operand has three or more dimensions) ``numpy.dot``'s sum over the last axis
      of ``a`` and the second-to-last of ``b`` (its only axis when ``b`` is 1-d), as Theano 1.0:
      ``tensordot(a, b, [[a.ndim - 1], [max(0, b.ndim - 2)]])``. The result has ``a``'s other axes
      then ``b``'s; both operands are reshaped to matrices around one ``Dot``, so float32/float64
      products run through BLAS gemm (an operand that cannot be viewed as a matrix is copied)."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if a.ndim == 0 or b.ndim == 0:
        return ELEMWISE["mul"](a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return _dot(a, b)
    from ffigraph.tensor.products import _tensordot   # products builds on this module

    return _tensordot(a, b, [[a.ndim - 1], [builtins.max(0, b.ndim - 2)]], "dot")


# PyTensor's tensor.math.dense_dot: ffigraph's dot, which is dense only (sparse matrices have their own)
dense_dot = dot


# ------------------------------------------------------------------ PyTensor's reduction classes
# Every reduction here is a ``Reduce`` node. PyTensor's code names classes instead:
# ``CAReduce(scalar_op, axis)``, ``Sum``, ``Prod``, ``ProdWithoutZeros``, ``Max``, ``Min``, ``All``,
# ``Any``. Each class below makes the op that gives such a node (``Prod(axis=0)(x)``), and
# ``isinstance(node.op, Prod)`` holds for a ``Reduce`` of that kind (``CAReduce``: of any kind but
# ``mean``), so code that tests for the class works on the nodes ``prod`` and friends make.

# the reduction of each scalar op a CAReduce may be made of
_KINDS = {"add": "sum", "mul": "prod", "maximum": "max", "minimum": "min", "and": "all", "or": "any"}


class _ReductionClass(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Reduce) and obj.kind in cls.kinds


class _MakeReduce(Op):
    """The op a reduction class makes: a ``Reduce`` of the axes, known once the input's rank is."""

    __props__ = ("kind", "axis", "dtype", "acc_dtype")

    def __init__(self, kind, axis, dtype, acc_dtype):
        self.kind = kind
        self.axis = axis if axis is None or isinstance(axis, int) else tuple(int(a) for a in axis)
        self.dtype = None if dtype is None else normalize_dtype(dtype)
        self.acc_dtype = None if acc_dtype is None else normalize_dtype(acc_dtype)

    def make_node(self, x):
        x = as_tensor_variable(x)
        axes = _normalize_axes(self.axis, x.ndim, self.kind)
        return Reduce(self.kind, axes, self.dtype, self.acc_dtype).make_node(x)


class CAReduce(metaclass=_ReductionClass):
    """``CAReduce(scalar_op, axis=None, dtype=None, acc_dtype=None)``: the reduction by ``scalar_op``
    (add, mul, maximum, minimum, and, or)."""

    kinds = ("sum", "prod", "max", "min", "all", "any")

    def __new__(cls, scalar_op, axis=None, dtype=None, acc_dtype=None):
        name = getattr(scalar_op, "name", scalar_op)
        kind = _KINDS.get(name)
        if kind is None:
            raise ValueError("CAReduce: no reduction by %s (one of %s)" % (scalar_op, ", ".join(sorted(_KINDS))))
        return _MakeReduce(kind, axis, dtype, acc_dtype)


def _kind_class(name, kind, doc):
    def __new__(cls, axis=None, dtype=None, acc_dtype=None, **kwargs):
        # (Prod's no_zeros_in_input changes nothing: its gradient is right with zeros either way)
        return _MakeReduce(kind, axis, dtype, acc_dtype)

    return _ReductionClass(name, (CAReduce,), {"kinds": (kind,), "__new__": __new__, "__doc__": doc,
                                              "__module__": __name__, "__qualname__": name})


Sum = _kind_class("Sum", "sum", "``Sum(axis=None, dtype=None, acc_dtype=None)``.")
Prod = _kind_class("Prod", "prod", "``Prod(axis=None, dtype=None, acc_dtype=None, no_zeros_in_input=False)``.")
ProdWithoutZeros = _kind_class("ProdWithoutZeros", "prod", "``ProdWithoutZeros(axis=None, dtype=None)``: "
                               "a product (whose gradient is right with zeros too).")
Max = _kind_class("Max", "max", "``Max(axis=None)``.")
Min = _kind_class("Min", "min", "``Min(axis=None)``.")
All = _kind_class("All", "all", "``All(axis=None)``.")
Any = _kind_class("Any", "any", "``Any(axis=None)``.")


__all__ = list(_PUBLIC.values()) + [
    "dense_dot", "abs_", "pow_", "round_", "sign", "clip", "real", "imag", "angle", "divide", "floor_div", "bitwise_and",
    "power", "digamma", "logaddexp", "isclose", "allclose", "conj", "conjugate",
    "bitwise_or", "bitwise_xor", "sum", "prod", "mean", "max", "min", "all", "any", "argmax", "argmin", "dot",
    "Reduce", "ArgReduce", "Dot", "ELEMWISE",
    "CAReduce", "Sum", "Prod", "ProdWithoutZeros", "Max", "Min", "All", "Any",
]


def __getattr__(name):
    # pytensor.tensor.math.logsumexp: the op lives in special.py, which imports this module
    if name == "logsumexp":
        from ffigraph.tensor.special import logsumexp

        return logsumexp
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
