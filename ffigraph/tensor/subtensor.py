"""Basic indexing: integers, slices (any step, negative included), ``None``/newaxis, ``...``.

The result is a view of the input. Index values may be Python ints or
symbolic integer scalars. An index with an integer array or a boolean mask
(advanced indexing) goes to advanced_subtensor.py, with numpy's rules.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply, Variable
from ffigraph.graph.op import Op
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.tensor.basic import as_tensor_variable, cast, constant, switch
from ffigraph.tensor.elemwise import DimShuffle
from ffigraph.tensor.math import ge, gt, int_div, lt, maximum, minimum, neg, sub
from ffigraph.tensor.type import TensorType

SYMBOLIC = "?"  # marks an index part taken from the node's next input


class Subtensor(DelegatedCOp, Op):
    """``x[idx_list]``; entries are ``("int", v)`` or ``("slice", start, stop, step)``.

    Each of ``v``, ``start``, ``stop``, ``step`` is a Python int, None (absent)
    or ``"?"``: a symbolic int64 scalar taken from the inputs after ``x``, in order.
    """

    c_impl = "ffigraph.tensor.subtensor_c"
    __props__ = ("idx_list",)
    view_map = {0: [0]}

    def __init__(self, idx_list):
        self.idx_list = tuple(tuple(e) for e in idx_list)

    def make_node(self, x, *index_inputs):
        x = as_tensor_variable(x)
        if len(self.idx_list) > x.ndim:
            raise IndexError("too many indices for %s: %d given, it has %d dimensions"
                             % (x, len(self.idx_list), x.ndim))
        index_inputs = [cast(as_tensor_variable(i), "int64") for i in index_inputs]
        if len(index_inputs) != sum(_count_symbolic(e) for e in self.idx_list):
            raise ValueError("%s: wrong number of symbolic index inputs (%d)" % (self, len(index_inputs)))
        shape = []
        for axis, entry in enumerate(self.idx_list):
            size = x.type.shape[axis]
            if entry[0] == "int" and isinstance(entry[1], int) and size is not None \
                    and not -size <= entry[1] < size:
                raise IndexError("index %d is out of bounds for axis %d of %s (static length %d)"
                                 % (entry[1], axis, x, size))
            if entry[0] == "slice":
                shape.append(_static_slice_length(entry[1:], x.type.shape[axis]))
        shape.extend(x.type.shape[len(self.idx_list):])
        return Apply(self, [x] + index_inputs, [TensorType(x.dtype, shape)()])

    def _numpy_index(self, values):
        it = iter(values)

        def part(p):
            return int(next(it)) if p == SYMBOLIC else p

        idx = []
        for entry in self.idx_list:
            if entry[0] == "int":
                idx.append(part(entry[1]))
            else:
                idx.append(slice(*(part(p) for p in entry[1:])))
        return tuple(idx)

    def perform(self, node, inputs, output_storage):
        x = inputs[0]
        idx = self._numpy_index(inputs[1:])
        for s in idx:
            if isinstance(s, slice) and s.step == 0:
                raise ValueError("%s: slice step cannot be zero" % self)
        try:
            # The trailing Ellipsis makes an all-integer index give a 0-d view, not a scalar copy.
            output_storage[0][0] = x[idx + (Ellipsis,)]
        except IndexError as err:
            raise IndexError("%s: %s (input shape %s, index %s)" % (self, err, x.shape, idx)) from None

    def infer_shape(self, fgraph, node, input_shapes):
        xshp = input_shapes[0]
        it = iter(node.inputs[1:])
        out = []
        for axis, entry in enumerate(self.idx_list):
            parts = [next(it) if p == SYMBOLIC else p for p in entry[1:]]
            if entry[0] == "slice":
                out.append(_symbolic_slice_length(parts, xshp[axis]))
        out.extend(xshp[len(self.idx_list):])
        return [tuple(out)]

    def connection_pattern(self, node):
        return [[True]] + [[False]] * (len(node.inputs) - 1)  # indices only select

    def L_op(self, inputs, outputs, output_grads):
        """The output gradient placed in a zero array the shape of ``x``."""
        from ffigraph.tensor.gradient import disconnected_type
        from ffigraph.tensor.basic import zeros_like

        x, index_inputs = inputs[0], inputs[1:]
        if np.dtype(x.type.dtype).kind in "biu":
            gx = zeros_like(x, dtype="floatX")   # an integer x: zeros, as in PyTensor
        else:
            gx = IncSubtensor(self.idx_list)(zeros_like(x), output_grads[0], *index_inputs)
        return [gx] + [disconnected_type() for _ in index_inputs]

    def __str__(self):
        def fmt(e):
            if e[0] == "int":
                return str(e[1])
            return ":".join("" if p is None else str(p) for p in e[1:])

        return "Subtensor{%s}" % ", ".join(fmt(e) for e in self.idx_list)


def _count_symbolic(entry):
    return sum(1 for p in entry[1:] if p == SYMBOLIC)


def _static_slice_length(parts, size):
    if size is None or any(p == SYMBOLIC for p in parts):
        if parts == (None, None, None) or parts == (None, None, 1):
            return size
        return None
    if parts[2] == 0:
        raise ValueError("slice step cannot be zero")
    return len(range(*slice(*parts).indices(size)))


def _symbolic_slice_length(parts, n):
    """len(range(*slice(start, stop, step).indices(n))) as a graph (numpy's clamping rules)."""
    # Python ints beyond int64 clamp to its range: slicing clamps them to the axis anyway
    start, stop, step = [max(min(p, 2**63 - 1), -2**63) if isinstance(p, int) else p for p in parts]
    step = 1 if step is None else step
    zero, one = constant(0, dtype="int64"), constant(1, dtype="int64")

    def norm(v, lo, hi):
        v = switch(lt(v, 0), v + n, v)
        return minimum(maximum(v, lo), hi)

    def length(lo_default, hi_default, lo, hi, positive):
        a = lo_default if start is None else norm(start, lo, hi)
        b = hi_default if stop is None else norm(stop, lo, hi)
        span = sub(b, a) if positive else sub(a, b)
        stride = step if positive else neg(step)
        return maximum(int_div(span + stride - 1, stride), zero)

    pos = length(zero, n, zero, n, True)
    negv = length(n - one, -one, -one, n - one, False)
    if isinstance(step, int):
        return pos if step > 0 else negv
    return switch(gt(step, 0), pos, switch(ge(step, 0), zero, negv))


def _canonical_constant(theslice, length):
    start, stop, step = theslice.indices(length)
    if step > 0:
        return slice(start, max(stop, start), step), 1
    count = len(range(start, stop, step))
    if count == 0:
        return slice(0, 0, 1), 1
    return slice(start + (count - 1) * step, start + 1, -step), -1


def get_canonical_form_slice(theslice, length):
    """PyTensor's ``get_canonical_form_slice``: ``(canonical, direction)`` where ``canonical`` is a
    slice with ``0 <= start <= stop <= length`` and ``step > 0`` and ``direction`` is 1 or -1, such
    that ``x[canonical][::direction]`` is ``x[theslice]`` for an axis of ``length``; an integer index
    gives ``(its non-negative form, 1)``. Python ints give ints; symbolic parts give int64 scalars
    (and a symbolic direction when the step is symbolic)."""
    def part(v):
        if v is None or isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return v if v is None else int(v)
        v = as_tensor_variable(v)
        if v.ndim != 0 or np.dtype(v.dtype).kind not in "iu":
            raise ValueError("get_canonical_form_slice: %s is not an integer scalar" % (v,))
        return v

    n = part(length)
    if not isinstance(theslice, slice):
        idx = part(theslice)
        if idx is None:
            raise ValueError("get_canonical_form_slice: %r is not a slice or an integer index" % (theslice,))
        if isinstance(idx, int) and isinstance(n, int):
            return (idx if idx >= 0 else idx + n), 1
        return switch(lt(idx, 0), idx + n, idx), 1
    start, stop, step = part(theslice.start), part(theslice.stop), part(theslice.step)
    step = 1 if step is None else step
    if isinstance(step, int) and step == 0:
        raise ValueError("get_canonical_form_slice: slice step cannot be zero")
    if all(isinstance(v, int) or v is None for v in (start, stop)) and isinstance(step, int) and isinstance(n, int):
        return _canonical_constant(slice(start, stop, step), n)
    n = as_tensor_variable(n) if isinstance(n, int) else n

    def norm(v, lo, hi):
        v = switch(lt(v, 0), v + n, v)
        return minimum(maximum(v, lo), hi)

    # a positive step: Python's clamping to [0, n], stop not before start
    p_start = as_tensor_variable(0) if start is None else norm(start, 0, n)
    p_stop = n if stop is None else norm(stop, 0, n)
    forward = (p_start, maximum(p_stop, p_start), step)
    # a negative step: the elements start, start + step, ... after stop, walked back from the last
    n_start = n - 1 if start is None else norm(start, -1, n - 1)
    n_stop = as_tensor_variable(-1) if stop is None else norm(stop, -1, n - 1)
    stride = -step if isinstance(step, int) else switch(lt(step, 0), -step, 1)   # (never a division by 0)
    count = maximum(int_div(n_start - n_stop + stride - 1, stride), 0)
    some = gt(count, 0)
    backward = (switch(some, n_start + (count - 1) * (-stride), 0), switch(some, n_start + 1, 0), stride)
    if isinstance(step, int):
        return (slice(*forward), 1) if step > 0 else (slice(*backward), -1)
    positive = ge(step, 0)
    return (slice(*[switch(positive, f, b) for f, b in zip(forward, backward)]),
            switch(lt(step, 0), -1, 1))


def _index_part(p, what):
    """A slice/int part: Python ints stay, symbolic integer scalars become "?"."""
    if p is None:
        return None, None
    if isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)):
        return int(p), None
    if isinstance(p, Variable):
        if getattr(p.type, "ndim", None) != 0 or not str(getattr(p.type, "dtype", "")).startswith(("int", "uint")):
            raise TypeError("%s must be an integer scalar, got %s of type %s" % (what, p, p.type))
        return SYMBOLIC, p
    if isinstance(p, (bool, np.bool_)):
        raise TypeError("%s: boolean indices are not supported" % what)
    raise TypeError("%s must be an int, a symbolic integer scalar or None, got %r" % (what, p))


def _slice_entry(s):
    """The ``("slice", start, stop, step)`` entry of the slice ``s`` and the symbolic inputs it takes."""
    parts = [_index_part(p, "slice bound") for p in (s.start, s.stop, s.step)]
    if parts[2][0] == 0:
        raise ValueError("slice step cannot be zero")
    return ("slice",) + tuple(p for p, _ in parts), [v for _, v in parts if v is not None]


def getitem(x, index):
    """``x[index]``: basic indexing here, advanced indexing (integer arrays, masks) in advanced_subtensor.py."""
    x = as_tensor_variable(x)
    if isinstance(index, list) and any(isinstance(i, slice) or i is None or i is Ellipsis for i in index):
        # numpy < 1.23 and Theano read a list holding a slice, None or ... as a tuple of indices
        # (``x[[slice(None), slice(1, 3)]]`` is ``x[:, 1:3]``), and Theano code still writes it
        index = tuple(index)
    index = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype.kind in "iu" for i in index):
        index = tuple(int(i) if isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype.kind in "iu" else i
                      for i in index)   # a 0-d integer array indexes as an int (numpy's rule)
    from ffigraph.tensor import advanced_subtensor

    if any(advanced_subtensor.is_advanced_part(i) for i in index):
        return advanced_subtensor.advanced_getitem(x, index)
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    expanded = []
    for i in index:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - n_real))
        else:
            expanded.append(i)
    if n_real > x.ndim:
        raise IndexError("too many indices for %s: %d given, it has %d dimensions" % (x, n_real, x.ndim))

    idx_list, inputs, layout = [], [], []  # layout: per output axis, 'x' for newaxis or 'kept'
    for i in expanded:
        if i is None:
            layout.append("x")
        elif isinstance(i, slice):
            entry, slice_inputs = _slice_entry(i)
            idx_list.append(entry)
            inputs.extend(slice_inputs)
            layout.append("kept")
        else:
            p, v = _index_part(i, "index")
            idx_list.append(("int", p))
            if v is not None:
                inputs.append(v)
    layout.extend(["kept"] * (x.ndim - len(idx_list)))
    out = x
    if any(e != ("slice", None, None, None) for e in idx_list):
        out = Subtensor(idx_list)(x, *inputs)
    if "x" in layout:
        pattern, k = [], 0
        for entry in layout:
            if entry == "x":
                pattern.append("x")
            else:
                pattern.append(k)
                k += 1
        out = DimShuffle(out.ndim, pattern)(out)
    return out


# ------------------------------------------------------------------ inc_subtensor / set_subtensor


class _IncrementOp:
    """What IncSubtensor and AdvancedIncSubtensor share (a mixin, before DelegatedCOp and Op): a
    fresh copy of ``x`` with ``y`` added at the region of ``x`` that ``reader(idx_list)`` reads (or
    written there with ``set_instead_of_inc``), the reader's index inputs after ``x`` and ``y``; an
    empty ``idx_list`` is the whole of ``x``."""

    reader = None   # the op class that reads the region: Subtensor, AdvancedSubtensor

    def __init__(self, idx_list, set_instead_of_inc=False):
        self.idx_list = tuple(tuple(e) for e in idx_list)
        self.set_instead_of_inc = bool(set_instead_of_inc)

    def _region(self, x, index_inputs):
        """The node of ``x[idx_list]``: the region's type, and the index inputs as the reader takes them."""
        return self.reader(self.idx_list).make_node(x, *index_inputs)

    def make_node(self, x, y, *index_inputs):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        region = self._region(x, index_inputs)
        y = _check_y(self, x, y, region.outputs[0].type)
        return Apply(self, [x, y] + region.inputs[1:], [TensorType(x.dtype, x.type.shape)()])

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]

    def connection_pattern(self, node):
        return [[True], [True]] + [[False]] * (len(node.inputs) - 2)

    def L_op(self, inputs, outputs, output_grads):
        """x gets the gradient outside the region (and inside it too when incrementing);
        y gets the region's gradient, summed over the axes it was broadcast along."""
        region_of = self.reader(self.idx_list) if self.idx_list else (lambda g: g)   # (empty: all of x)
        return _inc_grads(self, inputs, output_grads, region_of, type(self)(self.idx_list, True))


class IncSubtensor(_IncrementOp, DelegatedCOp, Op):
    """A fresh copy of ``x`` with ``x[idx_list] += y`` (or ``= y`` with ``set_instead_of_inc``).

    ``idx_list`` is encoded as for ``Subtensor`` (symbolic parts are the inputs after
    ``x`` and ``y``); an empty ``idx_list`` means the whole of ``x``. ``y`` broadcasts
    to the indexed region's shape by numpy's rules and is cast to ``x``'s dtype.
    """

    c_impl = "ffigraph.tensor.inc_subtensor_c"
    __props__ = ("idx_list", "set_instead_of_inc")
    reader = Subtensor

    def _region(self, x, index_inputs):
        try:
            return super()._region(x, index_inputs)
        except (IndexError, ValueError) as err:
            raise type(err)("%s: %s" % (self, err)) from None

    def perform(self, node, inputs, output_storage):
        x, y = inputs[0], inputs[1]
        idx = Subtensor(self.idx_list)._numpy_index(inputs[2:])
        for s in idx:
            if isinstance(s, slice) and s.step == 0:
                raise ValueError("%s: slice step cannot be zero" % self)
        out = np.array(x, copy=True)
        try:
            region = out[idx + (Ellipsis,)]
        except IndexError as err:
            raise IndexError("%s: %s (input shape %s, index %s)" % (self, err, x.shape, idx)) from None
        try:
            shape = np.broadcast_shapes(np.shape(y), region.shape)
        except ValueError:
            shape = None
        if shape != region.shape:
            raise ValueError("%s: y of shape %s cannot be broadcast to the indexed region's shape %s "
                             "(x has shape %s)" % (self, np.shape(y), region.shape, x.shape))
        with np.errstate(all="ignore"):
            if self.set_instead_of_inc:
                region[...] = y
            else:
                region += y
        output_storage[0][0] = out

    def __str__(self):
        name = "SetSubtensor" if self.set_instead_of_inc else "IncSubtensor"
        return name + str(Subtensor(self.idx_list))[len("Subtensor"):]


def _is_integer(dtype):
    return np.dtype(dtype).kind in "biu"


def _check_y(op, x, y, region_type):
    """``y`` cast to ``x``'s dtype, after checking it can broadcast to the indexed region (of type
    ``region_type``): the increment ops' ``make_node``."""
    if y.ndim > region_type.ndim:
        raise TypeError("%s: y=%s has %d dimensions, more than the %d of the indexed region of %s"
                        % (op, y, y.ndim, region_type.ndim, x))
    if not np.can_cast(y.dtype, x.dtype, casting="same_kind"):
        raise TypeError("%s: y=%s of dtype %s cannot be cast to the dtype %s of %s (numpy's same_kind rule)"
                        % (op, y, y.dtype, x.dtype, x))
    lead = region_type.ndim - y.ndim
    for axis, ysize in enumerate(y.type.shape):
        rsize = region_type.shape[lead + axis]
        if ysize not in (None, 1) and rsize is not None and ysize != rsize:
            raise ValueError("%s: y=%s of static shape %s cannot be broadcast to the indexed region's static "
                             "shape %s" % (op, y, y.type.shape, region_type.shape))
    return cast(y, x.dtype)


def _inc_grads(op, inputs, output_grads, region_of, set_op):
    """L_op of the increment ops (``inputs``: x, y, the index inputs): x gets the gradient where y
    was not written (all of it for an increment); y gets the gradient of the places it went to
    (``region_of(g, *index_inputs)``), summed over the axes it was broadcast along (and over
    repeats). ``set_op(g, 0, *index_inputs)`` zeroes the written places of g (a set op)."""
    from ffigraph.tensor.gradient import disconnected_type
    from ffigraph.tensor.basic import zeros_like
    from ffigraph.tensor.elemwise_grad import sum_to_input
    from ffigraph.tensor.math import sum as tsum

    x, y, index_inputs = inputs[0], inputs[1], inputs[2:]
    (gz,) = output_grads
    rest = [disconnected_type() for _ in index_inputs]
    if _is_integer(x.type.dtype):
        # an integer result: zeros, as in PyTensor (floatX for an integer y)
        gy = zeros_like(y, dtype="floatX" if _is_integer(y.type.dtype) else None)
        return [zeros_like(x, dtype="floatX"), gy] + rest
    gx = gz
    if op.set_instead_of_inc:
        gx = set_op(gz, constant(np.zeros((), dtype=gz.type.dtype)), *index_inputs)
    region = region_of(gz, *index_inputs)
    lead = region.type.ndim - y.type.ndim
    gy = tsum(region, axis=tuple(range(lead))) if lead else region
    gy = sum_to_input(gy, y, [region.type.shape[lead:]])
    return [gx, gy] + rest


def _inc_or_set(x_sub, y, set_instead_of_inc, what):
    from ffigraph.tensor.advanced_subtensor import inc_or_set_advanced

    x_sub = as_tensor_variable(x_sub)
    advanced = inc_or_set_advanced(x_sub, y, set_instead_of_inc)
    if advanced is not None:
        return advanced
    owner = x_sub.owner
    if owner is not None and isinstance(owner.op, Subtensor):
        return IncSubtensor(owner.op.idx_list, set_instead_of_inc)(owner.inputs[0], y, *owner.inputs[1:])
    if owner is not None and isinstance(owner.op, DimShuffle) and owner.inputs[0].owner is not None \
            and isinstance(owner.inputs[0].owner.op, Subtensor):
        raise TypeError("%s: %s is a DimShuffle of a Subtensor output (indexing with None/newaxis?), not a "
                        "Subtensor output; index without newaxis and reshape y instead" % (what, x_sub))
    # not indexed at all: the whole of x_sub
    return IncSubtensor((), set_instead_of_inc)(x_sub, y)


def inc_subtensor(x_sub, y, inplace=False, set_instead_of_inc=False, tolerate_inplace_aliasing=False,
                  ignore_duplicates=False):
    """``x`` with ``y`` added to the part ``x_sub = x[idx]`` (a fresh array): ``inc_subtensor(x[1:3], y)``.

    With advanced indexing (``x[idx]``, an integer array or a mask) a place picked twice gets ``y``
    added twice, as ``numpy.add.at``; ``ignore_duplicates=True`` gives numpy's ``x[idx] += y``
    instead, where such a place gets one of its increments (the last), as PyTensor's. When ``x_sub``
    is not an indexing result it stands for the whole of itself: ``x_sub + y`` broadcast to
    ``x_sub``'s shape (and dtype). ``set_instead_of_inc=True`` is ``set_subtensor``. ``inplace`` and
    ``tolerate_inplace_aliasing`` are PyTensor's hints for its own rewrites: the result is a fresh
    array whatever they say (ffigraph's rewrites make it in place where that is safe)."""
    if set_instead_of_inc:
        return _inc_or_set(x_sub, y, True, "set_subtensor")
    if ignore_duplicates:
        # numpy's x[idx] += y: every place written once, from x's old value, the last write kept
        return _inc_or_set(x_sub, x_sub + y, True, "inc_subtensor")
    return _inc_or_set(x_sub, y, False, "inc_subtensor")


def set_subtensor(x_sub, y, inplace=False, tolerate_inplace_aliasing=False):
    """``x`` with the part ``x_sub = x[idx]`` replaced by ``y`` (a fresh array): ``set_subtensor(x[0], 0)``.

    With advanced indexing a place picked twice keeps the last write, as ``x[idx] = y``. When
    ``x_sub`` is not an indexing result it stands for the whole of itself: ``y`` broadcast to
    ``x_sub``'s shape, cast to its dtype. ``inplace`` and ``tolerate_inplace_aliasing``: as for
    ``inc_subtensor``."""
    return _inc_or_set(x_sub, y, True, "set_subtensor")


# PyTensor's pytensor.tensor.subtensor also holds the advanced-indexing ops; they live in
# advanced_subtensor.py, which imports this module, so they are handed out on first use.
_ADVANCED_NAMES = frozenset((
    "AdvancedSubtensor1", "AdvancedSubtensor", "AdvancedIncSubtensor1", "AdvancedIncSubtensor",
    "advanced_subtensor1", "advanced_inc_subtensor1", "advanced_set_subtensor1", "advanced_subtensor",
    "advanced_inc_subtensor", "advanced_set_subtensor", "take",
))


def __getattr__(name):
    if name in _ADVANCED_NAMES:
        from ffigraph.tensor import advanced_subtensor

        return getattr(advanced_subtensor, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
