"""The two kinds of graph node: ``Variable`` (a value) and ``Apply`` (an op applied to values).

A graph is bipartite: each ``Apply`` has input and output Variables, and each
Variable has at most one ``owner`` Apply (None for inputs and constants).
"""
from __future__ import annotations

import sys
import threading
from itertools import count

import numpy as np

from ffigraph.config import config
from ffigraph.graph.utils import TestValueError, user_stack


class Scratchpad:
    """Free-form annotations on a node or variable (``tag.trace``, ``var.tag.test_value``, ...)."""

    def __repr__(self):
        return "Scratchpad(%s)" % ", ".join("%s=%r" % kv for kv in sorted(vars(self).items()))


class _VariableTag(Scratchpad):
    """A variable's tag: ``test_value`` is filtered by the variable's type when set (PyTensor's
    ValidatingScratchpad), so a value of the wrong dtype or rank fails where it is given."""

    __slots__ = ("_type",)

    @property
    def test_value(self):
        try:
            return self.__dict__["test_value"]
        except KeyError:
            raise AttributeError("test_value") from None

    @test_value.setter
    def test_value(self, value):
        try:
            self.__dict__["test_value"] = self._type.filter(value)
        except (TypeError, ValueError) as err:
            raise type(err)("test value %s does not fit the variable's type %s: %s"
                            % (_describe_value(value), self._type, err)) from None

    @test_value.deleter
    def test_value(self):
        try:
            del self.__dict__["test_value"]
        except KeyError:
            raise AttributeError("test_value") from None


def user_trace(limit, frame):
    """A ``tag.trace`` value for a node made now: [stack of the user's frames at and above
    ``frame``], [] without user frames, None when the node is made while compiling."""
    stack = user_stack(limit, frame)
    if stack is None:
        return None
    return [stack] if stack else []


def set_trace(node, trace):
    """Set ``node.tag.trace`` (and its outputs' where they have none); nothing when ``trace`` is None
    (a node made while compiling: the rewrite that made it copies the trace of what it replaces)."""
    if trace is not None:
        node.tag.trace = trace
        for out in node.outputs:
            out.tag.__dict__.setdefault("trace", trace)


class _OpCall(threading.local):
    made = None  # while this thread runs make_node under Op.__call__: the nodes made, to trace


_op_call = _OpCall()


def _describe_value(value):
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return "of shape %s and dtype %s" % (tuple(shape), dtype)
    return "%r" % (value,)


class Apply:
    """One application of ``op`` to ``inputs``, producing ``outputs``."""

    def __init__(self, op, inputs, outputs):
        self.op = op
        self.inputs = list(inputs)
        self.outputs = []
        self.tag = Scratchpad()
        for i in self.inputs:
            if not isinstance(i, Variable):
                raise TypeError("Apply of %s: input %r is not a Variable" % (op, i))
        for idx, out in enumerate(outputs):
            if not isinstance(out, Variable):
                raise TypeError("Apply of %s: output %r is not a Variable" % (op, out))
            if out.owner is not None and (out.owner is not self or out.index != idx):
                raise ValueError("Apply of %s: output %r already belongs to another node" % (op, out))
            out.owner, out.index = self, idx
            self.outputs.append(out)
        # where the user's code made this node (config.traceback__limit frames; 0: not recorded).
        # Inside Op.__call__ (which makes nearly every node) the nodes its make_node makes are
        # traced when make_node returns, from fewer frames; a node made any other way is traced here.
        limit = config.traceback__limit
        if limit:
            made = _op_call.made
            if made is not None:
                made.append(self)
            else:
                set_trace(self, user_trace(limit, sys._getframe(1)))

    @property
    def nin(self):
        return len(self.inputs)

    @property
    def nout(self):
        return len(self.outputs)

    @property
    def out(self):
        """The default output (the only one, or ``op.default_output``)."""
        do = getattr(self.op, "default_output", None)
        if do is not None:
            return self.outputs[do]
        if len(self.outputs) != 1:
            raise AttributeError("%s has %d outputs and no default_output" % (self.op, len(self.outputs)))
        return self.outputs[0]

    def clone(self):
        """A new Apply with the same op and inputs and fresh outputs of the same types (and its tag)."""
        cp = Apply(self.op, self.inputs, [o.clone() for o in self.outputs])
        cp.tag.__dict__.update(self.tag.__dict__)
        return cp

    def clone_with_new_inputs(self, inputs, strict=True):
        """The same op applied to ``inputs``; ``strict`` keeps the output types unchanged."""
        if len(inputs) != len(self.inputs):
            raise ValueError("%s: expected %d inputs, got %d" % (self.op, len(self.inputs), len(inputs)))
        if strict:
            for old, new in zip(self.inputs, inputs):
                if old.type != new.type:
                    raise TypeError("%s: input type %s cannot replace %s" % (self.op, new.type, old.type))
            cp = Apply(self.op, inputs, [o.clone() for o in self.outputs])
            cp.tag.__dict__.update(self.tag.__dict__)
            return cp
        cp = self.op.make_node(*inputs)
        trace = getattr(self.tag, "trace", None)
        if trace:
            cp.tag.trace = trace
            for out in cp.outputs:
                out.tag.__dict__.setdefault("trace", trace)
        return cp

    def __str__(self):
        return "%s(%s)" % (self.op, ", ".join(str(i) for i in self.inputs))

    __repr__ = __str__


class Variable:
    """A symbolic value of a given ``type``; ``owner`` is the Apply that computes it."""

    _ids = count()

    def __init__(self, type, owner=None, index=None, name=None):
        self.type = type
        self.owner = owner
        self.index = index
        self.name = name
        self.tag = tag = _VariableTag()
        tag._type = type
        self.auto_name = "auto_%d" % next(self._ids)

    def clone(self, name=None):
        """A fresh unowned variable with the same type, name and tag contents."""
        cp = type(self)(self.type, None, None, name if name is not None else self.name)
        cp.tag.__dict__.update(self.tag.__dict__)
        return cp

    def __str__(self):
        if self.name is not None:
            return self.name
        if self.owner is not None:
            op = self.owner.op
            if len(self.owner.outputs) == 1:
                return "%s.out" % (op,)
            return "%s.%d" % (op, self.index)
        return "<%s>" % (self.type,)

    def __repr__(self, firstPass=True):
        """The variable's name or description; with ``config.print_test_value``, its test value
        (if it has one) on a second line, as in Theano and PyTensor."""
        text = str(self)
        if config.print_test_value and firstPass:
            try:
                return "%s\n%r" % (text, self.get_test_value())
            except TestValueError:
                pass
        return text

    def get_parents(self):
        return [self.owner] if self.owner is not None else []

    def get_test_value(self):
        """The test value (``tag.test_value``); raises ``TestValueError`` when there is none."""
        try:
            return self.tag.test_value
        except AttributeError:
            raise TestValueError("%s has no test value (set %s.tag.test_value)" % (self, self)) from None

    def eval(self, inputs_to_values=None, **kwargs):
        """Compile (once per set of inputs and keyword arguments, memoised) and run the graph
        computing this variable.

        ``inputs_to_values`` maps the graph's input variables, or their names (as PyTensor's
        ``eval`` accepts), to values; ``kwargs`` go to ``ffigraph.function`` (``mode=``,
        ``on_unused_input=``, ...), as PyTensor's (an unused input is an UnusedInputError unless
        ``on_unused_input`` says otherwise).
        """
        inputs_to_values = dict(inputs_to_values or {})
        if any(isinstance(k, str) for k in inputs_to_values):
            inputs_to_values = self._string_keys_to_variables(inputs_to_values)
        # a keyword value that is not plain data (a Mode) counts by identity; the entry keeps it
        # alive, so that its id is not reused while the entry stands
        options = tuple(sorted((k, v if isinstance(v, (str, int, float, bool, type(None))) else ("id", id(v)))
                               for k, v in kwargs.items()))
        key = (tuple(inputs_to_values), options)
        cache = self.__dict__.setdefault("_eval_cache", {})
        if key not in cache:
            cache[key] = (compile_graph(list(key[0]), self, **kwargs), kwargs)
        return cache[key][0](*inputs_to_values.values())

    def dprint(self, **kwargs):
        """``ffigraph.printing.debugprint(self, **kwargs)``."""
        return debug_print(self, **kwargs)


    def _string_keys_to_variables(self, inputs_to_values):
        """``eval``'s mapping with each name replaced by the one input of this graph so named."""
        inputs = [v for v in graph_inputs([self]) if not isinstance(v, Constant)]
        converted = {}
        for key, value in inputs_to_values.items():
            if isinstance(key, str):
                found = [v for v in inputs if v.name == key]
                if len(found) != 1:
                    raise ValueError("eval: %r names %s of the graph's inputs (named: %s)" % (
                        key, "none" if not found else "%d" % len(found),
                        ", ".join(sorted({repr(v.name) for v in inputs if v.name})) or "none"))
                key = found[0]
            converted[key] = value
        return converted


# How the graph and rewriting layers compile a graph (``Variable.eval``, constant folding through an op's C
# code): the graph layer knows nothing of the layers above it, so ``ffigraph.compile`` plugs its
# builder in here when imported.
_function_builder = [None]


def set_function_builder(build):
    """Make ``compile_graph`` use ``build(inputs, outputs, linker=None, optimizer="default")``."""
    _function_builder[0] = build


def compile_graph(inputs, outputs, linker=None, optimizer="default", **kwargs):
    """A compiled function of ``inputs`` computing ``outputs``, built by the compile layer (the default
    mode, or ``Mode(linker=linker, optimizer=optimizer)``; ``kwargs`` go to ``ffigraph.function``)."""
    build = _function_builder[0]
    if build is None:
        raise RuntimeError("compiling %s needs the compile layer, which plugs itself in when imported: "
                           "import ffigraph (or ffigraph.compile) first" % (outputs,))
    return build(inputs, outputs, linker=linker, optimizer=optimizer, **kwargs)


# How ``Variable.dprint`` and ``Function.dprint`` print: ffigraph.printing, a layer above, plugs its
# debugprint in here when imported.
_debug_printer = [None]


def set_debug_printer(printer):
    """Make ``debug_print`` call ``printer(obj, **kwargs)`` (ffigraph.printing.debugprint)."""
    _debug_printer[0] = printer


def debug_print(obj, **kwargs):
    """``ffigraph.printing.debugprint(obj, **kwargs)``, through the hook the printing layer sets."""
    printer = _debug_printer[0]
    if printer is None:
        raise RuntimeError("dprint needs ffigraph.printing, which plugs itself in when imported: import ffigraph first")
    return printer(obj, **kwargs)


class Constant(Variable):
    """A variable whose value is fixed at graph-building time."""

    def __init__(self, type, data, name=None):
        super().__init__(type, None, None, name)
        self.data = type.filter(data)

    def signature(self):
        return (self.type, self.type.constant_key(self.data))

    def equals(self, other):
        return isinstance(other, Constant) and self.signature() == other.signature()

    def clone(self, name=None):
        cp = type(self)(self.type, self.data, name if name is not None else self.name)
        cp.tag.__dict__.update(self.tag.__dict__)
        return cp

    @property
    def value(self):
        return self.data

    def get_test_value(self):
        """A constant's test value is its value."""
        return self.data

    def __str__(self):
        if self.name is not None:
            return self.name
        text = str(self.data)
        return text if len(text) < 20 else text[:17] + "..."

    @property
    def owner(self):
        return None

    @owner.setter
    def owner(self, value):
        if value is not None:
            raise ValueError("a Constant cannot have an owner")


# ---------------------------------------------------------------- traversal


def ancestors(outputs, blockers=()):
    """Every variable that ``outputs`` depend on (themselves included), stopping at ``blockers``,
    in Theano's order: a depth-first search that takes the outputs from the last one and each
    node's inputs from the first one, listing a variable where it is first met (so
    ``dot(x, W) + b`` gives x, W, b)."""
    blockers = set(blockers)
    seen, order = set(), []
    stack = list(outputs)
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        order.append(v)
        if v.owner is not None and v not in blockers:
            stack.extend(reversed(v.owner.inputs))
    return order


def graph_inputs(outputs, blockers=()):
    """The ownerless variables (inputs and constants) that ``outputs`` depend on, in the order
    ``ancestors`` meets them: Theano's ``theano.gof.graph.inputs``."""
    return [v for v in ancestors(outputs, blockers) if v.owner is None or v in blockers]


def io_toposort(inputs, outputs):
    """Apply nodes between ``inputs`` and ``outputs``, each after the nodes it depends on."""
    stop = set(inputs)
    order, done, on_stack = [], set(), set()
    for out in outputs:
        _visit(out, stop, order, done, on_stack)
    return order


def _visit(root, stop, order, done, on_stack):
    # Iterative DFS post-order so deep graphs do not hit the recursion limit.
    stack = [(root, False)]
    while stack:
        var, expanded = stack.pop()
        node = var.owner
        if node is None or var in stop or node in done:
            continue
        if expanded:
            done.add(node)
            on_stack.discard(node)
            order.append(node)
            continue
        if node in on_stack:
            continue
        on_stack.add(node)
        stack.append((var, True))
        for inp in reversed(node.inputs):
            stack.append((inp, False))


def clone_get_equiv(inputs, outputs, copy_inputs=True, memo=None):
    """Clone the graph between ``inputs`` and ``outputs``; returns {old: new} for vars and nodes."""
    memo = {} if memo is None else memo
    for v in inputs:
        memo.setdefault(v, v.clone() if copy_inputs else v)
    for node in io_toposort(inputs, outputs):
        for v in node.inputs:
            if v not in memo:
                memo[v] = v.clone() if (copy_inputs and isinstance(v, Constant)) else v
        new_node = Apply(node.op, [memo[v] for v in node.inputs], [o.clone() for o in node.outputs])
        new_node.tag.__dict__.update(node.tag.__dict__)
        memo[node] = new_node
        for old, new in zip(node.outputs, new_node.outputs):
            memo.setdefault(old, new)
    for v in outputs:
        memo.setdefault(v, v)
    return memo


def clone(inputs, outputs, copy_inputs=True):
    """Return (new_inputs, new_outputs) of a copy of the graph between them."""
    equiv = clone_get_equiv(inputs, outputs, copy_inputs)
    return [equiv[v] for v in inputs], [equiv[v] for v in outputs]


def _replacement_pairs(replace, what):
    pairs = list(replace.items()) if isinstance(replace, dict) else list(replace or [])
    for pair in pairs:
        if len(pair) != 2 or not isinstance(pair[0], Variable) or not isinstance(pair[1], Variable):
            raise TypeError("%s: replace must map Variables to Variables, got %r" % (what, pair))
    return pairs


def clone_replace(output, replace=None, strict=True, share_inputs=True):
    """A copy of the graph of ``output`` (a variable, or a list or tuple of them: the same form
    comes back) with each key of ``replace`` (a dict or pairs) swapped for its value: Theano's
    ``theano.clone`` and PyTensor's ``clone_replace``. A key may be any variable of the graph,
    an intermediate one included; the graph above it is not copied.

    strict: a replacement must have the type of what it replaces (or one convertible to it);
    with ``strict=False`` its type may differ and the nodes that read it are made again by
    their ops, so their outputs get the types that follow.
    share_inputs: the copy reads the same free variables (and shared variables) as the original;
    with False it reads copies of them (a copied shared variable keeps the same storage).
    """
    pairs = _replacement_pairs(replace, "clone_replace")
    single = isinstance(output, Variable)
    outs = [output] if single else list(output)
    memo = {}
    for old, new in pairs:
        if old.type != new.type and strict:
            converted = old.type.convert_variable(new)
            if converted is None:
                converted = old.type.filter_variable(new)
            new = converted
        memo[old] = new
    # The replaced variables are leaves of the copy, so the traversal stops there.
    leaves = graph_inputs(outs, blockers=memo)
    if not share_inputs:
        for v in leaves:
            if v not in memo and not isinstance(v, Constant):
                memo[v] = v.clone()
    if strict:
        equiv = clone_get_equiv(leaves, outs, copy_inputs=False, memo=memo)
    else:
        equiv = _rebuild(outs, memo)
    result = [equiv[v] for v in outs]
    if single:
        return result[0]
    return tuple(result) if isinstance(output, tuple) else result


def _rebuild(outputs, memo):
    """{old: new} for the graph of ``outputs`` over the replacements in ``memo``, each node whose
    inputs changed made again by its op (the types that follow from the new inputs)."""
    return rebuild_graph(list(memo), outputs, memo)


def rebuild_graph(inputs, outputs, memo, substitute=None):
    """{old: new} for the graph from ``inputs`` to ``outputs`` over the replacements in ``memo``
    (filled in place): ``substitute(node, new_inputs)`` may give a node's new outputs (None: it
    does not); otherwise a node whose inputs changed is made again by its op (the types that follow
    from the new inputs), and the others stay."""
    for node in io_toposort(inputs, outputs):
        new_inputs = [memo.get(v, v) for v in node.inputs]
        new_outputs = substitute(node, new_inputs) if substitute is not None else None
        if new_outputs is None:
            if all(n is o for n, o in zip(new_inputs, node.inputs)):
                continue
            same_types = all(n.type == o.type for n, o in zip(new_inputs, node.inputs))
            new_outputs = node.clone_with_new_inputs(new_inputs, strict=same_types).outputs
        for old, new in zip(node.outputs, new_outputs):
            memo[old] = new
    for v in outputs:
        memo.setdefault(v, v)
    return memo


def graph_replace(outputs, replace, strict=True):
    """PyTensor's ``graph_replace``: the graph of ``outputs`` with the variables ``replace`` maps
    (intermediate ones included) swapped for their values, types kept. With ``strict``, a key
    the outputs do not depend on is a ValueError (a replacement that would silently do nothing)."""
    pairs = _replacement_pairs(replace, "graph_replace")
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    if strict:
        reached = set(ancestors(outs, blockers=[old for old, _ in pairs]))
        unused = [old for old, _ in pairs if old not in reached]
        if unused:
            raise ValueError("graph_replace: the outputs do not depend on %s, so replacing %s does nothing "
                             "(pass strict=False to allow it)"
                             % (", ".join(map(str, unused)), "it" if len(unused) == 1 else "them"))
    result = clone_replace(outs, pairs)
    return result[0] if single else result


def is_in_ancestors(node, candidate):
    """True when ``candidate`` (an Apply) computes something ``node`` depends on."""
    return any(v.owner is candidate for v in ancestors(node.inputs))


# ------------------------------------------------------------------ comparing graphs
# Whether two graphs compute the same thing, structurally (``equal_computations`` is PyTensor's
# pytensor.graph.basic name, and Theano's theano.scan_module.scan_utils one; ``is_same_graph``
# Theano's theano.gof.graph one). Two variables are the same computation when they are the same
# variable, a pair the caller declares equal (``in_xs[i]`` with ``in_ys[i]``), two constants of one
# type and value, or the same output of two nodes of equal ops whose inputs are, pairwise, the same
# computation. No rewrite runs: ``x * (y * z)`` and ``(x * y) * z`` differ.


def _constants_equal(x, y):
    if x.type != y.type:
        return False
    try:
        return bool(x.type.values_eq(x.data, y.data))
    except (TypeError, ValueError):
        return x.data is y.data


def _raw_equal(x, y):
    """A variable against a plain value (Theano lets one side be data): a constant holding it."""
    if isinstance(x, Variable):
        x, y = y, x
    if isinstance(y, Variable):
        if not isinstance(y, Constant):
            return False
        y = y.data
    try:
        return bool(np.all(np.asarray(x) == np.asarray(y)))
    except (TypeError, ValueError):
        return x is y


def equal_computations(xs, ys, in_xs=None, in_ys=None):
    """True when each ``xs[i]`` computes what ``ys[i]`` computes, given that each ``in_xs[j]``
    stands for ``in_ys[j]`` (free variables match only themselves otherwise)."""
    xs, ys = list(xs), list(ys)
    in_xs, in_ys = list(in_xs or ()), list(in_ys or ())
    if len(xs) != len(ys) or len(in_xs) != len(in_ys):
        return False
    same = {}   # (id(x), id(y)) -> the answer, once known
    pending = []
    for x, y in zip(in_xs, in_ys):
        if x.type != y.type:
            return False
        same[(id(x), id(y))] = True
    for x, y in zip(xs, ys):
        if not isinstance(x, Variable) or not isinstance(y, Variable):
            if not _raw_equal(x, y):
                return False
            continue
        pending.append((x, y))
    # depth first, an explicit stack so that deep graphs do not reach the recursion limit
    stack = [(x, y, False) for x, y in reversed(pending)]
    while stack:
        x, y, expanded = stack.pop()
        key = (id(x), id(y))
        if expanded:
            nx, ny = x.owner, y.owner
            same[key] = all(same.get((id(a), id(b)), False) for a, b in zip(nx.inputs, ny.inputs))
            if not same[key]:
                return False
            continue
        if key in same:
            if not same[key]:
                return False
            continue
        if x is y:
            same[key] = True
            continue
        if x.owner is None or y.owner is None:
            if isinstance(x, Constant) and isinstance(y, Constant):
                same[key] = _constants_equal(x, y)
            else:
                same[key] = False   # (two different free variables, not declared the same)
            if not same[key]:
                return False
            continue
        nx, ny = x.owner, y.owner
        if x.type != y.type or nx.op != ny.op or len(nx.inputs) != len(ny.inputs) \
                or len(nx.outputs) != len(ny.outputs) or nx.outputs.index(x) != ny.outputs.index(y):
            return False
        stack.append((x, y, True))
        for a, b in reversed(list(zip(nx.inputs, ny.inputs))):
            if (id(a), id(b)) not in same:
                stack.append((a, b, False))
    return True


def is_same_graph(var1, var2, givens=None):
    """True when ``var1`` and ``var2`` compute the same thing once the variables ``givens`` maps
    (a dict or pairs) are replaced by their values in both graphs (Theano's
    ``is_same_graph``: ``is_same_graph(x, y, givens={x: y})`` holds)."""
    pairs = list(givens.items()) if isinstance(givens, dict) else list(givens or ())
    if pairs:
        var1 = clone_replace(var1, pairs, strict=False)
        var2 = clone_replace(var2, pairs, strict=False)
    return equal_computations([var1], [var2])
