"""Counter-based random numbers: Philox4x32-10 draws whose bits are the same in C and numpy.

The ops (``op.py``) read a state vector ``[key, call counter]``; the user-facing streams that make
those states as shared variables (PyTensor's ``RandomStream``, Theano's ``RandomStreams``) live in
the compile layer, ``ffigraph.compile.random_stream``, and are also reachable as
``ffigraph.tensor.random.utils.RandomStream`` (the package root attaches them there). The value of a
state, ``rv.rng.get_value()``, is a ``PhiloxState`` (``state.py``): the vector with Theano's
RandomState methods ``seed``, ``get_state`` and ``set_state``.
"""
from ffigraph.tensor.random.op import (BernoulliRV, BinomialRV, ChoiceRV, IntegersRV, NormalRV,  # noqa: F401
                                       PermutationRV, RandomVariable, UniformRV)
from ffigraph.tensor.random.state import PhiloxState  # noqa: F401

__all__ = ["RandomVariable", "UniformRV", "NormalRV", "IntegersRV", "BernoulliRV", "BinomialRV", "ChoiceRV",
           "PermutationRV", "PhiloxState"]
