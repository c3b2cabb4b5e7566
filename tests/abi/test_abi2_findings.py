"""Each finding of the header-only host review (issue 29) as a test that failed under ABI 1.3.

1 the symbol prefix is discoverable; 2 structs a host allocates or indexes are frozen or carry
struct_size; 3 the description names slots as the user did, maps updates, lists nodes; 4 a failing
large fused node keeps its cause; 5 misuse never crashes or computes wrongly, the record is reset;
6 profiled exports keep P_profile; 7 DLPack in and out, CPU device_id 0 only; 8 the header says
what a host relies on. The C-side checks of the same rules are in test_abi_host.py.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import ffigraph as fg
import ffigraph.tensor as T
from ffigraph.abi import ABI_MAJOR, ABI_VERSION, HEADER_PATH, c_free, ffi, header_text
from ffigraph.compile.mode import Mode
from ffigraph.linkers.c.load import LoadedLibrary

C_MODE = Mode(linker="c")


def _library(f):
    linker = getattr(f.maker.linker, "chosen", None) or f.maker.linker
    return linker.compiled.library


@pytest.fixture(scope="module")
def train():
    """A training step with named shared variables, an unnamed and a named output."""
    x, t = T.dmatrix("x"), T.dvector("t")
    w = fg.shared(np.zeros(3), name="w")
    b = fg.shared(np.float64(0.0), name="b")
    p = T.nnet.sigmoid(T.dot(x, w) + b)
    p.name = "p"
    cost = T.nnet.binary_crossentropy(p, t).mean()
    gw, gb = fg.grad(cost, [w, b])
    return fg.function([x, t], [p, cost], updates=[(w, w - 0.1 * gw), (b, b - 0.1 * gb)], mode=C_MODE)


def _tensor(arr, keep, device_id=0):
    shape = ffi.new("int64_t[]", list(arr.shape) or [0])
    keep.append(shape)
    t = ffi.new("FfgTensor *")
    t.data = ffi.cast("void *", arr.ctypes.data)
    t.device.device_type = 1
    t.device.device_id = device_id
    t.ndim = arr.ndim
    t.dtype.code, t.dtype.bits, t.dtype.lanes = 2, 64, 1
    t.shape = shape
    t.strides = ffi.NULL
    return t


def test_1_the_prefix_is_in_the_entry_table_the_description_and_the_cache_metadata(train):
    lib = _library(train)
    assert ffi.string(lib.api.prefix).decode() == lib.prefix
    assert ffi.string(lib.describe().prefix).decode() == lib.prefix
    with open(os.path.join(os.path.dirname(train.library_path), "meta.json")) as fh:
        assert json.load(fh)["prefix"] == lib.prefix


def test_2_structs_a_host_allocates_are_frozen_or_carry_struct_size(train):
    # frozen for ABI 2 (LP64 sizes, as the header's static asserts fix them)
    assert [ffi.sizeof(s) for s in ("FfgTensor", "FfgOutput", "FfgAllocator", "FfgError", "FfgSlot", "FfgNode",
                                    "FfgNodeProfile", "FfgValueProfile", "FfgProfile")] \
        == [48, 80, 24, 528, 32, 16, 16, 280, 40]
    # the ones a minor may extend start with their size
    for name in ("FfgLibraryApi", "FfgDescription", "FfgCreateOptions"):
        assert ffi.offsetof(name, "struct_size") == 0
    lib = _library(train)
    assert lib.api.struct_size == ffi.sizeof("FfgLibraryApi")
    assert lib.describe().struct_size == ffi.sizeof("FfgDescription")
    text = header_text()
    assert "A minor may only" in text and "frozen for the major" in text
    assert ABI_VERSION // 1000 == ABI_MAJOR == 2


def test_3_slots_are_named_as_the_user_named_them_updates_map_to_shared_variables(train):
    lib = _library(train)
    ins, outs = lib.slots()
    names = [s[0] for s in ins + outs]
    assert names == ["x", "t", "w", "b", "p", "output1", "w.update", "b.update"]
    assert len(set(names)) == len(names)
    assert lib.updates() == [-1, -1, 2, 3]     # w.update -> input slot 2 (w), b.update -> 3 (b)
    nodes = lib.node_table()
    assert len(nodes) == lib.describe().n_nodes > 0
    assert all(op and text.startswith(op[:10]) for op, text in nodes)
    # an error's node index points into that table
    with pytest.raises(ValueError) as info:
        train(np.ones((2, 3)), np.ones(5))
    assert 0 <= info.value.failed_node_index < len(nodes)


def test_4_a_failing_large_fused_node_keeps_its_cause():
    x, y = T.dmatrix("x"), T.dmatrix("y")
    e = x
    for i in range(40):
        e = T.exp(T.sin(e) * y + T.cos(x) / (y + i))
    f = fg.function([x, y], e, mode=C_MODE)
    with pytest.raises(ValueError) as info:
        f(np.ones((3, 4)), np.ones((5, 4)))
    assert "cannot be broadcast together: (3, 4) and (5, 4)" in str(info.value)
    linker = getattr(f.maker.linker, "chosen", None) or f.maker.linker
    err = linker.compiled.block.err
    message = ffi.string(err.message).decode()
    cause, _, node_line = message.partition("\n  in node #")
    assert "(3, 4) and (5, 4)" in cause and len(message) < 512
    assert node_line.startswith("%d: Composite{" % err.node) and node_line.endswith("(x, y)")
    assert err.input == -1 and err.detail == 0


def test_5_misuse_is_refused_and_the_record_is_reset(train):
    lib = _library(train)
    counts = []
    alloc = ffi.callback("void *(void *, size_t)", lambda ctx, n: ffi.NULL)
    release = ffi.callback("void (void *, void *)", lambda ctx, p: counts.append(p))
    for fields in (dict(alloc=ffi.NULL, release=release), dict(alloc=alloc, release=ffi.NULL)):
        allocator = ffi.new("FfgAllocator *", fields)
        options = ffi.new("FfgCreateOptions *", dict(struct_size=ffi.sizeof("FfgCreateOptions"),
                                                     abi_version=ABI_VERSION, allocator=allocator))
        err = ffi.new("FfgError *")
        assert lib.create(options, err) == ffi.NULL
        assert err.code == 5 and b"NULL" in ffi.string(err.message)
    err = ffi.new("FfgError *")
    assert lib.create(ffi.NULL, err) == ffi.NULL and err.code == 5   # an ABI 1 habit
    options = ffi.new("FfgCreateOptions *", dict(struct_size=24, abi_version=1003))
    assert lib.create(options, err) == ffi.NULL and b"ABI version 1003" in ffi.string(err.message)
    # a dot whose offered block is its own input: declined, the result right
    x, w = T.dmatrix("x"), T.dmatrix("w")
    d = _library(fg.function([x, w], T.dot(x, w), mode=C_MODE))
    state, err = d.new_state()
    keep = []
    a = np.arange(9.0).reshape(3, 3)
    m = np.arange(9.0).reshape(3, 3)[::-1].copy()
    inputs = ffi.new("FfgTensor[2]")
    inputs[0], inputs[1] = _tensor(a, keep)[0], _tensor(m, keep)[0]
    out = ffi.new("FfgOutput[1]")
    out[0].host_buffer = ffi.cast("void *", a.ctypes.data)
    out[0].host_capacity = a.nbytes
    ffi.memmove(err, b"\x5a" * ffi.sizeof("FfgError"), ffi.sizeof("FfgError"))
    assert d.run(state, inputs, 2, out, 1, err) == 0
    assert (err.node, err.input, err.detail, err.message[0]) == (-1, -1, 0, b"\0")
    assert out[0].alias_of == -1 and out[0].reserved == 0    # an owned block, not the offer
    got = np.frombuffer(ffi.buffer(out[0].tensor.data, 72), dtype=np.float64).reshape(3, 3).copy()
    c_free(out[0].base)
    np.testing.assert_array_equal(got, np.arange(9.0).reshape(3, 3) @ m)


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm")
def test_6_a_profiled_export_keeps_p_profile(tmp_path):
    x = T.dvector("x")
    f = fg.function([x], T.exp(x).sum(), mode=C_MODE, profile=True)
    bundle = f.export(str(tmp_path / "b"), name="prof")
    library = os.path.join(bundle.directory, "libprof.so")
    symbols = subprocess.run(["nm", "-D", "--defined-only", library], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
    assert re.search(r" T ffg_[0-9a-f]{24}_profile$", symbols, re.M), symbols
    with open(os.path.join(bundle.directory, "prof.h")) as fh:
        assert "_profile;" in fh.read()
    loaded = LoadedLibrary(library, re.search(r"(ffg_[0-9a-f]{24})_profile", symbols).group(1))
    try:
        assert loaded.api.profile != ffi.NULL and loaded.describe().flags & 1
    finally:
        loaded.close()


def test_7_dlpack_in_and_out_and_cpu_device_id_zero_only(train):
    x = T.dmatrix("x")
    f = fg.function([x], x * 2, mode=C_MODE)
    a = np.arange(6.0).reshape(2, 3)

    class Producer:   # any object offering DLPack (another library's CPU tensor)
        def __dlpack__(self, **kwargs):
            return a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return a.__dlpack_device__()

    out = f(Producer())
    np.testing.assert_array_equal(np.from_dlpack(out), a * 2)   # outputs are DLPack producers too
    lib = _library(f)
    state, err = lib.new_state()
    keep = []
    inputs = _tensor(a, keep, device_id=1)
    outputs = ffi.new("FfgOutput[1]")
    assert lib.run(state, inputs, 1, outputs, 1, err) == 1
    assert b"device_id 0, got 1" in ffi.string(err.message) and err.input == 0


def test_8_the_header_says_what_a_host_relies_on():
    text = open(HEADER_PATH).read()
    for rule in ("serves one P_run at a time", "P_run needs a non-NULL err", "P_create accepts NULL",
                 "ctx\n * must stay valid", "aligned", "inputs are never written", "An offer is advisory",
                 "release(ctx, NULL) is never called", "valid until the next P_run or\n * P_destroy",
                 "frozen for the major", "ffg_library_api"):
        assert rule in text, rule


def _read(t):
    """A copy of a float64 output tensor, whatever its strides."""
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = [t.strides[i] * 8 for i in range(t.ndim)]
    if 0 in shape:
        return np.zeros(shape)
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + 8
    buf = ffi.buffer(ffi.cast("char *", t.data) + t.byte_offset + lo, hi - lo)
    return np.ndarray(shape, dtype=np.float64, buffer=buf, offset=-lo, strides=strides).copy()


def test_5_offers_overlapping_an_input_are_declined_for_every_kind_of_op():
    """One function whose outputs come from ops that write straight into an offered block; each
    output is offered the memory the input lies in (a wrong answer under ABI 1.3 for dot)."""
    x = T.dmatrix("x")
    spd = T.dot(x, x.T) + 4 * T.eye(4)
    outs = [x + 1, T.exp(x).sum(axis=0), T.dot(x, x), T.nnet.softmax(x), T.sort(x, axis=1), T.cumsum(x, axis=0),
            T.concatenate([x, x]), x[::-1] * 2, T.inc_subtensor(x[1:3], 1.0), T.linalg.cholesky(spd),
            T.linalg.solve(spd, x), x.max(axis=1), T.tanh(T.dot(x, x.T)) * x]
    lib = _library(fg.function([x], outs, mode=C_MODE))
    state, err = lib.new_state()
    big = np.zeros(400)
    a = big[:16].reshape(4, 4)
    a[...] = np.random.default_rng(3).standard_normal((4, 4))
    keep = []
    inputs = _tensor(a, keep)
    n = len(outs)

    def run(offer):
        out = ffi.new("FfgOutput[]", n)
        for k in range(n):
            if offer is not None:
                out[k].host_buffer = ffi.cast("void *", offer.ctypes.data)
                out[k].host_capacity = offer.nbytes
        assert lib.run(state, inputs, 1, out, n, err) == 0, ffi.string(err.message)
        values = [_read(out[k].tensor) for k in range(n)]
        placed = [out[k].alias_of for k in range(n)]
        for k in range(n):
            if out[k].alias_of == -1:
                c_free(out[k].base)
        return values, placed

    expected, _ = run(None)
    before = a.copy()
    got, placed = run(big)                      # every offer overlaps x
    assert -2 not in placed, placed
    np.testing.assert_array_equal(a, before)    # the input was never written
    for k in range(n):
        np.testing.assert_array_equal(got[k], expected[k], err_msg=str(outs[k]))
    spare = np.zeros(400)                       # apart from x, but offered to every output: all decline
    got, placed = run(spare)                    # (ABI 2.0 let the first output take it)
    assert -2 not in placed, placed
    for k in range(n):
        np.testing.assert_array_equal(got[k], expected[k], err_msg=str(outs[k]))
