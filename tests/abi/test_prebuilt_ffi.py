"""The prebuilt cffi modules (ffigraph.abi.prebuilt): in step with the declarations they were made
from, the same structs as an FFI parsed now, and a stale one is never used."""
import importlib
import os
import sys

import cffi
import pytest

from ffigraph import abi
from ffigraph.abi import ffi, prebuilt
from ffigraph.linkers.c import callshim

MODULES = [(abi.ffi_cdef(), abi.FFI_MODULE, ffi), (callshim._CDEF, callshim.FFI_MODULE, callshim._shim_ffi)]

STRUCTS = ["FfgTensor", "FfgOutput", "FfgError", "FfgAllocator", "FfgSlot", "FfgDescription", "FfgDtype",
           "FfgDevice"]


def _shape(an_ffi, ctype):
    """What matters of a C type for calls and memory (the backends spell struct names differently):
    its kind, size, and the same of what it points to, holds, takes or returns."""
    kind = ctype.kind
    if kind == "function":
        return kind, tuple(_shape(an_ffi, a) for a in ctype.args), _shape(an_ffi, ctype.result), ctype.ellipsis
    if kind in ("pointer", "array"):
        return kind, ctype.length if kind == "array" else None, _shape(an_ffi, ctype.item)
    if kind == "struct":
        return kind, an_ffi.sizeof(ctype), tuple(name for name, _ in ctype.fields)
    if kind == "void":
        return kind
    return kind, an_ffi.sizeof(ctype)


@pytest.mark.parametrize("cdef, module, used", MODULES, ids=lambda v: v if isinstance(v, str) and "." in v else "")
def test_the_prebuilt_module_is_in_step_and_used(cdef, module, used):
    mod = importlib.import_module(module)
    assert mod.CDEF_SHA256 == prebuilt.digest(cdef), "run python tools/gen_ffi.py"
    assert used is mod.ffi   # the package uses it, not an FFI parsed at import


def test_the_prebuilt_ffi_sees_the_structs_as_a_parsed_one():
    parsed = cffi.FFI()
    parsed.cdef(abi.ffi_cdef())
    for struct in STRUCTS:
        fields = parsed.typeof(struct).fields
        assert [name for name, _ in ffi.typeof(struct).fields] == [name for name, _ in fields], struct
        assert ffi.sizeof(struct) == parsed.sizeof(struct), struct
        for name, field in fields:
            assert ffi.offsetof(struct, name) == field.offset, (struct, name)
            mine = dict(ffi.typeof(struct).fields)[name].type
            assert _shape(ffi, mine) == _shape(parsed, field.type), (struct, name)
    for name in ("ffg_run_fn *", "ffg_create_fn *", "ffg_describe_fn *", "ffg_destroy_fn *", "FfgTensor[]",
                 "int64_t[]"):
        assert _shape(ffi, ffi.typeof(name)) == _shape(parsed, parsed.typeof(name)), name
    assert ffi.dlopen(None).FFG_ABI_VERSION == parsed.dlopen(None).FFG_ABI_VERSION == abi.ABI_VERSION
    assert abi.expected_layout()   # the layout the libraries check is read from this ffi


def test_type_strings_are_not_parsed_by_pycparser(monkeypatch):
    """What it is for: a type string first met is read by cffi's C parser, not by pycparser (about
    a millisecond each, half of a warm function() before)."""
    import cffi.cparser   # its pycparser: the package, or the copy cffi carries (PyPy)

    def refuse(*args, **kwargs):
        raise AssertionError("pycparser was asked to parse a type")

    monkeypatch.setattr(cffi.cparser.pycparser.CParser, "parse", refuse)
    for n in range(1000, 1010):   # never asked for before
        assert ffi.sizeof(ffi.typeof("FfgTensor[%d]" % n)) == n * ffi.sizeof("FfgTensor")
    assert ffi.typeof("int32_t(*)(FfgOutput *, int64_t)").kind == "function"


def test_a_stale_or_missing_module_is_not_used(tmp_path, monkeypatch):
    cdef = "typedef struct Point { int x, y; } Point;"
    folder = tmp_path / "pkg_for_test"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    text = prebuilt.module_text(cdef, "pkg_for_test.point_ffi", str(tmp_path / "scratch.py"))
    (folder / "point_ffi.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    good = prebuilt.load(cdef, "pkg_for_test.point_ffi")
    assert not isinstance(good, cffi.FFI) and good.sizeof("Point") == 8
    stale = prebuilt.load(cdef + " typedef int extra_t;", "pkg_for_test.point_ffi")   # the declarations changed
    assert isinstance(stale, cffi.FFI) and stale.sizeof("extra_t") == 4
    missing = prebuilt.load(cdef, "pkg_for_test.no_such_module")
    assert isinstance(missing, cffi.FFI) and missing.sizeof("Point") == 8
    sys.modules.pop("pkg_for_test.point_ffi", None)
    sys.modules.pop("pkg_for_test", None)
    assert not os.path.exists(str(tmp_path / "scratch.py"))
