"""Theano's ``theano.sandbox`` paths that users import from (``ffigraph.sandbox.rng_mrg``)."""
