"""``DebugMode``: run every node both in C and through ``perform``, and check them.

For each node, in execution order, the debug linker

1. runs the Python implementation (``perform``, or the op's own ``make_thunk``)
   on private copies of the inputs;
2. runs the node's C code (a one-node library, as ``OpWiseCLinker`` builds)
   on the graph's own values;
3. checks each result: its type accepts it (``InvalidValueError``), the two
   implementations agree under ``type.values_eq_approx`` (``BadThunkOutput``,
   naming the first differing element), no input outside ``destroy_map`` was
   changed (``BadDestroyMap``) and no output shares memory with an input
   outside ``view_map``/``destroy_map`` (``BadViewMap``).

The values the function returns (and passes on to later nodes) are the C
path's whenever a node has C code, so views and inplace writes land where the
C linkers put them; a node without C code runs ``perform`` alone, on the graph's
own values, and still has its destroy and view maps checked.

Users writing their own C ops run their tests under ``mode="DebugMode"``.
"""
from __future__ import annotations

import numpy as np

from ffigraph.compile.mode import Mode, register_mode
from ffigraph.graph.op import Op
from ffigraph.linkers.basic import Linker, make_storage_map, sequence_thunks
from ffigraph.linkers.c.codegen import node_has_c_code
from ffigraph.linkers.c.linker import OpWiseCLinker
from ffigraph.linkers.c.marshal import UnownedOutputError

PY, C = "perform", "C code"


class DebugModeError(Exception):
    """Base of the errors DebugMode raises; ``node`` and ``op`` say where."""

    def __init__(self, message, node=None):
        super().__init__(message)
        self.node = node
        self.op = None if node is None else node.op


class BadThunkOutput(DebugModeError):
    """The C code and ``perform`` of one node disagree on an output."""

    def __init__(self, message, node, output_index, index=None, c_value=None, py_value=None, max_abs_diff=None):
        super().__init__(message, node)
        self.output_index = output_index
        self.index = index  # the first differing element (a tuple), or None when the shapes differ
        self.c_value, self.py_value = c_value, py_value
        self.max_abs_diff = max_abs_diff


class BadDestroyMap(DebugModeError):
    """An implementation changed an input that its op's ``destroy_map`` does not list."""

    def __init__(self, message, node, input_index, impl):
        super().__init__(message, node)
        self.input_index, self.impl = input_index, impl


class BadViewMap(DebugModeError):
    """An output shares memory with an input that neither ``view_map`` nor ``destroy_map`` lists."""

    def __init__(self, message, node, output_index, input_index, impl):
        super().__init__(message, node)
        self.output_index, self.input_index, self.impl = output_index, input_index, impl


class InvalidValueError(DebugModeError):
    """An implementation produced a value its output's type does not accept (dtype, ndim, shape)."""

    def __init__(self, message, node, output_index, impl):
        super().__init__(message, node)
        self.output_index, self.impl = output_index, impl


# ------------------------------------------------------------------ what a node can run


def has_python_impl(op):
    """True when the op overrides ``perform`` or brings its own ``make_thunk``."""
    cls = type(op)
    return cls.perform is not Op.perform or cls.make_thunk is not Op.make_thunk


def _distinct(variables):
    """The variables in order, each once (``x + x`` reads one value)."""
    out = []
    for v in variables:
        if v not in out:
            out.append(v)
    return out


def _copy(var, value):
    return None if value is None else var.type.copy_value(value)


# ------------------------------------------------------------------ the checks


def _allowed(op_map, node, k):
    """The input variables output k may alias under ``op_map`` (view_map or destroy_map)."""
    return {node.inputs[i] for i in op_map.get(k, ())}


def _destroyed(node):
    return {node.inputs[i] for ins in node.op.destroy_map.values() for i in ins}


def _input_index(node, var):
    return node.inputs.index(var)


def check_destroy_map(node, before, after, impl):
    """Raise BadDestroyMap when an input not in ``destroy_map`` differs from its copy taken before."""
    may_change = _destroyed(node)
    for var in _distinct(node.inputs):
        if var in may_change or before[var] is None:
            continue
        if not var.type.values_eq(before[var], after[var]):
            i = _input_index(node, var)
            raise BadDestroyMap("%s of %s changed input %d (%s), which its destroy_map %r does not list"
                                % (impl, node.op, i, var, node.op.destroy_map), node, i, impl)


def _shares(a, b):
    # Bounds overlap is what view_map is about: an output carved from an input's buffer,
    # even one touching other elements (x[::2] of x), still changes when the input does.
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.may_share_memory(a, b)


def check_view_map(node, inputs, outputs, impl):
    """Raise BadViewMap when an output shares memory with an input it may not alias."""
    op = node.op
    for k, out in enumerate(outputs):
        allowed = _allowed(op.view_map, node, k) | _allowed(op.destroy_map, node, k)
        for var in _distinct(node.inputs):
            if var not in allowed and _shares(out, inputs[var]):
                i = _input_index(node, var)
                raise BadViewMap("%s of %s returned output %d sharing memory with input %d (%s); "
                                 "view_map is %r, destroy_map %r"
                                 % (impl, op, k, i, var, op.view_map, op.destroy_map), node, k, i, impl)


def check_output_types(node, outputs, impl):
    """Raise InvalidValueError when a type refuses (strictly) the value given for its output."""
    for k, (var, value) in enumerate(zip(node.outputs, outputs)):
        if value is None:
            raise InvalidValueError("%s of %s produced no value for output %d" % (impl, node.op, k), node, k, impl)
        try:
            var.type.filter(value, strict=True)
        except NotImplementedError:
            continue  # a type that cannot check values: nothing to say
        except (TypeError, ValueError) as err:
            raise InvalidValueError("%s of %s returned %s for output %d, which its type %s refuses: %s"
                                    % (impl, node.op, _summary(value), k, var.type, err), node, k, impl) from None


def _summary(value):
    if isinstance(value, np.ndarray):
        return "ndarray(dtype=%s, shape=%s)" % (value.dtype, value.shape)
    return "a %s" % type(value).__name__


def first_difference(type, a, b):
    """The index of the first element where ``a`` and ``b`` differ under ``type.values_eq_approx``.

    Candidates are the elements not exactly equal (NaN matching NaN); a binary search
    over them finds the first one the type's tolerance rejects, in log(n) calls.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return None
    with np.errstate(invalid="ignore"):
        same = a == b
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            same = same | (np.isnan(a) & np.isnan(b))
    candidates = np.flatnonzero(~np.asarray(same))
    if candidates.size == 0:
        return None
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    lo, hi = 0, candidates.size  # the first failing candidate lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if type.values_eq_approx(flat_a[candidates[lo:mid]], flat_b[candidates[lo:mid]]):
            lo = mid
        else:
            hi = mid
    return tuple(int(i) for i in np.unravel_index(candidates[lo], a.shape))


def max_abs_difference(a, b):
    """The largest ``|a - b|`` over elements that are not both NaN (NaN when only one is)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.size == 0 or a.dtype.kind not in "biufc" or b.dtype.kind not in "biufc":
        return None
    wide = np.complex128 if "c" in (a.dtype.kind, b.dtype.kind) else np.float64
    with np.errstate(invalid="ignore", over="ignore"):
        aw, bw = a.astype(wide), b.astype(wide)
        diff = np.abs(aw - bw)
        both_nan = np.isnan(aw) & np.isnan(bw)
        diff[both_nan | (aw == bw)] = 0.0  # equal infinities subtract to NaN
    return float(np.max(diff))


def compare_outputs(node, c_outputs, py_outputs):
    """Raise BadThunkOutput at the first output where C and perform disagree."""
    for k, (var, c_val, py_val) in enumerate(zip(node.outputs, c_outputs, py_outputs)):
        if var.type.values_eq_approx(c_val, py_val):
            continue
        raise _bad_output(node, k, var.type, c_val, py_val)


def _bad_output(node, k, type, c_val, py_val):
    c_arr, py_arr = np.asarray(c_val), np.asarray(py_val)
    head = "C code and perform of %s disagree on output %d (node %s)" % (node.op, k, node)
    if c_arr.shape != py_arr.shape:
        return BadThunkOutput("%s: C gave shape %s, perform shape %s" % (head, c_arr.shape, py_arr.shape),
                              node, k, None, c_val, py_val)
    index = first_difference(type, c_arr, py_arr)
    biggest = max_abs_difference(c_arr, py_arr)
    where = ""
    if index is not None:
        where = ": first difference at index %s: C %r, perform %r" % (index, c_arr[index].item(),
                                                                         py_arr[index].item())
    if biggest is not None:
        where += "; max abs difference %g" % biggest
    return BadThunkOutput(head + where, node, k, index, c_val, py_val, biggest)


# ------------------------------------------------------------------ one node, both ways


class _NodeRunner:
    """Runs one node's implementations on cells of its own and checks them."""

    def __init__(self, node, storage_map, no_recycling, compiler, check_py, check_c):
        self.node = node
        self.inputs = _distinct(node.inputs)
        self.in_cells = [storage_map[v] for v in self.inputs]
        self.outputs = [storage_map[v] for v in node.outputs]  # sequence_thunks checks these
        self.py_map = {v: [None] for v in self.inputs + list(node.outputs)}
        self.c_map = {v: [None] for v in self.inputs + list(node.outputs)}
        has_c, has_py = node_has_c_code(node), has_python_impl(node.op)
        self.py = self.c = None
        if has_py and (check_py or not has_c):
            self.py = node.op.make_thunk(node, self.py_map, {v: [False] for v in self.py_map}, no_recycling)
        if has_c and (check_c or self.py is None):
            self.c = OpWiseCLinker(compiler)._c_thunk(node, self.c_map)
        if self.py is None and self.c is None:
            raise NotImplementedError("%s has neither C code nor a Python implementation" % node.op)

    def describe(self):
        if self.py is not None and self.c is not None:
            return "debug: C (own library) checked against perform"
        return "debug: C only (no perform)" if self.py is None else "debug: perform only (no C code)"

    def __call__(self):
        values = {v: c[0] for v, c in zip(self.inputs, self.in_cells)}
        py_out = None
        if self.py is not None:
            # The reference runs on copies when C follows, so a bad write cannot reach the C run.
            own = {v: _copy(v, x) for v, x in values.items()} if self.c is not None else values
            py_out = self._run(self.py, self.py_map, own, PY)
        if self.c is not None:
            c_out = self._run(self.c, self.c_map, values, C)
            if py_out is not None:
                compare_outputs(self.node, c_out, py_out)
            result = c_out
        else:
            result = py_out
        for cell, value in zip(self.outputs, result):
            cell[0] = value

    def _run(self, thunk, cells, values, impl):
        """Run one implementation on ``values`` and check what it did to them and what it made."""
        node = self.node
        before = {v: _copy(v, x) for v, x in values.items()}
        for v, x in values.items():
            cells[v][0] = x
        for v in node.outputs:
            cells[v][0] = None
        try:
            thunk()
            outputs = [cells[v][0] for v in node.outputs]
        except UnownedOutputError as err:
            raise _unmapped_c_view(node, err) from None
        finally:
            for cell in cells.values():  # hold no reference between calls
                cell[0] = None
        check_output_types(node, outputs, impl)
        check_destroy_map(node, before, values, impl)
        check_view_map(node, values, outputs, impl)
        return outputs


def _unmapped_c_view(node, err):
    """BadViewMap for the marshaller's complaint about a C output pointing into an input.

    The one-node library tells the host which input each output may view from
    view_map, so a C output using an input's memory that view_map does not list
    comes back as neither owned nor a declared view.
    """
    k = err.output_index
    return BadViewMap("C code of %s returned output %d in memory it does not own (an input's?), and "
                      "view_map %r lists no input for it: %s" % (node.op, k, node.op.view_map, err),
                      node, k, None, C)


# ------------------------------------------------------------------ linker and mode


class DebugLinker(Linker):
    """Each node runs through ``perform`` and through its C code, checked against each other.

    ``check_py=False`` or ``check_c=False`` skips one side where a node has both.
    """

    name = "debug"

    def __init__(self, compiler=None, check_py=True, check_c=True):
        super().__init__()
        self.compiler = compiler
        self.check_py, self.check_c = check_py, check_c

    def _init_kwargs(self):
        return dict(compiler=self.compiler, check_py=self.check_py, check_c=self.check_c)

    def make_thunk(self, input_storage=None):
        fgraph = self.fgraph
        order = fgraph.toposort()
        storage_map = make_storage_map(fgraph, input_storage)
        self.runners = [_NodeRunner(node, storage_map, self.no_recycling, self.compiler, self.check_py,
                                    self.check_c) for node in order]
        thunk = sequence_thunks(fgraph, order, self.runners, storage_map, self.profile)
        return thunk, [storage_map[v] for v in fgraph.inputs], [storage_map[v] for v in fgraph.outputs]

    def describe_nodes(self):
        return [(r.node, r.describe()) for r in self.runners]


class DebugMode(Mode):
    """Theano's DebugMode: FAST_RUN's rewrites, every node checked C against ``perform``.

    The function returns the C path's results (``perform``'s for nodes without C
    code). Raises a ``DebugModeError`` subclass naming the op on the first problem.
    """

    def __init__(self, optimizer="fast_run", include=(), exclude=(), require=(), check_py=True, check_c=True,
                 compiler=None, linker=None):
        # ``linker`` is accepted for Mode's signature, but a debug mode always uses the debug linker
        self.check_py, self.check_c, self.compiler = check_py, check_c, compiler
        super().__init__(linker=DebugLinker(compiler, check_py, check_c), optimizer=optimizer, include=include,
                         exclude=exclude, require=require, device="cpu")

    def _clone(self, **changes):
        kw = dict(optimizer=self.optimizer, include=self.include, exclude=self.exclude, require=self.require,
                  check_py=self.check_py, check_c=self.check_c, compiler=self.compiler)
        changes.pop("linker", None)
        changes.pop("device", None)
        kw.update(changes)
        return DebugMode(**kw)

    def __str__(self):
        return "DebugMode(optimizer=%s)" % (self.optimizer,)

    __repr__ = __str__


register_mode("DebugMode", DebugMode)
register_mode("DEBUG_MODE", DebugMode)
