"""Theano's API on a random stream's state (issue 46, item 12).

The tutorial "Using Random Numbers" of Theano 1.0 (doc/tutorial/examples.txt: "Brief Example",
"Seeding Streams", "Sharing Streams Between Functions", "Copying Random State Between Theano
Graphs") is run as Theano wrote it, only the imports pointing at ffigraph. Its documented behaviour
is the oracle: no_default_updates repeats the draws, a variable is drawn once per call, re-seeding
to a seed repeats the draws, restoring a saved state repeats the draws made from it, and copying
the states makes a second graph draw what the first would. The values themselves are checked
against the numpy Philox reference (``philox.uniform``/``philox.normal``) for the key and counter
the state must hold: ``derive_key(seed, index)`` and the number of calls that advanced it.
"""
from __future__ import annotations

import pickle
import textwrap

import numpy as np
import pytest

import ffigraph
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.compile.random_stream import RandomStateSharedVariable
from ffigraph.sandbox.rng_mrg import MRG_RandomStreams
from ffigraph.tensor.random import philox
from ffigraph.tensor.random.state import PhiloxState
from ffigraph.tensor.shared_randomstreams import RandomStreams

ALG = "Philox4x32-10"
key = philox.derive_key


def ref_uniform(k, counter, shape, low=0.0, high=1.0):
    n = int(np.prod(shape))
    return philox.uniform(k, counter, n, low, high, "float64").reshape(shape)


def ref_normal(k, counter, shape, loc=0.0, scale=1.0):
    n = int(np.prod(shape))
    return philox.normal(k, counter, n, loc, scale, "float64").reshape(shape)


def same(a, b):
    return a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("linker", ["py", "c"])
def test_theano_tutorial_using_random_numbers(linker):
    mode = Mode(linker=linker)

    # -- Brief Example
    srng = RandomStreams(seed=234)
    rv_u = srng.uniform((2, 2))
    rv_n = srng.normal((2, 2))
    f = function([], rv_u, mode=mode)
    g = function([], rv_n, no_default_updates=True, mode=mode)    # Not updating rv_n.rng
    nearly_zeros = function([], rv_u + rv_u - 2 * rv_u, mode=mode)

    f_val0 = f()
    f_val1 = f()  # different numbers from f_val0
    assert same(f_val0, ref_uniform(key(234, 0), 0, (2, 2))) and same(f_val1, ref_uniform(key(234, 0), 1, (2, 2)))
    assert not np.array_equal(f_val0, f_val1)
    g_val0 = g()  # different numbers from f_val0 and f_val1
    g_val1 = g()  # same numbers as g_val0!
    assert same(g_val0, ref_normal(key(234, 1), 0, (2, 2))) and same(g_val1, g_val0)
    assert rv_n.rng.get_value().get_state() == (ALG, key(234, 1), 0)
    assert same(nearly_zeros(), np.zeros((2, 2)))    # rv_u is drawn once per call: u + u - 2u is 0 exactly
    assert rv_u.rng.get_value().get_state() == (ALG, key(234, 0), 3)   # f, f, nearly_zeros each advanced it

    # -- Seeding Streams: one variable
    rng_val = rv_u.rng.get_value(borrow=True)   # Get the rng for rv_u
    rng_val.seed(89234)                         # seeds the generator
    rv_u.rng.set_value(rng_val, borrow=True)    # Assign back seeded rng
    assert rv_u.rng.get_value().get_state() == (ALG, key(89234, 0), 0)
    a, b = f(), f()
    assert same(a, ref_uniform(key(89234, 0), 0, (2, 2))) and same(b, ref_uniform(key(89234, 0), 1, (2, 2)))
    rng_val = rv_u.rng.get_value(borrow=True)
    rng_val.seed(89234)                         # the same seed again: the same draws again
    rv_u.rng.set_value(rng_val, borrow=True)
    assert same(f(), a) and same(f(), b)
    assert rv_n.rng.get_value().get_state() == (ALG, key(234, 1), 0)    # the other variable is left alone

    # -- Seeding Streams: all variables of the stream, each with its own key
    srng.seed(902340)  # seeds rv_u and rv_n with different seeds each
    assert rv_u.rng.get_value().get_state() == (ALG, key(902340, 0), 0)
    assert rv_n.rng.get_value().get_state() == (ALG, key(902340, 1), 0)
    u0, n0 = f(), g()
    assert same(u0, ref_uniform(key(902340, 0), 0, (2, 2))) and same(n0, ref_normal(key(902340, 1), 0, (2, 2)))
    srng.seed(902340)
    assert same(f(), u0) and same(g(), n0)

    # -- Sharing Streams Between Functions
    state_after_v0 = rv_u.rng.get_value().get_state()
    assert state_after_v0 == (ALG, key(902340, 0), 1)
    z = nearly_zeros()       # this affects rv_u's generator
    assert same(z, np.zeros((2, 2))) and rv_u.rng.get_value().get_state()[2] == 2
    v1 = f()
    rng = rv_u.rng.get_value(borrow=True)
    rng.set_state(state_after_v0)
    rv_u.rng.set_value(rng, borrow=True)
    v2 = f()             # v2 != v1
    v3 = f()             # v3 == v1
    assert not np.array_equal(v2, v1) and same(v3, v1)
    assert same(v2, ref_uniform(key(902340, 0), 1, (2, 2)))   # what nearly_zeros drew (and cancelled)
    assert same(v1, ref_uniform(key(902340, 0), 2, (2, 2)))


class Graph():
    stream = RandomStreams

    def __init__(self, seed=123):
        self.rng = self.stream(seed)
        self.y = self.rng.uniform(size=(1,))


class MRGGraph(Graph):
    stream = MRG_RandomStreams


def copy_random_state(g1, g2):
    if isinstance(g1.rng, MRG_RandomStreams):
        g2.rng.rstate = g1.rng.rstate
    for (su1, su2) in zip(g1.rng.state_updates, g2.rng.state_updates):
        su2[0].set_value(su1[0].get_value())


@pytest.mark.parametrize("linker", ["py", "c"])
@pytest.mark.parametrize("graph_class", [Graph, MRGGraph])
def test_theano_tutorial_copying_random_state_between_graphs(graph_class, linker):
    mode = Mode(linker=linker)
    g1 = graph_class(seed=123)
    f1 = function([], g1.y, mode=mode)
    g2 = graph_class(seed=987)
    f2 = function([], g2.y, mode=mode)
    # By default, the two functions are out of sync.
    one, two = f1(), f2()
    assert same(one, ref_uniform(key(123, 0), 0, (1,))) and same(two, ref_uniform(key(987, 0), 0, (1,)))
    assert not np.array_equal(one, two)
    # We now copy the state of the theano random number generators.
    copy_random_state(g1, g2)
    for call in (1, 2, 3):
        one, two = f1(), f2()
        assert same(one, two) and same(one, ref_uniform(key(123, 0), call, (1,)))
    if graph_class is MRGGraph:
        # rstate copied too: the variables made next draw alike (their states are the same), and
        # g1 making one first does not move g2's
        y1 = g1.rng.uniform(size=(3,))
        y2 = g2.rng.uniform(size=(3,))
        assert y1.rng.get_value().get_state() == y2.rng.get_value().get_state() == (ALG, key(123, 1), 0)


def test_state_value_is_the_vector_with_randomstates_methods():
    srng = RandomStreams(seed=5)
    rv = srng.uniform((3,))
    value = rv.rng.get_value()
    assert isinstance(value, PhiloxState) and isinstance(rv.rng, RandomStateSharedVariable)
    # still the uint64 vector [key, counter]: indexing, arithmetic and conversion give plain numpy values
    assert value.dtype == np.uint64 and value.shape == (2,)
    assert value[0] == np.uint64(key(5, 0)) and type(value[1]) is np.uint64 and int(value[1]) == 0
    assert type(value + np.uint64(1)) is np.ndarray and type(np.asarray(value)) is np.ndarray
    assert type(value[:1]) is np.ndarray and (value.key, value.counter) == (key(5, 0), 0)
    assert type(rv.rng.get_value(borrow=True, return_internal_type=True)) is np.ndarray
    # get_value() is a copy: seeding it changes nothing until set_value
    value.seed(11)
    assert rv.rng.get_value().get_state() == (ALG, key(5, 0), 0)
    rv.rng.set_value(value)
    assert rv.rng.get_value().get_state() == (ALG, key(11, 0), 0)
    value.seed(12)                              # set_value copied it (borrow=False)
    assert rv.rng.get_value().key == key(11, 0)
    # borrow=True is a view of the stored state, as Theano's borrowed RandomState: seeding it takes effect
    rv.rng.get_value(borrow=True).seed(13)
    assert rv.rng.get_value().get_state() == (ALG, key(13, 0), 0)
    # ... unless the stored vector is read-only: then borrow gives a copy
    rv.rng.container.storage[0].flags.writeable = False
    borrowed = rv.rng.get_value(borrow=True)
    borrowed.seed(14)
    assert rv.rng.get_value().key == key(13, 0) and borrowed.key == key(14, 0)
    # get_state is a snapshot, set_state its inverse
    snap = rv.rng.get_value().get_state()
    rv.rng.set_value(PhiloxState.of(7, 41))
    assert snap == (ALG, key(13, 0), 0) and rv.rng.get_value().get_state() == (ALG, 7, 41)
    back = rv.rng.get_value()
    assert back.set_state(snap) is None and back.get_state() == snap
    # a plain [key, counter] vector is still a value
    rv.rng.set_value(np.array([2 ** 64 - 1, 9], dtype=np.uint64))
    assert rv.rng.get_value().get_state() == (ALG, 2 ** 64 - 1, 9)
    # seed() without a seed: 64 bits from the OS, counter 0
    s1, s2 = PhiloxState.of(0, 5), PhiloxState.of(0, 5)
    s1.seed()
    s2.seed()
    assert s1.counter == 0 and s1.key != s2.key
    # it pickles as itself
    again = pickle.loads(pickle.dumps(PhiloxState.of(3, 4)))
    assert isinstance(again, PhiloxState) and again.get_state() == (ALG, 3, 4)
    # every stream class gives the same state values (PyTensor's RandomStream too)
    assert isinstance(ffigraph.RandomStream(seed=1).normal(size=(2,)).rng.get_value(), PhiloxState)
    # Theano's name for the class of a state, where Theano has it
    from ffigraph.tensor.shared_randomstreams import RandomStateSharedVariable as theano_name
    assert theano_name is RandomStateSharedVariable


def test_bad_states_are_refused_with_a_reason():
    srng = RandomStreams(seed=5)
    rv = srng.uniform((3,))
    value = rv.rng.get_value()
    with pytest.raises(ValueError, match=r"set_state: this is a MT19937 state; a random stream's state is "
                                         r"Philox4x32-10 \[key, counter\]"):
        value.set_state(np.random.RandomState(0).get_state())
    with pytest.raises(ValueError, match=r"set_state: this is a PCG64 state"):
        value.set_state(np.random.default_rng(0).bit_generator.state)
    with pytest.raises(TypeError, match=r"set_state: expected the tuple get_state\(\) returns, "
                                        r"\('Philox4x32-10', key, counter\), got \('Philox4x32-10', 1\)"):
        value.set_state((ALG, 1))
    with pytest.raises(TypeError, match=r"set_state: the key must be an integer, got 1.5"):
        value.set_state((ALG, 1.5, 0))
    with pytest.raises(ValueError, match=r"set_state: the counter must be in \[0, 2\*\*64\), got -1"):
        value.set_state((ALG, 1, -1))
    with pytest.raises(ValueError, match=r"set_state: the key must be in \[0, 2\*\*64\), got 18446744073709551616"):
        value.set_state((ALG, 2 ** 64, 0))
    assert value.get_state() == (ALG, key(5, 0), 0)     # nothing was changed by the refusals
    with pytest.raises(TypeError, match=r"set_value of random state random_state_0: got a numpy RandomState, but "
                                        r"ffigraph's random streams draw from Philox4x32-10"):
        rv.rng.set_value(np.random.RandomState(0))
    with pytest.raises(TypeError, match=r"got a numpy Generator"):
        rv.rng.set_value(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"random_state_0.*axis 0 has the static length 2"):
        rv.rng.set_value(np.zeros(3, dtype=np.uint64))
    with pytest.raises(AttributeError, match=r"PhiloxState.randint: a random stream's state offers RandomState's "
                                             r"seed, get_state and set_state only"):
        value.randint(3)
    with pytest.raises(ValueError, match=r"seed: a random state is a uint64 vector \[key, counter\] of length 2, "
                                         r"this one has dtype uint64 and shape \(3,\)"):
        np.zeros(3, dtype=np.uint64).view(PhiloxState).seed(1)
    frozen = np.zeros(2, dtype=np.uint64)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"this random state is read-only; get a writable one with rng.get_value\(\)"):
        frozen.view(PhiloxState).set_state((ALG, 1, 2))


def test_randomstreams_getitem_and_setitem():
    srng = RandomStreams(seed=8)
    rv = srng.normal((2,))
    got = srng[rv.rng]              # Theano: item.get_value(borrow=True)
    assert isinstance(got, PhiloxState) and got.get_state() == (ALG, key(8, 0), 0)
    got.seed(3)                     # borrowed
    assert rv.rng.get_value().key == key(3, 0)
    srng[rv.rng] = PhiloxState.of(10, 20)
    assert rv.rng.get_value().get_state() == (ALG, 10, 20)
    with pytest.raises(TypeError, match=r"RandomStreams\[item\] = val: val must be a random state \(a PhiloxState"):
        srng[rv.rng] = np.random.RandomState(0)
    with pytest.raises(TypeError, match=r"RandomStreams\[item\]: item must be the state of a random variable"):
        srng[rv]


def test_mrg_random_streams_state_bookkeeping():
    mrg = MRG_RandomStreams(seed=42)
    assert mrg.rstate.dtype == np.uint64 and mrg.rstate.tolist() == [42, 0]
    u = mrg.uniform(size=(2, 3), nstreams=7)
    n = mrg.normal(size=(4,))
    # Theano 1.0: the draw's state is its rstate; state_updates holds (state, update, size, nstreams)
    assert u.rstate is u.rng and n.rstate is n.rng
    assert [(s, upd, size, ns) for s, upd, size, ns in mrg.state_updates] == [
        (u.rng, u.rng.default_update, (2, 3), 7), (n.rng, n.rng.default_update, (4,), None)]
    assert mrg.updates() == [(u.rng, u.rng.default_update), (n.rng, n.rng.default_update)]
    assert mrg.rstate.tolist() == [42, 2]
    assert u.rng.get_value().get_state() == (ALG, key(42, 0), 0)
    # rstate is a copy; assigning one moves where the next variable's key comes from
    saved = mrg.rstate
    saved[1] = 99
    assert mrg.rstate.tolist() == [42, 2]
    mrg.rstate = np.array([5, 1], dtype=np.uint64)
    assert mrg.uniform(size=(1,)).rng.get_value().get_state() == (ALG, key(5, 1), 0)
    mrg.set_rstate(77)              # as a new MRG_RandomStreams(77): its first key next
    assert mrg.binomial(size=(2,), p=0.5).rng.get_value().key == key(77, 0) == \
        MRG_RandomStreams(77).uniform(size=(1,)).rng.get_value().key
    mrg.inc_rstate()                # skip one
    assert mrg.uniform(size=(1,)).rng.get_value().key == key(77, 2)
    # seed() resets every state by its position and the next index after them
    mrg.seed(42)
    assert [e[0].get_value().get_state() for e in mrg.state_updates] == [(ALG, key(42, i), 0) for i in range(5)]
    assert mrg.rstate.tolist() == [42, 5]
    with pytest.raises(ValueError, match=r"MRG_RandomStreams.rstate must be \[seed, next index\], two non-negative "
                                         r"integers .*not MRG31k3p's six int32"):
        mrg.rstate = np.full(6, 12345, dtype=np.int32)
    with pytest.raises(ValueError, match=r"MRG_RandomStreams.rstate must be"):
        mrg.rstate = [-1, 0]


# The tutorial's code blocks, verbatim but for print (Python 2's statement in the "Copying" block);
# run with ``import theano`` resolved by ffigraph.compat.theano.
TUTORIAL = textwrap.dedent("""
    from theano.tensor.shared_randomstreams import RandomStreams
    from theano import function
    srng = RandomStreams(seed=234)
    rv_u = srng.uniform((2,2))
    rv_n = srng.normal((2,2))
    f = function([], rv_u)
    g = function([], rv_n, no_default_updates=True)    #Not updating rv_n.rng
    nearly_zeros = function([], rv_u + rv_u - 2 * rv_u)

    rng_val = rv_u.rng.get_value(borrow=True)   # Get the rng for rv_u
    rng_val.seed(89234)                         # seeds the generator
    rv_u.rng.set_value(rng_val, borrow=True)    # Assign back seeded rng
    after_seed = f()

    srng.seed(902340)  # seeds rv_u and rv_n with different seeds each

    state_after_v0 = rv_u.rng.get_value().get_state()
    nearly_zeros()       # this affects rv_u's generator
    v1 = f()
    rng = rv_u.rng.get_value(borrow=True)
    rng.set_state(state_after_v0)
    rv_u.rng.set_value(rng, borrow=True)
    v2 = f()             # v2 != v1
    v3 = f()             # v3 == v1

    import theano
    import numpy
    import theano.tensor as T
    from theano.sandbox.rng_mrg import MRG_RandomStreams
    from theano.tensor.shared_randomstreams import RandomStreams

    class Graph():
        def __init__(self, seed=123):
            self.rng = RandomStreams(seed)
            self.y = self.rng.uniform(size=(1,))

    g1 = Graph(seed=123)
    f1 = theano.function([], g1.y)

    g2 = Graph(seed=987)
    f2 = theano.function([], g2.y)

    before = (f1(), f2())

    def copy_random_state(g1, g2):
        if isinstance(g1.rng, MRG_RandomStreams):
            g2.rng.rstate = g1.rng.rstate
        for (su1, su2) in zip(g1.rng.state_updates, g2.rng.state_updates):
            su2[0].set_value(su1[0].get_value())

    copy_random_state(g1, g2)
    after = (f1(), f2())
""")


def test_tutorial_runs_unchanged_under_import_theano():
    from ffigraph.compat import theano as compat

    was_installed = compat.installed()
    compat.install()
    try:
        ns = {}
        exec(compile(TUTORIAL, "<Theano tutorial: Using Random Numbers>", "exec"), ns)
    finally:
        if not was_installed:
            compat.uninstall()
    assert same(ns["after_seed"], ref_uniform(key(89234, 0), 0, (2, 2)))
    assert ns["state_after_v0"] == (ALG, key(902340, 0), 0)
    assert same(ns["v2"], ref_uniform(key(902340, 0), 0, (2, 2)))     # what nearly_zeros drew
    assert same(ns["v1"], ref_uniform(key(902340, 0), 1, (2, 2)))
    assert same(ns["v3"], ns["v1"])
    one, two = ns["before"]
    assert same(one, ref_uniform(key(123, 0), 0, (1,))) and same(two, ref_uniform(key(987, 0), 0, (1,)))
    one, two = ns["after"]
    assert same(one, two) and same(one, ref_uniform(key(123, 0), 1, (1,)))
