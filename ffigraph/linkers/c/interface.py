"""The C contracts, under the path Theano and PyTensor users know (``link.c.interface``).

They live in ``ffigraph.graph.c_interface``, in the graph layer below the scalar and
tensor ops that implement them; this module re-exports them so the linker path keeps
working.
"""
from ffigraph.graph.c_interface import (CLinkerObject, COp, CType, DelegatedCOp,  # noqa: F401
                                        MethodNotDefined, call_c_method)

__all__ = ["CLinkerObject", "COp", "CType", "DelegatedCOp", "MethodNotDefined", "call_c_method"]
