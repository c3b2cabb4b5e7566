"""PyTensor's ``pytensor.tensor.functional``: ``vectorize`` (see ffigraph.tensor.blockwise)."""
from ffigraph.tensor.blockwise import vectorize

__all__ = ["vectorize"]
