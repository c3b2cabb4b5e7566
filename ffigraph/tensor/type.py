"""``TensorType``: an n-d numpy array of one dtype, with a static size or None per axis."""
from __future__ import annotations

import numpy as np

from ffigraph.config import config
from ffigraph.graph.type import Type
from ffigraph.tensor.ctype import TensorCType

# dtype name -> Theano's one-letter constructor prefix
DTYPE_PREFIX = {
    "int8": "b", "int16": "w", "int32": "i", "int64": "l",
    "float32": "f", "float64": "d", "complex64": "c", "complex128": "z",
}
SUPPORTED_DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
)


def normalize_dtype(dtype):
    """The canonical dtype name, with floatX resolved; raises TypeError for unsupported ones."""
    if dtype is None or dtype == "floatX":
        return config.floatX
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError("unknown dtype %r" % (dtype,)) from None
    if name not in SUPPORTED_DTYPES:
        raise TypeError("dtype %r is not supported (supported: %s)" % (name, ", ".join(SUPPORTED_DTYPES)))
    return name


def normalize_shape(shape):
    """A tuple of int-or-None; Theano's broadcastable booleans are accepted (True -> 1)."""
    out = []
    for s in shape:
        if s is None or s is False or s is np.False_:
            out.append(None)
        elif s is True or s is np.True_:
            out.append(1)
        elif isinstance(s, (int, np.integer)) and s >= 0:
            out.append(int(s))
        else:
            raise ValueError("a static shape entry must be a non-negative int or None, got %r" % (s,))
    return tuple(out)


class TensorType(TensorCType, Type):
    """Values are numpy arrays of ``dtype`` with ``len(shape)`` dimensions.

    ``shape[i]`` is the static size of axis i, or None when it is only known
    at run time. Theano's form ``TensorType(dtype, broadcastable, name=None)`` is the same call:
    a broadcastable pattern (Python or numpy booleans) is a shape of 1 (True) and None (False).
    ``name`` only names the type when it prints; two types of the same dtype and shape are
    equal whatever their names.

    A type is also a constructor, as in Theano (``T.dmatrix`` is a TensorType): ``t("x")`` is a
    new variable of type ``t``.
    """

    __props__ = ("dtype", "shape")
    name = None   # (types pickled before names existed have none)

    def __init__(self, dtype, shape=None, name=None, broadcastable=None):
        if shape is None:
            if broadcastable is None:
                raise TypeError("TensorType needs a shape (tuple of int or None) or a broadcastable pattern")
            shape = tuple(bool(b) for b in broadcastable)
        elif broadcastable is not None:
            raise TypeError("TensorType: give shape or broadcastable, not both")
        if name is not None and not isinstance(name, str):
            raise TypeError("TensorType: name must be a string or None, got %r" % (name,))
        self.dtype = normalize_dtype(dtype)
        self.shape = normalize_shape(shape)
        self.numpy_dtype = np.dtype(self.dtype)
        self.name = name

    def __call__(self, name=None, dtype=None, shape=None):
        """A new variable of this type named ``name``. ``dtype`` or ``shape`` make it of another
        type instead (ffigraph's ``T.dmatrix("x", shape=(2, None))``): an axis this type
        fixes (a row's 1) must keep its size."""
        if dtype is None and shape is None:
            return Type.__call__(self, name)
        if shape is None:
            shape = self.shape
        else:
            shape = normalize_shape(shape)
            if len(shape) != self.ndim or any(s is not None and s != o for s, o in zip(self.shape, shape)):
                raise ValueError("%s: the shape must have %d axes and keep the static sizes %s, got %s"
                                 % (self, self.ndim, _fmt_shape(self.shape), _fmt_shape(shape)))
        return Type.__call__(TensorType(self.dtype if dtype is None else dtype, shape), name)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def broadcastable(self):
        return tuple(s == 1 for s in self.shape)

    def clone(self, dtype=None, shape=None):
        return TensorType(self.dtype if dtype is None else dtype, self.shape if shape is None else shape)

    def __str__(self):
        if self.name is not None:
            return self.name
        if self.name_prefix() is not None:
            return self.name_prefix()
        return "TensorType(%s, shape=%s)" % (self.dtype, self.shape)

    def name_prefix(self):
        """Theano's short name (``dmatrix``, ``fvector``...) when the shape is fully dynamic."""
        kind = {0: "scalar", 1: "vector", 2: "matrix", 3: "tensor3", 4: "tensor4"}.get(self.ndim)
        prefix = DTYPE_PREFIX.get(self.dtype)
        if kind is None or prefix is None or any(s is not None for s in self.shape):
            return None
        return prefix + kind

    # ---- values

    def filter(self, data, strict=False, allow_downcast=None):
        """Return ``data`` as an ndarray of this type, following Theano's casting rules.

        strict: only an ndarray of exactly this dtype is accepted.
        allow_downcast=True: any cast is allowed; None: Python floats may become
        floatX and any value may be cast when no value changes; False: only
        casts that cannot lose precision.
        """
        if strict and not isinstance(data, np.ndarray):
            raise TypeError("expected a numpy.ndarray of dtype %s, got %s" % (self.dtype, _describe(data)))
        src = data if isinstance(data, np.ndarray) else _as_array(data)
        if src.ndim != self.ndim:
            raise TypeError("expected %d dimensions, got %d (shape %s)" % (self.ndim, src.ndim, src.shape))
        if src.dtype != self.numpy_dtype:
            if strict:
                raise TypeError("expected dtype %s, got %s (strict=True allows no cast)" % (self.dtype, src.dtype))
            src = self._cast(data, src, allow_downcast)
        self._check_static_shape(src)
        return src

    def _cast(self, data, src, allow_downcast):
        if allow_downcast:
            return _checked_astype(src, self.numpy_dtype)
        if np.can_cast(src.dtype, self.numpy_dtype, casting="safe"):
            return src.astype(self.numpy_dtype)
        from_python = not isinstance(data, (np.ndarray, np.generic))
        if allow_downcast is None and from_python:
            if isinstance(data, float) and self.dtype == config.floatX:
                return src.astype(self.numpy_dtype)
            converted = _checked_astype(src, self.numpy_dtype)
            with np.errstate(invalid="ignore"):
                same = np.array_equal(converted, src, equal_nan=src.dtype.kind in "fc")
            if same:
                return converted
        raise TypeError("cannot cast a value of dtype %s to %s without losing precision "
                        "(pass allow_downcast=True, or cast the value first)" % (src.dtype, self.dtype))

    def _check_static_shape(self, data):
        for axis, (want, got) in enumerate(zip(self.shape, data.shape)):
            if want is not None and want != got:
                raise ValueError("expected static shape %s, got shape %s (axis %d differs)"
                                 % (_fmt_shape(self.shape), data.shape, axis))

    def values_eq(self, a, b):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and bool(np.all((a == b) | (_isnan(a) & _isnan(b))))

    def values_eq_approx(self, a, b, rtol=None, atol=None, allow_remove_inf=False, allow_remove_nan=False):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind not in "fc":
            return bool(np.all(a == b))
        if rtol is None:
            rtol = 1e-4 if a.dtype == np.float32 or b.dtype == np.float32 else 1e-5
        if atol is None:
            atol = 1e-5 if rtol >= 1e-4 else 1e-8
        close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        if allow_remove_nan:
            close |= _isnan(a)
        if allow_remove_inf:
            close |= np.isinf(a)
        return bool(np.all(close))

    def constant_key(self, data):
        return (data.dtype.str, data.shape, data.tobytes())

    def convert_variable(self, var):
        """``var`` itself when its values are all valid here (same dtype and ndim, no
        conflicting static size); a more static variable may stand for a less static one."""
        other = var.type
        if other == self:
            return var
        if isinstance(other, TensorType) and other.dtype == self.dtype and other.ndim == self.ndim:
            if all(s is None or s == o for s, o in zip(self.shape, other.shape)):
                return var
        return None

    def value_zeros(self, shape):
        return np.zeros(shape, dtype=self.numpy_dtype)

    def make_variable(self, name=None):
        from ffigraph.tensor.variable import TensorVariable

        return TensorVariable(self, None, None, name)

    def make_constant(self, value, name=None):
        from ffigraph.tensor.variable import TensorConstant

        return TensorConstant(self, value, name)


def _as_array(data):
    if isinstance(data, np.ndarray):
        return data
    # range: Theano's loop tutorial calls power(range(10), 2)
    if hasattr(data, "__array__") or isinstance(data, (list, tuple, range, int, float, complex, bool, np.generic)):
        arr = np.asarray(data)
        if arr.dtype.kind in "biufc":
            return arr
        raise TypeError("expected numeric data, got an array of dtype %s from %s" % (arr.dtype, _describe(data)))
    if hasattr(data, "__dlpack__") and hasattr(data, "__dlpack_device__"):
        # any DLPack producer (a CPU tensor of another library): read without a copy
        try:
            arr = np.from_dlpack(data)
        except (BufferError, TypeError, RuntimeError, ValueError) as err:
            raise TypeError("a DLPack value that numpy cannot read (%s): %s" % (err, _describe(data))) from None
        if arr.dtype.kind in "biufc":
            return arr
        raise TypeError("expected numeric data, got a DLPack array of dtype %s" % (arr.dtype,))
    raise TypeError("expected an array-like of numbers, got %s" % _describe(data))


def _checked_astype(src, dtype):
    with np.errstate(invalid="ignore", over="ignore"):
        return src.astype(dtype)


def _isnan(a):
    return np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, dtype=bool)


def _describe(data):
    if isinstance(data, np.ndarray):
        return "ndarray(dtype=%s, shape=%s)" % (data.dtype, data.shape)
    return "a value of type %s" % type(data).__name__


def _fmt_shape(shape):
    text = ", ".join("?" if s is None else str(s) for s in shape)
    return "(%s,)" % text if len(shape) == 1 else "(%s)" % text
