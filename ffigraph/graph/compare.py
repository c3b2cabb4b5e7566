"""Whether two graphs compute the same thing, structurally: Theano's ``equal_computations``
(``theano.scan_module.scan_utils``, PyTensor's ``pytensor.graph.basic``) and ``is_same_graph``
(``theano.gof.graph``).

Two variables are the same computation when they are the same variable, a pair the caller
declares equal (``in_xs[i]`` with ``in_ys[i]``), two constants of one type and value, or the same
output of two nodes of equal ops whose inputs are, pairwise, the same computation. No rewrite
runs: ``x * (y * z)`` and ``(x * y) * z`` differ.
"""
from ffigraph.graph.basic import equal_computations, is_same_graph  # noqa: F401  (defined with the graph)

__all__ = ["equal_computations", "is_same_graph"]
