"""The plain-C backend: contracts, code generation, building, loading and the C linkers."""
from ffigraph.linkers.c.build import CompileError
from ffigraph.graph.c_interface import CLinkerObject, COp, CType, MethodNotDefined
from ffigraph.linkers.c.linker import CLinker, CVMLinker, OpWiseCLinker

__all__ = ["CompileError", "CLinkerObject", "COp", "CType", "MethodNotDefined", "CLinker", "CVMLinker",
           "OpWiseCLinker"]
