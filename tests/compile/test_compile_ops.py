"""DeepCopyOp, ViewOp, Shape, Shape_i and their C-code registries keyed by Type class."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile import ops
from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.graph.type import Type
from ffigraph.tensor.type import TensorType


def test_registries_are_keyed_by_type_class_and_follow_subclasses(monkeypatch):
    for op_cls in (ops.DeepCopyOp, ops.ViewOp, ops.Shape, ops.Shape_i):
        monkeypatch.setattr(op_cls, "c_code_and_version", {})

    class MyTensorType(TensorType):
        pass

    ops.register_deep_copy_op_c_code(TensorType, "/* copy %(iname)s -> %(oname)s */", version=(1,))
    ops.register_view_op_c_code(TensorType, "/* view */")
    ops.register_shape_c_code(TensorType, "/* shape */", version=(2,))
    ops.register_shape_i_c_code(TensorType, "/* dim %(i)s */", "/* check */", version=(3,))
    sub_type = MyTensorType("float64", (None,))
    assert ops.deep_copy_op.c_code_for(sub_type) == {"code": "/* copy %(iname)s -> %(oname)s */", "version": (1,)}
    assert ops.view_op.c_code_for(sub_type)["version"] == ()
    assert ops.shape.c_code_for(sub_type)["code"] == "/* shape */"
    entry = ops.Shape_i(0).c_code_for(sub_type)
    assert entry["check_input"] == "/* check */" and entry["version"] == (3,)
    with pytest.raises(TypeError, match="Type class"):
        ops.register_view_op_c_code(sub_type, "x")
    with pytest.raises(TypeError, match="string"):
        ops.register_shape_i_c_code(TensorType, "x", check_input=None)


def test_unregistered_type_has_no_c_code():
    class Other(Type):   # a Type class that no registry knows (not a TensorType subclass)
        def filter(self, data, strict=False, allow_downcast=None):
            return data

    tensor = TensorType("float64", (None,))
    for op in (ops.deep_copy_op, ops.view_op, ops.shape, ops.Shape_i(0)):
        assert op.c_code_for(Other()) is None, op
        assert op.c_code_for(object()) is None, op
        assert op.c_code_for(tensor) is not None, op   # while tensors have theirs
    node = ops.view_op(Other()("o")).owner
    with pytest.raises(MethodNotDefined, match="ViewOp has no C code registered for Other"):
        node.op.c_code(node, "n", ["o"], ["z"], {})


def test_shape_ops_perform(mode):
    x = T.dtensor3("x")
    f = function([x], [ops.shape(x), ops.Shape_i(1)(x), ops.view_op(x) * 1, ops.deep_copy_op(x)], mode=mode)
    v = np.zeros((2, 0, 4))
    s, s1, view, copy = f(v)
    assert s.dtype == np.int64 and s.tolist() == [2, 0, 4]
    assert s1.dtype == np.int64 and s1.ndim == 0 and int(s1) == 0
    assert view.shape == copy.shape == (2, 0, 4)
    with pytest.raises(ValueError, match="only 3 dimensions"):
        ops.Shape_i(3)(x)


def test_deep_copy_op_copies(mode):
    x = T.dvector("x")
    f = function([x], ops.deep_copy_op(x), mode=mode)
    v = np.arange(3.0)
    out = f(v)
    assert not np.shares_memory(out, v)
    np.testing.assert_array_equal(out, v)
