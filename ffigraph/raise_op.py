"""PyTensor's ``pytensor.raise_op`` path: ``CheckAndRaise``, ``Assert`` and ``assert_op``, which
live in ffigraph.tensor.raise_op (the tensor layer's own functions use them: unravel_index,
ravel_multi_index)."""
from ffigraph.tensor.raise_op import Assert, CheckAndRaise, assert_op

__all__ = ["CheckAndRaise", "Assert", "assert_op"]
