"""``OpFromGraph``: a graph used as one op; ``as_op``: a Python function used as one op.

PyTensor's ``pytensor.compile.builders`` (Theano's ``theano.compile.builders``), with its
signature and semantics:

``OpFromGraph(inputs, outputs, inline=False, lop_overrides=None, grad_overrides=None,
rop_overrides=None, connection_pattern=None, name=None)`` applied to variables (``op(a, b)``)
gives the outputs of the inner graph computed from them. Shared variables the inner graph reads
are implicit inputs of its nodes (each node reads the same storage).

How it compiles:

- ``inline=True``: ``function`` puts the inner graph in the node's place before rewriting, so
  rewrites see one graph (and may cross the boundary).
- ``inline=False``: the outer graph is rewritten with the node kept whole (no rewrite crosses it),
  and the inner graph on its own, with the same mode, once per mode; then, before linking, the
  rewritten inner graph is put in the node's place. So the inner graph compiles into the same
  library (one C translation unit) as the outer one, under every linker, and exports with it. An
  inner output that could share memory with an inner input is copied (``deep_copy_op``) first: the
  outer rewrites took the node's outputs for fresh memory.

The gradient is the inner graph's (or the overrides'), the R-operator the inner graph's (or
``rop_overrides``'), and the output shapes the inner graph's.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ffigraph.graph.basic import (Apply, Constant, Variable, ancestors, clone_replace, compile_graph, graph_inputs,
                                  io_toposort, rebuild_graph)
from ffigraph.graph.fg import FunctionGraph
from ffigraph.graph.op import Op
from ffigraph.compile.sharedvalue import SharedVariable
from ffigraph.tensor.gradient import DisconnectedType, NullType, Rop, disconnected_type, grad
from ffigraph.tensor.shapes import shape_i

_DEFAULT = ("default", None)


def _as_list(values: Any, what: str) -> List[Variable]:
    items = [values] if isinstance(values, Variable) else list(values)
    for k, v in enumerate(items):
        if not isinstance(v, Variable):
            raise TypeError("OpFromGraph: %s[%d] must be a symbolic variable, got %r" % (what, k, v))
    return items


class OpFromGraph(Op):
    """The graph from ``inputs`` to ``outputs`` as one op (see the module's text)."""

    # every OpFromGraph is an op of its own, as PyTensor's: equal only to itself
    __props__ = None

    def __init__(self, inputs: Sequence[Variable], outputs: Any, inline: bool = False,
                 lop_overrides: Any = None, grad_overrides: Any = None, rop_overrides: Any = None,
                 connection_pattern: Optional[List[List[bool]]] = None, strict: bool = False,
                 name: Optional[str] = None, **kwargs: Any) -> None:
        inputs, outputs = _as_list(inputs, "inputs"), _as_list(outputs, "outputs")
        for k, var in enumerate(inputs):
            if isinstance(var, (Constant, SharedVariable)):
                raise TypeError("OpFromGraph: input %d (%s) is a %s; inputs must be free variables (a shared "
                                "variable the graph reads is an implicit input)"
                                % (k, var, "constant" if isinstance(var, Constant) else "shared variable"))
        if len(set(inputs)) != len(inputs):
            raise ValueError("OpFromGraph: an input is given more than once")
        free = [v for v in graph_inputs(outputs, blockers=inputs)
                if v not in inputs and not isinstance(v, (Constant, SharedVariable))]
        if free:
            raise ValueError("OpFromGraph: the outputs depend on %s, which %s not among the inputs"
                             % (", ".join(map(str, free)), "is" if len(free) == 1 else "are"))
        if lop_overrides is not None and grad_overrides is not None:
            raise ValueError("OpFromGraph: give lop_overrides or grad_overrides, not both")
        # shared variables the graph reads: implicit inputs, after the explicit ones
        self.shared_inputs = [v for v in graph_inputs(outputs, blockers=inputs) if isinstance(v, SharedVariable)
                              and v not in inputs]
        self.inner_inputs = inputs + self.shared_inputs
        self.inner_outputs = outputs
        self.inline = bool(inline)
        self.lop_overrides, self.grad_overrides, self.rop_overrides = lop_overrides, grad_overrides, rop_overrides
        self._connection_pattern = connection_pattern
        self.name = name
        self.kwargs = kwargs
        self._rewritten: Dict[int, Tuple[Any, FunctionGraph]] = {}
        self._derived_ops: Dict[Any, Any] = {}
        self._perform_fn: Any = None

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)   # (what was compiled or derived is made again where it is loaded)
        state.update(_rewritten={}, _perform_fn=None, _derived_ops={})
        return state

    # PyTensor's attribute names of the inner graph
    @property
    def inputs(self) -> List[Variable]:
        return self.inner_inputs

    @property
    def outputs(self) -> List[Variable]:
        return self.inner_outputs

    @property
    def fgraph(self) -> FunctionGraph:
        return FunctionGraph(self.inner_inputs, self.inner_outputs)

    def __str__(self) -> str:
        return self.name or "OpFromGraph{inline=%s}" % self.inline

    # ---- the node

    def make_node(self, *inputs: Any) -> Apply:
        n = len(self.inner_inputs) - len(self.shared_inputs)
        if len(inputs) != n:
            raise TypeError("%s takes %d inputs, got %d" % (self, n, len(inputs)))
        converted = []
        for k, (inner, value) in enumerate(zip(self.inner_inputs, inputs)):
            try:
                converted.append(inner.type.filter_variable(value))
            except TypeError as err:
                raise TypeError("%s: input %d: %s" % (self, k, err)) from None
        return Apply(self, converted + self.shared_inputs, [o.type() for o in self.inner_outputs])

    def _inner_on(self, inputs: Sequence[Variable]) -> List[Variable]:
        """The inner outputs computed from ``inputs`` (a copy of the inner graph reading them)."""
        return clone_replace(list(self.inner_outputs), list(zip(self.inner_inputs, inputs)), strict=False)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: List[List[Any]]) -> None:
        # (a graph runs the rewritten inner graph in the node's place; this is for direct use)
        if self._perform_fn is None:
            self._perform_fn = compile_graph(self.inner_inputs, list(self.inner_outputs), on_unused_input="ignore")
        results = self._perform_fn(*inputs)
        for cell, value in zip(output_storage, results if isinstance(results, list) else [results]):
            cell[0] = value

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: Any) -> List[Tuple[Any, ...]]:
        outs = self._inner_on(node.inputs)
        return [tuple(shape_i(o, k) for k in range(o.type.ndim)) for o in outs]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        """Per input, per output: whether the output depends on it."""
        if self._connection_pattern is not None:
            return [list(row) for row in self._connection_pattern]
        reach = [set(ancestors([o], blockers=self.inner_inputs)) for o in self.inner_outputs]
        return [[i in r for r in reach] for i in self.inner_inputs]

    # ---- gradients

    def _explicit(self, inputs: Sequence[Variable]) -> List[Variable]:
        return list(inputs[:len(self.inner_inputs) - len(self.shared_inputs)])

    def _derived(self, key: Any, make: Callable[[List[Variable]], List[Optional[Variable]]],
                 placeholders: List[Variable]) -> Tuple["OpFromGraph", List[int]]:
        """An inline OpFromGraph of the explicit inputs and ``placeholders`` computing ``make``'s
        results (its gradient or R-operator graph), with the positions of the results that are
        variables; once per ``key``. As PyTensor's, the node reads every input, so a function
        of a gradient still reads the inputs the gradient does not depend on."""
        found = self._derived_ops.get(key)
        if found is None:
            results = make(placeholders)
            kept = [k for k, r in enumerate(results)
                    if r is not None and not isinstance(r.type, (DisconnectedType, NullType))]
            op = OpFromGraph(self._explicit(self.inner_inputs) + placeholders, [results[k] for k in kept],
                             inline=True, name="%s.%s" % (self, key[0])) if kept else None
            found = self._derived_ops[key] = (op, kept, results)
        return found

    def _default_lop(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
                     output_grads: Sequence[Variable]) -> List[Variable]:
        usable = [k for k, g in enumerate(output_grads) if not isinstance(g.type, (DisconnectedType, NullType))]
        if not usable:
            return [disconnected_type() for _ in inputs]

        def make(placeholders: List[Variable]) -> List[Optional[Variable]]:
            known = {self.inner_outputs[k]: p for k, p in zip(usable, placeholders)}
            return grad(None, list(self.inner_inputs), known_grads=known, disconnected_inputs="ignore",
                        return_disconnected="disconnected")

        op, kept, results = self._derived(("grad", tuple(usable)), make,
                                          [output_grads[k].type() for k in usable])
        got = op(*(self._explicit(inputs) + [output_grads[k] for k in usable]), return_list=True) if op else []
        out: List[Variable] = [r for r in results]  # disconnected and undefined ones as they are
        for k, value in zip(kept, got):
            out[k] = value
        return out

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> List[Variable]:
        override = self.lop_overrides if self.lop_overrides is not None else self.grad_overrides
        takes_outputs = True

        def call(fn: Callable[..., Any]) -> Any:
            explicit = self._explicit(inputs)
            if isinstance(fn, OpFromGraph):
                args = explicit + (list(outputs) if takes_outputs else []) + list(output_grads)
                return fn(*args[:len(fn.inner_inputs) - len(fn.shared_inputs)], return_list=True)
            # (inputs, outputs, output_grads), PyTensor's L_op form, or (inputs, output_grads), the
            # grad form: as the callable takes them (PyTensor's documented grad_overrides take three)
            if _positional_count(fn) == 2:
                return fn(explicit, list(output_grads))
            return fn(explicit, list(outputs), list(output_grads))

        if isinstance(override, str) and override != "default":
            raise ValueError("%s: lop_overrides/grad_overrides %r: give 'default', a callable, an OpFromGraph "
                             "or a list of them" % (self, override))
        if override is None or isinstance(override, str):
            return self._default_lop(inputs, outputs, output_grads)
        if isinstance(override, (list, tuple)):
            if len(override) != len(inputs):
                raise ValueError("%s: the gradient overrides list has %d entries for %d inputs"
                                 % (self, len(override), len(inputs)))
            default: Optional[List[Variable]] = None
            result = []
            for k, entry in enumerate(override):
                if entry is None or (isinstance(entry, str) and entry == "default"):
                    if default is None:
                        default = self._default_lop(inputs, outputs, output_grads)
                    result.append(default[k])
                elif isinstance(entry, Variable):   # a NullType (not differentiable) or DisconnectedType
                    result.append(entry)
                else:
                    got = call(entry)
                    result.append(got[0] if isinstance(got, (list, tuple)) else got)
            return result
        got = call(override)
        return list(got) if isinstance(got, (list, tuple)) else [got]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Optional[Variable]]) -> List[Variable]:
        if self.rop_overrides is not None and not (isinstance(self.rop_overrides, str)
                                                   and self.rop_overrides == "default"):
            got = self.rop_overrides(list(inputs), list(eval_points))
            return list(got) if isinstance(got, (list, tuple)) else [got]
        given = [k for k, p in enumerate(eval_points) if p is not None]
        if not given:
            return [None for _ in self.inner_outputs]  # type: ignore[misc]

        def make(placeholders: List[Variable]) -> List[Optional[Variable]]:
            return Rop(list(self.inner_outputs), [self.inner_inputs[k] for k in given], placeholders,
                       disconnected_outputs="ignore")

        op, kept, results = self._derived(("rop", tuple(given)), make,
                                          [self.inner_inputs[k].type() for k in given])
        got = op(*(self._explicit(inputs) + [eval_points[k] for k in given]), return_list=True) if op else []
        out: List[Variable] = [r for r in results]
        for k, value in zip(kept, got):
            out[k] = value
        return out

    # ---- compiling

    def rewritten(self, mode: Any, rewrite: Callable[[FunctionGraph, Any], None]) -> FunctionGraph:
        """The inner graph rewritten with ``mode`` (``rewrite(fgraph, mode)``), its nested
        OpFromGraph nodes put in place, its outputs that could alias its inputs copied; once per mode."""
        found = self._rewritten.get(id(mode))
        if found is None or found[0] is not mode:
            inner = FunctionGraph(self.inner_inputs, self.inner_outputs)
            rewrite(inner, mode)
            found = self._rewritten[id(mode)] = (mode, inner)
        return found[1]


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 3
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 3
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params)


def inline_graphs(inputs: Sequence[Variable], outputs: Sequence[Variable]) -> Tuple[List[Variable], List[Variable]]:
    """``(inputs, outputs)`` of a copy of the graph in which each ``inline=True`` OpFromGraph node
    is its inner graph; the same lists when there is none."""
    nodes = [n for n in io_toposort(inputs, outputs) if isinstance(n.op, OpFromGraph) and n.op.inline]
    if not nodes:
        return list(inputs), list(outputs)
    def inlined(node: Apply, new_inputs: List[Variable]) -> Optional[List[Variable]]:
        return node.op._inner_on(new_inputs) if isinstance(node.op, OpFromGraph) and node.op.inline else None

    memo = rebuild_graph(inputs, outputs, {}, inlined)
    # (a graph may hold an OpFromGraph inside another's inner graph: inlined when that one is)
    new_outputs = [memo.get(v, v) for v in outputs]
    if any(isinstance(n.op, OpFromGraph) and n.op.inline for n in io_toposort(inputs, new_outputs)):
        return inline_graphs(inputs, new_outputs)
    return list(inputs), new_outputs


def put_in_place(fgraph: FunctionGraph, mode: Any, rewrite: Callable[[FunctionGraph, Any], None]) -> None:
    """Replace each OpFromGraph node of the rewritten ``fgraph`` by its rewritten inner graph."""
    for node in fgraph.toposort():
        if not isinstance(node.op, OpFromGraph):
            continue
        inner = node.op.rewritten(mode, rewrite)
        new_outputs = clone_replace(list(inner.outputs), list(zip(inner.inputs, node.inputs)), strict=False)
        for old, new in zip(node.outputs, new_outputs):
            fgraph.replace(old, new, reason="OpFromGraph in place")


def as_op(itypes: Sequence[Any], otypes: Sequence[Any],
          infer_shape: Optional[Callable[..., Any]] = None) -> Callable[[Callable[..., Any]], Op]:
    """A decorator making a Python function of numpy arrays an op (PyTensor's ``as_op``): it takes
    variables of the types ``itypes`` and gives variables of ``otypes``; ``infer_shape(fgraph,
    node, input_shapes)`` gives the output shapes, if known. The op runs in Python (no C code: C
    linkers call it between their compiled parts, and such a function cannot be exported)."""
    itypes, otypes = list(itypes), list(otypes)
    if infer_shape is not None and not callable(infer_shape):
        raise TypeError("as_op: infer_shape must be callable, got %r" % (infer_shape,))

    def decorate(fn: Callable[..., Any]) -> Op:
        if not callable(fn):
            raise TypeError("as_op decorates a function, got %r" % (fn,))
        return FromFunctionOp(fn, itypes, otypes, infer_shape)

    return decorate


class FromFunctionOp(Op):
    """The op ``as_op`` makes of a Python function (equal when made of the same function and types)."""

    __props__ = ("fn", "itypes", "otypes", "infer_shape_fn")

    def __init__(self, fn: Callable[..., Any], itypes: List[Any], otypes: List[Any],
                 infer_shape: Optional[Callable[..., Any]]) -> None:
        self.fn, self.itypes, self.otypes = fn, tuple(itypes), tuple(otypes)
        self.infer_shape_fn = infer_shape
        self.__name__ = getattr(fn, "__name__", "as_op")

    def __str__(self) -> str:
        return "FromFunctionOp{%s}" % self.__name__

    def make_node(self, *inputs: Any) -> Apply:
        if len(inputs) != len(self.itypes):
            raise TypeError("%s takes %d inputs, got %d" % (self, len(self.itypes), len(inputs)))
        converted = []
        for k, (itype, value) in enumerate(zip(self.itypes, inputs)):
            try:
                converted.append(itype.filter_variable(value))
            except TypeError as err:
                raise TypeError("%s: input %d must be of type %s: %s" % (self, k, itype, err)) from None
        return Apply(self, converted, [t() for t in self.otypes])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: List[List[Any]]) -> None:
        results = self.fn(*inputs)
        if len(self.otypes) == 1:
            results = [results]
        if len(results) != len(self.otypes):
            raise ValueError("%s returned %d values for %d outputs" % (self, len(results), len(self.otypes)))
        for k, (cell, otype, value) in enumerate(zip(output_storage, self.otypes, results)):
            try:
                cell[0] = otype.filter(value)
            except (TypeError, ValueError) as err:
                raise type(err)("%s: output %d (type %s): %s" % (self, k, otype, err)) from None

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: Any) -> Any:
        if self.infer_shape_fn is None:
            raise NotImplementedError("%s has no infer_shape (as_op(..., infer_shape=...))" % self)
        return self.infer_shape_fn(fgraph, node, input_shapes)
