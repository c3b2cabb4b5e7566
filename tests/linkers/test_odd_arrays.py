"""Odd numpy arrays in every input slot: zero-size, zero strides (broadcast_to), negative strides,
non-native byte order, read-only, Fortran order, 0-d, non-contiguous slices, misaligned data.

Each compiled function (the C linker and the default mode) must give numpy's result, and must
leave its inputs as they were.
"""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ffigraph
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode

MODES = {"c": lambda: Mode(linker="c"), "default": lambda: None}
_FUNCS = {}


def _graphs():
    def elemwise():
        x, y = T.dmatrix("x"), T.dvector("y")
        return [x, y], [T.exp(-abs(x)) * y + x], lambda x, y: [np.exp(-np.abs(x)) * y + x], ["float64"]

    def reduce_int():
        a = T.itensor3("a")
        return [a], [a.sum(axis=1), a.sum()], \
            lambda a: [a.sum(axis=1, dtype="int64"), a.sum(dtype="int64")], ["int64", "int64"]

    def mixed():
        f, b = T.fvector("f"), T.bvector("b")
        s = T.dscalar("s")
        return [f, b, s], [T.cast(f, "float64") * b + s], lambda f, b, s: [f.astype("float64") * b + s], \
            ["float64"]

    # each: inputs, outputs, numpy's answer, and the outputs' dtypes, spelled out (native byte
    # order, whatever the inputs' order: np.dtype("float64") != np.dtype(">f8"))
    return dict(elemwise=elemwise, reduce_int=reduce_int, mixed=mixed)


def compiled(name, mode_name):
    key = (name, mode_name)
    if key not in _FUNCS:
        inputs, outputs, ref, dtypes = _graphs()[name]()
        _FUNCS[key] = (ffigraph.function(inputs, outputs, mode=MODES[mode_name]()), ref, dtypes)
    return _FUNCS[key]


@st.composite
def odd(draw, dtype, shape):
    """An array equal to a value of this dtype and shape, in an odd layout."""
    value = draw(hnp.arrays(dtype, shape, elements=_elements(dtype)))
    kind = draw(st.sampled_from(["plain", "zero_strides", "reversed", "byteswapped", "readonly", "fortran",
                                 "strided", "misaligned"]))
    if kind == "zero_strides" and value.ndim > 0:
        row = value.reshape(-1)[:1] if value.size else value.reshape(-1)
        if value.size:
            value = np.broadcast_to(row.reshape((1,) * value.ndim), value.shape)
    elif kind == "reversed" and value.ndim > 0:
        value = np.ascontiguousarray(value[(slice(None, None, -1),) * value.ndim])[(slice(None, None, -1),) * value.ndim]
    elif kind == "byteswapped":
        value = value.astype(value.dtype.newbyteorder())
    elif kind == "readonly":
        value = value.copy()
        value.flags.writeable = False
    elif kind == "fortran":
        value = np.array(value, order="F")   # (np.asfortranarray makes 0-d arrays 1-d)
    elif kind == "strided" and value.ndim > 0:
        big = np.zeros(tuple(2 * n for n in value.shape), dtype=value.dtype)
        view = big[(slice(None, None, 2),) * value.ndim]
        view[...] = value
        value = view
    elif kind == "misaligned" and value.dtype.itemsize > 1 and value.size:
        raw = np.zeros(value.nbytes + 1, dtype=np.uint8)
        view = np.ndarray(value.shape, value.dtype, raw.data, offset=1)
        view[...] = value
        value = view
    return value


def _elements(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return st.floats(-100, 100, width=dtype.itemsize * 8)
    return st.integers(-50, 50)


def _shapes(ndim):
    return st.tuples(*[st.integers(0, 3)] * ndim)


def _same(got, want, dtype):
    """``got`` is an ndarray of exactly ``dtype`` (spelled out by the graph's table, native byte
    order), numpy's answer ``want`` has it too, and their shapes and values agree."""
    want = np.asarray(want)
    assert isinstance(got, np.ndarray), "expected an ndarray, got %r" % (got,)
    assert got.dtype == np.dtype(dtype), "dtype %s, expected %s" % (got.dtype, np.dtype(dtype))
    assert want.dtype == np.dtype(dtype), "numpy's answer has dtype %s, the test expects %s" % (want.dtype, dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def _check(name, mode_name, args):
    f, ref, dtypes = compiled(name, mode_name)
    before = [(np.array(a, copy=True), a.strides, a.flags.writeable) for a in args]
    got = f(*args)
    got = got if isinstance(got, list) else [got]
    want = ref(*[b[0] for b in before])
    assert len(got) == len(want) == len(dtypes), (len(got), len(want), len(dtypes))
    for g, w, dtype in zip(got, want, dtypes):
        _same(g, w, dtype)
    for a, (copy, strides, writeable) in zip(args, before):
        np.testing.assert_array_equal(a, copy)          # not modified
        assert a.strides == strides and a.flags.writeable == writeable


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(mode_name=st.sampled_from(sorted(MODES)), data=st.data(), rows=st.integers(0, 3), cols=st.integers(0, 3),
       ybroad=st.booleans())
def test_elemwise_odd_inputs(mode_name, data, rows, cols, ybroad):
    x = data.draw(odd("float64", (rows, cols)))
    y = data.draw(odd("float64", (1 if ybroad else cols,)))
    _check("elemwise", mode_name, [x, y])


@SETTINGS
@given(mode_name=st.sampled_from(sorted(MODES)), data=st.data(), shape=_shapes(3))
def test_reduction_odd_inputs(mode_name, data, shape):
    _check("reduce_int", mode_name, [data.draw(odd("int32", shape))])


@SETTINGS
@given(mode_name=st.sampled_from(sorted(MODES)), data=st.data(), n=st.integers(0, 4))
def test_mixed_dtypes_and_0d_odd_inputs(mode_name, data, n):
    f = data.draw(odd("float32", (n,)))
    b = data.draw(odd("int8", (n,)))
    s = data.draw(odd("float64", ()))
    _check("mixed", mode_name, [f, b, s])
