"""DebugMode: every node runs through its C code and through ``perform``, checked against each other
and against its destroy_map and view_map; user C ops that lie are caught and named."""
from __future__ import annotations

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import In, function
from ffigraph.compile.debugmode import (
    BadDestroyMap,
    BadThunkOutput,
    BadViewMap,
    DebugLinker,
    DebugMode,
    DebugModeError,
    InvalidValueError,
    first_difference,
    max_abs_difference,
)
from ffigraph.compile.mode import get_mode
from ffigraph.graph import Apply
from ffigraph.graph.op import Op
from ffigraph.linkers.c import COp

# ------------------------------------------------------------------ user ops, right and wrong

# C loop over a float64 vector of any stride; %(body)s computes ``zd[i]`` from ``v``.
VECTOR_LOOP = """
int64_t i, n = %(x)s.shape[0];
if (ffg_alloc_array(&%(z)s, 1, &n, sizeof(double), %(allocator)s, %(err)s))
    %(fail)s
for (i = 0; i < n; ++i) {
    double *xp = (double *)%(x)s.data + i * %(x)s.strides[0];
    double v = *xp;
    %(body)s
}
"""


class VectorCOp(COp, Op):
    """A float64-vector op whose perform and C body subclasses spell out."""

    __props__ = ()
    c_body = "((double *)%(z)s.data)[i] = v;"

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        body = self.c_body % dict(z=z, x=x)
        return VECTOR_LOOP % dict(sub, x=x, z=z, body=body)

    def c_code_cache_version(self):
        return (1,)


class AddWrong(VectorCOp):
    """C computes x + 1, perform x + 2: the kind of slip DebugMode exists for."""

    c_body = "((double *)%(z)s.data)[i] = v + 1.0;"

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] + 2.0


class AddOneOnlyAt(VectorCOp):
    """C and perform agree except at element 3, where C adds 0.5 more."""

    c_body = "((double *)%(z)s.data)[i] = v + 1.0 + (i == 3 ? 0.5 : 0.0);"

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] + 1.0


class SneakyPerformWrite(VectorCOp):
    """perform zeroes its input (no destroy_map); C is honest."""

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].copy()
        inputs[0][...] = 0.0


class SneakyCWrite(VectorCOp):
    """C zeroes its input (no destroy_map) after copying it; perform is honest."""

    c_body = "((double *)%(z)s.data)[i] = v; *xp = 0.0;"

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].copy()


class DeclaredInplace(VectorCOp):
    """Adds one into its input, and says so: no complaint."""

    destroy_map = {0: [0]}

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        return """
        int64_t i;
        for (i = 0; i < %(x)s.shape[0]; ++i)
            ((double *)%(x)s.data)[i * %(x)s.strides[0]] += 1.0;
        %(z)s = %(x)s;
        """ % dict(x=x, z=z)

    def perform(self, node, inputs, out):
        inputs[0] += 1.0
        out[0][0] = inputs[0]


class UndeclaredView(Op):
    """perform returns a view of its input but declares no view_map (Python only)."""

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0][::-1]


class UndeclaredCView(VectorCOp):
    """C hands back its input's memory as the output, with no view_map."""

    def c_code(self, node, name, inputs, outputs, sub):
        return "%s = %s;" % (outputs[0], inputs[0])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].copy()


class DeclaredView(UndeclaredView):
    view_map = {0: [0]}


class WrongDtype(Op):
    """Declares a float64 output, returns float32."""

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [T.dvector().type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].astype("float32")


def no_rewrites():
    return DebugMode(optimizer=None)


# ------------------------------------------------------------------ (1) ordinary graphs agree with numpy


def _rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_elemwise_dtypes(dtype):
    x, y = T.tensor(dtype, (None, None), "x"), T.tensor(dtype, (None, None), "y")
    a = (_rng(1).uniform(-3, 3, (3, 4))).astype(dtype)
    b = (_rng(2).uniform(1, 3, (3, 4))).astype(dtype)
    f = function([x, y], [x * y + x, abs(x - y), T.maximum(x, y)], mode="DebugMode")
    got = f(a, b)
    for g, want in zip(got, [a * b + a, abs(a - b), np.maximum(a, b)]):
        assert g.dtype == want.dtype
        np.testing.assert_allclose(g, want, rtol=1e-5)


def test_float_functions_and_bool():
    x = T.dvector("x")
    a = _rng(3).uniform(0.1, 2, 7)
    f = function([x], [T.exp(x) * T.log(x) + T.tanh(x), x > 1], mode="DebugMode")
    got, mask = f(a)
    np.testing.assert_allclose(got, np.exp(a) * np.log(a) + np.tanh(a))
    assert mask.dtype == np.bool_ and mask.tolist() == (a > 1).tolist()


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions(axis):
    x = T.dmatrix("x")
    a = _rng(4).normal(size=(3, 5))
    f = function([x], [x.sum(axis=axis), x.max(axis=axis), T.exp(x).mean(axis=axis)], mode="DebugMode")
    for g, want in zip(f(a), [a.sum(axis=axis), a.max(axis=axis), np.exp(a).mean(axis=axis)]):
        np.testing.assert_allclose(g, want)


def test_dot_and_subtensor():
    x, y = T.dmatrix("x"), T.dmatrix("y")
    a, b = _rng(5).normal(size=(4, 3)), _rng(6).normal(size=(3, 5))
    f = function([x, y], [T.dot(x, y), x[1:, ::2], x[2], T.dot(x, y)[:, 1]], mode="DebugMode")
    got = f(a, b)
    for g, want in zip(got, [a @ b, a[1:, ::2], a[2], (a @ b)[:, 1]]):
        np.testing.assert_allclose(g, want)
    assert not np.shares_memory(got[1], a)  # the function's outputs are never views of its inputs


def test_inplace_rewritten_graph():
    x, y = T.dmatrix("x"), T.dmatrix("y")
    a, b = _rng(7).normal(size=(3, 3)), _rng(8).normal(size=(3, 3))
    f = function([x, y], T.exp(T.dot(x, y)) + 1, mode="DebugMode")
    inplace = [n for n in f.maker.fgraph.toposort() if n.op.destroy_map]
    assert inplace, "expected the inplace rewrite to reuse dot's output"
    keep_a, keep_b = a.copy(), b.copy()
    np.testing.assert_allclose(f(a, b), np.exp(a @ b) + 1)
    np.testing.assert_array_equal(a, keep_a)
    np.testing.assert_array_equal(b, keep_b)


def test_declared_inplace_user_op_and_mutable_input():
    x = T.dvector("x")
    f = function([In(x, mutable=True)], DeclaredInplace()(x) * 2, mode=no_rewrites())
    np.testing.assert_allclose(f(np.array([1.0, 2.0])), [4.0, 6.0])


def test_grad():
    x = T.dmatrix("x")
    w = ffigraph.shared(_rng(9).normal(size=(3, 2)), name="w")
    cost = T.sum(T.tanh(T.dot(x, w)) ** 2)
    gw = ffigraph.grad(cost, w)
    f = function([x], [cost, gw], mode="DebugMode")
    a = _rng(10).normal(size=(4, 3))
    wv = w.get_value()
    h = np.tanh(a @ wv)
    got_cost, got_gw = f(a)
    np.testing.assert_allclose(got_cost, np.sum(h ** 2))
    np.testing.assert_allclose(got_gw, a.T @ (2 * h * (1 - h ** 2)))


def test_mode_by_name_and_info():
    assert isinstance(get_mode("DebugMode"), DebugMode)
    assert isinstance(get_mode("DEBUG_MODE"), DebugMode)
    assert isinstance(DebugMode().excluding("fusion"), DebugMode)
    assert ffigraph.DebugMode is DebugMode
    x = T.dvector("x")
    f = function([x], T.exp(x) + 1, mode=DebugMode())
    assert "checked against perform" in f.info()
    g = function([x], DeclaredView()(x) * 2, mode=no_rewrites())
    assert "perform only" in g.info()
    np.testing.assert_allclose(g(np.array([1.0, 2.0])), [4.0, 2.0])


def test_debug_linker_in_a_plain_mode():
    x = T.dvector("x")
    f = function([x], T.sqrt(x), mode=ffigraph.Mode(linker=DebugLinker(), optimizer=None))
    np.testing.assert_allclose(f(np.array([4.0, 9.0])), [2.0, 3.0])


# ------------------------------------------------------------------ (2) C and perform disagree


def test_wrong_c_code_is_named():
    x = T.dvector("x")
    f = function([x], AddWrong()(x * 3), mode=no_rewrites())
    with pytest.raises(BadThunkOutput) as info:
        f(np.array([1.0, 2.0, 3.0]))
    err = info.value
    text = str(err)
    assert "AddWrong" in text and "output 0" in text
    assert err.index == (0,) and "index (0,)" in text
    assert err.c_value[0] == 4.0 and err.py_value[0] == 5.0
    assert err.max_abs_diff == 1.0 and "max abs difference 1" in text
    assert isinstance(err.op, AddWrong) and isinstance(err, DebugModeError)


def test_first_differing_element_index():
    x = T.dvector("x")
    f = function([x], AddOneOnlyAt()(x), mode=no_rewrites())
    with pytest.raises(BadThunkOutput, match=r"index \(3,\): C 5\.5, perform 5\.0") as info:
        f(np.arange(6.0) + 1)
    assert info.value.index == (3,) and info.value.max_abs_diff == 0.5
    np.testing.assert_allclose(function([x], AddOneOnlyAt()(x), mode=no_rewrites())(np.ones(3)), [2.0] * 3)


# ------------------------------------------------------------------ (3) undeclared destruction


def test_perform_writing_its_input_is_caught():
    x = T.dvector("x")
    f = function([x], SneakyPerformWrite()(x + 1), mode=no_rewrites())
    with pytest.raises(BadDestroyMap, match="perform of SneakyPerformWrite.*input 0") as info:
        f(np.array([1.0, 2.0]))
    assert info.value.input_index == 0 and info.value.impl == "perform"


def test_c_code_writing_its_input_is_caught():
    x = T.dvector("x")
    f = function([x], SneakyCWrite()(x + 1), mode=no_rewrites())
    with pytest.raises(BadDestroyMap, match="C code of SneakyCWrite.*input 0") as info:
        f(np.array([1.0, 2.0]))
    assert info.value.impl == "C code"


# ------------------------------------------------------------------ (4) undeclared views


def test_undeclared_view_in_perform():
    x = T.dvector("x")
    f = function([x], UndeclaredView()(x + 1), mode=no_rewrites())
    with pytest.raises(BadViewMap, match="UndeclaredView.*output 0.*input 0") as info:
        f(np.array([1.0, 2.0]))
    assert (info.value.output_index, info.value.input_index) == (0, 0)


def test_undeclared_view_in_c():
    x = T.dvector("x")
    f = function([x], UndeclaredCView()(x + 1), mode=no_rewrites())
    with pytest.raises(BadViewMap, match="UndeclaredCView"):
        f(np.array([1.0, 2.0]))


def test_output_type_is_checked():
    x = T.dvector("x")
    f = function([x], WrongDtype()(x), mode=no_rewrites())
    with pytest.raises(InvalidValueError, match="WrongDtype.*float32.*float64"):
        f(np.array([1.0]))


# ------------------------------------------------------------------ (5) NaN and inf compare by place


def test_values_eq_approx_nan_and_inf():
    t = T.dvector().type
    nan, inf = np.nan, np.inf
    assert t.values_eq_approx(np.array([1.0, nan, inf]), np.array([1.0, nan, inf]))
    assert not t.values_eq_approx(np.array([1.0, nan]), np.array([1.0, 2.0]))
    assert not t.values_eq_approx(np.array([inf]), np.array([-inf]))
    assert not t.values_eq_approx(np.array([1.0, nan]), np.array([nan, 1.0]))
    assert T.fvector().type.values_eq_approx(np.float32([1.0]), np.float32([1.00001]))
    assert not t.values_eq_approx(np.array([1.0]), np.array([1.001]))
    assert not T.lvector().type.values_eq_approx(np.array([1, 2]), np.array([1, 3]))


def test_nan_where_perform_has_a_number():
    assert first_difference(T.dvector().type, np.array([np.nan, 1.0, np.nan]), np.array([np.nan, 1.0, 2.0])) == (2,)
    assert np.isnan(max_abs_difference(np.array([np.nan, 1.0]), np.array([1.0, 1.0])))
    assert max_abs_difference(np.array([np.inf, np.nan]), np.array([np.inf, np.nan])) == 0.0


def test_nan_in_graph_passes_when_both_agree():
    x = T.dvector("x")
    f = function([x], T.log(x) * 2, mode="DebugMode")
    a = np.array([-1.0, 0.0, 1.0, np.nan, np.inf])
    with np.errstate(all="ignore"):
        want = np.log(a) * 2
        got = f(a)
    np.testing.assert_array_equal(got, want)  # assert_array_equal matches NaN with NaN


class NanAtOne(VectorCOp):
    """C puts NaN at index 1 where perform has a number."""

    c_body = "((double *)%(z)s.data)[i] = i == 1 ? NAN : v;"

    def c_headers(self):
        return ["<math.h>"]

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].copy()


def test_nan_against_number_is_a_bad_output():
    x = T.dvector("x")
    f = function([x], NanAtOne()(x), mode=no_rewrites())
    with pytest.raises(BadThunkOutput, match=r"index \(1,\): C nan, perform 2\.0"):
        f(np.array([1.0, 2.0, 3.0]))


# ------------------------------------------------------------------ (6) empty arrays and 0-d


def test_empty_and_zero_d():
    x, s = T.dmatrix("x"), T.dscalar("s")
    f = function([x, s], [T.exp(x) * s, x.sum(axis=0), (x * s).sum(), s * 2 + 1], mode="DebugMode")
    e = np.zeros((0, 3))
    got = f(e, 2.0)
    assert got[0].shape == (0, 3) and got[1].tolist() == [0.0] * 3 and got[2] == 0.0
    assert got[3].shape == () and got[3] == 5.0
    g = function([x], AddWrong()(x.sum(axis=1)), mode=no_rewrites())
    assert g(e).shape == (0,)  # nothing to disagree on


def test_zero_d_mismatch_index():
    assert first_difference(T.dscalar().type, np.array(1.0), np.array(2.0)) == ()


class COnly(VectorCOp):
    """No perform: DebugMode runs the C code alone, and still checks its maps."""

    c_body = "((double *)%(z)s.data)[i] = 3.0 * v;"


def test_op_without_perform_runs_c_only():
    x = T.dvector("x")
    f = function([x], COnly()(x), mode=no_rewrites())
    assert "C only" in f.info()
    np.testing.assert_allclose(f(np.array([1.0, -2.0])), [3.0, -6.0])
