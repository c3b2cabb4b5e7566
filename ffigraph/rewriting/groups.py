"""The node-rewriter groups that run to a fixed point, and the decorators that fill them.

canonicalize  one standard form (x*1 -> x, --x -> x, constant folding, shapes from infer_shape);
stabilize     numerically safer forms (log(sigmoid(x)) -> -softplus(-x), log(1+x) -> log1p(x));
specialize    cheaper forms of the same value, once the graph is canonical.
"""
from __future__ import annotations

from ffigraph.graph.rewriting import EquilibriumRewriter

canonicalize = EquilibriumRewriter("canonicalize")
stabilize = EquilibriumRewriter("stabilize")
specialize = EquilibriumRewriter("specialize")


def _registrar(group):
    def register(rewriter, *tags, position=50.0):
        return group.register(rewriter, *tags, position=position)
    return register


register_canonicalize = _registrar(canonicalize)
register_stabilize = _registrar(stabilize)
register_specialize = _registrar(specialize)
