"""``Op``: the Theano op contract (make_node, perform, make_thunk, grad, infer_shape)."""
from __future__ import annotations

import inspect

from ffigraph.graph.utils import PropsIdentity


class Op(PropsIdentity):
    """Base class of every operation.

    Subclasses implement ``make_node(*inputs) -> Apply`` and
    ``perform(node, inputs, output_storage)`` (or ``make_thunk`` for ops that
    bring their own callable, e.g. a PyCUDA kernel). ``view_map`` and
    ``destroy_map`` map an output index to the input indices it may alias or
    overwrite; outputs not listed there must be fresh memory.
    """

    __props__ = None
    view_map: dict = {}
    destroy_map: dict = {}
    default_output = None

    def make_node(self, *inputs):
        raise NotImplementedError("%s does not implement make_node" % type(self).__name__)

    def __call__(self, *inputs, **kwargs):
        node = self.make_node(*inputs, **kwargs)
        if self.default_output is not None:
            return node.outputs[self.default_output]
        return node.outputs[0] if len(node.outputs) == 1 else node.outputs

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

