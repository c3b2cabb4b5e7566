"""Linkers turn a FunctionGraph into a thunk plus the storage cells it reads and writes.

A storage cell is a one-element list; a ``Container`` wraps one cell with
the type that filters what is put in it. Every linker returns
``(thunk, input_cells, output_cells)`` from ``make_thunk``: put values in the
input cells, call the thunk, read the output cells.
"""
from __future__ import annotations

from ffigraph.graph.basic import Constant
from ffigraph.linkers import lazy


class Container:
    """A storage cell with the Type (and casting policy) that filters values put in it."""

    def __init__(self, type, storage=None, name=None, strict=False, allow_downcast=None, readonly=False):
        self.type = type
        self.storage = [None] if storage is None else storage
        self.name = name
        self.strict = strict
        self.allow_downcast = allow_downcast
        self.readonly = readonly

    @property
    def data(self):
        return self.storage[0]

    @data.setter
    def data(self, value):
        if self.readonly:
            raise ValueError("container %s is read-only" % (self.name,))
        if value is None:
            self.storage[0] = None
        else:
            self.storage[0] = self.type.filter(value, strict=self.strict, allow_downcast=self.allow_downcast)

    value = data

    def __getstate__(self):
        # the value travels; the lock that orders updates in this process does not (a new one is
        # made on first use)
        state = dict(self.__dict__)
        state.pop("update_lock", None)
        return state

    def __repr__(self):
        return "<%s: %r>" % (self.name or "container", self.storage[0])


class Linker:
    """Base: ``accept(fgraph)`` returns a linker bound to that graph; ``make_thunk`` builds it."""

    name = "linker"
    profile = False   # function(profile=True) sets it before make_thunk: time every node

    def __init__(self):
        self.fgraph = None

    def accept(self, fgraph, no_recycling=None):
        if self.fgraph is not None and self.fgraph is not fgraph:
            return type(self)(**self._init_kwargs()).accept(fgraph, no_recycling)
        self.fgraph = fgraph
        self.no_recycling = list(no_recycling or [])
        return self

    def _init_kwargs(self):
        return {}

    def __reduce__(self):
        # a linker travels as its kind and settings, unbound (its graph and compiled state stay here)
        return _new_linker, (type(self), self._init_kwargs())

    def make_thunk(self, input_storage=None):
        raise NotImplementedError

    def describe_nodes(self):
        """(node, how it runs) for each node, in execution order; shown by ``Function.info()``."""
        raise NotImplementedError


def make_storage_map(fgraph, input_storage=None):
    """A cell per variable of ``fgraph``; inputs use ``input_storage`` when given, constants are filled."""
    if input_storage is None:
        input_storage = [[None] for _ in fgraph.inputs]
    if len(input_storage) != len(fgraph.inputs):
        raise ValueError("expected %d input cells, got %d" % (len(fgraph.inputs), len(input_storage)))
    storage_map = dict(zip(fgraph.inputs, input_storage))
    for node in fgraph.toposort():
        for v in node.inputs:
            if v not in storage_map:
                storage_map[v] = [v.data] if isinstance(v, Constant) else [None]
        for v in node.outputs:
            storage_map.setdefault(v, [None])
    for v in fgraph.outputs:
        if v not in storage_map:
            storage_map[v] = [v.data] if isinstance(v, Constant) else [None]
    return storage_map


def annotate_node_error(err, node, position, fgraph):
    """Add to ``err`` which node failed and on which inputs, keeping the exception's class."""
    from ffigraph.graph.basic import ancestors

    inputs = ", ".join("%s: %s" % (v, v.type) for v in node.inputs)
    feeding = set(ancestors(node.inputs))
    where = "\nApply node that caused the error: #%d %s\nNode inputs: %s" % (position, node, inputs)
    describe = getattr(fgraph, "describe_error_inputs", None)   # a function's own words (ffigraph.compile)
    if describe is not None:
        where += describe(fgraph, feeding)
    else:
        graph_inputs = ", ".join("%s (position %d)" % (v, i) for i, v in enumerate(fgraph.inputs) if v in feeding)
        if graph_inputs:
            where += "\nFunction inputs it depends on: %s" % graph_inputs
    where += node_trace_text(node)
    if err.args and isinstance(err.args[0], str):
        err.args = (err.args[0] + where,) + err.args[1:]
    else:
        err.args = err.args + (where,)
    err.failed_node = node
    err.failed_node_index = position   # (the graph's own index: a one-node library said 0)
    return err


def node_trace_text(node):
    """Where ``node`` was created (``node.tag.trace``), as error messages show it, or a hint."""
    from ffigraph.config import config
    from ffigraph.graph.utils import creation_site, format_trace

    site = creation_site(node)
    if site is not None:
        return ("\nApply node created at: %s\nBacktrace when the node was created (use "
                "config.traceback__limit=N to make it longer, -1 for all):\n%s" % (site, format_trace(node)))
    if config.traceback__limit == 0:
        return ("\nHINT: set config.traceback__limit (FFIGRAPH_FLAGS=traceback__limit=8) to record where "
                "each node is created")
    return ""


def sequence_thunks(fgraph, order, node_thunks, storage_map, profile=False):
    """One thunk running ``node_thunks`` in order, naming the node when one fails.

    The cells that nodes write are cleared first, so no result of an earlier
    call is ever reused or returned twice. ``profile``: the timed twin instead, its
    counters in ``thunk.profile_recorder`` (a separate function, so the plain one pays nothing).
    A graph with lazy branches (``ifelse``) runs a guarded node only when its branch is taken
    (linkers.lazy); graphs without them keep the straight loop below.
    """
    if lazy.has_lazy_nodes(order):
        recorder = None
        if profile:
            from ffigraph.linkers.timing import PythonNodeTimes

            recorder = PythonNodeTimes(order, storage_map)
        thunk = lazy.lazy_sequence(fgraph, order, node_thunks, storage_map, annotate_node_error, recorder)
        if recorder is not None:
            thunk.profile_recorder = recorder
        return thunk
    if profile:
        from ffigraph.linkers.timing import PythonNodeTimes, timed_sequence

        recorder = PythonNodeTimes(order, storage_map)
        thunk = timed_sequence(fgraph, order, list(zip(node_thunks, order)), storage_map, recorder,
                               annotate_node_error)
        thunk.profile_recorder = recorder
        return thunk
    produced = [storage_map[v] for node in order for v in node.outputs]
    runs = list(zip(node_thunks, order))

    def thunk():
        for cell in produced:
            cell[0] = None
        for position, (fn, node) in enumerate(runs):
            try:
                fn()
            except Exception as err:
                raise annotate_node_error(err, node, position, fgraph)
            for cell, var in zip(getattr(fn, "outputs", ()), node.outputs):
                if cell[0] is None:
                    raise ValueError("%s produced no value for output %s" % (node.op, var))

    thunk.nodes = order
    return thunk


class PerformLinker(Linker):
    """Run each node's Python implementation (``perform`` or the op's own ``make_thunk``).

    The reference semantics every other linker is tested against.
    """

    name = "py"

    def make_thunk(self, input_storage=None):
        fgraph = self.fgraph
        order = lazy.execution_order(fgraph)
        storage_map = make_storage_map(fgraph, input_storage)
        compute_map = {v: [False] for v in storage_map}
        thunks = [node.op.make_thunk(node, storage_map, compute_map, self.no_recycling) for node in order]
        thunk = sequence_thunks(fgraph, order, thunks, storage_map, self.profile)
        input_cells = [storage_map[v] for v in fgraph.inputs]
        output_cells = [storage_map[v] for v in fgraph.outputs]
        return thunk, input_cells, output_cells

    def describe_nodes(self):
        return [(node, "python (perform)") for node in lazy.execution_order(self.fgraph)]


def _new_linker(cls, kwargs):
    return cls(**kwargs)
