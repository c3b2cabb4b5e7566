"""Scalar graphs compile as graphs of 0-d tensors.

A scalar variable (``ffigraph.scalar.type``) is a 0-d slot in a compiled function: before a
function's graph is rewritten, ``as_tensor_graph`` gives it a copy in which each scalar variable
is a 0-d tensor, each scalar-op node the ``Elemwise`` of its op (a ``Composite`` node the fused
loop of it) and each ``tensor_from_scalar`` / ``scalar_from_tensor`` the variable it converts. So a
scalar graph needs no linker of its own: it fuses, runs in C under every linker, exports, and a C
host sees 0-d tensors in its slots.

The gradient of a scalar-op node is its Elemwise's, taken on 0-d tensors
(``scalar_op_gradient``, which the scalar layer calls).
"""
from __future__ import annotations

from ffigraph.graph.basic import Constant, ancestors, rebuild_graph
from ffigraph.scalar.basic import ScalarOp, set_gradient_builder
from ffigraph.scalar.composite import Composite
from ffigraph.scalar.type import ScalarType
from ffigraph.tensor.basic import (ScalarFromTensor, TensorFromScalar, as_tensor_variable, cast, constant,
                                   scalar_from_tensor, tensor_from_scalar)
from ffigraph.tensor.elemwise import Elemwise
from ffigraph.tensor.fused import FusedElemwise
from ffigraph.tensor.gradient import DisconnectedType, NullType
from ffigraph.tensor.type import TensorType


def _is_scalar(var):
    return isinstance(var.type, ScalarType)


def has_scalars(inputs, outputs):
    """Whether the graph from ``inputs`` to ``outputs`` holds a scalar variable."""
    return any(_is_scalar(v) for v in inputs) or any(_is_scalar(v) for v in ancestors(outputs, blockers=inputs))


def _tensor_form(op, inputs):
    """The outputs of scalar op ``op`` applied elementwise to the 0-d tensors ``inputs``."""
    if isinstance(op, Composite):
        return FusedElemwise(op).make_node(*inputs).outputs
    if type(op).compute is ScalarOp.compute and op.impl is None:
        raise TypeError("the scalar op %s (%s) has no elementwise form to compile: a scalar op of your own "
                        "runs only in a graph of its own (ffigraph compiles scalars as 0-d tensors)"
                        % (op, type(op).__name__))
    return Elemwise(op).make_node(*inputs).outputs


def as_tensor_graph(inputs, outputs):
    """``(inputs, outputs)`` of a copy of the graph in which every scalar variable is a 0-d tensor
    (a scalar input a new 0-d tensor input of its dtype and name); the same lists when the graph
    holds no scalar variable."""
    if not has_scalars(inputs, outputs):
        return list(inputs), list(outputs)
    memo = {}
    for var in inputs:
        memo[var] = TensorType(var.type.dtype, ())(var.name) if _is_scalar(var) else var

    def lowered(var):
        found = memo.get(var)
        if found is None:
            found = memo[var] = constant(var.data, name=var.name, dtype=var.type.dtype) \
                if isinstance(var, Constant) and _is_scalar(var) else var
        return found

    def substitute(node, new_inputs):
        new_inputs = [lowered(v) for v in new_inputs]
        op = node.op
        if isinstance(op, (TensorFromScalar, ScalarFromTensor)):
            return new_inputs
        if isinstance(op, (ScalarOp, Composite)) and all(_is_scalar(o) for o in node.outputs):
            new_outputs = []
            for old, new in zip(node.outputs, _tensor_form(op, new_inputs)):
                # (Elemwise types as the scalar op does; a cast keeps the scalar's dtype if not)
                new = new if new.type.dtype == old.type.dtype else cast(new, old.type.dtype)
                new.name = old.name
                new_outputs.append(new)
            return new_outputs
        return None   # (another op: made again when its inputs changed; only these read scalars)

    rebuild_graph(inputs, outputs, memo, substitute)
    return [memo[v] for v in inputs], [lowered(v) for v in outputs]


def scalar_op_gradient(op, inputs, outputs, output_grads):
    """The gradient of a scalar-op node: its Elemwise's on 0-d tensors (as 0-d tensors; the gradient
    machinery gives a scalar variable's gradient its type)."""
    tensors = [tensor_from_scalar(x) for x in inputs]
    elemwise = FusedElemwise(op) if isinstance(op, Composite) else Elemwise(op)
    node = elemwise.make_node(*tensors)
    grads = [g if isinstance(g.type, (DisconnectedType, NullType)) else as_tensor_variable(g)
             for g in output_grads]
    return elemwise.L_op(tensors, node.outputs, grads)


def as_scalar_gradient(wrt, g):
    """The gradient ``g`` of ``wrt`` in ``wrt``'s kind: a scalar variable's as a scalar."""
    if g is not None and _is_scalar(wrt) and isinstance(getattr(g, "type", None), TensorType):
        return scalar_from_tensor(g)
    return g


set_gradient_builder(scalar_op_gradient)
