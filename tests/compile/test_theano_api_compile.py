"""Theano 1.0's API details of ``shared`` and ``function`` that real code depends on (issue 46):
``shared(..., broadcastable=)``, inputs that are intermediate variables (the graph is cut there),
and messages that point at the mistake (an update of the wrong type, ``set_value`` of the wrong
shape, an update that changed a shared variable's length)."""
import inspect
import os

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import In, Mode, function, shared
from ffigraph.graph import MissingInputError

PY = Mode(linker="py")
HERE = os.path.basename(__file__)


def _line_of(marker):
    """The line number of this file's line holding ``marker`` (where a test calls function())."""
    for k, line in enumerate(inspect.getsource(inspect.getmodule(_line_of)).splitlines(), 1):
        if marker in line and "_line_of" not in line:
            return k
    raise AssertionError(marker)


# ------------------------------------------------------------------ shared(..., broadcastable=)


def test_shared_broadcastable_sets_the_pattern_and_broadcasts():
    bias = shared(np.zeros(3), name="bias", broadcastable=(False,))
    assert bias.broadcastable == (False,) and bias.type.shape == (None,)
    assert shared(np.ones((1, 1))).broadcastable == (False, False)   # Theano's default: all False
    row = shared(np.array([[1.0, 2.0, 3.0]]), name="row", broadcastable=(np.True_, np.False_))   # numpy bools
    assert row.broadcastable == (True, False) and row.type.shape == (1, None)
    gain = shared(np.array([2.0]), name="gain", broadcastable=(True,))
    assert gain.type.shape == (1,)
    lone = shared(np.array(4.0), broadcastable=())   # 0-d: the empty pattern
    assert lone.ndim == 0
    x = T.dmatrix("x")
    f = function([x], (x + row) * gain + bias + lone, mode=PY)
    xv = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(f(xv), (xv + [[1.0, 2.0, 3.0]]) * 2.0 + 0.0 + 4.0, rtol=1e-12)
    gain.set_value(np.array([-1.0]))   # length 1: accepted, and the function sees it
    np.testing.assert_allclose(f(xv), -(xv + [[1.0, 2.0, 3.0]]) + 4.0, rtol=1e-12)
    np.testing.assert_allclose(f(np.zeros((0, 3))), np.zeros((0, 3)))   # empty rows broadcast too


def test_shared_broadcastable_is_checked_against_the_value_and_later_values():
    with pytest.raises(ValueError, match=r"shared variable 'gain'.*axis 0 is broadcastable.*length 1.*\(3,\)"):
        shared(np.ones(3), name="gain", broadcastable=(True,))
    with pytest.raises(ValueError, match=r"shared\('w'\): broadcastable=\(True, False\) has 2 entries.*1 dimensions"):
        shared(np.ones(3), name="w", broadcastable=(True, False))
    with pytest.raises(TypeError, match=r"shared\('w'\): broadcastable must be a tuple of bools"):
        shared(np.ones(3), name="w", broadcastable=(3,))
    with pytest.raises(TypeError, match="shape= or broadcastable=, not both"):
        shared(np.ones(3), name="w", broadcastable=(False,), shape=(None,))
    gain = shared(np.ones((1, 2)), name="gain", broadcastable=(True, False))
    with pytest.raises(ValueError, match=r"set_value of shared variable 'gain'.*axis 0 is broadcastable.*\(4, 2\)"):
        gain.set_value(np.ones((4, 2)))
    gain.set_value(np.ones((1, 5)))   # the open axis may change
    assert gain.get_value().shape == (1, 5)
    with pytest.raises(TypeError, match=r"set_value of shared variable 'gain'.*expected 2 dimensions, got 1"):
        gain.set_value(np.ones(2))


def test_shared_shape_keyword_is_pytensors_static_shape():
    w = shared(np.zeros((2, 3)), name="w", shape=(None, 3))
    assert w.type.shape == (None, 3) and w.broadcastable == (False, False)
    w.set_value(np.ones((5, 3)))
    with pytest.raises(ValueError, match=r"set_value of shared variable 'w'.*axis 1 has the static length 3.*\(5, 4\)"):
        w.set_value(np.ones((5, 4)))
    with pytest.raises(ValueError, match=r"shared variable 'v'.*axis 0 has the static length 2.*\(3,\)"):
        shared(np.ones(3), name="v", shape=(2,))


# ------------------------------------------------------------------ inputs computed by the graph


@pytest.mark.parametrize("linker", ["py", "c", "cvm", "c|py"])
def test_an_intermediate_input_cuts_the_graph(linker):
    """Theano's and PyTensor's rule: y = dot(A, x) * w given as an input is not computed; A and w
    are not read (w's default update is not applied); givens apply below the cut."""
    a, x, u = T.dmatrix("A"), T.dvector("x"), T.dvector("u")
    w = shared(np.array([1.0, 2.0]), name="w")
    w.default_update = w + 1
    y = T.dot(a, x) * w
    z = T.exp(y) + 1
    f = function([In(y, name="y"), u], [z * 2, z * x.sum()], givens={x: u}, mode=Mode(linker=linker))
    assert len(f.maker.fgraph.inputs) == 2   # y and u: no A, x or w
    assert not any(isinstance(node.op, T.Dot) for node in f.maker.fgraph.toposort())   # (Dot22, Gemv: subclasses)
    yv, uv = np.array([0.0, -1.5]), np.array([1.0, 2.0, 4.0])
    for got, want in zip(f(yv, uv), [2 * (np.exp(yv) + 1), (np.exp(yv) + 1) * 7.0]):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(f(u=uv, y=np.zeros(0))[0], np.zeros(0))   # by name; empty
    np.testing.assert_array_equal(w.get_value(), [1.0, 2.0])


def test_intermediate_inputs_errors_are_theanos():
    a, x = T.dmatrix("A"), T.dvector("x")
    y = T.dot(a, x)
    z = T.exp(y)
    with pytest.raises(MissingInputError, match=r"^x \(type dvector\) is needed"):
        function([y], z + x.sum(), mode=PY)   # a free variable below the cut, not given
    with pytest.raises(ValueError, match=r"input 0 \(x\) is not used"):
        function([x, y], z, mode=PY)   # x feeds only y, which is given
    with pytest.raises(RuntimeError, match="is an input of the function; replacing an input has no effect"):
        function([y], z, givens={y: T.dvector("v")}, mode=PY)
    f = function([y, x], z.sum() + x.sum(), mode=PY)   # both: y stands on its own
    assert np.isclose(f(np.array([0.0, 1.0]), np.array([2.0, 3.0, 4.0])), 1 + np.e + 9, rtol=1e-12)
    same = function([y], y, mode=PY)   # an intermediate input as its own output: a copy
    v = np.array([1.0, 2.0])
    out = same(v)
    np.testing.assert_array_equal(out, v)
    assert out is not v


# ------------------------------------------------------------------ messages that point at the mistake


def test_update_type_messages_say_what_differs_and_fit_the_fix():
    w = shared(np.zeros(3), name="w")
    x = T.dvector("x")
    with pytest.raises(TypeError) as info:
        function([x], x, updates={w: T.outer(x, x)}, mode=PY)
    text = str(info.value)
    assert "shared variable w" in text and "2 dimensions where shared variable w has 1" in text
    assert "no cast changes it" in text and "reshape" in text and "cast it" not in text
    with pytest.raises(TypeError, match=r"dtype is float32 where shared variable w's is float64: cast it, e\.g\. "
                                        r"ffigraph\.tensor\.cast\(value, 'float64'\)"):
        function([x], x, updates={w: T.fvector("f")}, mode=PY, on_unused_input="ignore")
    with pytest.raises(TypeError, match="3 dimensions.*reshape.*; and its dtype is int32.*cast it"):
        function([x], x, updates={w: T.itensor3("i")}, mode=PY, on_unused_input="ignore")
    gain = shared(np.array([2.0]), name="gain", broadcastable=(True,))
    with pytest.raises(TypeError, match=r"axis 0 of shared variable gain is broadcastable \(length 1\).*"
                                        r"ffigraph\.tensor\.specify_shape\(value, \(1,\)\)"):
        function([x], x, updates={gain: gain * x}, mode=PY)
    # the fix it suggests works: the update keeps length 1
    f = function([x], x, updates={gain: T.specify_shape(gain * x, (1,))}, mode=PY)
    f(np.array([3.0]))
    np.testing.assert_array_equal(gain.get_value(), [6.0])
    fixed = shared(np.zeros(3), name="fixed", shape=(3,))
    with pytest.raises(TypeError, match="axis 0 of shared variable fixed has the static length 3 but the new "
                                        "value's has 4"):
        function([], updates={fixed: T.zeros(4)}, mode=PY)
    with pytest.raises(TypeError, match=r"In\(x, update=...\).*2 dimensions where input x has 1.*reshape"):
        In(x, value=np.zeros(3), update=T.outer(x, x))


@pytest.mark.parametrize("linker", ["py", "c"])
def test_update_that_changes_a_length_is_named_with_its_line(linker):
    w = shared(np.ones(3), name="w")
    x = T.dvector("x")
    f = function([x], (x * w).sum(), updates={w: T.concatenate([w, w])}, mode=Mode(linker=linker))  # UPDATE-LINE
    reader = function([x], x + w, mode=Mode(linker=linker))   # another function reading w
    assert f(np.ones(3)) == 3.0
    for g in (f, reader):
        with pytest.raises(ValueError) as info:
            g(np.ones(3))
        text = str(info.value)
        assert "Function inputs it depends on: x (position 0)" in text and "w (position 1)" not in text, text
        assert "Shared variables it reads (not arguments of the function): w (shape (6,))" in text, text
        assert "Shared variable w: expected shape (3,)" in text and "got shape (6,)" in text, text
        assert "came from the update of w made at %s:%d" % (__file__, _line_of("# UPDATE-LINE")) in text, text
        assert "updates={w: T.concatenate([w, w])}" in text   # the user's line, as written
    w.set_value(np.ones(6))   # the user's own shape now: no word about the update
    with pytest.raises(ValueError) as info:
        reader(np.ones(3))
    assert "came from" not in str(info.value) and "w (shape (6,))" in str(info.value)
    np.testing.assert_array_equal(reader(np.zeros(6)), np.ones(6))
