"""Type-generic ops the compiler inserts or users call on any shaped value.

``DeepCopyOp`` keeps outputs from aliasing inputs or internal storage,
``ViewOp`` is an identity that aliases, ``Shape``/``Shape_i`` read shapes.
Each has a registry keyed by Type class, where a Type registers the C code
that implements the op for its values (the C backend reads these).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply, Variable
from ffigraph.graph.op import Op
from ffigraph.graph.c_interface import MethodNotDefined


def _register(registry, type_cls, code, version, **extra):
    if not isinstance(type_cls, type):
        raise TypeError("register a Type class (not an instance): got %r" % (type_cls,))
    if not isinstance(code, str):
        raise TypeError("the C code for %s must be a string" % type_cls.__name__)
    registry[type_cls] = dict(code=code, version=tuple(version) if version else (), **extra)


def _lookup(registry, type_obj):
    for cls in type(type_obj).__mro__:
        if cls in registry:
            return registry[cls]
    return None


class _RegistryCOp:
    """C code taken from the registry entry of the input's Type class.

    The code is formatted with ``sub`` plus iname, oname and whatever the type's
    ``c_registry_values()`` adds (a tensor type gives ndim, itemsize and ctype).
    """

    def _registry_entry(self, node):
        entry = _lookup(type(self).c_code_and_version, node.inputs[0].type)
        if entry is None:
            raise MethodNotDefined("%s has no C code registered for %s" % (self, type(node.inputs[0].type).__name__))
        return entry

    def _format_values(self, node, inputs, outputs, sub):
        values = dict(sub, iname=inputs[0], oname=outputs[0], i=getattr(self, "i", None))
        extra = getattr(node.inputs[0].type, "c_registry_values", None)
        if extra is not None:
            values.update(extra())
        return values

    def c_code(self, node, name, inputs, outputs, sub):
        entry = self._registry_entry(node)
        values = self._format_values(node, inputs, outputs, sub)
        check = entry.get("check_input", "")
        return ((check % values) + "\n" if check else "") + entry["code"] % values

    def c_code_cache_version_apply(self, node):
        entry = _lookup(type(self).c_code_and_version, node.inputs[0].type)
        return entry["version"] if entry else ()

    def c_code_cache_version(self):
        return ()


class DeepCopyOp(_RegistryCOp, Op):
    """A copy that shares no memory with its input (``type.copy_value``)."""

    __props__ = ()
    c_code_and_version: dict = {}

    def make_node(self, x):
        if not isinstance(x, Variable):
            raise TypeError("deep_copy_op needs a Variable, got %r" % (x,))
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = node.inputs[0].type.copy_value(inputs[0])

    def L_op(self, inputs, outputs, output_grads):
        return [output_grads[0]]

    def infer_shape(self, fgraph, node, input_shapes):
        return list(input_shapes)

    def c_code_for(self, type_obj):
        return _lookup(self.c_code_and_version, type_obj)


class ViewOp(_RegistryCOp, Op):
    """Identity whose output is the input itself (a view, declared in view_map)."""

    __props__ = ()
    view_map = {0: [0]}
    c_code_and_version: dict = {}

    def make_node(self, x):
        if not isinstance(x, Variable):
            raise TypeError("view_op needs a Variable, got %r" % (x,))
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0]

    def L_op(self, inputs, outputs, output_grads):
        return [output_grads[0]]

    def infer_shape(self, fgraph, node, input_shapes):
        return list(input_shapes)

    def c_code_for(self, type_obj):
        return _lookup(self.c_code_and_version, type_obj)


class Shape(_RegistryCOp, Op):
    """The shape of any value with a ``shape`` attribute, as an int64 vector."""

    __props__ = ()
    c_code_and_version: dict = {}

    def make_node(self, x):
        from ffigraph.tensor.basic import as_tensor_variable
        from ffigraph.tensor.type import TensorType

        if not isinstance(x, Variable):
            x = as_tensor_variable(x)
        ndim = getattr(x.type, "ndim", None)
        return Apply(self, [x], [TensorType("int64", (ndim,))()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.asarray(np.shape(inputs[0]), dtype=np.int64)

    def connection_pattern(self, node):
        return [[False]]  # a shape does not change when the values do

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import disconnected_type

        return [disconnected_type()]

    def infer_shape(self, fgraph, node, input_shapes):
        from ffigraph.tensor.basic import constant

        return [(constant(len(input_shapes[0]), dtype="int64"),)]

    def c_code_for(self, type_obj):
        return _lookup(self.c_code_and_version, type_obj)


class Shape_i(_RegistryCOp, Op):
    """Length of axis ``i`` of a value, as an int64 scalar."""

    __props__ = ("i",)
    c_code_and_version: dict = {}

    def __init__(self, i):
        self.i = int(i)

    def make_node(self, x):
        from ffigraph.tensor.basic import as_tensor_variable
        from ffigraph.tensor.type import TensorType

        if not isinstance(x, Variable):
            x = as_tensor_variable(x)
        ndim = getattr(x.type, "ndim", None)
        if ndim is not None and not 0 <= self.i < ndim:
            raise ValueError("Shape_i(%d): %s has only %d dimensions" % (self.i, x, ndim))
        return Apply(self, [x], [TensorType("int64", ())()])

    def perform(self, node, inputs, output_storage):
        shape = np.shape(inputs[0])
        if self.i >= len(shape):
            raise ValueError("Shape_i(%d): value of shape %s has too few dimensions" % (self.i, shape))
        output_storage[0][0] = np.asarray(shape[self.i], dtype=np.int64)

    def connection_pattern(self, node):
        return [[False]]  # a shape does not change when the values do

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import disconnected_type

        return [disconnected_type()]

    def infer_shape(self, fgraph, node, input_shapes):
        return [()]

    def c_code_for(self, type_obj):
        return _lookup(self.c_code_and_version, type_obj)


deep_copy_op = DeepCopyOp()
view_op = ViewOp()
shape = Shape()


def register_deep_copy_op_c_code(typ, code, version=()):
    """C code copying ``%(iname)s`` into a fresh ``%(oname)s`` for values of Type class ``typ``."""
    _register(DeepCopyOp.c_code_and_version, typ, code, version)


def register_view_op_c_code(typ, code, version=()):
    """C code making ``%(oname)s`` a view of ``%(iname)s`` for values of Type class ``typ``."""
    _register(ViewOp.c_code_and_version, typ, code, version)


def register_shape_c_code(typ, code, version=()):
    """C code writing the shape of ``%(iname)s`` into the int64 vector ``%(oname)s``."""
    _register(Shape.c_code_and_version, typ, code, version)


def register_shape_i_c_code(typ, code, check_input, version=()):
    """C code writing axis ``%(i)s`` of ``%(iname)s`` into ``%(oname)s``; ``check_input``
    verifies the value has more than ``%(i)s`` dimensions."""
    if not isinstance(check_input, str):
        raise TypeError("check_input for %s must be a string of C code" % typ.__name__)
    _register(Shape_i.c_code_and_version, typ, code, version, check_input=check_input)
