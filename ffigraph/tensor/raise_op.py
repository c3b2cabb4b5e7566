"""Ops that check conditions when the graph runs (PyTensor's ``pytensor.raise_op``, whose path
ffigraph.raise_op re-exports them).

``CheckAndRaise(exc_type, msg)(x, *conditions)`` is ``x`` itself (a view, no copy) when every
condition is true, and raises ``exc_type(msg)`` otherwise; ``Assert(msg)`` raises AssertionError,
and ``assert_op`` is an ``Assert`` with PyTensor's default message. The conditions are scalars (0-d
tensors), cast to bool as PyTensor casts them. As in PyTensor, a check whose output no output of
the function depends on is removed with the rest of the dead code, and a check on constant
conditions that hold is folded away; one that fails on constants raises when the function runs.

The C code tests the conditions and hands the input's memory on (not owned); a failed check is
FFG_ERR_VALUE with the message, which an exported library's C host reads as it reads any error,
and which the C linker raises as ``exc_type`` (the op's ``c_error_class``).
"""
from __future__ import annotations

from ffigraph.graph.basic import Apply, Constant, Variable
from ffigraph.graph.c_interface import COp, MethodNotDefined, c_string
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable
from ffigraph.tensor.math import neq
from ffigraph.tensor.gradient import disconnected_type
from ffigraph.tensor.type import TensorType

__all__ = ["CheckAndRaise", "Assert", "assert_op"]


class CheckAndRaise(COp, Op):
    """``x`` when every condition holds; ``exc_type(msg)`` raised otherwise."""

    __props__ = ("msg", "exc_type")
    view_map = {0: [0]}

    def __init__(self, exc_type, msg=""):
        if not (isinstance(exc_type, type) and issubclass(exc_type, Exception)):
            raise ValueError("CheckAndRaise: exc_type must be an Exception subclass, got %r" % (exc_type,))
        self.exc_type = exc_type
        self.msg = str(msg)

    def _short_msg(self):
        return self.msg if len(self.msg) <= 30 else self.msg[:27] + "..."

    def __str__(self):
        return "%s{raises=%s, msg='%s'}" % (type(self).__name__, self.exc_type.__name__, self._short_msg())

    def make_node(self, value, *conditions):
        value = value if isinstance(value, Variable) else as_tensor_variable(value)
        checked = []
        for k, condition in enumerate(conditions):
            condition = as_tensor_variable(condition)
            if condition.ndim != 0:
                raise TypeError("%s: condition %d must be a scalar (0-d), got %s with %d dimensions"
                                % (self, k, condition, condition.ndim))
            checked.append(condition if condition.dtype == "bool" else neq(condition, 0))
        return Apply(self, [value] + checked, [value.type()])

    def perform(self, node, inputs, output_storage):
        value, *conditions = inputs
        if not all(bool(c) for c in conditions):
            raise self.exc_type(self.msg)
        output_storage[0][0] = value

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]

    def connection_pattern(self, node):
        return [[True]] + [[False]] * (len(node.inputs) - 1)

    def L_op(self, inputs, outputs, output_grads):
        return [output_grads[0]] + [disconnected_type() for _ in inputs[1:]]

    def R_op(self, inputs, eval_points):
        return [eval_points[0]]

    def do_constant_folding(self, fgraph, node):
        # only a check that holds goes: a failing one must raise when the function runs
        return all(isinstance(c, Constant) and bool(c.data) for c in node.inputs[1:])

    def c_error_class(self, cls):
        """The exception a failed check of this node raises (the record says FFG_ERR_VALUE)."""
        return self.exc_type

    # ---- C
    def c_code(self, node, name, inputs, outputs, sub):
        if not isinstance(node.inputs[0].type, TensorType):
            raise MethodNotDefined("%s: C code for tensor values only, not %s" % (self, node.inputs[0].type))
        value, conditions = inputs[0], inputs[1:]
        lines = ["/* %s: %s itself when every condition holds */" % (str(self).replace("*/", "* /"), value)]
        if conditions:
            held = " && ".join("*(const uint8_t *)%s.data" % c for c in conditions)
            lines += ["if (!(%s)) {" % held,
                      '    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%%s", %s);' % (sub["err"], c_string(self.msg)),
                      "    " + sub["fail"],
                      "}"]
        lines += ["%s = %s;" % (outputs[0], value), "%s.owned = NULL;   /* the input's memory, not owned */" % outputs[0]]
        return "\n".join(lines)

    def c_code_cache_version(self):
        return (1,)


class Assert(CheckAndRaise):
    """``x`` when every condition holds; AssertionError(msg) otherwise."""

    def __init__(self, msg="PyTensor Assert failed!"):
        super().__init__(AssertionError, msg)

    def __str__(self):
        return "Assert{msg='%s'}" % self._short_msg()


assert_op = Assert()
