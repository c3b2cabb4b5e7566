"""The per-call path written out for a function's arity (CallBlock.arity_call, Function._make_entry):
what it skips must never show. Results are checked against numpy; a result the caller still holds is
never written again; an input changed in place is described again; errors leave the function usable."""
import gc
import platform
import warnings

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph.compile.function import function
from ffigraph.compile.io import In
from ffigraph.compile.mode import Mode
from tests.helpers import assert_matches

CPYTHON = platform.python_implementation() == "CPython"
C = Mode(linker="c")


@pytest.fixture(scope="module")
def two_outputs():
    """One function for most cases: two outputs (a vector and a 0-d sum), two inputs."""
    x, y = T.dvector("x"), T.dvector("y")
    return function([x, y], [x * y + 1.0, (x - y).sum()], mode=C)


@pytest.fixture(scope="module")
def trusted_matrix():
    m = T.dmatrix("m")
    return function([m], m * 2.0, mode=C, trust_input=True)


def _want(x, y):
    return [x * y + 1.0, np.sum(x - y)]


def _check(f, x, y):
    for got, want, var in zip(f(x, y), _want(x, y), f.maker.fgraph.outputs):
        assert_matches(got, want, var.type, 0, 1e-12, dtype="float64")


def test_the_written_out_path_is_taken(two_outputs, trusted_matrix):
    assert two_outputs._entry is not None and trusted_matrix._entry is not None


def test_results_equal_numpy_across_shapes_and_layouts(two_outputs):
    rng = np.random.default_rng(0)
    base = rng.normal(size=40)
    cases = [(base[:5], base[5:10]), (base[:5], base[5:10]), (base[:0], base[:0]), (base[::-3][:13], base[1::3][:13]),
             (base[:1], base[3:4]), (np.array([np.nan, np.inf]), np.array([1.0, -np.inf]))]
    for x, y in cases:
        _check(two_outputs, x, y)


def test_a_held_result_is_never_written_again(two_outputs):
    x, y = np.arange(4.0), np.ones(4)
    first = two_outputs(x, y)[0]
    kept = first.copy()
    view = two_outputs(x, y)[0][1:]          # a view keeps its base from reuse too
    view_kept = view.copy()
    for _ in range(3):
        other = two_outputs(x + 10.0, y)[0]
        assert other is not first and other.base is not first
        np.testing.assert_array_equal(other, (x + 10.0) * y + 1.0)
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_array_equal(view, view_kept)


def test_every_result_held_over_many_calls_and_shapes_keeps_its_values(two_outputs):
    # PyPy offers the rows of a batch of arrays (OutputBatches): more calls than a batch has rows, a
    # shape change in the middle of one, and an output too large to batch; CPython reuses the spare
    held = []
    for n, calls in ((2, 150), (3, 5), (2, 3), (5000, 4), (0, 2)):
        for k in range(calls):
            x, y = np.full(n, float(k)), np.arange(float(n))
            held.append((x, y, two_outputs(x, y)))
    for x, y, (got, total) in held:
        np.testing.assert_array_equal(got, x * y + 1.0)
        assert got.shape == x.shape and float(total) == np.sum(x - y)
    if not CPYTHON:
        rows = [got for _, y, (got, _) in held if len(y) == 2]
        assert len({r.__array_interface__["data"][0] for r in rows}) == len(rows)   # each its own memory


@pytest.mark.skipif(not CPYTHON, reason="reuse follows CPython's reference counts; PyPy offers a fresh array")
def test_a_dropped_result_is_offered_again(two_outputs):
    x, y = np.arange(3.0), np.full(3, 2.0)
    two_outputs(x, y)   # a first call of this shape (the one before may have had another)
    address = two_outputs(x, y)[0].__array_interface__["data"][0]
    gc.collect()
    again = two_outputs(x, y)[0]
    assert again.__array_interface__["data"][0] == address   # no allocation for a loop that drops results
    np.testing.assert_array_equal(again, x * y + 1.0)


@pytest.fixture(scope="module")
def checked_matrix():
    m = T.dmatrix("m")
    return function([m], m * 2.0, mode=C)


def _in_place_changes(f):
    """An array passed again after each kind of change made to it in place."""
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(f(m), m * 2.0)
    m.shape = (4, 3)                          # the very same object, another shape
    np.testing.assert_array_equal(f(m), m * 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # numpy 2.4 deprecates setting strides
        m.strides = (8, 32)                   # and other strides (a transposed walk of the same buffer)
    np.testing.assert_array_equal(f(m), m * 2.0)
    m[0, 0] = 100.0                           # values are read afresh every call
    assert f(m)[0, 0] == 200.0
    m = np.zeros((2, 3))
    m[:] = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(f(m), m * 2.0)
    m.resize((4, 5), refcheck=False)          # new data (the old block freed) and a new shape
    m[:] = 7.0
    np.testing.assert_array_equal(f(m), np.full((4, 5), 14.0))
    return m


def test_an_input_changed_in_place_is_described_again(checked_matrix):
    m = _in_place_changes(checked_matrix)
    m.dtype = np.int64                        # the same bytes, now int64: converted like any int64 input
    np.testing.assert_array_equal(checked_matrix(m), m * 2.0)


@pytest.mark.skipif(not CPYTHON, reason="on PyPy trust_input takes the array passed last call as unchanged "
                    "(no call trampoline watches it; documented in CallBlock.arity_call)")
def test_trusted_inputs_changed_in_place_are_noticed_by_the_trampoline(trusted_matrix):
    from ffigraph.linkers.c import callshim

    assert callshim._layout() is not None   # numpy's array layout was read: inputs are watched from C
    m = _in_place_changes(trusted_matrix)
    m.dtype = np.int64                        # trusted: not converted, and the library refuses it
    with pytest.raises(TypeError):
        trusted_matrix(m)
    m = np.ones((2, 2))
    np.testing.assert_array_equal(trusted_matrix(m), m * 2.0)   # and it goes on


def test_the_entry_takes_every_calling_convention():
    """``f(...)`` runs the written-out entry (the instance's own ``__call__``); keywords, defaults,
    wrong counts and input names that look like its parameters take the general path."""
    from ffigraph.compile.function import Function, ProfiledFunction

    v0, self_ = T.dvector("v1"), T.dvector("self")   # names of the entry's own parameters, swapped
    f = function([v0, In(self_, value=np.array([1.0, 2.0]))], v0 - self_, mode=C)
    assert isinstance(f, Function) and type(f).__call__ is f._entry and type(f).__name__ == "Function"
    a, b = np.array([10.0, 20.0]), np.array([3.0, 4.0])
    default = np.array([1.0, 2.0])
    for got, want in ((f(a, b), a - b), (f(a), a - default), (f(v1=a), a - default),
                      (f(self=b, v1=a), a - b), (f(a, self=b), a - b)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(f(v1=a, self=b), a - b)
    with pytest.raises(TypeError, match="at most 2 inputs"):
        f(a, b, b)
    with pytest.raises(TypeError, match="unexpected keyword argument 'v0'"):
        f(a, v0=b)
    f.trust_input = True                      # a new entry, the same kind of class
    assert type(f).__call__ is f._entry and type(f).__bases__ == (Function,)
    np.testing.assert_array_equal(f(a, b), a - b)
    g = function([v0], v0 * 2.0, mode=C, profile=True)
    assert type(g) is ProfiledFunction        # its own __call__ (timing) stays, and runs the entry
    np.testing.assert_array_equal(g(a), a * 2.0)
    assert g.profile.calls == 1


def test_errors_leave_the_function_usable(two_outputs):
    with pytest.raises(ValueError):
        two_outputs(np.ones(3), np.ones(4))   # the library refuses the mismatch
    with pytest.raises(TypeError, match="position 1"):
        two_outputs(np.ones(3), np.ones((3, 1)))
    with pytest.raises(TypeError, match="missing input 'y'"):
        two_outputs(np.ones(3))
    _check(two_outputs, np.ones(3), np.arange(3.0))


def test_values_that_need_filtering_still_work(two_outputs):
    got = two_outputs([1.0, 2.0], np.array([3, 4], dtype=np.int32))   # a list, and a safe cast
    np.testing.assert_array_equal(got[0], [4.0, 9.0])
    assert got[1] == -4.0
    got = two_outputs(y=np.ones(2), x=np.arange(2.0))                   # keywords take the general path
    np.testing.assert_array_equal(got[0], [1.0, 2.0])


def test_shared_variables_and_updates():
    """Shared values follow the inputs and updates come back after the outputs, in the same frame;
    the update's new value is never the array offered for the next result while a cell holds it."""
    from ffigraph.compile.sharedvalue import shared

    x = T.dvector("x")
    w = shared(np.array([1.0, 2.0]), name="w")
    scale = shared(np.array(3.0), name="scale")
    step = function([x], x * w * scale, mode=C, updates=[(w, w + 1.0)])
    read = function([x], x + w, mode=C)            # shared, no update
    assert step._entry is not None and read._entry is not None
    seen = []
    for k in range(4):
        out = step(np.ones(2))
        np.testing.assert_array_equal(out, (np.array([1.0, 2.0]) + k) * 3.0)
        seen.append(out)
        np.testing.assert_array_equal(w.get_value(borrow=True), np.array([1.0, 2.0]) + k + 1)
        np.testing.assert_array_equal(read(np.zeros(2)), np.array([1.0, 2.0]) + k + 1)
    for k, out in enumerate(seen):               # held results keep their values
        np.testing.assert_array_equal(out, (np.array([1.0, 2.0]) + k) * 3.0)
    w.set_value(np.array([10.0, 20.0]))
    np.testing.assert_array_equal(step(np.ones(2)), [30.0, 60.0])
    np.testing.assert_array_equal(w.get_value(), [11.0, 21.0])


def test_defaults_take_the_general_path():
    x = T.dvector("x")
    with_default = function([In(x, value=np.array([5.0, 6.0]))], x + 1.0, mode=C)
    np.testing.assert_array_equal(with_default(), [6.0, 7.0])
    np.testing.assert_array_equal(with_default(np.zeros(2)), [1.0, 1.0])


def test_an_output_computed_in_place_over_an_intermediate_lands_in_the_offered_array():
    """tanh(dot(A, v)) + c runs in place over the Dot's result: the Dot is offered the host's array
    too, and the fused loop takes it over; when the shapes differ (the Dot's result broadcast), the
    loop must not write the block it reads, and allocates its own."""
    A, v, c = T.dmatrix("A"), T.dvector("v"), T.dvector("c")
    f = function([A, v, c], T.tanh(T.dot(A, v)) + c, mode=C)
    assert any(node.op.destroy_map for node in f.maker.fgraph.toposort())   # the case this is about
    assert "is computed in place over it" in f.c_source()
    rng = np.random.default_rng(0)
    a, b, cc = rng.normal(size=(5, 3)), rng.normal(size=3), rng.normal(size=5)
    got = f(a, b, cc)
    np.testing.assert_allclose(got, np.tanh(a @ b) + cc, rtol=1e-14)
    if CPYTHON:   # written into the array offered (the dropped result, offered again)
        address = got.__array_interface__["data"][0]
        del got
        again = f(a, b, cc)
        assert again.__array_interface__["data"][0] == address
        del again
    one_row = rng.normal(size=(1, 3))          # the Dot's result (1,) lies in the offered block
    np.testing.assert_allclose(f(one_row, b, cc), np.tanh(one_row @ b) + cc, rtol=1e-14)
    held = [f(a, b, cc) for _ in range(3)] + [f(a, b, -cc)]
    for got, sign in zip(held, (1, 1, 1, -1)):
        np.testing.assert_allclose(got, np.tanh(a @ b) + sign * cc, rtol=1e-14)
