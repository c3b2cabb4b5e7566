"""Elementwise math (one function per scalar-table entry), reductions and ``dot``."""
from __future__ import annotations

import builtins

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op
from ffigraph.linkers.c.interface import DelegatedCOp
from ffigraph.scalar.basic import SCALAR_OPS, upcast
from ffigraph.tensor.basic import as_tensor_variable, normalize_axis
from ffigraph.tensor.elemwise import DimShuffle, Elemwise
from ffigraph.tensor.type import TensorType, normalize_dtype

# ------------------------------------------------------------------ elementwise

ELEMWISE = {name: Elemwise(sop) for name, sop in SCALAR_OPS.items()}


def _elemwise_function(name, public):
    op = ELEMWISE[name]

    def fn(*args):
        return op(*args)

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


def clip(x, a_min, a_max):
    """Elementwise ``min(max(x, a_min), a_max)``."""
    return ELEMWISE["clip"](x, a_min, a_max)


# ------------------------------------------------------------------ reductions


def _reduce_dtype(kind, dtype):
    d = np.dtype(dtype)
    if kind in ("sum", "prod"):
        if d.kind == "b" or d.kind == "i":
            return "int64"
        if d.kind == "u":
            return "uint64"
        return d.name
    if kind in ("all", "any"):
        return "bool"
    if kind == "mean":
        # PyTensor's mean: the int64/uint64 sum divided by a float64 count, so float64 for every
        # bool and integer input (numpy's dtype too), whatever floatX
        return "float64" if d.kind in "biu" else d.name
    return d.name  # max, min


_NUMPY_REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
                 "all": np.all, "any": np.any, "mean": None}


class Reduce(DelegatedCOp, Op):
    """Reduce over ``axis`` (a sorted tuple of axes) with ``kind``: sum, prod, max, min, all, any, mean.

    ``dtype`` fixes the output (and accumulation) dtype of sum/prod/mean;
    None uses numpy's defaults (ints accumulate in int64).
    """

    c_impl = "ffigraph.tensor.reduce_c"
    __props__ = ("kind", "axis", "dtype")

    def __init__(self, kind, axis, dtype=None):
        if kind not in _NUMPY_REDUCE:
            raise ValueError("unknown reduction %r" % (kind,))
        self.kind = kind
        self.axis = tuple(axis)
        self.dtype = dtype

    def make_node(self, x):
        x = as_tensor_variable(x)
        if self.kind in ("max", "min") and x.dtype.startswith("complex"):
            raise TypeError("%s: complex values have no order (input %s)" % (self, x))
        out_dtype = self.dtype or _reduce_dtype(self.kind, x.dtype)
        shape = tuple(s for a, s in enumerate(x.type.shape) if a not in self.axis)
        return Apply(self, [x], [TensorType(out_dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        out_dtype = node.outputs[0].type.numpy_dtype
        if self.kind in ("max", "min") and builtins.any(x.shape[a] == 0 for a in self.axis):
            raise ValueError("%s: cannot take the %s over an empty axis (input shape %s, axes %s)"
                             % (self, self.kind, x.shape, self.axis))
        with np.errstate(all="ignore"):
            if self.kind == "mean":
                count = int(np.prod([x.shape[a] for a in self.axis]))
                result = np.sum(x, axis=self.axis, dtype=out_dtype) / out_dtype.type(count)
            elif self.kind in ("sum", "prod"):
                result = _NUMPY_REDUCE[self.kind](x, axis=self.axis, dtype=out_dtype)
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

    def infer_shape(self, fgraph, node, input_shapes):
        (shp,) = input_shapes
        return [tuple(s for a, s in enumerate(shp) if a not in self.axis)]

    def __str__(self):
        return "%s{axis=%s}" % (self.kind.capitalize(), ",".join(map(str, self.axis)))


def _normalize_axes(axis, ndim, what):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (list, tuple)):
        axes = [normalize_axis(a, ndim, what) for a in axis]
    else:
        axes = [normalize_axis(axis, ndim, what)]
    if len(set(axes)) != len(axes):
        raise ValueError("%s: repeated axis in %s" % (what, axis))
    return tuple(sorted(axes))


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
    def fn(x, axis=None, keepdims=False, dtype=None):
        x = as_tensor_variable(x)
        axes = _normalize_axes(axis, x.ndim, kind)
        out = Reduce(kind, axes, None if dtype is None else normalize_dtype(dtype))(x)
        return _keep(out, axes, x.ndim) if keepdims else out

    fn.__name__ = kind
    fn.__doc__ = "%s over ``axis`` (an int, a tuple, or None for all axes)." % kind.capitalize()
    return fn


sum = _reduction("sum")
prod = _reduction("prod")
mean = _reduction("mean")


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
    """Inner product of 1-d and 2-d tensors (vector·vector, matrix·vector, vector·matrix, matrix·matrix)."""

    c_impl = "ffigraph.tensor.dot_c"
    __props__ = ()

    def make_node(self, x, y):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        if x.ndim not in (1, 2) or y.ndim not in (1, 2):
            raise TypeError("dot supports 1-d and 2-d inputs; got %s (%d-d) and %s (%d-d)"
                            % (x, x.ndim, y, y.ndim))
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
        output_storage[0][0] = np.asarray(np.dot(x, y), dtype=out_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        sx, sy = input_shapes
        return [tuple(sx[:-1]) + tuple(sy[1:])]

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.reduce_grad import dot_input_grads

        return dot_input_grads(inputs[0], inputs[1], output_grads[0])


_dot = Dot()


def dot(x, y):
    """Matrix product for 1-d/2-d tensors; a scalar operand multiplies elementwise."""
    x, y = as_tensor_variable(x), as_tensor_variable(y)
    if x.ndim == 0 or y.ndim == 0:
        return ELEMWISE["mul"](x, y)
    return _dot(x, y)


__all__ = list(_PUBLIC.values()) + [
    "abs_", "pow_", "round_", "sign", "clip", "divide", "floor_div", "bitwise_and", "bitwise_or",
    "bitwise_xor", "sum", "prod", "mean", "max", "min", "all", "any", "argmax", "argmin", "dot",
    "Reduce", "ArgReduce", "Dot", "ELEMWISE",
]
