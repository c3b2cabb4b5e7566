"""The ``Scan`` op: a loop whose body is a graph of its own (the inner graph).

One node runs ``n_steps`` steps. At step t the inner graph reads sequence rows,
earlier values of the recurrent outputs (their taps) and the non-sequences, and
computes the new values; the node returns each recurrent output's trace (or only
its final value) and each nit-sot output's trace. ``ScanInfo`` (utils.py) gives
the layout of the inputs and outputs.

``perform`` is the reference loop, in Python. Under the C linkers the loop and
its inner graph are compiled into the same library (scan_c.py), with no Python
per step. The inner graph is rewritten with the outer function's mode when a
function is compiled (``prepare_inner``), never while the user builds graphs.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.fg import FunctionGraph
from ffigraph.graph.op import Op
from ffigraph.scan.utils import ScanInfo, info_counts
from ffigraph.tensor import TensorType, as_tensor_variable


def _row_type(var_type):
    """The type of one row of an array of ``var_type``."""
    return TensorType(var_type.dtype, var_type.shape[1:])


def _stacked_type(row_type):
    """The type of rows of ``row_type`` stacked along a new first axis of unknown length."""
    return TensorType(row_type.dtype, (None,) + tuple(row_type.shape))


class Scan(Op):
    """A loop over an inner graph; see the module docstring and ``ScanInfo``.

    Two Scan ops are equal only when they are the same object: their inner graphs
    are theirs alone (rewrites replace a Scan node by a new one, never edit one).
    """

    __props__ = None

    def __init__(self, inner_inputs, inner_outputs, info, name=None, mode=None):
        if not isinstance(info, ScanInfo):
            raise TypeError("Scan: info must be a ScanInfo, got %r" % (info,))
        n_seq_in, n_rec_in = info_counts(info)
        n_rec = len(info.rec_taps)
        expected_in = n_seq_in + n_rec_in + info.n_non_seqs
        expected_out = n_rec + info.n_nit_sot + (1 if info.as_while else 0)
        if len(inner_inputs) != expected_in or len(inner_outputs) != expected_out:
            raise ValueError("Scan: the inner graph has %d inputs and %d outputs; its info asks for %d and %d"
                             % (len(inner_inputs), len(inner_outputs), expected_in, expected_out))
        if len(info.rec_last) != n_rec:
            raise ValueError("Scan: rec_last needs one flag per recurrent output")
        for taps, last in zip(info.rec_taps, info.rec_last):
            if not taps or any(t >= 0 for t in taps) or list(taps) != sorted(set(taps)):
                raise ValueError("Scan: recurrent taps must be distinct negative integers in ascending "
                                 "order, got %r" % (taps,))
            if last and tuple(taps) != (-1,):
                raise ValueError("Scan: an output that keeps only its final value has the one tap -1")
        for taps in info.seq_taps:
            if not taps or list(taps) != sorted(set(taps)):
                raise ValueError("Scan: sequence taps must be distinct integers in ascending order, got %r"
                                 % (taps,))
        self.fgraph = FunctionGraph(inner_inputs, inner_outputs, clone=True)
        self.inner_inputs = self.fgraph.inputs
        self.inner_outputs = self.fgraph.outputs
        self.info = info
        self.name = name
        self.mode = mode
        rec_in = self.inner_inputs[n_seq_in:n_seq_in + n_rec_in]
        k = 0
        for j, taps in enumerate(info.rec_taps):
            out_type = self.inner_outputs[j].type
            for _ in taps:
                in_type = rec_in[k].type
                if in_type.dtype != out_type.dtype or in_type.ndim != out_type.ndim:
                    raise TypeError(
                        "scan%s: the step function's output %d is %s (dtype %s, %d dimensions), but its "
                        "initial state (outputs_info) gives %s (dtype %s, %d dimensions); they must match: "
                        "cast the initial state or the output" % (
                            self._label(), j, self.inner_outputs[j], out_type.dtype, out_type.ndim,
                            rec_in[k], in_type.dtype, in_type.ndim))
                k += 1
        if info.as_while:
            cond = self.inner_outputs[-1]
            if cond.type.ndim != 0:
                raise TypeError("scan%s: the until condition must be a scalar" % self._label())
        self._prepared = None       # (inner FunctionGraph after the mode's rewrites, linker kind)
        self._inner_thunk = None    # (key, thunk, input cells, output cells) for perform

    def remade(self, inner_inputs, inner_outputs, info=None, canonical=False):
        """A new Scan like this one (name, mode, what its builder vouched for) over another body.
        ``canonical``: the body is already in canonical form (see scan_canonicalize_inner)."""
        op = Scan(inner_inputs, inner_outputs, self.info if info is None else info, name=self.name, mode=self.mode)
        op.accumulators_fit = self.accumulators_fit
        op.inner_canonical = canonical
        return op

    # Set by the gradient's builder: each rec_last accumulator of this loop adds a term of exactly
    # its own shape at every step (no broadcasting), so its sum may be taken after the loop.
    accumulators_fit = False
    inner_canonical = False

    def _label(self):
        return " %r" % self.name if self.name else ""

    def __str__(self):
        return "Scan{%s}" % (self.name or "scan_fn")

    # ---- the outer node

    def make_node(self, n_steps, *inputs):
        info = self.info
        n_seqs, n_rec = len(info.seq_taps), len(info.rec_taps)
        expected = n_seqs + n_rec + info.n_non_seqs
        if len(inputs) != expected:
            raise ValueError("scan%s: expected n_steps and %d inputs, got %d" % (self._label(), expected, len(inputs)))
        n_steps = as_tensor_variable(n_steps)
        if n_steps.ndim != 0 or not n_steps.dtype.startswith(("int", "uint")):
            raise TypeError("scan%s: n_steps must be an integer scalar, got %s (%s)"
                            % (self._label(), n_steps, n_steps.type))
        if n_steps.dtype != "int64":
            n_steps = n_steps.astype("int64")
        inputs = [as_tensor_variable(v) for v in inputs]
        n_seq_in, n_rec_in = info_counts(info)
        checked, k = [], 0
        for s, taps in enumerate(info.seq_taps):
            seq, inner = inputs[s], self.inner_inputs[k]
            if seq.ndim != inner.type.ndim + 1 or seq.dtype != inner.type.dtype:
                raise TypeError("scan%s: sequence %d is %s (%s); its step slices need %s with one more dimension"
                                % (self._label(), s, seq, seq.type, inner.type))
            checked.append(seq)
            k += len(taps)
        for j, taps in enumerate(info.rec_taps):
            init, inner = inputs[n_seqs + j], self.inner_inputs[k]
            if init.ndim != inner.type.ndim + 1 or init.dtype != inner.type.dtype:
                raise TypeError("scan%s: initial state %d is %s (%s); the step function reads it as %s rows"
                                % (self._label(), j, init, init.type, inner.type))
            checked.append(init)
            k += len(taps)
        for m in range(info.n_non_seqs):
            value, inner = inputs[n_seqs + n_rec + m], self.inner_inputs[n_seq_in + n_rec_in + m]
            try:
                value = inner.type.filter_variable(value)
            except TypeError as err:
                raise TypeError("scan%s: non-sequence %d is %s (%s), the step function expects %s: %s"
                                % (self._label(), m, value, value.type, inner.type, err)) from None
            checked.append(value)
        outputs = []
        for j, last in enumerate(info.rec_last):
            row = self._recurrent_row_type(j)
            outputs.append(row() if last else _stacked_type(row)())
        for k in range(info.n_nit_sot):
            outputs.append(_stacked_type(self.inner_outputs[n_rec + k].type)())
        return Apply(self, [n_steps] + checked, outputs)

    def _recurrent_row_type(self, j):
        """The type of one value of recurrent output j (as its initial rows give it)."""
        n_seq_in, _ = info_counts(self.info)
        first = n_seq_in + sum(len(t) for t in self.info.rec_taps[:j])
        return self.inner_inputs[first].type

    def outer_groups(self, node_inputs):
        """(n_steps, sequences, initial states, non-sequences) of a node's input list."""
        n_seqs, n_rec = len(self.info.seq_taps), len(self.info.rec_taps)
        return (node_inputs[0], node_inputs[1:1 + n_seqs], node_inputs[1 + n_seqs:1 + n_seqs + n_rec],
                node_inputs[1 + n_seqs + n_rec:])

    def connection_pattern(self, node):
        """Per outer input, per outer output: whether the output depends on it (through any number
        of steps). n_steps only sets lengths: connected to nothing."""
        from ffigraph.graph.basic import ancestors

        info = self.info
        n_seq_in, n_rec_in = info_counts(info)
        n_rec = len(info.rec_taps)
        inner_in = self.inner_inputs
        feeds = [set(ancestors([out])) for out in self.inner_outputs[:n_rec + info.n_nit_sot]]

        def reached_from(placeholders):
            reached, todo = set(), list(placeholders)
            while todo:
                ph = todo.pop()
                for k, deps in enumerate(feeds):
                    if ph in deps and k not in reached:
                        reached.add(k)
                        if k < n_rec:   # a recurrent output is read back at the next steps
                            first = n_seq_in + sum(len(t) for t in info.rec_taps[:k])
                            todo.extend(inner_in[first:first + len(info.rec_taps[k])])
            return reached

        groups, k = [], 0
        for taps in info.seq_taps:
            groups.append(inner_in[k:k + len(taps)])
            k += len(taps)
        for taps in info.rec_taps:
            groups.append(inner_in[k:k + len(taps)])
            k += len(taps)
        groups.extend([ph] for ph in inner_in[k:])
        pattern = [[False] * len(node.outputs)]
        for placeholders in groups:
            reached = reached_from(placeholders)
            pattern.append([o in reached for o in range(len(node.outputs))])
        return pattern

    def infer_shape(self, fgraph, node, input_shapes):
        if self.info.as_while:
            raise NotImplementedError("the number of steps of a scan with an until condition is known at run time")
        n_steps = node.inputs[0]
        n_seqs, n_rec = len(self.info.seq_taps), len(self.info.rec_taps)
        shapes = []
        for j, last in enumerate(self.info.rec_last):
            rows = tuple(input_shapes[1 + n_seqs + j][1:])
            shapes.append(rows if last else (n_steps,) + rows)
        for k in range(self.info.n_nit_sot):
            static = self.inner_outputs[n_rec + k].type.shape
            if any(s is None for s in static):
                raise NotImplementedError("a nit-sot output's row shape is known when the loop runs")
            shapes.append((n_steps,) + tuple(as_tensor_variable(np.int64(s)) for s in static))
        return shapes

    # ---- the inner graph, as the function being compiled rewrites it

    def prepare_inner(self, mode, rewrite):
        """Rewrite a copy of the inner graph for a function compiled with ``mode``.

        ``rewrite(fgraph, mode)`` applies a mode's rewrites (compile's job; passed in so this
        package needs nothing from it at import). The scan's own ``mode`` (scan(mode=...)) wins
        over the function's. Inner inputs are rows of the loop's buffers: never destroyed.
        """
        use = self.mode if self.mode is not None else mode
        inner = self.fgraph.clone()
        inner.mutable_inputs = set()
        rewrite(inner, use)
        kind = "py" if getattr(getattr(use, "linker", None), "name", "py") == "py" else "c"
        self._prepared = (inner, kind)
        self._inner_thunk = None
        for inner_node in inner.toposort():
            hook = getattr(inner_node.op, "prepare_inner", None)
            if hook is not None:
                hook(use, rewrite)
        return inner

    def inner_graph(self):
        """The inner FunctionGraph to run or compile: the prepared one, else a plain copy."""
        if self._prepared is None:
            return self.fgraph
        return self._prepared[0]

    def _inner_function(self):
        from ffigraph.linkers.basic import PerformLinker
        from ffigraph.linkers.c import OpWiseCLinker

        fgraph = self.inner_graph()
        kind = self._prepared[1] if self._prepared else "py"
        key = (id(fgraph), kind)
        if self._inner_thunk is None or self._inner_thunk[0] != key:
            linker = PerformLinker() if kind == "py" else OpWiseCLinker()
            thunk, in_cells, out_cells = linker.accept(fgraph).make_thunk()
            self._inner_thunk = (key, thunk, in_cells, out_cells)
        return self._inner_thunk[1:]

    # ---- the reference loop

    def check_n_steps(self, value):
        n_steps = int(value)
        if n_steps < 0:
            raise ValueError("scan%s: n_steps is %d; the number of steps must be 0 or more"
                             % (self._label(), n_steps))
        return n_steps

    def perform(self, node, inputs, output_storage):
        info = self.info
        n_steps = self.check_n_steps(inputs[0])
        _, seqs, inits, non_seqs = self.outer_groups(inputs)
        for s, (seq, taps) in enumerate(zip(seqs, info.seq_taps)):
            need = n_steps + taps[-1] - taps[0]
            if seq.shape[0] < need:
                raise ValueError("scan%s: sequence %d has %d rows; %d steps with taps %s need %d"
                                 % (self._label(), s, seq.shape[0], n_steps, list(taps), need))
        for j, (init, taps) in enumerate(zip(inits, info.rec_taps)):
            if init.shape[0] < -taps[0]:
                raise ValueError("scan%s: the initial state of output %d has %d rows; taps %s need %d"
                                 % (self._label(), j, init.shape[0], list(taps), -taps[0]))
        thunk, in_cells, out_cells = self._inner_function()
        n_rec = len(info.rec_taps)
        traces = [None] * (n_rec + info.n_nit_sot)
        finals = [None] * n_rec
        for j, init in enumerate(inits):
            if info.rec_last[j]:
                finals[j] = np.array(init[0], copy=True)
            else:
                traces[j] = np.empty((n_steps,) + init.shape[1:], dtype=init.dtype)
        done = n_steps
        for t in range(n_steps):
            c = 0
            for seq, taps in zip(seqs, info.seq_taps):
                for tap in taps:
                    in_cells[c][0] = seq[t + tap - taps[0], ...]
                    c += 1
            for j, (init, taps) in enumerate(zip(inits, info.rec_taps)):
                for tap in taps:
                    if info.rec_last[j]:
                        in_cells[c][0] = finals[j]
                    elif t + tap >= 0:
                        in_cells[c][0] = traces[j][t + tap, ...]
                    else:
                        in_cells[c][0] = init[-taps[0] + t + tap, ...]
                    c += 1
            for value in non_seqs:
                in_cells[c][0] = value
                c += 1
            thunk()
            for j in range(n_rec):
                value = np.asarray(out_cells[j][0])
                expected = inits[j].shape[1:]
                if value.shape != expected:
                    raise ValueError("scan%s: at step %d the step function's output %d has shape %s, but its "
                                     "initial state gives rows of shape %s; a recurrent output keeps one shape"
                                     % (self._label(), t, j, value.shape, expected))
                if info.rec_last[j]:
                    finals[j] = np.array(value, copy=True)
                else:
                    traces[j][t, ...] = value
            for k in range(info.n_nit_sot):
                value = np.asarray(out_cells[n_rec + k][0])
                if traces[n_rec + k] is None:
                    traces[n_rec + k] = np.empty((n_steps,) + value.shape, dtype=node.outputs[n_rec + k].dtype)
                elif value.shape != traces[n_rec + k].shape[1:]:
                    raise ValueError("scan%s: at step %d the step function's output %d has shape %s, but had "
                                     "shape %s at step 0; an output traced over the steps keeps one shape"
                                     % (self._label(), t, n_rec + k, value.shape, traces[n_rec + k].shape[1:]))
                traces[n_rec + k][t, ...] = value
            if info.as_while and bool(out_cells[-1][0]):
                done = t + 1
                break
        for j in range(n_rec):
            output_storage[j][0] = finals[j] if info.rec_last[j] else traces[j][:done]
        for k in range(info.n_nit_sot):
            trace = traces[n_rec + k]
            if trace is None:   # no step ran: unknown row lengths are 0
                static = self.inner_outputs[n_rec + k].type.shape
                trace = np.empty((0,) + tuple(0 if s is None else s for s in static),
                                 dtype=node.outputs[n_rec + k].dtype)
            output_storage[n_rec + k][0] = trace[:done]

    # ---- gradient (grad.py) and C code (scan_c.py) are attached by the package

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.scan.grad import scan_l_op

        return scan_l_op(self, inputs, outputs, output_grads)

    # ---- C code (scan_c.py)
    # The C code generator compiles the inner graph into the node's translation unit
    # (``c_inner_graphs``, a contract of ffigraph/linkers/c/codegen.py); the loop calls it per step.

    def c_inner_graphs(self, node):
        return [self.inner_graph()]

    def c_support_code(self, **kwargs):
        from ffigraph.scan.scan_c import SUPPORT_C

        return SUPPORT_C

    def c_code(self, node, name, inputs, outputs, sub):
        from ffigraph.scan.scan_c import scan_c_code

        return scan_c_code(self, node, name, inputs, outputs, sub)

    def c_code_cleanup(self, node, name, inputs, outputs, sub):
        from ffigraph.scan.scan_c import scan_c_code_cleanup

        return scan_c_code_cleanup(self, node, name, inputs, outputs, sub)

    def c_code_cache_version(self):
        # the inner graph's C is part of the same source, which the cache hashes
        from ffigraph.scan.scan_c import VERSION

        return VERSION
