"""Test values (Theano's "Debugging" tutorial): with ``config.compute_test_value`` on, each node
built computes its outputs' ``tag.test_value`` from its inputs', so a shape error surfaces at the
line that builds the graph."""
import sys
import traceback
import warnings

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function
from ffigraph.config import Config, config
from ffigraph.graph import Apply, Op
from ffigraph.graph.utils import TestValueError

HERE = __file__


@pytest.fixture
def raise_mode():
    with config.change_flags(compute_test_value="raise"):
        yield


def test_the_tutorial_example_raises_at_the_building_line(raise_mode):
    rng = np.random.default_rng(0)
    W1 = ffigraph.shared(rng.random((2, 10, 10)), "W1")
    W2 = ffigraph.shared(rng.random((15, 20)), "W2")
    x = T.matrix("x")
    x.tag.test_value = rng.random((5, 10))
    func_of_W1 = W1.dimshuffle(2, 0, 1).flatten(2).T
    assert func_of_W1.tag.test_value.shape == (20, 10)
    with pytest.raises(ValueError, match="not aligned") as info:
        h1 = T.dot(x, func_of_W1)  # source of error: dot product of 5x10 with 20x10
        h2 = T.dot(h1, W2.T)  # noqa: F841 (never reached)
    line = sys._getframe().f_lineno - 2
    text = str(info.value)
    assert "while computing the test value of" in text and "(5, 10)" in text and "(20, 10)" in text
    # the traceback goes through the line that built the graph, not a later call
    frames = traceback.extract_tb(info.tb)
    assert any(f.filename == HERE and f.lineno == line for f in frames)


def test_values_flow_through_the_graph_and_match_numpy(raise_mode):
    x, y = T.dmatrix("x"), T.dvector("y")
    xv, yv = np.arange(6.0).reshape(2, 3), np.array([1.0, -2.0, 0.5])
    x.tag.test_value, y.tag.test_value = xv, yv
    s = ffigraph.shared(np.full(3, 2.0), "s")
    z = (T.exp(x) * y + s).sum(axis=0) + 3  # a shared variable and constants are their values
    np.testing.assert_allclose(z.tag.test_value, (np.exp(xv) * yv + 2.0).sum(axis=0) + 3)
    assert z.get_test_value() is z.tag.test_value
    assert T.constant(4.0).get_test_value() == 4.0


def test_off_computes_nothing():
    assert config.compute_test_value == "off"  # the default, as in PyTensor
    x = T.dvector("x")
    x.tag.test_value = np.ones(3)
    z = T.exp(x)
    assert not hasattr(z.tag, "test_value")
    with pytest.raises(TestValueError, match="no test value"):
        z.get_test_value()
    # nor does a mismatch raise while building
    w = T.dot(T.dmatrix("a"), T.dmatrix("b"))
    assert not hasattr(w.tag, "test_value")


def test_raise_names_the_input_without_a_test_value(raise_mode):
    x, y = T.dvector("x"), T.dvector("nameless_y")
    x.tag.test_value = np.ones(3)
    with pytest.raises(ValueError, match=r"input 1 \(nameless_y\) of Op .* missing default value"):
        x + y


def test_warn_warns_and_skips(recwarn):
    x, y = T.dvector("x"), T.dvector("y")
    x.tag.test_value = np.ones(3)
    with config.change_flags(compute_test_value="warn"):
        z = x + y
    assert not hasattr(z.tag, "test_value")
    messages = [str(w.message) for w in recwarn.list]
    assert any("input 1 (y)" in m and "missing default value" in m for m in messages)
    assert recwarn.list[-1].filename == HERE  # pointing at the line that built it


def test_ignore_skips_silently():
    x, y = T.dvector("x"), T.dvector("y")
    x.tag.test_value = np.ones(3)
    with config.change_flags(compute_test_value="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        z = T.exp(x + y)
        w = T.exp(x)
    assert not hasattr(z.tag, "test_value")
    np.testing.assert_allclose(w.tag.test_value, np.exp(np.ones(3)))


def test_pdb_opens_the_debugger(monkeypatch):
    import pdb

    called = []
    monkeypatch.setattr(pdb, "post_mortem", lambda tb=None: called.append(tb))
    x, y = T.dvector("x"), T.dvector("y")
    with config.change_flags(compute_test_value="pdb"):
        z = x + y
    assert len(called) == 1 and not hasattr(z.tag, "test_value")


def test_the_flag_is_validated_and_read_from_ffigraph_flags():
    assert Config("compute_test_value=warn").compute_test_value == "warn"
    with pytest.raises(ValueError, match="compute_test_value"):
        config.compute_test_value = "sometimes"


def test_a_test_value_is_checked_against_the_type():
    x = T.dmatrix("x")
    with pytest.raises(TypeError, match="does not fit the variable's type dmatrix"):
        x.tag.test_value = np.ones(3)
    f = T.fvector("f")
    with pytest.raises(TypeError, match="fvector"):
        f.tag.test_value = np.ones(3)  # float64 into float32 would lose precision
    v = T.dvector("v")
    v.tag.test_value = [1, 2, 3]  # filtered: becomes a float64 array
    assert v.tag.test_value.dtype == np.float64 and "test_value" in vars(v.tag)
    del v.tag.test_value
    assert not hasattr(v.tag, "test_value")
    static = T.tensor("float64", (3,), "static")
    with pytest.raises(ValueError, match="static shape"):
        static.tag.test_value = np.ones(4)


class AddInPlace(Op):
    __props__ = ()
    destroy_map = {0: [0]}

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        inputs[0] += 1
        out[0][0] = inputs[0]


def test_an_inplace_op_leaves_its_inputs_test_value_alone(raise_mode):
    x = T.dvector("x")
    x.tag.test_value = np.zeros(2)
    y = AddInPlace()(x)
    np.testing.assert_array_equal(y.tag.test_value, [1.0, 1.0])
    np.testing.assert_array_equal(x.tag.test_value, [0.0, 0.0])


def test_compiling_and_running_with_test_values_on(raise_mode):
    x = T.dvector("x")
    x.tag.test_value = np.array([1.0, 2.0])
    y = T.exp(x) * 2 + x
    f = function([x], [y, ffigraph.grad(y.sum(), x)])  # the compiler's own nodes compute nothing
    out, g = f(np.array([0.0, 1.0]))
    np.testing.assert_allclose(out, np.exp([0.0, 1.0]) * 2 + [0.0, 1.0])
    np.testing.assert_allclose(g, np.exp([0.0, 1.0]) * 2 + 1)


def test_raise_shows_where_the_input_without_a_value_was_made(raise_mode):
    x = T.dvector("x")
    x.tag.test_value = np.ones(2)
    w = T.dvector("w")
    line = sys._getframe().f_lineno - 1
    with pytest.raises(ValueError) as info:
        x * w
    text = str(info.value)
    assert "Backtrace when that variable is created" in text and 'line %d' % line in text and HERE in text
