"""``ffigraph.compile.ops``, PyTensor's path for the type-generic ops (``deep_copy_op``, ``view_op``,
``Shape``, ``Shape_i`` and their C-code registries).

They live in ``ffigraph.tensor.generic_ops``: tensor variables and the shape rewrites use them, and
the tensor layer must not import the compile layer above it. This module re-exports them.
"""
from ffigraph.tensor.generic_ops import (  # noqa: F401
    DeepCopyOp,
    Shape,
    Shape_i,
    ViewOp,
    deep_copy_op,
    register_deep_copy_op_c_code,
    register_shape_c_code,
    register_shape_i_c_code,
    register_view_op_c_code,
    shape,
    view_op,
)

from ffigraph.compile.builders import FromFunctionOp, as_op  # noqa: E402  (PyTensor's and Theano's compile.ops.as_op)

__all__ = ["DeepCopyOp", "Shape", "Shape_i", "ViewOp", "deep_copy_op", "register_deep_copy_op_c_code", "as_op",
           "FromFunctionOp",
           "register_shape_c_code", "register_shape_i_c_code", "register_view_op_c_code", "shape", "view_op"]
