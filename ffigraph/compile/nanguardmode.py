"""``NanGuardMode``: stop at the first node that produces NaN, infinite or huge values.

>>> import numpy as np, ffigraph, ffigraph.tensor as T
>>> x = T.dvector("x")
>>> f = ffigraph.function([x], T.log(x) * 2, mode=ffigraph.NanGuardMode())
>>> f(np.array([1.0, -1.0]))   # doctest: +SKIP
NanGuardError: NanGuardMode: NaN detected in output 0 of Composite{(log(i0) * 2.0)} ...

Before the first node runs, the graph's inputs (shared variables included)
are checked; after each node runs, its outputs. The error (a
``NanGuardError``, which is an ``AssertionError`` as PyTensor raises) names
the input, or the node: its op, its inputs' shapes and dtypes, the first bad
element, where the node was created when the graph recorded it
(``node.tag.trace``), and its debugprint; ``.node``, ``.output_index``,
``.input_index`` and ``.kinds`` say the same as data.

A value is "big" when some element's magnitude exceeds 1e10 (``BIG``), as in
PyTensor. Integer values are only checked for that; booleans and non-numeric
values (GPU arrays included) not at all. The graph runs node by node, as
under MonitorMode (see ``ffigraph.compile.monitormode``), with FAST_RUN's
rewrites by default: the nodes named are the rewritten graph's, so a fused
loop is named by its composite expression; ``.excluding("fusion")`` keeps the
elementwise ops apart.
"""
from __future__ import annotations

import traceback

import numpy as np

from ffigraph.compile.mode import Mode, register_mode
from ffigraph.compile.monitormode import WrapLinker, clone_wrapping_mode, node_text

__all__ = ["NanGuardMode", "NanGuardError", "BIG"]

BIG = 1e10


class NanGuardError(AssertionError):
    """A NaN, infinite or big value where NanGuardMode forbids one.

    kinds: what was found (``"NaN"``, ``"Inf"``, ``"big value"``); node: the Apply node
    whose output it is (None for a graph input); output_index: which output of that node;
    input_index: the position of the graph input it came in by (None for a node's output).
    """

    def __init__(self, message, kinds, node=None, output_index=None, input_index=None):
        super().__init__(message)
        self.kinds = tuple(kinds)
        self.node, self.output_index, self.input_index = node, output_index, input_index


def _problems(value, nan_is_error, inf_is_error, big_is_error):
    """(kinds found, boolean mask of the bad elements or None) for one value."""
    if isinstance(value, (float, int, complex)) and not isinstance(value, bool):
        value = np.asarray(value)
    if not isinstance(value, (np.ndarray, np.generic)) or value.size == 0:
        return (), None
    kind = value.dtype.kind
    if kind in "iu":
        if big_is_error and (value.max() > BIG or value.min() < -BIG):
            return ("big value",), np.abs(value.astype(np.float64)) > BIG
        return (), None
    if kind not in "fc":
        return (), None
    if np.isfinite(value).all():
        if big_is_error:
            big = value.max() > BIG or value.min() < -BIG if kind == "f" else np.abs(value).max() > BIG
            if big:
                return ("big value",), np.abs(value) > BIG
        return (), None
    found, masks = [], []
    nan = np.isnan(value)
    if nan_is_error and nan.any():
        found.append("NaN")
        masks.append(nan)
    inf = np.isinf(value)
    if inf_is_error and inf.any():
        found.append("Inf")
        masks.append(inf)
    if big_is_error:
        with np.errstate(invalid="ignore"):
            big = np.abs(value) > BIG     # NaN never counts
        if inf_is_error:
            big &= ~inf                   # infinities are reported as Inf (else as big, as in PyTensor)
        if big.any():
            found.append("big value")
            masks.append(big)
    if not found:
        return (), None
    mask = masks[0]
    for more in masks[1:]:
        mask = mask | more
    return tuple(found), mask


def _first_bad(value, mask):
    value = np.asarray(value)
    if mask is None or value.ndim == 0:
        return " (value %r)" % (value.item(),) if value.ndim == 0 else ""
    flat = int(np.flatnonzero(mask)[0])
    index = tuple(int(i) for i in np.unravel_index(flat, value.shape))
    return "; first at index %s: %r" % (index, value[index].item())


def _describe(value):
    if isinstance(value, (np.ndarray, np.generic)):
        return "shape %s, %s" % (tuple(value.shape), value.dtype)
    if value is None:
        return "no value"
    return type(value).__name__


def trace_text(obj):
    """Where ``obj`` (an Apply node or a Variable) was created, from ``obj.tag.trace``, or ''.

    The trace may be a string, a list of frames (``traceback.FrameSummary`` or
    ``(file, line, function, text)`` tuples), or a list of such lists.
    """
    tag = getattr(obj, "tag", None)
    trace = getattr(tag, "trace", None)
    if not trace:
        return ""
    if isinstance(trace, str):
        return trace.rstrip("\n")
    try:
        frames = list(trace)
        if frames and isinstance(frames[0], (list, tuple, traceback.StackSummary)) \
                and not isinstance(frames[0], traceback.FrameSummary) \
                and not (isinstance(frames[0], tuple) and len(frames[0]) == 4 and isinstance(frames[0][0], str)):
            frames = [f for stack in frames for f in stack]   # a list of stacks: show them in order
        return "".join(traceback.format_list(frames)).rstrip("\n")
    except Exception:  # noqa: BLE001 - a trace in a form we do not know: show it as it is
        return repr(trace)


def _node_trace(node, k):
    text = trace_text(node)
    if not text and k is not None and k < len(node.outputs):
        text = trace_text(node.outputs[k])
    return text


class NanGuardMode(Mode):
    """PyTensor's NanGuardMode: raise ``NanGuardError`` naming the first node (or graph input)
    that holds NaN (``nan_is_error``), ±inf (``inf_is_error``) or values beyond ±1e10
    (``big_is_error``). None means True.

    optimizer: as for Mode (``"default"``: config.optimizer). linker: how each node runs,
    as for MonitorMode (``'c|py'`` by default; ``'py'``; ``'c'``).
    """

    def __init__(self, nan_is_error=True, inf_is_error=True, big_is_error=True, optimizer="default", linker=None,
                 include=(), exclude=(), require=()):
        self.nan_is_error = True if nan_is_error is None else bool(nan_is_error)
        self.inf_is_error = True if inf_is_error is None else bool(inf_is_error)
        self.big_is_error = True if big_is_error is None else bool(big_is_error)
        if not (self.nan_is_error or self.inf_is_error or self.big_is_error):
            raise ValueError("NanGuardMode: at least one of nan_is_error, inf_is_error, big_is_error must be True")
        self.node_linker = linker
        self._flags = (self.nan_is_error, self.inf_is_error, self.big_is_error)
        super().__init__(linker=WrapLinker(self._run_node, linker, before=self._check_inputs),
                         optimizer=optimizer, include=include, exclude=exclude, require=require, device="cpu")

    def _run_node(self, fgraph, i, node, fn):
        fn()
        flags = self._flags
        for k, cell in enumerate(fn.outputs):
            kinds, mask = _problems(cell[0], *flags)
            if kinds:
                raise self._node_error(fgraph, i, node, fn, k, kinds, mask)

    def _check_inputs(self, fgraph, input_cells):
        flags = self._flags
        for pos, (var, cell) in enumerate(zip(fgraph.inputs, input_cells)):
            kinds, mask = _problems(cell[0], *flags)
            if kinds:
                what = "shared variable %s" % (var,) if hasattr(var, "container") else "input %d (%s)" % (pos, var)
                message = ("NanGuardMode: %s detected in %s of the graph (%s)%s"
                           % (" and ".join(kinds), what, _describe(cell[0]), _first_bad(cell[0], mask)))
                where = trace_text(var)
                if where:
                    message += "\nThe input was created at:\n" + where
                raise NanGuardError(message, kinds, input_index=pos)

    def _node_error(self, fgraph, i, node, fn, k, kinds, mask):
        value = fn.outputs[k][0]
        lines = ["NanGuardMode: %s detected in output %d (%s) of node #%d, op %s%s"
                 % (" and ".join(kinds), k, _describe(value), i, node.op, _first_bad(value, mask))]
        lines.append("Input values: %s" % ", ".join(
            "%s (%s)" % (var, _describe(cell[0])) for var, cell in zip(node.inputs, fn.inputs)))
        where = _node_trace(node, k)
        if where:
            lines.append("The node was created at:\n" + where)
        lines.append("NanGuardMode found an error in the output of a node in this variable:")
        lines.append(node_text(node.outputs[k]).rstrip("\n"))
        return NanGuardError("\n".join(lines), kinds, node=node, output_index=k)

    def _clone(self, **changes):
        return clone_wrapping_mode(self, dict(nan_is_error=self.nan_is_error, inf_is_error=self.inf_is_error,
                                              big_is_error=self.big_is_error), changes)

    def __str__(self):
        return ("NanGuardMode(nan_is_error=%s, inf_is_error=%s, big_is_error=%s, optimizer=%s)"
                % (self.nan_is_error, self.inf_is_error, self.big_is_error, self.optimizer))

    __repr__ = __str__


register_mode("NanGuardMode", NanGuardMode)
