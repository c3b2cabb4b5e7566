"""Issue 27's breadth checks that the per-module tests leave out: the dtypes beyond those files'
(int8, uint8, uint16, int32, uint64, bool and float32 beside float64), empty and 0-d inputs (or
the clear error an op gives for a 0-d one), negative strides, and gradients with verify_grad.

Which name each module's tests already cover for what is in the report of issue 27; this file
holds only the gaps, cheaply: each test compiles ONE function per linker ("py": each op's
``perform``; "c": the C code of every node) holding all its cases as outputs, calls it on
reversed views of its values (negative strides on every axis), then on empty ones, and compares
every output with numpy's answer: the dtype exactly (numpy's, or spelled out where PyTensor's
rule differs), the shape, and the values.
"""
import warnings

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function, grad
from ffigraph.gradient import verify_grad
from helpers import relayout

LINKERS = ("py", "c")
MODES = {linker: Mode(linker=linker, optimizer=None) for linker in LINKERS}
GRAD_MODE = MODES["c"]
RNG = np.random.default_rng(2027)


def rev(a):
    """``a`` with negative strides on every axis (the same values)."""
    return relayout(np.asarray(a), "reversed")


def ints(dtype, shape, low, high):
    return RNG.integers(low, high, size=shape, endpoint=True).astype(dtype)


class Case:
    """``build(s)`` from the symbols by name, ``ref(v)`` numpy's answer from the values by name;
    ``dtype``: the dtype the result must have (None: numpy's answer's); ``values=False``: only the
    shape and dtype are compared (``empty``)."""

    def __init__(self, label, build, ref, dtype=None, values=True):
        self.label, self.build, self.ref, self.dtype, self.values = label, build, ref, dtype, values


def _assert_same(label, got, want, out_type, dtype, values=True):
    want = np.asarray(want)
    dtype = np.dtype(dtype if dtype is not None else want.dtype)
    assert isinstance(got, np.ndarray), (label, type(got))
    assert got.dtype == dtype, "%s: dtype %s, expected %s" % (label, got.dtype, dtype)
    assert np.dtype(out_type.dtype) == dtype, "%s: the graph declares %s, expected %s" % (label, out_type.dtype, dtype)
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (label, got.shape, want.shape)
    if not values:
        return
    if dtype.kind == "f":
        rtol, atol = (2e-5, 1e-6) if dtype == np.float32 else (1e-10, 1e-12)
        np.testing.assert_allclose(got, want.astype(dtype), rtol=rtol, atol=atol, equal_nan=True, err_msg=label)
    else:
        np.testing.assert_array_equal(got, want.astype(dtype), err_msg=label)


def run_grid(values, cases, rounds=(), linkers=LINKERS):
    """Compile every case of ``cases`` into one function per linker (one symbol per entry of
    ``values``), call it on ``values`` and on each dict of ``rounds`` (entries replacing those of
    ``values``), and compare every output with its case's reference. Returns {linker: function}
    and the symbols' names, in the order the functions take them."""
    names = list(values)
    syms = {k: T.tensor(np.asarray(v).dtype, (None,) * np.ndim(v), name=k) for k, v in values.items()}
    outs = [case.build(syms) for case in cases]
    modes = {linker: MODES.get(linker) or Mode(linker=linker, optimizer=None) for linker in linkers}
    fns = {linker: function([syms[k] for k in names], outs, mode=mode, on_unused_input="ignore")
           for linker, mode in modes.items()}
    for override in ({},) + tuple(rounds):
        vals = dict(values, **override)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            wants = [case.ref(vals) for case in cases]
        for linker, f in fns.items():
            got = f(*[vals[k] for k in names])
            for case, g, w, out in zip(cases, got, wants, outs):
                _assert_same("%s [%s, %s]" % (case.label, linker, "empty" if override else "full"), g, w, out.type,
                             case.dtype, case.values)
    return fns, names


def _raises(exc, build, *fragments):
    with pytest.raises(exc) as info:
        build()
    for frag in fragments:
        assert frag in str(info.value), str(info.value)


# ------------------------------------------------------------------ reductions and statistics


def test_statistics_more_dtypes_empty_and_0d():
    """var/std (int8, uint8, int32), max_and_argmax (int8, uint64 past 2**63; empty), ptp (int8,
    whose range wraps as numpy's; uint8), median (int32, uint8, bool), cumsum/cumprod/diff (int8,
    uint16: numpy's widened accumulators, diff's wrapping), all/any over axes (uint64, int8, uint16),
    each also on an empty input and on a 0-d one."""
    big = np.array([[0, 2 ** 64 - 1, 5, 2 ** 63], [2 ** 63 + 1, 3, 2 ** 64 - 2, 0], [7, 0, 0, 1]], dtype="uint64")
    values = {
        "i8": rev(np.array([[-100, 100, 3, -7], [127, -128, 0, 5], [1, 1, -1, 9]], dtype="int8")),
        "u8": rev(ints("uint8", (3, 4), 0, 255)), "i32": rev(ints("int32", (3, 4), -1000, 1000)),
        "u16": rev(ints("uint16", (3, 4), 0, 9)), "u64": rev(big), "b": rev(RNG.random((3, 4)) < 0.5),
        "s_i8": np.asarray(-3, dtype="int8"), "s_u64": np.asarray(2 ** 64 - 1, dtype="uint64"),
        "s_b": np.asarray(True), "r": rev(RNG.standard_normal((2, 3))),
    }
    empty = {k: np.zeros((0, 4), dtype=values[k].dtype) for k in ("i8", "u8", "i32", "u16", "u64", "b")}
    cases = [
        Case("var int8 ddof", lambda s: T.var(s["i8"], 1, ddof=1), lambda v: np.var(v["i8"], 1, ddof=1)),
        Case("std uint8 keepdims", lambda s: T.std(s["u8"], None, keepdims=True),
             lambda v: np.std(v["u8"], keepdims=True)),
        Case("var int32", lambda s: T.var(s["i32"], 0), lambda v: np.var(v["i32"], 0)),
        Case("std 0-d int8", lambda s: T.std(s["s_i8"]), lambda v: np.std(v["s_i8"])),
        Case("max int8", lambda s: T.max_and_argmax(s["i8"], 1)[0], lambda v: np.max(v["i8"], 1)),
        Case("argmax int8", lambda s: T.max_and_argmax(s["i8"], 1)[1], lambda v: np.argmax(v["i8"], 1)),
        Case("max uint64", lambda s: T.max_and_argmax(s["u64"], -1, keepdims=True)[0],
             lambda v: np.max(v["u64"], -1, keepdims=True)),
        Case("argmax uint64", lambda s: T.max_and_argmax(s["u64"], -1, keepdims=True)[1],
             lambda v: np.argmax(v["u64"], -1, keepdims=True)),
        Case("max 0-d uint64", lambda s: T.max_and_argmax(s["s_u64"])[0], lambda v: np.max(v["s_u64"])),
        Case("argmax 0-d uint64", lambda s: T.max_and_argmax(s["s_u64"])[1], lambda v: np.argmax(v["s_u64"])),
        Case("ptp int8 (wraps)", lambda s: T.ptp(s["i8"], 1), lambda v: np.ptp(v["i8"], 1)),
        Case("ptp uint8", lambda s: T.ptp(s["u8"], -1), lambda v: np.ptp(v["u8"], -1)),
        Case("ptp 0-d", lambda s: T.ptp(s["s_i8"]), lambda v: np.ptp(v["s_i8"])),
        Case("median int32", lambda s: T.median(s["i32"], 1), lambda v: np.median(v["i32"], 1)),
        Case("median uint8", lambda s: T.median(s["u8"], 0), lambda v: np.median(v["u8"], 0)),
        Case("median bool", lambda s: T.median(s["b"], 1), lambda v: np.median(v["b"], 1)),
        Case("median 0-d bool", lambda s: T.median(s["s_b"]), lambda v: np.median(v["s_b"])),
        Case("cumsum int8", lambda s: T.cumsum(s["i8"], 1), lambda v: np.cumsum(v["i8"], 1)),
        Case("cumprod uint16", lambda s: T.cumprod(s["u16"], 0), lambda v: np.cumprod(v["u16"], 0)),
        Case("cumsum 0-d uint64", lambda s: T.cumsum(s["s_u64"]), lambda v: np.cumsum(v["s_u64"])),
        Case("diff int8 (wraps)", lambda s: T.diff(s["i8"], 1, 1), lambda v: np.diff(v["i8"], 1, 1)),
        Case("diff uint8 n=2", lambda s: T.diff(s["u8"], 2, 0), lambda v: np.diff(v["u8"], 2, 0)),
        Case("all uint64", lambda s: T.all(s["u64"], axis=1), lambda v: np.all(v["u64"], 1)),
        Case("any int8 keepdims", lambda s: T.any(s["i8"], axis=(0, 1), keepdims=True),
             lambda v: np.any(v["i8"], (0, 1), keepdims=True)),
        Case("all uint16 axis 0", lambda s: T.all(s["u16"], axis=0), lambda v: np.all(v["u16"], 0)),
        Case("any 0-d", lambda s: T.any(s["s_i8"]), lambda v: np.any(v["s_i8"])),
        Case("max r", lambda s: T.max_and_argmax(s["r"], 0)[0], lambda v: np.max(v["r"], 0)),
        Case("ptp r", lambda s: T.ptp(s["r"], 0), lambda v: np.ptp(v["r"], 0)),
    ]
    fns, names = run_grid(values, cases, [empty])
    # an empty reduced axis: numpy's ValueError, and the function still works afterwards
    for linker, f in fns.items():
        args = [np.zeros((0, 3)) if k == "r" else values[k] for k in names]
        _raises(ValueError, lambda: f(*args), "over an empty axis", "(0, 3)")
        np.testing.assert_array_equal(f(*[values[k] for k in names])[-1], np.ptp(values["r"], 0))
    # 0-d and bool inputs where numpy refuses too: errors naming the function
    s = T.dscalar("s")
    for fn in (T.var, T.std, T.median, T.ptp, T.cumsum, T.cumprod):
        _raises(ValueError, lambda: fn(s, 0), "axis 0 is out of range for 0 dimensions", fn.__name__)
    _raises(ValueError, lambda: T.ptp(T.dmatrix(), 2), "ptp: axis 2 is out of range")
    _raises(TypeError, lambda: T.ptp(T.tensor("bool", (None,))), "ptp", "boolean")


# ------------------------------------------------------------------ construction


def _filled(a, val):
    a = np.array(a, copy=True)
    np.fill_diagonal(a, val)
    return a


def test_construction_more_dtypes_empty_and_0d():
    """eye/tri/identity_like/empty (int8, uint8, uint64, int32), diag/diagonal/tril/triu/
    fill_diagonal (int8, uint16, uint8, bool), trace (numpy's widened sums of bool, int32, uint8),
    linspace/logspace/geomspace with integer and float32 dtypes, full and full_like of 0-d shapes
    and inputs, outer of mixed dtypes and of a 0-d input."""
    values = {
        "n": np.asarray(3), "k": np.asarray(1),
        "i8": rev(ints("int8", (4, 3), -100, 100)), "u16": rev(ints("uint16", (4, 3), 0, 60000)),
        "b": rev(RNG.random((4, 3)) < 0.5), "i32": rev(ints("int32", (4, 3), -9, 9)),
        "u8": rev(ints("uint8", (4, 3), 0, 255)), "t_u8": rev(ints("uint8", (2, 3, 4), 0, 255)),
        "v_i8": rev(ints("int8", (3,), -9, 9)), "v_b": rev(np.array([True, False, True])),
        "s_i8": np.asarray(-7, dtype="int8"), "s_f32": np.asarray(1.5, dtype="float32"),
        "start": rev(np.array([-5.0, 0.5])), "stop": np.asarray(5.0),
    }
    empty = {"n": np.asarray(0), "k": np.asarray(-2), "v_i8": np.zeros(0, "int8"), "v_b": np.zeros(0, bool),
             "t_u8": np.zeros((2, 0, 4), "uint8"), "start": np.zeros(0)}
    empty.update({k: np.zeros((0, 3), dtype=values[k].dtype) for k in ("i8", "u16", "b", "i32", "u8")})
    cases = [
        Case("eye int8", lambda s: T.eye(s["n"], 4, s["k"], dtype="int8"),
             lambda v: np.eye(v["n"], 4, int(v["k"]), dtype="int8")),
        Case("eye uint64", lambda s: T.eye(s["n"], dtype="uint64"), lambda v: np.eye(v["n"], dtype="uint64")),
        Case("tri uint8", lambda s: T.tri(s["n"], 3, s["k"], dtype="uint8"),
             lambda v: np.tri(v["n"], 3, int(v["k"]), dtype="uint8")),
        Case("identity_like int8", lambda s: T.identity_like(s["i8"]),
             lambda v: np.eye(*v["i8"].shape, dtype="int8")),
        Case("identity_like bool", lambda s: T.identity_like(s["b"]), lambda v: np.eye(*v["b"].shape, dtype=bool)),
        Case("empty uint8", lambda s: T.empty((s["n"], 2), dtype="uint8"),
             lambda v: np.empty((v["n"], 2), dtype="uint8"), values=False),
        Case("diag int8", lambda s: T.diag(s["v_i8"], 1), lambda v: np.diag(v["v_i8"], 1)),
        Case("diag bool", lambda s: T.diag(s["v_b"], -2), lambda v: np.diag(v["v_b"], -2)),
        Case("diag of uint16", lambda s: T.diag(s["u16"], -1), lambda v: np.diag(v["u16"], -1)),
        Case("diagonal uint8", lambda s: T.diagonal(s["t_u8"], 1, 2, 0), lambda v: np.diagonal(v["t_u8"], 1, 2, 0)),
        Case("trace bool", lambda s: T.trace(s["b"]), lambda v: np.trace(v["b"])),
        Case("trace int32", lambda s: T.trace(s["i32"], -1), lambda v: np.trace(v["i32"], -1)),
        Case("trace uint8", lambda s: T.trace(s["u8"]), lambda v: np.trace(v["u8"])),
        Case("trace 3-d uint8", lambda s: T.trace(s["t_u8"], 0, 1, 2), lambda v: np.trace(v["t_u8"], 0, 1, 2)),
        Case("tril int8", lambda s: T.tril(s["i8"], 1), lambda v: np.tril(v["i8"], 1)),
        Case("triu uint16", lambda s: T.triu(s["u16"], -1), lambda v: np.triu(v["u16"], -1)),
        Case("tril 3-d uint8", lambda s: T.tril(s["t_u8"], -1), lambda v: np.tril(v["t_u8"], -1)),
        Case("triu bool", lambda s: T.triu(s["b"]), lambda v: np.triu(v["b"])),
        Case("fill_diagonal int8", lambda s: T.fill_diagonal(s["i8"], s["s_i8"]),
             lambda v: _filled(v["i8"], v["s_i8"])),
        Case("fill_diagonal uint16", lambda s: T.fill_diagonal(s["u16"], 7), lambda v: _filled(v["u16"], 7)),
        Case("fill_diagonal bool", lambda s: T.fill_diagonal(s["b"], 1), lambda v: _filled(v["b"], 1)),
        # numpy floors samples for an integer dtype (-1.67 -> -2)
        Case("linspace int32", lambda s: T.linspace(s["start"], s["stop"], s["n"] + 1, dtype="int32"),
             lambda v: np.linspace(v["start"], v["stop"], v["n"] + 1, dtype="int32")),
        Case("linspace uint8", lambda s: T.linspace(0.5, s["stop"], s["n"] + 3, endpoint=False, dtype="uint8"),
             lambda v: np.linspace(0.5, v["stop"], v["n"] + 3, endpoint=False, dtype="uint8")),
        Case("linspace float32", lambda s: T.linspace(s["start"], s["stop"], s["n"], dtype="float32", axis=1),
             lambda v: np.linspace(v["start"], v["stop"], v["n"], dtype="float32", axis=1)),
        Case("logspace float32", lambda s: T.logspace(s["start"], 2.0, s["n"], dtype="float32"),
             lambda v: np.logspace(v["start"], 2.0, v["n"], dtype="float32")),
        Case("logspace int64", lambda s: T.logspace(0, 3, s["n"] + 1, dtype="int64"),
             lambda v: np.logspace(0, 3, v["n"] + 1, dtype="int64")),
        # 10 ** (log(1000) / log(10)) is 999.99...: numpy's log10 gives 1000 (and 10, 100) exactly
        Case("geomspace int32", lambda s: T.geomspace(1, 1000, s["n"] + 1, dtype="int32"),
             lambda v: np.geomspace(1, 1000, v["n"] + 1, dtype="int32")),
        Case("geomspace int16 negative", lambda s: T.geomspace(-1.0, -1000.0, s["n"] + 1, dtype="int16"),
             lambda v: np.geomspace(-1.0, -1000.0, v["n"] + 1, dtype="int16")),
        Case("geomspace float32", lambda s: T.geomspace(2.0, 64.0, s["n"], dtype="float32"),
             lambda v: np.geomspace(2.0, 64.0, v["n"], dtype="float32")),
        Case("full int8", lambda s: T.full((2, s["n"]), s["s_i8"]), lambda v: np.full((2, v["n"]), v["s_i8"])),
        Case("full 0-d shape", lambda s: T.full((), s["s_f32"]), lambda v: np.full((), v["s_f32"])),
        Case("full uint16", lambda s: T.full(s["n"], 3, dtype="uint16"), lambda v: np.full(v["n"], 3, dtype="uint16")),
        Case("full_like 0-d", lambda s: T.full_like(s["s_i8"], 7), lambda v: np.full_like(v["s_i8"], 7)),
        Case("full_like dtype", lambda s: T.full_like(s["i32"], 2.7, dtype="int8"),
             lambda v: np.full_like(v["i32"], 2.7, dtype="int8")),
        Case("full_like uint8", lambda s: T.full_like(s["u8"], 5), lambda v: np.full_like(v["u8"], 5)),
        Case("outer int8 uint8", lambda s: T.outer(s["v_i8"], s["u8"]), lambda v: np.outer(v["v_i8"], v["u8"])),
        Case("outer 0-d float32", lambda s: T.outer(s["s_f32"], s["v_i8"]), lambda v: np.outer(v["s_f32"], v["v_i8"])),
        Case("outer bool", lambda s: T.outer(s["v_b"], s["v_b"]), lambda v: np.outer(v["v_b"], v["v_b"])),
    ]
    run_grid(values, cases, [empty])
    # 0-d (and 1-d) inputs the matrix functions refuse, as numpy does
    s, v = T.bscalar("s"), T.bvector("v")
    _raises(ValueError, lambda: T.identity_like(s), "identity_like", "0 dimensions")
    _raises(ValueError, lambda: T.diag(s), "diag", "0 dimensions")
    for fn in (T.diagonal, T.trace, T.tril, T.triu):
        _raises(ValueError, lambda: fn(s), "0 dimensions", "at least 2")
    _raises(TypeError, lambda: T.fill_diagonal(v, 1), "fill_diagonal", "1 dimensions")   # (PyTensor: TypeError)
    _raises(TypeError, lambda: T.eye(v), "number of rows", "integer scalar")
    _raises(TypeError, lambda: T.linspace(0, 1, v), "linspace: num", "integer scalar")


# ------------------------------------------------------------------ layout


def test_layout_more_dtypes_and_0d():
    """Every layout function on int8, uint16 or uint64 (test_layout.py has float64, float32, int64
    and bool) and on 0-d inputs (stack, hstack, vstack, broadcast_to, broadcast_arrays,
    specify_shape, atleast_Nd, roll, flip, squeeze, repeat, tile), reversed and empty."""
    values = {
        "m": rev(ints("int8", (2, 3), -100, 100)), "t": rev(ints("uint16", (3, 2, 4), 0, 60000)),
        "v": rev(np.array([2 ** 64 - 1, 0, 2 ** 63 + 5], dtype="uint64")),
        "s_i8": np.asarray(-5, dtype="int8"), "s_u64": np.asarray(2 ** 63 + 1, dtype="uint64"),
        "s_b": np.asarray(True), "reps": rev(np.array([1, 0, 2])),
    }
    empty = {"m": np.zeros((0, 3), "int8"), "t": np.zeros((3, 0, 4), "uint16"), "v": np.zeros(0, "uint64")}
    cases = [
        Case("repeat int8", lambda s: T.repeat(s["m"], s["reps"], axis=1), lambda v: np.repeat(v["m"], v["reps"], 1)),
        Case("repeat 0-d", lambda s: T.repeat(s["s_u64"], 2), lambda v: np.repeat(v["s_u64"], 2)),
        Case("tile uint16", lambda s: T.tile(s["t"], (2, 1, 2)), lambda v: np.tile(v["t"], (2, 1, 2))),
        Case("tile 0-d", lambda s: T.tile(s["s_i8"], (2, 3)), lambda v: np.tile(v["s_i8"], (2, 3))),
        Case("squeeze uint64", lambda s: T.squeeze(s["v"].dimshuffle("x", 0, "x")), lambda v: v["v"]),
        Case("squeeze 0-d", lambda s: T.squeeze(s["s_b"]), lambda v: np.squeeze(v["s_b"])),
        Case("swapaxes uint16", lambda s: T.swapaxes(s["t"], 0, -1), lambda v: np.swapaxes(v["t"], 0, -1)),
        Case("moveaxis uint16", lambda s: T.moveaxis(s["t"], [0, 2], [1, 0]),
             lambda v: np.moveaxis(v["t"], [0, 2], [1, 0])),
        Case("roll int8", lambda s: T.roll(s["m"], -1, axis=1), lambda v: np.roll(v["m"], -1, 1)),
        Case("roll flat uint16", lambda s: T.roll(s["t"], 5), lambda v: np.roll(v["t"], 5)),
        Case("roll 0-d", lambda s: T.roll(s["s_u64"], 3), lambda v: np.roll(v["s_u64"], 3)),
        Case("flip uint64", lambda s: T.flip(s["v"]), lambda v: np.flip(v["v"])),
        Case("flip 0-d", lambda s: T.flip(s["s_b"]), lambda v: np.flip(v["s_b"])),
        Case("split uint16 0", lambda s: T.split(s["t"], [1, 3], 2, axis=-1)[0],
             lambda v: np.split(v["t"], [1], axis=-1)[0]),
        Case("split uint16 1", lambda s: T.split(s["t"], [1, 3], 2, axis=-1)[1],
             lambda v: np.split(v["t"], [1], axis=-1)[1]),
        Case("join int8", lambda s: T.join(0, s["m"], s["m"][::-1]), lambda v: np.concatenate([v["m"], v["m"][::-1]])),
        Case("stack 0-d", lambda s: T.stack([s["s_i8"], s["s_i8"]]), lambda v: np.stack([v["s_i8"], v["s_i8"]])),
        Case("stack uint64", lambda s: T.stack([s["v"], s["v"]], axis=1), lambda v: np.stack([v["v"], v["v"]], 1)),
        Case("hstack 0-d", lambda s: T.hstack([s["s_u64"], s["s_u64"]]), lambda v: np.hstack([v["s_u64"]] * 2)),
        Case("vstack 0-d", lambda s: T.vstack([s["s_b"], s["s_b"]]), lambda v: np.vstack([v["s_b"]] * 2)),
        Case("hstack uint64", lambda s: T.hstack([s["v"], s["v"]]), lambda v: np.hstack([v["v"]] * 2)),
        Case("vstack int8", lambda s: T.vstack([s["m"], s["m"]]), lambda v: np.vstack([v["m"]] * 2)),
        Case("broadcast_to uint64", lambda s: T.broadcast_to(s["v"], (2, s["v"].shape[0])),
             lambda v: np.broadcast_to(v["v"], (2, len(v["v"])))),
        Case("broadcast_to 0-d", lambda s: T.broadcast_to(s["s_i8"], (2, 3)),
             lambda v: np.broadcast_to(v["s_i8"], (2, 3))),
        Case("broadcast_arrays 0-d", lambda s: T.broadcast_arrays(s["m"], s["s_i8"])[1],
             lambda v: np.broadcast_arrays(v["m"], v["s_i8"])[1]),
        Case("broadcast_arrays uint16", lambda s: T.broadcast_arrays(s["t"], s["t"][:1, :, :1])[1],
             lambda v: np.broadcast_arrays(v["t"], v["t"][:1, :, :1])[1]),
        Case("specify_shape 0-d", lambda s: T.specify_shape(s["s_u64"], ()), lambda v: v["s_u64"]),
        Case("specify_shape int8", lambda s: T.specify_shape(s["m"], (None, 3)), lambda v: v["m"]),
        Case("atleast_1d 0-d", lambda s: T.atleast_1d(s["s_u64"]), lambda v: np.atleast_1d(v["s_u64"])),
        Case("atleast_2d 0-d", lambda s: T.atleast_2d(s["s_b"]), lambda v: np.atleast_2d(v["s_b"])),
        Case("atleast_3d 0-d", lambda s: T.atleast_3d(s["s_i8"]), lambda v: np.atleast_3d(v["s_i8"])),
        Case("atleast_2d uint64", lambda s: T.atleast_2d(s["v"]), lambda v: np.atleast_2d(v["v"])),
    ]
    run_grid(values, cases, [empty])
    # 0-d inputs where an axis is needed: errors that say so
    s = T.dscalar("s")
    for label, build in [("swapaxes", lambda: T.swapaxes(s, 0, 1)), ("moveaxis", lambda: T.moveaxis(s, 0, 0)),
                         ("squeeze", lambda: T.squeeze(s, 0)), ("flip", lambda: T.flip(s, 0)),
                         ("roll", lambda: T.roll(s, 1, axis=0))]:
        _raises(ValueError, build, label, "out of range for 0 dimensions")
    _raises(ValueError, lambda: T.split(s, [1], 1), "split", "0-d")
    _raises(ValueError, lambda: T.join(0, s, s), "zero-dimensional", "stack")
    _raises(ValueError, lambda: T.specify_shape(s, (1,)), "specify_shape", "0 dimensions")
    _raises(ValueError, lambda: T.broadcast_to(T.dvector("v"), ()), "broadcast_to", "more than the 0")


# ------------------------------------------------------------------ products


def test_products_more_dtypes_empty_and_0d():
    """matmul, tensordot, batched_dot, kron and einsum on int8 x uint8 (int16), int32 x float32
    (float64), bool (numpy's logical sums), uint64 and float32, reversed and with an empty inner
    (summed) axis, and with 0-d operands where numpy takes them."""
    values = {
        "a_i8": rev(ints("int8", (2, 3, 4), -9, 9)), "b_u8": rev(ints("uint8", (2, 4, 2), 0, 200)),
        "a_b": rev(RNG.random((2, 3, 4)) < 0.4), "b_b": rev(RNG.random((2, 4, 2)) < 0.4),
        "a_i32": rev(ints("int32", (2, 3, 4), -50, 50)), "b_f32": rev(RNG.standard_normal((2, 4, 2)).astype("float32")),
        "a_f32": rev(RNG.standard_normal((2, 3, 4)).astype("float32")),
        "m_u64": rev(np.array([[1, 2 ** 40, 3], [0, 7, 2 ** 20]], dtype="uint64")),
        "n_u64": rev(ints("uint64", (3, 2), 0, 9)),
        "s_i8": np.asarray(-3, dtype="int8"), "s_f32": np.asarray(0.5, dtype="float32"),
    }
    empty = {k: np.zeros(values[k].shape[:2] + (0,), values[k].dtype) for k in ("a_i8", "a_b", "a_i32", "a_f32")}
    empty.update({k: np.zeros((2, 0, 2), values[k].dtype) for k in ("b_u8", "b_b", "b_f32")})
    empty.update({"m_u64": np.zeros((2, 0), "uint64"), "n_u64": np.zeros((0, 2), "uint64")})
    cases = [
        Case("matmul int8 uint8", lambda s: s["a_i8"] @ s["b_u8"], lambda v: v["a_i8"] @ v["b_u8"]),
        Case("matmul bool", lambda s: T.matmul(s["a_b"], s["b_b"]), lambda v: np.matmul(v["a_b"], v["b_b"])),
        Case("matmul int32 float32", lambda s: s["a_i32"] @ s["b_f32"], lambda v: v["a_i32"] @ v["b_f32"]),
        Case("matmul float32", lambda s: s["a_f32"] @ s["b_f32"], lambda v: v["a_f32"] @ v["b_f32"]),
        Case("matmul uint64 2-d", lambda s: s["m_u64"] @ s["n_u64"], lambda v: v["m_u64"] @ v["n_u64"]),
        Case("tensordot int32 float32", lambda s: T.tensordot(s["a_i32"], s["b_f32"], [[2, 0], [1, 0]]),
             lambda v: np.tensordot(v["a_i32"], v["b_f32"], [[2, 0], [1, 0]])),
        Case("tensordot bool", lambda s: T.tensordot(s["a_b"], s["b_b"], [[2], [1]]),
             lambda v: np.tensordot(v["a_b"], v["b_b"], [[2], [1]])),
        Case("tensordot 0-d", lambda s: T.tensordot(s["s_f32"], s["n_u64"], 0),
             lambda v: np.tensordot(v["s_f32"], v["n_u64"], 0)),
        Case("batched_dot float32", lambda s: T.batched_dot(s["a_f32"], s["b_f32"]),
             lambda v: np.matmul(v["a_f32"], v["b_f32"])),
        Case("batched_dot int8 uint8", lambda s: T.batched_dot(s["a_i8"], s["b_u8"]),
             lambda v: np.matmul(v["a_i8"], v["b_u8"])),
        Case("batched_dot bool", lambda s: T.batched_dot(s["a_b"], s["b_b"]), lambda v: np.matmul(v["a_b"], v["b_b"])),
        Case("kron uint64", lambda s: T.kron(s["m_u64"], s["n_u64"]), lambda v: np.kron(v["m_u64"], v["n_u64"])),
        Case("kron 0-d", lambda s: T.kron(s["s_i8"], s["n_u64"]), lambda v: np.kron(v["s_i8"], v["n_u64"])),
        Case("kron 0-d 0-d", lambda s: T.kron(s["s_f32"], s["s_f32"]), lambda v: np.kron(v["s_f32"], v["s_f32"])),
        Case("einsum bool", lambda s: T.einsum("bij,bjk->ik", s["a_b"], s["b_b"]),
             lambda v: np.einsum("bij,bjk->ik", v["a_b"], v["b_b"])),
        Case("einsum bool sum", lambda s: T.einsum("bij->i", s["a_b"]), lambda v: np.einsum("bij->i", v["a_b"])),
        Case("einsum int8 uint8", lambda s: T.einsum("bij,bjk->bik", s["a_i8"], s["b_u8"]),
             lambda v: np.einsum("bij,bjk->bik", v["a_i8"], v["b_u8"])),
        Case("einsum float32", lambda s: T.einsum("bij,bjk->kb", s["a_f32"], s["b_f32"]),
             lambda v: np.einsum("bij,bjk->kb", v["a_f32"], v["b_f32"])),
        Case("einsum 0-d", lambda s: T.einsum(",ij->ji", s["s_f32"], s["n_u64"]),
             lambda v: np.einsum(",ij->ji", v["s_f32"], v["n_u64"])),
        Case("einsum 0-d only", lambda s: T.einsum("->", s["s_i8"]), lambda v: np.einsum("->", v["s_i8"])),
    ]
    run_grid(values, cases, [empty])


# ------------------------------------------------------------------ sorting and searching


def test_sorting_more_dtypes_empty_and_0d():
    """sort/argsort (int8, uint64 past 2**63, float32 with NaN, bool), searchsorted with mixed
    signed/unsigned/float dtypes and a 0-d query, nonzero (uint64, bool, float32 NaN), argwhere
    (int8, 0-d uint8), bincount (int8, uint16, with int and float weights), reversed and empty."""
    f32 = np.array([[3.0, np.nan, -1.0, 2.0], [0.0, -np.inf, 2.0, np.nan], [np.inf, 1.5, 0.0, -0.0]], "float32")
    values = {
        "m_i8": rev(ints("int8", (3, 4), -3, 3)), "m_u64": rev(np.array(
            [[2 ** 64 - 1, 0, 2 ** 63, 5], [2 ** 63 - 1, 5, 0, 1], [1, 2 ** 63 + 1, 0, 0]], dtype="uint64")),
        "m_f32": rev(f32), "x_b": rev(RNG.random(7) < 0.5), "x_i8": rev(ints("int8", (7,), -5, 5)),
        "x_u8": rev(ints("uint8", (7,), 0, 250)), "x_f32": rev(np.array([0.5, -1.0, np.nan, 2.0, 0.5], "float32")),
        "q_i64": rev(np.array([-300, -1, 0, 3, 251])), "q_f64": rev(np.array([-0.5, 0.5, 0.50000001, np.nan, 9.0])),
        "s_u8": np.asarray(7, dtype="uint8"),
        "c_i8": rev(np.array([3, 0, 1, 3, 6, 0], dtype="int8")), "c_u16": rev(np.array([2, 2, 0, 9], dtype="uint16")),
        "w_i32": rev(np.array([5, -1, 2, 7, 1, 1], dtype="int32")), "w_f64": rev(np.array([0.5, 1.0, 2.0, 4.0])),
    }
    empty = {k: np.zeros((0,) + values[k].shape[1:], values[k].dtype)
             for k in ("m_i8", "m_u64", "m_f32", "x_b", "x_i8", "x_u8", "x_f32", "q_i64", "q_f64", "c_i8", "c_u16",
                       "w_i32", "w_f64")}
    cases = [
        Case("sort int8", lambda s: T.sort(s["m_i8"], 0), lambda v: np.sort(v["m_i8"], 0)),
        Case("argsort uint64", lambda s: T.argsort(s["m_u64"], 1), lambda v: np.argsort(v["m_u64"], 1, kind="stable")),
        Case("sort uint64 flat", lambda s: T.sort(s["m_u64"], None), lambda v: np.sort(v["m_u64"], None)),
        Case("sort float32", lambda s: T.sort(s["m_f32"]), lambda v: np.sort(v["m_f32"])),
        Case("argsort float32", lambda s: T.argsort(s["m_f32"], 0), lambda v: np.argsort(v["m_f32"], 0, kind="stable")),
        Case("argsort bool", lambda s: T.argsort(s["x_b"]), lambda v: np.argsort(v["x_b"], kind="stable")),
        Case("searchsorted int8/int64", lambda s: T.searchsorted(T.sort(s["x_i8"]), s["q_i64"]),
             lambda v: np.searchsorted(np.sort(v["x_i8"]), v["q_i64"])),
        Case("searchsorted uint8/int64", lambda s: T.searchsorted(T.sort(s["x_u8"]), s["q_i64"], "right"),
             lambda v: np.searchsorted(np.sort(v["x_u8"]), v["q_i64"], "right")),
        Case("searchsorted float32/float64", lambda s: T.searchsorted(T.sort(s["x_f32"]), s["q_f64"]),
             lambda v: np.searchsorted(np.sort(v["x_f32"]), v["q_f64"])),
        Case("searchsorted bool/float64", lambda s: T.searchsorted(T.sort(s["x_b"]), s["q_f64"], "right"),
             lambda v: np.searchsorted(np.sort(v["x_b"]), v["q_f64"], "right")),
        Case("searchsorted 0-d uint8", lambda s: T.searchsorted(T.sort(s["x_u8"]), s["s_u8"]),
             lambda v: np.searchsorted(np.sort(v["x_u8"]), v["s_u8"])),
        Case("nonzero uint64 0", lambda s: T.nonzero(s["m_u64"])[0], lambda v: np.nonzero(v["m_u64"])[0]),
        Case("nonzero uint64 1", lambda s: T.nonzero(s["m_u64"])[1], lambda v: np.nonzero(v["m_u64"])[1]),
        Case("nonzero bool", lambda s: T.nonzero(s["x_b"])[0], lambda v: np.nonzero(v["x_b"])[0]),
        Case("nonzero float32", lambda s: T.nonzero(s["m_f32"], return_matrix=True),
             lambda v: np.array(np.nonzero(v["m_f32"]))),
        Case("argwhere int8", lambda s: T.argwhere(s["m_i8"]), lambda v: np.argwhere(v["m_i8"])),
        Case("argwhere 0-d", lambda s: T.argwhere(s["s_u8"]), lambda v: np.argwhere(v["s_u8"])),
        # weights give float64 (numpy's too, except on an empty input: int64 there)
        Case("bincount int8", lambda s: T.bincount(s["c_i8"], s["w_i32"]), lambda v: np.bincount(v["c_i8"], v["w_i32"]),
             dtype="float64"),
        Case("bincount uint16", lambda s: T.bincount(s["c_u16"], s["w_f64"], minlength=3),
             lambda v: np.bincount(v["c_u16"], v["w_f64"], minlength=3), dtype="float64"),
        Case("bincount uint8", lambda s: T.bincount(s["x_u8"]), lambda v: np.bincount(v["x_u8"])),
    ]
    run_grid(values, cases, [empty])
    _raises(TypeError, lambda: T.bincount(T.lscalar("c")), "bincount", "vector")


def test_unique_dtypes_empty_and_0d():
    """unique (Python-only: numpy.unique under every linker) on int8, bool, float32 with NaN and a
    0-d input, reversed and empty, with every flag."""
    values = {"m": rev(ints("int8", (3, 4), -2, 2)), "x": rev(np.array([True, False, True, True])),
              "f": rev(np.array([1.5, np.nan, -1.0, 1.5, np.nan], "float32")), "s": np.asarray(2.5, "float32")}
    empty = {"m": np.zeros((0, 4), "int8"), "x": np.zeros(0, bool), "f": np.zeros(0, "float32")}
    cases = [Case("unique int8", lambda s: T.unique(s["m"]), lambda v: np.unique(v["m"])),
             Case("unique float32", lambda s: T.unique(s["f"]), lambda v: np.unique(v["f"])),
             Case("unique 0-d", lambda s: T.unique(s["s"]), lambda v: np.unique(v["s"])),
             Case("unique rows", lambda s: T.unique(s["m"], axis=0), lambda v: np.unique(v["m"], axis=0))]
    for k, what in enumerate(("values", "index", "inverse", "counts")):
        cases.append(Case("unique bool " + what, lambda s, k=k: T.unique(s["x"], True, True, True)[k],
                          lambda v, k=k: np.unique(v["x"], True, True, True)[k]))
    run_grid(values, cases, [empty], linkers=("py", "c|py"))


# ------------------------------------------------------------------ gradients


@pytest.mark.finite_differences
def test_gradients_not_covered_elsewhere():
    """verify_grad (C linker, float64) through what the other files' gradient checks leave out: the
    ranges (w.r.t. start and stop), full and full_like (w.r.t. the fill value), broadcast_arrays,
    0-d operands of outer, kron, tensordot and einsum, and products of reversed views (negative
    strides inside the graph)."""
    def fun(start, stop, m, s, t):
        rm, rt = m[::-1, ::-1], t[::-1, :, ::-1]
        parts = [
            T.linspace(start, stop, 4), T.linspace(start, stop, 3, endpoint=False, axis=-1),
            T.logspace(start, stop, 3, base=2.0), T.geomspace(stop + 3.0, start + 3.0, 4),
            T.full((2, 2), s), T.full_like(m, s), T.broadcast_arrays(m, s)[1], T.broadcast_arrays(rm[:1], m)[0],
            T.outer(s, rm[0]), T.kron(s, rm), T.tensordot(s, m, 0), T.einsum(",ij->ji", s, rm),
            T.batched_dot(rt, rt.dimshuffle(0, 2, 1)),
        ]
        return T.concatenate([p.flatten() for p in parts])

    rng = np.random.default_rng(3)
    # start and stop > 0 and distinct (the geomspace ends)
    pt = [np.array([0.3, 0.7]), np.array(1.4), rng.standard_normal((3, 4)), np.array(1.3),
          rng.standard_normal((2, 3, 4))]
    verify_grad(fun, pt, mode=GRAD_MODE, rng=np.random.default_rng(4))


@pytest.mark.finite_differences
def test_float32_gradients():
    """verify_grad on float32 inputs (C linker) through sum, prod and mean with ``dtype=`` and
    ``acc_dtype=`` (a float64 result or accumulator: still a float32 gradient), var, std, linspace
    and matmul, on reversed views. The gradient w.r.t. a float32 input is float32 (checked on the
    graph first)."""
    def parts(x, y):
        rx = x[::-1, ::-1]
        return [
            T.sum(rx, axis=1, acc_dtype="float64"), T.sum(x, dtype="float64"), T.prod(rx, axis=0, dtype="float64"),
            T.prod(x, acc_dtype="float64"), T.mean(rx, dtype="float64"), T.mean(x, axis=0, acc_dtype="float64"),
            T.var(rx, 0, ddof=1), T.std(x, None, 1, True, corrected=True), T.linspace(y, x[0, 0], 3, dtype="float32"),
            rx @ x.T,
        ]

    x, y = T.fmatrix("x"), T.fscalar("y")
    for k, part in enumerate(parts(x, y)):
        gx, gy = grad(T.sum(part), [x, y], disconnected_inputs="ignore")
        assert (gx.dtype, gy.dtype) == ("float32", "float32"), (k, gx.dtype, gy.dtype)

    def fun(x, y):
        return T.concatenate([T.cast(p, "float32").flatten() for p in parts(x, y)])

    rng = np.random.default_rng(5)
    # away from 0 and near 1 (products of 12 values)
    point = (rng.permutation(12).reshape(3, 4) * 0.05 + 0.7) * np.where(rng.random((3, 4)) < 0.3, -1, 1)
    verify_grad(fun, [point.astype("float32"), np.asarray(1.25, "float32")], mode=GRAD_MODE,
                rng=np.random.default_rng(6))
