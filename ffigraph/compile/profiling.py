"""Where a function's time goes: per-node profiles and the compile-time breakdown.

``function(..., profile=True)`` (or the ``profile`` config flag) gives the function a
``ProfileStats`` as ``f.profile``. Per-node figures come from one of two recorders,
which the linkers offer (``ffigraph.linkers.timing``) and this module consumes:

- ``PythonNodeTimes``: linkers that sequence nodes from Python (py, c|py, DebugMode)
  time each node thunk with ``perf_counter`` and read its outputs' shapes from the cells;
- ``CNodeTimes``: the whole-graph C linker's library was generated with profiling on,
  times each node itself and reports through the ABI's ``P_profile``.

Either way nothing is recorded, and nothing is paid, when profiling is off: the linkers
build their plain thunks and the C library has no timing code at all.

Compile times are always kept (``f.maker.compile_times``): rewrite, codegen, compiler
(cache lookup or build) and load (dlopen and state creation), in seconds.
"""
from __future__ import annotations

import sys
import threading

from ffigraph.linkers.timing import (PHASES, CNodeTimes, PythonNodeTimes, compile_phase,  # noqa: F401
                                     recording_compile_times, timed_sequence)

__all__ = ["ProfileStats", "NodeStats", "CompileTimes", "compile_phase"]


# ------------------------------------------------------------------ compile times


class CompileTimes(dict):
    """Seconds per compile phase; ``total`` is their sum."""

    def __init__(self):
        super().__init__((phase, 0.0) for phase in PHASES)

    @property
    def total(self):
        return sum(self.values())

    def text(self):
        return "%s = %s" % (_seconds(self.total), " + ".join("%s %s" % (p, _seconds(self[p])) for p in PHASES))


# ------------------------------------------------------------------ per-node recorders


# ------------------------------------------------------------------ the stats


class NodeStats:
    """One node's figures: calls, seconds (total and mean), share of the function's time,
    its outputs' shapes and bytes after its last successful run, and how it runs."""

    def __init__(self, index, node, calls, seconds, share, shapes, nbytes, how):
        self.index, self.node, self.calls, self.seconds = index, node, calls, seconds
        self.share, self.shapes, self.nbytes, self.how = share, shapes, nbytes, how

    @property
    def mean(self):
        return self.seconds / self.calls if self.calls else 0.0

    def __repr__(self):
        return "<NodeStats #%d %s: %d calls, %s>" % (self.index, self.node, self.calls, _seconds(self.seconds))


class ProfileStats:
    """A function's profile: its calls and time, each node's share, and its compile times.

    ``summary()`` prints the table (nodes sorted by time); ``nodes()`` gives the figures;
    ``reset()`` starts counting again from zero.
    """

    def __init__(self, name=None):
        self.name = name
        self.calls = 0
        self.seconds = 0.0           # wall time of the calls, argument checks included
        self.compile_times = CompileTimes()
        self.linker = None
        self._order = []
        self._how = []
        self._recorder = None
        self._baseline = None
        self._lock = threading.Lock()

    # ---- wiring (function() does this)

    def attach(self, order, how, recorder, linker_name):
        self._order = list(order)
        self._how = list(how)
        self._recorder = recorder
        self.linker = linker_name

    def add_call(self, seconds):
        with self._lock:   # threads calling one function time their calls outside its call lock
            self.calls += 1
            self.seconds += seconds

    # ---- reading

    def _read(self):
        if self._recorder is None:
            n = len(self._order)
            return [0] * n, [0.0] * n, [[None] * len(nd.outputs) for nd in self._order], \
                [[None] * len(nd.outputs) for nd in self._order]
        calls, seconds, shapes, nbytes = self._recorder.read()
        if self._baseline is not None:
            base_calls, base_seconds = self._baseline
            calls = [c - b for c, b in zip(calls, base_calls)]
            seconds = [s - b for s, b in zip(seconds, base_seconds)]
        return calls, seconds, shapes, nbytes

    def nodes(self):
        """A NodeStats per node, in execution order."""
        calls, seconds, shapes, nbytes = self._read()
        out = []
        for i, node in enumerate(self._order):
            share = seconds[i] / self.seconds if self.seconds > 0 else 0.0
            out.append(NodeStats(i, node, calls[i], seconds[i], share, shapes[i], nbytes[i],
                                 self._how[i] if i < len(self._how) else "?"))
        return out

    @property
    def node_seconds(self):
        """Time inside the nodes, summed."""
        return sum(s.seconds for s in self.nodes())

    def reset(self):
        """Count from zero again (compile times are kept)."""
        self.calls, self.seconds = 0, 0.0
        if self._recorder is not None:
            calls, seconds, _, _ = self._recorder.read()
            self._baseline = (calls, seconds)

    # ---- printing

    def summary_text(self, n_nodes=20):
        """The summary as text; ``n_nodes`` rows at most (None: all), slowest first."""
        stats = sorted(self.nodes(), key=lambda s: (-s.seconds, s.index))
        lines = ["Function profile: %s" % (repr(self.name) if self.name else "(unnamed)"),
                 "  linker: %s" % (self.linker,),
                 "  calls: %d, %s in total, %s per call" % (self.calls, _seconds(self.seconds),
                                                           _seconds(self.seconds / self.calls if self.calls else 0)),
                 "  in nodes: %s (%.1f%%); outside them (argument checks, marshalling): %s"
                 % (_seconds(self.node_seconds), 100.0 * _ratio(self.node_seconds, self.seconds),
                    _seconds(max(self.seconds - self.node_seconds, 0.0))),
                 "  compile: %s" % self.compile_times.text(),
                 ""]
        lines.extend(_table(stats if n_nodes is None else stats[:n_nodes]))
        hidden = len(stats) - (len(stats) if n_nodes is None else min(n_nodes, len(stats)))
        if hidden:
            lines.append("  ... %d more node(s), %s" % (hidden, _seconds(sum(s.seconds for s in stats[n_nodes:]))))
        return "\n".join(lines) + "\n"

    def summary(self, file=None, n_nodes=20):
        """Print the summary (to stdout by default)."""
        (sys.stdout if file is None else file).write(self.summary_text(n_nodes))

    def __repr__(self):
        return "<ProfileStats %s: %d calls, %s>" % (self.name or "", self.calls, _seconds(self.seconds))


_HEADER = ("share", "total", "calls", "mean", "where", "node", "outputs")


def _table(stats):
    rows = [_HEADER]
    for s in stats:
        rows.append(("%.1f%%" % (100 * s.share), _seconds(s.seconds), str(s.calls), _seconds(s.mean),
                     _where(s.how), "#%d %s" % (s.index, _short(str(s.node), 60)), _outputs_text(s)))
    widths = [max(len(r[c]) for r in rows) for c in range(len(_HEADER) - 1)]
    lines = []
    for r in rows:
        cells = [r[c].rjust(widths[c]) if c < 4 else r[c].ljust(widths[c]) for c in range(len(widths))]
        lines.append(("  " + "  ".join(cells) + "  " + r[-1]).rstrip())
    return lines


def _where(how):
    return "python" if str(how).startswith("python") else "C"


def _outputs_text(stats):
    """Each output's shape and bytes; a run of equal ones once, with its count."""
    parts = []
    for shape, nbytes in zip(stats.shapes, stats.nbytes):
        text = "?" if shape is None else "(%s) %s" % (",".join(str(d) for d in shape), _bytes(nbytes))
        if parts and parts[-1][0] == text:
            parts[-1][1] += 1
        else:
            parts.append([text, 1])
    return "; ".join(text if n == 1 else "%d x %s" % (n, text) for text, n in parts)


def _short(text, width):
    return text if len(text) <= width else text[:width - 3] + "..."


def _ratio(a, b):
    return a / b if b > 0 else 0.0


def _seconds(t):
    if t >= 1:
        return "%.3f s" % t
    if t >= 1e-3:
        return "%.2f ms" % (t * 1e3)
    return "%.2f us" % (t * 1e6)


def _bytes(n):
    if n is None:
        return "? B"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d B" % n


_at_exit = []


def print_at_exit(stats):
    """Print ``stats``' summary to stderr when the interpreter exits (config.profile's promise)."""
    if not _at_exit:
        import atexit

        atexit.register(_print_all)
    _at_exit.append(stats)


def _print_all():
    for stats in _at_exit:
        if stats.calls:
            sys.stderr.write(stats.summary_text() + "\n")
