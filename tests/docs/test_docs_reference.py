"""The generated reference pages are complete: the ABI reference (docs/_ext/ffg_abi_reference.py)
names every constant, struct, field, function type and macro of ffigraph_abi.h, and the
configuration page (docs/_ext/ffg_config_reference.py) every key ffigraph.config accepts."""
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "docs", "_ext"))

docutils = pytest.importorskip("docutils", reason="Sphinx (with docutils) is in the CPython test extras only")


def test_abi_reference_names_every_declaration_of_the_header():
    import ffg_abi_reference as abi

    with open(abi.HEADER) as fh:
        header = fh.read()
    rst = abi.abi_reference_rst(header)
    internal = {"FFIGRAPH_ABI_H", "FFG_CONCAT_", "FFG_CONCAT", "FFG_STATIC_ASSERT", "FFG_EXPORT"}
    defines = set(re.findall(r"#define (\w+)", header)) - internal
    for name in defines:
        assert re.search(r"\.\. c:macro:: %s\b" % name, rst), name
    for name in re.findall(r"(FFG_OUT_\w+) =", header):
        assert ".. c:macro:: %s" % name in rst, name
    structs = re.findall(r"typedef struct (\w+) \{(.*?)\} \1;", header, re.S)
    assert len(structs) == header.count("typedef struct ") > 10   # the regex found every struct
    for name, body in structs:
        section = rst.split(".. c:struct:: %s\n" % name)[1].split(".. c:")[0]
        fields = re.findall(r"(\w+)(?:\[\w+\])?;", re.sub(r"/\*.*?\*/", "", body, flags=re.S))
        fields += re.findall(r"\(\*(\w+)\)", body)
        for field in fields:
            assert "- ``%s``" % field in section, (name, field)
        assert "``sizeof(%s)`` is" % name in section, name      # cffi's layout, this machine
    for name in re.findall(r"\b(\w+_fn)\b", header):
        assert ".. c:type:: %s" % name in rst, name
    assert ".. c:function:: const FfgLibraryApi *ffg_library_api(uint32_t abi_major);" in rst
    for code in ("FFG_ERR_LINALG", "FFG_ERR_CUDA"):              # a code and its meaning
        assert re.search(r"c:macro:: %s\n\n   Value ``\d+``: \w" % code, rst), code


def test_config_reference_lists_every_key():
    import importlib

    import ffg_config_reference as cfg

    spec = importlib.import_module("ffigraph.config")._SPEC
    rst = cfg.config_keys_rst()
    documented = re.findall(r"\.\. py:data:: ffigraph\.config\.(\w+)", rst)
    assert documented == list(spec)
    assert "Default: ``'cvm'``" in rst.split("ffigraph.config.linker")[1].split(".. py:data::")[0]


def test_api_reference_has_a_page_per_public_module():
    """One automodule page per module, including those a package shadows with a function of the
    same name (ffigraph.compile.function, ffigraph.scan), and none for private modules."""
    import pkgutil

    import ffg_api_pages as api

    import ffigraph

    modules = api.public_modules()
    every = {i.name for i in pkgutil.walk_packages(ffigraph.__path__, "ffigraph.")}
    assert set(modules) == {"ffigraph"} | {m for m in every if "._" not in m}
    for name in ("ffigraph.compile.function", "ffigraph.scan", "ffigraph.scan.op", "ffigraph.tensor.sort"):
        assert name in modules and ".. automodule:: %s\n" % name in api.page(name)
    assert "ffigraph.abi._abi_ffi" not in modules
