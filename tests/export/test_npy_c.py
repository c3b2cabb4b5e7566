"""The plain-C .npy reader and writer (ffigraph/export/c/ffg_npy.c), against numpy.

tests/export/c/npy_driver.c is compiled with ffg_npy.c once per test process (with
AddressSanitizer and UBSan when gcc has them, so that a leak, an overflow or a
stray read aborts the driver) and run as a subprocess: numpy writes files for
it to read, and loads the files it writes.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import struct
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
ABI_DIR = os.path.join(ROOT, "ffigraph", "abi")
NPY_DIR = os.path.join(ROOT, "ffigraph", "export", "c")
NPY_C = os.path.join(NPY_DIR, "ffg_npy.c")
DRIVER_C = os.path.join(ROOT, "tests", "export", "c", "npy_driver.c")
INCLUDES = ["-I", ABI_DIR, "-I", NPY_DIR]
STRICT_C = ["-Wall", "-Wextra", "-pedantic", "-Werror"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
# A sanitizer finding aborts (a signal, never the driver's own exit status 1). Leak
# checking doubles a run's time, so only the error paths, where a block is most
# easily forgotten, ask for it; valgrind checks the others for leaks.
ASAN_OPTIONS = "abort_on_error=1:detect_leaks=%d"
UBSAN_OPTIONS = "abort_on_error=1:print_stacktrace=1"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None,
                                reason="gcc is not on PATH: the C .npy reader/writer cannot be compiled")

FFG_ERR_TYPE, FFG_ERR_VALUE = 1, 2

# numpy dtype -> (FFG_DTYPE_* code, bits)
DTYPES = {
    "bool": (6, 8),
    "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
    "float32": (2, 32), "float64": (2, 64),
    "complex64": (5, 64), "complex128": (5, 128),
}
SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]


def build_driver(tmp_path_factory, flags):
    """(path of the driver built with flags, or None; gcc's output)."""
    out = tmp_path_factory.mktemp("npy_driver") / "npy_driver"
    cmd = ["gcc", "-std=c99", "-O1", "-g"] + STRICT_C + flags + INCLUDES + [DRIVER_C, NPY_C, "-o", str(out)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    return (str(out) if proc.returncode == 0 else None), proc.stdout


@pytest.fixture(scope="module")
def plain_driver(tmp_path_factory):
    out, log = build_driver(tmp_path_factory, [])
    assert out is not None, log
    return out


@pytest.fixture(scope="module")
def driver(request, tmp_path_factory):
    """The driver with AddressSanitizer and UBSan, or the plain one where gcc cannot build or run those."""
    out, _ = build_driver(tmp_path_factory, SANITIZE)
    if out is not None:
        probe = subprocess.run([out, "descr", "2", "64", "1"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, env=driver_env(True))
        if probe.returncode == 0 and probe.stdout == "<f8\n":
            return out
    return request.getfixturevalue("plain_driver")


def driver_env(leaks):
    env = dict(os.environ)
    env.update(ASAN_OPTIONS=ASAN_OPTIONS % leaks, UBSAN_OPTIONS=UBSAN_OPTIONS)
    return env


def run(driver, *args, prefix=(), leaks=False):
    proc = subprocess.run(list(prefix) + [driver] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, env=driver_env(leaks), timeout=60)
    assert proc.returncode >= 0, "the driver died of signal %d:\n%s" % (-proc.returncode, proc.stderr)
    return proc


def run_ok(driver, *args):
    proc = run(driver, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def run_error(driver, *args):
    """Runs a command that must fail cleanly; returns (FFG code, message)."""
    proc = run(driver, *args, leaks=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    m = re.match(r"error (\d+): (.*)\n\Z", proc.stdout)
    assert m, proc.stdout
    return int(m.group(1)), m.group(2)


def saved(arr, **kw):
    buf = io.BytesIO()
    np.save(buf, arr, **kw)
    return buf.getvalue()


def crafted(header, data=b"", version=(1, 0), magic=b"\x93NUMPY"):
    """A .npy file with a hand-written header (numpy's padding is not needed by readers)."""
    text = header.encode("latin1") + b"\n"
    length = struct.pack("<H" if version[0] == 1 else "<I", len(text))
    return magic + bytes(bytearray(version)) + length + text + data


def sample(dtype, shape):
    """An array of shape holding the awkward values of dtype: extremes, NaN, infinities, -0.0."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        pool = [True, False, False, True, True]
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = [int(info.min), int(info.max), 0, 1, int(info.max) - 1, int(info.min) + 1, 7, 100]
    else:
        info = np.finfo(dtype)  # of the real and imaginary parts, for complex dtypes
        real = [np.nan, np.inf, -np.inf, -0.0, 0.0, float(info.max), float(info.tiny) / 8, 1 / 3, -2.5]
        pool = real if dtype.kind == "f" else [complex(a, b) for a, b in zip(real, real[1:] + real[:1])]
    n = int(np.prod(shape, dtype=np.int64))
    return np.array([pool[i % len(pool)] for i in range(n)], dtype=dtype).reshape(shape)


def parse_read(out, dtype):
    """The driver's `read` output as (code, bits, shape, array of dtype)."""
    lines = out.splitlines()
    _, code, bits = lines[0].split()
    ndim = int(lines[1].split()[1])
    shape = tuple(int(d) for d in lines[2].split()[1:])
    assert len(shape) == ndim
    kind = np.dtype(dtype).kind
    if kind == "c":
        values = [complex(*(float(x) for x in v.split(","))) for v in lines[3:]]
    elif kind == "f":
        values = [float(v) for v in lines[3:]]
    else:
        values = [int(v) for v in lines[3:]]
    return int(code), int(bits), shape, np.array(values, dtype=dtype).reshape(shape)


def header_of(data):
    """(version, header length incl. magic, header text) of a .npy file's bytes."""
    assert data[:6] == b"\x93NUMPY"
    if data[6] == 1:
        (hlen,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (hlen,) = struct.unpack("<I", data[8:12])
        start = 12
    return (data[6], data[7]), start + hlen, data[start:start + hlen].decode("latin1")


def assert_same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)) or "0d")
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_read_and_copy_round_trip(driver, tmp_path, dtype, shape):
    arr = sample(dtype, shape)
    src, dst = tmp_path / "in.npy", tmp_path / "out.npy"
    np.save(str(src), arr)

    # copy prints what it read, as read does, then writes it.
    code, bits, got_shape, values = parse_read(run_ok(driver, "copy", src, dst), dtype)
    assert (code, bits) == DTYPES[dtype]
    assert got_shape == shape
    assert_same(values, arr)
    assert_same(np.load(str(dst)), arr)
    version, total, text = header_of(dst.read_bytes())
    assert version == (1, 0) and total % 64 == 0 and text.endswith("\n")
    assert text.startswith("{'descr': '%s', 'fortran_order': False, 'shape': %r, }"
                           % (np.dtype(dtype).str, shape))


def test_copy_keeps_nan_payloads_and_signed_zero_bit_for_bit(driver, tmp_path):
    bits = np.array([0x7FF0000000000001, 0xFFF8000000000000, 0x8000000000000000, 0x7FF8DEADBEEF0001,
                     0x0000000000000001], dtype=np.uint64)
    arr = bits.view(np.float64)
    src, dst = tmp_path / "in.npy", tmp_path / "out.npy"
    np.save(str(src), arr)
    run_ok(driver, "copy", src, dst)
    assert np.load(str(dst)).view(np.uint64).tolist() == bits.tolist()


def write_version(path, arr, version):
    with open(str(path), "wb") as f:
        np.lib.format.write_array(f, arr, version=version)


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)], ids=lambda v: "%d.%d" % v)
def test_reads_every_format_version(driver, tmp_path, version):
    arr = sample("complex64", (2, 3))
    src = tmp_path / "in.npy"
    try:
        write_version(src, arr, version)
    except ValueError as e:
        pytest.skip("this numpy cannot write version %s: %s" % (version, e))
    assert header_of(src.read_bytes())[0] == version
    assert_same(parse_read(run_ok(driver, "copy", src, tmp_path / "out.npy"), "complex64")[3], arr)
    assert_same(np.load(str(tmp_path / "out.npy")), arr)


I4_DATA = np.arange(6, dtype="<i4").tobytes()


@pytest.mark.parametrize("header", [
    "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
    "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}",
    '{"descr": "<i4", "fortran_order": False, "shape": (2,3,)}',
    "{ 'descr' : '<i4' ,\t'fortran_order':False,'shape':( 2 , 3 ) , }   ",
    "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3L), }",
], ids=["numpy", "key_order", "double_quotes", "spacing", "python2_longs"])
@pytest.mark.filterwarnings("ignore:Reading `.npy` or `.npz` file required additional header parsing")
def test_header_spellings_numpy_also_reads(driver, tmp_path, header):
    src = tmp_path / "in.npy"
    src.write_bytes(crafted(header, I4_DATA))
    want = np.arange(6, dtype="<i4").reshape(2, 3)
    assert_same(np.load(str(src)), want)
    assert_same(parse_read(run_ok(driver, "read", src), "int32")[3], want)


def test_read_without_error_struct(driver, tmp_path):
    good, bad = tmp_path / "good.npy", tmp_path / "bad.npy"
    np.save(str(good), np.arange(3.0))
    bad.write_bytes(saved(np.arange(3.0))[:-1])
    assert run(driver, "read-noerr", good).stdout == "code 0\n"
    proc = run(driver, "read-noerr", bad)
    assert proc.returncode == 1 and proc.stdout == "code %d\n" % FFG_ERR_VALUE


# ------------------------------------------------------------------ the writer

BASE = {"f8": np.arange(12, dtype=np.float64).reshape(3, 4) + 0.25,
        "i2": (np.arange(12) - 6).astype(np.int16).reshape(3, 4)}
VIEWS = {
    "contiguous": lambda a: a,
    "transpose": lambda a: a.T,
    "reversed": lambda a: a[::-1, ::-1],
    "odd_columns": lambda a: a[:, 1::2],
    "column_up": lambda a: a[::-1, 1],
    "broadcast": lambda a: np.broadcast_to(a, (2, 3, 4)),
    "repeat_first": lambda a: np.broadcast_to(a[:, :1], (3, 4)),
    "scalar": lambda a: a[1, 2, ...],
    "empty": lambda a: a[:0],
}


def test_writes_strided_and_negative_stride_views(driver, tmp_path):
    prefix = str(tmp_path / "v_")
    written = run_ok(driver, "views", prefix).split()
    assert len(written) == len(BASE) * len(VIEWS)
    for dtype, base in BASE.items():
        for name, view in VIEWS.items():
            path = "%s%s_%s.npy" % (prefix, dtype, name)
            want = np.array(view(base), order="C")
            got = np.load(path)
            assert_same(got, want)
            data = open(path, "rb").read()
            version, total, text = header_of(data)
            assert version == (1, 0) and total % 64 == 0 and len(data) == total + want.nbytes, name
            # numpy's own parser agrees with the header.
            with open(path, "rb") as f:
                np.lib.format.read_magic(f)
                assert np.lib.format.read_array_header_1_0(f) == (want.shape, False, want.dtype)


@pytest.mark.parametrize("case, code, words", [
    ("cuda", FFG_ERR_TYPE, ["device type 2", "only CPU"]),
    ("float16", FFG_ERR_TYPE, ["code 2, bits 16, lanes 1", "no .npy form"]),
    ("lanes2", FFG_ERR_TYPE, ["lanes 2"]),
    ("null_data", FFG_ERR_VALUE, ["data is NULL", "96 bytes"]),
    ("null_shape", FFG_ERR_VALUE, ["shape is NULL but ndim is 2"]),
    ("ndim33", FFG_ERR_TYPE, ["33 dimensions", "0 to 32"]),
    ("ndim_negative", FFG_ERR_TYPE, ["-1 dimensions"]),
    ("negative_dim", FFG_ERR_VALUE, ["dimension 1 is negative (-4)"]),
    ("overflow", FFG_ERR_VALUE, ["(4611686018427387904, 4)", "2**63-1"]),
])
def test_writer_refuses_bad_tensors(driver, tmp_path, case, code, words):
    out = tmp_path / "out.npy"
    got_code, message = run_error(driver, "badwrite", case, out)
    assert got_code == code
    for w in words:
        assert w in message, message
    assert str(out) in message
    assert not out.exists(), "nothing may be written for a refused tensor"


@pytest.mark.parametrize("case, want", [
    ("ok", np.zeros((3, 4))),
    ("null_data_empty", np.zeros((0, 4))),
])
def test_writer_accepts_null_data_only_when_empty(driver, tmp_path, case, want):
    out = tmp_path / "out.npy"
    run_ok(driver, "badwrite", case, out)
    assert_same(np.load(str(out)), want)


def test_writer_accepts_null_shape_for_0d(driver, tmp_path):
    out = tmp_path / "out.npy"
    run_ok(driver, "badwrite", "null_shape_scalar", out)
    assert_same(np.load(str(out)), np.array(0.0))


def test_writer_without_error_struct(driver, tmp_path):
    proc = run(driver, "badwrite", "null_err", tmp_path / "out.npy")
    assert proc.stdout == "code %d\n" % FFG_ERR_TYPE


def test_writer_reports_unwritable_paths(driver, tmp_path):
    code, message = run_error(driver, "badwrite", "ok", tmp_path / "no_such_dir" / "out.npy")
    assert code == FFG_ERR_VALUE and "cannot open" in message and "for writing" in message
    if os.path.exists("/dev/full"):
        code, message = run_error(driver, "badwrite", "ok", "/dev/full")
        assert code == FFG_ERR_VALUE and message.startswith("cannot write '/dev/full'")


@pytest.mark.parametrize("code, bits, lanes, want", [
    (6, 8, 1, "|b1"), (0, 8, 1, "|i1"), (0, 64, 1, "<i8"), (1, 8, 1, "|u1"), (1, 16, 1, "<u2"),
    (2, 32, 1, "<f4"), (2, 64, 1, "<f8"), (5, 64, 1, "<c8"), (5, 128, 1, "<c16"),
    (2, 16, 1, "NULL"), (6, 1, 1, "NULL"), (2, 64, 2, "NULL"), (3, 64, 1, "NULL"), (5, 32, 1, "NULL"),
])
def test_descr(driver, code, bits, lanes, want):
    assert run_ok(driver, "descr", code, bits, lanes) == want + "\n"


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_descr_agrees_with_numpy(driver, dtype):
    code, bits = DTYPES[dtype]
    assert run_ok(driver, "descr", code, bits, 1).strip() == np.dtype(dtype).str


# ------------------------------------------------------------------ what the reader refuses

F8_HEADER = "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }"
F8_DATA = np.arange(6.0).tobytes()
F8_FILE = saved(np.arange(6.0))

ERROR_CASES = [
    # (id, file bytes, FFG code, words the message must hold)
    ("fortran_order", lambda: saved(np.asfortranarray(np.ones((2, 3)))), FFG_ERR_TYPE,
     ["Fortran order", "np.ascontiguousarray"]),
    ("big_endian", lambda: saved(np.arange(3, dtype=">f8")), FFG_ERR_TYPE,
     ["big-endian", "'>f8'", "newbyteorder('<')"]),
    ("big_endian_int16", lambda: saved(np.arange(3, dtype=">i2")), FFG_ERR_TYPE, ["big-endian", "'>i2'"]),
    ("float16", lambda: saved(np.ones(3, np.float16)), FFG_ERR_TYPE,
     ["dtype '<f2' is not supported by the ffigraph ABI", "(supported: |b1, |i1, <i2", "<c16)"]),
    ("object", lambda: saved(np.array([1, "a"], dtype=object), allow_pickle=True), FFG_ERR_TYPE,
     ["dtype '|O' is not supported"]),
    ("structured", lambda: saved(np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])), FFG_ERR_TYPE,
     ["dtype '[('a', '<i4'), ('b', '<f8')]' is not supported"]),
    ("unicode", lambda: saved(np.array(["ab", "c"])), FFG_ERR_TYPE, ["dtype '<U2' is not supported"]),
    ("bytes", lambda: saved(np.array([b"ab"])), FFG_ERR_TYPE, ["dtype '|S2' is not supported"]),
    ("datetime", lambda: saved(np.array(["2020-01-01"], dtype="datetime64[D]")), FFG_ERR_TYPE,
     ["dtype '<M8[D]' is not supported"]),
    ("native_order_spelling", lambda: crafted(F8_HEADER.replace("<f8", "=f8"), F8_DATA), FFG_ERR_TYPE,
     ["dtype '=f8' is not supported"]),
    ("truncated", lambda: F8_FILE[:-3], FFG_ERR_VALUE,
     ["the data is 45 bytes", "shape (6,) of dtype '<f8' needs exactly 48", "truncated"]),
    ("trailing_bytes", lambda: F8_FILE + b"xy", FFG_ERR_VALUE,
     ["the data is 50 bytes", "needs exactly 48", "trailing bytes"]),
    ("empty_data", lambda: F8_FILE[:len(F8_FILE) - 48], FFG_ERR_VALUE, ["the data is 0 bytes"]),
    ("huge_shape_tiny_file", lambda: crafted(F8_HEADER.replace("(6,)", "(%d,)" % 2 ** 40), F8_DATA),
     FFG_ERR_VALUE, ["the data is 48 bytes", "needs exactly 8796093022208", "truncated"]),
    ("bad_magic", lambda: b"\x93NUMPX" + F8_FILE[6:], FFG_ERR_VALUE, ["is not a .npy file", "\\x93NUMPY"]),
    ("empty_file", lambda: b"", FFG_ERR_VALUE, ["is not a .npy file"]),
    ("text_file", lambda: b"hello", FFG_ERR_VALUE, ["is not a .npy file"]),
    ("no_version", lambda: b"\x93NUMPY\x01", FFG_ERR_VALUE, ["ends inside the format version"]),
    ("version_4_0", lambda: crafted(F8_HEADER, F8_DATA, version=(4, 0)), FFG_ERR_VALUE,
     ["format version 4.0 is not supported", "1.0, 2.0, 3.0"]),
    ("version_1_1", lambda: crafted(F8_HEADER, F8_DATA, version=(1, 1)), FFG_ERR_VALUE, ["version 1.1"]),
    ("no_header_length", lambda: b"\x93NUMPY\x02\x00\x10\x00", FFG_ERR_VALUE, ["ends inside the header length"]),
    ("header_cut_short", lambda: crafted(F8_HEADER)[:30], FFG_ERR_VALUE, ["ends inside the header"]),
    ("header_length_absurd", lambda: b"\x93NUMPY\x02\x00" + struct.pack("<I", 2 ** 31) + b"{}", FFG_ERR_VALUE,
     ["claims 2147483648 bytes"]),
    ("nul_in_header", lambda: crafted(F8_HEADER + "\0", F8_DATA), FFG_ERR_VALUE, ["NUL byte"]),
    ("missing_shape", lambda: crafted("{'descr': '<f8', 'fortran_order': False, }", F8_DATA), FFG_ERR_VALUE,
     ["has no 'shape' key", "\"{'descr': '<f8', 'fortran_order': False, }\""]),
    ("missing_descr", lambda: crafted("{'fortran_order': False, 'shape': (6,)}", F8_DATA), FFG_ERR_VALUE,
     ["has no 'descr' key"]),
    ("missing_fortran_order", lambda: crafted("{'descr': '<f8', 'shape': (6,)}", F8_DATA), FFG_ERR_VALUE,
     ["has no 'fortran_order' key"]),
    ("empty_header", lambda: crafted("", F8_DATA), FFG_ERR_VALUE,
     ["cannot parse the .npy header (expected a dict): it ends early"]),
    ("not_a_dict", lambda: crafted("['descr', '<f8']", F8_DATA), FFG_ERR_VALUE,
     ["(expected a dict) at \"['descr', '<f8']\""]),
    ("unclosed_shape", lambda: crafted("{'descr': '<f8', 'fortran_order': False, 'shape': (6, 1}", F8_DATA),
     FFG_ERR_VALUE, ["(expected ',' or ')' in the shape) at \"}\""]),
    ("unclosed_dict", lambda: crafted("{'descr': '<f8', 'fortran_order': False, 'shape': (6,)", F8_DATA),
     FFG_ERR_VALUE, ["(expected ',' or '}'): it ends early"]),
    ("unterminated_string", lambda: crafted("{'descr': '<f8", F8_DATA), FFG_ERR_VALUE, ["unterminated string"]),
    ("text_after_dict", lambda: crafted(F8_HEADER + " x", F8_DATA), FFG_ERR_VALUE,
     ["(unexpected text after the dict) at \"x\""]),
    ("unknown_key", lambda: crafted(F8_HEADER[:-1] + "'extra': 1}", F8_DATA), FFG_ERR_VALUE,
     ["(unexpected key) at \"'extra': 1}\""]),
    ("repeated_key", lambda: crafted(F8_HEADER[:-1] + "'shape': (6,)}", F8_DATA), FFG_ERR_VALUE,
     ["(repeated key) at \"'shape': (6,)}\""]),
    ("fortran_order_not_bool", lambda: crafted(F8_HEADER.replace("False", "0"), F8_DATA), FFG_ERR_VALUE,
     ["expected True or False"]),
    ("shape_not_a_tuple", lambda: crafted(F8_HEADER.replace("(6,)", "(6)"), F8_DATA), FFG_ERR_VALUE,
     ["a 1-d shape is written (n,)"]),
    ("shape_a_list", lambda: crafted(F8_HEADER.replace("(6,)", "[6]"), F8_DATA), FFG_ERR_VALUE,
     ["(expected a tuple) at \"[6], }\""]),
    ("shape_not_numbers", lambda: crafted(F8_HEADER.replace("(6,)", "(6, x)"), F8_DATA), FFG_ERR_VALUE,
     ["expected a dimension"]),
    ("escaped_string", lambda: crafted(F8_HEADER.replace("<f8", "<f\\x38"), F8_DATA), FFG_ERR_VALUE,
     ["escapes in strings are not supported"]),
    ("ndim_33", lambda: crafted(F8_HEADER.replace("(6,)", repr((1,) * 33)), F8_DATA[:8]), FFG_ERR_TYPE,
     ["33 dimensions", "0 to 32 (FFG_MAX_NDIM)"]),
    ("negative_dim", lambda: crafted(F8_HEADER.replace("(6,)", "(-2, 3)"), F8_DATA), FFG_ERR_VALUE,
     ["dimension 0 is negative (-2)"]),
    ("overflow", lambda: crafted(F8_HEADER.replace("(6,)", "(%d, 4)" % 2 ** 62), F8_DATA[:8]), FFG_ERR_VALUE,
     ["shape (4611686018427387904, 4) of dtype '<f8' needs more than 2**63-1 bytes"]),
    ("overflow_by_itemsize", lambda: crafted(F8_HEADER.replace("(6,)", "(%d,)" % 2 ** 61), F8_DATA[:8]),
     FFG_ERR_VALUE, ["more than 2**63-1 bytes"]),
    ("dim_beyond_int64", lambda: crafted(F8_HEADER.replace("(6,)", "(%d,)" % 2 ** 63), F8_DATA), FFG_ERR_VALUE,
     ["a dimension does not fit in 64 bits"]),
]


@pytest.mark.parametrize("make, code, words", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_reader_refuses(driver, tmp_path, make, code, words):
    src = tmp_path / "bad.npy"
    src.write_bytes(make())
    got_code, message = run_error(driver, "read", src)
    assert got_code == code, message
    assert message.startswith("'%s'" % src), message
    for w in words:
        assert w in message, message


@pytest.mark.parametrize("case", ["big_endian", "truncated", "ndim_33"])
def test_copy_writes_nothing_after_a_failed_read(driver, tmp_path, case):
    src, dst = tmp_path / "bad.npy", tmp_path / "out.npy"
    src.write_bytes(dict((c[0], c[1]) for c in ERROR_CASES)[case]())
    assert run_error(driver, "copy", src, dst) == run_error(driver, "read", src)
    assert not dst.exists()


def test_reader_accepts_empty_array_with_huge_other_dims(driver, tmp_path):
    """A zero dimension makes the array empty, however large the others are."""
    src = tmp_path / "in.npy"
    src.write_bytes(crafted(F8_HEADER.replace("(6,)", "(%d, 0, 4)" % 2 ** 62)))
    assert run_ok(driver, "read", src).splitlines() == ["dtype 2 64", "ndim 3", "shape %d 0 4" % 2 ** 62]


def test_reader_reports_missing_file_and_directory(driver, tmp_path):
    missing = tmp_path / "missing.npy"
    code, message = run_error(driver, "read", missing)
    assert code == FFG_ERR_VALUE and message == "cannot open '%s': %s" % (missing, os.strerror(2))
    code, message = run_error(driver, "read", tmp_path)
    assert code == FFG_ERR_VALUE and message.startswith("cannot read '%s': " % tmp_path)


# ------------------------------------------------------------------ how it builds


@pytest.mark.parametrize("std", ["c99", "c11"])
def test_compiles_cleanly_as_strict_c(tmp_path, std):
    cmd = ["gcc", "-std=" + std, "-O2", "-c"] + STRICT_C + INCLUDES + [NPY_C, "-o", str(tmp_path / "ffg_npy.o")]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout


def test_header_compiles_as_cxx11(tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not on PATH")
    src = tmp_path / "use.cpp"
    src.write_text(u'#include "ffg_npy.h"\n'
                   u"int main() {\n"
                   u"    FfgNpyArray a = FfgNpyArray();\n"
                   u"    FfgError err;\n"
                   u"    FfgDtype f8 = {FFG_DTYPE_FLOAT, 64, 1};\n"
                   u'    int32_t rc = ffg_npy_read("x.npy", &a, &err);\n'
                   u'    rc |= ffg_npy_write("y.npy", &a.tensor, &err);\n'
                   u"    ffg_npy_free(&a);\n"
                   u"    return rc + (ffg_npy_descr(f8) == 0);\n"
                   u"}\n")
    cmd = ["g++", "-std=c++11", "-fsyntax-only"] + STRICT_C + INCLUDES + [str(src)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout


def test_valgrind_finds_no_errors_or_leaks(plain_driver, tmp_path):
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.skip("valgrind is not on PATH")
    good, truncated = tmp_path / "good.npy", tmp_path / "truncated.npy"
    np.save(str(good), sample("complex128", (2, 3, 4)))
    truncated.write_bytes(F8_FILE[:-3])
    vg = [valgrind, "-q", "--error-exitcode=9", "--leak-check=full", "--errors-for-leak-kinds=definite"]
    for args, status in [
        (["copy", good, tmp_path / "out.npy"], 0),    # read, print, write
        (["views", str(tmp_path / "v_")], 0),
        (["read", truncated], 1),
    ]:
        proc = run(plain_driver, *args, prefix=vg)
        assert proc.returncode == status, (args, proc.stdout, proc.stderr)
