"""The C host of the documentation's export chapter (docs/tutorial/c/host.c, shown in
docs/tutorial/export.rst), compiled against ffigraph_abi.h alone, runs a cache library and an
exported one, and prints what Python computes."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ffigraph as fg
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CC = shutil.which("gcc") or shutil.which("cc")

pytestmark = pytest.mark.skipif(CC is None or not sys.platform.startswith("linux"),
                                reason="needs a C compiler and dlopen (Linux)")

HOST_SOURCE = os.path.join(ROOT, "docs", "tutorial", "c", "host.c")


def test_the_docs_host_runs_a_cache_library_and_an_exported_one(tmp_path):
    source = tmp_path / "host.c"   # a copy: nothing beside it (no generated header) is reachable
    shutil.copy(HOST_SOURCE, str(source))
    include = tmp_path / "include"   # the header alone: nothing generated is reachable
    include.mkdir()
    shutil.copy(os.path.join(ROOT, "ffigraph", "abi", "ffigraph_abi.h"), str(include))
    host = str(tmp_path / "host")
    built = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(include), str(source),
                            "-ldl", "-o", host], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
    assert built.returncode == 0, built.stdout
    x = T.dvector("x")
    twice = x * 2 + 1
    twice.name = "twice"
    f = fg.function([x], [twice, (x ** 2).sum()], mode=Mode(linker="c"))
    bundle = f.export(str(tmp_path / "bundle"), name="vec")
    expected = "twice: 1 3 5\noutput1: 5\n"
    assert np.allclose(f(np.array([0.0, 1.0, 2.0]))[0], [1, 3, 5])
    for library in (f.library_path, os.path.join(bundle.directory, "libvec.so")):
        done = subprocess.run([host, library], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, env={"PATH": "/usr/bin:/bin"})
        assert done.returncode == 0 and done.stdout == expected, (library, done.stdout, done.stderr)
