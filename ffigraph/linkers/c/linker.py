"""The C linkers::

    CLinker      one library for the whole graph (every node must have C code);
    OpWiseCLinker one library per node, sequenced from Python; nodes without C
                 code run their Python ``perform`` instead;
    CVMLinker    the default: CLinker when every node has C code, else OpWiseCLinker.

``Mode(linker=...)`` names them ``c``, ``c|py`` and ``cvm``.
"""
from __future__ import annotations

import logging
import os
import warnings

from ffigraph.abi import dtype_code, ffi
from ffigraph.config import config
from ffigraph.graph.fg import FunctionGraph
from ffigraph.linkers import devices, lazy
from ffigraph.linkers.basic import Linker, annotate_node_error, make_storage_map, sequence_thunks
from ffigraph.linkers.timing import compile_phase
from ffigraph.linkers.c.callshim import packed_run
from ffigraph.linkers.c.codegen import OP_LABEL_LIMIT, comment_text, generate, node_has_c_code, short_text
from ffigraph.linkers.c import cache
from ffigraph.linkers.c.graph_key import structural_key
from ffigraph.linkers.c.load import library_at, library_for
import numpy as np

from ffigraph.linkers.c.interface import CType
from ffigraph.linkers.c.marshal import CallBlock, DeviceView, as_host_array

_log = logging.getLogger("ffigraph.linkers")

ndarray = np.ndarray

ROLE_INPUT, ROLE_SHARED, ROLE_OUTPUT, ROLE_UPDATE = 0, 1, 2, 3
NODE_LINE = "\n  in node #"   # what an error record's message has after its cause (ffg_mark_failure)


def _is_tensor_type(t):
    """Values already are numpy arrays in the slot's dtype (no conversion hooks needed)."""
    return type(t).to_c_value is CType.to_c_value and type(t).from_c_value is CType.from_c_value


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
        viewed = (list(node.op.view_map.get(v.index, ())) + list(node.op.destroy_map.get(v.index, ()))
                  if node is not None else None)
        if viewed:
            stack.extend(node.inputs[i] for i in viewed)
    return -1


class CompiledGraph:
    """A loaded library plus one state and call block: the thing a thunk calls."""

    def __init__(self, fgraph, input_roles=None, output_roles=None, compiler=None, annotate=True, profile=False,
                 lookup=None):
        """``lookup``: this graph's ``WarmLookup`` with the same roles, compiler and profile flag,
        when the caller made one already."""
        self.fgraph = fgraph
        self.annotate = annotate  # name the failing node of fgraph in errors (not for one-node graphs)
        inputs = list(fgraph.inputs)
        if lookup is None:
            lookup = WarmLookup(fgraph, input_roles, output_roles, compiler, profile)
        alias = lookup.alias
        self._generate_args = (fgraph, input_roles, output_roles, alias, profile)
        self._source = None
        # the warm path: the structural key names the cache entry, so no C is generated
        self.library = lookup.library(compiler)
        self.warm_hit = self.library is not None
        if self.warm_hit:
            self.nodes = lookup.order
            requirements = {}   # the key is only recorded for CPU graphs
            # the settings the key was made under (it covers them all): the source, generated
            # only when asked for, must come from them, not from the settings of that later moment
            self._config = config.snapshot()
        else:
            with compile_phase("codegen"):
                self._source = generate(fgraph, input_roles, output_roles, alias, profile=profile)
            self.library = library_for(self._source, compiler, graph_key=lookup.key)
            if lookup.key is not None:
                _remember(lookup.key, self._source, self.library, compiler)
            self.nodes = self._source.nodes
            requirements = self._source.requirements
        with compile_phase("load"):
            state, err = self.library.new_state()
        if state == ffi.NULL:
            raise RuntimeError("creating the state of %s failed: %s"
                               % (self.library.path, ffi.string(err.message).decode()))
        self.state = state   # destroyed when collected; its deleter keeps the library loaded until then
        self.profile_fn = self.library.profile_function() if profile else None
        self.inputs = inputs
        self.outputs = list(fgraph.outputs)
        self.to_c = [None if _is_tensor_type(v.type) else v.type.to_c_value for v in inputs]
        self.from_c = [None if _is_tensor_type(v.type) else v.type.from_c_value for v in self.outputs]
        offer = [v.owner is not None and _is_tensor_type(v.type) for v in self.outputs]
        on_device = [getattr(v.type, "device", "cpu") != "cpu" for v in self.outputs]
        self.block = CallBlock(len(inputs), len(self.outputs), [v.type.c_abi_dtype() for v in self.outputs], offer,
                               on_device)
        self.device_allocator = None
        if requirements.get("cuda_sources"):
            # GPU graphs only: the host's device memory
            self.device_allocator = devices.get("cuda").install_allocator(self.library, self.state, self.block)
        self.call = self._make_call()

    @property
    def source(self):
        """The GraphSource of the library: generated now if a warm hit skipped generating it."""
        if self._source is None:
            with config.using(self._config):
                graph_source = generate(*self._generate_args[:4], profile=self._generate_args[4])
            if graph_source.prefix != self.library.prefix:   # the structural key missed a difference
                _log.warning("the structural key of %s named %s, whose source differs from this graph's "
                             "(prefix %s); please report it", self.fgraph, self.library.path, graph_source.prefix)
            self._source = graph_source
        return self._source

    def renew_after_fork(self):
        """In a child made by fork() while a call of this graph may have been running in another
        thread (which the child does not have): a new state, and a call block that describes
        nothing. The old state's frame is as that call left it (its busy mark set, blocks half
        handed over), so it is let go without its destructor rather than destroyed."""
        old = self.state
        state, err = self.library.new_state()
        if state == ffi.NULL:
            raise RuntimeError("creating a new state of %s in a forked child failed: %s"
                               % (self.library.path, ffi.string(err.message).decode()))
        ffi.gc(old, None)   # (the library stays loaded: the handle holds it for the old state too)
        self.state = state
        self.block.renew_state(self.library.run, state)

    def _make_call(self):
        """The call: values in, output values out (or an exception from the error record)."""
        block = self.block
        set_input, offer, get_output = block.set_input, block.offer_outputs, block.get_output
        set_device_input = block.set_device_input
        run = self.library.run
        tensors, n_in, outputs, n_out, err = block.inputs, block.n_inputs, block.outputs, block.n_outputs, block.err
        to_c, from_c = self.to_c, self.from_c
        plain = all(c is None for c in to_c) and all(c is None for c in from_c)
        out_range = range(n_out)

        def call(values):
            try:
                i = 0
                for value in values:
                    conv = to_c[i]
                    if conv is not None:
                        value = conv(value)
                        if value.__class__ is DeviceView:
                            set_device_input(i, value)
                            i += 1
                            continue
                    set_input(i, value if value.__class__ is ndarray else as_host_array(value))
                    i += 1
                offer()
                if run(self.state, tensors, n_in, outputs, n_out, err):
                    raise self._exception()
                if plain:
                    return [get_output(k) for k in out_range]
                return [get_output(k) if conv is None else conv(get_output(k)) for k, conv in zip(out_range, from_c)]
            except BaseException:   # a failure, a refused value, an interrupt at any step
                block.forget_call()   # no slot describes a value now: the next call describes afresh
                raise

        return call

    def arity_call(self, guard=None, trust_same=False):
        """``call(v0, ..., v{n-1})`` -> list of outputs: the call written out for this graph's arity
        (see ``CallBlock.arity_call``, its ``guard``: the caller's steps around it in the same
        frame, and ``trust_same``), or None for graphs whose values need conversion hooks or live
        on a device."""
        block = self.block
        if any(c is not None for c in self.to_c) or any(c is not None for c in self.from_c) \
                or any(block.out_on_device) or self.device_allocator is not None:
            return None

        def fail():
            raise self._exception()   # (the call's handler forgets its inputs: CallBlock.arity_call)

        out_ndims = [getattr(v.type, "ndim", None) for v in self.outputs]
        if block.packed is None:   # one per block: every entry made for it shares the inputs it watches
            block.packed = packed_run(self.library.run, self.state, block.inputs, block.n_inputs,
                                      block.outputs, block.n_outputs, block.err)
        return block.arity_call(self.library.run, self.state, fail, out_ndims, guard, trust_same)

    def read_profile(self):
        """The library's profile counters (it must have been generated with profile=True)."""
        if self.profile_fn is None:
            raise RuntimeError("%s was not generated with profiling on" % self.library.path)
        record = ffi.new("FfgProfile *")
        if self.profile_fn(self.state, record) != 0:
            raise RuntimeError("%s_profile refused the state" % self.library.prefix)
        nodes = [(record.nodes[i].calls, record.nodes[i].total_ns) for i in range(record.n_nodes)]
        values = []
        for j in range(record.n_values):
            v = record.values[j]
            values.append((v.node, v.output, v.ndim, v.nbytes, [v.shape[d] for d in range(max(v.ndim, 0))]))
        return dict(runs=record.runs, total_ns=record.total_ns, n_nodes=record.n_nodes, nodes=nodes, values=values)

    def _exception(self):
        cls, message, node_index, input_index = self.block.error()
        # the record's cause, then a line naming the node, which the annotation says at more length
        annotated = self.annotate and 0 <= node_index < len(self.nodes)
        message, in_node, node_text = message.partition(NODE_LINE)
        if input_index >= 0:
            message += " (input %d: %s)" % (input_index, self.inputs[input_index])
        if in_node and not annotated and self.annotate:
            # (a one-node library of c|py: the linker that runs it names the node in its graph)
            message += in_node + node_text
        if 0 <= node_index < len(self.nodes):
            # an op may say which exception its failure is (CheckAndRaise: the one it was made with)
            error_class = getattr(self.nodes[node_index].op, "c_error_class", None)
            if error_class is not None:
                cls = error_class(cls)
        exc = cls(message)
        exc.failed_node_index = node_index
        exc.failed_input_index = input_index
        if annotated:
            annotate_node_error(exc, self.nodes[node_index], node_index, self.fgraph)
        return exc


class WarmLookup:
    """A graph's structural key and the cache record it names, if any (found before generating C).

    ``found``: (source key, symbol prefix) recorded by an earlier build of the same graph, else
    None. A record is only written after the graph was generated and built whole, so every node
    of a graph with a record has C code (the key covers everything that decides it)."""

    def __init__(self, fgraph, input_roles=None, output_roles=None, compiler=None, profile=False):
        inputs = list(fgraph.inputs)
        self.fgraph, self.input_roles, self.output_roles = fgraph, input_roles, output_roles
        self.alias = [_alias_slot(v, inputs) for v in fgraph.outputs]
        with compile_phase("codegen"):
            self.order = lazy.execution_order(fgraph)   # the generator's order, which the key covers
            self.key = structural_key(fgraph, input_roles, output_roles, self.alias, profile, compiler, self.order)
        self.found = cache.lookup_graph(self.key) if self.key is not None else None

    def library(self, compiler):
        """The loaded library of the record, or None (no record, or its entry is absent, damaged or
        not built for this graph: the caller generates the source, which rebuilds what is needed).

        Before it runs, a warm hit proves the library is this graph's: the entry's meta.json must
        list this structural key among the graphs it was built for (an index record naming another
        graph's entry is not believed), and once loaded, the library's describe() table must agree
        with the graph: its slots' roles, ranks and dtypes, and its nodes' ops."""
        if self.found is None:
            return None
        key, prefix = self.found
        skey = self.key
        library = library_at(prefix, lambda: cache.cached_library(key, skey, prefix), compiler)
        if library is None:
            return None
        differs = self._description_differs(library)
        if differs:
            warnings.warn("the compile cache entry %s was recorded for this graph but its library describes "
                          "another one (%s); generating the graph's source instead" % (library.path, differs),
                          cache.CorruptEntryWarning)
            return None
        return library

    def _description_differs(self, library):
        """What in ``library``'s describe() table disagrees with this graph, or "" (nothing)."""
        desc = library.describe()
        fgraph = self.fgraph
        for what, variables, roles, n, table in (("input", fgraph.inputs, self.input_roles, desc.n_inputs,
                                                  desc.inputs),
                                                 ("output", fgraph.outputs, self.output_roles, desc.n_outputs,
                                                  desc.outputs)):
            if n != len(variables):
                return "%d %s slots, the graph has %d" % (n, what, len(variables))
            for i, var in enumerate(variables):
                slot = table[i]
                code, bits = dtype_code(var.type.c_abi_dtype())
                want = (roles[i] if roles else (ROLE_INPUT if what == "input" else ROLE_OUTPUT),
                        len(getattr(var.type, "shape", ())), code, bits)
                got = (slot.role, slot.ndim, slot.dtype.code, slot.dtype.bits)
                if got != want:
                    return "%s %d is (role, ndim, dtype code, bits) %s, the graph's %s" % (what, i, got, want)
        if desc.n_nodes != len(self.order):
            return "%d nodes, the graph has %d" % (desc.n_nodes, len(self.order))
        for k, node in enumerate(self.order):
            op = ffi.string(desc.nodes[k].op).decode("utf-8", "replace")
            if op != short_text(node.op, OP_LABEL_LIMIT):
                return "node #%d is %s, the graph's is %s" % (k, op, short_text(node.op, OP_LABEL_LIMIT))
        return ""


def _remember(skey, graph_source, library, compiler):
    """Record ``skey`` -> the cache entry ``library`` came from (CPU graphs kept in the cache only)."""
    requirements = graph_source.requirements
    if not graph_source.cacheable or requirements.get("cuda_sources") or "cuda" in requirements:
        return
    key = cache.cache_key(graph_source.source, requirements, compiler)
    if os.path.abspath(library.path) == os.path.abspath(os.path.join(cache.entry_dir(key), cache.LIB_NAME)):
        cache.record_graph(skey, key, graph_source.prefix)


def _graph_c_roles(fgraph):
    input_roles = [ROLE_SHARED if hasattr(v, "container") else ROLE_INPUT for v in fgraph.inputs]
    updates = set(getattr(fgraph, "update_slots", ()))
    output_roles = [ROLE_UPDATE if k in updates else ROLE_OUTPUT for k in range(len(fgraph.outputs))]
    return input_roles, output_roles


def whole_graph_source(fgraph, profile=False):
    """The generated source of ``fgraph`` as one library: shared and update slots marked, and each
    output told which input it may view (what CLinker builds, and what an export extends);
    ``profile``: with P_profile and its counters."""
    inputs = list(fgraph.inputs)
    return generate(fgraph, *_graph_c_roles(fgraph), [_alias_slot(v, inputs) for v in fgraph.outputs],
                    profile=profile)


def nodes_without_c_code(fgraph):
    """"#i node" for each node of ``fgraph`` (in execution order) that has no C code."""
    return ["#%d %s" % (i, n) for i, n in enumerate(lazy.execution_order(fgraph)) if not node_has_c_code(n)]


class CLinker(Linker):
    """One C translation unit, one library, one call for the whole graph.

    ``c_callable=True`` (Theano's name) also exports every function compiled with this
    linker as a self-contained C library folder: in ``export_dir`` when given, else in
    the compile cache's ``exports/`` folder. ``f.fn.filename`` and ``f.library_dir`` say
    where (see ``Function.export``).
    """

    name = "c"

    def __init__(self, compiler=None, c_callable=False, export_dir=None):
        super().__init__()
        self.compiler = compiler
        self.c_callable = bool(c_callable)
        self.export_dir = export_dir
        self.lookup = None   # a WarmLookup of this fgraph that CVMLinker made already

    def _init_kwargs(self):
        return dict(compiler=self.compiler, c_callable=self.c_callable, export_dir=self.export_dir)

    def make_thunk(self, input_storage=None):
        fgraph = self.fgraph
        roles = _graph_c_roles(fgraph)
        lookup, self.lookup = self.lookup, None
        if lookup is None:
            lookup = WarmLookup(fgraph, *roles, compiler=self.compiler, profile=self.profile)
        if lookup.found is None:   # (a graph with a record was built whole: its nodes have C code)
            missing = nodes_without_c_code(fgraph)
            if missing:
                raise NotImplementedError("CLinker needs C code for every node; these have none: %s (use "
                                          "linker='c|py' or 'cvm' to run them in Python)" % ", ".join(missing))
        compiled = CompiledGraph(fgraph, *roles, compiler=self.compiler, profile=self.profile, lookup=lookup)
        self.compiled = compiled
        self.direct_call = compiled.call   # Function calls this directly, skipping the cells
        self.arity_call = compiled.arity_call   # and this, when it has no shared variables
        storage_map = make_storage_map(fgraph, input_storage)
        in_cells = [storage_map[v] for v in fgraph.inputs]
        out_cells = [storage_map[v] for v in fgraph.outputs]
        call = compiled.call

        def thunk():
            for cell, value in zip(out_cells, call([cell[0] for cell in in_cells])):
                cell[0] = value

        thunk.nodes = compiled.nodes   # the library's order (lazy branches nest nodes, see linkers.lazy)
        if self.profile:
            from ffigraph.linkers.timing import CNodeTimes

            thunk.profile_recorder = CNodeTimes(compiled)
        return thunk, in_cells, out_cells

    def describe_nodes(self):
        return [(node, "C (whole-graph library)") for node in lazy.execution_order(self.fgraph)]

    def renew_after_fork(self):
        """See ``CompiledGraph.renew_after_fork`` (a forked child of a process that was inside a call)."""
        if getattr(self, "compiled", None) is not None:
            self.compiled.renew_after_fork()

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
        self.compiled_nodes = {}   # node -> its CompiledGraph (for source())
        self.asked_as = None       # the linker the user named, when CVMLinker chose this one

    def _init_kwargs(self):
        return dict(compiler=self.compiler, fallback=self.fallback)

    def make_thunk(self, input_storage=None):
        fgraph = self.fgraph
        order = lazy.execution_order(fgraph)
        storage_map = make_storage_map(fgraph, input_storage)
        compute_map = {v: [False] for v in storage_map}
        self.how = {}
        self.compiled_nodes = {}
        thunks = []
        in_python = []
        for position, node in enumerate(order):
            if node_has_c_code(node):
                thunks.append(self._c_thunk(node, storage_map))
                self.how[node] = "C (own library)"
            elif self.fallback:
                thunks.append(node.op.make_thunk(node, storage_map, compute_map, self.no_recycling))
                self.how[node] = "python (perform): no C code"
                in_python.append("#%d %s" % (position, node))
            else:
                raise NotImplementedError("node #%d %s has no C code" % (position, node))
        if in_python:
            # once per compiled function, not per call: a C linker was asked for, and these nodes are slower
            _log.warning(
                "linker %s: %d node(s) without C code run their Python perform: %s",
                self.asked_as or self.name, len(in_python), ", ".join(in_python))
        thunk = sequence_thunks(fgraph, order, thunks, storage_map, self.profile)
        return thunk, [storage_map[v] for v in fgraph.inputs], [storage_map[v] for v in fgraph.outputs]

    def _c_thunk(self, node, storage_map):
        small, inputs = _node_graph(node)
        compiled = CompiledGraph(small, compiler=self.compiler, annotate=False)
        self.compiled_nodes[node] = compiled
        in_cells = [storage_map[v] for v in inputs]
        out_cells = [storage_map[v] for v in node.outputs]
        if lazy.lazy_branches(node) is not None:
            return self._lazy_c_thunk(compiled, inputs, in_cells, out_cells)

        def thunk():
            for cell, value in zip(out_cells, compiled.call([c[0] for c in in_cells])):
                cell[0] = value

        thunk.outputs = out_cells
        return thunk

    @staticmethod
    def _lazy_c_thunk(compiled, inputs, in_cells, out_cells):
        """The call of a lazy op's library: the values of the branch not taken were never computed,
        so their slots get a stand-in of the right dtype and shape (an empty array where a length
        is not static), which the op's C code does not read (Op.lazy_branches)."""
        stand_ins = [np.zeros(tuple(0 if n is None else n for n in getattr(v.type, "shape", ())),
                              dtype=v.type.c_abi_dtype()) for v in inputs]

        def thunk():
            values = [c[0] if c[0] is not None else stand_in for c, stand_in in zip(in_cells, stand_ins)]
            for cell, value in zip(out_cells, compiled.call(values)):
                cell[0] = value

        thunk.outputs = out_cells
        return thunk

    def describe_nodes(self):
        return [(node, self.how.get(node, "?")) for node in lazy.execution_order(self.fgraph)]

    def renew_after_fork(self):
        """See ``CompiledGraph.renew_after_fork``: every node's library state."""
        for compiled in self.compiled_nodes.values():
            compiled.renew_after_fork()

    def source(self):
        """The generated C of every node that runs in C, each its own translation unit, in order;
        nodes that run in Python are named in a comment."""
        parts = []
        for position, node in enumerate(lazy.execution_order(self.fgraph)):
            compiled = self.compiled_nodes.get(node)
            if compiled is None:
                parts.append("/* ==== node #%d %s: runs in Python (no C code) ==== */\n"
                             % (position, comment_text(node)))
            else:
                parts.append("/* ==== node #%d %s: its own library %s ==== */\n%s"
                             % (position, comment_text(node), comment_text(compiled.library.path),
                                compiled.source.source))
        return "\n".join(parts)


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
        fgraph = self.fgraph
        # a graph built whole before has a record: no need to ask each node for its C code
        lookup = WarmLookup(fgraph, *_graph_c_roles(fgraph), compiler=self.compiler, profile=self.profile)
        if lookup.found is not None or all(node_has_c_code(n) for n in fgraph.toposort()):
            self.chosen = CLinker(self.compiler)
            self.chosen.lookup = lookup
        else:
            self.chosen = OpWiseCLinker(self.compiler)
            self.chosen.asked_as = self.name
        self.chosen.profile = self.profile
        result = self.chosen.accept(self.fgraph, self.no_recycling).make_thunk(input_storage)
        self.direct_call = getattr(self.chosen, "direct_call", None)
        self.arity_call = getattr(self.chosen, "arity_call", None)
        return result

    def describe_nodes(self):
        return self.chosen.describe_nodes()

    def renew_after_fork(self):
        if self.chosen is not None:
            self.chosen.renew_after_fork()

    def source(self):
        """The generated C of the linker it chose (see CLinker.source, OpWiseCLinker.source)."""
        return self.chosen.source()
