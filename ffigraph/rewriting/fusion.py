"""Elementwise fusion: chains of Elemwise nodes become one FusedElemwise, siblings reading the
same inputs share its loop (several outputs), and a reduction absorbs the elementwise work
that feeds it (FusedReduce).

Groups grow backwards from a sink node, adding producers, so the sink reads
(through the group) every input of the group. That keeps error behaviour
exact: the unfused graph fails to broadcast exactly when the fused loop does.
Two groups are merged only when they read the same set of inputs, for the
same reason (and merging groups that read the same inputs cannot close a cycle).
A producer is not added if that would make a cycle through a node outside the
group, counting each group already made as the one node it becomes: two groups
must never each read what the other computes. Nodes needed under different
branches of an ``ifelse`` (graph.branches) stay apart, so the fused loop never
computes a branch not taken.
"""
from __future__ import annotations

import logging

import numpy as np

from ffigraph.graph.basic import Constant
from ffigraph.graph.branches import branch_contexts
from ffigraph.graph.rewriting import replace_all_validate
from ffigraph.scalar.composite import Composite, const_ref
from ffigraph.scalar.expand import expand, expandable
from ffigraph.tensor.elemwise import Elemwise
from ffigraph.tensor.fused import REDUCIBLE, FusedElemwise, FusedReduce
from ffigraph.tensor.fused_c import _vector_function, fusable_step

_log = logging.getLogger("ffigraph.rewriting")

MAX_GROUP_INPUTS = 32  # keeps the loop's buffers (one per input and step) small


def _fusable(node):
    if type(node.op) is not Elemwise:
        return False
    in_dtypes = [v.type.dtype for v in node.inputs]
    return fusable_step(node.op.scalar_op, in_dtypes, node.outputs[0].type.dtype)


def _worth_alone(node):
    """A lone node is fused only when the fused loop is faster: a vectorised transcendental."""
    sop = node.op.scalar_op
    in_dtypes, out_dtype = [v.type.dtype for v in node.inputs], node.outputs[0].type.dtype
    return _vector_function(sop, in_dtypes, out_dtype) is not None or expandable(sop, in_dtypes, out_dtype)


class _Graph:
    """The graph's order, branch contexts and ancestry, for the cycle check.

    ``up[pos[node]]`` is a bitset of the fusable nodes (``bit``) from which ``node`` can be
    reached, itself included, in the graph *as it will be once every finished group is one
    node*: fusing a group joins the ancestry of all its members, so two groups that are each
    fine alone can still read each other (group A computes a value a node of B reads while B
    computes one A reads) and make a cycle once both are fused. Finishing a group (``finish``)
    therefore adds the group's ancestry to every node below it.
    """

    def __init__(self, fgraph):
        self.clients = fgraph.clients
        self.order = fgraph.toposort()
        self.pos = {n: i for i, n in enumerate(self.order)}
        self.context = branch_contexts(fgraph, self.order)   # the lazy branch each node runs under
        self.bit = {}   # the fusable nodes' bits; also the test of fusability (which is not cheap)
        self.up = []
        for node in self.order:
            bits = 0
            if _fusable(node):
                bits = self.bit[node] = 1 << len(self.bit)
            for v in node.inputs:
                if v.owner is not None:
                    bits |= self.up[self.pos[v.owner]]
            self.up.append(bits)
        # Only a node that feeds a fusable node not yet in a group can be asked about again
        # (closes_cycle asks about the nodes feeding a group): ``waiting`` counts those clients
        # per position, and ``asked`` lists the positions that have some, which finish updates.
        self.waiting = [0] * len(self.order)
        for node in self.bit:
            for q in _producers(node):
                self.waiting[self.pos[q]] += 1
        self.asked = [i for i, n in enumerate(self.waiting) if n]

    def closes_cycle(self, members, member_bits, p):
        """True when adding ``p`` to ``members`` would make a path leave the group and come back:
        some node outside the group that feeds it descends from a member (or from ``p``)."""
        bits = member_bits | self.bit[p]
        group = members | {p}
        for node in group:
            for v in node.inputs:
                q = v.owner
                if q is not None and q not in group and self.up[self.pos[q]] & bits:
                    return True
        return False

    def finish(self, sink, members):
        """Record that ``members`` become one node: a node that descends from one of them now
        descends from the ancestors of all. The sink descends from every member (a group grows
        backwards from it), so only what reads another member from outside the group gains
        ancestry, and only the nodes that can still be asked about are updated."""
        waiting = self.waiting
        leaking = 0
        for node in members:
            for q in _producers(node):
                waiting[self.pos[q]] -= 1
            if node is not sink and any(c != "output" and c not in members
                                        for out in node.outputs for c, _ in self.clients[out]):
                leaking |= self.bit[node]
        if not leaking:
            return
        up, joined = self.up, self.up[self.pos[sink]]
        self.asked = [i for i in self.asked if waiting[i]]
        for i in self.asked:
            if up[i] & leaking:
                up[i] |= joined


def _producers(node):
    """The distinct nodes computing ``node``'s inputs."""
    return {v.owner for v in node.inputs if v.owner is not None}


def _grow(graph, sink, assigned):
    members = {sink}
    member_bits = graph.bit[sink]
    ndim = sink.outputs[0].ndim
    frontier = [sink]
    while frontier:
        node = frontier.pop()
        for var in node.inputs:
            p = var.owner
            if p is None or p in members or p in assigned or p not in graph.bit or p.outputs[0].ndim != ndim:
                continue
            if graph.context[p] != graph.context[sink]:
                continue  # p is needed outside sink's ifelse branch: fused, the branch would run eagerly
            if graph.closes_cycle(members, member_bits, p):
                continue
            if len(_external_inputs(list(members) + [p])) > MAX_GROUP_INPUTS:
                continue
            members.add(p)
            member_bits |= graph.bit[p]
            frontier.append(p)
    graph.finish(sink, members)
    return members


def _external_inputs(members):
    """The variables the group reads from outside, in the order the (ordered) members read them."""
    inside = set(members)
    seen = []
    for node in members:
        for v in node.inputs:
            if (v.owner not in inside) and not _inlined(v) and v not in seen:
                seen.append(v)
    return seen


def _inlined(var):
    return isinstance(var, Constant) and np.asarray(var.data).size == 1


def find_groups(fgraph):
    graph = _Graph(fgraph)
    assigned = set()
    groups = []
    for node in reversed(graph.order):
        if node in assigned or node not in graph.bit:
            continue
        members = _grow(graph, node, assigned)
        assigned |= members
        groups.append(sorted(members, key=graph.pos.get))
    return _merge_siblings(groups, graph.context), graph


def _merge_siblings(groups, context):
    by_inputs = {}
    merged = []
    for g in groups:
        key = (g[0].outputs[0].ndim, frozenset(_external_inputs(g)), context[g[0]])
        if not key[1]:
            merged.append(g)
            continue
        if key in by_inputs:
            by_inputs[key].extend(g)
        else:
            by_inputs[key] = list(g)
            merged.append(by_inputs[key])
    return merged


def _outputs_needed(fgraph, members):
    """Variables computed in the group that something outside it (or the graph) reads."""
    out = []
    for node in members:
        v = node.outputs[0]
        if any(c == "output" or c not in members for c, _ in fgraph.clients[v]):
            out.append(v)
    return out


def build_composite(members, outputs):
    """The Composite for ``members`` (topologically ordered) and the input variables it reads."""
    inputs = _external_inputs(members)
    index = {v: k for k, v in enumerate(inputs)}
    step_of = {}
    steps = []
    for node in members:
        args = []
        for v in node.inputs:
            if v in step_of:
                args.append(("step", step_of[v]))
            elif v in index:
                args.append(("in", index[v]))
            else:
                args.append(const_ref(v.data))
        sop, out_dtype = node.op.scalar_op, node.outputs[0].type.dtype
        if expandable(sop, [v.type.dtype for v in node.inputs], out_dtype):
            steps.extend(expand(sop, args[0], out_dtype, len(steps)))
        else:
            steps.append((sop, args, out_dtype))
        step_of[node.outputs[0]] = len(steps) - 1
    comp = Composite([v.type.dtype for v in inputs], steps, [step_of[v] for v in outputs])
    return comp, inputs


def _fuse_group(fgraph, members):
    outputs = _outputs_needed(fgraph, members)
    comp, inputs = build_composite(members, outputs)
    if not inputs:
        return False
    new = FusedElemwise(comp)(*inputs)
    new = new if isinstance(new, list) else [new]
    return replace_all_validate(fgraph, list(zip(outputs, new)), reason="fusion")


def _fuse_reductions(fgraph):
    from ffigraph.tensor.math import Reduce

    for node in fgraph.toposort():
        if node not in fgraph.apply_nodes or not isinstance(node.op, Reduce):
            continue
        op, (x,) = node.op, node.inputs
        producer = x.owner
        if op.kind not in REDUCIBLE or not op.axis or producer is None:
            continue
        if len(fgraph.clients[x]) != 1 or np.dtype(x.type.dtype).kind != "f":
            continue
        if node.outputs[0].type.dtype != x.type.dtype:
            continue
        if op.accumulator_dtype(x.type.dtype) not in ("float32", "float64"):
            continue   # (an explicit complex accumulator has no C loop)
        if isinstance(producer.op, FusedElemwise) and len(producer.outputs) == 1 and not producer.op.inplace:
            comp, inputs = producer.op.composite, producer.inputs
        elif _fusable(producer):
            comp, inputs = build_composite([producer], [x])
        else:
            continue
        if not inputs:
            continue
        new = FusedReduce(comp, op.kind, op.axis, op.acc_dtype)(*inputs)
        replace_all_validate(fgraph, [(node.outputs[0], new)], reason="fusion")


def fusion_rewrite(fgraph):
    groups, _ = find_groups(fgraph)
    for members in groups:
        if len(members) == 1 and not _worth_alone(members[0]):
            continue
        if all(m in fgraph.apply_nodes for m in members):
            _fuse_group(fgraph, members)
    _fuse_reductions(fgraph)
    return fgraph

