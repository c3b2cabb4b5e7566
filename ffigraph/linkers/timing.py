"""What the linkers offer for timing: compile phases and per-node recorders.

A linker times its own compile steps with ``compile_phase`` and, when asked to
profile, builds thunks that fill a per-node recorder: ``PythonNodeTimes`` for
nodes sequenced from Python (py, c|py, DebugMode), ``CNodeTimes`` for a
whole-graph C library generated with profiling on (read through ``P_profile``).
The compile layer (``ffigraph.compile.profiling``) consumes them: it opens the
recording of compile times and turns a recorder's counters into ``ProfileStats``.
"""
from __future__ import annotations

import contextlib
import threading
import time

PHASES = ("rewrite", "codegen", "compiler", "load")


# ------------------------------------------------------------------ compile phases


_recording = threading.local()


@contextlib.contextmanager
def recording_compile_times(times):
    """Inside this block, ``compile_phase`` on this thread adds to ``times`` (nesting-safe)."""
    previous = getattr(_recording, "times", None)
    _recording.times = times
    try:
        yield times
    finally:
        _recording.times = previous


@contextlib.contextmanager
def compile_phase(phase):
    """Time a block as ``phase`` of the compile being recorded on this thread, if any."""
    times = getattr(_recording, "times", None)
    start = time.perf_counter()
    try:
        yield
    finally:
        if times is not None:
            times[phase] += time.perf_counter() - start


# ------------------------------------------------------------------ per-node recorders


class PythonNodeTimes:
    """Counters filled by a timed sequence of node thunks (see linkers.basic.sequence_thunks)."""

    where = "python-sequenced"

    def __init__(self, order, storage_map):
        self.calls = [0] * len(order)
        self.seconds = [0.0] * len(order)
        self.shapes = [[None] * len(node.outputs) for node in order]
        self.nbytes = [[None] * len(node.outputs) for node in order]
        self.cells = [[storage_map[v] for v in node.outputs] for node in order]

    def record(self, position, seconds, succeeded):
        self.calls[position] += 1
        self.seconds[position] += seconds
        if succeeded:
            for k, cell in enumerate(self.cells[position]):
                shape, nbytes = _value_size(cell[0])
                self.shapes[position][k] = shape
                self.nbytes[position][k] = nbytes

    def read(self):
        return list(self.calls), list(self.seconds), [list(s) for s in self.shapes], [list(b) for b in self.nbytes]


def _value_size(value):
    shape = getattr(value, "shape", None)
    if shape is None:
        return None, None
    nbytes = getattr(value, "nbytes", None)
    return tuple(int(d) for d in shape), None if nbytes is None else int(nbytes)


class CNodeTimes:
    """Counters kept inside a profiled library's state, read with ``P_profile``."""

    where = "C (whole-graph library)"

    def __init__(self, compiled):
        self.compiled = compiled

    def read(self):
        record = self.compiled.read_profile()
        n = record["n_nodes"]
        calls = [c for c, _ in record["nodes"]]
        seconds = [ns * 1e-9 for _, ns in record["nodes"]]
        shapes = [[None] * len(node.outputs) for node in self.compiled.nodes]
        nbytes = [[None] * len(node.outputs) for node in self.compiled.nodes]
        for node_index, output, ndim, size, dims in record["values"]:
            if 0 <= node_index < n and ndim >= 0:
                shapes[node_index][output] = tuple(dims[:ndim])
                nbytes[node_index][output] = size if size >= 0 else None
        return calls, seconds, shapes, nbytes


def timed_sequence(fgraph, order, runs, storage_map, recorder, annotate):
    """The profiled twin of sequence_thunks' thunk: each node between two clock reads."""
    produced = [storage_map[v] for node in order for v in node.outputs]
    perf_counter = time.perf_counter
    record = recorder.record

    def thunk():
        for cell in produced:
            cell[0] = None
        for position, (fn, node) in enumerate(runs):
            start = perf_counter()
            try:
                fn()
            except Exception as err:
                record(position, perf_counter() - start, False)
                raise annotate(err, node, position, fgraph)
            record(position, perf_counter() - start, True)
            for cell, var in zip(getattr(fn, "outputs", ()), node.outputs):
                if cell[0] is None:
                    raise ValueError("%s produced no value for output %s" % (node.op, var))

    thunk.nodes = order
    return thunk
