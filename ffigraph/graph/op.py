"""``Op``: the Theano op contract (make_node, perform, make_thunk, grad, infer_shape)."""
from __future__ import annotations

import copy
import inspect
import sys
import warnings

from ffigraph.config import config
from ffigraph.graph.basic import _op_call, set_trace, user_trace
from ffigraph.graph.utils import (PropsIdentity, TestValueError, add_tag_trace, get_variable_trace_string,
                                  user_stack, user_stacklevel)


def compute_test_value(node):
    """Set each output's ``tag.test_value`` by running the op (its ``make_thunk``: ``perform`` for
    most ops) on its inputs' test values, as PyTensor does when ``config.compute_test_value`` is on.

    An input without one is handled as the flag says: ``ignore`` skips the node, ``warn`` warns and
    skips it, ``raise`` raises ValueError naming the input, ``pdb`` opens the debugger. An error of
    the op itself (a shape mismatch, ...) propagates, naming the node and its inputs' test values.
    """
    mode = config.compute_test_value
    storage_map, compute_map = {}, {}
    for i, var in enumerate(node.inputs):
        try:
            storage_map[var] = [var.get_test_value()]
        except TestValueError:
            what = "Cannot compute test value: input %d (%s) of Op %s missing default value" % (i, var, node)
            if mode == "ignore":
                return
            if mode == "warn":
                warnings.warn(what, stacklevel=user_stacklevel())
                return
            if mode == "raise":
                raise ValueError(what + ". " + get_variable_trace_string(var)) from None
            if mode == "pdb":
                import pdb

                pdb.post_mortem(sys.exc_info()[2])
                return
            raise ValueError("config.compute_test_value=%r is not one of off, ignore, warn, raise, pdb" % (mode,))
        compute_map[var] = [True]
    # an op that works in place must not change the inputs' own test values
    for positions in (node.op.destroy_map or {}).values():
        for pos in positions:
            cell = storage_map[node.inputs[pos]]
            storage_map[node.inputs[pos]] = [copy.copy(cell[0])]
    for var in node.outputs:
        storage_map[var] = [None]
        compute_map[var] = [False]
    thunk = node.op.make_thunk(node, storage_map, compute_map, [])
    try:
        thunk()
    except Exception as err:
        where = "\nwhile computing the test value of %s (config.compute_test_value=%r) from inputs %s" % (
            node, mode, ", ".join("%s = %s" % (v, _value_summary(storage_map[v][0])) for v in node.inputs))
        if err.args and isinstance(err.args[0], str):
            err.args = (err.args[0] + where,) + err.args[1:]
        else:
            err.args = err.args + (where,)
        raise
    for var in node.outputs:
        value = storage_map[var][0]
        if value is None:
            raise ValueError("%s computed no test value for output %s" % (node.op, var))
        var.tag.test_value = value


def _value_summary(value):
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return "<%s %s>" % (dtype, tuple(shape))
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _name_outputs(op, node, name):
    """``op(..., name=...)``: a string names the output the call returns (the default output, or
    the only one); a list or tuple names the outputs in order."""
    if isinstance(name, str):
        if op.default_output is not None:
            node.outputs[op.default_output].name = name
        elif len(node.outputs) == 1:
            node.outputs[0].name = name
        else:
            raise ValueError("%s has %d outputs: name them with a list of %d names, not the string %r"
                             % (op, len(node.outputs), len(node.outputs), name))
        return
    names = list(name)
    if len(names) != len(node.outputs):
        raise ValueError("%s has %d outputs but %d names were given: %r"
                         % (op, len(node.outputs), len(names), names))
    for out, out_name in zip(node.outputs, names):
        out.name = out_name


class Op(PropsIdentity):
    """Base class of every operation.

    Subclasses implement ``make_node(*inputs) -> Apply`` and
    ``perform(node, inputs, output_storage)`` (or ``make_thunk`` for ops that
    bring their own callable, e.g. a PyCUDA kernel). ``view_map`` and
    ``destroy_map`` map an output index to the input indices it may alias or
    overwrite; outputs not listed there must be fresh memory.
    """

    __props__: tuple = None  # type: ignore[assignment]  # (PropsIdentity's: None keeps identity)
    view_map: dict = {}
    destroy_map: dict = {}
    default_output = None

    def make_node(self, *inputs):
        raise NotImplementedError("%s does not implement make_node" % type(self).__name__)

    def __call__(self, *inputs, name=None, return_list=False, **kwargs):
        """Apply the op to ``inputs`` and return its output variable (or list of them), as
        PyTensor's ``Op.__call__``: ``name`` names the returned output (a list names each output of
        a multi-output op), ``return_list=True`` always returns a list."""
        limit = config.traceback__limit
        if limit:
            # trace here the nodes make_node makes (Apply leaves them to us): fewer frames to walk
            calls = _op_call
            outer, made = calls.made, []
            calls.made = made
            try:
                node = self.make_node(*inputs, **kwargs)
            finally:
                calls.made = outer
            if made:
                trace = user_trace(limit, sys._getframe(1))
                for new in made:
                    set_trace(new, trace)
        else:
            node = self.make_node(*inputs, **kwargs)
        if name is not None:
            _name_outputs(self, node, name)
        if config.compute_test_value != "off" and user_stack(1, sys._getframe(1)) is not None:
            compute_test_value(node)  # (not for nodes a rewrite makes while compiling, as in PyTensor)
        if self.default_output is not None:
            out = node.outputs[self.default_output]
            return [out] if return_list else out
        if return_list or len(node.outputs) != 1:
            return list(node.outputs)
        return node.outputs[0]

    # so that an op's make_node can call self.add_tag_trace(node), as in Theano
    add_tag_trace = staticmethod(add_tag_trace)

    def perform(self, node, inputs, output_storage):
        raise NotImplementedError("%s has no Python implementation (perform)" % self)

    def make_thunk(self, node, storage_map, compute_map, no_recycling):
        """A zero-argument callable that reads the inputs' cells and fills the outputs'."""
        in_cells = [storage_map[v] for v in node.inputs]
        out_cells = [storage_map[v] for v in node.outputs]
        perform = self.perform

        def thunk():
            perform(node, [c[0] for c in in_cells], out_cells)
            if compute_map is not None:
                for v in node.outputs:
                    compute_map[v][0] = True

        thunk.inputs, thunk.outputs, thunk.perform = in_cells, out_cells, perform
        return thunk

    # ---- hooks filled in by later layers

    def grad(self, inputs, output_grads):
        raise NotImplementedError("%s does not define a gradient" % self)

    def L_op(self, inputs, outputs, output_grads):
        return self.grad(inputs, output_grads)

    def R_op(self, inputs, eval_points):
        raise NotImplementedError("%s does not define R_op" % self)

    def infer_shape(self, fgraph, node, input_shapes):
        """Symbolic output shapes: one tuple of int64 scalar variables per output."""
        raise NotImplementedError("%s does not implement infer_shape" % self)

    def do_constant_folding(self, fgraph, node):
        return True

    # ---- lazy evaluation (the contract linkers read: ffigraph/graph/branches.py, ffigraph/linkers/lazy.py)

    lazy_branches = None
    """Ops that choose between branches (``ifelse``) define ``lazy_branches(node)`` returning
    ``(cond_index, then_indices, else_indices)``: positions in ``node.inputs`` of the condition
    (a scalar; nonzero means "then") and of the values each branch needs. Every linker then runs a
    node whose values are only needed through one branch (transitively) only when that branch is
    taken, and runs this node after the branch; the op's ``perform`` (and ``c_code``) must read
    only the inputs of the taken branch, since the others may never have been computed. For the
    whole-graph C linker the op also gives ``c_lazy_condition(node, name)``, a C expression that
    is nonzero when the condition held in the C local ``name`` selects the then branch.
    Left None: the op is eager (every input is computed before it runs)."""


def call_infer_shape(op, fgraph, node, input_shapes):
    """Call ``infer_shape`` in PyTensor's form, or Theano's ``(node, shapes)`` form."""
    fn = op.infer_shape
    try:
        nparams = len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        nparams = 3
    if nparams == 2:
        return fn(node, input_shapes)
    return fn(fgraph, node, input_shapes)

