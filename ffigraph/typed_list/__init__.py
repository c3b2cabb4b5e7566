"""Theano's ``theano.typed_list``: lists of values of one type (Python-only ops; see basic.py)."""
from ffigraph.typed_list.basic import *  # noqa: F401,F403
from ffigraph.typed_list.basic import __all__ as _basic_all
from ffigraph.typed_list.type import TypedListConstant, TypedListType, TypedListVariable

__all__ = list(_basic_all) + ["TypedListType", "TypedListVariable", "TypedListConstant"]
