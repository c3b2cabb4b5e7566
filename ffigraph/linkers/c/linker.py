"""The C linkers.

CLinker      one library for the whole graph (every node must have C code);
OpWiseCLinker one library per node, sequenced from Python; nodes without C
             code run their Python ``perform`` instead;
CVMLinker    the default: CLinker when every node has C code, else OpWiseCLinker.
"""
from __future__ import annotations

from ffigraph.abi import ffi
from ffigraph.graph.fg import FunctionGraph
from ffigraph.linkers.basic import Linker, annotate_node_error, make_storage_map, sequence_thunks
from ffigraph.linkers.c.codegen import generate, node_has_c_code
from ffigraph.linkers.c.load import library_for
from ffigraph.linkers.c.marshal import CallBlock, from_dlpack_or_array

ROLE_INPUT, ROLE_SHARED, ROLE_OUTPUT, ROLE_UPDATE = 0, 1, 2, 3


def _alias_slot(var, inputs):
    """The input slot whose memory ``var`` may view (following view_map), or -1."""
    seen, stack = set(), [var]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in inputs:
            return inputs.index(v)
        node = v.owner
        viewed = node.op.view_map.get(v.index) if node is not None else None
        if viewed:
            stack.extend(node.inputs[i] for i in viewed)
    return -1


class CompiledGraph:
    """A loaded library plus one state and call block: the thing a thunk calls."""

    def __init__(self, fgraph, input_roles=None, output_roles=None, compiler=None):
        inputs = list(fgraph.inputs)
        alias = [_alias_slot(v, inputs) for v in fgraph.outputs]
        self.source = generate(fgraph, input_roles, output_roles, alias)
        self.library = library_for(self.source, compiler)
        err = ffi.new("FfgError *")
        state = self.library.create(ffi.NULL, err)
        if state == ffi.NULL:
            raise RuntimeError("creating the state of %s failed: %s"
                               % (self.library.path, ffi.string(err.message).decode()))
        self.state = ffi.gc(state, self.library.destroy)
        self.inputs = inputs
        self.outputs = list(fgraph.outputs)
        self.to_c = [v.type.to_c_value for v in inputs]
        self.from_c = [v.type.from_c_value for v in fgraph.outputs]
        self.block = CallBlock(len(inputs), len(self.outputs),
                               [v.type.c_abi_dtype() for v in self.outputs],
                               [getattr(v.type, "ndim", 0) for v in self.outputs])
        self.nodes = self.source.nodes

    def call(self, in_values):
        """Run on input values; returns the output values, or raises from the error record."""
        block = self.block
        try:
            for i, value in enumerate(in_values):
                block.set_input(i, from_dlpack_or_array(self.to_c[i](value)))
            rc = self.library.run(self.state, block.inputs, block.n_inputs, block.outputs,
                                  block.n_outputs, block.err)
            if rc:
                raise self._exception()
            return [conv(block.get_output(k)) for k, conv in enumerate(self.from_c)]
        finally:
            block.release_inputs()

    def _exception(self):
        cls, message, node_index, input_index = self.block.error()
        if input_index >= 0:
            message += " (input %d: %s)" % (input_index, self.inputs[input_index])
        exc = cls(message)
        exc.failed_node_index = node_index
        exc.failed_input_index = input_index
        return exc


def _graph_c_roles(fgraph):
    input_roles = [ROLE_SHARED if hasattr(v, "container") else ROLE_INPUT for v in fgraph.inputs]
    updates = set(getattr(fgraph, "update_slots", ()))
    output_roles = [ROLE_UPDATE if k in updates else ROLE_OUTPUT for k in range(len(fgraph.outputs))]
    return input_roles, output_roles


class CLinker(Linker):
    """One C translation unit, one library, one call for the whole graph."""

    name = "c"

    def __init__(self, compiler=None):
        super().__init__()
        self.compiler = compiler

    def _init_kwargs(self):
        return dict(compiler=self.compiler)

    def make_thunk(self, input_storage=None):
        fgraph = self.fgraph
        order = fgraph.toposort()
        missing = [n for n in order if not node_has_c_code(n)]
        if missing:
            raise NotImplementedError("CLinker needs C code for every node; these have none: %s "
                                      "(use linker='c|py' or 'cvm' to run them in Python)"
                                      % ", ".join("#%d %s" % (order.index(n), n) for n in missing))
        compiled = CompiledGraph(fgraph, *_graph_c_roles(fgraph), compiler=self.compiler)
        self.compiled = compiled
        storage_map = make_storage_map(fgraph, input_storage)
        in_cells = [storage_map[v] for v in fgraph.inputs]
        out_cells = [storage_map[v] for v in fgraph.outputs]
        nodes = compiled.nodes

        def thunk():
            try:
                values = compiled.call([cell[0] for cell in in_cells])
            except Exception as err:
                index = getattr(err, "failed_node_index", -1)
                if 0 <= index < len(nodes):
                    raise annotate_node_error(err, nodes[index], index, fgraph)
                raise
            for cell, value in zip(out_cells, values):
                cell[0] = value

        thunk.nodes = order
        return thunk, in_cells, out_cells

    def describe_nodes(self):
        return [(node, "C (whole-graph library)") for node in self.fgraph.toposort()]

    def source(self):
        """The generated C source of the graph this linker built."""
        return self.compiled.source.source


def _node_graph(node):
    """A FunctionGraph of one node, its distinct inputs (constants included) as slots."""
    inputs = []
    for v in node.inputs:
        if v not in inputs:
            inputs.append(v)
    return FunctionGraph(inputs, node.outputs, clone=True), inputs


class OpWiseCLinker(Linker):
    """One library per node (shared between identical nodes), sequenced from Python.

    Nodes without C code run their Python implementation, unless
    ``fallback=False``, in which case they raise NotImplementedError.
    """

    name = "c|py"

    def __init__(self, compiler=None, fallback=True):
        super().__init__()
        self.compiler = compiler
        self.fallback = fallback

    def _init_kwargs(self):
        return dict(compiler=self.compiler, fallback=self.fallback)

    def make_thunk(self, input_storage=None):
        fgraph = self.fgraph
        order = fgraph.toposort()
        storage_map = make_storage_map(fgraph, input_storage)
        compute_map = {v: [False] for v in storage_map}
        self.how = {}
        thunks = []
        for position, node in enumerate(order):
            if node_has_c_code(node):
                thunks.append(self._c_thunk(node, storage_map))
                self.how[node] = "C (own library)"
            elif self.fallback:
                thunks.append(node.op.make_thunk(node, storage_map, compute_map, self.no_recycling))
                self.how[node] = "python (perform): no C code"
            else:
                raise NotImplementedError("node #%d %s has no C code" % (position, node))
        thunk = sequence_thunks(fgraph, order, thunks, storage_map)
        return thunk, [storage_map[v] for v in fgraph.inputs], [storage_map[v] for v in fgraph.outputs]

    def _c_thunk(self, node, storage_map):
        small, inputs = _node_graph(node)
        compiled = CompiledGraph(small, compiler=self.compiler)
        in_cells = [storage_map[v] for v in inputs]
        out_cells = [storage_map[v] for v in node.outputs]

        def thunk():
            for cell, value in zip(out_cells, compiled.call([c[0] for c in in_cells])):
                cell[0] = value

        thunk.outputs = out_cells
        return thunk

    def describe_nodes(self):
        return [(node, self.how.get(node, "?")) for node in self.fgraph.toposort()]


class CVMLinker(Linker):
    """The default: the whole graph in C when every node has C code, else C node by node."""

    name = "cvm"

    def __init__(self, compiler=None):
        super().__init__()
        self.compiler = compiler
        self.chosen = None

    def _init_kwargs(self):
        return dict(compiler=self.compiler)

    def make_thunk(self, input_storage=None):
        nodes = self.fgraph.toposort()
        if all(node_has_c_code(n) for n in nodes):
            self.chosen = CLinker(self.compiler)
        else:
            self.chosen = OpWiseCLinker(self.compiler)
        return self.chosen.accept(self.fgraph, self.no_recycling).make_thunk(input_storage)

    def describe_nodes(self):
        return self.chosen.describe_nodes()
