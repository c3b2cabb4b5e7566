"""ffigraph.ifelse: values against numpy, gradients, bad input, and laziness under every linker.

Laziness is proven three ways: nodes that fail when they run (a test op that raises in Python and
sets an error in C, and an index out of range) sit in branches never taken; a test op counts its
own runs (Python); and the per-node call counts of a profiled function show the branch nodes ran
exactly as often as their branch was taken (every linker, C included). Each linker compiles one
function for many cases, to keep the suite cheap.
"""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import COp
from ffigraph.graph.op import Op
from ffigraph.ifelse import IfElse, ifelse

LINKERS = ["py", "c", "cvm", "c|py"]


class Boom(COp, Op):
    """Fails whenever it runs: in Python (RuntimeError) and in C (an error record)."""

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        raise RuntimeError("boom: this branch must not run")

    def c_code(self, node, name, inputs, outputs, sub):
        return 'ffg_set_error(%s, FFG_ERR_RUNTIME, -1, "boom: this branch must not run");\n%s' % (
            sub["err"], sub["fail"])

    def c_code_cache_version(self):
        return (1,)


class Count(Op):
    """The identity, counting its runs (Python only: under a C linker it falls back)."""

    __props__ = ("tag",)

    def __init__(self, tag):
        self.tag = tag
        self.runs = 0

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        self.runs += 1
        output_storage[0][0] = np.array(inputs[0], copy=True)


boom = Boom()


def _mode(linker):
    return Mode(linker=linker)


# ------------------------------------------------------------------ one function, many cases


def _many_cases():
    cb = T.scalar("cb", dtype="bool")
    ci = T.iscalar("ci")
    cf = T.dscalar("cf")
    safe = T.scalar("safe", dtype="bool")   # every call passes True: the other side must never run
    x, y = T.dmatrix("x"), T.dmatrix("y")
    v, s = T.dvector("v"), T.dscalar("s")
    e = T.sum(v)             # shared by a condition and a branch
    w = T.exp(s)             # shared by both branches
    outs = [
        ifelse(ci, T.sum(x), s),                                         # scalars, int condition
        ifelse(cf, x * 2, y + 1),                                        # matrices, float condition
        *ifelse(cb, [x, T.sum(y)], [y, s]),                              # two values, bool condition
        ifelse(ci, ifelse(cf, x, y), ifelse(cb, y * 3, x - 1)),          # nested in both branches
        ifelse(T.gt(e, 0), e * 2, s),                                    # shares its condition's input
        ifelse(cf, w + 1, w - 1),                                        # both branches read w
        ifelse(safe, s + 1, boom(s)),                                    # lazy: an op that fails
        ifelse(safe, T.sum(v), v[10]),                                   # lazy: index out of range
        # nested lazy: the inner condition itself is computed in the outer then branch only
        ifelse(safe, ifelse(T.lt(s, 100), s * 2, boom(s * 5)), boom(s * 7)),
    ]
    return [cb, ci, cf, safe, x, y, v, s], outs


def _expected(cb, ci, cf, safe, x, y, v, s):
    return [
        x.sum() if ci else s,
        x * 2 if cf else y + 1,
        x if cb else y,
        y.sum() if cb else s,
        (x if cf else y) if ci else (y * 3 if cb else x - 1),
        v.sum() * 2 if v.sum() > 0 else s,
        np.exp(s) + 1 if cf else np.exp(s) - 1,
        s + 1,
        v.sum(),
        s * 2,
    ]


CALLS = [
    # cb, ci, cf
    (True, 3, 0.5),
    (False, 0, 0.0),
    (True, 0, -2.0),
    (False, -1, 0.0),
]


@pytest.mark.parametrize("linker", LINKERS)
def test_values_match_numpy_and_untaken_branches_never_run(linker):
    ins, outs = _many_cases()
    f = function(ins, outs, mode=_mode(linker))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    s = np.float64(0.75)
    for k, (cb, ci, cf) in enumerate(CALLS):
        v = rng.standard_normal(3) * (1 if k % 2 else -1)
        args = (np.bool_(cb), np.int32(ci), np.float64(cf), np.bool_(True), x, y, v, s)
        got = f(*args)
        want = _expected(*args)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, rtol=1e-12, err_msg="output %d, call %d" % (i, k))
    # the guard is all that kept them from failing: with it off, the failing side runs
    with pytest.raises((RuntimeError, IndexError), match="boom|out of (bounds|range)"):
        f(np.bool_(True), np.int32(1), np.float64(1.0), np.bool_(False), x, y, v, s)
    # and the function still works afterwards
    np.testing.assert_allclose(f(*args)[0], want[0])


@pytest.mark.parametrize("linker", LINKERS)
def test_outputs_never_alias(linker):
    """Two outputs given the same branch value, and an output that is an input, are distinct arrays."""
    c = T.iscalar("c")
    x = T.dvector("x")
    a, b = ifelse(c, [x, x], [x * 2, x * 2])
    f = function([c, x], [a, b], mode=_mode(linker))
    xv = np.arange(3.0)
    for cv in (1, 0):
        ra, rb = f(np.int32(cv), xv)
        np.testing.assert_allclose(ra, xv if cv else xv * 2)
        assert not np.shares_memory(ra, rb) and not np.shares_memory(ra, xv)
        ra[0] = 99.0
        assert rb[0] != 99.0 and xv[0] == 0.0


# ------------------------------------------------------------------ counting runs


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_branch_nodes_run_only_when_taken(linker):
    """Count has no C code: under cvm the graph falls back to C node by node, sequenced from Python."""
    ct, ce, cn, cc = Count("then"), Count("else"), Count("nested"), Count("cond")
    c = T.iscalar("c")
    x = T.dvector("x")
    inner = ifelse(T.gt(cc(T.sum(x)), 0), cn(x) * 2, x)   # all of it in the outer else branch
    out = ifelse(c, ct(x) + 1, ce(x) - inner)
    f = function([c, x], out, mode=_mode(linker))
    xv = np.array([1.0, 2.0])
    np.testing.assert_allclose(f(np.int32(1), xv), xv + 1)
    assert (ct.runs, ce.runs, cc.runs, cn.runs) == (1, 0, 0, 0)
    np.testing.assert_allclose(f(np.int32(0), xv), xv - 2 * xv)
    assert (ct.runs, ce.runs, cc.runs, cn.runs) == (1, 1, 1, 1)
    np.testing.assert_allclose(f(np.int32(0), -xv), -xv - (-xv))
    assert (ct.runs, ce.runs, cc.runs, cn.runs) == (1, 2, 2, 1)


@pytest.mark.parametrize("linker", LINKERS)
def test_profiled_calls_count_only_taken_branches(linker):
    c = T.iscalar("c")
    x = T.dvector("x")
    out = ifelse(c, T.exp(x).sum(), T.log(x).sum())
    f = function([c, x], out, mode=_mode(linker), profile=True)
    xv = np.array([1.0, 2.0])
    for cv in (1, 1, 1, 0):
        got = f(np.int32(cv), xv)
        np.testing.assert_allclose(got, np.exp(xv).sum() if cv else np.log(xv).sum())
    calls = {}
    for stats in f.profile.nodes():
        text = str(stats.node)
        calls[text] = stats.calls
    then_calls = [n for t, n in calls.items() if "exp" in t and not t.startswith("if{")]
    else_calls = [n for t, n in calls.items() if "log" in t and not t.startswith("if{")]
    assert then_calls and set(then_calls) == {3}, calls
    assert else_calls and set(else_calls) == {1}, calls
    assert [n for t, n in calls.items() if t.startswith("if{")] == [4]


def test_the_c_source_guards_branches_and_reads_like_c():
    c = T.dscalar("c")
    x = T.dvector("x")
    f = function([c, x], ifelse(c, T.exp(x), T.log(x)), mode=Mode(linker="c", optimizer=None))
    source = f.maker.linker.source()
    assert "if (*(const double *)" in source
    assert "/* then branch of node #" in source and "/* else branch of node #" in source


@pytest.mark.parametrize("make_mode", [ffigraph.DebugMode, ffigraph.MonitorMode])
def test_checking_modes_are_lazy_too(make_mode):
    """They sequence one library per node from Python: the lazy op's library gets stand-ins for
    the values of the branch not taken (and DebugMode checks its C against perform)."""
    c = T.iscalar("c")
    v = T.dvector("v")
    f = function([c, v], ifelse(c, T.exp(v).sum(), v[10]), mode=make_mode())
    np.testing.assert_allclose(f(np.int32(1), np.ones(3)), 3 * np.e)
    with pytest.raises(IndexError):
        f(np.int32(0), np.ones(3))


# ------------------------------------------------------------------ the Theano tutorial


def test_theano_tutorial_conditions():
    import ffigraph as theano
    import ffigraph.tensor as T
    from ffigraph.ifelse import ifelse

    a, b = T.dscalar("a"), T.dscalar("b")     # (the tutorial's T.scalars / T.matrices)
    x, y = T.dmatrix("x"), T.dmatrix("y")
    z_switch = T.switch(T.lt(a, b), T.mean(x), T.mean(y))
    z_lazy = ifelse(T.lt(a, b), T.mean(x), T.mean(y))
    f_switch = theano.function([a, b, x, y], z_switch, mode=theano.Mode(linker="vm"))
    f_lazyifelse = theano.function([a, b, x, y], z_lazy, mode=theano.Mode(linker="vm"))
    val1, val2 = 0.0, 1.0
    big_mat1 = np.ones((100, 100))
    big_mat2 = np.full((100, 100), 3.0)
    for fn in (f_switch, f_lazyifelse):
        np.testing.assert_allclose(fn(val1, val2, big_mat1, big_mat2), big_mat1.mean())
        np.testing.assert_allclose(fn(val2, val1, big_mat1, big_mat2), big_mat2.mean())


# ------------------------------------------------------------------ gradients


@pytest.mark.parametrize("linker", ["py", "c"])
def test_gradient_matches_finite_differences(linker):
    def fun(x, y):
        return ifelse(T.gt(T.sum(x), 0), (x ** 2) * y, T.exp(y) - x)

    rng = np.random.default_rng(1)
    y = rng.standard_normal((2, 3))
    for x in (np.abs(rng.standard_normal((2, 3))) + 0.5, -np.abs(rng.standard_normal((2, 3))) - 0.5):
        ffigraph.verify_grad(fun, [x, y], mode=_mode(linker))


def test_gradient_of_several_values_one_unused():
    c = T.iscalar("c")
    x, y = T.dvector("x"), T.dvector("y")
    a, b = ifelse(c, [x * 3, y], [y, x])
    gx, gy, gc = ffigraph.grad(T.sum(a), [x, y, c])
    f = function([c, x, y], [gx, gy, gc], mode=_mode("py"))
    xv, yv = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    rx, ry, rc = f(np.int32(1), xv, yv)
    np.testing.assert_allclose(rx, [3.0, 3.0])
    np.testing.assert_allclose(ry, [0.0, 0.0])
    assert rc == 0
    rx, ry, _ = f(np.int32(0), xv, yv)
    np.testing.assert_allclose(rx, [0.0, 0.0])
    np.testing.assert_allclose(ry, [1.0, 1.0])


# ------------------------------------------------------------------ building


def test_types_shapes_and_what_is_returned():
    c = T.iscalar("c")
    x = T.tensor("float64", shape=(2, 3), name="x")
    y = T.tensor("float64", shape=(2, None), name="y")
    out = ifelse(c, x, y)
    assert out.type.shape == (2, None) and out.dtype == "float64"
    assert isinstance(ifelse(c, [x], [y]), list) and isinstance(ifelse(c, (x,), (y,)), tuple)
    assert isinstance(out.owner.op, IfElse) and out.owner.op.n_outs == 1
    assert out.owner.op.lazy_branches(out.owner) == (0, (1,), (2,))
    assert str(IfElse(2, as_view=True, name="pick")) == "if{pick,inplace}"
    assert IfElse(2, as_view=True).view_map == {0: [1], 1: [2]}
    # one more op of the same kind merges: the name is not a property (as in PyTensor)
    assert IfElse(1, name="a") == IfElse(1, name="b")


def test_inferred_shape_follows_the_taken_branch():
    c = T.iscalar("c")
    x, y = T.dmatrix("x"), T.dmatrix("y")
    out = ifelse(c, x, y[:1])
    f = function([c, x, y], out.shape, mode=_mode("py"))
    xv, yv = np.zeros((2, 3)), np.zeros((4, 5))
    assert tuple(f(np.int32(1), xv, yv)) == (2, 3)
    assert tuple(f(np.int32(0), xv, yv)) == (1, 5)


def test_as_view_takes_the_then_value_itself():
    c = T.iscalar("c")
    x = T.dvector("x")
    out = IfElse(1, as_view=True)(c, x * 2, x + 1)
    f = function([c, x], out, mode=_mode("c"))
    np.testing.assert_allclose(f(np.int32(1), np.ones(2)), [2.0, 2.0])
    np.testing.assert_allclose(f(np.int32(0), np.ones(2)), [2.0, 2.0])


def test_bad_input_is_refused_when_building():
    c = T.iscalar("c")
    x, v, m = T.dscalar("x"), T.dvector("v"), T.dmatrix("m")
    with pytest.raises(TypeError, match="condition must be a scalar"):
        ifelse(v, x, x)
    with pytest.raises(TypeError, match="condition must be a bool, integer or float"):
        ifelse(T.scalar("z", dtype="complex128"), x, x)
    with pytest.raises(ValueError, match="then branch has 2 values but the else branch has 1"):
        ifelse(c, [x, x], [x])
    with pytest.raises(TypeError, match="dtype float64 in the then branch but int32"):
        ifelse(c, x, c)
    with pytest.raises(TypeError, match="1 dimensions in the then branch but 2"):
        ifelse(c, v, m)
    with pytest.raises(ValueError, match="takes a condition and 4 values"):
        IfElse(2)(c, x, x)


def test_module_paths():
    import ffigraph.ifelse as module

    assert ffigraph.ifelse is module and module.ifelse is ifelse and module.IfElse is IfElse


@pytest.mark.parametrize("linker", ["py", "c"])
def test_lazy_inside_a_scan_body(linker):
    """In a loop body too, the branch not taken never runs: v[10] would be an IndexError."""
    import ffigraph

    v = T.dvector("v")
    picked, _ = ffigraph.scan(lambda i: ifelse(T.lt(i, 3), v[i] * 2, v[10]), sequences=T.arange(v.shape[0] - 2))
    f = function([v], picked, mode=Mode(linker=linker))
    np.testing.assert_allclose(f(np.arange(5.0)), [0.0, 2.0, 4.0])
    with pytest.raises(IndexError):
        f(np.arange(6.0))   # 4 steps: step 3 takes the else branch
