"""The value of a random variable's state, with the methods Theano code calls on it.

In Theano, ``rv.rng.get_value()`` is a ``numpy.random.RandomState``, and the tutorial seeds it,
saves and restores it, and assigns it back (``rv.rng.set_value(rng_val, borrow=True)``). In
ffigraph a state is the uint64 vector ``[key, call counter]`` of a Philox4x32-10 stream
(``philox.py``); ``get_value`` of a stream's state gives it as a ``PhiloxState``: that vector (an
ndarray: it indexes, compares and converts like before) with RandomState's state methods:

* ``seed(seed=None)``: the state of a fresh stream's first variable,
  ``philox.initial_state(seed, 0)``, so seeding two states with the same seed makes them draw the
  same numbers (as two RandomStates seeded alike do); ``seed()`` takes 64 bits from the operating
  system;
* ``get_state()``: a snapshot, the tuple ``('Philox4x32-10', key, counter)`` of Python ints;
* ``set_state(state)``: the inverse (a tuple from ``get_state``).

The methods change the vector in place. The numbers stay Philox's: no Mersenne Twister is involved,
and a RandomState's state tuple is refused.
"""
from __future__ import annotations

import secrets

import numpy as np

from ffigraph.tensor.random import philox

ALGORITHM = "Philox4x32-10"
_M64 = (1 << 64) - 1
# numpy RandomState's public names that a PhiloxState has not (its draws: uniform, randint, ...)
_RANDOMSTATE_ONLY = frozenset(n for n in dir(np.random.RandomState) if not n.startswith("_")) - {
    "seed", "get_state", "set_state"}


class PhiloxState(np.ndarray):
    """A random variable's state ``[key, call counter]`` (uint64, shape (2,)) with Theano's
    ``RandomState`` methods ``seed``, ``get_state`` and ``set_state``.

    Make one with ``PhiloxState.of(key, counter)``, or view an existing state vector with
    ``vector.view(PhiloxState)``. Arithmetic and indexing give plain ndarrays and numpy scalars.
    """

    @classmethod
    def of(cls, key, counter=0):
        """A new state with this key and call counter (ints in [0, 2**64))."""
        words = [_word("PhiloxState.of", "key", key), _word("PhiloxState.of", "counter", counter)]
        return np.array(words, dtype=np.uint64).view(cls)

    # -- Theano's RandomState methods

    def seed(self, seed=None):
        """Reset to the state of the first variable of a stream seeded with ``seed`` (key
        ``philox.derive_key(seed, 0)``, counter 0); ``None``: 64 random bits from the OS."""
        self._check_shape("seed")
        if seed is None:
            seed = secrets.randbits(64)
        self._write(philox.initial_state(seed, 0))

    def get_state(self):
        """The state as ``('Philox4x32-10', key, counter)`` (a snapshot: later draws leave it as is)."""
        self._check_shape("get_state")
        raw = self.view(np.ndarray)
        return (ALGORITHM, int(raw[0]), int(raw[1]))

    def set_state(self, state):
        """Set the key and counter from a tuple made by ``get_state``."""
        self._check_shape("set_state")
        if isinstance(state, dict) or (isinstance(state, tuple) and state and state[0] != ALGORITHM):
            name = state.get("bit_generator") if isinstance(state, dict) else state[0]
            raise ValueError("set_state: this is a %s state; a random stream's state is %s [key, counter], "
                             "set it from the tuple get_state() returns, ('%s', key, counter)"
                             % (name, ALGORITHM, ALGORITHM))
        if not (isinstance(state, tuple) and len(state) == 3):
            raise TypeError("set_state: expected the tuple get_state() returns, ('%s', key, counter), got %r"
                            % (ALGORITHM, state))
        words = [_word("set_state", "key", state[1]), _word("set_state", "counter", state[2])]
        self._write(np.array(words, dtype=np.uint64))

    @property
    def key(self):
        """The Philox key (a Python int)."""
        return int(self.view(np.ndarray)[0])

    @property
    def counter(self):
        """The call counter, which the draws of the next call use (a Python int)."""
        return int(self.view(np.ndarray)[1])

    def __getattr__(self, name):
        # only for names not found otherwise: RandomState's drawing methods say they are not here
        if name in _RANDOMSTATE_ONLY:
            raise AttributeError("PhiloxState.%s: a random stream's state offers RandomState's seed, get_state and "
                                 "set_state only; numpy RandomState's %s is not implemented (draw with the "
                                 "stream's methods, in the graph)" % (name, name))
        raise AttributeError("'PhiloxState' object has no attribute %r" % (name,))

    # -- behaving as a plain vector elsewhere

    def __getitem__(self, index):
        return self.view(np.ndarray)[index]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(x.view(np.ndarray) if isinstance(x, PhiloxState) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, PhiloxState) else x for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def _check_shape(self, what):
        if self.shape != (2,) or self.dtype != np.uint64:
            raise ValueError("%s: a random state is a uint64 vector [key, counter] of length 2, this one has "
                             "dtype %s and shape %s" % (what, self.dtype, self.shape))

    def _write(self, values):
        raw = self.view(np.ndarray)
        if not raw.flags.writeable:
            raise ValueError("this random state is read-only; get a writable one with rng.get_value() and "
                             "assign it back with rng.set_value(...)")
        raw[...] = values


def _word(where, what, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError("%s: the %s must be an integer, got %r" % (where, what, value))
    value = int(value)
    if not 0 <= value <= _M64:
        raise ValueError("%s: the %s must be in [0, 2**64), got %d" % (where, what, value))
    return value


__all__ = ["PhiloxState", "ALGORITHM"]
