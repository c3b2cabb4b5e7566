"""Nodes whose C differs only in the frame variables they use share one node function.

Each group's first node defines a function that takes its variables as pointers (the frame still
owns them) and its index and description for the failure record; every node of the group calls
it with its own variables, under a comment naming the node. A node whose code is unique keeps
its own function, as before.
"""
import re

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.ifelse import ifelse

# a node function's definition (not its declaration, which a unit built in parts also has)
DEFINITION = re.compile(r"^(?:static|FFG_NODE_LINKAGE) (?:__attribute__\(\(noinline\)\) )?int32_t "
                        r"(\w+_(?:node|fn)\d+)\([^;{]*\)\n\{", re.M)


def _layers():
    """Three copies of the same small layer on different inputs: a fused elementwise node, a dot
    and a reduction each, the same C three times."""
    x, y, z, w = T.dmatrix("x"), T.dmatrix("y"), T.dmatrix("z"), T.dmatrix("w")
    outs = []
    for v in (x, y, z):
        h = T.tanh(v * 2.0 + 1.0)
        outs += [T.dot(h, w), h.sum(axis=0)]
    return [x, y, z, w], outs


def _reference(x, y, z, w):
    outs = []
    for v in (x, y, z):
        h = np.tanh(v * 2.0 + 1.0)
        outs += [h.dot(w), h.sum(axis=0)]
    return outs


def _definitions(src):
    return DEFINITION.findall(src)


def _check_shared_source(f):
    src = f.c_source()
    order = [node for node, _ in f.maker.linker.describe_nodes()]
    defined = _definitions(src)
    assert len(defined) < len(order), (len(defined), len(order))
    shared = [name for name in defined if re.search(r"_fn\d+$", name)]
    assert shared, "no shared node function"
    for name in shared:   # each shared function is called by several nodes
        assert len(re.findall(r"\b%s\(state, err, \d+, " % name, src)) >= 2, name
    for index in range(len(order)):   # every node is named, at its function or at its call
        assert "/* node #%d: " % index in src, index
    return src, order


def _data(rows_y=5):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((3, 4)), rng.standard_normal((rows_y, 4)), rng.standard_normal((1, 4)),
            rng.standard_normal((4, 2))]


@pytest.mark.parametrize("profile", [False, True])
def test_shared_node_functions_compute_each_node(profile):
    ins, outs = _layers()
    f = function(ins, outs, mode=Mode(linker="c"), profile=profile)
    _check_shared_source(f)
    for rows in (5, 0, 7):   # different shapes at run time, through the same functions
        args = _data(rows)
        for got, want in zip(f(*args), _reference(*args)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if profile:
        assert all(s.calls == 3 for s in f.profile.nodes())


def test_a_failing_shared_node_reports_itself():
    ins, outs = _layers()
    f = function(ins, outs, mode=Mode(linker="c"))
    order = [node for node, _ in f.maker.linker.describe_nodes()]
    x, y, z, w = _data()
    with pytest.raises(ValueError) as info:
        f(x, np.ones((6, 3)), z, w)   # y's layer: its dot gets (6, 3) . (4, 2)
    message = str(info.value)
    assert "(6, 3)" in message and "(4, 2)" in message, message
    failed = order[info.value.failed_node_index]
    assert "Dot" in type(failed.op).__name__ or "dot" in str(failed.op).lower(), failed
    for got, want in zip(f(x, y, z, w), _reference(x, y, z, w)):   # and the function still works
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("profile", [False, True])
def test_shared_node_functions_in_lazy_branches(profile):
    """The same layer on x (always run) and, lazily, on y or on z: one function, guarded calls."""
    c, x, y, z = T.dscalar("c"), T.dmatrix("x"), T.dmatrix("y"), T.dmatrix("z")

    def layer(v):
        return T.tanh(v * 2.0 + 1.0).sum(axis=0) * 3.0

    def np_layer(v):
        return np.tanh(v * 2.0 + 1.0).sum(axis=0) * 3.0

    f = function([c, x, y, z], [ifelse(T.gt(c, 0), layer(y), layer(z)), layer(x)],
                 mode=Mode(linker="c"), profile=profile)
    src = f.c_source()
    assert re.search(r"_fn\d+\(state, err, ", src), "no shared node function"
    assert "then branch of" in src and "else branch of" in src
    then_block = src[src.index("then branch of"):src.index("else branch of")]
    assert re.search(r"_fn\d+\(state, err, ", then_block), then_block
    rng = np.random.default_rng(1)
    xv, yv, zv = rng.standard_normal((3, 4)), rng.standard_normal((2, 4)), rng.standard_normal((5, 4))
    for cond in (1.0, -1.0, 1.0):
        got, also = f(cond, xv, yv, zv)
        np.testing.assert_allclose(got, np_layer(yv if cond > 0 else zv), rtol=1e-12)
        np.testing.assert_allclose(also, np_layer(xv), rtol=1e-12)
    if profile:   # each branch's nodes ran as often as their branch was taken
        calls = sorted(s.calls for s in f.profile.nodes())
        assert calls[0] == 1 and calls[-1] == 3, calls


def test_unique_nodes_keep_their_own_functions():
    x, y = T.dmatrix("x"), T.dvector("y")
    f = function([x, y], [T.exp(x) * y, (x * 2).sum(axis=0)], mode=Mode(linker="c"))
    src = f.c_source()
    assert not re.search(r"_fn\d+\(", src)
    order = [node for node, _ in f.maker.linker.describe_nodes()]
    assert len(_definitions(src)) == len(order)


def test_shared_code_over_a_user_type():
    """A type whose locals are not an ffg_array (examples/double_op.py: a C double)."""
    from double_op import add, double, mul

    x, y, z = double("x"), double("y"), double("z")
    f = function([x, y, z], mul(add(x, y), add(z, x)), mode=Mode(linker="c", optimizer=None))
    assert f(1.0, 2.0, 3.0) == 12.0
    src = f.maker.linker.source()
    assert re.search(r"\bdouble \*restrict ffg_p_in0\b", src), src
    assert len(_definitions(src)) == 2   # add, shared by both, and mul


def test_a_variable_read_twice_is_one_parameter():
    xs = [T.dvector("x%d" % i) for i in range(3)]
    outs = [x - x * 2.0 for x in xs] + [x * x for x in xs]
    f = function(xs, outs, mode=Mode(linker="c", optimizer=None))
    assert re.search(r"_fn\d+\(state, err, \d+, -?\d+, \"[^\"]*\", &V(\d+), &V\d+\)", f.c_source())
    vals = [np.arange(3.0) + i for i in range(3)]
    for got, want in zip(f(*vals), [v - v * 2.0 for v in vals] + [v * v for v in vals]):
        np.testing.assert_allclose(got, want)
