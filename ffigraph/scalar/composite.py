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
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.utils import PropsIdentity

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


class Composite(PropsIdentity):
    __props__ = ("in_dtypes", "steps", "outputs")

    def __init__(self, in_dtypes, steps, outputs):
        self.in_dtypes = tuple(np.dtype(d).name for d in in_dtypes)
        self.steps = tuple((sop, tuple(args), np.dtype(dt).name) for sop, args, dt in steps)
        self.outputs = tuple(int(j) for j in outputs)
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
        return len(self.outputs)

    def out_dtypes(self):
        return [self.steps[j][2] for j in self.outputs]

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
        return [tuple(sorted(deps[j])) for j in self.outputs]

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
        return [values[j] for j in self.outputs]

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
        return [_cut(texts[j], limit) for j in self.outputs]

    def __str__(self):
        body = ", ".join(self.expressions(TEXT_LIMIT))
        room = TEXT_LIMIT - len("Composite{}")
        return "Composite{%s}" % _cut(body, room)

    def inner_debugprint_lines(self):
        lines = []
        for j, (sop, args, dt) in enumerate(self.steps):
            names = ["i%d" % r[1] if r[0] == "in" else "t%d" % r[1] if r[0] == "step"
                     else repr(const_value(r).item()) for r in args]
            mark = "  -> output %d" % self.outputs.index(j) if j in self.outputs else ""
            lines.append("t%d = %s(%s)  [%s]%s" % (j, sop.name, ", ".join(names), dt, mark))
        return lines

    def restricted(self, k):
        """(Composite computing only output ``k``, the indices of the inputs it reads)."""
        return self.restricted_to([k])

    def restricted_to(self, ks):
        """(Composite computing only the outputs ``ks``, in that order, the sorted indices of the
        inputs they read)."""
        needed, stack = set(), [self.outputs[k] for k in ks]
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
        comp = Composite([self.in_dtypes[i] for i in inputs], steps, [step_map[self.outputs[k]] for k in ks])
        return comp, tuple(inputs)
