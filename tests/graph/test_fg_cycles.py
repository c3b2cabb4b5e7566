"""A FunctionGraph refuses a replacement that would make it cyclic, naming the rewrite.

A cycle has no order to run in: the toposort silently broke it, and a node then read a value
computed after it (a segfault in C, ``None`` in Python). The refusal leaves the graph as it was,
and the rewriting loop undoes the rest of that rewrite's replacements.
"""
import pytest

import ffigraph.tensor as T
from ffigraph.graph.fg import FunctionGraph, InconsistencyError
from ffigraph.graph.rewriting import replace_all_validate


def _graph_text(fg):
    return [str(n) for n in fg.toposort()]


def test_replace_reading_its_own_client_is_refused_with_the_rewrites_name():
    x = T.dvector("x")
    a = T.exp(x)
    fg = FunctionGraph([x], [T.sin(a) + a])
    a, = [n.outputs[0] for n in fg.toposort() if "exp" in str(n.op)]
    total = fg.outputs[0]
    before = _graph_text(fg)
    with pytest.raises(InconsistencyError, match=r"^my_rewrite: .*cyclic"):
        fg.replace(a, T.cos(total), reason="my_rewrite")   # exp(x) := cos(sin(exp(x)) + exp(x))
    assert _graph_text(fg) == before
    fg.check_integrity()
    # through the rewriting loop's entry: refused and undone, the graph intact
    assert replace_all_validate(fg, [(a, T.cos(total))], reason="my_rewrite") is False
    assert _graph_text(fg) == before
    fg.check_integrity()
    # a replacement that closes no cycle still goes through
    fg.replace(a, T.exp(fg.inputs[0]) * 2.0, reason="fine")
    fg.check_integrity()


def test_cycle_through_a_deep_new_branch_is_found():
    """After a node starts reading a deeper value, its level rises with it: a later cycle
    through it is still found (a stale level would hide it from the search)."""
    x = T.dvector("x")
    fg = FunctionGraph([x], [T.sin(x), T.exp(x)])
    sin_node, exp_node = fg.outputs[0].owner, fg.outputs[1].owner
    fg.change_node_input(sin_node, 0, T.tanh(T.tanh(exp_node.outputs[0])), reason="deepen")
    before = _graph_text(fg)
    with pytest.raises(InconsistencyError, match=r"^close_loop: .*cyclic"):
        fg.change_node_input(exp_node, 0, T.cos(sin_node.outputs[0]), reason="close_loop")
    assert _graph_text(fg) == before
    with pytest.raises(InconsistencyError, match=r"^\(unnamed rewrite\): .*cyclic"):
        fg.replace(exp_node.outputs[0], sin_node.outputs[0])   # tanh(exp(x)) := tanh(sin(tanh(tanh(exp(x)))))
    assert _graph_text(fg) == before
    fg.check_integrity()
