"""Random streams: PyTensor's ``RandomStream``, Theano's ``RandomStreams`` and ``MRG_RandomStreams``.

Every random variable a stream makes gets its own state, a shared uint64 vector ``[key, call
counter]``: the key is output ``i`` of SplitMix64 seeded with the stream's seed, ``i`` the
variable's index in the stream (so two variables of a stream differ, and the same seed gives the
same numbers again); the counter starts at 0. The state's ``default_update`` adds one to the
counter, so each call of a compiled function that draws from it draws new numbers, and no two
calls repeat. The draws themselves are the counter-based Philox4x32-10 ops of
``ffigraph.tensor.random`` (the same bits from the Python and the C linkers, on any interpreter).

``seed(s)`` resets every state of the stream to the keys of seed ``s`` and counter 0.

All three classes draw from the same generator; ``MRG_RandomStreams`` keeps Theano's name and
signatures of ``theano.sandbox.rng_mrg`` but is not the MRG31k3p generator.

Theano's API on a state: each state is a ``RandomStateSharedVariable`` whose ``get_value`` is a
``PhiloxState`` (``ffigraph.tensor.random.state``: the vector with RandomState's ``seed``,
``get_state`` and ``set_state``; with ``borrow=True`` a view of the stored vector, so its methods
change the state in place as they change Theano's borrowed RandomState), and whose ``set_value``
takes it back. ``state_updates`` lists the (state, update) pairs, so the tutorial's
``copy_random_state`` copies ``su1[0].get_value()`` into ``su2[0]``; ``MRG_RandomStreams.rstate``
is what the keys of the variables made next derive from.
"""
from __future__ import annotations

import secrets

import numpy as np

from ffigraph.compile.sharedvalue import tensor_shared_class
from ffigraph.config import config
from ffigraph.graph.basic import Variable
from ffigraph.tensor.basic import as_tensor_variable, cast, stack
from ffigraph.tensor.random import op as rv
from ffigraph.tensor.random import philox
from ffigraph.tensor.random.state import PhiloxState
from ffigraph.tensor.type import TensorType

COUNTER_STEP = np.array([0, 1], dtype=np.uint64)   # added to [key, counter] by each call
STATE_TYPE = TensorType("uint64", (2,))


class RandomStateSharedVariable(tensor_shared_class()):  # type: ignore[misc]  # (made at run time)
    """The state of one random variable, ``[key, call counter]``, as Theano's random states behave.

    ``get_value()`` is a ``PhiloxState``: the uint64 vector with ``seed``, ``get_state`` and
    ``set_state``; a copy, or with ``borrow=True`` a view of the stored vector (its methods then
    change this state directly until a call replaces the stored vector, as Theano's ``borrow``
    allows). ``set_value`` takes a ``PhiloxState`` or a ``[key, counter]`` vector; a numpy
    ``RandomState`` or ``Generator`` is refused (these states are Philox's, not Mersenne Twister's).
    ``return_internal_type=True`` gives the stored plain vector.
    """

    def get_value(self, borrow=False, return_internal_type=False):
        """The state as a ``PhiloxState``: a copy, or a view of the stored vector with ``borrow=True``
        (a copy when that vector is read-only); ``return_internal_type=True``: the plain vector."""
        value = self.container.storage[0]
        if return_internal_type:
            return value if borrow else np.array(value)
        if borrow and isinstance(value, np.ndarray) and value.flags.writeable:
            return value.view(PhiloxState)
        return np.array(value, dtype=np.uint64).view(PhiloxState)

    def set_value(self, new_value, borrow=False):
        """Set the state to ``new_value``, a ``PhiloxState`` or a uint64 ``[key, counter]`` vector
        (copied unless ``borrow=True``)."""
        if isinstance(new_value, (np.random.RandomState, np.random.Generator, np.random.BitGenerator)):
            raise TypeError("set_value of random state %s: got a numpy %s, but ffigraph's random streams draw from "
                            "Philox4x32-10 and their state is [key, counter]; seed it with "
                            "rng_val = %s.get_value(borrow=True); rng_val.seed(n); %s.set_value(rng_val, "
                            "borrow=True), or copy another state's get_value()"
                            % (self, type(new_value).__name__, self, self))
        if isinstance(new_value, PhiloxState):
            new_value = new_value.view(np.ndarray)
        super().set_value(new_value, borrow=borrow)


def _new_state_variable(value, name):
    return RandomStateSharedVariable(STATE_TYPE, np.array(value, dtype=np.uint64), name=name)


class _StreamBase:
    """The states of one stream: making them, reseeding them, listing their updates."""

    def __init__(self, seed=None):
        if seed is None:
            seed = secrets.randbits(64)
        philox.seed_to_int(seed)   # a TypeError now for a seed that is not an integer
        self.default_instance_seed = seed
        self._seed = seed
        self._next_index = 0        # the key index of the next variable (MRG_RandomStreams.rstate moves it)
        self.state_updates = []     # (state, its default update), in the order the variables were made

    def _new_state(self):
        index = self._next_index
        self._next_index += 1
        name = "random_state_%d" % len(self.state_updates)
        state = _new_state_variable(philox.initial_state(self._seed, index), name)
        state.default_update = state + COUNTER_STEP
        self.state_updates.append((state, state.default_update))
        return state

    def _tag(self, out, state):
        # Theano's attributes of a random variable: its state and the update that advances it
        out.rng = state
        out.update = (state, state.default_update)
        return out

    def seed(self, seed=None):
        """Reset every state of this stream to the keys of ``seed`` (the stream's first seed when
        None) and counter 0; variables made later take their keys from it too."""
        if seed is None:
            seed = self.default_instance_seed
        philox.seed_to_int(seed)
        self._seed = seed
        for index, entry in enumerate(self.state_updates):
            entry[0].set_value(philox.initial_state(seed, index), borrow=True)
        self._next_index = len(self.state_updates)

    def updates(self):
        """The (state, update) pairs of every variable made so far (also their default updates)."""
        return [(entry[0], entry[1]) for entry in self.state_updates]

    def gen(self, op, *args, **kwargs):
        """A draw from ``op``, a builder of ``ffigraph.tensor.random.op`` (``uniform``, ...) that takes
        the state first, with a new state of this stream."""
        state = self._new_state()
        return self._tag(op(state, *args, **kwargs), state)


class RandomStream(_StreamBase):
    """PyTensor's ``RandomStream(seed=None)``: ``srng.normal(0, 1, size=(3,))`` etc.

    Parameters broadcast with each other and with ``size`` as numpy's ``Generator`` does; ``size``
    is an int, a tuple of ints (or int scalars) or an int vector of static length.
    """

    def __init__(self, seed=None, namespace=None, rng_ctor=None):
        super().__init__(seed)

    def uniform(self, low=0.0, high=1.0, size=None, dtype="floatX"):
        return self.gen(rv.uniform, low, high, size=size, dtype=dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype="floatX"):
        return self.gen(rv.normal, loc, scale, size=size, dtype=dtype)

    def integers(self, low, high=None, size=None, dtype="int64"):
        return self.gen(rv.integers, low, high, size=size, dtype=dtype)

    def bernoulli(self, p, size=None):
        return self.gen(rv.bernoulli, p, size=size)

    def binomial(self, n, p, size=None):
        return self.gen(rv.binomial, n, p, size=size)

    def choice(self, a, size=None, replace=True, p=None):
        return self.gen(rv.choice, a, size=size, replace=replace, p=p)

    def permutation(self, x):
        return self.gen(rv.permutation, x)


def _theano_size(size, ndim):
    """Theano's ``size``: () or None means the parameters' shape; a symbolic vector of unknown length
    takes ``ndim`` entries."""
    if size is None or (isinstance(size, (tuple, list)) and len(size) == 0):
        return None
    if isinstance(size, Variable) and size.ndim == 1 and size.type.shape[0] is None:
        if ndim is None:
            raise ValueError("size=%s has no static length: give ndim" % (size,))
        return stack([cast(size[i], "int64") for i in range(ndim)])
    if isinstance(size, (tuple, list)) and ndim is not None and len(size) != ndim:
        raise ValueError("ndim=%d does not match size %s" % (ndim, tuple(size)))
    return size


def _theano_float_dtype(dtype, *params):
    """Theano's rule for dtype=None: floatX, upcast to float64 by float64 symbolic parameters."""
    if dtype is not None:
        return dtype
    for p in params:
        if isinstance(p, Variable) and p.dtype == "float64":
            return "float64"
    return config.floatX


class RandomStreams(_StreamBase):
    """Theano's ``RandomStreams(seed=None)`` (``theano.tensor.shared_randomstreams``) with its
    signatures: ``size`` first, ``ndim`` for a size of unknown length, ``random_integers`` with an
    inclusive ``high``."""

    def uniform(self, size=(), low=0.0, high=1.0, ndim=None, dtype=None):
        return self.gen(rv.uniform, low, high, size=_theano_size(size, ndim),
                        dtype=_theano_float_dtype(dtype, low, high))

    def normal(self, size=(), avg=0.0, std=1.0, ndim=None, dtype=None):
        return self.gen(rv.normal, avg, std, size=_theano_size(size, ndim), dtype=_theano_float_dtype(dtype, avg, std))

    def binomial(self, size=(), n=1, p=0.5, ndim=None, dtype="int64", prob=None):
        if prob is not None:
            p = prob
        out = self.gen(rv.binomial, n, p, size=_theano_size(size, ndim))
        return _retag(out, cast(out, dtype)) if out.dtype != dtype else out

    def random_integers(self, size=(), low=0, high=1, ndim=None, dtype="int64"):
        """Integers in [low, high], both inclusive (Theano's rule)."""
        return self.gen(rv.integers, low, as_tensor_variable(high) + 1, size=_theano_size(size, ndim), dtype=dtype)

    def choice(self, size=(), a=2, replace=True, p=None, ndim=None, dtype="int64"):
        size = _theano_size(size, ndim)
        out = self.gen(rv.choice, a, size=size, replace=replace, p=p)
        return _retag(out, cast(out, dtype)) if out.dtype != dtype and out.dtype.startswith("int") else out

    def permutation(self, size=(), n=1, ndim=None, dtype="int64"):
        """Permutations of range(n): shape size + (n,), one per row."""
        out = self.gen(rv.permutation, n, size=_theano_size(size, ndim))
        return _retag(out, cast(out, dtype)) if out.dtype != dtype else out

    def __getitem__(self, item):
        """Theano's ``srng[rv.rng]``: the value of the state ``item`` (borrowed, as ``get_value(borrow=True)``)."""
        return _as_state_variable(item, "RandomStreams[item]").get_value(borrow=True)

    def __setitem__(self, item, val):
        """Theano's ``srng[rv.rng] = val``: set the state ``item`` to ``val``, a ``PhiloxState`` (what
        ``srng[item]`` and ``get_value`` give), borrowed."""
        state = _as_state_variable(item, "RandomStreams[item] = val")
        if not isinstance(val, PhiloxState):
            raise TypeError("RandomStreams[item] = val: val must be a random state (a PhiloxState, as "
                            "srng[item] or item.get_value() give), got %s" % type(val).__name__)
        state.set_value(val, borrow=True)


def _as_state_variable(item, what):
    if not isinstance(item, RandomStateSharedVariable):
        raise TypeError("%s: item must be the state of a random variable (rv.rng), got %r" % (what, item))
    return item


def _retag(drawn, out):
    out.rng, out.update = drawn.rng, drawn.update
    if hasattr(drawn, "rstate"):
        out.rstate = drawn.rstate
    return out


class MRG_RandomStreams(RandomStreams):
    """Theano's ``theano.sandbox.rng_mrg.MRG_RandomStreams(seed=12345)`` signatures, drawing from the
    same Philox4x32-10 generator as the other streams (not MRG31k3p: the numbers differ from
    Theano's). ``nstreams`` is accepted and ignored: every element has its own counter already.

    As in Theano, a draw's state is also its ``rstate`` attribute, ``state_updates`` holds
    ``(state, update, size, nstreams)`` entries, and the stream's ``rstate`` is what the states of
    the variables made next derive from: here the uint64 vector ``[seed, index of the next
    variable]`` (Theano's is six int32 of MRG31k3p). Assigning one stream's ``rstate`` to another
    makes the variables the second makes next draw what the first one's would.
    """

    def __init__(self, seed=12345):
        super().__init__(seed)

    @property
    def rstate(self):
        """``[seed, next index]`` (uint64, a copy): the key of the next variable made is
        ``philox.derive_key(seed, next index)``."""
        return np.array([philox.seed_to_int(self._seed), self._next_index], dtype=np.uint64)

    @rstate.setter
    def rstate(self, value):
        arr = np.asarray(value)
        if arr.shape != (2,) or arr.dtype.kind not in "iu" or (arr.dtype.kind == "i" and bool((arr < 0).any())):
            raise ValueError("MRG_RandomStreams.rstate must be [seed, next index], two non-negative integers as "
                             "another stream's rstate gives (ffigraph's streams are Philox4x32-10, not MRG31k3p's "
                             "six int32), got %r" % (value,))
        self._seed = int(arr[0])
        self._next_index = int(arr[1])

    def set_rstate(self, seed):
        """Theano's ``set_rstate(seed)``: the variables made next take their states from ``seed``, as
        those of a new ``MRG_RandomStreams(seed)`` do; the existing ones keep theirs."""
        philox.seed_to_int(seed)
        self._seed = seed
        self._next_index = 0

    def inc_rstate(self):
        """Theano's ``inc_rstate()``: skip the state the next variable would have taken."""
        self._next_index += 1

    def gen(self, op, *args, **kwargs):
        # Theano's MRG bookkeeping: the state is also the draw's ``rstate``, and state_updates records
        # (state, update, size, nstreams); the methods below put in the size and nstreams they were given
        out = super().gen(op, *args, **kwargs)
        state, update = self.state_updates[-1]
        self.state_updates[-1] = (state, update, kwargs.get("size"), None)
        out.rstate = state
        return out

    def _noted(self, out, size, nstreams):
        state, update = self.state_updates[-1][:2]
        self.state_updates[-1] = (state, update, size, nstreams)
        return out

    def uniform(self, size, low=0.0, high=1.0, ndim=None, dtype=None, nstreams=None, **kwargs):
        return self._noted(super().uniform(size, low, high, ndim, dtype), size, nstreams)

    def normal(self, size, avg=0.0, std=1.0, ndim=None, dtype=None, nstreams=None, truncate=False, **kwargs):
        if truncate:
            raise NotImplementedError("MRG_RandomStreams.normal(truncate=True) is not implemented")
        return self._noted(super().normal(size, avg, std, ndim, dtype), size, nstreams)

    def binomial(self, size=None, n=1, p=None, ndim=None, dtype="int64", nstreams=None, **kwargs):
        if p is None:
            raise TypeError("binomial: p is required")
        return self._noted(super().binomial(size, n, p, ndim, dtype), size, nstreams)

    def choice(self, size=1, a=None, replace=True, p=None, ndim=None, dtype="int64", nstreams=None, **kwargs):
        if a is None:
            raise TypeError("choice: a is required")
        out = super().choice(size if size is not None else (), a, replace, p, ndim, dtype)
        return self._noted(out, size, nstreams)

    def multinomial(self, *args, **kwargs):
        raise NotImplementedError("MRG_RandomStreams.multinomial is not implemented")


__all__ = ["RandomStream", "RandomStreams", "MRG_RandomStreams", "RandomStateSharedVariable"]
