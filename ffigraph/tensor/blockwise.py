"""``Blockwise``, ``vectorize_graph`` and ``vectorize``: PyTensor's batching of any op.

``Blockwise(core_op, signature)`` applies ``core_op`` to the last axes of each input named by a
numpy gufunc signature (``"(m,n),(n)->(m)"``; the core op's ``gufunc_signature`` when not given),
once per index of the leading *batch* axes, which broadcast between the inputs as numpy's. Each
output has the broadcast batch axes, then its core axes.

``vectorize_graph(outputs, replace)`` rebuilds a graph over inputs with extra leading axes: an
elementwise node broadcasts by itself, a DimShuffle shifts its pattern, a batched op (a Blockwise,
a linear-algebra op) takes the new axes as batch axes, and any other node becomes a Blockwise of
its op, its inputs' and outputs' ranks as the core ranks. ``vectorize(func, signature)`` is
numpy's ``vectorize`` for functions of variables.

How a Blockwise runs: ``perform`` loops over the batch in Python; compiled, the scan package
rewrites the node into one loop whose body is the core op (``ffigraph/scan/blockwise.py``), so the
loop and the core op's C run inside the library. Its gradient is the vectorized graph of the core
op's gradient, summed over the batch axes an input was broadcast along.
"""
from __future__ import annotations

import re

import numpy as np

from ffigraph.graph.basic import Apply, Variable, ancestors, compile_graph
from ffigraph.graph.op import Op, call_infer_shape
from ffigraph.graph.replace import register_vectorizer, set_default_vectorizer, vectorize_graph
from ffigraph.tensor.basic import as_tensor_variable, concatenate, constant, switch
from ffigraph.tensor.elemwise import DimShuffle, Elemwise
from ffigraph.tensor.fused import FusedElemwise
from ffigraph.tensor.generic_ops import Shape, Shape_i
from ffigraph.tensor.gradient import DisconnectedType, NullType, disconnected_type, grad
from ffigraph.tensor.math import Reduce, eq
from ffigraph.tensor.shapes import Reshape, shape, shape_i
from ffigraph.tensor.sum_to_shape import sum_to_shape
from ffigraph.tensor.type import TensorType

_DIMS = re.compile(r"\(([^()]*)\)")


def parse_signature(signature):
    """numpy's gufunc signature ``"(m,n),(n)->(m)"`` as (inputs' core dims, outputs' core dims),
    each a tuple of dimension names per argument."""
    if not isinstance(signature, str) or "->" not in signature:
        raise ValueError("Blockwise: a signature looks like '(m,n),(n)->(m)', got %r" % (signature,))
    left, right = signature.replace(" ", "").split("->")

    def args(text):
        found = _DIMS.findall(text)
        if "".join("(%s)" % f for f in found).replace("),(", ")(") != text.replace("),(", ")("):
            raise ValueError("Blockwise: cannot read the signature %r" % (signature,))
        return [tuple(d for d in f.split(",") if d) for f in found]

    return args(left), args(right)


def signature_of(in_dims, out_dims):
    """The signature string of per-argument core dimension names."""
    def part(dims):
        return ",".join("(%s)" % ",".join(d) for d in dims)
    return "%s->%s" % (part(in_dims), part(out_dims))


def _ranked_signature(in_ndims, out_ndims):
    """A signature with the given core ranks and a distinct name per dimension."""
    names = iter("d%d" % k for k in range(10 ** 6))
    return signature_of([tuple(next(names) for _ in range(n)) for n in in_ndims],
                        [tuple(next(names) for _ in range(n)) for n in out_ndims])


def broadcast_batch(shapes, what):
    """The broadcast of the batch shapes ``shapes`` (tuples of ints or None); ValueError naming
    ``what`` when two static lengths disagree."""
    nb = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(nb):
        lengths = [s[axis - nb + len(s)] for s in shapes if axis - nb + len(s) >= 0]
        known = {n for n in lengths if n is not None and n != 1}
        if len(known) > 1:
            raise ValueError("%s: batch shapes %s do not broadcast" % (what, " and ".join(str(tuple(s)) for s in shapes)))
        out.append(known.pop() if known else (1 if all(n == 1 for n in lengths) else None))
    return tuple(out)


class Blockwise(Op):
    """``core_op`` over the leading (batch) axes of its inputs (see the module's text)."""

    __props__ = ("core_op", "signature")

    def __init__(self, core_op, signature=None, name=None):
        if signature is None:
            signature = getattr(core_op, "gufunc_signature", None)
            if signature is None:
                raise ValueError("Blockwise: %s has no gufunc_signature; give the signature" % (core_op,))
        if isinstance(core_op, Blockwise):
            raise TypeError("Blockwise: the core op is already a Blockwise (%s)" % (core_op,))
        if getattr(core_op, "destroy_map", None):
            raise TypeError("Blockwise: the core op %s overwrites its inputs (destroy_map), which a batch cannot "
                            "share" % (core_op,))
        self.core_op = core_op
        self.signature = signature
        self.inputs_sig, self.outputs_sig = parse_signature(signature)
        self.name = name

    def __str__(self):
        return self.name or "Blockwise{%s, %s}" % (self.core_op, self.signature)

    # ---- the node

    def _core_node(self, inputs):
        """The core op applied to core-shaped variables of the inputs' dtypes and core static shapes."""
        core = [TensorType(x.type.dtype, x.type.shape[x.type.ndim - len(sig):])()
                for x, sig in zip(inputs, self.inputs_sig)]
        return self.core_op.make_node(*core)

    def make_node(self, *inputs):
        if len(inputs) != len(self.inputs_sig):
            raise TypeError("%s takes %d inputs, got %d" % (self, len(self.inputs_sig), len(inputs)))
        inputs = [as_tensor_variable(x) for x in inputs]
        for k, (x, sig) in enumerate(zip(inputs, self.inputs_sig)):
            if x.ndim < len(sig):
                raise ValueError("%s: input %d (%s) has %d dimensions, fewer than its %d core dimensions %s"
                                 % (self, k, x, x.ndim, len(sig), sig))
        core_node = self._core_node(inputs)
        if len(core_node.outputs) != len(self.outputs_sig):
            raise TypeError("%s: the core op gives %d outputs, the signature %d"
                            % (self, len(core_node.outputs), len(self.outputs_sig)))
        for k, (out, sig) in enumerate(zip(core_node.outputs, self.outputs_sig)):
            if out.type.ndim != len(sig):
                raise TypeError("%s: core output %d has %d dimensions, the signature %d"
                                % (self, k, out.type.ndim, len(sig)))
        batch = broadcast_batch([x.type.shape[:x.type.ndim - len(sig)] for x, sig in zip(inputs, self.inputs_sig)],
                                  str(self))
        return Apply(self, inputs, [TensorType(o.type.dtype, batch + o.type.shape)() for o in core_node.outputs])

    def batch_ndim(self, node):
        return node.outputs[0].type.ndim - len(self.outputs_sig[0])

    # ---- running it

    def perform(self, node, inputs, output_storage):
        core_node = self._core_node(node.inputs)
        cores = [len(sig) for sig in self.inputs_sig]
        batch = np.broadcast_shapes(*[x.shape[:x.ndim - c] for x, c in zip(inputs, cores)])
        arrays = [np.broadcast_to(x, batch + x.shape[x.ndim - c:]) for x, c in zip(inputs, cores)]
        outs = None
        for idx in np.ndindex(*batch):
            storage = [[None] for _ in core_node.outputs]
            self.core_op.perform(core_node, [np.asarray(a[idx]) for a in arrays], storage)
            if outs is None:
                outs = [np.empty(batch + np.shape(cell[0]), dtype=o.type.dtype)
                        for cell, o in zip(storage, node.outputs)]
            for k, (out, cell) in enumerate(zip(outs, storage)):
                if np.shape(cell[0]) != out.shape[len(batch):]:
                    raise ValueError("%s: output %d of the core op has shape %s at batch index %s, %s before (the "
                                     "core output shapes must not change along the batch)"
                                     % (self, k, np.shape(cell[0]), idx, out.shape[len(batch):]))
                out[idx] = cell[0]
        if outs is None:   # an empty batch: the core outputs' shapes from the core inputs' shapes
            outs = [np.empty(batch + shape, dtype=o.type.dtype)
                    for shape, o in zip(self._empty_core_shapes(core_node, inputs, cores), node.outputs)]
        for cell, out in zip(output_storage, outs):
            cell[0] = out

    def _empty_core_shapes(self, core_node, inputs, cores):
        shapes = []
        for out in core_node.outputs:
            if all(d is not None for d in out.type.shape):
                shapes.append(tuple(out.type.shape))
                continue
            try:
                fn = compile_graph(core_node.inputs, [out.shape], on_unused_input="ignore")
                dummies = [np.zeros(x.shape[x.ndim - c:], dtype=x.dtype) for x, c in zip(inputs, cores)]
                shapes.append(tuple(int(d) for d in fn(*dummies)))
            except Exception as err:   # (a core op that refuses zeros: say what could not be known)
                raise ValueError("%s: the batch is empty and the core outputs' shapes could not be found from the "
                                 "core inputs' (%s)" % (self, err)) from None
        return shapes

    def infer_shape(self, fgraph, node, input_shapes):
        core_node = self._core_node(node.inputs)
        cores = [len(sig) for sig in self.inputs_sig]
        core_shapes = [tuple(shape[len(shape) - c:]) for shape, c in zip(input_shapes, cores)]
        batch_shapes = [tuple(shape[:len(shape) - c]) for shape, c in zip(input_shapes, cores)]
        static = [x.type.shape[:x.type.ndim - c] for x, c in zip(node.inputs, cores)]
        batch = _batch_dims(batch_shapes, static, self.batch_ndim(node))
        out_core = call_infer_shape(self.core_op, fgraph, core_node, core_shapes)
        dummies = set(core_node.inputs)
        for shape in out_core:
            for d in shape:
                if isinstance(d, Variable) and any(v in dummies for v in ancestors([d])):
                    raise NotImplementedError("%s: the core output shape depends on the core inputs' values" % self)
        return [tuple(batch) + tuple(shape) for shape in out_core]

    # ---- gradient

    def L_op(self, inputs, outputs, output_grads):
        core_node = self._core_node(inputs)
        usable = [k for k, g in enumerate(output_grads) if not isinstance(g.type, (DisconnectedType, NullType))]
        if not usable:
            return [disconnected_type() for _ in inputs]
        placeholders = {k: TensorType(output_grads[k].type.dtype,
                                      (None,) * core_node.outputs[k].type.ndim)() for k in usable}
        core_grads = grad(None, list(core_node.inputs),
                          known_grads={core_node.outputs[k]: p for k, p in placeholders.items()},
                          disconnected_inputs="ignore", return_disconnected="disconnected")
        replace = dict(zip(core_node.inputs, inputs))
        replace.update({p: output_grads[k] for k, p in placeholders.items()})
        connected = [g for g in core_grads if not isinstance(g.type, (DisconnectedType, NullType))]
        batched = iter(vectorize_graph(connected, replace)) if connected else iter(())
        result = []
        for x, g in zip(inputs, core_grads):
            if isinstance(g.type, (DisconnectedType, NullType)):
                result.append(g)
                continue
            g = next(batched)
            extra = g.ndim - x.ndim
            if extra:
                g = g.sum(axis=tuple(range(extra)))
            result.append(sum_to_shape(g, x.shape))   # batch axes x was broadcast along
        return result


def _batch_dims(batch_shapes, static, batch_ndim):
    """The broadcast batch lengths, symbolically (numpy's rule: a length 1 stretches, even to 0)."""
    out = []
    for axis in range(batch_ndim):
        dims = []
        for shape, st in zip(batch_shapes, static):
            pos = axis - batch_ndim + len(shape)
            if pos >= 0 and st[pos] != 1:
                dims.append(shape[pos])
        if not dims:
            out.append(constant(1, dtype="int64"))
            continue
        dim = dims[0]
        for d in dims[1:]:
            dim = switch(eq(dim, 1), d, dim)
        out.append(dim)
    return out


# ------------------------------------------------------------------ how nodes batch (vectorize_graph)


def _left_pad(x, ndim):
    return x if x.ndim >= ndim else DimShuffle(x.ndim, ["x"] * (ndim - x.ndim) + list(range(x.ndim)))(x)


def _as_blockwise(node, new_inputs):
    """Any op: a Blockwise whose core ranks are the node's inputs' and outputs' ranks; an op that
    batches by itself (``op.batched``, the linear-algebra ops) takes the new axes as batch axes."""
    if getattr(node.op, "batched", False):
        return node.op.make_node(*new_inputs).outputs
    signature = _ranked_signature([v.type.ndim for v in node.inputs], [v.type.ndim for v in node.outputs])
    return Blockwise(node.op, signature).make_node(*new_inputs).outputs


set_default_vectorizer(_as_blockwise)


@register_vectorizer(Elemwise)
@register_vectorizer(FusedElemwise)
def _vectorize_elemwise(op, node, *new_inputs):
    ndim = max(n.ndim for n in new_inputs) if new_inputs else 0
    return op.make_node(*[_left_pad(n, ndim) for n in new_inputs]).outputs


@register_vectorizer(DimShuffle)
def _vectorize_dimshuffle(op, node, x):
    b = x.ndim - node.inputs[0].type.ndim
    order = list(range(b)) + [d if d == "x" else d + b for d in op.new_order]
    return DimShuffle(op.input_ndim + b, order).make_node(x).outputs


@register_vectorizer(Reduce)
def _vectorize_reduce(op, node, x):
    b = x.ndim - node.inputs[0].type.ndim
    return Reduce(op.kind, [a + b for a in op.axis], op.dtype, op.acc_dtype).make_node(x).outputs


@register_vectorizer(Shape)
def _vectorize_shape(op, node, x):
    # every batch entry has the core shape: the trailing lengths, not batched
    b = x.ndim - node.inputs[0].type.ndim
    return [shape(x)[b:]] if b else [shape(x)]


@register_vectorizer(Shape_i)
def _vectorize_shape_i(op, node, x):
    return [shape_i(x, op.i + x.ndim - node.inputs[0].type.ndim)]


@register_vectorizer(Reshape)
def _vectorize_reshape(op, node, x, shp):
    if shp.ndim != 1:   # a shape that differs along the batch: per entry
        return _as_blockwise(node, [x, shp])
    b = x.ndim - node.inputs[0].type.ndim
    if not b:
        return op.make_node(x, shp).outputs
    return Reshape(op.ndim + b).make_node(x, concatenate([shape(x)[:b], shp])).outputs


@register_vectorizer(Blockwise)
def _vectorize_blockwise(op, node, *new_inputs):
    return op.make_node(*new_inputs).outputs


def vectorize(pyfunc, signature=None):
    """numpy's ``vectorize`` for a function of variables (PyTensor's ``pytensor.tensor.vectorize``):
    the returned function calls ``pyfunc`` once on core-shaped variables (every input a scalar
    without a signature) and batches the graph it returns over the leading axes of its arguments."""
    def vectorized(*args):
        args = [as_tensor_variable(a) for a in args]
        if signature is None:
            in_sig = [()] * len(args)
        else:
            in_sig, _ = parse_signature(signature)
            if len(in_sig) != len(args):
                raise TypeError("vectorize: the signature %r takes %d inputs, got %d" % (signature, len(in_sig), len(args)))
        core = [TensorType(a.type.dtype, (None,) * len(sig))() for a, sig in zip(args, in_sig)]
        result = pyfunc(*core)
        outs = list(result) if isinstance(result, (list, tuple)) else [result]
        batched = vectorize_graph([as_tensor_variable(o) for o in outs], dict(zip(core, args)))
        return type(result)(batched) if isinstance(result, (list, tuple)) else batched[0]
    return vectorized
