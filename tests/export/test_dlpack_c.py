"""The plain-C DLPack bridge (ffigraph/export/c/ffg_dlpack.c).

tests/export/c/dlpack_unit.c drives every path with fake outputs and a fake
DLPack producer; it is built with AddressSanitizer and UBSan (leak checking on),
so a leaked wrapper, a block released twice or a deleter run too early aborts it
even where its own checks pass. The other tests only compile: the source as
strict, optimised C99 and C11, and the header as C++.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
ABI_DIR = os.path.join(ROOT, "ffigraph", "abi")
C_DIR = os.path.join(ROOT, "ffigraph", "export", "c")
DLPACK_C = os.path.join(C_DIR, "ffg_dlpack.c")
UNIT_C = os.path.join(ROOT, "tests", "export", "c", "dlpack_unit.c")
INCLUDES = ["-I", ABI_DIR, "-I", C_DIR]
# -pedantic also catches a clash of the C99 fallback of FFG_STATIC_ASSERT (typedefs named by
# line number) between ffg_dlpack.h and ffigraph_abi.h.
STRICT_C = ["-Wall", "-Wextra", "-pedantic", "-Werror"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
SANITIZER_ENV = {"ASAN_OPTIONS": "abort_on_error=1:detect_leaks=1",
                 "UBSAN_OPTIONS": "abort_on_error=1:print_stacktrace=1"}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None,
                                reason="gcc is not on PATH: the C DLPack bridge cannot be compiled")


def compile_(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    return proc.returncode, proc.stdout


def sanitizers_missing(tmp_path):
    """Why gcc cannot build and run an empty sanitized program here, or None when it can."""
    src, exe = tmp_path / "empty.c", tmp_path / "empty"
    src.write_text(u"int main(void) { return 0; }\n")
    rc, log = compile_(["gcc"] + SANITIZE + [str(src), "-o", str(exe)])
    if rc != 0:
        return "gcc cannot link sanitized programs: " + log
    proc = subprocess.run([str(exe)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, env=dict(os.environ, **SANITIZER_ENV))
    if proc.returncode != 0:
        return "sanitized programs cannot run here: " + proc.stdout
    return None


def test_unit_passes_under_sanitizers(tmp_path):
    exe = tmp_path / "dlpack_unit"
    cmd = ["gcc", "-std=c99", "-g"] + STRICT_C + SANITIZE + INCLUDES + [UNIT_C, DLPACK_C, "-o", str(exe)]
    rc, log = compile_(cmd)
    if rc != 0:
        # Only an environment without sanitizer runtimes excuses a failed build.
        why = sanitizers_missing(tmp_path)
        assert why is not None, log
        pytest.skip(why)
    proc = subprocess.run([str(exe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=dict(os.environ, **SANITIZER_ENV), timeout=60)
    if proc.returncode != 0 and "LeakSanitizer has encountered a fatal error" in proc.stderr:
        why = sanitizers_missing(tmp_path)
        pytest.skip(why or "LeakSanitizer cannot run here (under ptrace?): " + proc.stderr[-500:])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1:] == ["ok"], proc.stdout


@pytest.mark.parametrize("std", ["c99", "c11"])
def test_compiles_cleanly_optimised(tmp_path, std):
    # -O2 enables the flow analysis behind -Wmaybe-uninitialized and friends.
    cmd = ["gcc", "-std=" + std, "-O2", "-c"] + STRICT_C + INCLUDES + [DLPACK_C, "-o", str(tmp_path / "ffg_dlpack.o")]
    rc, log = compile_(cmd)
    assert rc == 0, log


def test_header_compiles_as_cxx11(tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not on PATH")
    src = tmp_path / "use.cpp"
    src.write_text(u'#include "ffg_dlpack.h"\n'
                   u"static void no_op(FfgDLManagedTensorVersioned *) {}\n"
                   u"int main() {\n"
                   u"    FfgDLManagedTensorVersioned m = FfgDLManagedTensorVersioned();\n"
                   u"    m.version.major = FFG_DLPACK_MAJOR;\n"
                   u"    m.version.minor = FFG_DLPACK_MINOR;\n"
                   u"    m.deleter = no_op;\n"
                   u"    m.flags = FFG_DLPACK_FLAG_READ_ONLY | FFG_DLPACK_FLAG_IS_COPIED;\n"
                   u"    FfgDLPackInput *holder = 0;\n"
                   u"    FfgTensor in;\n"
                   u"    FfgError err;\n"
                   u"    int32_t rc = ffg_dlpack_take(&m, &holder, &in, &err);\n"
                   u"    FfgOutput out = FfgOutput();\n"
                   u"    FfgDLManagedTensorVersioned *wrapped = 0;\n"
                   u"    rc |= ffg_dlpack_wrap_output(&out, 0, &holder, 1, &wrapped, &err);\n"
                   u"    rc |= ffg_dlpack_read_only(holder);\n"
                   u"    ffg_dlpack_drop(holder);\n"
                   u"    return rc;\n"
                   u"}\n")
    cmd = ["g++", "-std=c++11", "-fsyntax-only", "-x", "c++"] + STRICT_C + INCLUDES + [str(src)]
    rc, log = compile_(cmd)
    assert rc == 0, log
