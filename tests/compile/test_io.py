"""``In``/``Out`` borrow flags and memory aliasing (PyTensor's "Understanding Memory Aliasing for
Speed and Correctness"): an output may share memory with an input only when both the output
(``Out(borrow=True)``) and the input (``In(borrow=True)``) allow it."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import In, Mode, Out, function, shared
from ffigraph.compile.ops import DeepCopyOp


def _copies(f):
    return any(isinstance(n.op, DeepCopyOp) for n in f.maker.fgraph.toposort())


@pytest.mark.parametrize("linker", ["py", "c", "c|py", "cvm"])
def test_borrowed_output_of_an_input_not_lent_is_a_copy(linker):
    m = T.dmatrix("m")
    f = function([In(m, borrow=False)], Out(m[0, :], borrow=True), mode=Mode(linker=linker, optimizer=None))
    caller = np.arange(6.0).reshape(2, 3)
    out = f(caller)
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0])
    assert not np.shares_memory(out, caller)
    out[:] = -1.0
    np.testing.assert_array_equal(caller, np.arange(6.0).reshape(2, 3))
    assert _copies(f)


def test_default_in_is_not_lent_and_identity_output_is_copied():
    x = T.dvector("x")
    f = function([x], Out(x, borrow=True), mode=Mode(linker="py", optimizer=None))
    v = np.arange(3.0)
    out = f(v)
    out[0] = 9.0
    assert v[0] == 0.0


@pytest.mark.parametrize("linker", ["py", "c"])
def test_lent_input_and_borrowed_output_may_alias(linker):
    m = T.dmatrix("m")
    f = function([In(m, borrow=True)], Out(m[0, :], borrow=True), mode=Mode(linker=linker, optimizer=None))
    caller = np.arange(6.0).reshape(2, 3)
    out = f(caller)
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0])
    assert np.shares_memory(out, caller)
    assert not _copies(f)


def test_lent_input_without_borrowed_output_is_copied():
    m = T.dmatrix("m")
    f = function([In(m, borrow=True)], m.T, mode=Mode(linker="py", optimizer=None))
    caller = np.arange(6.0).reshape(2, 3)
    assert not np.shares_memory(f(caller), caller)


def test_borrowed_output_of_a_shared_variable_may_alias_it():
    # a function owns its shared variables' storage, as PyTensor's implicit In(borrow=True)
    s = shared(np.arange(4.0), name="s")
    mode = Mode(linker="py", optimizer=None)
    lent = function([], Out(s[1:], borrow=True), mode=mode)
    assert np.shares_memory(lent(), s.get_value(borrow=True))
    copied = function([], s[1:], mode=mode)
    assert not np.shares_memory(copied(), s.get_value(borrow=True))
