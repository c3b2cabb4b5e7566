"""Inplace rewrites: what may be overwritten, and proof that user-visible arrays never are."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import In, function, shared
from ffigraph.compile.mode import Mode
from ffigraph.graph.basic import Apply
from ffigraph.graph.destroyhandler import DestroyHandler, destroy_problem
from ffigraph.graph.fg import FunctionGraph, InconsistencyError
from ffigraph.graph.op import Op
from ffigraph.graph.rewriting import replace_all_validate
from ffigraph.tensor.fused import FusedElemwise
from helpers import sample


@pytest.fixture(params=["py", "c", "cvm"])
def fast(request):
    return Mode(linker=request.param, optimizer="fast_run")


def _inplace_nodes(f):
    return [n for n in f.maker.fgraph.toposort() if n.op.destroy_map]


class AddOneInplace(Op):
    """x + 1 written into x (a user op declaring destroy_map)."""

    __props__ = ()
    destroy_map = {0: [0]}

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        inputs[0] += 1
        output_storage[0][0] = inputs[0]


# ------------------------------------------------------------------ the rule


def test_destroy_problem_names_each_reason():
    x, y = T.dvector("x"), T.dvector("y")
    e = T.exp(x)
    v = e.dimshuffle(0)
    out = [e * y, e + 1, v * 2]
    fg = FunctionGraph([x, y], out, clone=False)
    fg.mutable_inputs = set()
    node = fg.outputs[0].owner
    assert "not declared" in destroy_problem(fg, y, node)
    assert "read by another node" in destroy_problem(fg, e, node)
    c = T.constant(np.ones(3))
    assert "constant" in destroy_problem(fg, c, node)
    fg.mutable_inputs = {y}
    assert destroy_problem(fg, y, node) is None
    assert "output the caller receives" in destroy_problem(fg, fg.outputs[1], node)


def test_refused_rewrite_is_undone():
    x = T.dvector("x")
    out = T.exp(x) * 2
    fg = FunctionGraph([x], [out])
    fg.mutable_inputs = set()
    fg.attach_feature(DestroyHandler())
    inp = fg.inputs[0]
    before = [n.op for n in fg.toposort()]
    bad = AddOneInplace()(inp)
    assert not replace_all_validate(fg, [(fg.outputs[0].owner.inputs[0], bad)])
    assert [n.op for n in fg.toposort()] == before
    fg.check_integrity()
    with pytest.raises(InconsistencyError):
        fg2 = FunctionGraph([x], [AddOneInplace()(x)])
        fg2.mutable_inputs = set()
        fg2.attach_feature(DestroyHandler())
        fg2.validate()


# ------------------------------------------------------------------ user-visible arrays stay unchanged


def _graphs():
    x, y, w = T.dmatrix("x"), T.dmatrix("y"), T.dmatrix("w")
    return [
        ([x, y], [T.exp(x) * y + 1]),
        ([x, y], [x + y, x - y]),
        ([x, w], [T.tanh(T.dot(x, w)) * 2 + 1]),
        ([x, w], [T.dot(x, w) * 3, T.exp(T.dot(x, w))]),
        ([x], [x * 1 + 0, (x * 2).T * 3]),
        ([x, y], [T.sum(T.exp(x) * y, axis=0) + 1, T.exp(x) * y]),
    ]


@pytest.mark.parametrize("case", range(6))
def test_inputs_and_previous_results_are_never_changed(fast, case):
    ins, outs = _graphs()[case]
    f = function(ins, outs, mode=fast, on_unused_input="ignore")
    ref = function(ins, outs, mode=Mode(linker="py", optimizer=None), on_unused_input="ignore")
    rng = np.random.default_rng(case)
    vals = [sample("float64", (3, 3), rng=rng) for _ in ins]
    copies = [v.copy() for v in vals]
    first = f(*vals)
    kept = [r.copy() for r in first]
    for _ in range(3):
        again = f(*vals)
        for r, k in zip(first, kept):
            np.testing.assert_array_equal(r, k)  # a previous result is never reused
        for v, c in zip(vals, copies):
            np.testing.assert_array_equal(v, c)  # an input is never overwritten
        for got, want in zip(again, ref(*vals)):
            np.testing.assert_allclose(got, want, rtol=1e-13)


def test_intermediates_are_overwritten_in_place(fast):
    x, w = T.dmatrix("x"), T.dmatrix("w")
    f = function([x, w], T.tanh(T.dot(x, w)) * 2 + 1, mode=fast)
    nodes = _inplace_nodes(f)
    assert len(nodes) == 1 and isinstance(nodes[0].op, FusedElemwise)
    assert nodes[0].inputs[0].owner.op.__class__.__name__ == "Dot22"   # the BLAS name (issue 46)


def test_shared_values_are_not_overwritten(fast):
    w = shared(np.arange(4.0), name="w")
    x = T.dvector("x")
    f = function([x], T.exp(w) * x + w, updates=[(w, w * 2 + 1)], mode=fast)
    before = w.get_value().copy()
    held = w.get_value(borrow=True)
    out = f(np.ones(4))
    np.testing.assert_allclose(out, np.exp(before) + before)
    np.testing.assert_array_equal(held, before)  # the old value, held by the user, is intact
    np.testing.assert_array_equal(w.get_value(), before * 2 + 1)


def test_mutable_input_may_be_overwritten_only_when_declared():
    x = T.dmatrix("x")
    for mutable in (False, True):
        f = function([In(x, mutable=mutable)], T.exp(x) * 2, mode=Mode(linker="py", optimizer="fast_run"))
        a = sample("float64", (2, 3))
        a0 = a.copy()
        np.testing.assert_allclose(f(a), np.exp(a0) * 2)
        assert bool(_inplace_nodes(f)) == mutable
        if not mutable:
            np.testing.assert_array_equal(a, a0)


def test_a_graph_output_is_never_destroyed(fast):
    x = T.dvector("x")
    e = T.exp(x)
    f = function([x], [e, T.dot(e, e) * e], mode=fast)
    a = sample("float64", (5,))
    got_e, got = f(a)
    np.testing.assert_allclose(got_e, np.exp(a))
    np.testing.assert_allclose(got, np.dot(np.exp(a), np.exp(a)) * np.exp(a))
