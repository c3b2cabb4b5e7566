"""The symbolic graph: Types, Variables, Apply nodes, Ops and FunctionGraph."""
from ffigraph.graph.basic import (
    Apply,
    Constant,
    Variable,
    ancestors,
    clone,
    clone_get_equiv,
    clone_replace,
    graph_inputs,
    graph_replace,
    io_toposort,
)
from ffigraph.graph.compare import equal_computations, is_same_graph
from ffigraph.graph.fg import Feature, FunctionGraph, InconsistencyError, MissingInputError
from ffigraph.graph.op import Op
from ffigraph.graph.replace import vectorize_graph
from ffigraph.graph.type import Type

__all__ = [
    "Apply", "Constant", "Variable", "Op", "Type", "FunctionGraph", "Feature",
    "InconsistencyError", "MissingInputError", "ancestors", "clone", "clone_get_equiv",
    "clone_replace", "graph_inputs", "graph_replace", "io_toposort", "equal_computations", "is_same_graph", "vectorize_graph",
]
