"""Scalar-typed variables (PyTensor's pytensor.scalar): graphs of scalars built with the scalar
ops and operators, Composite from scalar variables, scalar/tensor conversion and gradients,
compiled under the C and Python linkers, against numpy (and hand derivatives).

One compiled function per linker takes many expressions at once: what differs between them is the
scalar op, which the lowering to 0-d tensors (ffigraph/tensor/scalar_graph.py) maps one by one.
"""
import math
import pickle

import numpy as np
import pytest

import ffigraph
import ffigraph.scalar as ps
import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.scalar.type import ScalarConstant, ScalarType, ScalarVariable

LINKERS = {"c": Mode(linker="c"), "py": Mode(linker="py")}


@pytest.fixture(params=sorted(LINKERS))
def mode(request):
    return LINKERS[request.param]


def test_types_and_constructors():
    x = ps.float32("x")
    assert isinstance(x, ScalarVariable) and isinstance(x.type, ScalarType)
    assert x.type == ps.get_scalar_type("float32") and x.dtype == "float32" and x.ndim == 0 and x.name == "x"
    assert ps.ScalarType("floatX") == ps.get_scalar_type(ffigraph.config.floatX)
    assert [v.name for v in ps.floats("xyz")] == ["x", "y", "z"] and ps.ints("ab")[0].dtype == "int64"
    assert ps.bool.dtype == "bool" and ps.complexs(2)[1].dtype == "complex128"
    with pytest.raises(TypeError, match="unsupported dtype"):
        ps.ScalarType("object")
    # PyTensor's autocasting of Python numbers: the smallest int that holds it, float32 when exact
    assert ps.constant(2, name="a").dtype == "int8" and ps.constant(2, name="a").name == "a"
    assert ps.constant(300).dtype == "int16" and ps.constant(2 ** 40).dtype == "int64"
    assert ps.constant(2, dtype="float32").dtype == "float32"
    assert ps.constant(1.5).dtype == "float32" and ps.constant(0.1).dtype == "float64"
    assert ps.constant(True).dtype == "bool" and ps.constant(np.float16(1)).dtype == "float16"
    assert isinstance(ps.constant(3.0), ScalarConstant) and ps.constant(3.0).data == 3.0
    with pytest.raises(TypeError, match="shape"):
        ps.constant([1, 2])
    # ops by PyTensor's class names are the table's ops
    assert ps.EQ() == ps.eq and ps.IntDiv() == ps.int_div and ps.Add()(x, x).owner.op == ps.add
    assert ps.abs is ps.abs_ and ps.pow.name == "pow"
    assert pickle.loads(pickle.dumps(ps.mul)) == ps.mul
    # a scalar's shape: an empty int64 vector, as PyTensor's
    assert x.shape.type == T.TensorType("int64", (0,)) and ps.constant(2).shape.type.ndim == 1


def test_filter():
    i8, f32 = ps.int8, ps.float32
    assert f32.filter(0.5) == 0.5 and type(f32.filter(0.5)) is np.float32
    assert type(i8.filter(-128)) is np.int8
    with pytest.raises(TypeError, match="without changing its value"):
        i8.filter(300)
    with pytest.raises(TypeError, match="without changing its value"):
        f32.filter(0.1)     # not a float32 (floatX is float64)
    assert f32.filter(0.1, allow_downcast=True) == np.float32(0.1)
    with pytest.raises(TypeError, match="strict"):
        f32.filter(0.5, strict=True)
    assert f32.filter(np.float32(0.5), strict=True) == 0.5
    with pytest.raises(TypeError, match="shape"):
        f32.filter(np.zeros(2))
    with pytest.raises(TypeError, match="to a number"):
        f32.filter("1")
    assert np.isnan(ps.float64.filter(math.nan)) and ps.float64.values_eq(math.nan, math.nan)
    assert not ps.float64.values_eq(1.0, 2.0) and ps.float64.values_eq_approx(1.0, 1.0 + 1e-12)


def test_operators_and_ops_against_numpy(mode):
    x, y = ps.floats("xy")
    i, j = ps.int32("i"), ps.int32("j")
    b = ps.int8("b")
    cases = [
        (x + y * 2 - x / y, lambda x, y, i, j, b: x + y * 2 - x / y),
        (x ** y + (-x) % y, lambda x, y, i, j, b: x ** y + np.mod(-x, y)),
        (x // y, lambda x, y, i, j, b: np.floor_divide(x, y)),
        (ps.mul(x, y, x), lambda x, y, i, j, b: x * y * x),          # PyTensor's n-ary mul and add
        (ps.add(x, y, i, 1), lambda x, y, i, j, b: x + y + i + 1),
        (ps.exp(x) + ps.log(y) + ps.sqrt(y) + ps.tanh(x), lambda x, y, i, j, b: np.exp(x) + np.log(y) +
         np.sqrt(y) + np.tanh(x)),
        (ps.switch(x < y, x, y), lambda x, y, i, j, b: min(x, y)),
        (x > y, lambda x, y, i, j, b: x > y),
        (ps.eq(x, x) & ps.neq(x, y), lambda x, y, i, j, b: True),
        (i | j, lambda x, y, i, j, b: i | j),
        (i ^ j, lambda x, y, i, j, b: i ^ j),
        (ps.and_(i, j), lambda x, y, i, j, b: i & j),
        (~i, lambda x, y, i, j, b: ~i),
        (i // j, lambda x, y, i, j, b: np.floor_divide(i, j)),
        (i % j, lambda x, y, i, j, b: np.mod(i, j)),
        (i / j, lambda x, y, i, j, b: i / j),                             # a float64: floatX
        (ps.sqrt(b), lambda x, y, i, j, b: np.sqrt(np.float32(b))),       # an int8's: float32
        (ps.cast(x, "int16"), lambda x, y, i, j, b: np.int16(x)),
        (abs(b), lambda x, y, i, j, b: abs(b)),
        (ps.scalar_maximum(x, i), lambda x, y, i, j, b: max(x, i)),
        (ps.gamma(y) + ps.psi(y), lambda x, y, i, j, b: math.gamma(y) + 0.9227843350984671),
    ]
    f = function([x, y, i, j, b], [e for e, _ in cases], mode=mode)
    values = (-1.5, 3.0, np.int32(-7), np.int32(3), 49)
    got = f(*values)
    for (e, ref), value in zip(cases, got):
        want = np.asarray(ref(np.float64(values[0]), np.float64(values[1]), values[2], values[3], np.int8(values[4])))
        # a numpy scalar of the scalar's dtype, not a 0-d array
        assert isinstance(value, np.generic) and value.dtype == e.dtype, (e, type(value), value.dtype, e.dtype)
        np.testing.assert_allclose(value, want.astype(e.dtype), rtol=1e-12 if e.dtype == "float64" else 1e-6,
                                   err_msg=str(e))
    assert [c[0].dtype for c in cases[15:17]] == ["float64", "float32"]
    # NaN and inf go through; a single output comes back alone
    g = function([x, y], ps.maximum(x, y) if hasattr(ps, "maximum") else ps.scalar_maximum(x, y), mode=mode)
    assert np.isnan(g(math.nan, 1.0)) and g(-math.inf, 1.0) == 1.0 and type(g(1.0, 2.0)) is np.float64


def test_bad_inputs_name_the_input(mode):
    b, x = ps.int8("b"), ps.float32("x")
    f = function([b, x], b * x, mode=mode)
    with pytest.raises(TypeError, match="input 'b'.*without changing its value"):
        f(300, 1.0)
    with pytest.raises(TypeError, match="input 'x'.*shape"):
        f(1, np.zeros(3, np.float32))
    assert f(-2, 0.5) == -1.0     # and it still works
    assert function([b, x], b * x, mode=mode, allow_input_downcast=True)(1, 0.1) == np.float32(0.1)


def test_composite_from_scalar_variables(mode):
    x, y, z = ps.floats("xyz")
    e = ps.mul(ps.add(x, y), ps.true_div(x, y))
    comp = ps.Composite([x, y], [e])
    node = comp.make_node(x, y)
    assert isinstance(node.outputs[0].type, ScalarType) and comp.nin == 2 and comp.nout == 1
    assert function([x, y], node.outputs[0], mode=mode)(1.0, 2.0) == 1.5
    # constants (NaN and -inf kept), several outputs, an output that is an input
    for literal in (70.0, -np.inf, np.float32("nan")):
        c = ps.Composite([x, y], [ps.mul(ps.add(literal, y), ps.true_div(x, y))])
        np.testing.assert_equal(function([x, y], c(x, y), mode=mode)(1.0, 2.0), (literal + 2.0) * 0.5)
    many = ps.Composite([x, y, z], [x + y + z, x + y * z, x / y, y])
    assert function([x, y, z], many(x, y, z), mode=mode)(1.0, 2.0, 3.0) == [6.0, 7.0, 0.5, 2.0]
    # a nested Composite is inlined; a composite is an op of the tensor graph's fusion too
    inner = ps.Composite([x, y], [x + y])
    outer = ps.Composite([x, y], [inner(x * y, y)])
    assert not isinstance(outer.outputs[0].owner.op, ps.Composite)
    assert function([x, y], outer(x, y), mode=mode)(3.0, 2.0) == 8.0
    n = ps.int64("n")
    neg = ps.Composite([n], [ps.neg(ps.constant(-1.5)) % n])
    f = function([n], neg(n), mode=mode)
    assert (f(2), f(1)) == (1.5, 0.5)
    with pytest.raises(TypeError, match="exclusively composed of scalar operations"):
        ps.Composite([x], [(T.zeros((2,)) + x).sum()])
    with pytest.raises(TypeError, match="dtypes"):
        comp(ps.float32(), y)


def test_elemwise_of_a_composite(mode):
    # PyTensor's Elemwise(Composite(...)): the fused loop of the program over tensors
    x, y = ps.floats("xy")
    comp = ps.Composite([x, y], [x * y + 1, ps.exp(x)])
    a, b = T.dmatrix("a"), T.dvector("b")
    first, second = T.Elemwise(comp)(a, b)
    av, bv = np.arange(6.0).reshape(2, 3)[:, ::-1], np.array([0.5, -1.0, 2.0])
    got = function([a, b], [first, second, T.Elemwise(comp)(a, 2)[0]], mode=mode)(av, bv)
    np.testing.assert_allclose(got[0], av * bv + 1, rtol=1e-15)
    np.testing.assert_allclose(got[1], np.exp(av), rtol=1e-15)
    np.testing.assert_allclose(got[2], av * 2 + 1, rtol=1e-15)


def test_scalars_and_tensors_together(mode):
    s, t = ps.float64("s"), T.dvector("t")
    # a scalar in a tensor op goes through tensor_from_scalar; a 0-d tensor back through scalar_from_tensor
    assert T.as_tensor_variable(s).type == T.TensorType("float64", ())
    back = T.scalar_from_tensor(t.sum())
    assert isinstance(back.type, ScalarType) and ps.as_scalar(t.sum()).type == back.type
    f = function([t, s], [T.exp(t) * s, back * s + 1], mode=mode)
    tv = np.array([0.0, 1.0, -2.0])[::-1]
    got_t, got_s = f(tv, 2.0)
    np.testing.assert_allclose(got_t, np.exp(tv) * 2.0, rtol=1e-15)
    assert type(got_s) is np.float64 and got_s == -1.0 * 2.0 + 1
    with pytest.raises(TypeError, match="0-d"):
        T.scalar_from_tensor(t)
    # the compiled graph holds 0-d tensors only (a scalar is a 0-d slot)
    assert not any(isinstance(v.type, ScalarType) for v in f.maker.fgraph.variables)


def test_gradients_by_hand():
    x, y = ps.floats("xy")
    cost = x * y + ps.exp(x) - ps.log(y) / x
    gx, gy = ffigraph.grad(cost, [x, y])
    assert isinstance(gx.type, ScalarType) and isinstance(gy.type, ScalarType)
    f = function([x, y], [gx, gy])
    a, b = 0.75, 2.5
    np.testing.assert_allclose(f(a, b), [b + math.exp(a) + math.log(b) / a ** 2, a - 1 / (b * a)], rtol=1e-13)
    # through a tensor graph and back; a comparison's gradient is zero
    t = T.dvector("t")
    g = ffigraph.grad(T.sum(t * T.scalar_from_tensor(t[0]) * x), x)
    assert function([t, x], g)(np.array([2.0, 3.0]), 1.0) == 2.0 * 2.0 + 3.0 * 2.0
    assert function([x, y], ffigraph.grad(ps.switch(x > y, x, 0.0), y), on_unused_input="ignore")(1.0, 2.0) == 0.0
    a32 = ps.float32("a")
    assert ffigraph.grad(ps.log10(a32), a32).dtype == "float32"


def test_scalar_graph_exports_as_0d_slots(tmp_path):
    x, n = ps.float64("x"), ps.int32("n")
    f = function([x, n], [x * n + 1.0, ps.cast(n, "int64") * 2], mode=LINKERS["c"])
    assert f(0.5, np.int32(4)) == [3.0, 8]
    assert "Python.h" not in f.c_source()
    bundle = f.export(tmp_path / "scalars")
    with open(bundle.header) as header:   # what a C host reads: 0-d tensor slots, named as the user named them
        text = header.read()
    assert "0   x                        float64  ndim 0, shape ()" in text
    assert "1   n                        int32    ndim 0, shape ()" in text
