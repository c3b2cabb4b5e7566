"""``pp``/``pprint``: a graph as one readable infix expression, as Theano's and PyTensor's.

>>> import ffigraph.tensor as T
>>> x, y = T.dmatrix("x"), T.dmatrix("y")
>>> pp(x * 2 + T.exp(y))
'((x * TensorConstant{2.0}) + exp(y))'

Every operator application is parenthesised, so the text reads one way only.
Elementwise arithmetic prints as infix operators (``+ - * / // % **``, unary
``-``, bitwise ``& | ^ ~``), other elementwise ops as calls of their scalar
op's name (``exp(y)``, ``gt(x, y)``), ``dot`` as Theano's ``\\dot``, a
DimShuffle that only adds broadcastable axes as its input and a transpose as
``x.T``; any other op as ``<op>(<inputs>)``. Variables print their names
(``str`` of unnamed ones), constants as ``TensorConstant{value}``.

A printer is chosen per variable: first by its owner's op (``assign(op, printer)``),
then by the op's class (``assign(OpClass, printer)``), then by the first
``condition(pstate, var)`` that holds among those assigned as callables (latest
first). ``pprint.assign(MyOp, FunctionPrinter(["my_op"]))`` makes ``MyOp`` print
as ``my_op(...)``.
"""
from __future__ import annotations

from ffigraph.graph.basic import Apply, Constant, Variable
from ffigraph.graph.fg import FunctionGraph
from ffigraph.graph.op import Op

__all__ = ["pp", "pprint", "PPrinter", "PrinterState", "Printer", "OperatorPrinter", "FunctionPrinter",
           "PatternPrinter", "IgnorePrinter", "LeafPrinter", "ConstantPrinter", "DefaultPrinter",
           "DimShufflePrinter", "ElemwisePrinter", "leaf_printer", "constant_printer", "default_printer"]

VALID_ASSOC = ("left", "right", "either")


class PrinterState:
    """What one ``pprint`` call carries: the PPrinter, the text of variables already printed
    (``memo``), the precedence of the enclosing operator, and any ``props`` given."""

    def __init__(self, pprinter=None, **props):
        self.pprinter = pprinter
        self.precedence = -1000
        self.memo = {}
        self.__dict__.update(props)


class Printer:
    """Base class: ``process(var, pstate)`` returns the text of ``var``."""

    def process(self, output, pstate):
        raise NotImplementedError


def _owner(output, what):
    node = output.owner
    if node is None:
        raise TypeError("%s cannot print %s: it is not the result of an operation" % (what, output))
    return node


def _inputs_text(node, pstate, precedence=-1000):
    old = pstate.precedence
    pstate.precedence = precedence
    try:
        return [pstate.pprinter.process(i, pstate) for i in node.inputs]
    finally:
        pstate.precedence = old


class LeafPrinter(Printer):
    """A variable by its name (``str`` of it when unnamed)."""

    def process(self, output, pstate):
        return str(output)


class ConstantPrinter(Printer):
    """A constant by its name, else ``<Class>{value}`` (``TensorConstant{2.0}``)."""

    def process(self, output, pstate):
        if output.name is not None:
            return output.name
        text = str(output)
        if "{" in text:   # already says its class (a large constant: ``TensorConstant{float64, shape=(30,)}``)
            return text
        return "%s{%s}" % (type(output).__name__, text)


class DefaultPrinter(Printer):
    """``<op>(<input>, ...)``; a variable with no owner by its name."""

    def process(self, output, pstate):
        node = output.owner
        if node is None:
            return leaf_printer.process(output, pstate)
        text = "%s(%s)" % (node.op, ", ".join(_inputs_text(node, pstate)))
        if len(node.outputs) > 1:
            text += ".%d" % node.outputs.index(output)
        return text


class OperatorPrinter(Printer):
    """Infix ``(a <op> b <op> ...)``, or prefix ``(<op>a)`` for one input; always parenthesised."""

    def __init__(self, operator, precedence, assoc="left"):
        if assoc not in VALID_ASSOC:
            raise ValueError("OperatorPrinter: assoc must be one of %s, got %r" % (", ".join(VALID_ASSOC), assoc))
        self.operator, self.precedence, self.assoc = operator, precedence, assoc

    def process(self, output, pstate):
        node = _owner(output, "operator %r" % (self.operator,))
        parts = _inputs_text(node, pstate, self.precedence)
        if len(parts) == 1:
            return "(%s%s)" % (self.operator, parts[0])
        return "(%s)" % (" %s " % self.operator).join(parts)


class FunctionPrinter(Printer):
    """``name(<inputs>[, kw=value ...])``, one name per output of the node; ``keywords`` are
    attributes of the op to show."""

    def __init__(self, names, keywords=None):
        self.names = [names] if isinstance(names, str) else list(names)
        self.keywords = list(keywords or [])

    def process(self, output, pstate):
        node = _owner(output, "function %s" % (self.names,))
        name = self.names[min(node.outputs.index(output), len(self.names) - 1)]
        parts = _inputs_text(node, pstate)
        parts += ["%s=%s" % (kw, getattr(node.op, kw)) for kw in self.keywords]
        return "%s(%s)" % (name, ", ".join(parts))


class PatternPrinter(Printer):
    """A %-pattern per output, inputs named by position: ``PatternPrinter("%(0)s[%(1)s]")``."""

    def __init__(self, *patterns):
        self.patterns = [p if isinstance(p, str) else p[0] for p in patterns]

    def process(self, output, pstate):
        node = _owner(output, "pattern %s" % (self.patterns,))
        pattern = self.patterns[min(node.outputs.index(output), len(self.patterns) - 1)]
        parts = _inputs_text(node, pstate, 1000)
        return pattern % {str(i): text for i, text in enumerate(parts)}


class IgnorePrinter(Printer):
    """The node's first input, as if the op were not there."""

    def process(self, output, pstate):
        node = _owner(output, "IgnorePrinter")
        return pstate.pprinter.process(node.inputs[0], pstate)


class DimShufflePrinter(Printer):
    """Added broadcastable axes are not shown; a full transpose is ``x.T``."""

    def process(self, output, pstate):
        node = _owner(output, "DimShufflePrinter")
        order = [a for a in node.op.new_order if a != "x"]
        ndim = node.inputs[0].type.ndim
        inner = pstate.pprinter.process(node.inputs[0], pstate)
        if order == list(range(ndim)):
            return inner
        if ndim > 1 and order == list(reversed(range(ndim))):
            return "%s.T" % (inner,)
        return "%s(%s)" % (node.op, inner)


# scalar op name -> (operator, precedence, assoc): Theano's table
_OPERATORS = {
    "or": ("|", -12, "either"), "xor": ("^", -12, "either"), "and": ("&", -11, "either"),
    "add": ("+", -10, "either"), "sub": ("-", -10, "left"), "mul": ("*", -6, "either"),
    "true_div": ("/", -5, "left"), "int_div": ("//", -5, "left"), "mod": ("%", -5, "left"),
    "neg": ("-", 0, "either"), "invert": ("~", 0, "either"), "pow": ("**", 1, "right"),
}


class ElemwisePrinter(Printer):
    """An elementwise op by its scalar op: an operator from the table above, else a call of
    the scalar op's name."""

    def __init__(self, operators=None):
        self.operators = dict(_OPERATORS if operators is None else operators)

    def process(self, output, pstate):
        node = _owner(output, "ElemwisePrinter")
        scalar = getattr(node.op, "scalar_op", None)
        name = getattr(scalar, "name", None)
        if not isinstance(name, str) or len(node.outputs) != 1:
            return default_printer.process(output, pstate)
        spec = self.operators.get(name)
        unary = name in ("neg", "invert")
        if spec is not None and (len(node.inputs) == 1 if unary else len(node.inputs) >= 2):
            return OperatorPrinter(*spec).process(output, pstate)
        return FunctionPrinter([name]).process(output, pstate)


leaf_printer = LeafPrinter()
constant_printer = ConstantPrinter()
default_printer = DefaultPrinter()


class PPrinter(Printer):
    """Chooses a printer per variable (see the module docstring) and keeps the texts of a call."""

    def __init__(self):
        self.printers = []        # (condition(pstate, var), printer), latest first
        self.printers_dict = {}   # an Op instance or an Op class -> printer

    def assign(self, condition, printer):
        """Use ``printer`` for variables computed by ``condition`` (an Op or an Op class), or for
        which ``condition(pstate, var)`` is true."""
        if not isinstance(printer, Printer) and not callable(getattr(printer, "process", None)):
            raise TypeError("assign: %r has no process(var, pstate) method" % (printer,))
        if isinstance(condition, (Op, type)):
            self.printers_dict[condition] = printer
        elif callable(condition):
            self.printers.insert(0, (condition, printer))
        else:
            raise TypeError("assign: condition must be an Op, an Op class or a callable, got %r" % (condition,))

    def clone(self):
        cp = PPrinter()
        cp.printers, cp.printers_dict = list(self.printers), dict(self.printers_dict)
        return cp

    def clone_assign(self, condition, printer):
        cp = self.clone()
        cp.assign(condition, printer)
        return cp

    def _printer_for(self, var, pstate):
        node = getattr(var, "owner", None)
        if node is not None:
            op = node.op
            try:
                found = self.printers_dict.get(op)
            except TypeError:   # an unhashable op
                found = None
            if found is None:
                for cls in type(op).__mro__:
                    found = self.printers_dict.get(cls)
                    if found is not None:
                        break
            if found is not None:
                return found
        for condition, printer in self.printers:
            if condition(pstate, var):
                return printer
        return default_printer

    def process(self, r, pstate=None):
        """The text of variable ``r``."""
        if not isinstance(r, Variable):
            raise TypeError("pprint: %r is not a Variable" % (r,))
        if pstate is None or isinstance(pstate, dict):
            pstate = PrinterState(pprinter=self, **(pstate or {}))
            # Print the ancestors first, deepest first: each one then finds its inputs' texts in
            # the memo, so a long chain never nests Python calls deeply.
            for var in _ancestors_postorder(r):
                self._one(var, pstate)
        return self._one(r, pstate)

    def _one(self, var, pstate):
        memo = pstate.memo
        text = memo.get(var)
        if text is None:
            text = self._printer_for(var, pstate).process(var, pstate)
            memo[var] = text
        return text

    def __call__(self, *args):
        if len(args) == 1:
            return _pp_object(self, args[0])
        if len(args) == 2 and isinstance(args[1], (PrinterState, dict)):
            return self.process(*args)
        raise TypeError("pprint takes a variable (or a function, a graph, a list of them), "
                        "optionally followed by a PrinterState")


def _ancestors_postorder(root):
    out, seen = [], {root}
    stack = [(root, False)]
    while stack:
        var, expanded = stack.pop()
        if expanded:
            out.append(var)
            continue
        stack.append((var, True))
        node = var.owner
        if node is not None:
            for i in reversed(node.inputs):
                if i not in seen:
                    seen.add(i)
                    stack.append((i, False))
    return out[:-1]   # the root itself is printed by the caller


def _pp_object(printer, obj):
    """Variables print as one line; a function, FunctionGraph, Apply or list as one line per output."""
    if isinstance(obj, Variable):
        return printer.process(obj)
    if isinstance(obj, Apply):
        return "\n".join(printer.process(v) for v in obj.outputs)
    if isinstance(obj, (list, tuple)):
        return "\n".join(_pp_object(printer, item) for item in obj)
    fgraph = obj if isinstance(obj, FunctionGraph) else getattr(getattr(obj, "maker", None), "fgraph", None)
    if isinstance(fgraph, FunctionGraph):
        return "\n".join(printer.process(v) for v in fgraph.outputs)
    raise TypeError("pprint: cannot print %r (%s); give a Variable, an Apply, a FunctionGraph, a compiled "
                    "Function or a list of them" % (obj, type(obj).__name__))


def _default_pprinter():
    from ffigraph.tensor.elemwise import DimShuffle, Elemwise
    from ffigraph.tensor.math import Dot

    printer = PPrinter()
    printer.assign(lambda pstate, r: True, default_printer)
    printer.assign(lambda pstate, r: isinstance(r, Constant), constant_printer)
    printer.assign(Elemwise, ElemwisePrinter())
    printer.assign(DimShuffle, DimShufflePrinter())
    printer.assign(Dot, OperatorPrinter("\\dot", -1, "left"))
    return printer


pprint = _default_pprinter()
pp = pprint
"""Print a graph as a math-like expression (Theano's ``pp``): ``pp(x * 2 + exp(y))``."""
