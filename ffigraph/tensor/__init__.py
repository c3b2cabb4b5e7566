"""Symbolic tensors: types, constructors (``dmatrix``, ``fvector``, ...) and operations."""
import typing as _typing

from ffigraph.tensor.basic import *  # noqa: F401,F403
from ffigraph.tensor.basic import __all__ as _basic_all
from ffigraph.tensor.math import *  # noqa: F401,F403
from ffigraph.tensor.math import __all__ as _math_all
from ffigraph.tensor.shapes import Reshape, flatten, inferred_shape, reshape, shape, shape_i
from ffigraph.tensor.subtensor import IncSubtensor, Subtensor, inc_subtensor, set_subtensor
from ffigraph.tensor.advanced_subtensor import (AdvancedIncSubtensor, AdvancedIncSubtensor1, AdvancedSubtensor,
                                                AdvancedSubtensor1, flatnonzero, nonzero, take)
from ffigraph.tensor.sum_to_shape import SumToShape, sum_to_shape
from ffigraph.tensor.type import SUPPORTED_DTYPES, TensorType
from ffigraph.tensor import registrations_c  # noqa: F401  (registers TensorType C code)
from ffigraph.tensor import scalar_graph  # noqa: F401  (scalar ops' gradients; scalar graphs compiled as 0-d)
from ffigraph.tensor.blockwise import Blockwise, vectorize  # noqa: E402  (PyTensor's pt.vectorize)
from ffigraph.tensor.make_vector import MakeVector, make_vector  # noqa: E402  (pytensor.tensor.basic's)
from ffigraph.tensor.selection import choose, permute_row_elements  # noqa: E402
from ffigraph.tensor.gradient import Lop, Rop, grad, hessian, jacobian  # noqa: E402  (Theano's T.grad, T.Rop)
from ffigraph.tensor import nnet, special, xlogx  # noqa: E402,F401  (T.special.softmax, T.nnet.relu, T.xlogx.xlogx)
from ffigraph.tensor.special import logsumexp  # noqa: E402  (pytensor.tensor.logsumexp)

__all__ = list(_basic_all) + list(_math_all)
__all__ += [
    "Reshape", "flatten", "inferred_shape", "reshape", "shape", "shape_i", "Subtensor", "SUPPORTED_DTYPES",
    "IncSubtensor", "inc_subtensor", "set_subtensor", "AdvancedSubtensor1", "AdvancedSubtensor",
    "AdvancedIncSubtensor1", "AdvancedIncSubtensor", "take", "nonzero", "flatnonzero", "SumToShape", "sum_to_shape",
    "grad", "jacobian", "hessian", "Rop", "Lop",
]
__all__ += ["logsumexp", "Blockwise", "vectorize", "MakeVector", "make_vector", "choose", "permute_row_elements"]
if _typing.TYPE_CHECKING:
    # mypy reads only literal lists and ``module.__all__`` here: the typed constructors of basic
    from ffigraph.tensor import basic as _basic

    __all__ += _basic.__all__
from ffigraph.tensor.extra_ops import *  # noqa: F401,F403,E402  (issue 27: cumsum, cumprod, diff, bincount, ...)
from ffigraph.tensor.extra_ops import __all__ as _extra_ops_all  # noqa: E402
from ffigraph.tensor.sort import *  # noqa: F401,F403,E402
from ffigraph.tensor.sort import __all__ as _sort_all  # noqa: E402
from ffigraph.tensor.statistics import *  # noqa: F401,F403,E402
from ffigraph.tensor.statistics import __all__ as _statistics_all  # noqa: E402
__all__ += list(_extra_ops_all) + list(_sort_all) + list(_statistics_all)
from ffigraph.tensor.construct import *  # noqa: F401,F403,E402  (issue 27: eye, tri, ...)
from ffigraph.tensor.construct import __all__ as _construct_all  # noqa: E402
from ffigraph.tensor.layout import *  # noqa: F401,F403,E402
from ffigraph.tensor.layout import __all__ as _layout_all  # noqa: E402
__all__ += list(_construct_all) + list(_layout_all)
from ffigraph.tensor.aliases import *  # noqa: F401,F403,E402  (PyTensor's other names: square, expit, pi, ...)
from ffigraph.tensor.aliases import __all__ as _aliases_all  # noqa: E402
__all__ += list(_aliases_all)
from ffigraph.tensor.products import *  # noqa: F401,F403,E402  (issue 27: matmul, tensordot, ...)
from ffigraph.tensor.products import __all__ as _products_all  # noqa: E402
__all__ += list(_products_all)

# PyTensor's linear-algebra modules (pt.linalg.cholesky, pytensor.tensor.slinalg / nlinalg), imported
# when first used: a graph without linear algebra does not load them
_LAZY_MODULES = ("linalg", "slinalg", "nlinalg")


def __getattr__(name):
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module("ffigraph.tensor." + name)
    raise AttributeError("module 'ffigraph.tensor' has no attribute %r" % (name,))
