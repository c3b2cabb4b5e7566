"""A compiler that hangs, crashes, fails or writes no usable library: a clear exception, no cache entry.

The fake compiler is one shell script whose behaviour a file beside it selects, so every
fault and the final good build (the script then runs gcc) share one compiler identity and
so one cache key: after each fault the cache must hold no entry, no held lock and no
leftover build folder for it, and the very same graph must then build and run.
"""
import json
import os
import shutil
import subprocess
import time

import numpy as np
import pytest
from filelock import FileLock, Timeout

import ffigraph.tensor as T
from ffigraph import config, function
from ffigraph.compile.mode import Mode
from ffigraph.linkers.c import CompileError, cache
from ffigraph.linkers.c.build import CompileTimeout
from ffigraph.linkers.c.load import LibraryLoadError

REAL_CC = shutil.which("gcc") or shutil.which("cc")
pytestmark = pytest.mark.skipif(REAL_CC is None or shutil.which("sh") is None, reason="needs sh and a C compiler")

FAKE_CC = """\
#!/bin/sh
# a fake C compiler: what it does is read from {behaviour}
case "$1" in --version) exec "{real}" --version;; esac
out=
prev=
for arg in "$@"; do
    if [ "$prev" = "-o" ]; then out="$arg"; fi
    prev="$arg"
done
case "$(cat "{behaviour}")" in
hang)
    sleep 60 &
    echo $! > "{sleep_pid}"
    wait;;
segv)
    kill -SEGV $$;;
fail)
    echo "fakecc: error: the sky is falling" >&2
    exit 1;;
nolib)
    exit 0;;
garbage)
    echo "this is not a shared library" > "$out"
    exit 0;;
wronglib)
    printf 'int ffg_not_the_graph = 1;\\n' > "$out.c"
    exec "{real}" -shared -fPIC -o "$out" "$out.c";;
*)
    exec "{real}" "$@";;
esac
"""


@pytest.fixture
def fake_cc(tmp_path):
    """(set_behaviour, sleep_pid_file), with a fresh compiledir and the fake compiler as config.cxx."""
    behaviour = tmp_path / "behaviour"
    sleep_pid = tmp_path / "sleep.pid"
    script = tmp_path / "fakecc"
    script.write_text(FAKE_CC.format(behaviour=behaviour, sleep_pid=sleep_pid, real=REAL_CC))
    script.chmod(0o755)
    behaviour.write_text("ok")
    with config.change_flags(cxx=str(script), compiledir=str(tmp_path / "cache")):
        # the runtime object every library links, built first by the (sound) compiler: the faults
        # below hit the library's own build (test_faulty_runtime_object: faults at that step)
        cache.runtime_object(None, cache.private_subdir("locks"), cache.private_subdir("tmp"))
        yield behaviour.write_text, sleep_pid


_counter = [0]


def _graph():
    """A graph no other test builds (this process memoises loaded libraries by source), and
    numpy's version of it."""
    _counter[0] += 1
    x = T.dvector("x")
    scale = 1000 + _counter[0] + os.getpid() % 1000
    _graph.numpy = lambda v: np.exp(v) * scale + 1
    return [x], T.exp(x) * scale + 1


def _compile(inputs, out):
    return function(inputs, out, mode=Mode(linker="c", optimizer=None))


def _assert_cache_clean():
    """No entry, no lock held by anyone, no build folder left over."""
    assert cache.list_entries() == []
    locks = os.path.join(cache.root(), "locks")
    for name in os.listdir(locks) if os.path.isdir(locks) else []:
        try:
            FileLock(os.path.join(locks, name)).acquire(timeout=0).lock.release()
        except Timeout:
            pytest.fail("lock %s is still held" % name)
    tmp = os.path.join(cache.root(), "tmp")
    assert not os.path.isdir(tmp) or os.listdir(tmp) == []


def _builds_after_fix(set_behaviour, inputs, out):
    set_behaviour("ok")
    f = _compile(inputs, out)
    value = np.array([0.0, 1.0])
    got = f(value)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _graph.numpy(value), rtol=1e-14)
    entries = cache.list_entries()
    assert len(entries) == 1 and entries[0][4], entries   # one sound entry: the same key, built now


def _gone(pid):
    """The process has exited (a zombie waiting for a reaper counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_hanging_compiler_times_out_and_is_killed_with_its_children(fake_cc):
    set_behaviour, sleep_pid = fake_cc
    inputs, out = _graph()
    set_behaviour("hang")
    start = time.time()
    with config.change_flags(compile_timeout=1):
        with pytest.raises(CompileTimeout) as info:
            _compile(inputs, out)
    # a hang guard, not a timing: the compiler never finishes, and the 1 s limit (not the default
    # 300 s) must have stopped it; a minute is far more than killing it takes on a loaded machine
    assert time.time() - start < 60
    message = str(info.value)
    assert "did not finish within 1 s" in message and "compile_timeout" in message, message
    assert isinstance(info.value, CompileError)
    pid = int(sleep_pid.read_text())
    deadline = time.time() + 5
    while not _gone(pid) and time.time() < deadline:
        time.sleep(0.05)
    assert _gone(pid), "the compiler's child (sleep, pid %d) survived the timeout" % pid
    _assert_cache_clean()
    _builds_after_fix(set_behaviour, inputs, out)


def test_crashing_compiler_names_the_signal(fake_cc):
    set_behaviour, _ = fake_cc
    inputs, out = _graph()
    set_behaviour("segv")
    with pytest.raises(CompileError, match=r"the C compiler crashed \(signal SIGSEGV\)") as info:
        _compile(inputs, out)
    assert info.value.returncode == -11
    _assert_cache_clean()
    _builds_after_fix(set_behaviour, inputs, out)


def test_failing_compiler_shows_its_message(fake_cc):
    set_behaviour, _ = fake_cc
    inputs, out = _graph()
    set_behaviour("fail")
    with pytest.raises(CompileError, match="exit 1") as info:
        _compile(inputs, out)
    assert "the sky is falling" in str(info.value)
    assert os.path.isfile(info.value.source_path)   # the source is kept for a look
    _assert_cache_clean()
    _builds_after_fix(set_behaviour, inputs, out)


@pytest.mark.parametrize("behaviour, message", [("nolib", "wrote no library"),
                                                ("garbage", "is not a shared library")])
def test_compiler_that_writes_no_library(fake_cc, behaviour, message):
    set_behaviour, _ = fake_cc
    inputs, out = _graph()
    set_behaviour(behaviour)
    with pytest.raises(CompileError, match=message):
        _compile(inputs, out)
    _assert_cache_clean()
    _builds_after_fix(set_behaviour, inputs, out)


def test_library_without_the_entry_points_is_not_kept(fake_cc):
    """A real shared library, but not the graph's: loading fails clearly and the entry is removed."""
    set_behaviour, _ = fake_cc
    inputs, out = _graph()
    set_behaviour("wronglib")
    with pytest.raises(LibraryLoadError, match="cannot be loaded.*entry was removed") as info:
        _compile(inputs, out)
    assert isinstance(info.value, CompileError)
    _assert_cache_clean()
    _builds_after_fix(set_behaviour, inputs, out)


@pytest.mark.parametrize("behaviour, message", [("nolib", "wrote no object file"),
                                                ("garbage", "is not a relocatable object"),
                                                ("wronglib", "is not a relocatable object"),
                                                ("fail", "the sky is falling")])
def test_faulty_runtime_object(fake_cc, behaviour, message):
    """The runtime object (built once per compiler and flags, then linked by every library) from a
    compiler that fails or lies: a CompileError that says so, nothing published, and once the
    compiler is sound the object is built and the graph runs."""
    set_behaviour, _ = fake_cc
    cache.discard_runtime_object()
    inputs, out = _graph()
    set_behaviour(behaviour)
    with pytest.raises(CompileError, match=message):
        _compile(inputs, out)
    assert not os.path.exists(os.path.join(cache.root(), cache.RUNTIME, cache.runtime_key()))
    _builds_after_fix(set_behaviour, inputs, out)


def test_a_runtime_object_without_the_functions_is_replaced(fake_cc):
    """A sound-looking object that lacks the runtime's functions (written by hand here): the link
    names them, the object is dropped, and the next build makes it again."""
    set_behaviour, _ = fake_cc
    folder = os.path.join(cache.root(), cache.RUNTIME, cache.runtime_key())
    obj = os.path.join(folder, cache.RUNTIME_OBJECT_NAME)
    empty = os.path.join(os.path.dirname(cache.root()), "empty.c")
    with open(empty, "w") as fh:
        fh.write("int ffg_not_the_runtime;\n")
    subprocess.run([REAL_CC, "-c", "-fPIC", "-o", obj, empty], check=True)
    meta = os.path.join(folder, cache.META_NAME)
    with open(meta) as fh:
        record = json.load(fh)
    record["sha256"] = cache.sha256_file(obj)
    with open(meta, "w") as fh:
        json.dump(record, fh)
    inputs, out = _graph()
    with pytest.raises(CompileError, match="undefined reference to `ffg_"):
        _compile(inputs, out)
    assert not os.path.exists(folder)
    _builds_after_fix(set_behaviour, inputs, out)


def test_real_compiler_after_a_fault(fake_cc, tmp_path):
    """The same graph with the real compiler (another key) after the fake one crashed."""
    set_behaviour, _ = fake_cc
    inputs, out = _graph()
    set_behaviour("segv")
    with pytest.raises(CompileError, match="SIGSEGV"):
        _compile(inputs, out)
    with config.change_flags(cxx=REAL_CC):
        f = _compile(inputs, out)
    assert f(np.zeros(1)).shape == (1,)
    assert len(cache.list_entries()) == 1


def test_compile_timeout_setting():
    assert config.compile_timeout > 0
    with config.change_flags(compile_timeout="2.5"):   # as FFIGRAPH_FLAGS gives it
        assert config.compile_timeout == 2.5
    for bad in (0, -1, "soon", float("nan"), float("inf"), True):
        with pytest.raises(ValueError, match="compile_timeout"):
            config.compile_timeout = bad
    from ffigraph.config import Config

    assert Config("compile_timeout=7").compile_timeout == 7.0
