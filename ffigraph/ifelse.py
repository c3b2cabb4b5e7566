"""``ifelse``: choose between two lists of values on a scalar condition, computing only one.

Unlike ``switch`` (elementwise, both sides computed), ``ifelse(cond, then, else)`` picks whole
values, and every linker evaluates it lazily: the nodes that only the branch not taken needs do
not run (``IfElse.lazy_branches`` is the contract, ``ffigraph/linkers/lazy.py`` the machinery).
PyTensor's ``pytensor.ifelse`` API: ``ifelse(condition, then_branch, else_branch, name=None)``
and ``IfElse(n_outs, as_view=False, name=None)``, whose node inputs are
``[condition, *then_values, *else_values]``.
"""
from __future__ import annotations

import numpy as np

from ffigraph.abi import c_element_type
from ffigraph.config import config
from ffigraph.graph.basic import Apply, Variable
from ffigraph.graph.c_interface import COp, MethodNotDefined
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable, cast, zeros_like
from ffigraph.tensor.gradient import DisconnectedType, disconnected_type
from ffigraph.tensor.type import TensorType

__all__ = ["IfElse", "ifelse"]


class IfElse(COp, Op):
    """Outputs the ``n_outs`` then-values when the condition is nonzero, else the else-values.

    Outputs are fresh copies of the values taken, so no output aliases another value (two
    outputs may be given the same branch value). ``as_view=True`` lets each output be a view of
    its then-value instead (declared in ``view_map``); else-values are still copied, as in
    PyTensor, since one output may not view two inputs.
    """

    __props__ = ("as_view", "n_outs")

    def __init__(self, n_outs, as_view=False, name=None):
        if int(n_outs) < 1:
            raise ValueError("IfElse needs at least one output, got n_outs=%r" % (n_outs,))
        self.n_outs = int(n_outs)
        self.as_view = bool(as_view)
        self.name = name
        if self.as_view:
            self.view_map = {k: [k + 1] for k in range(self.n_outs)}

    def __str__(self):
        args = [a for a in (self.name, "inplace" if self.as_view else None) if a]
        return "if{%s}" % ",".join(args)

    # ---- the graph

    def make_node(self, condition, *branches):
        n = self.n_outs
        if len(branches) != 2 * n:
            raise ValueError("IfElse(n_outs=%d) takes a condition and %d values (%d per branch), got %d values"
                             % (n, 2 * n, n, len(branches)))
        condition = as_tensor_variable(condition)
        if condition.ndim != 0:
            raise TypeError("ifelse: the condition must be a scalar (0-d), %s has %d dimensions"
                            % (condition, condition.ndim))
        if np.dtype(condition.dtype).kind not in "biuf":
            raise TypeError("ifelse: the condition must be a bool, integer or float scalar, %s is %s"
                            % (condition, condition.dtype))
        then_values = [v if isinstance(v, Variable) else as_tensor_variable(v) for v in branches[:n]]
        else_values = [v if isinstance(v, Variable) else as_tensor_variable(v) for v in branches[n:]]
        outputs = [_output_type(k, t, f)() for k, (t, f) in enumerate(zip(then_values, else_values))]
        return Apply(self, [condition] + then_values + else_values, outputs)

    def lazy_branches(self, node):
        n = self.n_outs
        return 0, tuple(range(1, 1 + n)), tuple(range(1 + n, 1 + 2 * n))

    def infer_shape(self, fgraph, node, input_shapes):
        # each output's shape is the taken branch's: an ifelse over the shape entries, except
        # where both branches share the very same entry
        n = self.n_outs
        cond = node.inputs[0]
        then_shapes, else_shapes = input_shapes[1:1 + n], input_shapes[1 + n:]
        picks = []
        for ts, fs in zip(then_shapes, else_shapes):
            for t, f in zip(ts, fs):
                if t is not f:
                    picks.append((cast(as_tensor_variable(t), "int64"), cast(as_tensor_variable(f), "int64")))
        chosen = []
        if picks:
            name = "shape" if self.name is None else "shape_" + self.name
            chosen = IfElse(len(picks), name=name)(cond, *[t for t, _ in picks], *[f for _, f in picks])
            chosen = list(chosen) if isinstance(chosen, (list, tuple)) else [chosen]
        shapes = []
        for ts, fs in zip(then_shapes, else_shapes):
            shape = []
            for t, f in zip(ts, fs):
                shape.append(t if t is f else chosen.pop(0))
            shapes.append(tuple(shape))
        return shapes

    # ---- gradients (the condition picks a side; nudging it changes nothing, as in PyTensor)

    def L_op(self, inputs, outputs, output_grads):
        n = self.n_outs
        cond = inputs[0]
        then_values, else_values = inputs[1:1 + n], inputs[1 + n:]
        connected = [k for k, g in enumerate(output_grads) if not isinstance(g.type, DisconnectedType)]
        then_grads = [disconnected_type() for _ in range(n)]
        else_grads = [disconnected_type() for _ in range(n)]
        if connected:
            grads = [output_grads[k] for k in connected]
            zeros_then = [zeros_like(then_values[k], dtype=g.dtype) for k, g in zip(connected, grads)]
            zeros_else = [zeros_like(else_values[k], dtype=g.dtype) for k, g in zip(connected, grads)]
            names = (None, None) if self.name is None else (self.name + "_grad_t", self.name + "_grad_f")
            to_then = _outputs(IfElse(len(connected), name=names[0])(cond, *grads, *zeros_else))
            to_else = _outputs(IfElse(len(connected), name=names[1])(cond, *zeros_then, *grads))
            for k, gt, gf in zip(connected, to_then, to_else):
                then_grads[k], else_grads[k] = gt, gf
        return [zeros_like(cond, dtype=config.floatX)] + then_grads + else_grads

    def R_op(self, inputs, eval_points):
        return _outputs(self(inputs[0], *eval_points[1:]))

    # ---- Python

    def perform(self, node, inputs, output_storage):
        n = self.n_outs
        take_then = bool(inputs[0])
        chosen = inputs[1:1 + n] if take_then else inputs[1 + n:]
        for k, (cell, value, var) in enumerate(zip(output_storage, chosen, node.outputs)):
            if value is None:   # a linker ran this node before the branch it needs
                raise ValueError("%s: the %s value %d was not computed" % (self, "then" if take_then else "else", k))
            cell[0] = value if (self.as_view and take_then) else var.type.copy_value(value)

    # ---- C

    def c_lazy_condition(self, node, name):
        return "*(const %s *)%s.data != 0" % (c_element_type(node.inputs[0].dtype), name)

    def c_code(self, node, name, inputs, outputs, sub):
        if not all(isinstance(v.type, TensorType) for v in node.inputs + node.outputs):
            raise MethodNotDefined("%s: C code only for tensor values" % self)
        n = self.n_outs
        then_code, else_code = [], []
        for k, (out, var) in enumerate(zip(outputs, node.outputs)):
            then_code.append(self._c_take(out, inputs[1 + k], var, sub, view=self.as_view))
            else_code.append(self._c_take(out, inputs[1 + n + k], var, sub, view=False))
        return "/* ifelse: the taken branch's values */\nif (%(cond)s) {\n%(then)s\n} else {\n%(else_)s\n}" % dict(
            cond=self.c_lazy_condition(node, inputs[0]), then="\n".join(then_code), else_="\n".join(else_code))

    @staticmethod
    def _c_take(out, value, var, sub, view):
        if view:
            return "    %s = %s;   /* a view: the memory stays %s's */\n    %s.owned = NULL;" % (out, value, value, out)
        return ("    if (ffg_copy_array(&%s, &%s, %d, sizeof(%s), %s, %s))\n        %s"
                % (out, value, var.type.ndim, c_element_type(var.type.dtype), sub["allocator"], sub["err"],
                   sub["fail"]))

    def c_code_cache_version(self):
        return (1,)


def _output_type(k, then_value, else_value):
    """The type of output ``k``: the branches' common type (PyTensor's rules: same kind of type,
    same dtype and ndim, no implicit cast; a static length only where both branches agree)."""
    t, f = then_value.type, else_value.type
    if type(t) is not type(f):
        raise TypeError("ifelse: value %d has type %s in the then branch but %s in the else branch"
                        % (k, t, f))
    if isinstance(t, TensorType):
        if t.dtype != f.dtype:
            raise TypeError("ifelse: value %d has dtype %s in the then branch but %s in the else branch; "
                            "cast one of them (ifelse does not upcast)" % (k, t.dtype, f.dtype))
        if t.ndim != f.ndim:
            raise TypeError("ifelse: value %d has %d dimensions in the then branch but %d in the else branch"
                            % (k, t.ndim, f.ndim))
        return t.clone(shape=tuple(a if a == b else None for a, b in zip(t.shape, f.shape)))
    if t != f:
        raise TypeError("ifelse: value %d has type %s in the then branch but %s in the else branch" % (k, t, f))
    return t


def _outputs(result):
    return list(result) if isinstance(result, (list, tuple)) else [result]


def ifelse(condition, then_branch, else_branch, name=None):
    """``then_branch`` when the scalar ``condition`` is nonzero, else ``else_branch``; only the
    branch taken is computed.

    Each branch is one value or a list/tuple of values of the same length, with matching dtypes
    and numbers of dimensions; the result is one variable, or a list (tuple) of them.
    """
    as_sequence = isinstance(then_branch, (list, tuple))
    then_list = list(then_branch) if as_sequence else [then_branch]
    else_list = list(else_branch) if isinstance(else_branch, (list, tuple)) else [else_branch]
    if len(then_list) != len(else_list):
        raise ValueError("ifelse: the then branch has %d values but the else branch has %d; they must match"
                         % (len(then_list), len(else_list)))
    if not then_list:
        raise ValueError("ifelse: the branches hold no values")
    outs = _outputs(IfElse(len(then_list), name=name)(condition, *then_list, *else_list))
    if not as_sequence:
        return outs[0]
    return tuple(outs) if isinstance(then_branch, tuple) else outs
