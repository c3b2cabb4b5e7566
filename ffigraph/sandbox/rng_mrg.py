"""Theano's ``theano.sandbox.rng_mrg.MRG_RandomStreams``, kept under its old path.

It draws from the same counter-based Philox4x32-10 generator as every ffigraph stream
(``ffigraph.compile.random_stream``), not from MRG31k3p.
"""
from ffigraph.compile.random_stream import MRG_RandomStreams

__all__ = ["MRG_RandomStreams"]
