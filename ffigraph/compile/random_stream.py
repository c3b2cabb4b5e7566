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
"""
from __future__ import annotations

import secrets

import numpy as np

from ffigraph.compile.sharedvalue import shared
from ffigraph.config import config
from ffigraph.graph.basic import Variable
from ffigraph.tensor.basic import as_tensor_variable, cast, stack
from ffigraph.tensor.random import op as rv
from ffigraph.tensor.random import philox

COUNTER_STEP = np.array([0, 1], dtype=np.uint64)   # added to [key, counter] by each call


class _StreamBase:
    """The states of one stream: making them, reseeding them, listing their updates."""

    def __init__(self, seed=None):
        if seed is None:
            seed = secrets.randbits(64)
        philox.seed_to_int(seed)   # a TypeError now for a seed that is not an integer
        self.default_instance_seed = seed
        self._seed = seed
        self.state_updates = []     # (state, its default update), in the order the variables were made

    def _new_state(self):
        index = len(self.state_updates)
        state = shared(philox.initial_state(self._seed, index), name="random_state_%d" % index, shape=(2,))
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
        for index, (state, _) in enumerate(self.state_updates):
            state.set_value(philox.initial_state(seed, index), borrow=True)

    def updates(self):
        """The (state, update) pairs of every variable made so far (also their default updates)."""
        return list(self.state_updates)

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


def _retag(drawn, out):
    out.rng, out.update = drawn.rng, drawn.update
    return out


class MRG_RandomStreams(RandomStreams):
    """Theano's ``theano.sandbox.rng_mrg.MRG_RandomStreams(seed=12345)`` signatures, drawing from the
    same Philox4x32-10 generator as the other streams (not MRG31k3p: the numbers differ from
    Theano's). ``nstreams`` is accepted and ignored: every element has its own counter already."""

    def __init__(self, seed=12345):
        super().__init__(seed)

    def uniform(self, size, low=0.0, high=1.0, ndim=None, dtype=None, nstreams=None, **kwargs):
        return super().uniform(size, low, high, ndim, dtype)

    def normal(self, size, avg=0.0, std=1.0, ndim=None, dtype=None, nstreams=None, truncate=False, **kwargs):
        if truncate:
            raise NotImplementedError("MRG_RandomStreams.normal(truncate=True) is not implemented")
        return super().normal(size, avg, std, ndim, dtype)

    def binomial(self, size=None, n=1, p=None, ndim=None, dtype="int64", nstreams=None, **kwargs):
        if p is None:
            raise TypeError("binomial: p is required")
        return super().binomial(size, n, p, ndim, dtype)

    def choice(self, size=1, a=None, replace=True, p=None, ndim=None, dtype="int64", nstreams=None, **kwargs):
        if a is None:
            raise TypeError("choice: a is required")
        return super().choice(size if size is not None else (), a, replace, p, ndim, dtype)

    def multinomial(self, *args, **kwargs):
        raise NotImplementedError("MRG_RandomStreams.multinomial is not implemented")


__all__ = ["RandomStream", "RandomStreams", "MRG_RandomStreams"]
