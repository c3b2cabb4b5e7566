"""Scalar operations: the table every elementwise op is built from."""
from ffigraph.scalar.basic import SCALAR_OPS, SCALAR_TABLE, Cast, ScalarOp, upcast, upgrade_to_float

__all__ = ["SCALAR_OPS", "SCALAR_TABLE", "Cast", "ScalarOp", "upcast", "upgrade_to_float"]
