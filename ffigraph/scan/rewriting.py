"""Rewrites of Scan nodes in the outer graph (PyTensor's scan_opt, in part).

``scan_push_out_non_seqs``: work in the loop body that reads only non-sequences
(and constants) gives the same value at every step, so it is computed once,
before the loop, and passed in as a new non-sequence. Non-sequences that are
constants are moved into the body (where constant folding reaches them), and
non-sequences the body no longer reads are dropped.

``scan_push_out_accumulators``: an accumulator that adds one outer product per
step (a backward loop's gradient of a weight matrix) becomes one matrix product
after the loop, over the vectors the loop now outputs; one that adds a value the
loop already outputs or reads becomes a sum over its rows.

``scan_remove_unused_outputs``: outputs the graph never reads are not computed
(with the work only they needed), unless a kept output reads their values.

The body itself is rewritten with the function's mode when the function is
compiled (``Scan.prepare_inner``): merge, constant folding, fusion and the rest.
"""
from __future__ import annotations

from ffigraph.compile.mode import Mode
from ffigraph.graph.basic import Constant, ancestors, clone_replace
from ffigraph.graph.branches import branch_contexts
from ffigraph.graph.rewriting import node_rewriter
from ffigraph.rewriting.canonicalize import elemwise_name
from ffigraph.rewriting.groups import register_canonicalize
from ffigraph.scan.op import Scan
from ffigraph.scan.utils import info_counts
from ffigraph.tensor import dot, reshape
from ffigraph.tensor.elemwise import DimShuffle


def _invariant_nodes(inner, non_seqs):
    """The body's nodes whose inputs are all non-sequences, constants or outputs of such nodes,
    and that run at every step: work inside a lazy branch (ifelse) stays where it is, since
    before the loop it would run whether the branch is taken or not."""
    invariant = set(non_seqs)
    contexts = branch_contexts(inner)
    nodes = []
    for node in inner.toposort():
        if contexts[node]:
            continue
        if all(isinstance(v, Constant) or v in invariant for v in node.inputs):
            nodes.append(node)
            invariant.update(node.outputs)
    return nodes


def _boundary(inner, nodes):
    """Outputs of the invariant ``nodes`` that the loop-dependent part (or the body's outputs) reads."""
    node_set = set(nodes)
    out = []
    for node in nodes:
        for var in node.outputs:
            if any(client == "output" or client not in node_set for client, _ in inner.clients.get(var, ())):
                out.append(var)
    return out


@node_rewriter([Scan], name="scan_canonicalize_inner")
def scan_canonicalize_inner(fgraph, node):
    """The body in canonical form (merge, constant folding, shapes from infer_shape), so that the
    rewrites below see one variable per value (a gradient's body computes the same shape or the
    same product in several ways until then). Done once per op; the full rewrite of the body with
    the function's mode comes later (``Scan.prepare_inner``)."""
    op = node.op
    if op.inner_canonical:
        return None
    inner = op.fgraph.clone()
    inner.mutable_inputs = set()
    Mode(linker="py", optimizer="fast_compile").optimize(inner)
    new_op = op.remade(inner.inputs, inner.outputs, canonical=True)
    outs = new_op(*node.inputs)
    return _same_types(node, outs if isinstance(outs, (list, tuple)) else [outs])


@node_rewriter([Scan], name="scan_push_out_non_seqs")
def scan_push_out_non_seqs(fgraph, node):
    op = node.op
    inner = op.fgraph
    n_seq_in, n_rec_in = info_counts(op.info)
    first = n_seq_in + n_rec_in
    inner_ns = list(inner.inputs[first:])
    n_steps, seqs, inits, outer_ns = op.outer_groups(node.inputs)
    outer_ns = list(outer_ns)
    replace = {}
    # constants go into the body
    for ph, value in zip(inner_ns, outer_ns):
        if isinstance(value, Constant):
            replace[ph] = value
    # loop-invariant work comes out of it
    invariant = _invariant_nodes(inner, [ph for ph in inner_ns if ph not in replace])
    boundary = [v for v in _boundary(inner, invariant) if not isinstance(v, Constant)]
    new_outer = []
    if boundary:
        hoisted = clone_replace(boundary, replace=[(ph, v) for ph, v in zip(inner_ns, outer_ns)])
        for var, outer in zip(boundary, hoisted):
            if outer.type != var.type:
                converted = var.type.convert_variable(outer)
                if converted is None:
                    return None
                outer = converted
            ph = var.type()
            ph.name = var.name
            replace[var] = ph
            new_outer.append((ph, outer))
    if not replace:
        return _drop_unused(fgraph, node)
    try:
        new_outputs = clone_replace(list(inner.outputs), replace=list(replace.items()))
    except TypeError:
        return None
    kept = [(ph, v) for ph, v in zip(inner_ns, outer_ns) if ph not in replace] + new_outer
    new_op = op.remade(list(inner.inputs[:first]) + [ph for ph, _ in kept], new_outputs,
                       op.info._replace(n_non_seqs=len(kept)))
    new_node_outputs = new_op(n_steps, *seqs, *inits, *[v for _, v in kept])
    if not isinstance(new_node_outputs, (list, tuple)):
        new_node_outputs = [new_node_outputs]
    return _same_types(node, new_node_outputs)


def _drop_unused(fgraph, node):
    """The node without the non-sequences its body does not read, or None when it reads them all."""
    op = node.op
    inner = op.fgraph
    first = sum(info_counts(op.info))
    inner_ns = list(inner.inputs[first:])
    unused = [ph for ph in inner_ns if not inner.clients.get(ph)]
    if not unused:
        return None
    n_steps, seqs, inits, outer_ns = op.outer_groups(node.inputs)
    kept = [(ph, v) for ph, v in zip(inner_ns, outer_ns) if ph not in unused]
    new_op = op.remade(list(inner.inputs[:first]) + [ph for ph, _ in kept], list(inner.outputs),
                       op.info._replace(n_non_seqs=len(kept)), canonical=op.inner_canonical)
    outs = new_op(n_steps, *seqs, *inits, *[v for _, v in kept])
    return _same_types(node, outs if isinstance(outs, (list, tuple)) else [outs])


def _same_types(node, new_outputs):
    """The new outputs of a remade node in the old ones' types, or None."""
    if len(new_outputs) != len(node.outputs):
        return None
    fitted = _fitted(dict(zip(node.outputs, new_outputs)))
    return None if fitted is None else [fitted[old] for old in node.outputs]


def _fitted(replacement):
    """{old: new} with each new variable in its old one's type (a more static one may stand for
    it), or None when one cannot be."""
    out = {}
    for old, new in replacement.items():
        if new.type != old.type:
            new = old.type.convert_variable(new)
            if new is None:
                return None
        out[old] = new
    return out


@node_rewriter([Scan], name="scan_remove_unused_outputs")
def scan_remove_unused_outputs(fgraph, node):
    """Outputs nothing reads are not computed: a nit-sot output, or a recurrent one whose values
    no kept output (nor the until condition) reads at a later step. A gradient asks for every
    input's products; the ones not wanted (say, of the data sequence) go here."""
    op = node.op
    info = op.info
    inner = op.fgraph
    n_rec, n_nit = len(info.rec_taps), info.n_nit_sot
    used = [bool(fgraph.clients.get(out)) for out in node.outputs]
    if all(used) or not any(used):   # (a node nothing reads is pruned as a whole)
        return None
    n_seq_in, _ = info_counts(info)
    rec_in, k = [], n_seq_in
    for taps in info.rec_taps:
        rec_in.append(list(inner.inputs[k:k + len(taps)]))
        k += len(taps)
    needed = list(used)
    condition = [inner.outputs[-1]] if info.as_while else []
    while True:
        read = set(ancestors([inner.outputs[i] for i in range(n_rec + n_nit) if needed[i]] + condition))
        grown = [j for j in range(n_rec) if not needed[j] and any(v in read for v in rec_in[j])]
        if not grown:
            break
        for j in grown:
            needed[j] = True
    if all(needed):
        return None
    keep_rec = [j for j in range(n_rec) if needed[j]]
    keep_nit = [n_rec + m for m in range(n_nit) if needed[n_rec + m]]
    new_inputs = list(inner.inputs[:n_seq_in]) + [v for j in keep_rec for v in rec_in[j]] + \
        list(inner.inputs[k:])
    new_outputs = [inner.outputs[i] for i in keep_rec + keep_nit] + condition
    new_info = info._replace(rec_taps=tuple(info.rec_taps[j] for j in keep_rec),
                             rec_last=tuple(info.rec_last[j] for j in keep_rec), n_nit_sot=len(keep_nit))
    new_op = op.remade(new_inputs, new_outputs, new_info, canonical=op.inner_canonical)
    n_steps, seqs, inits, non_seqs = op.outer_groups(node.inputs)
    outs = new_op(n_steps, *seqs, *[inits[j] for j in keep_rec], *non_seqs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    return _fitted({node.outputs[i]: new for new, i in zip(outs, keep_rec + keep_nit)})


def _outer_product(var):
    """(column, row) when ``var`` is ``a[:, None] * c[None, :]`` for vectors a and c, else None."""
    node = var.owner
    if elemwise_name(node) != "mul" or len(node.inputs) != 2:
        return None
    parts = {}
    for v in node.inputs:
        ds = v.owner
        if ds is None or not isinstance(ds.op, DimShuffle) or ds.inputs[0].ndim != 1:
            return None
        parts[ds.op.new_order] = ds.inputs[0]
    if set(parts) != {(0, "x"), ("x", 0)}:
        return None
    return parts[(0, "x")], parts[("x", 0)]


@node_rewriter([Scan], name="scan_push_out_accumulators")
def scan_push_out_accumulators(fgraph, node):
    """An accumulator that only adds a term per step, ``acc + term_t``, whose term needs no work
    the loop does not do anyway, becomes a sum after the loop:

    * an outer product ``a_t[:, None] * c_t[None, :]`` of vectors (a backward loop's gradient of
      a weight matrix): ``acc_0 + A.T . C``, one matrix product over the rows of a_t and c_t;
    * a term the loop already outputs or reads as a sequence row: ``acc_0 + sum(rows, axis=0)``.

    The rows come from a sequence when the term is one of its slices, from an output the loop
    already traces, or else from a new traced output."""
    op = node.op
    info = op.info
    inner = op.fgraph
    n_rec = len(info.rec_taps)
    n_seq_in, _ = info_counts(info)
    first = n_seq_in
    for j in range(n_rec):
        ph = inner.inputs[first]
        first += len(info.rec_taps[j])
        if not info.rec_last[j] or info.rec_taps[j] != (-1,):
            continue
        out = inner.outputs[j]
        # the term must have the accumulator's shape at every step (a broadcast add is no sum
        # of rows): vouched for by the gradient's builder, or seen in the static shapes
        if not op.accumulators_fit and any(d is None for d in out.type.shape):
            continue
        add = out.owner
        if elemwise_name(add) != "add" or len(add.inputs) != 2 or list(add.inputs).count(ph) != 1:
            continue
        if [c for c, _ in inner.clients.get(ph, ())] != [add] or \
                any(c != "output" for c, _ in inner.clients.get(out, ())):
            continue
        term = add.inputs[1] if add.inputs[0] is ph else add.inputs[0]
        if term.type != out.type or ph in ancestors([term]):
            continue
        pair = _outer_product(term)
        if pair is not None:
            return _without_accumulator(node, j, ph, list(pair), "outer")
        if _rows_available(op, term):
            return _without_accumulator(node, j, ph, [term], "sum")
    return None


def _rows_available(op, var):
    """True when the loop has ``var``'s value at every step without more work: a sequence slice or
    a nit-sot output."""
    n_seq_in, _ = info_counts(op.info)
    n_rec = len(op.info.rec_taps)
    return var in op.inner_inputs[:n_seq_in] or var in op.inner_outputs[n_rec:n_rec + op.info.n_nit_sot]


def _without_accumulator(node, j, ph, terms, form):
    """Node ``node`` without its accumulator j (inner input ``ph``), its final value computed after
    the loop from the rows of ``terms``: ``form`` "outer" (two vectors) or "sum" (one term)."""
    op = node.op
    info = op.info
    inner = op.fgraph
    n_rec = len(info.rec_taps)
    n_steps, seqs, inits, non_seqs = op.outer_groups(node.inputs)
    nit_outputs = list(inner.outputs[n_rec:n_rec + info.n_nit_sot])
    n_seq_in, _ = info_counts(info)
    sources, added = [], []   # per term: ("seq", s, tap) / ("nit", index among the nit-sots)
    for var in terms:
        if var in inner.inputs[:n_seq_in]:
            k = list(inner.inputs).index(var)
            for s, taps in enumerate(info.seq_taps):
                if k < len(taps):
                    sources.append(("seq", s, taps[k]))
                    break
                k -= len(taps)
        else:
            if var not in nit_outputs and var not in added:
                added.append(var)
            index = nit_outputs.index(var) if var in nit_outputs else len(nit_outputs) + added.index(var)
            sources.append(("nit", index))
    keep = [i for i in range(n_rec) if i != j]
    inputs = [v for v in inner.inputs if v is not ph]
    condition = [inner.outputs[-1]] if info.as_while else []
    outputs = [inner.outputs[i] for i in keep] + nit_outputs + added + condition
    new_info = info._replace(rec_taps=tuple(info.rec_taps[i] for i in keep),
                             rec_last=tuple(info.rec_last[i] for i in keep),
                             n_nit_sot=info.n_nit_sot + len(added))
    new_op = op.remade(inputs, outputs, new_info, canonical=op.inner_canonical)
    outs = new_op(n_steps, *seqs, *[inits[i] for i in keep], *non_seqs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    new_nits = outs[len(keep):]
    start = inits[j][0]

    def rows(source, row_shape):
        if source[0] == "seq":
            _, s, tap = source
            begin = tap - info.seq_taps[s][0]
            values = seqs[s][begin:begin + n_steps]
        else:
            values = new_nits[source[1]]
        # (with no steps the rows may have any length, never read by the loop: give them the
        # accumulator's; with steps, the loop's own shape checks made them so)
        return reshape(values, [n_steps] + list(row_shape))

    if form == "outer":
        final = start + dot(rows(sources[0], [start.shape[0]]).T, rows(sources[1], [start.shape[1]]))
    else:
        final = start + rows(sources[0], [start.shape[a] for a in range(start.ndim)]).sum(axis=0)
    replacement = {node.outputs[j]: final}
    for i, new in zip(keep, outs[:len(keep)]):
        replacement[node.outputs[i]] = new
    for m in range(info.n_nit_sot):
        replacement[node.outputs[n_rec + m]] = new_nits[m]
    return _fitted(replacement)


register_canonicalize(scan_canonicalize_inner, "fast_run", "scan", position=59.0)
register_canonicalize(scan_push_out_non_seqs, "fast_run", "scan", position=60.0)
register_canonicalize(scan_push_out_accumulators, "fast_run", "scan", position=60.5)
register_canonicalize(scan_remove_unused_outputs, "fast_run", "scan", position=61.0)
