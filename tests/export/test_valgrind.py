"""valgrind memcheck on an export: ./example, and a C host making 10,000 calls, half of them failing.

tools/valgrind_check.py does the work (export, make, build tests/export/c/leak_host.c, run both
under valgrind with --leak-check=full); this test runs it and reads its summary lines.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
SCRIPT = os.path.join(ROOT, "tools", "valgrind_check.py")
CALLS = 10000

pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in ("valgrind", "make", "gcc")),
                                reason="valgrind, make or gcc is not on PATH (apt-get install -y valgrind)")

_LINE = re.compile(r"^valgrind (\S+): errors (-?\d+), definitely lost (-?\d+) bytes, exit (-?\d+)(.*)$", re.M)


def test_export_and_c_host_have_no_memory_errors_and_leak_nothing():
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env["FFIGRAPH_FLAGS"] = ""   # a plain build: valgrind and AddressSanitizer do not mix
    proc = subprocess.run([sys.executable, SCRIPT, "--calls", str(CALLS)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=600)
    out = proc.stdout
    found = {m.group(1): m.groups()[1:] for m in _LINE.finditer(out)}
    assert set(found) == {"example", "leak_host"}, out
    for label, (errors, lost, code, _) in found.items():
        assert (errors, lost, code) == ("0", "0", "0"), "%s:\n%s" % (label, out)
    host = found["leak_host"][3]
    want = "calls %d good %d failing %d mismatches 0 unexpected 0 leftovers 0" % (CALLS, CALLS // 2, CALLS // 2)
    assert want in host, out
    allocs, frees = re.search(r"allocs (\d+) frees (\d+)", host).groups()
    assert allocs == frees and int(allocs) > 0, out
    assert proc.returncode == 0, out
