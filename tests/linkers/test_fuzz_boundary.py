"""Fuzzing the boundary: P_run of a few compiled graphs fed arbitrary descriptors.

A bounded run of tools/fuzz (the seeded driver of tools/fuzz/fuzz_run.c, built with the
graph's source under AddressSanitizer + UBSan) must never crash, never accept garbage, never
leak; and it must have run: successes, and every kind of garbage rejected. The rule (what is
garbage, what the fuzzer promises about memory) is written at the top of fuzz_run.c.

Then one regression case per bug the fuzzer found, calling the normally built library through
cffi with the exact descriptor that broke it.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

import cffi
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.abi import ffi
from ffigraph.linkers.c.linker import whole_graph_source
from ffigraph.linkers.c.load import library_for

from helpers import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "tools", "fuzz"))
import fuzz  # noqa: E402

FFG_OK, FFG_ERR_TYPE, FFG_ERR_VALUE, FFG_ERR_INDEX, FFG_ERR_NOMEM, FFG_ERR_ABI = 0, 1, 2, 3, 4, 5
ITERATIONS = 4000   # per graph: 5 graphs, 20000 executions


@pytest.fixture(scope="module")
def bounded_run():
    with tempfile.TemporaryDirectory(prefix="ffigraph-fuzz-") as work:
        if not fuzz.sanitizers_available(work):
            pytest.skip("gcc cannot build and run a program with -fsanitize=address,undefined (no libasan/libubsan)")
        start = time.time()
        # timeout: a hang guard only (each fuzz process is killed after 300 s, which fails the run);
        # how long the run takes is printed, never asserted (it depends on the machine's load)
        results = fuzz.run_all(ITERATIONS, seed=20261123, workdir=work, jobs=2, timeout=300)
        return results, time.time() - start


def test_bounded_fuzz_run_never_crashes(bounded_run):
    results, seconds = bounded_run
    report = "\n".join(r.report() for r in results) + "\n" + fuzz.summary(results)
    print(report)
    print("the bounded run took %.1f s" % seconds)
    assert [r.name for r in results if r.crashed] == [], report
    for r in results:
        assert r.executions >= ITERATIONS * 0.95, report    # (fresh states an allocator refused do not run)
        assert r.checks == dict(null_err_bad=0, leaks=0, bad_outputs=0, empty_messages=0), report
        assert all(accepted == 0 for _, _, accepted in r.mutations.values()), report
    assert sum(r.executions for r in results) >= 19000


def test_bounded_fuzz_run_reached_every_path(bounded_run):
    """It ran: every graph succeeded sometimes, and every kind of garbage was tried and refused."""
    results, _ = bounded_run
    report = "\n".join(r.report() for r in results)
    for r in results:
        assert r.successes > 0, report
    for mutation, must_fail in (("null_state", 1), ("null_inputs", 1), ("null_outputs", 1), ("null_err", 1),
                                ("n_inputs", 1), ("n_outputs", 1), ("ndim", 1), ("null_shape", 1),
                                ("neg_shape", 1), ("overflow_shape", 1), ("null_data", 1), ("dtype", 1),
                                ("device", 1), ("unaligned", 1), ("stride_overflow", 1), ("huge_empty", 0),
                                ("valid", 0)):
        runs = sum(r.mutations[mutation][0] for r in results)
        rejected = sum(r.mutations[mutation][1] for r in results)
        assert runs > 0, (mutation, report)
        if must_fail and mutation != "null_err":   # (err NULL: nowhere to count a message; the driver checks ABI)
            assert rejected == runs, (mutation, report)
    codes = {}
    for r in results:
        for c, n in r.codes.items():
            codes[c] = codes.get(c, 0) + n
    for code in (FFG_OK, FFG_ERR_TYPE, FFG_ERR_VALUE, FFG_ERR_INDEX, FFG_ERR_NOMEM, FFG_ERR_ABI):
        assert codes.get(code, 0) > 0, (code, codes)


# ------------------------------------------------------------------ regressions (bugs the fuzzer found)


class Raw:
    """A compiled graph's library called directly, descriptors built by hand."""

    def __init__(self, inputs, outputs):
        f = ffigraph.function(inputs, outputs)
        self.lib = library_for(whole_graph_source(f.maker.fgraph))
        self.state, self.err = self.lib.new_state()
        self.keep = []
        self.n_out = len(outputs)

    def tensor(self, t, array=None, shape=None, strides=None, data=None, byte_offset=0):
        dtype = array.dtype if array is not None else None
        t.device.device_type = 1
        t.ndim = len(shape)
        t.dtype.code, t.dtype.bits, t.dtype.lanes = {"f": 2, "i": 0, "u": 1}[dtype.kind], dtype.itemsize * 8, 1
        s = ffi.new("int64_t[]", list(shape) or [0])
        st = ffi.new("int64_t[]", list(strides) or [0]) if strides is not None else ffi.NULL
        self.keep += [s, st, array]
        t.shape = s
        t.strides = st
        t.data = data if data is not None else ffi.cast("void *", array.ctypes.data)
        t.byte_offset = byte_offset

    def run(self, specs, offers=None):
        ins = ffi.new("FfgTensor[]", len(specs))
        for k, spec in enumerate(specs):
            self.tensor(ins[k], **spec)
        outs = ffi.new("FfgOutput[]", self.n_out)
        for k, (buf, cap) in enumerate(offers or []):
            outs[k].host_buffer = buf
            outs[k].host_capacity = cap
        code = self.lib.run(self.state, ins, len(specs), outs, self.n_out, self.err)
        message = ffi.string(self.err.message).decode()
        self.keep.append(outs)
        return code, message, outs

    def release(self, outs):
        """Owned blocks go back with free(): P_create was given no allocator (the documented rule)."""
        for k in range(self.n_out):
            if outs[k].alias_of == -1 and outs[k].base != ffi.NULL:
                _libc.free(_libc_ffi.cast("void *", int(ffi.cast("uintptr_t", outs[k].base))))
                outs[k].base = ffi.NULL


_libc_ffi = cffi.FFI()
_libc_ffi.cdef("void free(void *);")
_libc = _libc_ffi.dlopen(None)


def test_regression_unaligned_input_is_an_error():
    """Was a misaligned load (UBSan) in every op: data + byte_offset not aligned for the dtype."""
    y = T.dvector("y")
    raw = Raw([y], [T.exp(y)])
    buf = np.zeros(9, dtype="float64")
    for spec in (dict(array=buf, shape=(3,), data=ffi.cast("char *", buf.ctypes.data) + 1),
                 dict(array=buf, shape=(3,), byte_offset=3)):
        code, message, _ = raw.run([spec])
        assert code == FFG_ERR_VALUE and "not aligned" in message, message


def test_regression_strides_beyond_int64_are_an_error():
    """Was a signed overflow / wild pointer: strides whose byte reach no memory can have."""
    z = T.lvector("z")
    raw = Raw([z], [T.sum(z)])
    buf = np.arange(4, dtype="int64")
    for stride in (2**62, -2**62, -(2**63), 2**63 - 1, -(buf.ctypes.data // 8) - 1):
        code, message, _ = raw.run([dict(array=buf, shape=(3,), strides=(stride,))])
        assert code == FFG_ERR_VALUE and "strides reach" in message, (stride, message)
    code, _, outs = raw.run([dict(array=buf, shape=(3,), strides=(1,))])
    assert code == FFG_OK
    raw.release(outs)


def test_regression_empty_input_with_huge_lengths():
    """Were a signed overflow (the C-order strides of an empty array with huge lengths, its size),
    an index offset overflowing on a huge axis, and a reduction walking 2**62 x 2**63 empty rows
    for ever. An empty array reaches no element: it runs (or fails cleanly), and quickly (the
    minute allowed is a hang guard, not a timing: a walk over 2**62 rows would take centuries)."""
    a = T.itensor3("a")
    raw = Raw([a], [a.sum(axis=1), T.sum(a)])
    buf = np.zeros(1, dtype="int32")
    start = time.time()
    code, message, outs = raw.run([dict(array=buf, shape=(2**62, 2**63 - 1, 0), strides=(5, 7, 9))])
    assert code == FFG_OK, message
    assert outs[0].tensor.shape[0] == 2**62 and outs[0].tensor.shape[1] == 0
    raw.release(outs)
    code, message, outs = raw.run([dict(array=buf, shape=(0, 2**62, 2**63 - 1), data=ffi.NULL)])
    assert code == FFG_OK, message   # sum(axis=1): (0, 2**63 - 1), empty; the sum of nothing: 0
    assert ffi.cast("int64_t *", outs[1].tensor.data)[0] == 0
    raw.release(outs)
    assert time.time() - start < 60, "the empty arrays' calls took a minute: a walk over their huge axes?"
    x, i = T.lmatrix("x"), T.lscalar("i")
    raw = Raw([x, i], [x[i]])
    idx = np.array([2**62 - 5], dtype="int64")
    code, message, outs = raw.run([dict(array=np.zeros(1, "int64"), shape=(2**62, 0), strides=(2**40, 3)),
                                   dict(array=idx, shape=())])
    assert code == FFG_OK, message
    assert outs[0].tensor.shape[0] == 0
    raw.release(outs)


def test_regression_misaligned_offered_block_is_declined():
    """Was a misaligned store: an output block the host offers at an odd address is not used."""
    x = T.dvector("x")
    raw = Raw([x], [x * 2])
    buf = np.arange(3, dtype="float64")
    block = np.zeros(64, dtype="uint8")
    odd = ffi.cast("char *", block.ctypes.data) + 1
    code, message, outs = raw.run([dict(array=buf, shape=(3,))], offers=[(odd, 48)])
    assert code == FFG_OK, message
    assert outs[0].alias_of == -1 and outs[0].base != ffi.NULL   # owned, not written at the odd address
    got = np.frombuffer(ffi.buffer(outs[0].tensor.data, 24), dtype="float64")
    np.testing.assert_array_equal(got, [0, 2, 4])
    raw.release(outs)
    aligned = ffi.cast("char *", block.ctypes.data + (-block.ctypes.data) % 8)
    code, message, outs = raw.run([dict(array=buf, shape=(3,))], offers=[(aligned, 48)])
    assert code == FFG_OK and outs[0].alias_of == -2, message
