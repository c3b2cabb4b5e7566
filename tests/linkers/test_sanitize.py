"""config.sanitize: generated C built with AddressSanitizer / UBSan, and proof that a finding fails.

The sanitizer phase of ``./dev test`` runs part of the suite with
``FFIGRAPH_FLAGS=sanitize=address+undefined`` and libasan preloaded. Here: the flag changes
the build command and the cache key; without the runtime the error says how to run; and a
user op that writes out of bounds, run under the flag, makes a pytest-xdist run fail with
AddressSanitizer's report (and a shift past the type's width, with UBSan's).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from ffigraph.config import config
from ffigraph.linkers.c import cache
from ffigraph.linkers.c.build import compiler_command
from ffigraph.linkers.c.sanitize import SanitizerRuntimeError, asan_runtime_loaded, sanitize_flags
from ffigraph.linkers.c.tool import tool_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository


def _runtime(name):
    """The absolute path of gcc's sanitizer runtime ``name`` (libasan.so), or None."""
    try:
        out = subprocess.run([config.cxx, "-print-file-name=" + name], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out if os.path.isabs(out) and os.path.exists(out) else None


LIBASAN, LIBUBSAN = _runtime("libasan.so"), _runtime("libubsan.so")
if LIBASAN is None or LIBUBSAN is None:
    needs_asan = pytest.mark.skip(reason="the C compiler has no AddressSanitizer/UBSan runtime "
                                         "(libasan.so, libubsan.so; Debian: libgcc-12-dev)")
else:   # the sanitizer phase runs on CPython; PyPy's own allocator and JIT are not meant for libasan
    needs_asan = pytest.mark.skipif(sys.implementation.name != "cpython",
                                    reason="sanitizer runs are made on CPython (./dev test's sanitizer phase)")


def sanitizer_env(flags="sanitize=address+undefined", preload=True, log_dir=None):
    """The environment of the sanitizer phase. ASan's reports go to files under log_dir when given
    (UBSan's ignore log_path here): pytest's fd capture would swallow what a dying worker writes
    to stderr, so the phase runs with --capture=sys, and reads those files."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["FFIGRAPH_FLAGS"] = flags
    log = ":log_path=%s" % os.path.join(str(log_dir), "sanitizer") if log_dir else ""
    env["ASAN_OPTIONS"] = "detect_leaks=0:allocator_may_return_null=1" + log   # always replaced: a report here must not reach a
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1" + log   # log folder of the phase itself
    if preload:
        env["LD_PRELOAD"] = "%s %s" % (LIBASAN, LIBUBSAN)
    return env


def reports(log_dir):
    """The text of every sanitizer report written under log_dir."""
    return "".join(open(os.path.join(str(log_dir), name)).read() for name in sorted(os.listdir(str(log_dir))))


def run_python(args, env, cwd, timeout=300):
    proc = subprocess.run([sys.executable] + list(args), cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout)
    return proc.returncode, proc.stdout


# ------------------------------------------------------------------ the flag


def test_sanitize_values_are_validated_and_normalised():
    old = config.sanitize
    try:
        config.sanitize = "undefined+address"
        assert config.sanitize == "address,undefined"
        config.sanitize = "undefined"
        assert config.sanitize == "undefined"
        with pytest.raises(ValueError, match="sanitize"):
            config.sanitize = "thread"
    finally:
        config.sanitize = old


def test_sanitize_changes_the_build_command_and_the_cache_key():
    req = {"libraries": []}
    source = "int ffg_probe(void) { return 1; }\n"
    with config.change_flags(sanitize=""):
        plain_head, plain_libs = compiler_command(req)
        plain_key = cache.cache_key(source, req)
    assert not any("sanitize" in arg for arg in plain_head + plain_libs)
    assert sanitize_flags("") == []
    with config.change_flags(sanitize="undefined"):   # UBSan alone needs no preloaded runtime
        head, _ = compiler_command(req)
        key = cache.cache_key(source, req)
    assert "-fsanitize=undefined" in head and "-fno-sanitize-recover=all" in head and "-g" in head
    assert key != plain_key
    with config.change_flags(sanitize="address,undefined"):
        if asan_runtime_loaded():   # the sanitizer phase: libasan is preloaded
            head, _ = compiler_command(req)
            assert "-fsanitize=address,undefined" in head
            assert cache.cache_key(source, req) not in (plain_key, key)
        else:
            with pytest.raises(SanitizerRuntimeError, match="LD_PRELOAD"):
                compiler_command(req)


def test_the_compiler_runs_without_a_preloaded_sanitizer_runtime(monkeypatch):
    """gcc itself needs no libasan (preloaded, it compiles twice as slowly); other preloads stay."""
    monkeypatch.setenv("LD_PRELOAD", "/gcc/libasan.so /gcc/libubsan.so:/opt/libkeep.so")
    assert tool_env()["LD_PRELOAD"] == "/opt/libkeep.so"
    monkeypatch.setenv("LD_PRELOAD", "/gcc/libasan.so")
    assert "LD_PRELOAD" not in tool_env()
    monkeypatch.delenv("LD_PRELOAD")
    assert tool_env() is None


@needs_asan
def test_without_the_runtime_the_error_says_how_to_run(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        import ffigraph, ffigraph.tensor as T
        from ffigraph.linkers.c.sanitize import SanitizerRuntimeError
        x = T.dvector("x")
        try:
            ffigraph.function([x], x + 1)
        except SanitizerRuntimeError as err:
            print("refused:", err)
        """)
    code, out = run_python(["-c", script], sanitizer_env("sanitize=address", preload=False), tmp_path)
    assert code == 0, out
    assert "refused:" in out and "LD_PRELOAD" in out and "libasan" in out, out


# ------------------------------------------------------------------ a finding fails the run


BAD_OPS = '''
import numpy as np
import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.graph import Apply
from ffigraph.graph.op import Op
from ffigraph.linkers.c import COp


class WritesPastTheEnd(COp, Op):
    """Copies x into a fresh output of the same length, and writes one element beyond it."""

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        return """
        int64_t i, n = %(x)s.shape[0];
        if (ffg_alloc_array(&%(z)s, 1, &n, sizeof(double), %(allocator)s, %(err)s))
            %(fail)s
        for (i = 0; i <= n; ++i)   /* <=: one too many */
            ((double *)%(z)s.data)[i] = ((double *)%(x)s.data)[i < n ? i * %(x)s.strides[0] : 0];
        """ % dict(sub, x=x, z=z)

    def c_code_cache_version(self):
        return ()


class ShiftsTooFar(COp, Op):
    """Shifts 1 left by 64 + each element of an int64 vector: a shift past the type's width,
    undefined in C. (Signed overflow is not UB in generated code: it is built with -fwrapv.)"""

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        return """
        int64_t i, n = %(x)s.shape[0];
        if (ffg_alloc_array(&%(z)s, 1, &n, sizeof(int64_t), %(allocator)s, %(err)s))
            %(fail)s
        for (i = 0; i < n; ++i)
            ((int64_t *)%(z)s.data)[i] = (int64_t)1 << (64 + ((int64_t *)%(x)s.data)[i * %(x)s.strides[0]]);
        """ % dict(sub, x=x, z=z)

    def c_code_cache_version(self):
        return ()


def test_a_good_call_passes():
    x = T.dvector("x")
    f = function([x], x * 2, mode=Mode(linker="c", optimizer=None))
    assert f(np.ones(3)).tolist() == [2.0, 2.0, 2.0]


def test_out_of_bounds_write():
    x = T.dvector("x")
    f = function([x], WritesPastTheEnd()(x), mode=Mode(linker="c", optimizer=None))
    f(np.arange(5.0))


def test_shift_too_far():
    x = T.lvector("x")
    f = function([x], ShiftsTooFar()(x), mode=Mode(linker="c", optimizer=None))
    f(np.array([1, 2], dtype="int64"))
'''


@pytest.fixture(scope="module")
def bad_ops_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sanitize_proof")
    path = folder / "test_bad_ops.py"
    path.write_text(BAD_OPS)
    return path


@needs_asan
@pytest.mark.parametrize("case, report", [
    ("test_out_of_bounds_write", "ERROR: AddressSanitizer: heap-buffer-overflow"),
    ("test_shift_too_far", "runtime error: shift exponent"),
])
def test_a_sanitizer_report_fails_a_pytest_xdist_run(bad_ops_file, tmp_path, case, report):
    """What the sanitizer phase relies on: the report kills the worker, and xdist fails the run."""
    logs = tmp_path / "logs"
    logs.mkdir()
    env = sanitizer_env(log_dir=logs)
    env["FFIGRAPH_COMPILEDIR"] = str(tmp_path / "cache")
    code, out = run_python(["-m", "pytest", "-n", "1", "-p", "no:cacheprovider", "-q", "--capture=sys",
                            str(bad_ops_file), "-k", "%s or test_a_good_call_passes" % case],
                           env, bad_ops_file.parent)
    text = out + reports(logs)   # ASan writes to its log_path files, UBSan to the worker's stderr
    assert report in text, text
    assert re.search(r"\.c:\d+", text), text   # built with -g: the report points into the generated C
    assert code != 0, out
    assert "1 passed" in out and "1 failed" in out and "worker 'gw0' crashed while running" in out, out
