"""Theano's ``typed_list`` ops: lists of values of one type in a graph.

Python-only, as the issue allows and the README lists: a list has no C layout in the ABI, so
these ops have no C code; the mixed linkers (``cvm``, ``c|py``) run them between their compiled
parts, and a function that holds one cannot be exported. Every op returns a new list (the
``inplace`` flags of Theano's ops are accepted, and the result is still a copy).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply, Variable
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable
from ffigraph.tensor.type import TensorType
from ffigraph.typed_list.type import LIST_OPS, TypedListType


def _as_list(x, what):
    if isinstance(x, Variable) and isinstance(x.type, TypedListType):
        return x
    raise TypeError("%s: %r is not a typed list (make one with TypedListType(ttype)() or make_list)" % (what, x))


def _as_item(lst, item, what):
    ttype = lst.type.ttype
    try:
        return ttype.filter_variable(item if isinstance(item, Variable) else as_tensor_variable(item)
                                     if isinstance(ttype, TensorType) else item)
    except TypeError as err:
        raise TypeError("%s: the item must be of the list's type %s: %s" % (what, ttype, err)) from None


def _as_index(index, what):
    index = as_tensor_variable(index)
    if index.ndim != 0 or np.dtype(index.dtype).kind not in "iu":
        raise TypeError("%s: the index must be an integer scalar, got %s of type %s" % (what, index, index.type))
    return index


def _same(a, b, ttype):
    try:
        return ttype.values_eq(a, b)
    except (TypeError, ValueError):
        return False


class _ListOp(Op):
    __props__ = ("inplace",)

    def __init__(self, inplace=False):
        self.inplace = bool(inplace)

    def infer_shape(self, fgraph, node, input_shapes):
        raise NotImplementedError("%s: a list has no shape" % self)


class GetItem(Op):
    """``l[i]`` (an item) or ``l[a:b:c]`` (a list)."""

    __props__ = ()

    def make_node(self, lst, index):
        lst = _as_list(lst, "getitem")
        if isinstance(index, slice):
            parts = [None if p is None else _as_index(p, "getitem") for p in (index.start, index.stop, index.step)]
            given = [p for p in parts if p is not None]
            return _SliceItems(tuple(p is not None for p in parts)).make_node(lst, *given)
        return Apply(self, [lst, _as_index(index, "getitem")], [lst.type.ttype()])

    def perform(self, node, inputs, output_storage):
        lst, index = inputs
        try:
            output_storage[0][0] = node.outputs[0].type.copy_value(lst[int(index)])
        except IndexError:
            raise IndexError("getitem: index %d is out of range for a list of %d items" % (int(index), len(lst))) from None


class _SliceItems(Op):
    """``l[a:b:c]``; ``given`` says which of start, stop, step are inputs."""

    __props__ = ("given",)

    def __init__(self, given):
        self.given = tuple(bool(g) for g in given)

    def make_node(self, lst, *parts):
        return Apply(self, [lst] + list(parts), [lst.type()])

    def perform(self, node, inputs, output_storage):
        lst, values = inputs[0], iter(inputs[1:])
        bounds = [int(next(values)) if g else None for g in self.given]
        if bounds[2] == 0:
            raise ValueError("getitem: slice step cannot be zero")
        output_storage[0][0] = list(lst[slice(*bounds)])


class Append(_ListOp):
    """The list with ``item`` added at the end."""

    def make_node(self, lst, item):
        lst = _as_list(lst, "append")
        return Apply(self, [lst, _as_item(lst, item, "append")], [lst.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = list(inputs[0]) + [inputs[1]]


class Extend(_ListOp):
    """The list followed by the items of another list of the same type."""

    def make_node(self, lst, other):
        lst, other = _as_list(lst, "extend"), _as_list(other, "extend")
        if other.type != lst.type:
            raise TypeError("extend: %s cannot extend %s" % (other.type, lst.type))
        return Apply(self, [lst, other], [lst.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = list(inputs[0]) + list(inputs[1])


class Insert(_ListOp):
    """The list with ``item`` inserted before position ``index`` (Python's ``list.insert``)."""

    def make_node(self, lst, index, item):
        lst = _as_list(lst, "insert")
        return Apply(self, [lst, _as_index(index, "insert"), _as_item(lst, item, "insert")], [lst.type()])

    def perform(self, node, inputs, output_storage):
        out = list(inputs[0])
        out.insert(int(inputs[1]), inputs[2])
        output_storage[0][0] = out


class Remove(_ListOp):
    """The list without the first item equal to ``item`` (ValueError when there is none)."""

    def make_node(self, lst, item):
        lst = _as_list(lst, "remove")
        return Apply(self, [lst, _as_item(lst, item, "remove")], [lst.type()])

    def perform(self, node, inputs, output_storage):
        lst, item = inputs
        ttype = node.inputs[0].type.ttype
        for k, value in enumerate(lst):
            if _same(value, item, ttype):
                output_storage[0][0] = list(lst[:k]) + list(lst[k + 1:])
                return
        raise ValueError("remove: the item is not in the list")


class Reverse(_ListOp):
    """The list in reverse order."""

    def make_node(self, lst):
        lst = _as_list(lst, "reverse")
        return Apply(self, [lst], [lst.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = list(reversed(inputs[0]))


class _Search(Op):
    """An int64 scalar found by comparing each item with ``item`` (the item type's ``values_eq``)."""

    __props__ = ()
    what = None

    def make_node(self, lst, item):
        lst = _as_list(lst, self.what)
        return Apply(self, [lst, _as_item(lst, item, self.what)], [TensorType("int64", ())()])

    def perform(self, node, inputs, output_storage):
        lst, item = inputs
        ttype = node.inputs[0].type.ttype
        output_storage[0][0] = np.asarray(self.found([_same(v, item, ttype) for v in lst]), dtype="int64")


class Index(_Search):
    """The position of the first item equal to ``item`` (ValueError when there is none)."""

    what = "index"

    def found(self, equal):
        if True not in equal:
            raise ValueError("index: the item is not in the list")
        return equal.index(True)


class Count(_Search):
    """How many items equal ``item``."""

    what = "count"

    def found(self, equal):
        return sum(equal)


class Length(Op):
    """The number of items, an int64 scalar."""

    __props__ = ()

    def make_node(self, lst):
        lst = _as_list(lst, "length")
        return Apply(self, [lst], [TensorType("int64", ())()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.asarray(len(inputs[0]), dtype="int64")


class MakeList(Op):
    """A list of the given variables, which must share one type."""

    __props__ = ()

    def make_node(self, items):
        items = [as_tensor_variable(v) if not isinstance(v, Variable) else v for v in items]
        if not items:
            raise ValueError("make_list: give at least one item (the list's type is the items' type)")
        ttype = items[0].type
        for k, v in enumerate(items):
            if v.type != ttype:
                raise TypeError("make_list: item %d has type %s, item 0 %s; a typed list holds one type"
                                % (k, v.type, ttype))
        return Apply(self, items, [TypedListType(ttype)()])

    def __call__(self, items, **kwargs):
        return Op.__call__(self, items, **kwargs)

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = [node.inputs[0].type.copy_value(v) for v in inputs]


getitem = GetItem()
append = Append()
extend = Extend()
insert = Insert()
remove = Remove()
reverse = Reverse()
index_ = Index()
count = Count()
length = Length()
make_list = MakeList()

LIST_OPS.update(getitem=getitem, append=append, extend=extend, insert=insert, remove=remove, reverse=reverse,
                index=index_, count=count)

__all__ = ["GetItem", "Append", "Extend", "Insert", "Remove", "Reverse", "Index", "Count", "Length", "MakeList",
           "getitem", "append", "extend", "insert", "remove", "reverse", "index_", "count", "length", "make_list"]
