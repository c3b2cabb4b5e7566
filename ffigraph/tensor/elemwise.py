"""``Elemwise`` (a scalar op over broadcast arrays) and ``DimShuffle`` (axis permutation views)."""
from __future__ import annotations

import contextlib

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op
from ffigraph.scalar.composite import Composite
from ffigraph.scalar.type import autocast_dtype
from ffigraph.tensor.type import TensorType


class DimShuffle(Op):
    """Permute axes, insert broadcastable axes ('x') and drop axes of size 1.

    ``new_order`` lists, for each output axis, the input axis it takes or 'x'.
    Input axes left out must have length 1. The output is a view of the input.
    """

    __props__ = ("input_ndim", "new_order")
    view_map = {0: [0]}

    def __init__(self, input_ndim, new_order):
        new_order = tuple(new_order)
        used = [a for a in new_order if a != "x"]
        for a in used:
            if not isinstance(a, (int, np.integer)) or not 0 <= a < input_ndim:
                raise ValueError("DimShuffle: %r is not an axis of a %d-d input" % (a, input_ndim))
        if len(set(used)) != len(used):
            raise ValueError("DimShuffle: axes repeat in %s" % (new_order,))
        self.input_ndim = int(input_ndim)
        self.new_order = tuple(a if a == "x" else int(a) for a in new_order)
        self.drop = tuple(a for a in range(input_ndim) if a not in used)
        self.kept = tuple(a for a in range(input_ndim) if a in used)
        self.augment = tuple(i for i, a in enumerate(self.new_order) if a == "x")

    def make_node(self, x):
        from ffigraph.tensor.basic import as_tensor_variable

        x = as_tensor_variable(x)
        if x.ndim != self.input_ndim:
            raise TypeError("%s expects a %d-d input, got %s with %d dimensions"
                            % (self, self.input_ndim, x, x.ndim))
        for a in self.drop:
            if x.type.shape[a] not in (1, None):
                raise ValueError("%s cannot drop axis %d of %s: its static length is %d, not 1"
                                 % (self, a, x, x.type.shape[a]))
        shape = tuple(1 if a == "x" else x.type.shape[a] for a in self.new_order)
        return Apply(self, [x], [TensorType(x.dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        for a in self.drop:
            if x.shape[a] != 1:
                raise ValueError("%s: cannot drop axis %d of an input of shape %s (length is not 1)"
                                 % (self, a, x.shape))
        kept = x.transpose(self.drop + tuple(a for a in self.new_order if a != "x"))
        out_shape = tuple(1 if a == "x" else x.shape[a] for a in self.new_order)
        output_storage[0][0] = kept.reshape(out_shape) if self.drop or self.augment else kept

    def infer_shape(self, fgraph, node, input_shapes):
        (shp,) = input_shapes
        from ffigraph.tensor.basic import constant

        one = constant(1, dtype="int64")
        return [tuple(one if a == "x" else shp[a] for a in self.new_order)]

    def __str__(self):
        return "DimShuffle{%s}" % ",".join(str(a) for a in self.new_order)

    def L_op(self, inputs, outputs, output_grads):
        """Undo the shuffle: drop the inserted axes, permute back, put back the dropped ones.
        An integer input gets zeros (floatX), as in PyTensor."""
        (gz,) = output_grads
        if np.dtype(inputs[0].type.dtype).kind in "biu":
            from ffigraph.tensor.basic import zeros_like

            return [zeros_like(inputs[0], dtype="floatX")]
        kept_positions = [i for i, a in enumerate(self.new_order) if a != "x"]
        kept_axes = [self.new_order[i] for i in kept_positions]
        g = DimShuffle(len(self.new_order), kept_positions)(gz)
        back = ["x" if a in self.drop else kept_axes.index(a) for a in range(self.input_ndim)]
        return [DimShuffle(len(kept_axes), back)(g)]

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        lines = ["/* a view: permute, insert and drop axes */"]
        for a in self.drop:
            lines.append('if (%s.shape[%d] != 1) { ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: cannot drop axis %d '
                         'of length %%lld (not 1)", (long long)%s.shape[%d]); %s }'
                         % (x, a, sub["err"], self, a, x, a, sub["fail"]))
        lines.append("%s.data = %s.data;" % (z, x))
        lines.append("%s.owned = NULL;" % z)
        for j, a in enumerate(self.new_order):
            if a == "x":
                lines.append("%s.shape[%d] = 1; %s.strides[%d] = 0;" % (z, j, z, j))
            else:
                lines.append("%s.shape[%d] = %s.shape[%d]; %s.strides[%d] = %s.strides[%d];"
                             % (z, j, x, a, z, j, x, a))
        return "\n".join(lines)

    def c_code_cache_version(self):
        return (1,)


# What makes the node of a Composite run elementwise: fused.py's composite_node (a FusedElemwise
# node; fused.py imports this module and registers it here), for PyTensor's Elemwise(Composite(...))
COMPOSITE_RUNNER = []


class Elemwise(Op):
    """Apply ``scalar_op`` elementwise with numpy broadcasting.

    Inputs of fewer dimensions are left-padded with broadcastable axes when
    the node is made, so every input of the node has the output's ndim.
    """

    __props__ = ("scalar_op",)

    def __init__(self, scalar_op, inplace_pattern=None, name=None, nfunc_spec=None, openmp=None):
        """PyTensor's signature. ``inplace_pattern`` ({output: input}) is accepted and kept, not
        obeyed: this op always writes fresh memory, and the inplace rewrite chooses where a loop may
        reuse an input (so it is not a prop: the op equals the plain one). ``name`` names the op in
        listings; ``nfunc_spec`` and ``openmp`` have no meaning here."""
        self.scalar_op = scalar_op
        self.inplace_pattern = dict(inplace_pattern or {})
        if name is not None:
            self.name = name

    def make_node(self, *inputs):
        from ffigraph.tensor.basic import as_tensor_variable

        sop = self.scalar_op
        if isinstance(sop, Composite) and COMPOSITE_RUNNER:
            return COMPOSITE_RUNNER[0](sop, inputs)
        if len(inputs) != sop.nin:
            raise TypeError("%s takes %d inputs, got %d" % (sop, sop.nin, len(inputs)))
        inputs = _resolve_weak_scalars([as_tensor_variable(i) for i in inputs], _promoted_positions(sop))
        out_dtype = sop.output_dtype([i.dtype for i in inputs])
        ndim = max(i.ndim for i in inputs)
        inputs = [_left_pad(i, ndim) for i in inputs]
        shape = _broadcast_static_shapes(self, inputs)
        return Apply(self, inputs, [TensorType(out_dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        out_dtype = node.outputs[0].type.numpy_dtype
        with broadcast_errors_named(self, node, inputs):
            result = self.scalar_op.compute(inputs, out_dtype)
        output_storage[0][0] = result

    def infer_shape(self, fgraph, node, input_shapes):
        return [broadcast_shape(node.outputs[0].type.shape, node.inputs, input_shapes)]

    def __str__(self):
        return "Elemwise{%s}" % self.scalar_op

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.elemwise_grad import elemwise_input_grads

        return elemwise_input_grads(self, inputs, outputs[0], output_grads[0])

    # ---- C (the loop generator and the scalar C table)

    def c_code(self, node, name, inputs, outputs, sub):
        from ffigraph.tensor.elemwise_c import elemwise_c_code

        return elemwise_c_code(self, node, inputs, outputs, sub, name)

    def c_support_code_apply(self, node, name):
        from ffigraph.tensor.elemwise_c import elemwise_support_code

        return elemwise_support_code(self, node, name)

    def c_headers(self, **kwargs):
        return ["<math.h>"]

    def c_support_code(self, **kwargs):
        from ffigraph.tensor.threads_c import pool_support_code

        return pool_support_code()

    def c_compile_args(self, **kwargs):
        from ffigraph.tensor.threads_c import compile_args

        return compile_args()

    def c_code_cache_version(self):
        return (1,)


@contextlib.contextmanager
def broadcast_errors_named(op, node, inputs):
    """Turn numpy's broadcast ValueError into one naming ``op`` and each input with its shape."""
    try:
        yield
    except ValueError as err:
        shapes = [np.shape(x) for x in inputs]
        if _broadcastable(shapes):
            raise
        names = ", ".join("%s%s" % (v, s) for v, s in zip(node.inputs, shapes))
        raise ValueError("%s: input shapes cannot be broadcast together: %s" % (op, names)) from err


def broadcast_shape(static_shape, inputs, input_shapes):
    """The symbolic shape of ``inputs`` broadcast together (``static_shape`` is the result's static shape)."""
    from ffigraph.tensor.basic import constant, switch
    from ffigraph.tensor.math import eq

    out = []
    for axis, size in enumerate(static_shape):
        if size is not None:
            out.append(constant(size, dtype="int64"))
            continue
        dims = [shp[axis] for shp, v in zip(input_shapes, inputs) if v.type.shape[axis] != 1]
        dim = dims[0]
        for d in dims[1:]:
            dim = switch(eq(dim, 1), d, dim)  # a runtime length 1 stretches (even to 0)
        out.append(dim)
    return tuple(out)


def _promoted_positions(sop):
    # switch's condition, and polygamma's order (an integer), do not take part in dtype promotion
    if sop.name == "switch":
        return (1, 2)
    if sop.name == "polygamma":
        return (1,)
    return tuple(range(sop.nin))


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _resolve_weak_scalars(inputs, positions):
    """Give weak Python-scalar constants the dtype of the strong tensors beside them (NEP 50)."""
    from ffigraph.tensor.basic import constant

    inputs = list(inputs)
    for p, var in enumerate(inputs):
        # an integer outside the promotion (polygamma's order, switch's condition) takes PyTensor's
        # smallest integer dtype, so that it does not widen the result either
        if p not in positions and getattr(var, "weak", False) and var.data.dtype.kind == "i":
            inputs[p] = constant(var.data.astype(autocast_dtype(int(var.data))))
    weak = [p for p in positions if getattr(inputs[p], "weak", False)]
    strong = [inputs[p].dtype for p in positions if p not in weak]
    if not weak or not strong:
        return inputs
    target = np.result_type(*strong)
    out = list(inputs)
    for p in weak:
        value = inputs[p].data
        if _KIND_RANK[value.dtype.kind] > _KIND_RANK[target.kind]:
            continue
        with np.errstate(all="ignore"):
            cast = value.astype(target)
        # A float takes the tensor's precision (numpy 2 does the same); an integer only
        # when it fits, otherwise it keeps its default dtype rather than wrap around.
        if target.kind in "fc" or cast == value:
            out[p] = constant(cast)
    return out


def _left_pad(var, ndim):
    if var.ndim == ndim:
        return var
    pattern = ["x"] * (ndim - var.ndim) + list(range(var.ndim))
    return DimShuffle(var.ndim, pattern)(var)


def _broadcast_static_shapes(op, inputs):
    shape = []
    for axis in range(inputs[0].ndim if inputs else 0):
        sizes = {i.type.shape[axis] for i in inputs} - {1}
        known = sizes - {None}
        if len(known) > 1:
            raise ValueError("%s: inputs %s have static shapes %s that cannot be broadcast (axis %d)"
                             % (op, ", ".join(map(str, inputs)),
                                ", ".join(str(i.type.shape) for i in inputs), axis))
        if known:
            shape.append(known.pop())
        elif None in sizes:
            shape.append(None)
        else:
            shape.append(1)
    return tuple(shape)


def _broadcastable(shapes):
    try:
        np.broadcast_shapes(*shapes)
        return True
    except ValueError:
        return False
