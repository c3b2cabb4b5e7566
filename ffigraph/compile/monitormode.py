"""``MonitorMode``: call your functions before and after every node, as PyTensor's.

>>> import numpy as np, ffigraph, ffigraph.tensor as T
>>> from ffigraph.compile.monitormode import MonitorMode, detect_nan
>>> x = T.dscalar("x")
>>> f = ffigraph.function([x], [T.log(x) * x], mode=MonitorMode(post_func=detect_nan))
>>> f(0)   # log(0) * 0 = -inf * 0 = NaN: detect_nan prints the node and its values  # doctest: +SKIP

``pre_func(fgraph, i, node, fn)`` runs before node ``i`` (its position in
execution order) and ``post_func`` after it; ``fn`` is the node's thunk, whose
``fn.inputs`` and ``fn.outputs`` are lists of one-element storage cells
(``fn.outputs[0][0]`` is the first output's value). Theano's three-argument
form ``(i, node, fn)`` is accepted too.

Both this mode and NanGuardMode run the graph node by node (``WrapLinker``):
each node with C code runs its own one-node library, as under ``'c|py'``,
and the others run ``perform``. ``linker='py'`` runs every node through
``perform``; ``'c'`` refuses nodes without C code. The rewrites are the
optimizer's (FAST_RUN's by default), so what you see are the rewritten
graph's nodes: ``MonitorMode(...).excluding("fusion", "inplace")`` keeps the
elementwise ops apart.
"""
from __future__ import annotations

import inspect

import numpy as np

from ffigraph.compile.mode import Mode, predefined_linkers, register_mode
from ffigraph.linkers.basic import Linker, PerformLinker, make_storage_map, sequence_thunks
from ffigraph.linkers.c.codegen import node_has_c_code
from ffigraph.linkers.c.linker import CLinker, CVMLinker, OpWiseCLinker

__all__ = ["MonitorMode", "WrapLinker", "detect_nan"]

def _node_kind(linker):
    """'py', 'c' or 'c|py' from a linker name or instance (None: node by node in C)."""
    if linker is None:
        return "c|py", None
    if isinstance(linker, str):
        if linker not in predefined_linkers:
            raise ValueError("unknown linker %r (known: %s)" % (linker, ", ".join(sorted(predefined_linkers))))
        linker = predefined_linkers[linker]()
    compiler = getattr(linker, "compiler", None)
    if isinstance(linker, PerformLinker):
        return "py", None
    if isinstance(linker, CLinker):
        return "c", compiler
    if isinstance(linker, (OpWiseCLinker, CVMLinker)):
        return "c|py", compiler
    raise TypeError("a node-by-node mode cannot run its nodes with %r; give 'py', 'c|py', 'cvm' or 'c'"
                    % (linker,))


class WrapLinker(Linker):
    """Runs the graph node by node and hands each node's thunk to ``wrapper(fgraph, i, node, fn)``,
    which must call ``fn()`` (once) to run the node.

    node_linker: how each node runs: ``'c|py'`` (the default, also for ``'cvm'`` and None)
    its own one-node C library, ``perform`` where the node has no C code; ``'c'`` the
    same but refusing nodes without C code; ``'py'`` ``perform`` everywhere.
    before: ``before(fgraph, input_cells)`` at the start of every call, before any node runs
    (``input_cells``: the graph inputs' storage cells, in ``fgraph.inputs`` order).
    """

    name = "wrap"

    def __init__(self, wrapper, node_linker=None, compiler=None, before=None):
        super().__init__()
        if not callable(wrapper):
            raise TypeError("WrapLinker: wrapper must be callable, got %r" % (wrapper,))
        self.wrapper, self.node_linker, self.before = wrapper, node_linker, before
        self.kind, found = _node_kind(node_linker)
        self.compiler = compiler if compiler is not None else found
        self.how = {}
        self._opwise = None

    def _init_kwargs(self):
        return dict(wrapper=self.wrapper, node_linker=self.node_linker, compiler=self.compiler, before=self.before)

    def make_thunk(self, input_storage=None):
        fgraph = self.fgraph
        order = fgraph.toposort()
        storage_map = make_storage_map(fgraph, input_storage)
        compute_map = {v: [False] for v in storage_map}
        self._opwise = OpWiseCLinker(self.compiler).accept(fgraph, self.no_recycling)
        self.how = {}
        runs = []
        for position, node in enumerate(order):
            if self.kind != "py" and node_has_c_code(node):
                fn = self._opwise._c_thunk(node, storage_map)
                self.how[node] = "C (own library)"
            elif self.kind == "c":
                raise NotImplementedError("linker 'c' needs C code for every node; node #%d %s has none (use "
                                          "'c|py' to run it in Python)" % (position, node))
            else:
                fn = node.op.make_thunk(node, storage_map, compute_map, self.no_recycling)
                self.how[node] = "python (perform)"
            runs.append(self._wrapped(fgraph, position, node, fn, storage_map))
        inner = sequence_thunks(fgraph, order, runs, storage_map, self.profile)
        before = self.before
        if before is None:
            thunk = inner
        else:
            input_cells = [storage_map[v] for v in fgraph.inputs]

            def thunk():
                before(fgraph, input_cells)
                inner()

            thunk.nodes = order
            if hasattr(inner, "profile_recorder"):
                thunk.profile_recorder = inner.profile_recorder
        return thunk, [storage_map[v] for v in fgraph.inputs], [storage_map[v] for v in fgraph.outputs]

    def _wrapped(self, fgraph, position, node, fn, storage_map):
        """The node's thunk, with ``inputs``/``outputs`` cells whatever made it, run through the wrapper."""
        in_cells = [storage_map[v] for v in node.inputs]
        out_cells = [storage_map[v] for v in node.outputs]
        if getattr(fn, "inputs", None) is None or getattr(fn, "outputs", None) is None:
            try:
                fn.inputs, fn.outputs = in_cells, out_cells
            except AttributeError:   # a callable object that takes no attributes: give it a shell that does
                inner_fn = fn

                def fn():
                    inner_fn()

                fn.inputs, fn.outputs = in_cells, out_cells
        wrapper = self.wrapper

        def run():
            wrapper(fgraph, position, node, fn)

        run.outputs = out_cells
        return run

    def describe_nodes(self):
        return [(node, self.how.get(node, "?")) for node in self.fgraph.toposort()]

    def source(self):
        """The generated C of every node that runs in C (see OpWiseCLinker.source)."""
        return self._opwise.source()


def _call_form(func, what):
    """``func`` as a four-argument callable; Theano's ``(i, node, fn)`` form is adapted."""
    if func is None:
        return None
    if not callable(func):
        raise TypeError("MonitorMode: %s must be callable or None, got %r" % (what, func))
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return func
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return func
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if len(positional) == 3 and len(required) == 3:
        return lambda fgraph, i, node, fn: func(i, node, fn)
    return func


def clone_wrapping_mode(mode, own, changes):
    """A copy of ``mode`` (a Mode whose linker is a WrapLinker around ``mode.node_linker``) with
    ``changes``: ``own`` are the mode's own arguments; a new linker replaces the wrapped one (a
    WrapLinker given back, as Mode's helpers do, keeps it); a device does not apply."""
    kw = dict(own, optimizer=mode.optimizer, linker=mode.node_linker, include=mode.include,
              exclude=mode.exclude, require=mode.require)
    changes = dict(changes)
    changes.pop("device", None)
    linker = changes.pop("linker", None)
    if linker is not None and not isinstance(linker, WrapLinker):
        kw["linker"] = linker
    kw.update(changes)
    return type(mode)(**kw)


class MonitorMode(Mode):
    """PyTensor's MonitorMode: ``pre_func(fgraph, i, node, fn)`` before each node runs and
    ``post_func(fgraph, i, node, fn)`` after it (see the module docstring).

    optimizer: as for Mode (``"default"``: config.optimizer). linker: how each node runs
    (``'c|py'``, the default; ``'cvm'`` means the same; ``'py'``; ``'c'``); the mode always
    runs node by node, so it never builds one library for the whole graph.
    """

    def __init__(self, pre_func=None, post_func=None, optimizer="default", linker=None, include=(), exclude=(),
                 require=()):
        self.pre_func, self.post_func = pre_func, post_func
        self._pre, self._post = _call_form(pre_func, "pre_func"), _call_form(post_func, "post_func")
        self.node_linker = linker
        super().__init__(linker=WrapLinker(self.eval, linker), optimizer=optimizer, include=include,
                         exclude=exclude, require=require, device="cpu")

    def eval(self, fgraph, i, node, fn):
        """Run one node: ``pre_func``, the node, ``post_func``."""
        if self._pre is not None:
            self._pre(fgraph, i, node, fn)
        fn()
        if self._post is not None:
            self._post(fgraph, i, node, fn)

    def _clone(self, **changes):
        return clone_wrapping_mode(self, dict(pre_func=self.pre_func, post_func=self.post_func), changes)

    def __str__(self):
        return "MonitorMode(optimizer=%s)" % (self.optimizer,)

    __repr__ = __str__


# How a node is shown in a report (detect_nan, NanGuardMode's errors). ffigraph.printing, a later
# layer, installs its debugprint here when it is imported (``import ffigraph`` does); without it a
# node is shown as one line.
_node_printer = [lambda var: "%s\n" % (var,)]


def set_node_printer(printer):
    """``printer(variable_or_node) -> str``: the text reports show for a node or one of its outputs."""
    _node_printer[0] = printer


def node_text(var):
    return _node_printer[0](var)


def detect_nan(fgraph, i, node, fn):
    """A ``post_func`` for MonitorMode: print the node, its inputs and outputs when an output holds NaN."""
    for output in fn.outputs:
        value = output[0]
        if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "fc" and np.isnan(value).any():
            print("*** NaN detected ***")
            print(node_text(node), end="")
            print("Inputs : %s" % [cell[0] for cell in fn.inputs])
            print("Outputs: %s" % [cell[0] for cell in fn.outputs])
            break


register_mode("MonitorMode", MonitorMode)
