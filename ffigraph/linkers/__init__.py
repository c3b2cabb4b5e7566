"""Linkers: from a FunctionGraph to something that runs (Python reference; C backends later)."""
from ffigraph.linkers.basic import Container, Linker, PerformLinker, make_storage_map

__all__ = ["Container", "Linker", "PerformLinker", "make_storage_map"]
