"""``Print``: an identity op that prints its value each time it is computed (Theano's Print).

>>> import numpy as np, ffigraph, ffigraph.tensor as T
>>> from ffigraph.printing import Print
>>> x = T.dvector("x")
>>> f = ffigraph.function([x], Print("x is")(x) * 2)
>>> f(np.array([1.0, 2.0]))            # doctest: +SKIP
x is __str__ = [1. 2.]
array([2., 4.])

The output is the input itself (``view_map = {0: [0]}``); printing is a side
effect, so the rewrites keep every Print: it is never constant-folded
(``do_constant_folding`` is False), never merged with an equal Print on the
same input (``has_side_effects``, which the merge rewrite honours) and never
fused (it is not elementwise). A Print whose value nothing uses is not part of
the compiled graph, as in Theano: put it on the path to an output.

Under the C linkers it runs in Python. It has no C code, since printing means
calling back into the host, and a generated library calls nothing outside
itself. ``'c|py'`` and ``'cvm'`` (which then builds one library per node instead of one
for the whole graph) run it through ``perform``, between the nodes' C calls.
The strict ``'c'`` linker refuses a graph holding one, naming the Print node,
and so does exporting such a function.
"""
from __future__ import annotations

from ffigraph.graph.basic import Apply, Variable
from ffigraph.graph.op import Op

__all__ = ["Print"]


def _print_fn(op, xin):
    """The default ``global_fn``: one line per attribute, ``<message> <attr> = <value>``."""
    for attr in op.attrs:
        value = getattr(xin, attr)
        if callable(value):
            value = value()
        print(op.message, attr, "=", value)


class Print(Op):
    """Identity op that prints ``message`` and attributes of its value when it runs.

    message: text put before each printed line.
    attrs: names of attributes (or methods, which are called) of the value to
    print, each on its own line: ``("__str__",)`` prints the value,
    ``("shape", "dtype")`` its shape and dtype.
    global_fn: ``global_fn(op, value)`` does the printing; the default prints
    ``message attr = value`` to ``sys.stdout`` for each attribute.

    ``Print(message)(x)`` returns a variable equal to ``x``; use it in place of
    ``x`` so that it is computed. Gradients pass through unchanged.
    """

    __props__ = ("message", "attrs", "global_fn")
    view_map = {0: [0]}
    has_side_effects = True   # the merge rewrite keeps two equal Prints of one value apart

    def __init__(self, message="", attrs=("__str__",), global_fn=_print_fn):
        if isinstance(attrs, str):
            attrs = (attrs,)
        self.message = message
        self.attrs = tuple(attrs)   # hashable, since it is a prop
        self.global_fn = global_fn

    def make_node(self, xin):
        if not isinstance(xin, Variable):
            from ffigraph.tensor.basic import as_tensor_variable

            xin = as_tensor_variable(xin)
        return Apply(self, [xin], [xin.type()])

    def perform(self, node, inputs, output_storage):
        xin = inputs[0]
        output_storage[0][0] = xin
        self.global_fn(self, xin)

    def grad(self, inputs, output_grads):
        return list(output_grads)

    def R_op(self, inputs, eval_points):
        return list(eval_points)

    def infer_shape(self, fgraph, node, input_shapes):
        return list(input_shapes)

    def do_constant_folding(self, fgraph, node):
        return False   # folding would print once, at compile time, instead of at every call

    def __setstate__(self, state):
        state.setdefault("global_fn", _print_fn)
        self.__dict__.update(state)

    def __str__(self):
        extra = "" if self.attrs == ("__str__",) else ", attrs=%r" % (self.attrs,)
        return "Print{message=%r%s}" % (self.message, extra)
