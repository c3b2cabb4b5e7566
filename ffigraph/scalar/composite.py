"""``Composite``: a straight-line program of scalar ops with several outputs.

Fusion turns a group of elementwise nodes into one Composite; the fused
loop evaluates it once per element (or per block of elements). Each step is
``(scalar_op, args, out_dtype)`` where an arg is a reference:

  ("in", k)                 the k-th input of the fused node;
  ("step", j)               the value of an earlier step;
  ("const", dtype, bytes)   a scalar constant (bytes keep the exact value, NaN included).

Everything is a tuple, so two Composites with the same program are equal
and hash alike: merge and the compile cache see them as one.

A step read by several others is still one step: the program is a DAG, and so
are its evaluation and its C. Its text (``str``, which names the fused node in
messages and listings) is the expression tree, which can be exponentially
longer than the program, so it is a label cut at ``TEXT_LIMIT`` characters and
built without ever writing the whole tree; ``inner_debugprint_lines`` lists
the program itself, a line per step.

PyTensor's form makes one from a graph of scalar variables: ``Composite([x, y], [x + y * 2])``
(a nested Composite's steps are inlined). A Composite is then an op on scalar variables
(``comp(a, b)``), ``inputs`` and ``outputs`` are scalar variables computing its program, and
``Elemwise``-like use on tensors is ``FusedElemwise(comp)`` (what fusion makes).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply, Constant, Variable, io_toposort
from ffigraph.graph.op import Op
from ffigraph.scalar.basic import Cast, ScalarOp
from ffigraph.scalar.type import ScalarType, as_scalar, get_scalar_type

_INFIX = {"add": "+", "sub": "-", "mul": "*", "true_div": "/", "int_div": "//", "mod": "%", "pow": "**",
          "eq": "==", "neq": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "&", "or": "|",
          "xor": "^"}

TEXT_LIMIT = 200   # characters of a Composite's text: enough to recognise it, short in any message


def const_ref(value):
    value = np.asarray(value)
    if value.size != 1:
        raise ValueError("a Composite constant must be a scalar, got shape %s" % (value.shape,))
    value = value.reshape(())
    return ("const", value.dtype.name, value.tobytes())


def const_value(ref):
    return np.frombuffer(ref[2], dtype=ref[1]).reshape(())


def _cut(text, limit):
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _program(inputs, outputs):
    """(input dtypes, steps, output steps) of the scalar graph from ``inputs`` to ``outputs``."""
    for k, var in enumerate(inputs):
        if not isinstance(var, Variable) or not isinstance(var.type, ScalarType) or isinstance(var, Constant):
            raise TypeError("Composite: input %d (%r) must be a scalar variable (ffigraph.scalar: float64('x'), ...)"
                            % (k, var))
    refs = {var: ("in", k) for k, var in enumerate(inputs)}
    steps = []

    def ref(var):
        found = refs.get(var)
        if found is None:
            if not isinstance(var.type, ScalarType):
                raise TypeError("The fgraph of Composite must be exclusively composed of scalar operations; %s has "
                                "type %s" % (var, var.type))
            if not isinstance(var, Constant):
                raise TypeError("Composite: %s is neither an input nor a scalar constant; list it in the inputs"
                                % (var,))
            found = refs[var] = const_ref(var.data)
        return found

    for node in io_toposort(inputs, outputs):
        op = node.op
        args = [ref(v) for v in node.inputs]
        if isinstance(op, Composite):   # inlined: its steps, reading this node's inputs
            first = len(steps)
            for sop, inner_args, dt in op.steps:
                steps.append((sop, [args[r[1]] if r[0] == "in" else ("step", first + r[1]) if r[0] == "step"
                                    else r for r in inner_args], dt))
            for out, j in zip(node.outputs, op.output_steps):
                refs[out] = ("step", first + j)
            continue
        if not isinstance(op, ScalarOp) or len(node.outputs) != 1 or not isinstance(node.outputs[0].type, ScalarType):
            raise TypeError("The fgraph of Composite must be exclusively composed of scalar operations; %s "
                            "(op %s) is not one" % (node, op))
        steps.append((op, args, node.outputs[0].type.dtype))
        refs[node.outputs[0]] = ("step", len(steps) - 1)
    output_steps = []
    for k, var in enumerate(outputs):
        if not isinstance(var, Variable) or not isinstance(var.type, ScalarType):
            raise TypeError("The fgraph of Composite must be exclusively composed of scalar operations; output "
                            "%d (%r) is not a scalar variable" % (k, var))
        r = ref(var)
        if r[0] != "step":   # an input or a constant as an output: a step that copies it
            steps.append((Cast(var.type.dtype), [r], var.type.dtype))
            r = ("step", len(steps) - 1)
        output_steps.append(r[1])
    return [v.type.dtype for v in inputs], steps, output_steps


class Composite(Op):
    """A straight-line program of scalar ops (see the module's text): ``Composite(in_dtypes, steps,
    output_steps)``, or PyTensor's ``Composite(inputs, outputs, name=None)`` from scalar variables."""

    __props__ = ("in_dtypes", "steps", "output_steps")

    def __init__(self, in_dtypes, steps, outputs=None, name=None):
        if outputs is None or (isinstance(steps, (list, tuple)) and any(isinstance(v, Variable) for v in steps)) \
                or isinstance(steps, Variable):
            # PyTensor's form: Composite(inputs, outputs)
            graph_outputs = [steps] if isinstance(steps, Variable) else list(steps)
            in_dtypes, steps, outputs = _program(list(in_dtypes), graph_outputs)
        self._init_program(in_dtypes, steps, outputs)
        if name is not None:
            self.name = name

    def _init_program(self, in_dtypes, steps, outputs):
        self.in_dtypes = tuple(np.dtype(d).name for d in in_dtypes)
        self.steps = tuple((sop, tuple(args), np.dtype(dt).name) for sop, args, dt in steps)
        self.output_steps = tuple(int(j) for j in outputs)
        for j, (sop, args, _) in enumerate(self.steps):
            for ref in args:
                if ref[0] == "step" and not 0 <= ref[1] < j:
                    raise ValueError("step %d of a Composite reads step %r, which is not earlier" % (j, ref[1]))
                if ref[0] == "in" and not 0 <= ref[1] < len(self.in_dtypes):
                    raise ValueError("step %d of a Composite reads a missing input %r" % (j, ref[1]))
        self.name = "composite"

    @property
    def nin(self):
        return len(self.in_dtypes)

    @property
    def nout(self):
        return len(self.output_steps)

    def out_dtypes(self):
        return [self.steps[j][2] for j in self.output_steps]

    def ref_dtype(self, ref):
        if ref[0] == "in":
            return self.in_dtypes[ref[1]]
        if ref[0] == "step":
            return self.steps[ref[1]][2]
        return ref[1]

    def input_dependencies(self):
        """For each output, the sorted input indices its value depends on."""
        deps = []
        for sop, args, _ in self.steps:
            d = set()
            for ref in args:
                if ref[0] == "in":
                    d.add(ref[1])
                elif ref[0] == "step":
                    d |= deps[ref[1]]
            deps.append(d)
        return [tuple(sorted(deps[j])) for j in self.output_steps]

    # ---- as an op on scalar variables (PyTensor's)

    def make_node(self, *inputs):
        if len(inputs) != self.nin:
            raise TypeError("%s takes %d inputs, got %d" % (self, self.nin, len(inputs)))
        inputs = [as_scalar(x) for x in inputs]
        given = tuple(x.type.dtype for x in inputs)
        if given != self.in_dtypes:
            raise TypeError("%s takes inputs of dtypes (%s), got (%s)"
                            % (self, ", ".join(self.in_dtypes), ", ".join(given)))
        return Apply(self, inputs, [get_scalar_type(d)() for d in self.out_dtypes()])

    def perform(self, node, inputs, output_storage):
        results = self.compute([np.asarray(x) for x in inputs])
        for cell, out, value in zip(output_storage, node.outputs, results):
            cell[0] = out.type.numpy_dtype.type(np.asarray(value)[()])

    def infer_shape(self, fgraph, node, input_shapes):
        return [() for _ in node.outputs]

    def _graph(self):
        """Scalar variables computing the program: (inputs, outputs), made once."""
        made = self.__dict__.get("_made_graph")
        if made is None:
            made = self._made_graph = self._make_graph()
        return made

    def _make_graph(self):
        inputs = [get_scalar_type(d)("i%d" % k) for k, d in enumerate(self.in_dtypes)]
        values = []
        for sop, args, dt in self.steps:
            operands = [inputs[r[1]] if r[0] == "in" else values[r[1]] if r[0] == "step"
                        else get_scalar_type(r[1]).make_constant(const_value(r)) for r in args]
            node = Apply(sop, operands, [get_scalar_type(dt)()])
            values.append(node.outputs[0])
        return inputs, [values[j] for j in self.output_steps]

    @property
    def inputs(self):
        return self._graph()[0]

    @property
    def outputs(self):
        return self._graph()[1]

    # ---- evaluation with numpy (the reference semantics: each step as its Elemwise would run)

    def compute(self, inputs):
        values = []

        def get(ref):
            if ref[0] == "in":
                return inputs[ref[1]]
            if ref[0] == "step":
                return values[ref[1]]
            return const_value(ref)

        for sop, args, dt in self.steps:
            values.append(sop.compute([get(r) for r in args], np.dtype(dt)))
        return [values[j] for j in self.output_steps]

    # ---- text

    def _expressions(self, limit):
        """Each step's expression, cut to ``limit + 1`` characters (so a cut one is still too
        long): a shared step's text is copied into each reader's, and kept whole these copies
        would double with every level of sharing."""
        texts = []
        for sop, args, _ in self.steps:
            parts = ["i%d" % r[1] if r[0] == "in" else texts[r[1]] if r[0] == "step"
                     else repr(const_value(r).item()) for r in args]
            if sop.name in _INFIX and len(parts) == 2:
                text = "(%s %s %s)" % (parts[0], _INFIX[sop.name], parts[1])
            else:
                text = "%s(%s)" % (sop.name, ", ".join(parts))
            texts.append(text[:limit + 1])
        return texts

    def expressions(self, limit=TEXT_LIMIT):
        """The expression of each output, each at most ``limit`` characters (a longer one cut, ending
        in ``...``)."""
        texts = self._expressions(limit)
        return [_cut(texts[j], limit) for j in self.output_steps]

    def __str__(self):
        body = ", ".join(self.expressions(TEXT_LIMIT))
        room = TEXT_LIMIT - len("Composite{}")
        return "Composite{%s}" % _cut(body, room)

    def inner_debugprint_lines(self):
        lines = []
        for j, (sop, args, dt) in enumerate(self.steps):
            names = ["i%d" % r[1] if r[0] == "in" else "t%d" % r[1] if r[0] == "step"
                     else repr(const_value(r).item()) for r in args]
            mark = "  -> output %d" % self.output_steps.index(j) if j in self.output_steps else ""
            lines.append("t%d = %s(%s)  [%s]%s" % (j, sop.name, ", ".join(names), dt, mark))
        return lines

    def restricted(self, k):
        """(Composite computing only output ``k``, the indices of the inputs it reads)."""
        return self.restricted_to([k])

    def restricted_to(self, ks):
        """(Composite computing only the outputs ``ks``, in that order, the sorted indices of the
        inputs they read)."""
        needed, stack = set(), [self.output_steps[k] for k in ks]
        while stack:
            j = stack.pop()
            if j in needed:
                continue
            needed.add(j)
            stack += [r[1] for r in self.steps[j][1] if r[0] == "step"]
        deps = self.input_dependencies()
        inputs = sorted(set().union(*[deps[k] for k in ks]))
        in_map = {old: new for new, old in enumerate(inputs)}
        step_map, steps = {}, []
        for j in sorted(needed):
            sop, args, dt = self.steps[j]
            args = [("in", in_map[r[1]]) if r[0] == "in" else ("step", step_map[r[1]]) if r[0] == "step" else r
                    for r in args]
            step_map[j] = len(steps)
            steps.append((sop, args, dt))
        comp = Composite([self.in_dtypes[i] for i in inputs], steps, [step_map[self.output_steps[k]] for k in ks])
        return comp, tuple(inputs)
