"""``ffigraph-cache`` show / path / export, the symbol prefix in meta.json, and the in-place ELF
search-path rewrite that makes an exported folder independent of the environment that built it.

One graph is compiled for the whole file (a dot of two small matrices: it links against BLAS, the
case that needs its libraries copied and its search path rewritten) into a private cache root.
"""
import io
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import config, function
from ffigraph.abi import ABI_VERSION, HEADER_NAME
from ffigraph.cache import CliError, Entry, main, resolve
from ffigraph.compile.mode import Mode
from ffigraph.linkers.c import cache, elf_runpath

needs_readelf = pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf (binutils)")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(entry, library path, its old search path folders) of the one graph, in a private cache."""
    root = str(tmp_path_factory.mktemp("cache_cli") / "cd")
    with config.change_flags(compiledir=root):
        a, b = T.dmatrix("a"), T.dmatrix("b")
        # a constant no other test file uses: the per-process library memo (keyed by the source)
        # must not hand back a library another test built into another cache
        f = function([a, b], T.dot(a, b) * 0.8134765625, mode=Mode(linker="c", optimizer=None))
        x, y = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2)
        assert np.allclose(f(x, y), x.dot(y) * 0.8134765625)
        entries = cache.list_entries()
        assert len(entries) == 1, entries
        key, path = entries[0][:2]
        lib = os.path.join(path, cache.LIB_NAME)
        old_dirs = [d for sp in elf_runpath.read(lib).search_paths for d in sp.text.split(":") if d]
        yield key, path, lib, old_dirs


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def _prefix(built):
    return cache.entry_prefix(built[1])


# ------------------------------------------------------------------ the prefix in meta.json


def test_meta_records_the_symbol_prefix(built, tmp_path):
    key, path, lib, _ = built
    with open(os.path.join(path, cache.META_NAME)) as fh:
        meta = json.load(fh)
    with open(os.path.join(path, cache.SOURCE_NAME)) as fh:
        source = fh.read()
    assert re.match(r"ffg_[0-9a-f]{24}$", meta["prefix"])
    assert "%s_version(void)" % meta["prefix"] in source
    assert meta["prefix"] + "_run" in elf_runpath.read(lib).defined
    # an entry published before the prefix was recorded: read from its source.c
    old = tmp_path / "old"
    old.mkdir()
    del meta["prefix"]
    (old / cache.META_NAME).write_text(json.dumps(meta))
    shutil.copyfile(os.path.join(path, cache.SOURCE_NAME), str(old / cache.SOURCE_NAME))
    assert cache.entry_prefix(str(old)) == _prefix(built)
    os.unlink(str(old / cache.SOURCE_NAME))
    assert cache.entry_prefix(str(old)) is None


# ------------------------------------------------------------------ list, show, path


def test_list_shows_the_prefix(built):
    with config.change_flags(compiledir=os.path.dirname(os.path.dirname(os.path.dirname(built[1])))):
        rc, out, _ = _run("list")
    assert rc == 0
    line, = out.splitlines()
    assert line.startswith(built[0][:16]) and _prefix(built) in line and line.endswith("ok")


@pytest.fixture
def in_cache(built):
    with config.change_flags(compiledir=os.path.dirname(os.path.dirname(os.path.dirname(built[1])))):
        yield built


@pytest.mark.parametrize("how", ["key", "full key", "prefix", "prefix start"])
def test_show(in_cache, how):
    key, path, lib, _ = in_cache
    prefix = _prefix(in_cache)
    name = {"key": key[:8], "full key": key, "prefix": prefix, "prefix start": prefix[:12].upper()}[how]
    rc, out, err = _run("show", name)
    assert rc == 0 and err == ""
    fields = dict(line.split(":", 1) for line in out.splitlines())
    fields = {k: v.strip() for k, v in fields.items()}
    assert fields["key"] == key and fields["library"] == lib and fields["prefix"] == prefix
    assert fields["abi"].startswith(str(ABI_VERSION)) and "stale" not in fields["abi"]
    assert fields["compiler"] == cache.entry_meta(path)["compiler"]
    assert fields["state"] == "ok" and "KiB" in fields["size"]


def test_path_prints_the_library(in_cache):
    rc, out, err = _run("path", in_cache[0][:10])
    assert rc == 0 and err == "" and out == in_cache[2] + "\n" and os.path.isfile(out.strip())


def test_unknown_and_malformed_entries(in_cache):
    key = in_cache[0]
    other = ("0" if key[0] != "0" else "1") + key[1:8]
    for argv, message in [(("show", other), "no entry"), (("path", "ffg_" + other), "no entry"),
                          (("show", key[:5]), "at least 6 hex digits"), (("path", "ffg_xyz123"), "at least 6"),
                          (("export", "nothex!", "d"), "at least 6")]:
        rc, out, err = _run(*argv)
        assert rc == 1 and out == "" and message in err, (argv, err)


def test_ambiguous_entry_lists_the_matches(in_cache):
    key, path, _, _ = in_cache
    twin_key = key[:8] + ("0" if key[8] != "0" else "1") + key[9:]   # same first 8 digits
    twin = cache.entry_dir(twin_key)
    shutil.copytree(path, twin)   # its meta names the other key: listed, but damaged
    try:
        for name in (key[:8], _prefix(in_cache)):
            rc, out, err = _run("show", name)
            assert rc == 1 and out == "" and "ambiguous" in err and key in err and twin_key in err
        rc, out, _ = _run("path", key[:9])   # one more digit tells them apart
        assert rc == 0 and out.strip() == in_cache[2]
        rc, out, err = _run("path", twin_key)
        assert rc == 1 and "damaged" in err
        rc, out, _ = _run("show", twin_key)
        assert rc == 0 and "DAMAGED" in out
    finally:
        shutil.rmtree(twin)


def test_resolve_without_a_cache():
    entries = [Entry("abcdef" + "0" * 58, "/p0", 1, 0.0, True, "ffg_" + "1" * 24),
               Entry("abcdef" + "1" * 58, "/p1", 1, 0.0, True, None)]
    assert resolve("abcdef0", entries).path == "/p0"
    assert resolve("ffg_111111", entries).path == "/p0"
    with pytest.raises(CliError, match="ambiguous: 2 entries"):
        resolve("ABCDEF", entries)


# ------------------------------------------------------------------ export


def _readelf(path):
    out = subprocess.run(["readelf", "-d", path], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    paths = re.findall(r"\((RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", out)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]*)\]", out)
    return paths, needed


LOAD_SCRIPT = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
version = getattr(lib, sys.argv[2] + "_version")
version.restype = ctypes.c_uint32
print(version())
try:
    maps = open("/proc/self/maps").read()
except OSError:
    maps = ""
print("\\n".join(sorted(set(line.split()[-1] for line in maps.splitlines() if ".so" in line))))
"""


@needs_readelf
def test_export_is_self_contained(in_cache, tmp_path):
    key, path, lib, old_dirs = in_cache
    prefix = _prefix(in_cache)
    with open(lib, "rb") as fh:
        assert any(d.encode() in fh.read() for d in old_dirs), "the cache library names no folder to move away from"
    blas_name = [n for n in _readelf(lib)[1] if "blas" in n.lower()]
    assert blas_name, "the dot graph is not linked against a BLAS: %s" % (_readelf(lib),)
    blas_source = os.path.join(old_dirs[0], blas_name[0])
    blas_before = [(sp.tag, sp.text) for sp in elf_runpath.read(blas_source).search_paths]
    folder = tmp_path / "out"
    rc, out, err = _run("export", key[:12], str(folder))
    assert rc == 0, err
    exported = folder / ("lib%s.so" % prefix)
    for name in (exported.name, "%s.c" % prefix, HEADER_NAME, "README.txt", blas_name[0]):
        assert (folder / name).is_file(), name
    readme = (folder / "README.txt").read_text()
    assert prefix in readme and "ffg_library_api" in readme

    # the search path says $ORIGIN and nothing else; RUNPATH unless a library beside it has no
    # search path of its own but needs a neighbour (numpy 1.26's OpenBLAS): then RPATH, which the
    # loader also applies to the dependencies' own needs
    paths, needed = _readelf(str(exported))
    assert [p[1] for p in paths] == ["$ORIGIN"]
    blas_paths = _readelf(str(folder / blas_name[0]))[0]
    # (cache libraries are linked with RPATH, which is kept; a RUNPATH one is only kept when the
    # BLAS beside it finds its own needs)
    assert paths[0][0] == "RPATH" or (paths[0][0] == "RUNPATH" and blas_paths)
    assert blas_name[0] in needed
    for name in os.listdir(str(folder)):   # the environment's folders appear in no exported file
        data = (folder / name).read_bytes()
        for d in set(old_dirs + [sys.prefix]):
            assert d.encode() not in data, (name, d)
        if name.endswith(".so") or ".so." in name:
            assert all(p[1] == "$ORIGIN" for p in _readelf(str(folder / name))[0]), name

    # neither the cache entry nor numpy's own library was patched through a hard link
    assert cache.validate_entry(path, key) == lib
    assert [(sp.tag, sp.text) for sp in elf_runpath.read(blas_source).search_paths] == blas_before

    # it loads and runs in a process with no LD_LIBRARY_PATH, no site-packages and nothing of
    # the environment, taking its BLAS from the folder
    run = subprocess.run([sys.executable, "-S", "-c", LOAD_SCRIPT, str(exported), prefix], cwd=str(tmp_path),
                         env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.split()
    assert int(lines[0]) == ABI_VERSION
    loaded_blas = [p for p in lines[1:] if os.path.basename(p) == blas_name[0]]
    if os.path.exists("/proc/self/maps"):
        assert loaded_blas and all(os.path.dirname(os.path.realpath(p)) == os.path.realpath(str(folder))
                                   for p in loaded_blas), lines


def test_export_refuses_to_overwrite_and_checks_the_name(in_cache, tmp_path):
    key = in_cache[0]
    folder = str(tmp_path / "out")
    rc, out, err = _run("export", key[:12], folder, "--name", "my_graph")
    assert rc == 0, err
    assert os.path.isfile(os.path.join(folder, "libmy_graph.so")) and os.path.isfile(os.path.join(folder, "my_graph.c"))
    rc, out, err = _run("export", key[:12], folder, "--name", "my_graph")
    assert rc == 1 and "already holds" in err and "--force" in err
    rc, out, err = _run("export", key[:12], folder, "--name", "my_graph", "--force")
    assert rc == 0, err
    rc, out, err = _run("export", key[:12], folder, "--name", "9lives")
    assert rc == 1 and "not a C identifier" in err


# ------------------------------------------------------------------ the ELF rewrite itself


def test_rewrite_in_place_and_its_limits(in_cache, tmp_path):
    lib = in_cache[2]
    copy = str(tmp_path / "copy.so")
    shutil.copyfile(lib, copy)
    before = elf_runpath.read(copy)
    assert before.search_paths and before.needed
    size = os.path.getsize(copy)
    old = elf_runpath.rewrite_search_path(copy, "/a", elf_runpath.DT_RPATH)
    after = elf_runpath.read(copy)
    assert [sp.text for sp in old] == [sp.text for sp in before.search_paths]
    assert [(sp.kind, sp.text) for sp in after.search_paths] == [("RPATH", "/a")]
    assert after.needed == before.needed and after.defined == before.defined and os.path.getsize(copy) == size
    with pytest.raises(elf_runpath.ElfError, match="shorter than '\\$ORIGIN'.*cannot grow"):
        elf_runpath.rewrite_search_path(copy, "$ORIGIN")
    not_elf = tmp_path / "text.so"
    not_elf.write_bytes(b"just text, not a library" * 4)
    with pytest.raises(elf_runpath.ElfError, match="not an ELF file"):
        elf_runpath.read(str(not_elf))
    with open(lib, "rb") as fh:
        data = bytearray(fh.read())
    data[4] = 1   # ELFCLASS32
    elf32 = tmp_path / "elf32.so"
    elf32.write_bytes(bytes(data))
    with pytest.raises(elf_runpath.ElfError, match="only ELF64 little-endian"):
        elf_runpath.read(str(elf32))
