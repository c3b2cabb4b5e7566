"""Theano's home of ``RandomStreams`` (``theano.tensor.shared_randomstreams.RandomStreams``).

The class lives in the compile layer (``ffigraph.compile.random_stream``), which the tensor layer
may not import (.importlinter); the package root (``ffigraph/__init__.py``) sets
``RandomStreams`` here after importing both layers, and Theano's ``RandomStateSharedVariable``, the
class of a random variable's state (``rv.rng``).
"""
