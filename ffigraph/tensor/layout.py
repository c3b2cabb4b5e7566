"""Shape and layout functions with PyTensor's names and signatures (part of issue 27).

Most are compositions of ops that already have C code: ``DimShuffle`` (squeeze, swapaxes,
moveaxis, atleast_Nd), ``Subtensor`` slices (flip, roll), ``Join`` (roll, join, hstack, vstack),
``Alloc`` (tile, broadcast_to) and ``Reshape``. Three small ops are new, because no
composition gives their checks or their cost (C in layout_c.py):

- ``SpecifyShape``: ``x`` itself, after checking its lengths at run time;
- ``Repeat``: ``numpy.repeat`` along one axis, a count per element or one for all;
- ``Split``: PyTensor's ``Split``, the pieces of ``x`` of the given lengths along an axis.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply, Constant, Variable
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import (as_tensor_variable, cast, concatenate, constant, get_scalar_constant_value,
                                   normalize_axis, stack, switch, alloc, NotScalarConstantError, zeros_like)
from ffigraph.tensor.elemwise import DimShuffle
from ffigraph.tensor.math import _normalize_axes
from ffigraph.tensor.type import TensorType

_C_IMPL = "ffigraph.tensor.layout_c"


def _int64_scalar(v, what):
    v = as_tensor_variable(v)
    if v.ndim != 0 or np.dtype(v.dtype).kind not in "biu":
        raise TypeError("%s must be an integer scalar, got %s of type %s" % (what, v, v.type))
    return cast(v, "int64")


def _static_value(v):
    """The int a 0-d constant holds, else None."""
    if isinstance(v, Constant) and v.data.ndim == 0:
        return int(v.data)
    return None


def _size_list(shape, what):
    """Sizes from an int, a list/tuple of ints and symbolic scalars, or an int vector of static length."""
    if isinstance(shape, (int, np.integer)):
        return [shape]
    if isinstance(shape, (list, tuple)):
        return list(shape)
    shape = as_tensor_variable(shape)
    if shape.ndim == 0:
        return [shape]
    if shape.ndim != 1 or shape.type.shape[0] is None:
        raise TypeError("%s: the shape %s must be a list of sizes or an int vector of static length" % (what, shape))
    if isinstance(shape, Constant):
        return [int(s) for s in shape.data]
    return [shape[i] for i in range(shape.type.shape[0])]


# ------------------------------------------------------------------ SpecifyShape


class SpecifyShape(DelegatedCOp, Op):
    """``x`` itself (a view), after checking at run time that axis ``checked[i]`` has the length
    of input ``i + 1`` (an int64 scalar); the other axes may have any length."""

    c_impl = _C_IMPL
    __props__ = ("checked",)
    view_map = {0: [0]}

    def __init__(self, checked):
        self.checked = tuple(int(a) for a in checked)

    def make_node(self, x, *sizes):
        x = as_tensor_variable(x)
        if len(sizes) != len(self.checked) or any(a >= x.ndim for a in self.checked):
            raise ValueError("SpecifyShape: %d sizes for the axes %s of a %d-d input"
                             % (len(sizes), self.checked, x.ndim))
        sizes = [_int64_scalar(s, "specify_shape: a size") for s in sizes]
        static = list(x.type.shape)
        for a, s in zip(self.checked, sizes):
            v = _static_value(s)
            if v is not None:
                if static[a] is not None and static[a] != v:
                    raise ValueError("specify_shape: %s has static length %d on axis %d, not %d"
                                     % (x, static[a], a, v))
                static[a] = v
        return Apply(self, [x] + sizes, [TensorType(x.dtype, static)()])

    @staticmethod
    def input_label(node):
        """How error messages name the input: its name, else its description."""
        x = node.inputs[0]
        return x.name if x.name else str(x)

    def perform(self, node, inputs, output_storage):
        x, sizes = inputs[0], [int(s) for s in inputs[1:]]
        want = [None] * x.ndim
        for a, s in zip(self.checked, sizes):
            want[a] = s
        if any(w is not None and w != n for w, n in zip(want, x.shape)):
            raise ValueError("specify_shape: %s has shape %s, expected %s"
                             % (self.input_label(node), tuple(x.shape), tuple(want)))
        output_storage[0][0] = x

    def infer_shape(self, fgraph, node, input_shapes):
        out = list(input_shapes[0])
        for a, s in zip(self.checked, node.inputs[1:]):
            out[a] = s
        return [tuple(out)]

    def connection_pattern(self, node):
        return [[True]] + [[False]] * len(self.checked)

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import disconnected_type

        return [SpecifyShape(self.checked)(output_grads[0], *inputs[1:])] + \
            [disconnected_type() for _ in self.checked]

    def __str__(self):
        return "SpecifyShape{%s}" % ",".join(map(str, self.checked))


def specify_shape(x, shape):
    """``x``, checked at run time to have ``shape`` (ints, symbolic int scalars or None for
    any length, or an int vector of static length); its type learns the constant lengths.

    A mismatch raises ValueError naming ``x``, under every linker."""
    x = as_tensor_variable(x)
    sizes = _size_list(shape, "specify_shape")
    if len(sizes) != x.ndim:
        raise ValueError("specify_shape: %s has %d dimensions, but the shape %s has %d entries"
                         % (x, x.ndim, shape, len(sizes)))
    checked = [a for a, s in enumerate(sizes) if s is not None]
    if not checked:
        return x
    return SpecifyShape(checked)(x, *[sizes[a] for a in checked])


# ------------------------------------------------------------------ broadcastable patterns (Theano's Rebroadcast)


class Unbroadcast(DelegatedCOp, Op):
    """``x`` itself (a view) with the static length 1 of the axes ``axes`` forgotten: Theano's
    ``unbroadcast``, for a value whose length-1 axis must not broadcast (a scan state that grows,
    a variable a later ``set_value`` gives another length)."""

    c_impl = _C_IMPL
    __props__ = ("axes",)
    view_map = {0: [0]}

    def __init__(self, axes):
        self.axes = tuple(sorted(set(int(a) for a in axes)))

    def make_node(self, x):
        x = as_tensor_variable(x)
        if any(not 0 <= a < x.ndim for a in self.axes):
            raise ValueError("unbroadcast: axes %s are out of range for %s with %d dimensions" % (self.axes, x, x.ndim))
        static = tuple(None if a in self.axes else s for a, s in enumerate(x.type.shape))
        return Apply(self, [x], [TensorType(x.dtype, static)()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0]

    def infer_shape(self, fgraph, node, input_shapes):
        return [tuple(input_shapes[0])]

    def L_op(self, inputs, outputs, output_grads):
        # the gradient has the input's type: its length-1 axes are length 1 again
        (x,), (g,) = inputs, output_grads
        return [specify_shape(g, [1 if s == 1 else None for s in x.type.shape])]

    def R_op(self, inputs, eval_points):
        return [None if eval_points[0] is None else self(eval_points[0])]

    def __str__(self):
        return "Unbroadcast{%s}" % ",".join(map(str, self.axes))


def _broadcast_axes(x, axes, what):
    return [normalize_axis(a, x.ndim, what) for a in axes]


def addbroadcast(x, *axes):
    """``x`` with the axes ``axes`` made broadcastable (static length 1), checked at run time:
    Theano's ``addbroadcast`` (PyTensor's ``specify_broadcastable``). A length other than 1 there
    raises ValueError naming ``x``."""
    x = as_tensor_variable(x)
    axes = _broadcast_axes(x, axes, "addbroadcast")
    if all(x.type.shape[a] == 1 for a in axes):
        return x
    return specify_shape(x, [1 if a in axes else None for a in range(x.ndim)])


specify_broadcastable = addbroadcast


def unbroadcast(x, *axes):
    """``x`` with the axes ``axes`` no longer broadcastable (Theano's ``unbroadcast``)."""
    x = as_tensor_variable(x)
    axes = [a for a in _broadcast_axes(x, axes, "unbroadcast") if x.type.shape[a] == 1]
    if not axes:
        return x
    return Unbroadcast(axes)(x)


def patternbroadcast(x, broadcastable):
    """``x`` with the broadcastable pattern ``broadcastable`` (a bool per axis): Theano's
    ``patternbroadcast``, addbroadcast where True and unbroadcast where False."""
    x = as_tensor_variable(x)
    broadcastable = tuple(bool(b) for b in broadcastable)
    if len(broadcastable) != x.ndim:
        raise ValueError("patternbroadcast: %s has %d dimensions, but the pattern %s has %d entries"
                         % (x, x.ndim, broadcastable, len(broadcastable)))
    x = unbroadcast(x, *[a for a, b in enumerate(broadcastable) if not b])
    return addbroadcast(x, *[a for a, b in enumerate(broadcastable) if b])


# ------------------------------------------------------------------ Repeat


class Repeat(DelegatedCOp, Op):
    """``numpy.repeat(x, repeats, axis)``: ``repeats`` is a 0-d int64 count for every element,
    or an int64 vector of one count per element along ``axis`` (or of length 1)."""

    c_impl = _C_IMPL
    __props__ = ("axis",)

    def __init__(self, axis):
        self.axis = int(axis)

    def make_node(self, x, repeats):
        x = as_tensor_variable(x)
        repeats = as_tensor_variable(repeats)
        if not 0 <= self.axis < x.ndim:
            raise ValueError("repeat: axis %d is out of range for %s with %d dimensions" % (self.axis, x, x.ndim))
        if repeats.ndim > 1 or np.dtype(repeats.dtype).kind not in "biu":
            raise TypeError("repeat: repeats must be an integer scalar or vector, got %s of type %s"
                            % (repeats, repeats.type))
        if isinstance(repeats, Constant) and np.any(repeats.data < 0):
            raise ValueError("repeat: negative repeat count in %s" % (repeats.data,))
        repeats = cast(repeats, "int64")
        static = list(x.type.shape)
        n = static[self.axis]
        if isinstance(repeats, Constant):
            counts = repeats.data.reshape(-1)
            if repeats.ndim == 1 and n is not None and len(counts) not in (1, n):
                raise ValueError("repeat: %d repeat counts for an axis of length %d" % (len(counts), n))
            if repeats.ndim == 0 or len(counts) == 1:
                static[self.axis] = None if n is None else n * int(counts[0])
            else:
                static[self.axis] = int(counts.sum())
        else:
            static[self.axis] = None
        return Apply(self, [x, repeats], [TensorType(x.dtype, static)()])

    def perform(self, node, inputs, output_storage):
        x, repeats = inputs
        n = x.shape[self.axis]
        if repeats.ndim == 1 and len(repeats) not in (1, n):
            raise ValueError("repeat: got %d repeat counts for an axis of length %d "
                             "(give one count, or one per element)" % (len(repeats), n))
        if np.any(repeats < 0):
            flat = repeats.reshape(-1)
            raise ValueError("repeat: negative repeat count %d" % flat[np.argmax(flat < 0)])
        output_storage[0][0] = np.repeat(x, repeats, axis=self.axis)

    def infer_shape(self, fgraph, node, input_shapes):
        from ffigraph.tensor.math import eq, mul, sum as tsum

        x_shape = list(input_shapes[0])
        repeats = node.inputs[1]
        n = x_shape[self.axis]
        if repeats.ndim == 0:
            x_shape[self.axis] = mul(n, repeats)
        else:
            # a single count stands for one count per element
            single = eq(input_shapes[1][0], 1)
            x_shape[self.axis] = mul(tsum(repeats), switch(single, n, constant(1, dtype="int64")))
        return [tuple(x_shape)]

    def connection_pattern(self, node):
        return [[True], [False]]

    def L_op(self, inputs, outputs, output_grads):
        """Each element gets the sum of the gradients of its copies: the output gradient added
        at the source positions (a repeat of the positions)."""
        from ffigraph.tensor.basic import arange
        from ffigraph.tensor.gradient import disconnected_type
        from ffigraph.tensor.shapes import shape_i
        from ffigraph.tensor.subtensor import inc_subtensor

        x, repeats = inputs
        (gz,) = output_grads
        if np.dtype(x.type.dtype).kind in "biu":
            return [zeros_like(x, dtype="floatX"), disconnected_type()]
        sources = Repeat(0)(arange(shape_i(x, self.axis), dtype="int64"), repeats)
        region = zeros_like(x)[(slice(None),) * self.axis + (sources,)]
        return [inc_subtensor(region, gz), disconnected_type()]


def repeat(a, repeats, axis=None):
    """``numpy.repeat``: each element of ``x`` repeated ``repeats`` times along ``axis`` (of the
    flattened ``x`` when None). ``repeats`` is an int, a list of ints or a symbolic integer
    scalar or vector (one count per element). A negative count raises ValueError."""
    from ffigraph.tensor.shapes import flatten

    x = as_tensor_variable(a)
    if axis is None:
        x = flatten(x, 1) if x.ndim != 1 else x
        axis = 0
    axis = normalize_axis(axis, max(x.ndim, 1), "repeat")
    if x.ndim == 0:
        x = DimShuffle(0, ["x"])(x)
    return Repeat(axis)(x, repeats)


# ------------------------------------------------------------------ Split


class Split(DelegatedCOp, Op):
    """PyTensor's ``Split``: ``x`` cut along ``axis`` into ``len_splits`` pieces whose lengths
    are the int64 vector input; they must add up to the axis length (checked at run time).
    The pieces are fresh copies."""

    c_impl = _C_IMPL
    __props__ = ("len_splits", "axis")

    def __init__(self, len_splits, axis=0):
        self.len_splits = int(len_splits)
        self.axis = int(axis)
        if self.len_splits < 1:
            raise ValueError("split: n_splits must be at least 1, got %d" % self.len_splits)

    def make_node(self, x, splits):
        x = as_tensor_variable(x)
        splits = as_tensor_variable(splits)
        if not 0 <= self.axis < x.ndim:
            raise ValueError("split: axis %d is out of range for %s with %d dimensions" % (self.axis, x, x.ndim))
        if splits.ndim != 1 or np.dtype(splits.dtype).kind not in "biu":
            raise TypeError("split: splits_size must be an integer vector, got %s of type %s" % (splits, splits.type))
        if splits.type.shape[0] not in (None, self.len_splits):
            raise ValueError("split: %d split sizes given for n_splits=%d" % (splits.type.shape[0], self.len_splits))
        splits = cast(splits, "int64")
        sizes = [None] * self.len_splits
        if isinstance(splits, Constant):
            sizes = [int(s) for s in splits.data]
            if any(s < 0 for s in sizes):
                raise ValueError("split: negative split size in %s" % (sizes,))
            n = x.type.shape[self.axis]
            if n is not None and sum(sizes) != n:
                raise ValueError("split: the split sizes %s add up to %d, but axis %d of %s has length %d"
                                 % (sizes, sum(sizes), self.axis, x, n))
        outs = []
        for s in sizes:
            static = list(x.type.shape)
            static[self.axis] = s
            outs.append(TensorType(x.dtype, static)())
        return Apply(self, [x, splits], outs)

    def perform(self, node, inputs, output_storage):
        x, splits = inputs
        if len(splits) != self.len_splits:
            raise ValueError("split: got %d split sizes, expected %d" % (len(splits), self.len_splits))
        if np.any(splits < 0):
            raise ValueError("split: negative split size %d" % splits[np.argmax(splits < 0)])
        total = int(np.sum(splits))
        if total != x.shape[self.axis]:
            raise ValueError("split: the split sizes add up to %d, but axis %d of the input has length %d"
                             % (total, self.axis, x.shape[self.axis]))
        start = 0
        for k, s in enumerate(splits):
            index = (slice(None),) * self.axis + (slice(start, start + int(s)),)
            output_storage[k][0] = np.array(x[index], copy=True)
            start += int(s)

    def infer_shape(self, fgraph, node, input_shapes):
        x_shape = input_shapes[0]
        splits = node.inputs[1]
        out = []
        for k in range(self.len_splits):
            shp = list(x_shape)
            shp[self.axis] = splits[k]
            out.append(tuple(shp))
        return out

    def connection_pattern(self, node):
        return [[True] * self.len_splits, [False] * self.len_splits]

    def L_op(self, inputs, outputs, output_grads):
        """The pieces' gradients joined back along the axis (zeros for an integer input)."""
        from ffigraph.tensor.gradient import disconnected_type

        x = inputs[0]
        if np.dtype(x.type.dtype).kind in "biu":
            return [zeros_like(x, dtype="floatX"), disconnected_type()]
        return [concatenate(list(output_grads), axis=self.axis), disconnected_type()]

    def __str__(self):
        return "Split{%d, axis=%d}" % (self.len_splits, self.axis)


def split(x, splits_size, n_splits=None, axis=0):
    """Theano/PyTensor's ``split``: the list of the ``n_splits`` pieces of ``x`` along ``axis``
    with lengths ``splits_size`` (a list of ints or symbolic scalars, or an int vector). The
    lengths must add up to the axis length: a ValueError says so at run time otherwise.
    ``n_splits`` defaults to the length of ``splits_size`` (a vector's must be known statically).
    (A list even for one piece.)"""
    x = as_tensor_variable(x)
    if n_splits is None:
        n_splits = _split_count(splits_size)
    if x.ndim == 0:
        raise ValueError("split: cannot split the 0-d %s" % x)
    axis = normalize_axis(_python_int(axis, "split: axis"), x.ndim, "split")
    if isinstance(splits_size, (list, tuple)):
        if all(isinstance(s, (int, np.integer)) for s in splits_size):
            splits_size = constant(np.asarray(splits_size, dtype=np.int64).reshape(-1))
        else:
            splits_size = stack([_int64_scalar(s, "split: a split size") for s in splits_size])
    out = Split(n_splits, axis)(x, splits_size)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _split_count(splits_size):
    """How many pieces ``splits_size`` describes: its length, or a vector's static length."""
    if isinstance(splits_size, (list, tuple)):
        return len(splits_size)
    sizes = as_tensor_variable(splits_size)
    if sizes.ndim != 1 or sizes.type.shape[0] is None:
        raise ValueError("split: n_splits is needed when splits_size (%s) is not a list or a vector of "
                         "known length" % sizes)
    return sizes.type.shape[0]


def _python_int(v, what):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    try:
        return int(get_scalar_constant_value(as_tensor_variable(v) if not isinstance(v, Variable) else v))
    except (NotScalarConstantError, TypeError):
        raise TypeError("%s must be a constant int, got %r" % (what, v)) from None


# ------------------------------------------------------------------ joining


def join(axis, *tensors_list):
    """Theano's ``join(axis, *tensors)``: ``concatenate(tensors, axis)`` (a constant axis)."""
    if len(tensors_list) == 1 and isinstance(tensors_list[0], (list, tuple)):
        tensors_list = tuple(tensors_list[0])
    if not tensors_list:
        raise ValueError("join needs at least one tensor")
    return concatenate(list(tensors_list), axis=_python_int(axis, "join: axis"))


def hstack(tup):
    """``numpy.hstack``: join along axis 1 (axis 0 for 1-d inputs; 0-d ones become 1-d)."""
    arrs = atleast_1d(*tup)
    arrs = arrs if isinstance(arrs, list) else [arrs]
    return concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1)


def vstack(tup):
    """``numpy.vstack``: join along axis 0, 0-d and 1-d inputs made 2-d first (a 1-d one a row)."""
    arrs = atleast_2d(*tup)
    arrs = arrs if isinstance(arrs, list) else [arrs]
    return concatenate(arrs, axis=0)


# ------------------------------------------------------------------ axes


def atleast_Nd(*arys, n=1, left=True):
    """PyTensor's ``atleast_Nd``: each input with broadcastable axes added on the left (on the
    right when ``left`` is False) up to ``n`` dimensions; one input gives one variable, several
    a list. (PyTensor pads on one side only, so ``atleast_3d`` of a vector is ``(1, 1, N)``,
    where numpy gives ``(1, N, 1)``.)"""
    out = []
    for a in arys:
        a = as_tensor_variable(a)
        missing = n - a.ndim
        if missing > 0:
            kept = list(range(a.ndim))
            a = DimShuffle(a.ndim, ["x"] * missing + kept if left else kept + ["x"] * missing)(a)
        out.append(a)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys, left=True):
    return atleast_Nd(*arys, n=1, left=left)


def atleast_2d(*arys, left=True):
    return atleast_Nd(*arys, n=2, left=left)


def atleast_3d(*arys, left=True):
    return atleast_Nd(*arys, n=3, left=left)


def _axes(axis, ndim, what):
    return list(_normalize_axes(axis, ndim, what, ordered=False))


def squeeze(x, axis=None):
    """``x`` without length-1 axes: with ``axis`` None, the axes whose static length is 1 (as
    PyTensor); with ``axis`` given, those axes, whose length is checked at run time."""
    x = as_tensor_variable(x)
    if axis is None:
        drop = [a for a, s in enumerate(x.type.shape) if s == 1]
    else:
        drop = _axes(axis, x.ndim, "squeeze")
    if not drop:
        return x
    return DimShuffle(x.ndim, [a for a in range(x.ndim) if a not in drop])(x)


def swapaxes(y, axis1, axis2):
    """``y`` with axes ``axis1`` and ``axis2`` exchanged (a view)."""
    x = as_tensor_variable(y)
    a1 = normalize_axis(axis1, x.ndim, "swapaxes")
    a2 = normalize_axis(axis2, x.ndim, "swapaxes")
    order = list(range(x.ndim))
    order[a1], order[a2] = order[a2], order[a1]
    return DimShuffle(x.ndim, order)(x)


def moveaxis(a, source, destination):
    """``numpy.moveaxis``: the axes ``source`` moved to the positions ``destination`` (a view)."""
    a = as_tensor_variable(a)
    source = _axes(source, a.ndim, "moveaxis")
    destination = _axes(destination, a.ndim, "moveaxis")
    if len(source) != len(destination):
        raise ValueError("moveaxis: source and destination need the same number of axes, got %s and %s"
                         % (source, destination))
    order = [n for n in range(a.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return DimShuffle(a.ndim, order)(a)


def flip(arr, axis=None):
    """``numpy.flip``: ``arr`` reversed along ``axis`` (an int, a tuple, or None for all axes); a view."""
    x = as_tensor_variable(arr)
    axes = _axes(axis, x.ndim, "flip")
    if not axes:
        return x
    index = tuple(slice(None, None, -1) if a in axes else slice(None) for a in range(x.ndim))
    return x[index]


def roll(x, shift, axis=None):
    """``numpy.roll``: the elements of ``x`` shifted by ``shift`` (int or symbolic int scalar;
    a tuple with a tuple ``axis``) along ``axis``, wrapping around; the flattened ``x`` when None."""
    from ffigraph.tensor.shapes import flatten, reshape, shape

    x = as_tensor_variable(x)
    if axis is None:
        if isinstance(shift, (list, tuple)):
            raise ValueError("roll: a tuple of shifts needs a tuple of axes")
        if x.ndim == 0:
            return x
        if x.ndim == 1:
            return _roll_axis(x, shift, 0)
        return reshape(_roll_axis(flatten(x, 1), shift, 0), shape(x), ndim=x.ndim)
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    shifts = list(shift) if isinstance(shift, (list, tuple)) else [shift] * len(axes)
    if len(shifts) != len(axes):
        raise ValueError("roll: %d shifts for %d axes" % (len(shifts), len(axes)))
    for a, s in zip(axes, shifts):
        x = _roll_axis(x, s, normalize_axis(a, x.ndim, "roll"))
    return x


def _roll_axis(x, shift, axis):
    """The last ``shift mod n`` elements along ``axis`` moved to the front (n: the axis length)."""
    from ffigraph.tensor.math import maximum, mod, sub
    from ffigraph.tensor.shapes import shape_i

    n = shape_i(x, axis)
    s = mod(_int64_scalar(shift, "roll: shift"), maximum(n, 1))   # (an empty axis: no shift)
    cut = sub(n, s)
    head = (slice(None),) * axis
    return concatenate([x[head + (slice(cut, None),)], x[head + (slice(None, cut),)]], axis=axis)


def tile(A, reps, ndim=None):
    """``numpy.tile``: ``A`` repeated ``reps[i]`` times along axis i (ints or symbolic int
    scalars, or an int vector of static length); ``A`` gets leading axes when ``reps`` is
    longer, ``reps`` leading ones when shorter. ``ndim`` (Theano's), when given, is the
    result's number of dimensions."""
    from ffigraph.tensor.math import mul
    from ffigraph.tensor.shapes import reshape, shape_i

    x = as_tensor_variable(A)
    reps = _size_list(reps, "tile")
    if ndim is not None and ndim < max(len(reps), x.ndim):
        raise ValueError("tile: ndim=%d is less than the number of dimensions %d" % (ndim, max(len(reps), x.ndim)))
    nd = max(len(reps), x.ndim) if ndim is None else ndim
    reps = [1] * (nd - len(reps)) + reps
    x = atleast_Nd(x, n=nd)
    # x with a broadcastable axis before each of its axes, filled to (r0, n0, r1, n1, ...), then merged
    pattern = []
    for a in range(nd):
        pattern += ["x", a]
    spread = DimShuffle(nd, pattern)(x)
    sizes = []
    for a, r in enumerate(reps):
        sizes += [r, shape_i(x, a)]
    filled = alloc(spread, *sizes)
    merged = [r * shape_i(x, a) if isinstance(r, (int, np.integer)) else mul(_int64_scalar(r, "tile: reps"),
                                                                              shape_i(x, a))
              for a, r in enumerate(reps)]
    return reshape(filled, merged, ndim=nd)


# ------------------------------------------------------------------ broadcasting


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` (numpy's rules; ints, symbolic scalars or an int vector).
    A fresh array (PyTensor's is a read-only view; the values are the same)."""
    sizes = _size_list(shape, "broadcast_to")
    x = as_tensor_variable(x)
    if len(sizes) < x.ndim:
        raise ValueError("broadcast_to: %s has %d dimensions, more than the %d of the shape"
                         % (x, x.ndim, len(sizes)))
    return alloc(x, *sizes)


def broadcast_shape(*arrays):
    """The shape the arrays broadcast to, as a tuple of int64 scalars (an axis of static length
    1 gives way; otherwise a length of 1 at run time gives way to the others)."""
    from ffigraph.tensor.math import eq
    from ffigraph.tensor.shapes import shape_i

    arrays = [as_tensor_variable(a) for a in arrays]
    nd = max(a.ndim for a in arrays)
    out = []
    for axis in range(nd):
        sizes = []
        for a in arrays:
            k = axis - (nd - a.ndim)
            if k >= 0 and a.type.shape[k] != 1:
                sizes.append(shape_i(a, k))
        if not sizes:
            out.append(constant(1, dtype="int64"))
            continue
        known = {int(s.data) for s in sizes if isinstance(s, Constant)}
        if len(known) > 1:
            raise ValueError("broadcast: static lengths %s on one axis do not broadcast" % sorted(known))
        if known:
            out.append(constant(known.pop(), dtype="int64"))
            continue
        size = sizes[0]
        for other in sizes[1:]:
            size = switch(eq(size, 1), other, size)
        out.append(size)
    return tuple(out)


def broadcast_arrays(*args):
    """The inputs broadcast against each other (numpy's ``broadcast_arrays``), as a tuple."""
    args = [as_tensor_variable(a) for a in args]
    shp = broadcast_shape(*args)
    static = tuple(_static_value(s) for s in shp)
    # (an input already of the static broadcast shape is returned as it is)
    return tuple(a if None not in static and a.type.shape == static else broadcast_to(a, shp) for a in args)


__all__ = [
    "SpecifyShape", "specify_shape", "Repeat", "repeat", "Split", "split", "join", "hstack", "vstack",
    "atleast_Nd", "atleast_1d", "atleast_2d", "atleast_3d", "squeeze", "swapaxes", "moveaxis", "flip", "roll",
    "tile", "broadcast_to", "broadcast_shape", "broadcast_arrays",
    "Unbroadcast", "addbroadcast", "unbroadcast", "patternbroadcast", "specify_broadcastable",
]
