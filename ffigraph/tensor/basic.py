"""Making tensors: variables, constants, conversions, and the ops that build arrays."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Optional, Protocol, Sequence, Tuple, TypeVar, Union, overload

import numpy as np

from ffigraph.config import config
from ffigraph.graph.basic import Apply, Constant, Variable
from ffigraph.graph.op import Op
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.scalar.basic import SCALAR_OPS, Cast, upcast
from ffigraph.scalar.type import OPERATOR_OPS, ScalarType, autocast_dtype, get_scalar_type, set_tensor_converter
from ffigraph.tensor.elemwise import DimShuffle, Elemwise
from ffigraph.tensor.type import TensorType, normalize_dtype
from ffigraph.tensor.variable import TensorConstant, TensorVariable

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    # what as_tensor_variable takes: a variable, a value, or a (nested) list of variables and values
    TensorLike = Union[Variable, ArrayLike, Sequence[Union[Variable, ArrayLike]]]
    # a static shape: an int (the axis' size) or None (known at run time) per axis
    StaticShape = Sequence[Optional[int]]
    _V = TypeVar("_V", bound=Variable)

    class TensorConstructor(Protocol):
        """``dmatrix``, ``vector``, ``row``, ...: a symbolic tensor of the constructor's rank (and
        dtype, unless ``dtype`` is given: floatX for the letterless ones)."""

        def __call__(self, name: Optional[str] = None, dtype: Optional[DTypeLike] = ...,
                     shape: Optional[StaticShape] = None) -> TensorVariable: ...

    class PluralConstructor(Protocol):
        """``dmatrices``, ``vectors``, ...: ``f(3)`` makes three variables, ``f("x", "y")`` one per name;
        one string makes one variable, or one per character (``"xy"``) or comma-separated name."""

        @overload
        def __call__(self, n: int, /) -> List[TensorVariable]: ...
        @overload
        def __call__(self, name1: str, name2: str, /, *names: str) -> List[TensorVariable]: ...
        @overload
        def __call__(self, names: Union[str, Sequence[str]], /) -> Any: ...

# ------------------------------------------------------------------ conversion


def _python_scalar_dtype(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, int):
        return "int64" if -2**63 <= value < 2**63 else "uint64"
    if isinstance(value, float):
        return "float64"
    return "complex128"


def constant(value: ArrayLike, name: Optional[str] = None, ndim: Optional[int] = None,
             dtype: Optional[DTypeLike] = None) -> TensorConstant:
    """A TensorConstant; Python scalars without a dtype become weak constants (NEP 50)."""
    weak = dtype is None and isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic)
    if weak:
        dtype = _python_scalar_dtype(value)
    arr = np.asarray(value, dtype=None if dtype is None else normalize_dtype(dtype))
    if arr.dtype.kind not in "biufc":
        raise TypeError("cannot make a tensor constant from %r (dtype %s)" % (value, arr.dtype))
    if ndim is not None:
        if arr.ndim > ndim:
            raise ValueError("constant %r has %d dimensions, more than ndim=%d" % (value, arr.ndim, ndim))
        arr = arr.reshape((1,) * (ndim - arr.ndim) + arr.shape)
    arr = np.array(arr, copy=True)  # constants own their data
    arr.setflags(write=False)
    ttype = TensorType(arr.dtype, arr.shape)
    return TensorConstant(ttype, arr, name=name, weak=weak)


def weak_in_dtype(var, dtype):
    """A weak Python-number constant ``var`` as a constant of ``dtype`` when its value is kept
    there (NaN too), else None (``var`` is not weak, or the value would change)."""
    if not getattr(var, "weak", False):
        return None
    with np.errstate(all="ignore"):
        kept = var.data.astype(dtype)
    if kept == var.data or (np.isnan(var.data) and np.isnan(kept)):
        return constant(kept)
    return None


# a variable passes through (without a dtype to cast to); a value becomes a constant
@overload
def as_tensor_variable(  # type: ignore[overload-overlap]  # (the first that matches applies)
        x: _V, name: Optional[str] = None, ndim: Optional[int] = None, dtype: None = None) -> _V: ...
@overload
def as_tensor_variable(x: TensorLike, name: Optional[str] = None, ndim: Optional[int] = None,
                       dtype: Optional[DTypeLike] = None) -> Union[TensorVariable, TensorConstant]: ...


def as_tensor_variable(x: Any, name: Optional[str] = None, ndim: Optional[int] = None,
                       dtype: Optional[DTypeLike] = None) -> Any:
    """``x`` as a tensor Variable: variables pass through, values become constants."""
    if isinstance(x, Apply):
        x = x.out
    if isinstance(x, Variable):
        if isinstance(x.type, ScalarType):
            x = tensor_from_scalar(x)
        if not isinstance(x.type, TensorType):
            raise TypeError("%s has type %s, not a tensor type" % (x, x.type))
        if ndim is not None and x.ndim != ndim:
            raise ValueError("%s has %d dimensions, expected %d" % (x, x.ndim, ndim))
        return x if dtype is None else cast(x, dtype)
    if isinstance(x, (list, tuple)) and any(isinstance(e, Variable) for e in _flatten(x)):
        return stack([as_tensor_variable(e) for e in x])
    try:
        return constant(x, name=name, ndim=ndim, dtype=dtype)
    except TypeError as err:
        # a value of a dtype ffigraph has no tensors of (float16): say so, not only "cannot convert"
        why = ": %s" % err if "is not supported" in str(err) else ""
        raise TypeError("cannot convert %r (of type %s) to a tensor%s" % (x, type(x).__name__, why)) from None


class TensorFromScalar(Op):
    """A scalar variable as a 0-d tensor (PyTensor's ``tensor_from_scalar``). ``function`` compiles
    a scalar as a 0-d slot, so this op goes from a graph before it is linked (nothing to run, in
    C or Python) and a graph that is linked never holds it: see ``ffigraph.tensor.scalar_graph``."""

    __props__ = ()

    def make_node(self, s):
        if not isinstance(s, Variable) or not isinstance(s.type, ScalarType):
            raise TypeError("tensor_from_scalar: %r is not a scalar variable" % (s,))
        if s.type.dtype == "float16":
            raise TypeError("tensor_from_scalar: %s is a float16 scalar; ffigraph's tensors have no float16 "
                            "(cast it to float32 first)" % (s,))
        return Apply(self, [s], [TensorType(s.type.dtype, ())()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.asarray(inputs[0], dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        return [()]

    def L_op(self, inputs, outputs, output_grads):
        return [scalar_from_tensor(output_grads[0])]


class ScalarFromTensor(Op):
    """A 0-d tensor variable as a scalar (PyTensor's ``scalar_from_tensor``); compiled as
    TensorFromScalar is (removed before linking)."""

    __props__ = ()

    def make_node(self, t):
        t = as_tensor_variable(t)
        if t.ndim != 0:
            raise TypeError("scalar_from_tensor: %s has %d dimensions; a scalar comes from a 0-d tensor"
                            % (t, t.ndim))
        return Apply(self, [t], [get_scalar_type(t.dtype)()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = node.outputs[0].type.numpy_dtype.type(np.asarray(inputs[0])[()])

    def infer_shape(self, fgraph, node, input_shapes):
        return [()]

    def L_op(self, inputs, outputs, output_grads):
        return [as_tensor_variable(output_grads[0])]


tensor_from_scalar = TensorFromScalar()
scalar_from_tensor = ScalarFromTensor()
# (the scalar layer's as_scalar turns a 0-d tensor into a scalar through it; a scalar's shape is
# the empty int64 vector)
set_tensor_converter(scalar_from_tensor)
OPERATOR_OPS["shape"] = lambda s: constant(np.zeros(0, dtype="int64"))


def _flatten(seq):
    for e in seq:
        if isinstance(e, (list, tuple)):
            yield from _flatten(e)
        else:
            yield e


def get_scalar_constant_value(v):
    """The Python value of a 0-d (or all-equal) constant, else raise NotScalarConstantError."""
    if isinstance(v, (int, float, np.number)):
        return v
    if isinstance(v, Constant) and isinstance(v.type, TensorType):
        data = v.data
        if data.size and np.all(data == data.flat[0]):
            return data.flat[0]
    raise NotScalarConstantError("%s is not a scalar constant" % (v,))


class NotScalarConstantError(ValueError):
    pass


def get_vector_length(v):
    """The length of the vector ``v`` when it is known before the graph runs (its static shape:
    a shape, a constant, a stack of scalars, their slices and joins); ValueError otherwise, as
    in PyTensor."""
    v = as_tensor_variable(v)
    if v.ndim != 1:
        raise ValueError("%s is not a vector (it has %d dimensions), so it has no vector length" % (v, v.ndim))
    length = v.type.shape[0]
    if length is None:
        raise ValueError("the length of %s is not known before the graph runs" % (v,))
    return length


# ------------------------------------------------------------------ constructors


def tensor(dtype: Optional[DTypeLike] = None, shape: Optional[StaticShape] = None,
           name: Optional[str] = None) -> TensorVariable:
    """A symbolic tensor; ``shape`` holds an int (static size) or None per axis."""
    if shape is None:
        raise TypeError("tensor() needs a shape, e.g. tensor('float64', (None, 3))")
    return TensorType(dtype, shape)(name)


def _maker(ndim: int, dtype: Optional[DTypeLike] = None) -> TensorConstructor:
    def make(name: Optional[str] = None, dtype: Optional[DTypeLike] = dtype,
             shape: Optional[StaticShape] = None) -> TensorVariable:
        return TensorType(dtype, (None,) * ndim if shape is None else shape)(name)

    return make


scalar = _maker(0)
vector = _maker(1)
matrix = _maker(2)
tensor3 = _maker(3)
tensor4 = _maker(4)
tensor5 = _maker(5)
tensor6 = _maker(6)
tensor7 = _maker(7)

_PREFIXES = {"b": "int8", "w": "int16", "i": "int32", "l": "int64",
             "f": "float32", "d": "float64", "c": "complex64", "z": "complex128"}
_KINDS = {"scalar": 0, "vector": 1, "matrix": 2, "tensor3": 3, "tensor4": 4, "tensor5": 5, "tensor6": 6,
          "tensor7": 7}
# As in Theano, the prefixed constructors are types: ``T.dmatrix`` is ``TensorType("float64", (None,
# None))``, so ``T.dmatrix("x")`` makes a variable and ``x.type == T.dmatrix`` holds (TensorType.__call__
# also takes ffigraph's ``dtype=``/``shape=``). The letterless ones stay functions: their dtype is floatX
# when they are called.
for _p, _dt in _PREFIXES.items():
    for _kind, _nd in _KINDS.items():
        globals()[_p + _kind] = TensorType(_dt, (None,) * _nd)
del _p, _dt, _kind, _nd


def _broadcastable_maker(static: Tuple[Optional[int], ...], what: str,
                         dtype: Optional[DTypeLike] = None) -> TensorConstructor:
    """PyTensor's ``row`` (static shape (1, None)) and ``col`` ((None, 1)): the length-1 axis
    must stay 1 in a given ``shape``."""
    def make(name: Optional[str] = None, dtype: Optional[DTypeLike] = dtype,
             shape: Optional[StaticShape] = None) -> TensorVariable:
        shape = static if shape is None else tuple(shape)
        if len(shape) != 2 or any(s == 1 and shape[a] != 1 for a, s in enumerate(static)):
            raise ValueError("%s: the shape must be like %s (the axis of length 1 stays 1), got %s"
                             % (what, static, shape))
        return TensorType(dtype, shape)(name)

    return make


row = _broadcastable_maker((1, None), "row")
col = _broadcastable_maker((None, 1), "col")
_BROADCASTABLE = {"row": (1, None), "col": (None, 1)}
for _p, _dt in _PREFIXES.items():
    for _kind, _static in _BROADCASTABLE.items():
        globals()[_p + _kind] = TensorType(_dt, _static)
del _p, _dt, _kind, _static


def _plural(make: Callable[..., TensorVariable], name: str) -> PluralConstructor:
    """PyTensor's plural constructors (``dmatrices``): ``f(3)`` makes three unnamed variables,
    ``f("x", "y")`` one per name, and one string one per character (``f("xy")``), as PyTensor's
    ``apply_across_args`` does; one name gives one variable. A string with commas or spaces
    (``"x, y"``) is split on them instead (PyTensor would make a variable per character)."""
    def plural(*names: Any) -> Any:
        if names and isinstance(names[0], (int, np.integer)) and not isinstance(names[0], bool):
            return [make() for _ in range(int(names[0]))]
        if len(names) == 1:
            names = names[0]
            if isinstance(names, str) and any(c in names for c in ", \t\n"):
                names = [n for n in names.replace(",", " ").split() if n]
        if len(names) == 1:
            return make(names[0] if isinstance(names, (list, tuple)) else names)
        return [make(n) for n in names]

    plural.__name__ = plural.__qualname__ = name
    return plural


# PyTensor's set: the plain kinds and their f, d, i, l forms
_PLURALS = {"scalar": "scalars", "vector": "vectors", "matrix": "matrices", "row": "rows", "col": "cols",
            "tensor3": "tensor3s", "tensor4": "tensor4s", "tensor5": "tensor5s", "tensor6": "tensor6s",
            "tensor7": "tensor7s"}
for _kind, _many in _PLURALS.items():
    for _p in ("", "f", "d", "i", "l"):
        globals()[_p + _many] = _plural(globals()[_p + _kind], _p + _many)
del _kind, _many, _p

if TYPE_CHECKING:
    # The constructors the loops above make, as mypy sees them (it does not run loops); a test
    # (tests/typecheck/test_typing_declarations.py) keeps these names equal to the loops'.
    bscalar = wscalar = iscalar = lscalar = fscalar = dscalar = cscalar = zscalar = scalar
    bvector = wvector = ivector = lvector = fvector = dvector = cvector = zvector = vector
    bmatrix = wmatrix = imatrix = lmatrix = fmatrix = dmatrix = cmatrix = zmatrix = matrix
    btensor3 = wtensor3 = itensor3 = ltensor3 = ftensor3 = dtensor3 = ctensor3 = ztensor3 = tensor3
    btensor4 = wtensor4 = itensor4 = ltensor4 = ftensor4 = dtensor4 = ctensor4 = ztensor4 = tensor4
    btensor5 = wtensor5 = itensor5 = ltensor5 = ftensor5 = dtensor5 = ctensor5 = ztensor5 = tensor5
    btensor6 = wtensor6 = itensor6 = ltensor6 = ftensor6 = dtensor6 = ctensor6 = ztensor6 = tensor6
    btensor7 = wtensor7 = itensor7 = ltensor7 = ftensor7 = dtensor7 = ctensor7 = ztensor7 = tensor7
    brow = wrow = irow = lrow = frow = drow = crow = zrow = row
    bcol = wcol = icol = lcol = fcol = dcol = ccol = zcol = col
    scalars = fscalars = dscalars = iscalars = lscalars = _plural(scalar, "scalars")
    vectors = fvectors = dvectors = ivectors = lvectors = _plural(vector, "vectors")
    matrices = fmatrices = dmatrices = imatrices = lmatrices = _plural(matrix, "matrices")
    rows = frows = drows = irows = lrows = _plural(row, "rows")
    cols = fcols = dcols = icols = lcols = _plural(col, "cols")
    tensor3s = ftensor3s = dtensor3s = itensor3s = ltensor3s = _plural(tensor3, "tensor3s")
    tensor4s = ftensor4s = dtensor4s = itensor4s = ltensor4s = _plural(tensor4, "tensor4s")
    tensor5s = ftensor5s = dtensor5s = itensor5s = ltensor5s = _plural(tensor5, "tensor5s")
    tensor6s = ftensor6s = dtensor6s = itensor6s = ltensor6s = _plural(tensor6, "tensor6s")
    tensor7s = ftensor7s = dtensor7s = itensor7s = ltensor7s = _plural(tensor7, "tensor7s")

# ------------------------------------------------------------------ casting and choice


def cast(x, dtype):
    """``x`` converted to ``dtype`` (no node when it already has it).

    A complex tensor converts only to a complex dtype: which real number it stands for is the
    caller's choice (a TypeError names them), as in PyTensor."""
    x = as_tensor_variable(x)
    dtype = normalize_dtype(dtype)
    if x.dtype == dtype:
        return x
    if x.dtype.startswith("complex") and not dtype.startswith("complex"):
        raise TypeError("Casting from complex to real is ambiguous: consider real(), imag(), angle() or abs() "
                        "(cast of %s, a %s, to %s)" % (x, x.dtype, dtype))
    return Elemwise(Cast(dtype))(x)


def switch(cond, ift, iff):
    """Elementwise ``ift where cond else iff`` (numpy's ``where``)."""
    return Elemwise(SCALAR_OPS["switch"])(cond, ift, iff)


where = switch


# ------------------------------------------------------------------ axes


def dimshuffle(x, pattern):
    x = as_tensor_variable(x)
    return DimShuffle(x.ndim, pattern)(x)


def transpose(x, axes=None):
    """Permute the axes (reverse them when ``axes`` is None); a view."""
    x = as_tensor_variable(x)
    if axes is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    axes = tuple(normalize_axis(a, x.ndim, "transpose") for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError("transpose: axes %s are not a permutation of the %d axes of %s" % (axes, x.ndim, x))
    return DimShuffle(x.ndim, axes)(x)


def normalize_axis(axis, ndim, what):
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError("%s: axis must be an int, got %r" % (what, axis))
    if not -ndim <= axis < ndim:
        raise ValueError("%s: axis %d is out of range for %d dimensions" % (what, axis, ndim))
    return int(axis) % ndim


def expand_dims(x, axis):
    x = as_tensor_variable(x)
    axis = normalize_axis(axis, x.ndim + 1, "expand_dims")
    pattern = list(range(x.ndim))
    pattern.insert(axis, "x")
    return DimShuffle(x.ndim, pattern)(x)


# ------------------------------------------------------------------ alloc


class Alloc(DelegatedCOp, Op):
    """A new array of the given shape filled with (broadcast) ``value``."""

    c_impl = "ffigraph.tensor.build_c"
    __props__ = ()

    def make_node(self, value, *shape):
        value = as_tensor_variable(value)
        shape = [_as_int_scalar(s, "alloc shape") for s in shape]
        if len(shape) < value.ndim:
            raise ValueError("alloc: value %s has %d dimensions but only %d sizes were given"
                             % (value, value.ndim, len(shape)))
        static = tuple(_static_int(s) for s in shape)
        return Apply(self, [value] + shape, [TensorType(value.dtype, static)()])

    def perform(self, node, inputs, output_storage):
        value, shape = inputs[0], tuple(int(s) for s in inputs[1:])
        if any(s < 0 for s in shape):
            raise ValueError("alloc: negative size in shape %s" % (shape,))
        out = np.empty(shape, dtype=node.outputs[0].type.numpy_dtype)
        try:
            out[...] = value
        except ValueError:
            raise ValueError("alloc: value of shape %s cannot be broadcast to %s" % (value.shape, shape)) from None
        output_storage[0][0] = out

    def infer_shape(self, fgraph, node, input_shapes):
        return [tuple(node.inputs[1:])]

    def connection_pattern(self, node):
        return [[True]] + [[False]] * (len(node.inputs) - 1)  # sizes only shape the result

    def L_op(self, inputs, outputs, output_grads):
        """Sum the gradient over the axes the value was broadcast along."""
        from ffigraph.tensor.gradient import disconnected_type
        from ffigraph.tensor.elemwise_grad import sum_to_input
        from ffigraph.tensor.math import sum as tsum

        value, (gz,) = inputs[0], output_grads
        shape_inputs = [disconnected_type() for _ in inputs[1:]]
        if np.dtype(value.type.dtype).kind == "c":
            raise NotImplementedError("gradients of complex values are not implemented (%s)" % self)
        # (an integer value gets the summed gradient too, as in PyTensor)
        lead = gz.type.ndim - value.type.ndim
        g = tsum(gz, axis=tuple(range(lead))) if lead else gz
        return [sum_to_input(g, value, [outputs[0].type.shape[lead:]])] + shape_inputs


alloc_op = Alloc()


def _shape_entries(shape, what):
    """Sizes from a list/tuple of scalars, one scalar, or a symbolic int vector of known length."""
    if isinstance(shape, (list, tuple)):
        return list(shape)
    if isinstance(shape, Variable) and getattr(shape.type, "ndim", None) == 1:
        n = shape.type.shape[0]
        if n is None:
            raise TypeError("%s: the shape vector %s has no static length; pass the sizes one by one"
                            % (what, shape))
        return [shape[i] for i in range(n)]
    return [shape]


def alloc(value, *shape):
    """An array of ``shape`` filled with ``value`` (broadcasting like numpy)."""
    if len(shape) == 1:
        shape = _shape_entries(shape[0], "alloc")
    return alloc_op(value, *shape)


def _fill_like(x, fill, dtype):
    x = as_tensor_variable(x)
    dtype = x.dtype if dtype is None else normalize_dtype(dtype)
    return alloc(constant(np.asarray(fill, dtype=dtype)), *[x.shape[i] for i in range(x.ndim)])


def zeros_like(x, dtype=None):
    return _fill_like(x, 0, dtype)


def ones_like(x, dtype=None):
    return _fill_like(x, 1, dtype)


def zeros(shape, dtype=None):
    """An array of zeros; ``shape`` is an int, a list of sizes, or a symbolic int vector."""
    return alloc_op(constant(np.zeros((), dtype=normalize_dtype(dtype))), *_shape_entries(shape, "zeros"))


def ones(shape, dtype=None):
    """An array of ones; ``shape`` is an int, a list of sizes, or a symbolic int vector."""
    return alloc_op(constant(np.ones((), dtype=normalize_dtype(dtype))), *_shape_entries(shape, "ones"))


def _as_int_scalar(s, what):
    s = as_tensor_variable(s)
    if s.ndim != 0 or s.dtype[0] not in "iu":
        raise TypeError("%s: each size must be an integer scalar, got %s of type %s" % (what, s, s.type))
    return cast(s, "int64")


def _static_int(v):
    if isinstance(v, Constant):
        return int(v.data)
    return None


# ------------------------------------------------------------------ joining


class Join(DelegatedCOp, Op):
    """Concatenate tensors of the same ndim along ``axis`` (a fixed, non-negative int)."""

    c_impl = "ffigraph.tensor.build_c"
    __props__ = ("axis",)

    def __init__(self, axis):
        self.axis = int(axis)

    def make_node(self, *tensors):
        if not tensors:
            raise ValueError("concatenate needs at least one tensor")
        tensors = [as_tensor_variable(t) for t in tensors]
        ndim = tensors[0].ndim
        if ndim == 0:
            raise ValueError("concatenate: zero-dimensional tensors cannot be joined (use stack)")
        for t in tensors:
            if t.ndim != ndim:
                raise ValueError("concatenate: all inputs need %d dimensions, %s has %d" % (ndim, t, t.ndim))
        if not 0 <= self.axis < ndim:
            raise ValueError("concatenate: axis %d out of range for %d dimensions" % (self.axis, ndim))
        dtype = upcast(*[t.dtype for t in tensors])
        tensors = [cast(t, dtype) for t in tensors]
        shape = []
        for a in range(ndim):
            sizes = [t.type.shape[a] for t in tensors]
            if a == self.axis:
                shape.append(None if None in sizes else sum(sizes))
            else:
                known = set(sizes) - {None}
                if len(known) > 1:
                    raise ValueError("concatenate: inputs differ in static length %s on axis %d" % (sorted(known), a))
                shape.append(known.pop() if known else None)
        return Apply(self, tensors, [TensorType(dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        try:
            output_storage[0][0] = np.concatenate(inputs, axis=self.axis)
        except ValueError:
            raise ValueError("concatenate along axis %d: input shapes %s do not match on the other axes"
                             % (self.axis, [x.shape for x in inputs])) from None

    def L_op(self, inputs, outputs, output_grads):
        """Each input gets its slab of the output gradient along ``axis``; an integer result is
        piecewise constant, so zeros (floatX), as in PyTensor."""
        from ffigraph.tensor.shapes import shape_i

        (gz,) = output_grads
        if np.dtype(outputs[0].type.dtype).kind in "biu":
            return [zeros_like(t, dtype="floatX") for t in inputs]
        grads, start = [], constant(0, dtype="int64")
        for t in inputs:
            stop = start + shape_i(t, self.axis)
            grads.append(gz[(slice(None),) * self.axis + (slice(start, stop),)])
            start = stop
        return grads

    def infer_shape(self, fgraph, node, input_shapes):
        from ffigraph.tensor.math import add

        out = list(input_shapes[0])
        total = input_shapes[0][self.axis]
        for shp in input_shapes[1:]:
            total = add(total, shp[self.axis])
        out[self.axis] = total
        return [tuple(out)]


def concatenate(tensors, axis=0):
    tensors = [as_tensor_variable(t) for t in tensors]
    if not tensors:
        raise ValueError("concatenate needs at least one tensor")
    axis = normalize_axis(axis, max(tensors[0].ndim, 1), "concatenate")
    if len(tensors) == 1:
        return tensors[0]
    return Join(axis)(*tensors)


def stack(tensors, *more, axis=0):
    """Join tensors of the same shape along a new axis: ``stack([x, y], axis=0)`` (also
    ``stack([x, y], 1)``), or Theano's older varargs form ``stack(x, y, z)`` (along a new first
    axis, unless ``axis=`` says otherwise)."""
    if isinstance(tensors, (list, tuple)):
        if len(more) > 1:
            raise TypeError("stack(tensors, axis): got %d positional arguments after the list of tensors"
                            % len(more))
        if more:
            axis = more[0]
    else:
        tensors = (tensors,) + more
    tensors = [as_tensor_variable(t) for t in tensors]
    if not tensors:
        raise ValueError("stack needs at least one tensor")
    ndim = tensors[0].ndim
    axis = normalize_axis(axis, ndim + 1, "stack")
    for t in tensors:
        if t.ndim != ndim:
            raise ValueError("stack: all inputs need %d dimensions, %s has %d" % (ndim, t, t.ndim))
    expanded = [expand_dims(t, axis) for t in tensors]
    return Join(axis)(*expanded) if len(expanded) > 1 else expanded[0]


# ------------------------------------------------------------------ arange


class ARange(DelegatedCOp, Op):
    """``numpy.arange(start, stop, step)`` of ``dtype``: three 0-d inputs, a 1-d output.

    The length is ``max(ceil((stop - start) / step), 0)`` (the division in float64 for
    integer dtypes, in the dtype for floats, as numpy does); element ``i`` is
    ``start + i * delta`` with ``delta = (start + step) - start`` (numpy's fill).
    """

    c_impl = "ffigraph.tensor.build_c"
    __props__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = normalize_dtype(dtype)
        if np.dtype(self.dtype).kind not in "iuf":
            raise TypeError("arange: dtype %s is not supported (only integer and float dtypes)" % self.dtype)

    def make_node(self, start, stop, step):
        # (constants are converted here, so that the length of constant ranges is static)
        with np.errstate(all="ignore"):
            args = [constant(np.asarray(v.data).astype(self.dtype)) if isinstance(v, Constant)
                    else cast(v, self.dtype) for v in _arange_args(start, stop, step)]
        if isinstance(args[2], Constant) and args[2].data == 0:
            raise ValueError("arange: step cannot be zero")
        length = None
        if all(isinstance(v, Constant) for v in args):
            length = arange_length(*[v.data for v in args])
        return Apply(self, args, [TensorType(self.dtype, (length,))()])

    def perform(self, node, inputs, output_storage):
        start, stop, step = (np.asarray(v, dtype=self.dtype)[()] for v in inputs)
        n = arange_length(start, stop, step)
        out = np.empty(n, dtype=self.dtype)
        with np.errstate(all="ignore"):
            if n > 0:
                out[0] = start
            if n > 1:
                out[1] = start + step
                delta = out[1] - start
                out[2:] = start + np.arange(2, n).astype(self.dtype) * delta
        output_storage[0][0] = out

    def L_op(self, inputs, outputs, output_grads):
        """Element i is start + i*step: start gets sum(gz), step sum(i*gz); the length only
        jumps with stop, so stop's gradient is zero almost everywhere."""
        from ffigraph.tensor.math import sum as tsum

        (gz,) = output_grads
        start, stop, step = inputs
        if np.dtype(self.dtype).kind != "f":
            # integer values: piecewise constant in start and step, so zeros (floatX), as in PyTensor
            return [zeros_like(v, dtype="floatX") for v in inputs]
        positions = cast(ARange("int64")(0, outputs[0].shape[0], 1), self.dtype)
        stop_zeros = zeros_like(stop, dtype=None if np.dtype(stop.type.dtype).kind == "f" else "floatX")
        return [tsum(gz), stop_zeros, tsum(gz * positions)]

    def infer_shape(self, fgraph, node, input_shapes):
        from ffigraph.tensor.math import and_, ceil, eq, gt, maximum, neq, sub, true_div

        start, stop, step = node.inputs
        if node.outputs[0].type.shape[0] is not None:
            return [(constant(node.outputs[0].type.shape[0], dtype="int64"),)]
        span = sub(stop, start)
        if np.dtype(self.dtype).kind in "iu":
            span, step = cast(span, "float64"), cast(step, "float64")
        q = true_div(span, step)
        count = maximum(cast(ceil(q), "int64"), constant(0, dtype="int64"))
        if np.dtype(self.dtype).kind == "f":
            # a quotient that underflows to +0 counts one element (see arange_length)
            underflow = and_(eq(q, 0), neq(span, 0))
            count = switch(underflow, cast(eq(gt(span, 0), gt(step, 0)), "int64"), count)
        return [(count,)]

    def __str__(self):
        return "ARange{%s}" % self.dtype


def arange_length(start, stop, step):
    """numpy's arange length for 0-d values already of the output dtype (ValueError when it has none).

    ``q = (stop - start) / step`` (the difference in the dtype, the division in float64 for
    integer dtypes); the length is ``max(ceil(q), 0)``, except that a quotient that underflows
    to zero gives 1 when it is +0 (numpy's divide-by-inf rule). Lengths whose bytes overflow
    int64 (or below -2**63, as numpy) are errors.
    """
    start, stop, step = np.asarray(start)[()], np.asarray(stop)[()], np.asarray(step)[()]
    if step == 0:
        raise ValueError("arange: step cannot be zero")
    with np.errstate(all="ignore"):
        span = stop - start
        if span.dtype.kind in "iu":
            q = np.float64(span) / np.float64(step)
        else:
            q = span / step
    if q == 0 and span != 0:
        return 0 if np.signbit(q) else 1
    if np.isnan(q):
        raise ValueError("arange: cannot compute a length for start=%s, stop=%s, step=%s (dtype %s)"
                         % (start, stop, step, span.dtype))
    ceil = float(np.ceil(q))
    if not -2.0**63 <= ceil <= float((2**63 - 1) // span.dtype.itemsize):
        raise ValueError("arange: the length for start=%s, stop=%s, step=%s (dtype %s) is too big"
                         % (start, stop, step, span.dtype))
    return max(int(ceil), 0)


def _arange_dtype(args):
    """PyTensor's dtype for arange of these arguments: the upcast of their dtypes (a Python number
    typed as PyTensor types it), then any signed integer widened to int64 and any unsigned one to
    uint64 ("don't be stingy, this leads to overflow"); bools count as int64, as in numpy.

    So three float32 scalars give float32 (numpy's arange gives float64), three uint8 ones uint64."""
    dtypes = [autocast_dtype(np.asarray(a.data)[()].item()) if getattr(a, "weak", False) else a.dtype for a in args]
    dtype = np.dtype(upcast(*dtypes))
    if dtype.kind in "bi":
        return "int64"
    if dtype.kind == "u":
        return "uint64"
    return dtype.name


def arange(start, stop=None, step=1, dtype=None):
    """``numpy.arange``: ``arange(stop)``, ``arange(start, stop[, step])``; scalars or symbolic scalars.
    Without ``dtype``, PyTensor's (see _arange_dtype)."""
    if stop is None:
        start, stop = 0, start
    args = _arange_args(start, stop, step)
    return ARange(_arange_dtype(args) if dtype is None else dtype)(*args)


def _arange_args(*values):
    args = [as_tensor_variable(v) for v in values]
    for what, v in zip(("start", "stop", "step"), args):
        if v.ndim != 0 or np.dtype(v.dtype).kind not in "biuf":
            raise TypeError("arange: %s must be a real scalar, got %s of type %s" % (what, v, v.type))
    return args

# (literal lists where they can be: mypy reads those, and no other, as the names exported)
__all__ = [
    "as_tensor_variable", "constant", "tensor", "scalar", "vector", "matrix", "tensor3", "tensor4",
    "cast", "switch", "where", "dimshuffle", "transpose", "expand_dims", "alloc", "zeros_like",
    "ones_like", "zeros", "ones", "concatenate", "stack", "TensorType", "TensorVariable",
    "TensorConstant", "Alloc", "Join", "DimShuffle", "Elemwise", "arange", "ARange", "get_vector_length",
    "NotScalarConstantError", "tensor_from_scalar", "scalar_from_tensor", "TensorFromScalar", "ScalarFromTensor",
]
__all__ += [p + k for p in _PREFIXES for k in _KINDS]
__all__ += ["tensor5", "tensor6", "tensor7", "row", "col"]
__all__ += [p + k for p in _PREFIXES for k in _BROADCASTABLE]
__all__ += [p + k for k in _PLURALS.values() for p in ("", "f", "d", "i", "l")]
if TYPE_CHECKING:
    # the generated names above, as a literal list for mypy (tests/typecheck/test_typing_declarations.py)
    __all__ += [
        "bscalar", "bvector", "bmatrix", "btensor3", "btensor4", "btensor5", "btensor6", "btensor7", "wscalar",
        "wvector", "wmatrix", "wtensor3", "wtensor4", "wtensor5", "wtensor6", "wtensor7", "iscalar", "ivector",
        "imatrix", "itensor3", "itensor4", "itensor5", "itensor6", "itensor7", "lscalar", "lvector", "lmatrix",
        "ltensor3", "ltensor4", "ltensor5", "ltensor6", "ltensor7", "fscalar", "fvector", "fmatrix", "ftensor3",
        "ftensor4", "ftensor5", "ftensor6", "ftensor7", "dscalar", "dvector", "dmatrix", "dtensor3", "dtensor4",
        "dtensor5", "dtensor6", "dtensor7", "cscalar", "cvector", "cmatrix", "ctensor3", "ctensor4", "ctensor5",
        "ctensor6", "ctensor7", "zscalar", "zvector", "zmatrix", "ztensor3", "ztensor4", "ztensor5", "ztensor6",
        "ztensor7", "brow", "bcol", "wrow", "wcol", "irow", "icol", "lrow", "lcol", "frow", "fcol", "drow",
        "dcol", "crow", "ccol", "zrow", "zcol", "scalars", "fscalars", "dscalars", "iscalars", "lscalars",
        "vectors", "fvectors", "dvectors", "ivectors", "lvectors", "matrices", "fmatrices", "dmatrices",
        "imatrices", "lmatrices", "rows", "frows", "drows", "irows", "lrows", "cols", "fcols", "dcols", "icols",
        "lcols", "tensor3s", "ftensor3s", "dtensor3s", "itensor3s", "ltensor3s", "tensor4s", "ftensor4s",
        "dtensor4s", "itensor4s", "ltensor4s", "tensor5s", "ftensor5s", "dtensor5s", "itensor5s", "ltensor5s",
        "tensor6s", "ftensor6s", "dtensor6s", "itensor6s", "ltensor6s", "tensor7s", "ftensor7s", "dtensor7s",
        "itensor7s", "ltensor7s"
    ]
