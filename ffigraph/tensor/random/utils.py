"""PyTensor's home of ``RandomStream`` (``pytensor.tensor.random.utils.RandomStream``).

The class itself lives in the compile layer (``ffigraph.compile.random_stream``): it makes shared
variables, and the tensor layer may not import compile (.importlinter). The package root
(``ffigraph/__init__.py``) sets ``RandomStream`` here after importing both layers, so
``from ffigraph.tensor.random.utils import RandomStream`` works once ``ffigraph`` is imported,
which importing this module always does first.
"""
