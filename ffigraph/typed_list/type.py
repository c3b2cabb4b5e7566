"""``TypedListType``: Theano's type of a Python list whose items all have one type."""
from __future__ import annotations

from ffigraph.graph.basic import Constant, Variable
from ffigraph.graph.type import Type


class TypedListType(Type):
    """A list of values of ``ttype`` (``depth`` > 0: a list of such lists, that many levels deep)."""

    __props__ = ("ttype", "depth")

    def __init__(self, ttype, depth=0):
        if depth < 0:
            raise ValueError("TypedListType: depth must be 0 or more, got %r" % (depth,))
        if not isinstance(ttype, Type):
            raise TypeError("TypedListType: the item type must be a Type, got %r" % (ttype,))
        self.ttype = ttype if depth == 0 else TypedListType(ttype, depth - 1)
        self.depth = depth

    def filter(self, data, strict=False, allow_downcast=None):
        """``data`` as a list of values of the item type (each through its filter)."""
        if not isinstance(data, (list, tuple)):
            raise TypeError("%s: expected a list, got %r of type %s" % (self, data, type(data).__name__))
        if strict and not isinstance(data, list):
            raise TypeError("%s (strict): expected a list, got a %s" % (self, type(data).__name__))
        return [self.ttype.filter(item, strict=strict, allow_downcast=allow_downcast) for item in data]

    def values_eq(self, a, b):
        return len(a) == len(b) and all(self.ttype.values_eq(x, y) for x, y in zip(a, b))

    def values_eq_approx(self, a, b):
        return len(a) == len(b) and all(self.ttype.values_eq_approx(x, y) for x, y in zip(a, b))

    def copy_value(self, data):
        return [self.ttype.copy_value(item) for item in data]

    def constant_key(self, data):
        return tuple(self.ttype.constant_key(item) for item in data)

    def get_depth(self):
        return self.depth

    def make_variable(self, name=None):
        return TypedListVariable(self, None, None, name)

    def make_constant(self, value, name=None):
        return TypedListConstant(self, value, name)

    def __str__(self):
        return "TypedList{%s}" % self.ttype

    __repr__ = __str__


# the list methods of a typed-list variable call the ops of ffigraph.typed_list.basic, which
# imports this module and fills the table as it loads (the package loads both)
LIST_OPS = {}


class _ListOperators:
    def __getitem__(self, index): return LIST_OPS["getitem"](self, index)

    def __len__(self):
        raise TypeError("a symbolic list has no len(); use ffigraph.typed_list.length(l)")

    def append(self, item): return LIST_OPS["append"](self, item)
    def extend(self, other): return LIST_OPS["extend"](self, other)
    def insert(self, index, item): return LIST_OPS["insert"](self, index, item)
    def remove(self, item): return LIST_OPS["remove"](self, item)
    def reverse(self): return LIST_OPS["reverse"](self)
    def count(self, item): return LIST_OPS["count"](self, item)
    def ind(self, item): return LIST_OPS["index"](self, item)   # (Theano's name: a variable's .index is its output position)

    @property
    def ttype(self):
        return self.type.ttype

    @property
    def dtype(self):
        return getattr(self.type.ttype, "dtype", None)

    @property
    def ndim(self):
        return getattr(self.type.ttype, "ndim", None)


class TypedListVariable(_ListOperators, Variable):
    """A variable of a TypedListType."""


class TypedListConstant(_ListOperators, Constant):
    """A constant list."""

    __hash__ = Constant.__hash__
