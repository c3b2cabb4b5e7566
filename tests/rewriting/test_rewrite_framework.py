"""The rewrite machinery: tag queries, modes, merge, constant folding, termination."""
import logging
import re

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.graph.basic import Constant
from ffigraph.graph.fg import FunctionGraph
from ffigraph.graph.rewriting import EquilibriumRewriter, RewriteDatabase, node_rewriter, optdb
from ffigraph.scalar.basic import SCALAR_OPS
from ffigraph.tensor.elemwise import Elemwise


def _ops(f):
    return [n.op for n in f.maker.fgraph.toposort()]


def test_standard_rewrites_are_registered_with_tags():
    Mode().rewrites()  # registers on first use
    names = [n for n, _ in optdb.query(include={"fast_run"})]
    assert names == ["merge", "canonicalize", "stabilize", "specialize", "merge_again", "fusion", "inplace"]
    fast_compile = [n for n, _ in optdb.query(include={"fast_compile"})]
    assert "fusion" not in fast_compile and "merge" in fast_compile
    assert [n for n, _ in Mode(optimizer=None).rewrites()] == []
    assert [n for n, _ in Mode(optimizer=None).including("fusion").rewrites()] == ["fusion"]
    assert "fusion" not in [n for n, _ in Mode().excluding("fusion").rewrites()]


def test_database_query_is_ordered_and_filtered():
    db = RewriteDatabase()
    db.register("b", lambda fg: fg, "t1", position=2)
    db.register("a", lambda fg: fg, "t1", "t2", position=2)
    db.register("c", lambda fg: fg, "t2", position=1)
    assert [n for n, _ in db.query(include={"t1", "t2"})] == ["c", "a", "b"]
    assert [n for n, _ in db.query(include={"t1"}, exclude={"t2"})] == ["b"]
    assert [n for n, _ in db.query(include={"t1"}, require={"t2"})] == ["a"]
    with pytest.raises(ValueError):
        db.register("a", lambda fg: fg)


@pytest.mark.parametrize("linker", ["py", "c"])
def test_merge_removes_common_subexpressions_and_equal_constants(linker):
    x = T.dvector("x")
    out = T.exp(x) * 2.5 + T.exp(x) * 2.5
    f = function([x], out, mode=Mode(linker=linker, optimizer="fast_compile"))
    ops = _ops(f)
    assert sum(1 for op in ops if getattr(op, "scalar_op", None) is SCALAR_OPS["exp"]) == 1
    assert sum(1 for op in ops if getattr(op, "scalar_op", None) is SCALAR_OPS["mul"]) == 1
    a = np.linspace(-2, 2, 7)
    np.testing.assert_allclose(f(a), 2 * np.exp(a) * 2.5)
    consts = [v for v in f.maker.fgraph.variables if isinstance(v, Constant)]
    assert len(consts) == len({c.signature() for c in consts})


def test_constant_folding_through_perform():
    x = T.dvector("x")
    c = T.exp(T.constant(np.array([0.0, 1.0]))) * 2
    f = function([x], x + c, mode=Mode(linker="py", optimizer="fast_compile"))
    ops = _ops(f)
    assert len(ops) == 1 and ops[0].scalar_op is SCALAR_OPS["add"], ops
    np.testing.assert_allclose(f(np.ones(2)), 1 + 2 * np.exp([0.0, 1.0]))


class CFoldedExp(Elemwise):
    """An exp whose constant folding must go through C (perform would fail)."""

    def python_constant_folding(self, node):
        return False

    def perform(self, node, inputs, output_storage):
        raise AssertionError("perform must not run for this op's constant folding")


def test_constant_folding_through_c_code_when_the_op_asks():
    x = T.dvector("x")
    c = CFoldedExp(SCALAR_OPS["exp"])(T.constant(np.array([0.0, 2.0])))
    f = function([x], x * c, mode=Mode(linker="c", optimizer="fast_compile"))
    assert not any(isinstance(op, CFoldedExp) for op in _ops(f))
    np.testing.assert_allclose(f(np.ones(2)), np.exp([0.0, 2.0]))


def test_large_constants_are_not_folded():
    x = T.dvector("x")
    big = T.exp(T.constant(np.zeros(100000)))
    f = function([x], x + big, mode=Mode(linker="py", optimizer="fast_compile"))
    assert any(getattr(op, "scalar_op", None) is SCALAR_OPS["exp"] for op in _ops(f))


def test_equilibrium_terminates_when_rewrites_undo_each_other(caplog):
    group = EquilibriumRewriter("pingpong", max_passes=5)
    neg = Elemwise(SCALAR_OPS["neg"])

    @node_rewriter([Elemwise], name="wrap")
    def wrap(fgraph, node):
        if node.op.scalar_op is SCALAR_OPS["exp"]:
            return [neg(neg(node.outputs[0].owner.op(*node.inputs)))]

    @node_rewriter([Elemwise], name="unwrap")
    def unwrap(fgraph, node):
        inner = node.inputs[0].owner
        if node.op is neg and inner is not None and inner.op is neg:
            return [inner.inputs[0]]

    group.register(wrap)
    group.register(unwrap)
    x = T.dvector("x")
    fg = FunctionGraph([x], [T.exp(x)])
    with caplog.at_level(logging.INFO, logger="ffigraph.rewriting"):
        group(fg)
    fg.check_integrity()
    assert "without reaching a fixed point" in caplog.text


def test_rewrites_that_fired_are_logged(caplog):
    x = T.dvector("x")
    with caplog.at_level(logging.DEBUG, logger="ffigraph.rewriting"):
        function([x], x * 1 + T.exp(x), mode=Mode(linker="py"))
    fired = [r.getMessage() for r in caplog.records if r.name == "ffigraph.rewriting"]
    # the rewrite itself, in its phase, with what it replaced and by what (not the phase's timing line)
    assert any(re.fullmatch(r"canonicalize: local_mul_one replaced Elemwise\{mul\}\(x, .*\) with x", m)
               for m in fired), fired
    # rewrites that had nothing to do (no x + 0, no x / 1 here) are not reported as fired
    assert not any("local_add_zero" in m or "local_div_one" in m for m in fired), fired


def test_fast_compile_mode_by_name():
    x = T.dvector("x")
    f = function([x], T.exp(x) * 2 + 1, mode="FAST_COMPILE")
    assert len(_ops(f)) == 3  # no fusion there
    np.testing.assert_allclose(f(np.zeros(3)), [3.0, 3.0, 3.0])
