"""Advanced indexing: integer arrays and boolean masks, with numpy's rules (PyTensor's op names).

``x[idx]`` with an integer array (a list, a numpy array or a symbolic integer
tensor of any ndim and any integer dtype) or a boolean mask (any ndim; it
stands for ``mask.nonzero()``), mixed with ints, slices, ``None`` and ``...``:

- every integer array, mask and int of the index is an *advanced* index; their
  shapes broadcast together (a mask counts as a vector of its true elements'
  count, a Python int as 0-d) into the *broadcast index shape*;
- the result's axes are the slices' and newaxes' axes in order, with the
  broadcast index shape in place of the advanced indices when these are next
  to each other in the index, and first otherwise (``x[idx, :, idx2]``),
  exactly as numpy decides it (a ``...`` between them separates them, even
  when it stands for no axis);
- the result is a fresh array (a copy), never a view.

Ops (their C lives in advanced_subtensor_c.py):

- ``AdvancedSubtensor1``: ``x[ilist]``, one integer vector on axis 0 (rows copied whole);
- ``AdvancedSubtensor``: any other advanced index;
- ``AdvancedIncSubtensor1`` and ``AdvancedIncSubtensor``: a fresh copy of ``x`` with ``y``
  added at the places the index picks, repeated places adding up (``numpy.add.at``), or with
  ``set_instead_of_inc`` written there, the last write winning (``x[idx] = y``).

Functions: ``take`` (numpy's, modes 'raise', 'wrap' and 'clip'), ``nonzero`` and
``flatnonzero``. ``x[...]``, ``inc_subtensor`` and ``set_subtensor`` (subtensor.py)
come here when the index is advanced.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply, Constant, Variable
from ffigraph.graph.op import Op
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.tensor.basic import _flatten, arange, as_tensor_variable, cast, constant
from ffigraph.tensor.shapes import shape_i
from ffigraph.tensor.subtensor import (SYMBOLIC, _check_y, _inc_grads, _IncrementOp, _index_part, _is_integer,
                                       _slice_entry, _static_slice_length, _symbolic_slice_length)
from ffigraph.tensor.type import TensorType

# The entries of an advanced index (``idx_list``), in the order of the index:
#   ("slice", start, stop, step)  as in Subtensor: each part an int, None or "?" (an int64 input)
#   ("int", v)                    an integer, an advanced index of shape (): v an int or "?"
#   ("array",)                    the next input: an integer tensor of any ndim and integer dtype
#   ("mask",)                     the next input: a boolean tensor; it indexes as many axes as it has
#   ("newaxis",)                  a new axis of length 1
#   ("ellipsis",)                 as many full slices as the axes no other entry indexes
FULL_SLICE = ("slice", None, None, None)


class _Item:
    """One advanced index of a plan: its kind, where it is in the index and among the index inputs,
    the axes of ``x`` it indexes and the number of axes it adds to the broadcast index shape."""

    def __init__(self, kind, entry, source, axes, bnd):
        self.kind, self.entry, self.source, self.axes, self.bnd = kind, entry, source, axes, bnd


class Plan:
    """How an advanced index maps ``x``'s axes to the result's (shapes aside).

    ``items``: the advanced indices (``_Item``); ``dims``: one entry per result axis, in order:
    ``("slice", x_axis, parts)`` (parts: ("lit", v) or ("in", k), k an index input position),
    ``("full", x_axis)``, ``("newaxis",)`` or ``("adv", d)``, axis d of the broadcast index shape
    (``nb`` axes). ``first``: whether the broadcast axes come first (advanced indices apart)."""

    def __init__(self, idx_list, xndim, index_ndims):
        index_ndims = list(index_ndims)
        k = 0
        consumed = 0   # the axes of x that the entries other than an ellipsis index
        for e in idx_list:
            if e[0] == "slice":
                k += sum(1 for p in e[1:] if p == SYMBOLIC)
                consumed += 1
            elif e[0] == "int":
                k += e[1] == SYMBOLIC
                consumed += 1
            elif e[0] == "array":
                k += 1
                consumed += 1
            elif e[0] == "mask":
                consumed += index_ndims[k]
                k += 1
        if consumed > xndim:
            raise IndexError("too many indices for array: array is %d-dimensional, but %d were indexed"
                             % (xndim, consumed))
        if sum(1 for e in idx_list if e[0] == "ellipsis") > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        self.items, dims, adv_entries = [], [], []
        insert_at = None
        axis = k = 0
        for pos, e in enumerate(idx_list):
            kind = e[0]
            if kind in ("int", "array", "mask") and insert_at is None:
                insert_at = len(dims)
            if kind == "slice":
                parts = []
                for p in e[1:]:
                    if p == SYMBOLIC:
                        parts.append(("in", k))
                        k += 1
                    else:
                        parts.append(("lit", p))
                dims.append(("slice", axis, tuple(parts)))
                axis += 1
            elif kind == "int":
                source = ("in", k) if e[1] == SYMBOLIC else ("lit", e[1])
                k += e[1] == SYMBOLIC
                self.items.append(_Item("int", pos, source, (axis,), 0))
                axis += 1
            elif kind == "array":
                self.items.append(_Item("array", pos, ("in", k), (axis,), index_ndims[k]))
                k += 1
                axis += 1
            elif kind == "mask":
                n = index_ndims[k]
                self.items.append(_Item("mask", pos, ("in", k), tuple(range(axis, axis + n)), 1))
                k += 1
                axis += n
            elif kind == "newaxis":
                dims.append(("newaxis",))
            elif kind == "ellipsis":
                for _ in range(xndim - consumed):
                    dims.append(("full", axis))
                    axis += 1
            else:
                raise ValueError("unknown advanced index entry %r" % (e,))
            if kind in ("int", "array", "mask"):
                adv_entries.append(pos)
        dims.extend(("full", a) for a in range(axis, xndim))
        self.n_inputs = k
        self.nb = max([it.bnd for it in self.items] + [0])
        adjacent = bool(adv_entries) and adv_entries == list(range(adv_entries[0], adv_entries[-1] + 1))
        self.first = not adjacent
        at = 0 if self.first else insert_at
        self.dims = dims[:at] + [("adv", d) for d in range(self.nb)] + dims[at:]


def _entry_str(e):
    if e[0] == "slice":
        parts = ["" if p is None else str(p) for p in e[1:]]
        return ":".join(parts if parts[2] else parts[:2])
    if e[0] == "int":
        return str(e[1])
    return {"array": "array", "mask": "mask", "newaxis": "None", "ellipsis": "..."}[e[0]]


def _format_index(idx_list):
    return "{%s}" % ", ".join(_entry_str(e) for e in idx_list)


def _check_index_inputs(op, idx_list, index_inputs):
    """The index inputs as variables: int64 scalars for "?" parts, integer arrays, boolean masks."""
    out, it = [], iter(index_inputs)
    try:
        for e in idx_list:
            if e[0] in ("slice", "int"):
                for p in e[1:]:
                    if p == SYMBOLIC:
                        v = as_tensor_variable(next(it))
                        if v.ndim != 0 or np.dtype(v.dtype).kind not in "iu":
                            raise TypeError("%s: a symbolic index part must be an integer scalar, got %s of type %s"
                                            % (op, v, v.type))
                        out.append(cast(v, "int64"))
            elif e[0] == "array":
                v = as_tensor_variable(next(it))
                if np.dtype(v.dtype).kind not in "iu":
                    raise IndexError("%s: arrays used as indices must be of integer (or boolean) type; %s has "
                                     "dtype %s" % (op, v, v.dtype))
                out.append(v)
            elif e[0] == "mask":
                v = as_tensor_variable(next(it))
                if v.dtype != "bool":
                    raise IndexError("%s: a mask must be boolean; %s has dtype %s" % (op, v, v.dtype))
                out.append(v)
    except StopIteration:
        raise ValueError("%s: too few index inputs (%d)" % (op, len(index_inputs))) from None
    if next(it, None) is not None:
        raise ValueError("%s: too many index inputs (%d)" % (op, len(index_inputs)))
    return out


def _static_broadcast(shapes, what):
    """numpy's broadcast of static shapes (None: unknown); IndexError when two known lengths clash."""
    nb = max([len(s) for s in shapes] + [0])
    out = []
    for d in range(nb):
        lengths = [s[len(s) - nb + d] for s in shapes if len(s) - nb + d >= 0]
        known = {n for n in lengths if n is not None and n != 1}
        if len(known) > 1:
            raise IndexError("%s: shape mismatch: indexing arrays could not be broadcast together with shapes %s"
                             % (what, " ".join(str(tuple(s)) for s in shapes)))
        if known:
            out.append(known.pop())
        elif any(n is None for n in lengths):
            out.append(None)
        else:
            out.append(1)
    return out


def _result_static_shape(op, plan, x, index_inputs):
    """The result's static shape (None where only the run time knows)."""
    xshape = x.type.shape
    bshapes = []
    for item in plan.items:
        if item.kind == "int":
            if item.source[0] == "lit":
                size = xshape[item.axes[0]]
                v = item.source[1]
                if size is not None and not -size <= v < size:
                    raise IndexError("%s: index %d is out of bounds for axis %d with size %d"
                                     % (op, v, item.axes[0], size))
            bshapes.append(())
        elif item.kind == "array":
            bshapes.append(index_inputs[item.source[1]].type.shape)
        else:
            mask = index_inputs[item.source[1]]
            for i, (m, a) in enumerate(zip(mask.type.shape, item.axes)):
                if m is not None and xshape[a] is not None and m != xshape[a]:
                    raise IndexError("%s: boolean index did not match indexed array along axis %d; size of axis is "
                                     "%d but size of corresponding boolean axis is %d" % (op, a, xshape[a], m))
            if isinstance(mask, Constant):
                bshapes.append((int(np.count_nonzero(mask.data)),))
            else:
                bshapes.append((0 if 0 in mask.type.shape else None,))
    bshape = _static_broadcast(bshapes, op)
    out = []
    for dim in plan.dims:
        if dim[0] == "slice":
            parts = tuple(SYMBOLIC if p[0] == "in" else p[1] for p in dim[2])
            out.append(_static_slice_length(parts, xshape[dim[1]]))
        elif dim[0] == "full":
            out.append(xshape[dim[1]])
        elif dim[0] == "newaxis":
            out.append(1)
        else:
            out.append(bshape[dim[1]])
    return out


def _broadcast_length(a, b):
    """numpy's broadcast of two lengths (int64 scalars or ints), assuming they do broadcast."""
    from ffigraph.tensor.basic import switch
    from ffigraph.tensor.math import eq

    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1:
        return a
    if isinstance(b, int):
        return b
    return switch(eq(b, 1), a, b)


def _static_int(v):
    """An int when ``v`` is a constant length, else ``v``."""
    from ffigraph.tensor.basic import NotScalarConstantError, get_scalar_constant_value

    if isinstance(v, (int, np.integer)):
        return int(v)
    try:
        return int(get_scalar_constant_value(v))
    except (NotScalarConstantError, TypeError, ValueError):
        return v


def _result_symbolic_shape(plan, x_shape, index_inputs, index_shapes):
    """The result's shape as int64 scalars (infer_shape): a mask counts its true elements."""
    from ffigraph.tensor.math import sum as tsum

    bshapes = []
    for item in plan.items:
        if item.kind == "int":
            bshapes.append(())
        elif item.kind == "array":
            bshapes.append(tuple(_static_int(s) for s in index_shapes[item.source[1]]))
        else:
            count = cast(tsum(index_inputs[item.source[1]]), "int64")
            bshapes.append((count,))
    bshape = []
    for d in range(plan.nb):
        length = 1
        for s in bshapes:
            j = len(s) - plan.nb + d
            if j >= 0:
                length = _broadcast_length(length, s[j])
        bshape.append(length)
    out = []
    for dim in plan.dims:
        if dim[0] == "slice":
            parts = [index_inputs[p[1]] if p[0] == "in" else p[1] for p in dim[2]]
            out.append(_symbolic_slice_length(parts, x_shape[dim[1]]))
        elif dim[0] == "full":
            out.append(x_shape[dim[1]])
        elif dim[0] == "newaxis":
            out.append(constant(1, dtype="int64"))
        else:
            out.append(bshape[dim[1]])
    return tuple(constant(s, dtype="int64") if isinstance(s, int) else s for s in out)


def _numpy_index(idx_list, values):
    """The numpy index tuple of ``idx_list`` with the index inputs' ``values``."""
    it = iter(values)

    def part(p):
        return int(next(it)) if p == SYMBOLIC else p

    idx = []
    for e in idx_list:
        if e[0] == "slice":
            idx.append(slice(*(part(p) for p in e[1:])))
        elif e[0] == "int":
            idx.append(part(e[1]))
        elif e[0] == "array":
            idx.append(np.asarray(next(it)))
        elif e[0] == "mask":
            idx.append(np.asarray(next(it), dtype=bool))
        elif e[0] == "newaxis":
            idx.append(None)
        else:
            idx.append(Ellipsis)
    return tuple(idx)


def _check_index(op, x, idx):
    """numpy 2's index errors, whatever the numpy: a mask must have the shape of the axes of ``x`` it
    indexes; an int must be in range, and so must every value of an integer array unless the
    advanced indices broadcast to an empty shape (numpy 1 let those pass when the result was empty)."""
    def is_mask(i):
        return isinstance(i, np.ndarray) and i.dtype == bool

    consumed = sum(i.ndim if is_mask(i) else 1 for i in idx if i is not None and i is not Ellipsis)
    if consumed > x.ndim:
        return   # numpy says "too many indices"
    axis, arrays, shapes = 0, [], []
    for i in idx:
        if i is Ellipsis:
            axis += x.ndim - consumed
        elif is_mask(i):
            for k, n in enumerate(i.shape):
                if x.shape[axis + k] != n:
                    raise IndexError("%s: boolean index did not match indexed array along axis %d; size of axis is "
                                     "%d but size of corresponding boolean axis is %d (x has shape %s)"
                                     % (op, axis + k, x.shape[axis + k], n, x.shape))
            shapes.append((int(np.count_nonzero(i)),))
            axis += i.ndim
        elif isinstance(i, np.ndarray):
            arrays.append((axis, i))
            shapes.append(i.shape)
            axis += 1
        elif isinstance(i, (int, np.integer)):
            arrays.append((axis, np.asarray(i)))
            axis += 1
        elif i is not None:
            axis += 1
    try:
        empty = 0 in np.broadcast_shapes(*shapes)
    except ValueError:
        return   # numpy says "shape mismatch"
    for axis, values in arrays:
        if empty and values.ndim > 0:
            continue
        n = x.shape[axis]
        bad = values[(values < -n) | (values >= n)] if values.dtype != np.uint64 else values[values >= n]
        if bad.size:
            raise IndexError("%s: index %d is out of bounds for axis %d with size %d (x has shape %s)"
                             % (op, int(bad.reshape(-1)[0]), axis, n, x.shape))


def _gather(op, x, idx):
    """``x[idx]`` in numpy, a fresh array; errors name the op."""
    for s in idx:
        if isinstance(s, slice) and s.step == 0:
            raise ValueError("%s: slice step cannot be zero" % op)
    _check_index(op, x, idx)
    try:
        out = x[idx]
    except IndexError as err:
        raise IndexError("%s: %s (x has shape %s)" % (op, err, x.shape)) from None
    out = np.asarray(out)
    if out.dtype != x.dtype:   # (a 0-d result comes back as a numpy scalar)
        out = out.astype(x.dtype)
    if np.may_share_memory(out, x):
        out = np.array(out, copy=True)
    return out


# ------------------------------------------------------------------ reading


class AdvancedSubtensor1(DelegatedCOp, Op):
    """``x[ilist]``: the rows of ``x`` (axis 0) that the integer vector ``ilist`` names, copied
    (negative indices count from the end; repeats repeat the row)."""

    c_impl = "ffigraph.tensor.advanced_subtensor_c"
    __props__ = ()
    idx_list = (("array",),)

    def make_node(self, x, ilist):
        x, ilist = as_tensor_variable(x), as_tensor_variable(ilist)
        if x.ndim < 1:
            raise IndexError("%s: too many indices for array: %s is 0-dimensional, but 1 was indexed" % (self, x))
        if ilist.ndim != 1 or np.dtype(ilist.dtype).kind not in "iu":
            raise TypeError("%s: the index must be an integer vector, got %s of type %s" % (self, ilist, ilist.type))
        return Apply(self, [x, ilist], [TensorType(x.dtype, (ilist.type.shape[0],) + x.type.shape[1:])()])

    def perform(self, node, inputs, output_storage):
        x, ilist = inputs
        output_storage[0][0] = _gather(self, x, (np.asarray(ilist),))

    def infer_shape(self, fgraph, node, input_shapes):
        xshp, ishp = input_shapes
        return [(ishp[0],) + tuple(xshp[1:])]

    def connection_pattern(self, node):
        return [[True], [False]]

    def L_op(self, inputs, outputs, output_grads):
        """The output gradient added into zeros the shape of ``x`` at the rows read (repeats add up)."""
        from ffigraph.tensor.gradient import disconnected_type
        from ffigraph.tensor.basic import zeros_like

        x, ilist = inputs
        if _is_integer(x.type.dtype):
            return [zeros_like(x, dtype="floatX"), disconnected_type()]
        return [AdvancedIncSubtensor1()(zeros_like(x), output_grads[0], ilist), disconnected_type()]

    def __str__(self):
        return "AdvancedSubtensor1"


class AdvancedSubtensor(DelegatedCOp, Op):
    """``x[idx_list]`` for any advanced index (see the module's docstring for the rules and the
    entries); the index inputs follow ``x`` in the order of the index."""

    c_impl = "ffigraph.tensor.advanced_subtensor_c"
    __props__ = ("idx_list",)

    def __init__(self, idx_list):
        self.idx_list = tuple(tuple(e) for e in idx_list)

    def make_node(self, x, *index_inputs):
        x = as_tensor_variable(x)
        index_inputs = _check_index_inputs(self, self.idx_list, index_inputs)
        if not any(e[0] in ("array", "mask") for e in self.idx_list):
            raise ValueError("%s: an advanced index needs an integer array or a mask; use Subtensor" % self)
        try:
            plan = Plan(self.idx_list, x.ndim, [i.ndim for i in index_inputs])
        except IndexError as err:
            raise IndexError("%s: %s" % (self, err)) from None
        shape = _result_static_shape(self, plan, x, index_inputs)
        return Apply(self, [x] + index_inputs, [TensorType(x.dtype, shape)()])

    def plan(self, node, first_index=1):
        return Plan(self.idx_list, node.inputs[0].type.ndim, [i.type.ndim for i in node.inputs[first_index:]])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = _gather(self, inputs[0], _numpy_index(self.idx_list, inputs[1:]))

    def infer_shape(self, fgraph, node, input_shapes):
        return [_result_symbolic_shape(self.plan(node), input_shapes[0], node.inputs[1:], input_shapes[1:])]

    def connection_pattern(self, node):
        return [[True]] + [[False]] * (len(node.inputs) - 1)

    def L_op(self, inputs, outputs, output_grads):
        """The output gradient added into zeros the shape of ``x`` at the places read (repeats add up)."""
        from ffigraph.tensor.gradient import disconnected_type
        from ffigraph.tensor.basic import zeros_like

        x, index_inputs = inputs[0], inputs[1:]
        if _is_integer(x.type.dtype):
            gx = zeros_like(x, dtype="floatX")
        else:
            gx = AdvancedIncSubtensor(self.idx_list)(zeros_like(x), output_grads[0], *index_inputs)
        return [gx] + [disconnected_type() for _ in index_inputs]

    def __str__(self):
        return "AdvancedSubtensor" + _format_index(self.idx_list)


# ------------------------------------------------------------------ writing


def _scatter(op, x, y, idx, set_instead_of_inc):
    """A copy of ``x`` with ``y`` added at ``idx`` (numpy.add.at) or set there (``x[idx] = y``).

    The places are visited in the C order of the indexed result, whatever the memory layouts: each
    result element's flat position in ``x`` is read through the index, so a place picked twice gets
    both additions in that order, or keeps the later write (as the C code does)."""
    positions = _gather(op, np.arange(x.size, dtype=np.int64).reshape(x.shape), idx)
    try:
        ok = np.broadcast_shapes(np.shape(y), positions.shape) == positions.shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError("%s: y of shape %s cannot be broadcast to the indexed region's shape %s (x has shape %s)"
                         % (op, np.shape(y), positions.shape, x.shape))
    out = np.array(x, copy=True, order="C")
    flat = out.reshape(-1)
    where = np.ascontiguousarray(positions).reshape(-1)
    values = np.ascontiguousarray(np.broadcast_to(y, positions.shape)).reshape(-1)
    with np.errstate(all="ignore"):
        if set_instead_of_inc:
            flat[where] = values
        else:
            np.add.at(flat, where, values)
    return out


class AdvancedIncSubtensor1(DelegatedCOp, Op):
    """A fresh copy of ``x`` with ``y`` added to the rows ``ilist`` names (a row named twice gets
    both, as ``numpy.add.at``), or with ``set_instead_of_inc`` written there (the last write wins,
    as ``x[ilist] = y``). ``y`` broadcasts to ``x[ilist]``'s shape and is cast to ``x``'s dtype."""

    c_impl = "ffigraph.tensor.advanced_subtensor_c"
    __props__ = ("set_instead_of_inc",)
    idx_list = (("array",),)

    def __init__(self, set_instead_of_inc=False):
        self.set_instead_of_inc = bool(set_instead_of_inc)

    def make_node(self, x, y, ilist):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        region = AdvancedSubtensor1().make_node(x, ilist)
        y = _check_y(self, x, y, region.outputs[0].type)
        return Apply(self, [x, y, region.inputs[1]], [TensorType(x.dtype, x.type.shape)()])

    def plan(self, node, first_index=2):
        return Plan(self.idx_list, node.inputs[0].type.ndim, [1])

    def perform(self, node, inputs, output_storage):
        x, y, ilist = inputs
        output_storage[0][0] = _scatter(self, x, y, (np.asarray(ilist),), self.set_instead_of_inc)

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]

    def connection_pattern(self, node):
        return [[True], [True], [False]]

    def L_op(self, inputs, outputs, output_grads):
        return _inc_grads(self, inputs, output_grads, AdvancedSubtensor1(), AdvancedIncSubtensor1(True))

    def __str__(self):
        return "AdvancedSetSubtensor1" if self.set_instead_of_inc else "AdvancedIncSubtensor1"


class AdvancedIncSubtensor(_IncrementOp, DelegatedCOp, Op):
    """A fresh copy of ``x`` with ``y`` added at the places ``x[idx_list]`` reads (places read twice
    get both, as ``numpy.add.at``), or with ``set_instead_of_inc`` written there (the last write
    wins, as ``x[idx] = y``). The index inputs follow ``x`` and ``y``."""

    c_impl = "ffigraph.tensor.advanced_subtensor_c"
    __props__ = ("idx_list", "set_instead_of_inc")
    reader = AdvancedSubtensor

    def plan(self, node, first_index=2):
        return Plan(self.idx_list, node.inputs[0].type.ndim, [i.type.ndim for i in node.inputs[first_index:]])

    def perform(self, node, inputs, output_storage):
        x, y = inputs[0], inputs[1]
        idx = _numpy_index(self.idx_list, inputs[2:])
        output_storage[0][0] = _scatter(self, x, y, idx, self.set_instead_of_inc)

    def __str__(self):
        name = "AdvancedSetSubtensor" if self.set_instead_of_inc else "AdvancedIncSubtensor"
        return name + _format_index(self.idx_list)


def inc_or_set_advanced(x_sub, y, set_instead_of_inc):
    """inc_subtensor/set_subtensor of an advanced-indexing result ``x_sub``, or None if it is not one."""
    owner = x_sub.owner
    if owner is None:
        return None
    if isinstance(owner.op, AdvancedSubtensor1):
        return AdvancedIncSubtensor1(set_instead_of_inc)(owner.inputs[0], y, owner.inputs[1])
    if isinstance(owner.op, AdvancedSubtensor):
        return AdvancedIncSubtensor(owner.op.idx_list, set_instead_of_inc)(owner.inputs[0], y, *owner.inputs[1:])
    return None


# ------------------------------------------------------------------ building the graph of x[index]


def is_advanced_part(i):
    """Whether ``i``, one entry of an index, makes the index advanced (numpy's rule)."""
    if isinstance(i, (bool, np.bool_, list)):
        return True
    if isinstance(i, np.ndarray):
        return i.ndim > 0 or i.dtype.kind not in "iu"
    if isinstance(i, Variable):
        return getattr(i.type, "ndim", 0) > 0 or str(getattr(i.type, "dtype", "")) == "bool"
    return False


def _as_index_array(i):
    """A list or numpy array of an index as a tensor (an empty list is an int64 vector, as in numpy)."""
    if isinstance(i, list):
        flat = list(_flatten(i))
        if any(isinstance(e, (slice, type(None), type(Ellipsis))) for e in flat):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
                             "boolean arrays are valid indices; a list may hold only integers or booleans: %r" % (i,))
        if not any(isinstance(e, Variable) for e in flat):
            arr = np.asarray(i)
            if arr.size == 0 and arr.dtype.kind == "f":
                arr = arr.astype(np.int64)
            return constant(arr)
        return as_tensor_variable(i)
    if isinstance(i, np.ndarray):
        return constant(i)
    return as_tensor_variable(i)


def advanced_getitem(x, index):
    """``x[index]`` when ``index`` holds an integer array or a mask (``getitem`` sends it here)."""
    x = as_tensor_variable(x)
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    entries, inputs = [], []
    for i in index:
        if i is None:
            entries.append(("newaxis",))
        elif i is Ellipsis:
            entries.append(("ellipsis",))
        elif isinstance(i, slice):
            entry, slice_inputs = _slice_entry(i)
            entries.append(entry)
            inputs.extend(slice_inputs)
        elif isinstance(i, (bool, np.bool_)):
            entries.append(("mask",))
            inputs.append(constant(np.asarray(i, dtype=bool)))
        elif isinstance(i, (list, np.ndarray, Variable)):
            v = _as_index_array(i)
            if v.dtype == "bool":
                entries.append(("mask",))
                inputs.append(v)
            elif np.dtype(v.dtype).kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type; %s has dtype %s"
                                 % (v, v.dtype))
            elif v.ndim == 0:
                entries.append(("int", SYMBOLIC))
                inputs.append(cast(v, "int64"))
            else:
                entries.append(("array",))
                inputs.append(v)
        else:
            p, v = _index_part(i, "index")
            entries.append(("int", p))
            if v is not None:
                inputs.append(cast(v, "int64"))
    # a full slice or an ellipsis at the end changes nothing
    while entries and entries[-1] in (FULL_SLICE, ("slice", None, None, 1), ("ellipsis",)):
        entries.pop()
    if entries == [("array",)] and inputs[0].ndim == 1:
        return AdvancedSubtensor1()(x, inputs[0])
    return AdvancedSubtensor(entries)(x, *inputs)


# ------------------------------------------------------------------ take, nonzero, flatnonzero


def take(a, indices, axis=None, mode="raise"):
    """``numpy.take``: the elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a``
    when None); the result's shape is ``a.shape[:axis] + indices.shape + a.shape[axis + 1:]``.

    ``mode``: 'raise' (an index out of range is an IndexError; negative ones count from the end),
    'wrap' (indices wrap around the axis) or 'clip' (indices are clipped into the axis; a negative
    one becomes 0, as in numpy)."""
    from ffigraph.tensor.math import clip, maximum, mod
    from ffigraph.tensor.shapes import flatten, shape_i

    a = as_tensor_variable(a)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError("take: mode must be 'raise', 'wrap' or 'clip', got %r" % (mode,))
    if axis is None:
        a = flatten(a, 1) if a.ndim != 1 else a
        axis = 0
    if not -a.ndim <= axis < a.ndim:
        raise ValueError("take: axis %d is out of bounds for an array of dimension %d" % (axis, a.ndim))
    axis = axis % a.ndim
    idx = _as_index_array(list(indices) if isinstance(indices, tuple) else indices)
    if np.dtype(idx.dtype).kind not in "iu":
        raise IndexError("take: indices must be integers, got %s of dtype %s" % (idx, idx.dtype))
    if mode != "raise":
        n = shape_i(a, axis)
        idx = cast(idx, "int64")
        if mode == "wrap":
            idx = mod(idx, maximum(n, 1))   # (an empty axis: the index is then out of range)
        else:
            idx = clip(idx, 0, n - 1)
    index = (slice(None),) * axis + (idx,)
    if idx.ndim == 0:
        from ffigraph.tensor.subtensor import getitem

        return getitem(a, index)
    return advanced_getitem(a, index)


def nonzero(a, return_matrix=False):
    """``numpy.nonzero``: a tuple of ``a.ndim`` int64 vectors, the indices of the nonzero elements
    along each axis, in C order; with ``return_matrix``, PyTensor's one int64 matrix of them, a row
    per axis."""
    from ffigraph.tensor.basic import alloc, arange
    from ffigraph.tensor.math import neq
    from ffigraph.tensor.shapes import shape_i

    a = as_tensor_variable(a)
    if a.ndim == 0:
        raise ValueError("nonzero: calling nonzero on 0d arrays is not allowed; use atleast_1d(a).nonzero()")
    mask = a if a.dtype == "bool" else neq(a, 0)
    sizes = [shape_i(a, k) for k in range(a.ndim)]
    out = []
    for k in range(a.ndim):
        along = arange(sizes[k])
        if a.ndim > 1:
            along = along.dimshuffle(*["x" if j != k else 0 for j in range(a.ndim)])
            along = alloc(along, *sizes)
        out.append(advanced_getitem(along, (mask,)))
    if return_matrix:
        from ffigraph.tensor.basic import stack

        return stack(out)
    return tuple(out)


def flatnonzero(a):
    """``numpy.flatnonzero``: the indices of the nonzero elements of the flattened ``a`` (int64)."""
    from ffigraph.tensor.basic import arange
    from ffigraph.tensor.math import neq
    from ffigraph.tensor.shapes import flatten, shape_i

    a = as_tensor_variable(a)
    flat = flatten(a, 1) if a.ndim != 1 else a
    mask = flat if flat.dtype == "bool" else neq(flat, 0)
    return advanced_getitem(arange(shape_i(flat, 0)), (mask,))


# ------------------------------------------------------------------ PyTensor's module-level names
# (pytensor.tensor.subtensor has them; ffigraph.tensor.subtensor hands them out from here)

advanced_subtensor1 = AdvancedSubtensor1()                                    # (x, ilist)
advanced_inc_subtensor1 = AdvancedIncSubtensor1()                             # (x, y, ilist)
advanced_set_subtensor1 = AdvancedIncSubtensor1(set_instead_of_inc=True)      # (x, y, ilist)


def advanced_subtensor(x, *index):
    """``x[index]`` for an advanced index given part by part (PyTensor's ``advanced_subtensor``)."""
    from ffigraph.tensor.subtensor import getitem

    return getitem(x, tuple(index))


def advanced_inc_subtensor(x, y, *index):
    """``inc_subtensor(x[index], y)``: repeated places get ``y`` added as often as they repeat."""
    from ffigraph.tensor.subtensor import getitem, inc_subtensor

    return inc_subtensor(getitem(x, tuple(index)), y)


def along_axis_index(x, axis, positions):
    """The advanced index of numpy's ``take_along_axis(x, positions, axis)``: ``positions`` on
    ``axis`` (a non-negative int), and on every other axis its own ``arange``, shaped to broadcast
    against ``positions`` (which has ``x``'s rank)."""
    index = []
    for a in range(x.ndim):
        if a == axis:
            index.append(positions)
        else:
            pattern = ["x"] * x.ndim
            pattern[a] = 0
            index.append(arange(shape_i(x, a)).dimshuffle(*pattern))
    return tuple(index)


def advanced_set_subtensor(x, y, *index):
    """``set_subtensor(x[index], y)``: a repeated place keeps the last write."""
    from ffigraph.tensor.subtensor import getitem, set_subtensor

    return set_subtensor(getitem(x, tuple(index)), y)
