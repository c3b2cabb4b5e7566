"""``scan``: Theano's and PyTensor's loop constructor, building one ``Scan`` node.

The step function is called once, symbolically, with placeholders for the
sequence rows and the earlier outputs, and with the non-sequences themselves
(as Theano does, so a step may take gradients of them). What it returns is
copied into the inner graph, where the non-sequences become placeholders too.
Other variables the step reads (shared variables, symbolic inputs used
without being passed) become extra non-sequences; a shared variable that the
step updates, explicitly or through its ``default_update`` (random streams),
becomes a state carried from step to step, and its final value is the update
``scan`` returns.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ffigraph.compile.sharedvalue import SharedVariable
from ffigraph.graph.basic import Constant, Variable, clone_replace, graph_inputs
from ffigraph.scan.op import Scan, _row_type
from ffigraph.scan.utils import ScanInfo, until
from ffigraph.tensor import as_tensor_variable, maximum, minimum


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _as_variable(value, what):
    if isinstance(value, Variable):
        return value
    try:
        return as_tensor_variable(value)
    except (TypeError, ValueError) as err:
        raise TypeError("scan: %s must be a variable or an array, got %r (%s)" % (what, value, err)) from None


def _check_taps(taps, what):
    taps = [int(t) for t in _as_list(taps)]
    if not taps:
        raise ValueError("scan: %s has no taps" % what)
    if len(set(taps)) != len(taps):
        raise ValueError("scan: %s lists a tap twice: %r" % (what, taps))
    return taps


def _sequences(sequences):
    """[(variable, taps in the user's order)] for each sequence."""
    out = []
    for s, entry in enumerate(_as_list(sequences)):
        if isinstance(entry, dict):
            if "input" not in entry:
                raise ValueError("scan: sequence %d is a dict without an 'input' key" % s)
            var, taps = entry["input"], entry.get("taps", [0])
        else:
            var, taps = entry, [0]
        var = _as_variable(var, "sequence %d" % s)
        if var.ndim < 1:
            raise TypeError("scan: sequence %d (%s) is a scalar; a sequence needs a first axis to loop over" % (s, var))
        out.append((var, _check_taps(taps, "sequence %d" % s)))
    return out


def _loop_sequence(var, taps, go_backwards):
    """(the array the Scan node loops over, its taps as the node reads them) for a user's sequence.

    Theano's and PyTensor's rule: tap k at step t reads row p(t) + k of ``var``, where the current
    row p(t) runs over the rows for which every tap AND tap 0 are inside the array (taps all
    negative or all positive still cut as if tap 0 were among them), so there are
    len(var) - (max(0, max(taps)) - min(0, min(taps))) steps. Forward, p(t) = t - min(0, min(taps));
    ``go_backwards`` runs p(t) down from the last such row, and tap -1 still reads the row before
    p(t) (each tap's slice is reversed, not the array before the taps are cut).

    The node reads row t + k' - min(taps') of its array at tap k' (ScanInfo), so the array is ``var``
    cut to the rows some step reads and, backwards, reversed, with the taps negated: in the reversed
    array the row before p(t) is the one after it.
    """
    low, high = min(taps), max(taps)
    start, stop_margin = max(0, low), max(0, -high)   # rows no step reads at either end
    if stop_margin:
        # clipped at 0: a negative stop would count from the end and hand a too-short sequence rows
        var = var[start:maximum(var.shape[0] - stop_margin, 0)]
    elif start:
        var = var[start:]
    if not go_backwards:
        return var, tuple(sorted(taps))
    return var[::-1], tuple(sorted(-k for k in taps))


def _outputs_info(outputs_info):
    """[None (a nit-sot output) or (initial, taps in the user's order)] per entry."""
    out = []
    for j, entry in enumerate(_as_list(outputs_info)):
        if isinstance(entry, dict):
            initial = entry.get("initial")
            if initial is None:
                if entry.get("taps"):
                    raise ValueError("scan: outputs_info %d gives taps but no initial value" % j)
                out.append(None)
                continue
            taps = _check_taps(entry.get("taps", [-1]), "outputs_info %d" % j)
        elif entry is None:
            out.append(None)
            continue
        else:
            initial, taps = entry, [-1]
        if any(t >= 0 for t in taps):
            raise ValueError("scan: outputs_info %d has taps %r; an output can only read earlier steps "
                             "(negative taps)" % (j, taps))
        out.append((_as_variable(initial, "the initial value of outputs_info %d" % j), taps))
    return out


def _is_updates(value):
    return isinstance(value, dict) or (isinstance(value, (list, tuple)) and len(value) > 0 and all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], SharedVariable) for p in value))


def _split_return(value):
    """(outputs, updates, condition) from what the step function returned: outputs (one variable
    or a list), an updates dict, an ``until``, or a tuple of some of these in any order."""
    outputs, updates, condition = [], OrderedDict(), None
    if isinstance(value, (list, tuple)) and any(isinstance(p, until) or _is_updates(p) for p in value):
        parts = list(value)
    else:
        parts = [value]
    for part in parts:
        if isinstance(part, until):
            condition = part.condition
        elif _is_updates(part):
            updates.update(part.items() if isinstance(part, dict) else part)
        elif part is not None:
            outputs.extend(_as_list(part))
    return outputs, updates, condition


def scan(fn, sequences=None, outputs_info=None, non_sequences=None, n_steps=None, truncate_gradient=-1,
         go_backwards=False, mode=None, name=None, profile=False, allow_gc=None, strict=False, return_list=False):
    """Loop ``fn`` over ``sequences``; Theano's and PyTensor's ``scan``. Returns ``(outputs, updates)``.

    A sequence ``dict(input=x, taps=K)`` is read as in Theano and PyTensor: tap k is row p + k of
    ``x`` for the steps' rows p at which every tap and tap 0 are inside ``x`` (ascending, or
    descending with ``go_backwards``, where tap -1 is still the row before p); see _loop_sequence.
    ``fn`` receives, in order: each sequence's rows at its taps, each output's earlier
    values at its taps (``outputs_info`` entries that are not None), then the
    non-sequences. It returns its outputs, optionally with an updates dict and an
    ``until`` condition. ``outputs`` is one variable, a list, or None when the step has
    no outputs (``return_list=True``: always a list); ``updates`` maps each shared
    variable the loop updates to its final value (pass it to ``function(updates=...)``).
    ``profile`` and ``allow_gc`` are accepted for compatibility and have no effect.
    """
    if not callable(fn):
        raise TypeError("scan: fn must be callable, got %r" % (fn,))
    truncate_gradient = int(truncate_gradient)
    if truncate_gradient == 0 or truncate_gradient < -1:
        raise ValueError("scan: truncate_gradient must be -1 (no truncation) or a positive number of steps, "
                         "got %d" % truncate_gradient)
    seqs = _sequences(sequences)
    infos = _outputs_info(outputs_info)
    non_seqs = [v if isinstance(v, Variable) else _as_variable(v, "non-sequence %d" % m)
                for m, v in enumerate(_as_list(non_sequences))]

    # ---- placeholders, and the symbolic call of the step function
    args, seq_phs = [], []
    for s, (var, taps) in enumerate(seqs):
        phs = {tap: _row_type(var.type)() for tap in taps}
        for tap in taps:
            phs[tap].name = "%s[t%+d]" % (var.name or "sequence%d" % s, tap) if tap else "%s[t]" % (
                var.name or "sequence%d" % s)
            args.append(phs[tap])
        seq_phs.append(phs)
    rec_phs = []
    for j, entry in enumerate(infos):
        if entry is None:
            rec_phs.append(None)
            continue
        initial, taps = entry
        row = initial.type if taps == [-1] else _row_type(initial.type)
        if taps != [-1] and initial.ndim < 1:
            raise TypeError("scan: outputs_info %d has taps %r, so its initial value needs one row per tap; "
                            "got the scalar %s" % (j, taps, initial))
        phs = {tap: row() for tap in taps}
        for tap in taps:
            phs[tap].name = "%s[t%+d]" % (initial.name or "output%d" % j, tap)
            args.append(phs[tap])
        rec_phs.append(phs)
    args.extend(non_seqs)
    returned = fn(*args)
    outputs, updates, condition = _split_return(returned)
    outputs = [_as_variable(v, "output %d of the step function" % k) for k, v in enumerate(outputs)]
    if infos and len(outputs) != len(infos):
        raise ValueError("scan%s: the step function returned %d output(s), but outputs_info has %d entries; "
                         "give one outputs_info entry per output (None for an output with no initial value)"
                         % (" %r" % name if name else "", len(outputs), len(infos)))
    if not infos:
        infos = [None] * len(outputs)
        rec_phs = [None] * len(outputs)

    # ---- shared variables the loop updates: explicitly, or by their default_update
    updates = OrderedDict((s, v) for s, v in updates.items())
    for s in list(updates):
        if not isinstance(s, SharedVariable):
            raise TypeError("scan: the step function updates %s, which is not a shared variable" % (s,))
    blockers = set(non_seqs)
    while True:
        roots = graph_inputs(outputs + list(updates.values()) + ([condition] if condition is not None else []),
                             blockers=blockers)
        new = [v for v in roots if isinstance(v, SharedVariable) and v not in updates
               and getattr(v, "default_update", None) is not None and v not in blockers]
        if not new:
            break
        for s in new:
            updates[s] = s.default_update
    for s in list(updates):
        value = _as_variable(updates[s], "the update of %s" % (s,))
        converted = s.type.convert_variable(value)
        if converted is None:
            raise TypeError("scan: the update of shared variable %s has type %s, expected %s (cast it)"
                            % (s, value.type, s.type))
        updates[s] = converted
    state_phs = OrderedDict((s, s.type()) for s in updates)
    for s, ph in state_phs.items():
        ph.name = "%s[t-1]" % (s.name or "shared")
    non_seqs = [v for v in non_seqs if v not in state_phs]

    # ---- the inner graph: non-sequences and free variables become placeholders
    raw = [v for v, entry in zip(outputs, infos) if entry is not None] + \
          [v for v, entry in zip(outputs, infos) if entry is None] + list(updates.values())
    if condition is not None:
        raw.append(condition)
    known = {ph for phs in seq_phs for ph in phs.values()} | {ph for phs in rec_phs if phs for ph in phs.values()}
    replace = OrderedDict(state_phs)
    outer_non_seqs = []
    for v in non_seqs:
        if isinstance(v, Constant) or v in replace:
            continue
        replace[v] = v.type()
        replace[v].name = v.name
        outer_non_seqs.append(v)
    free = [v for v in graph_inputs(raw, blockers=set(replace))
            if v not in known and v not in replace and not isinstance(v, Constant)]
    # strict=True (Theano's and PyTensor's rule): every shared variable the step reads must come in
    # through non_sequences; free symbolic variables still become implicit non-sequences
    unlisted_shared = [v for v in free if isinstance(v, SharedVariable)]
    if strict and unlisted_shared:
        raise ValueError("scan%s (strict=True): the step function reads the shared variable%s %s, not given in "
                         "non_sequences (with strict=True every shared variable the step uses must be listed there)"
                         % (" %r" % name if name else "", "s" if len(unlisted_shared) > 1 else "",
                            ", ".join(str(v) for v in unlisted_shared)))
    for v in free:
        replace[v] = v.type()
        replace[v].name = v.name
        outer_non_seqs.append(v)
    inner_out = clone_replace(raw, replace=list(replace.items())) if raw else []

    loops = [_loop_sequence(var, taps, go_backwards) for var, taps in seqs]
    inner_in = []
    for phs, (_, loop_taps) in zip(seq_phs, loops):
        # backwards, the node's tap k' is the user's tap -k'
        inner_in.extend(phs[-t if go_backwards else t] for t in loop_taps)
    rec_entries = [(phs, entry) for phs, entry in zip(rec_phs, infos) if entry is not None]
    for phs, (initial, taps) in rec_entries:
        inner_in.extend(phs[t] for t in sorted(taps))
    inner_in.extend(state_phs.values())
    inner_in.extend(replace[v] for v in outer_non_seqs)

    n_rec_user = len(rec_entries)
    n_nit = len(outputs) - n_rec_user
    info = ScanInfo(
        seq_taps=tuple(loop_taps for _, loop_taps in loops),
        rec_taps=tuple(tuple(sorted(taps)) for _, (_, taps) in rec_entries) + ((-1,),) * len(state_phs),
        rec_last=(False,) * n_rec_user + (True,) * len(state_phs),
        n_nit_sot=n_nit, n_non_seqs=len(outer_non_seqs), as_while=condition is not None,
        truncate_gradient=truncate_gradient,
    )
    # the op's inner outputs: recurrent (user's, then shared states), nit-sot, condition
    inner_rec = inner_out[:n_rec_user]
    inner_nit = inner_out[n_rec_user:n_rec_user + n_nit]
    inner_upd = inner_out[n_rec_user + n_nit:n_rec_user + n_nit + len(updates)]
    inner_cond = inner_out[len(raw) - 1:] if condition is not None else []
    op = Scan(inner_in, inner_rec + inner_upd + inner_nit + inner_cond, info, name=name, mode=mode)

    # ---- the outer node
    steps = _n_steps(n_steps, seqs, name)
    init_rows = []
    for phs, (initial, taps) in rec_entries:
        if taps == [-1]:
            init_rows.append(initial.dimshuffle(*(["x"] + list(range(initial.ndim)))))
        else:
            init_rows.append(initial[:-min(taps)])
    for s in state_phs:
        init_rows.append(s.dimshuffle(*(["x"] + list(range(s.ndim)))))
    node_outputs = op(steps, *[var for var, _ in loops], *init_rows, *outer_non_seqs)
    if not isinstance(node_outputs, (list, tuple)):
        node_outputs = [node_outputs]
    node_outputs = list(node_outputs)
    rec_out = iter(node_outputs[:n_rec_user])
    state_out = node_outputs[n_rec_user:n_rec_user + len(state_phs)]
    nit_out = iter(node_outputs[n_rec_user + len(state_phs):])
    results = [next(nit_out) if entry is None else next(rec_out) for entry in infos]
    new_updates = OrderedDict(zip(state_phs, state_out))
    if not return_list:
        if len(results) == 1:
            results = results[0]
        elif not results:
            results = None
    return results, new_updates


def _n_steps(n_steps, seqs, name):
    label = " %r" % name if name else ""
    if n_steps is not None:
        if isinstance(n_steps, (int, np.integer)):
            if int(n_steps) < 0:
                raise ValueError("scan%s: n_steps is %d; the number of steps must be 0 or more" % (label, n_steps))
        steps = as_tensor_variable(n_steps)
        if steps.ndim != 0 or not steps.dtype.startswith(("int", "uint")):
            raise TypeError("scan%s: n_steps must be an integer scalar, got %s (%s)" % (label, steps, steps.type))
        return steps
    if not seqs:
        raise ValueError("scan%s: give sequences or n_steps, so that scan knows how many steps to run" % label)
    # the rows where tap 0 and every tap are inside the sequence (see _loop_sequence)
    lengths = [var.shape[0] - (max(0, max(taps)) - min(0, min(taps))) for var, taps in seqs]
    steps = lengths[0]
    for length in lengths[1:]:
        steps = minimum(steps, length)
    return steps
