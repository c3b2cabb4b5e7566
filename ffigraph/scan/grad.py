"""Backpropagation through time: the gradient of a ``Scan`` node is a second, backward ``Scan`` node.

The backward loop visits the forward steps t = n-1 .. n-T (T = n, or at most
``truncate_gradient`` steps). Each backward step rebuilds the forward step (a
copy of the inner graph) from the values that step read, and takes its
vector-Jacobian products (``grad`` with ``known_grads``). What it reads are
sequences, reversed: the forward sequence slices, the earlier values of the
recurrent outputs (their taps), and the gradients of the traced outputs. What
it carries from step to step are accumulators, each a sit-sot output that keeps
only its final value:

* recurrent output j with window L = -min(taps) has L accumulators
  b_0 .. b_{L-1}: b_l holds what the steps already visited give to the gradient
  of x_j[t - l]. At step t the gradient of the new value is G = b_0 + g_j[t];
  the step's products w.r.t. its tap inputs x_j[t-1] .. x_j[t-L] are
  c_1 .. c_L (zero for a tap it does not read), and the carry moves on to
  (b_1 + c_1, ..., b_{L-1} + c_{L-1}, c_L). After the loop b_l is the gradient
  of the initial row for time -1-l (zero when the loop was truncated).
* each float non-sequence has one accumulator, the sum of its products.

The gradients of the sequence slices are nit-sot outputs, reversed and added
into zeros like the sequence. A recurrent output that keeps only its final value
(a shared variable's update, a random state) has no trace to read; when the
backward step needs its earlier values, the forward node is rebuilt once with
that output traced. Integer outputs carry no gradient; integer inputs get zeros,
``n_steps`` none (disconnected).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Constant, ancestors, clone_replace, graph_inputs
from ffigraph.scan.op import Scan, _row_type
from ffigraph.scan.utils import ScanInfo
from ffigraph.tensor import (Alloc, concatenate, gt, inc_subtensor, minimum, reshape,
                             stack, switch, zeros_like)
from ffigraph.tensor.gradient import DisconnectedType, NullType, disconnected_type, grad

__all__ = ["scan_l_op"]


def _carries(var):
    """Float (or complex) variables have gradients; integers and bools (random states) do not."""
    dtype = getattr(var.type, "dtype", None)
    return dtype is not None and np.dtype(dtype).kind in "fc"


def _no_gradient(g):
    """True for a missing output gradient: disconnected, or the zeros ``grad`` fills in."""
    if g is None or isinstance(g.type, (DisconnectedType, NullType)):
        return True
    owner = g.owner
    if owner is not None and isinstance(owner.op, Alloc) and isinstance(owner.inputs[0], Constant):
        return not np.any(owner.inputs[0].data)
    return False


def _leading(var):
    """``var`` with a new first axis of length 1 (one row)."""
    return var.dimshuffle(*(["x"] + list(range(var.ndim))))


def _fresh(var):
    ph = var.type()
    ph.name = var.name
    return ph


def _traced_twin(op):
    """The same loop with every output traced (``rec_last`` all False); made once per op."""
    twin = getattr(op, "_grad_traced_twin", None)
    if twin is None:
        info = op.info._replace(rec_last=(False,) * len(op.info.rec_taps))
        twin = op.remade(op.inner_inputs, op.inner_outputs, info, canonical=op.inner_canonical)
        op._grad_traced_twin = twin
    return twin


def scan_l_op(op, inputs, outputs, output_grads):
    info = op.info
    label = op._label()
    if info.as_while:
        raise NotImplementedError(
            "scan%s has an until condition: the gradient of a loop whose number of steps depends on "
            "the values it computes is not implemented (as in PyTensor); give n_steps instead" % label)
    n_rec, n_nit = len(info.rec_taps), info.n_nit_sot
    n_steps, seqs, inits, non_seqs = op.outer_groups(inputs)
    f_in = list(op.inner_inputs)
    f_out = list(op.inner_outputs[:n_rec + n_nit])
    f_seq_in = []       # [(s, tap, inner input)]
    k = 0
    for s, taps in enumerate(info.seq_taps):
        for tap in taps:
            f_seq_in.append((s, tap, f_in[k]))
            k += 1
    f_rec_in = []       # [(j, tap, inner input)]
    for j, taps in enumerate(info.rec_taps):
        for tap in taps:
            f_rec_in.append((j, tap, f_in[k]))
            k += 1
    f_ns_in = f_in[k:]

    # ---- which outputs take part: those with a gradient from outside, and the float recurrent
    # outputs whose earlier values feed a taking part output (fixed point)
    grads = list(output_grads)
    external = [not _no_gradient(g) and _carries(outputs[i]) for i, g in enumerate(grads)]
    active = [external[i] and _carries(f_out[i]) for i in range(n_rec + n_nit)]
    while True:
        reads = set(ancestors([f_out[i] for i in range(n_rec + n_nit) if active[i]]))
        changed = False
        for j, _tap, v in f_rec_in:
            if not active[j] and _carries(f_out[j]) and v in reads:
                active[j] = changed = True
        if not changed:
            break
    if not any(active):
        return _zero_grads(inputs)

    # ---- the backward step: placeholders, a copy of the forward step, its products
    b_seq_ph = {}       # forward inner input -> backward placeholder (its row)
    for _s, _tap, v in f_seq_in + f_rec_in:
        b_seq_ph[v] = _fresh(v)
    b_ns_ph = [_fresh(v) for v in f_ns_in]
    step_out = clone_replace(f_out, replace=list(b_seq_ph.items()) + list(zip(f_ns_in, b_ns_ph))) \
        if f_out else []
    g_ph = {}           # output index -> placeholder of its gradient row (traced outputs)
    for i in range(n_rec + n_nit):
        if active[i] and external[i] and not (i < n_rec and info.rec_last[i]):
            g_ph[i] = _row_type(grads[i].type)()
            g_ph[i].name = "g_%s[t]" % (outputs[i].name or "output%d" % i)
    acc_ph = {}         # (j, l) -> accumulator placeholder b_l of recurrent output j
    for j, taps in enumerate(info.rec_taps):
        if active[j]:
            row = [v for jj, _t, v in f_rec_in if jj == j][0]
            for lag in range(-taps[0]):
                acc_ph[(j, lag)] = _fresh(row)
                acc_ph[(j, lag)].name = "grad_%s[t-%d]" % (outputs[j].name or "output%d" % j, lag)
    ns_acc_ph = {m: _fresh(b_ns_ph[m]) for m in range(len(f_ns_in)) if _carries(f_ns_in[m])}
    for m, ph in ns_acc_ph.items():
        ph.name = "grad_%s[t-1]" % (f_ns_in[m].name or "non_sequence%d" % m)

    known = {}
    for i in range(n_rec + n_nit):
        if not active[i]:
            continue
        if i < n_rec:
            g = acc_ph[(i, 0)] + g_ph[i] if i in g_ph else acc_ph[(i, 0)]
        else:
            g = g_ph[i]
        v = step_out[i]
        known[v] = known[v] + g if v in known else g
    wrt_seq = [(s, tap, b_seq_ph[v]) for s, tap, v in f_seq_in if _carries(v)]
    wrt_rec = [(j, tap, b_seq_ph[v]) for j, tap, v in f_rec_in if active[j]]
    wrt_ns = [(m, b_ns_ph[m]) for m in ns_acc_ph]
    wrt = [w for _, _, w in wrt_seq] + [w for _, _, w in wrt_rec] + [w for _, w in wrt_ns]
    vjp = grad(None, wrt, known_grads=known, disconnected_inputs="ignore", return_disconnected="none") \
        if wrt else []
    vjp_seq = vjp[:len(wrt_seq)]
    vjp_rec = {(j, -tap): g for (j, tap, _), g in zip(wrt_rec, vjp[len(wrt_seq):len(wrt_seq) + len(wrt_rec)])}
    vjp_ns = vjp[len(wrt_seq) + len(wrt_rec):]

    # inner outputs of the backward loop: the accumulators (recurrent), then the sequence products
    acc_keys, acc_new = [], []
    for j, taps in enumerate(info.rec_taps):
        if not active[j]:
            continue
        window = -taps[0]
        for lag in range(window):
            c = vjp_rec.get((j, lag + 1))
            if lag + 1 < window:
                new = acc_ph[(j, lag + 1)] if c is None else acc_ph[(j, lag + 1)] + c
            else:
                new = zeros_like(acc_ph[(j, lag)]) if c is None else c
            acc_keys.append(("rec", j, lag))
            acc_new.append(new)
    for (m, _w), c in zip(wrt_ns, vjp_ns):
        if c is not None:   # (a non-sequence the products do not reach gets zeros)
            acc_keys.append(("ns", m))
            acc_new.append(ns_acc_ph[m] + c)
    nit_keys, nit_new = [], []
    for (s, tap, _w), c in zip(wrt_seq, vjp_seq):
        if c is not None:
            nit_keys.append((s, tap))
            nit_new.append(c)

    if not acc_new and not nit_new:   # gradients only reach integer inputs
        return _zero_grads(inputs)

    # The products often read the step's results (tanh's gradient reads tanh's value): those the
    # forward loop traced are read from its trace instead, so the backward step does not redo the
    # forward work that led to them.
    y_ph, seen = {}, set()
    for i in range(n_rec + n_nit):
        traced = i >= n_rec or not info.rec_last[i]
        if traced and step_out[i].owner is not None and step_out[i] not in seen:
            seen.add(step_out[i])
            y_ph[i] = _fresh(step_out[i])
            y_ph[i].name = "%s[t]" % (outputs[i].name or "output%d" % i)
    if y_ph:
        replaced = clone_replace(acc_new + nit_new, replace=[(step_out[i], ph) for i, ph in y_ph.items()])
        acc_new, nit_new = replaced[:len(acc_new)], replaced[len(acc_new):]

    # ---- outer values: how many steps back, the reversed sequences, the accumulators' starts
    n = n_steps
    if info.truncate_gradient > 0:
        n_back = minimum(n, np.int64(info.truncate_gradient))
    else:
        n_back = n
    used = set(graph_inputs(acc_new + nit_new))
    traces = list(outputs[:n_rec])
    if any(info.rec_last[j] and b_seq_ph[v] in used for j, _t, v in f_rec_in):
        twin = _traced_twin(op)(*inputs)
        twin = twin if isinstance(twin, (list, tuple)) else [twin]
        for j in range(n_rec):
            if info.rec_last[j]:
                traces[j] = twin[j]
    b_inner_seq, b_outer_seq = [], []
    for s, tap, v in f_seq_in:
        if b_seq_ph[v] in used:
            start = tap - info.seq_taps[s][0]
            b_inner_seq.append(b_seq_ph[v])
            b_outer_seq.append(seqs[s][start:start + n][::-1])
    full = {}
    for j, tap, v in f_rec_in:
        if b_seq_ph[v] in used:
            window = -info.rec_taps[j][0]
            if j not in full:
                full[j] = concatenate([inits[j][:window], traces[j]])
            b_inner_seq.append(b_seq_ph[v])
            b_outer_seq.append(full[j][window + tap:window + tap + n][::-1])
    for i in sorted(y_ph):
        if y_ph[i] in used:
            b_inner_seq.append(y_ph[i])
            b_outer_seq.append(outputs[i][::-1])
    for i in sorted(g_ph):
        if g_ph[i] in used:
            b_inner_seq.append(g_ph[i])
            b_outer_seq.append(grads[i][::-1])
    b_inner_acc = [acc_ph[(key[1], key[2])] if key[0] == "rec" else ns_acc_ph[key[1]] for key in acc_keys]
    b_outer_acc = []
    for key in acc_keys:
        if key[0] == "rec":
            j, lag = key[1], key[2]
            if lag == 0 and info.rec_last[j] and external[j]:
                b_outer_acc.append(_leading(grads[j]))
            else:
                b_outer_acc.append(zeros_like(inits[j][:1]))
        else:
            b_outer_acc.append(_leading(zeros_like(non_seqs[key[1]])))
    b_inner_ns, b_outer_ns = [], []
    for m, ph in enumerate(b_ns_ph):
        if ph in used:
            b_inner_ns.append(ph)
            b_outer_ns.append(non_seqs[m])

    back_info = ScanInfo(seq_taps=((0,),) * len(b_inner_seq), rec_taps=((-1,),) * len(b_inner_acc),
                         rec_last=(True,) * len(b_inner_acc), n_nit_sot=len(nit_new),
                         n_non_seqs=len(b_inner_ns), as_while=False, truncate_gradient=-1)
    back_op = Scan(b_inner_seq + b_inner_acc + b_inner_ns, acc_new + nit_new, back_info,
                   name="grad_of_%s" % (op.name or "scan_fn"), mode=op.mode)
    back_op.accumulators_fit = True   # each term is fitted to its accumulator's shape (grad's SumToShape)
    back = back_op(n_back, *b_outer_seq, *b_outer_acc, *b_outer_ns)
    back = list(back) if isinstance(back, (list, tuple)) else [back]
    acc_final = dict(zip(acc_keys, back[:len(acc_keys)]))
    nit_trace = dict(zip(nit_keys, back[len(acc_keys):]))

    # ---- the gradients of the node's inputs
    result = [disconnected_type()]
    for s, seq in enumerate(seqs):
        if not _carries(seq):
            result.append(zeros_like(seq, dtype="floatX"))
            continue
        total = zeros_like(seq)
        for tap in info.seq_taps[s]:
            if (s, tap) not in nit_trace:
                continue
            start = tap - info.seq_taps[s][0]
            rows = nit_trace[(s, tap)][::-1]
            # (a loop of no steps has rows of unknown length 0: give them the sequence's row shape)
            rows = reshape(rows, [n_back] + [seq.shape[a] for a in range(1, seq.ndim)])
            total = inc_subtensor(total[start + n - n_back:start + n], rows)
        result.append(total)
    for j, init in enumerate(inits):
        if not _carries(init):
            result.append(zeros_like(init, dtype="floatX"))
            continue
        if not active[j]:
            result.append(zeros_like(init))
            continue
        window = -info.rec_taps[j][0]
        rows = [acc_final[("rec", j, lag)] for lag in reversed(range(window))]
        rows = _leading(rows[0]) if window == 1 else stack(rows)
        if init.type.shape[0] != window:
            rows = inc_subtensor(zeros_like(init)[:window], rows)
        if info.truncate_gradient > 0:
            rows = switch(gt(n, np.int64(info.truncate_gradient)), zeros_like(rows), rows)
        result.append(rows)
    for m, value in enumerate(non_seqs):
        if not _carries(value):
            result.append(zeros_like(value, dtype="floatX"))
        elif ("ns", m) in acc_final:
            result.append(acc_final[("ns", m)])
        else:
            result.append(zeros_like(value))
    return result


def _zero_grads(inputs):
    out = [disconnected_type()]
    for v in inputs[1:]:
        out.append(zeros_like(v) if _carries(v) else zeros_like(v, dtype="floatX"))
    return out
