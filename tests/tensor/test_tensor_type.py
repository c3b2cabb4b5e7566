"""TensorType: constructors, static shapes, Theano's filter/casting rules, value comparison."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.tensor.type import TensorType


@pytest.mark.parametrize("prefix,dtype", [("b", "int8"), ("w", "int16"), ("i", "int32"), ("l", "int64"),
                                          ("f", "float32"), ("d", "float64"), ("c", "complex64"),
                                          ("z", "complex128")])
@pytest.mark.parametrize("kind,ndim", [("scalar", 0), ("vector", 1), ("matrix", 2), ("tensor3", 3),
                                       ("tensor4", 4)])
def test_prefixed_constructors(prefix, dtype, kind, ndim):
    v = getattr(T, prefix + kind)("v")
    assert v.dtype == dtype and v.ndim == ndim and v.name == "v"
    assert v.type.shape == (None,) * ndim
    assert str(v.type) == prefix + kind


def test_unprefixed_constructors_use_floatx():
    assert T.matrix().dtype == ffigraph.config.floatX
    with ffigraph.config.change_flags(floatX="float32"):
        assert T.vector().dtype == "float32"
        assert T.scalar(dtype="int32").dtype == "int32"
    assert T.vector().dtype == "float64"


def test_tensor_with_static_shape_and_broadcastable_compat():
    v = T.tensor("float32", (2, None), "v")
    assert v.type.shape == (2, None) and v.name == "v"
    assert TensorType("float64", broadcastable=(True, False)).shape == (1, None)
    assert T.tensor("float64", (1, None)).broadcastable == (True, False)
    with pytest.raises(ValueError):
        TensorType("float64", (-1,))
    with pytest.raises(TypeError, match="not supported"):
        TensorType("float16", (None,))
    with pytest.raises(TypeError, match="unknown dtype"):
        TensorType("nonsense", (None,))


def test_type_equality_and_hash():
    assert TensorType("float64", (None, 2)) == TensorType("float64", (None, 2))
    assert hash(TensorType("float64", (None, 2))) == hash(TensorType("float64", (None, 2)))
    assert TensorType("float64", (None, 2)) != TensorType("float64", (None, None))
    assert TensorType("float64", (None,)) != TensorType("float32", (None,))


class TestFilter:
    t = TensorType("float64", (None, None))

    def test_exact_array_passes_unchanged(self):
        a = np.ones((2, 3))
        assert self.t.filter(a) is a
        assert self.t.filter(a, strict=True) is a

    def test_noncontiguous_and_negative_strides_pass_unchanged(self):
        a = np.arange(12.0).reshape(3, 4)[::-1, ::2]
        assert self.t.filter(a) is a

    def test_strict_rejects_other_dtype_and_non_arrays(self):
        with pytest.raises(TypeError, match="strict"):
            self.t.filter(np.ones((2, 2), dtype="float32"), strict=True)
        with pytest.raises(TypeError, match="ndarray"):
            self.t.filter([[1.0]], strict=True)

    def test_safe_upcast_is_allowed(self):
        out = self.t.filter(np.ones((2, 2), dtype="float32"))
        assert out.dtype == np.float64
        out = self.t.filter(np.ones((2, 2), dtype="int32"))
        assert out.dtype == np.float64

    def test_lossy_downcast_needs_allow_downcast(self):
        f32 = TensorType("float32", (None,))
        with pytest.raises(TypeError, match="allow_downcast"):
            f32.filter(np.array([0.1], dtype="float64"))
        assert f32.filter(np.array([0.1]), allow_downcast=True).dtype == np.float32

    def test_python_values(self):
        i32 = TensorType("int32", (None,))
        assert i32.filter([1, 2, 3]).dtype == np.int32
        with pytest.raises(TypeError):
            i32.filter([1.5, 2.0])  # value would change
        assert i32.filter([1.0, 2.0]).tolist() == [1, 2]  # value-preserving
        with ffigraph.config.change_flags(floatX="float32"):
            f32 = TensorType("float32", ())
            assert f32.filter(0.1).dtype == np.float32  # Python float -> floatX is allowed

    def test_wrong_ndim(self):
        with pytest.raises(TypeError, match="expected 2 dimensions, got 1"):
            self.t.filter(np.ones(3))

    def test_static_shape(self):
        t = TensorType("float64", (2, None))
        t.filter(np.ones((2, 5)))
        with pytest.raises(ValueError, match="static shape"):
            t.filter(np.ones((3, 5)))

    @pytest.mark.parametrize("bad", ["abc", None, {"a": 1}, object(), np.array(["x"])])
    def test_non_numeric_rejected(self, bad):
        with pytest.raises(TypeError):
            self.t.filter(bad)

    def test_bool_and_int_kinds(self):
        b = TensorType("bool", (None,))
        assert b.filter(np.array([True, False])).dtype == np.bool_
        assert b.filter([1, 0]).tolist() == [True, False]
        with pytest.raises(TypeError):
            b.filter([2, 0])


def test_values_eq_and_approx():
    t = TensorType("float64", (None,))
    assert t.values_eq(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    assert not t.values_eq(np.array([1.0]), np.array([1.0 + 1e-9]))
    assert t.values_eq_approx(np.array([1.0]), np.array([1.0 + 1e-9]))
    assert not t.values_eq_approx(np.array([1.0]), np.array([1.1]))
    assert not t.values_eq_approx(np.ones(2), np.ones(3))
    assert t.values_eq_approx(np.array([np.inf, np.nan]), np.array([np.inf, np.nan]))


def test_variable_attributes():
    x = T.dmatrix("x")
    assert x.ndim == 2 and x.dtype == "float64"
    assert x.T.ndim == 2 and x.shape.ndim == 1 and x.shape.dtype == "int64"
    assert x[0].ndim == 1
    assert bool(x)   # Theano's rule (a comparison's result has no truth value: test_theano_api_details.py)
    with pytest.raises(TypeError):
        len(x)


def test_float16_is_refused_by_name_everywhere_a_dtype_comes_in():
    """float16 has no tensors (docs/tutorial/arrays.rst): every way of making one is a
    TypeError naming float16; a float16 array given to a float32 input is widened exactly."""
    import numpy as np

    import ffigraph

    makers = [lambda: T.tensor("float16", (None,)), lambda: ffigraph.shared(np.ones(3, np.float16)),
              lambda: T.as_tensor_variable(np.ones(3, np.float16)), lambda: T.constant(np.float16(1)),
              lambda: T.fvector().astype("float16"), lambda: T.fvector() + np.float16(2),
              lambda: T.fvector().sum(dtype="float16")]
    for make in makers:
        with pytest.raises(TypeError, match="'float16' is not supported"):
            make()
    x = T.fvector("x")
    f = ffigraph.function([x], x * 2)
    got = f(np.array([0.5, 65504.0, -1e-3], np.float16))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.array([0.5, 65504.0, -1e-3], np.float16).astype(np.float32) * 2)
