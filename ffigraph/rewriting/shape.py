"""Shape rewrites: ``Shape(x)`` and ``Shape_i(x)`` computed without computing ``x``.

``x.shape`` of a computed ``x`` becomes the shape built from the ``infer_shape``
of the ops that compute ``x`` (what ``ffigraph.tensor.inferred_shape`` builds),
so the graph no longer needs ``x``'s values; a fully static shape becomes a
constant. When ``x`` is computed anyway (something other than a shape read
uses it), its shape is read from it instead: that is cheaper than the
inferred expression. Where an op has no ``infer_shape``, the shape stops there as a
``Shape_i`` of that op's output, so the rewrite still goes as far as it can.

The shapes are those the values have whenever the original graph runs: an
elementwise op's length-1 axes stretch at run time (also to 0) exactly as the
op does. What is dropped are the run-time checks of the ops no longer computed
(e.g. two elementwise inputs whose lengths do not broadcast raise in the
original graph; their shape expression does not), as in PyTensor.
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.generic_ops import Shape, Shape_i
from ffigraph.graph.basic import Constant
from ffigraph.graph.op import call_infer_shape
from ffigraph.graph.rewriting import node_rewriter
from ffigraph.rewriting.groups import register_canonicalize
from ffigraph.tensor.basic import as_tensor_variable, cast, constant, stack
from ffigraph.tensor.shapes import shape_i
from ffigraph.tensor.type import TensorType


def _is_tensor(var):
    return isinstance(var.type, TensorType)


def _as_size(s):
    """One entry of an inferred shape as a 0-d int64 variable, or None if it is not one."""
    try:
        s = as_tensor_variable(s) if not hasattr(s, "type") else s
    except (TypeError, ValueError):
        return None
    if not _is_tensor(s) or s.ndim != 0 or np.dtype(s.dtype).kind not in "iu":
        return None
    return cast(s, "int64")


def _leaf_shape(var):
    """The shape of ``var`` without looking at how it is computed: static sizes, else Shape_i."""
    return tuple(shape_i(var, i) for i in range(var.ndim))


def inferred_shape_of(var, fgraph=None):
    """The shape of ``var`` (a tuple of 0-d int64 variables) built from ``infer_shape``, or None.

    Like ``ffigraph.tensor.shapes.inferred_shape``, but iterative (deep graphs
    do not hit the recursion limit) and partial: a variable whose op has no
    ``infer_shape`` (or whose ``infer_shape`` fails) keeps ``Shape_i`` of itself,
    while the ops below it are still looked through. Returns None when ``var``
    itself is not computed by an op with a usable ``infer_shape``.
    """
    memo = {}
    failed = set()
    stack_ = [var]
    while stack_:
        v = stack_[-1]
        if v in memo:
            stack_.pop()
            continue
        node = v.owner
        if node is None or v in failed or (v is not var and _static_shape(v) is not None):
            memo[v] = _leaf_shape(v)  # a fully static shape needs nothing of the graph above
            stack_.pop()
            continue
        pending = [i for i in node.inputs if _is_tensor(i) and i not in memo]
        if pending:
            stack_.extend(pending)
            continue
        stack_.pop()
        in_shapes = [memo[i] if _is_tensor(i) else None for i in node.inputs]
        shapes = _call_infer_shape(fgraph, node, in_shapes)
        if shapes is None:
            failed.add(v)
            memo[v] = _leaf_shape(v)
            for o in node.outputs:
                if _is_tensor(o):
                    memo.setdefault(o, _leaf_shape(o))
            continue
        for o, shp in zip(node.outputs, shapes):
            memo[o] = shp
    if var in failed or var.owner is None:
        return None
    return memo[var]


def _call_infer_shape(fgraph, node, in_shapes):
    """The outputs' shapes as tuples of 0-d int64 variables, or None when the op cannot say."""
    if getattr(node.op, "infer_shape", None) is None:
        return None
    try:
        shapes = call_infer_shape(node.op, fgraph, node, in_shapes)
    except Exception:  # noqa: BLE001 - NotImplementedError and ops that cannot handle these inputs
        return None
    if shapes is None or len(shapes) != len(node.outputs):
        return None
    out = []
    for o, shp in zip(node.outputs, shapes):
        if not _is_tensor(o):
            out.append(None)
            continue
        if shp is None or len(shp) != o.ndim:
            return None
        sizes = []
        for k, s in enumerate(shp):
            static = o.type.shape[k]
            if static is not None:
                sizes.append(constant(static, dtype="int64"))
                continue
            s = _as_size(s)
            if s is None:
                return None
            sizes.append(s)
        out.append(tuple(sizes))
    return out


def _needs_value_of(new_vars, x, fgraph):
    """True when computing ``new_vars`` would compute ``x`` (or its node): then nothing is gained.

    Only the nodes the rewrite has just built are walked: a variable already in
    the graph that ``infer_shape`` hands back is an input or output of an op
    that computes ``x``, so the only ones to refuse are the outputs of ``x.owner``.
    """
    forbidden = set(x.owner.outputs) if x.owner is not None else {x}
    seen = set()
    todo = list(new_vars)
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in forbidden:
            return True
        if v in fgraph.variables or v.owner is None:
            continue
        todo.extend(v.owner.inputs)
    return False


def _value_needed(fgraph, x):
    """True when something other than a shape read uses ``x``: it is computed anyway, and
    reading its shape is cheaper than the inferred expression (and keeps the op's checks)."""
    for client, _ in fgraph.clients.get(x, ()):
        if client == "output" or not isinstance(client.op, (Shape, Shape_i)):
            return True
    return False


def _static_shape(var):
    if _is_tensor(var) and None not in var.type.shape:
        return tuple(var.type.shape)
    return None


@node_rewriter([Shape], name="local_shape_to_inferred")
def local_shape_to_inferred(fgraph, node):
    """Shape(x) -> a constant when x's static shape is fully known, else x's inferred shape."""
    (x,) = node.inputs
    out = node.outputs[0]
    if not _is_tensor(x):
        return None
    static = _static_shape(x)
    if static is not None:
        return [constant(np.asarray(static, dtype=np.int64).reshape(len(static)))]
    if _value_needed(fgraph, x):
        return None
    shp = inferred_shape_of(x, fgraph)
    if shp is None:
        return None
    if all(isinstance(s, Constant) for s in shp):
        new = constant(np.asarray([int(s.data) for s in shp], dtype=np.int64).reshape(len(shp)))
    else:
        new = stack(list(shp))
    if out.type.convert_variable(new) is None or _needs_value_of([new], x, fgraph):
        return None
    return [new]


@node_rewriter([Shape_i], name="local_shape_i_to_inferred")
def local_shape_i_to_inferred(fgraph, node):
    """Shape_i(i)(x) -> a constant when x's length i is static, else entry i of x's inferred shape."""
    (x,) = node.inputs
    i = node.op.i
    if not _is_tensor(x) or not 0 <= i < x.ndim:
        return None
    if x.type.shape[i] is not None:
        return [constant(x.type.shape[i], dtype="int64")]
    if _value_needed(fgraph, x):
        return None
    shp = inferred_shape_of(x, fgraph)
    if shp is None:
        return None
    new = shp[i]
    if new.owner is not None and isinstance(new.owner.op, Shape_i) and new.owner.inputs[0] is x \
            and new.owner.op.i == i:
        return None  # nothing better than itself
    if node.outputs[0].type.convert_variable(new) is None or _needs_value_of([new], x, fgraph):
        return None
    return [new]


register_canonicalize(local_shape_to_inferred)
register_canonicalize(local_shape_i_to_inferred)
