"""Shared variables' ``default_update``: applied by every function that reads the variable, as in
PyTensor, unless ``function(..., no_default_updates=...)`` or an explicit update says otherwise."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function, shared

PY = Mode(linker="py", optimizer=None)   # the mechanism is the function's, not a linker's: no C needed


def test_default_update_applied_on_every_call():
    s = shared(np.int64(0), name="s")
    s.default_update = s + 1
    f = function([], s, mode=PY)
    assert [int(f()) for _ in range(3)] == [0, 1, 2]
    assert int(s.get_value()) == 3


def test_default_update_of_shared_variable_reached_only_through_the_graph():
    s = shared(np.zeros(2), name="s")
    s.default_update = s + 1.0
    x = T.dvector("x")
    f = function([x], x * s, mode=Mode(linker="cvm", optimizer="fast_run"))   # also once in C
    np.testing.assert_array_equal(f(np.array([2.0, 3.0])), [0.0, 0.0])
    np.testing.assert_array_equal(f(np.array([2.0, 3.0])), [2.0, 3.0])
    np.testing.assert_array_equal(s.get_value(), [2.0, 2.0])


def test_explicit_update_wins_over_the_default():
    s = shared(np.int64(0), name="s")
    s.default_update = s + 1
    f = function([], s, updates=[(s, s + 10)], mode=PY)
    f()
    f()
    assert int(s.get_value()) == 20


def test_no_default_updates_true_and_a_list():
    s, t = shared(np.int64(0), name="s"), shared(np.int64(0), name="t")
    s.default_update = s + 1
    t.default_update = t + 100
    function([], s + t, no_default_updates=True, mode=PY)()
    assert (int(s.get_value()), int(t.get_value())) == (0, 0)
    function([], s + t, no_default_updates=[s], mode=PY)()   # s skipped, t still updated
    assert (int(s.get_value()), int(t.get_value())) == (0, 100)
    function([], s + t, no_default_updates=False, mode=PY)()
    assert (int(s.get_value()), int(t.get_value())) == (1, 200)
    with pytest.raises(TypeError, match="no_default_updates"):
        function([], s, no_default_updates="yes", mode=PY)
    with pytest.raises(TypeError, match="no_default_updates"):
        function([], s, no_default_updates=["s"], mode=PY)


def test_default_updates_found_through_other_default_updates():
    # t appears only in s's default update; its own default update applies too (as in PyTensor)
    s, t = shared(np.int64(0), name="s"), shared(np.int64(1), name="t")
    s.default_update = s + t
    t.default_update = t * 2
    f = function([], s, mode=PY)
    assert [int(f()) for _ in range(3)] == [0, 1, 3]
    assert (int(s.get_value()), int(t.get_value())) == (7, 8)


def test_default_update_of_a_variable_replaced_by_givens_is_not_applied():
    s = shared(np.int64(5), name="s")
    s.default_update = s + 1
    y = T.lscalar("y")
    f = function([y], s * 2, givens=[(s, y)], mode=PY)
    assert int(f(3)) == 6
    assert int(s.get_value()) == 5


def test_default_update_setter_checks_the_type_and_none_clears_it():
    s = shared(np.zeros(2), name="s")
    assert s.default_update is None
    with pytest.raises(TypeError):
        s.default_update = T.dmatrix("m")
    s.default_update = s * 2
    s.default_update = None
    function([], s, mode=PY)()
    np.testing.assert_array_equal(s.get_value(), [0.0, 0.0])
