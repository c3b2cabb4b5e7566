"""Theano's ``d3viz``: an interactive HTML page of a compiled function's graph."""
from ffigraph.d3viz.d3viz import d3viz, d3write

__all__ = ["d3viz", "d3write"]
