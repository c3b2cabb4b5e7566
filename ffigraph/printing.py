"""``debugprint``: a graph as an indented text tree, in PyTensor's format.

>>> import ffigraph.tensor as T
>>> x = T.dvector('x'); y = T.dvector('y')
>>> print(debugprint(T.exp(x) * y + x, file="str"), end="")
Elemwise{add} [id A]
 ├─ Elemwise{mul} [id B]
 │  ├─ Elemwise{exp} [id C]
 │  │  └─ x [id D]
 │  └─ y [id E]
 └─ x [id D]

A node's line is ``<op>[.k] [id X] [<type>] ['name'] [d={...}] [v={...}] [order]``:
``.k`` says which output of a multi-output node is used, and ``order`` (only
for a compiled Function or a FunctionGraph) is the node's position in the
graph's topological order. An input or constant is ``<name or value> [id X]
[<type>]``. A node printed once is shown again with its id but its inputs are
not listed again, so a shared subexpression appears once in full.

Ops (or, for an Elemwise, their ``scalar_op``) that hold an inner graph can
define ``inner_debugprint_lines()`` returning a list of strings; those lines
are printed, one block per distinct op, in an "Inner graphs:" section after
the main tree.
"""
from __future__ import annotations

import linecache
import sys

from ffigraph.compile.monitormode import set_node_printer
from ffigraph.graph.basic import Apply, Variable, set_debug_printer
from ffigraph.graph.fg import FunctionGraph
from ffigraph.graph.utils import char_from_number, creation_site, get_trace
# Pictures live in their own module; it imports the graphviz package only when rendering.
from ffigraph.picture import graph_dot, graph_picture, pydotprint
# The Print op and the infix printer (pp) live in their own modules too.
from ffigraph.pretty import (ConstantPrinter, DefaultPrinter, FunctionPrinter, IgnorePrinter, LeafPrinter,
                             OperatorPrinter, PatternPrinter, PPrinter, Printer, PrinterState, pp, pprint)
from ffigraph.print_op import Print

__all__ = ["debugprint", "dprint", "char_from_number", "graph_dot", "graph_picture", "pydotprint", "Print",
           "pp", "pprint", "PPrinter", "Printer", "PrinterState", "OperatorPrinter", "FunctionPrinter",
           "PatternPrinter", "IgnorePrinter", "LeafPrinter", "ConstantPrinter", "DefaultPrinter"]

_ID_KINDS = ("CHAR", "id", "int", "")

# PyTensor's tree drawing: a child that has siblings below it, and the last child.
_BRANCH, _BRANCH_CONT = " ├─ ", " │ "
_LAST, _LAST_CONT = " └─ ", "   "
_INNER_INDENT = "    "


def debugprint(obj, file=None, depth=-1, print_type=False, ids="CHAR", print_destroy_map=False,
               print_view_map=False, done=None, print_trace=False):
    """Print the graph(s) of ``obj`` as an indented tree, one line per variable.

    obj: a compiled Function (its rewritten graph ``f.maker.fgraph`` is
    printed, outputs in order), a FunctionGraph, a Variable, an Apply node
    (each of its outputs), or a list/tuple of any of these.
    file: None prints to ``sys.stdout`` and returns it; ``"str"`` returns the
    text; any other object is written to (``file.write``) and returned.
    depth: how many levels to print (1: only the outputs' lines); negative for all.
    print_type: add `` <type>`` to each line.
    ids: ``"CHAR"`` (A, B, ..., Z, BA, ...), ``"int"`` (0, 1, ...), ``"id"``
    (Python ``id()`` of the node, or of the variable for inputs), or ``""``
    (no ids).
    print_destroy_map / print_view_map: add `` d={...}`` / `` v={...}`` to a
    node whose op's destroy_map / view_map is not empty.
    done: a dict that records what was printed (node or input -> id text);
    pass the same dict to several calls to keep numbering going and not expand
    a node twice.
    print_trace: under each node, where the user's code created it (``node.tag.trace``,
    recorded when ``config.traceback__limit`` is not 0): ``created at FILE:LINE (in FUNCTION): source``.
    """
    if ids not in _ID_KINDS:
        raise ValueError("debugprint: ids must be one of %s, got %r"
                         % (", ".join(repr(k) for k in _ID_KINDS), ids))
    if done is None:
        done = {}
    elif not isinstance(done, dict):
        raise TypeError("debugprint: done must be a dict (or None), got %s" % type(done).__name__)
    if not isinstance(depth, int):
        raise TypeError("debugprint: depth must be an int, got %r" % (depth,))

    roots = []  # (variable, {node: topological position} or None)
    _collect(obj, roots)

    printer = _Printer(depth=depth, print_type=print_type, ids=ids, print_destroy_map=print_destroy_map,
                       print_view_map=print_view_map, done=done)
    printer.print_trace = print_trace
    for var, order in roots:
        printer.print_tree(var, order)
    printer.print_inner_graphs()
    text = "".join(printer.lines)

    if isinstance(file, str):
        if file != "str":
            raise ValueError("debugprint: file must be None, 'str' or a writable object, got %r" % (file,))
        return text
    out = sys.stdout if file is None else file
    out.write(text)
    return out


dprint = debugprint


# ----------------------------------------------------------------- what to print


def _collect(obj, roots):
    if isinstance(obj, (list, tuple)):
        for item in obj:
            _collect(item, roots)
        return
    if isinstance(obj, Variable):
        roots.append((obj, None))
        return
    if isinstance(obj, Apply):
        roots.extend((out, None) for out in obj.outputs)
        return
    if isinstance(obj, FunctionGraph):
        _collect_fgraph(obj, roots)
        return
    maker = getattr(obj, "maker", None)
    fgraph = getattr(maker, "fgraph", None)
    if isinstance(fgraph, FunctionGraph):  # a compiled Function
        _collect_fgraph(fgraph, roots)
        return
    raise TypeError("debugprint: cannot print %r (%s); give a Variable, an Apply, a FunctionGraph, "
                    "a compiled Function, or a list of them" % (obj, type(obj).__name__))


def _collect_fgraph(fgraph, roots):
    order = {node: pos for pos, node in enumerate(fgraph.toposort())}
    roots.extend((out, order) for out in fgraph.outputs)


# ----------------------------------------------------------------- printing


class _Printer:
    def __init__(self, depth, print_type, ids, print_destroy_map, print_view_map, done):
        self.depth = depth
        self.print_type = print_type
        self.ids = ids
        self.print_destroy_map = print_destroy_map
        self.print_view_map = print_view_map
        self.done = done
        # A node recorded by an earlier call sharing ``done`` counts as already expanded.
        self.expanded = {k for k in done if isinstance(k, Apply)}
        self.inner = []  # (provider, node), one per distinct provider, in order of appearance
        self.inner_seen = set()
        self.lines = []
        self.print_trace = False
        self.traced = set()  # nodes (outputs of multi-output nodes) whose creation trace was printed

    def id_text(self, key):
        """`` [id X]`` for a node (or an input), the same text each time it shows up."""
        text = self.done.get(key)
        if text is None:
            if self.ids == "CHAR":
                text = " [id %s]" % char_from_number(len(self.done))
            elif self.ids == "int":
                text = " [id %d]" % len(self.done)
            elif self.ids == "id":
                text = " [id %d]" % id(key)
            else:
                text = ""
            self.done[key] = text
        return text

    def print_tree(self, root, order):
        # An explicit stack (children pushed in reverse) prints in the same pre-order as the
        # obvious recursion, without hitting the recursion limit on long chains.
        stack = [(root, "", "", self.depth)]
        while stack:
            var, prefix, child_prefix, depth = stack.pop()
            if depth == 0:
                continue
            node = var.owner
            if node is None:
                self.lines.append("%s%s%s%s\n" % (prefix, var, self.id_text(var), self.type_text(var)))
                continue
            self.note_inner_graph(node)
            self.lines.append(prefix + self.node_line(var, node, order) + "\n")
            # (each output of a multi-output node: a rewrite may have made it from several)
            traced = var if len(node.outputs) > 1 else node
            if self.print_trace and traced not in self.traced:
                self.traced.add(traced)
                more = node not in self.expanded and depth != 1 and node.inputs  # inputs follow: keep the bar
                self.lines.extend("%s%s %s\n" % (child_prefix, _BRANCH_CONT if more else _LAST_CONT, line)
                                  for line in _trace_lines(traced))
            if node in self.expanded or depth == 1 or not node.inputs:
                continue
            self.expanded.add(node)
            last = len(node.inputs) - 1
            for i in range(last, -1, -1):
                if i == last:
                    stack.append((node.inputs[i], child_prefix + _LAST, child_prefix + _LAST_CONT, depth - 1))
                else:
                    stack.append((node.inputs[i], child_prefix + _BRANCH, child_prefix + _BRANCH_CONT,
                                  depth - 1))

    def node_line(self, var, node, order):
        parts = [str(node.op)]
        if len(node.outputs) != 1:
            index = var.index if var.index is not None else node.outputs.index(var)
            parts.append(".%d" % index)
        parts.append(self.id_text(node))
        parts.append(self.type_text(var))
        if var.name is not None:
            parts.append(" '%s'" % (var.name,))
        if self.print_destroy_map and node.op.destroy_map:
            parts.append(" d=%s" % (_map_text(node.op.destroy_map),))
        if self.print_view_map and node.op.view_map:
            parts.append(" v=%s" % (_map_text(node.op.view_map),))
        if order is not None and node in order:
            parts.append(" %d" % order[node])
        return "".join(parts)

    def type_text(self, var):
        return " <%s>" % (var.type,) if self.print_type else ""

    # ---- inner graphs

    def note_inner_graph(self, node):
        provider = _inner_graph_provider(node.op)
        if provider is None:
            return
        try:
            key = ("eq", provider)
            seen = key in self.inner_seen
        except TypeError:  # an unhashable op: tell them apart by identity
            key = ("id", id(provider))
            seen = key in self.inner_seen
        if not seen:
            self.inner_seen.add(key)
            self.inner.append((provider, node))

    def print_inner_graphs(self):
        if not self.inner:
            return
        self.lines.append("\nInner graphs:\n")
        for provider, node in self.inner:
            lines = provider.inner_debugprint_lines()
            if isinstance(lines, str):
                lines = lines.splitlines()
            self.lines.append("\n%s%s\n" % (node.op, self.id_text(node)))
            for line in lines:
                self.lines.append("%s%s\n" % (_INNER_INDENT, line))


def _trace_lines(thing):
    """``created at FILE:LINE (in FUNCTION): source`` for a node (or the output of a multi-output
    node, which a rewrite may have made from several) with a recorded trace, else nothing."""
    site = creation_site(thing)
    if site is None:
        return []
    stack = get_trace(thing)
    filename, lineno = tuple(stack[-1])[:2]
    source = linecache.getline(filename, lineno).strip()
    return ["created at %s%s" % (site, ": " + source if source else "")]


def _inner_graph_provider(op):
    """The op, or else its ``scalar_op``, when it defines ``inner_debugprint_lines``."""
    for candidate in (op, getattr(op, "scalar_op", None)):
        if candidate is not None and callable(getattr(candidate, "inner_debugprint_lines", None)):
            return candidate
    return None


def _map_text(mapping):
    """``{0: [0]}`` whatever containers the op used (lists or tuples), in key order."""
    items = []
    for key in sorted(mapping):
        items.append("%s: [%s]" % (key, ", ".join(str(i) for i in mapping[key])))
    return "{%s}" % ", ".join(items)


# reports of the compile layer (detect_nan, NanGuardMode) show a node's debugprint
set_node_printer(lambda var: debugprint(var, file="str"))
set_debug_printer(debugprint)   # Variable.dprint, Function.dprint (the layers below print through it)
