"""``Function.copy``: shared variables kept or swapped, updates kept or dropped, compiled state shared or
linked again without rebuilding, names, profiles, and bad options."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import In, Mode, function, shared

MODES = [pytest.param(None, id="default"), pytest.param(Mode(linker="py"), id="py"),
         pytest.param(Mode(linker="c|py"), id="c|py")]


def _accumulator(mode, name="acc"):
    s = shared(np.array([1.0, 2.0]), name="s")
    x = T.dvector("x")
    f = function([x], s * 2.0 + x, updates=[(s, s + x)], mode=mode, name=name)
    return f, s, x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("share_memory", [False, True])
def test_copy_keeps_shared_variables_and_updates(mode, share_memory):
    f, s, x = _accumulator(mode)
    a = np.array([1.0, 1.0])
    np.testing.assert_allclose(f(a), [3.0, 5.0])
    g = f.copy(share_memory=share_memory)
    assert g.name == "acc copy" and g is not f
    # PyTensor: without a swap the copy reads and updates the very same shared variables
    np.testing.assert_allclose(g(a), [2 * 2.0 + 1, 2 * 3.0 + 1])
    np.testing.assert_allclose(s.get_value(), [3.0, 4.0])
    np.testing.assert_allclose(f(a), [7.0, 9.0])
    np.testing.assert_allclose(s.get_value(), [4.0, 5.0])
    # the copy is independent otherwise: calls alternate without disturbing each other
    np.testing.assert_allclose(g(np.zeros(2)), [8.0, 10.0])
    assert g.maker.fgraph is not f.maker.fgraph or share_memory


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("share_memory", [False, True])
def test_copy_swap_and_delete_updates(mode, share_memory):
    f, s, x = _accumulator(mode)
    t = shared(np.array([10.0, 20.0]), name="t")
    h = f.copy(share_memory=share_memory, swap={s: t}, name="other")
    assert h.name == "other"
    a = np.array([1.0, 2.0])
    np.testing.assert_allclose(h(a), [21.0, 42.0])
    np.testing.assert_allclose(t.get_value(), [11.0, 22.0])
    np.testing.assert_allclose(s.get_value(), [1.0, 2.0])   # the original's variable is untouched
    np.testing.assert_allclose(f(a), [3.0, 6.0])            # and the original still reads s
    np.testing.assert_allclose(s.get_value(), [2.0, 4.0])
    np.testing.assert_allclose(t.get_value(), [11.0, 22.0])
    d = f.copy(share_memory=share_memory, delete_updates=True)
    np.testing.assert_allclose(d(a), [5.0, 10.0])
    np.testing.assert_allclose(d(a), [5.0, 10.0])
    np.testing.assert_allclose(s.get_value(), [2.0, 4.0])   # no update applied
    both = f.copy(share_memory=share_memory, swap={s: t}, delete_updates=True)
    np.testing.assert_allclose(both(a), [23.0, 46.0])
    np.testing.assert_allclose(t.get_value(), [11.0, 22.0])


def test_copy_reuses_the_compiled_library():
    f, s, x = _accumulator(None)
    linker = f.maker.linker.chosen
    assert linker.name == "c"
    g = f.copy()   # linked again: a state of its own, from the library already loaded
    assert g.maker.compile_times["compiler"] == 0.0
    assert g.maker.linker.chosen.compiled.library is linker.compiled.library
    assert g.maker.linker.chosen.compiled.state != linker.compiled.state
    t = shared(np.zeros(2), name="t")
    h = f.copy(swap={s: t})
    assert h.maker.compile_times["compiler"] == 0.0
    assert h.maker.linker.chosen.compiled.library is linker.compiled.library
    assert h.maker.fgraph.inputs[1].container is t.container
    shared_state = f.copy(share_memory=True)   # the same state, thunk and call lock
    assert shared_state.maker.linker is f.maker.linker and shared_state._lock is f._lock
    assert f.library_dir == g.library_dir == shared_state.library_dir


def test_copy_profile_and_unnamed():
    x = T.dvector("x")
    f = function([x], x * 2.0)
    g = f.copy(profile=True)
    assert g.name is None and g.profile is not None and f.profile is None
    np.testing.assert_allclose(g(np.ones(3)), [2.0, 2.0, 2.0])
    assert g.profile.calls == 1
    np.testing.assert_allclose(f.copy(share_memory=True, profile=False)(np.ones(1)), [2.0])


def test_copy_of_kept_input_values():
    x, acc, k = T.dscalar("x"), T.dscalar("acc"), T.dscalar("k")
    c = T.dscalar("c")
    f = function([x, In(acc, value=1.0, update=acc + x), In(k, value=3.0), In(c, value=5.0)], acc * k + c)
    assert f(2.0) == 8.0 and f[acc] == 3.0
    f[k] = 4.0
    g = f.copy()
    # PyTensor: a mutable input (one with an update) starts again from its In value, others keep
    # the original's current value; each function keeps its own from then on
    assert g[acc] == 1.0 and g[k] == 4.0
    assert g(1.0) == 9.0 and g[acc] == 2.0 and f[acc] == 3.0
    assert f.copy(delete_updates=True)(1.0) == 9.0 and f[acc] == 3.0


def test_copy_bad_options():
    f, s, x = _accumulator(None)
    other = shared(np.array([1, 2], dtype=np.int64), name="ints")
    with pytest.raises(TypeError, match="ints has type lvector, but s, which it replaces, has type dvector"):
        f.copy(swap={s: other})
    with pytest.raises(TypeError, match="both must be shared variables"):
        f.copy(swap={s: np.zeros(2)})
    with pytest.raises(TypeError, match="must be a dict"):
        f.copy(swap=[(s, s)])
    with pytest.raises(ValueError, match="not one that function 'acc' reads"):
        f.copy(swap={shared(np.zeros(2)): shared(np.zeros(2))})
    with pytest.raises(TypeError, match="share_memory and delete_updates must be True or False"):
        f.copy(share_memory="yes")
    with pytest.raises(TypeError, match="profile"):
        f.copy(profile="stats")
    np.testing.assert_allclose(s.get_value(), [1.0, 2.0])   # nothing ran
