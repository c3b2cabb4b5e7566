"""The compile cache: one compile per graph across processes, atomic, private, self-repairing."""
import io
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from ffigraph import config
from ffigraph.linkers.c import cache

GRAPH_SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    import ffigraph.tensor as T
    from ffigraph import function, Mode
    x = T.dvector("x")
    f = function([x], T.exp(x) * {k} + 1, mode=Mode(linker="c", optimizer=None))
    assert np.allclose(f(np.zeros(3)), {k} + 1)
    print("ok")
""")


@pytest.fixture
def counted_cc(tmp_path):
    """A compiler wrapper that counts real compilations of graph libraries and can be made slow (a file
    switch). A build counts once: the command that writes the library (``-o ....so``), the whole
    build of a one-unit library or the link of one built in parts (their units write ``.o`` files)."""
    log = tmp_path / "compiles.log"
    slow = tmp_path / "slow"
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(textwrap.dedent("""\
        #!/bin/sh
        out=""; prev=""
        for arg in "$@"; do
            if [ "$prev" = "-o" ]; then out="$arg"; fi
            prev="$arg"
        done
        case " $* " in *ffigraph_callshim*) ;;   # the call trampoline, built once per cache
        *)
            case "$out" in *.so)
                echo compile >> "{log}"
                if [ -e "{slow}" ]; then sleep 30; fi;;
            esac;;
        esac
        exec gcc "$@"
        """).format(log=log, slow=slow))
    wrapper.chmod(0o755)
    return wrapper, log, slow


def _env(cachedir, cc):
    env = dict(os.environ, FFIGRAPH_COMPILEDIR=str(cachedir), FFIGRAPH_FLAGS="cxx=%s" % cc)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    return env


def _compiles(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_eight_processes_compile_once(tmp_path, counted_cc):
    cc, log, _ = counted_cc
    env = _env(tmp_path / "cache", cc)
    procs = [subprocess.Popen([sys.executable, "-c", GRAPH_SCRIPT.format(k=2)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
             for _ in range(8)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert all(o[0].strip() == "ok" for o in outs)
    assert _compiles(log) == 1


def test_killed_build_leaves_nothing_loadable(tmp_path, counted_cc):
    cc, log, slow = counted_cc
    env = _env(tmp_path / "cache", cc)
    slow.write_text("")
    victim = subprocess.Popen([sys.executable, "-c", GRAPH_SCRIPT.format(k=3)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while _compiles(log) == 0 and time.time() < deadline:
        time.sleep(0.05)
    assert _compiles(log) == 1, "the build never started"
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    subprocess.run(["pkill", "-9", "-f", str(cc)], check=False)  # the orphaned compiler too
    slow.unlink()
    out = subprocess.run([sys.executable, "-c", GRAPH_SCRIPT.format(k=3)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok" and _compiles(log) == 2


def _warm_one(tmp_path, monkeypatch):
    monkeypatch.setenv("FFIGRAPH_COMPILEDIR", str(tmp_path / "cache"))
    monkeypatch.setattr(config, "compiledir", cache.os.path.join(str(tmp_path / "cache"), "cd"))
    source = '#include "ffigraph_abi.h"\nint ffg_probe_%d(void) { return 7; }\n' % os.getpid()
    requirements = dict(headers=[], header_dirs=[], libraries=[], lib_dirs=[], compile_args=[],
                        no_compile_args=[])
    lib = cache.get_or_build(source, requirements)
    return source, requirements, lib


def test_truncated_library_is_rebuilt(tmp_path, monkeypatch):
    source, req, lib = _warm_one(tmp_path, monkeypatch)
    with open(lib, "r+b") as fh:
        fh.truncate(100)
    with pytest.warns(cache.CorruptEntryWarning, match="does not match its recorded hash"):
        again = cache.get_or_build(source, req)
    assert again == lib and os.path.getsize(lib) > 100
    assert cache.get_or_build(source, req) == lib  # now sound: no warning, same path


def test_unreadable_metadata_is_rebuilt(tmp_path, monkeypatch):
    source, req, lib = _warm_one(tmp_path, monkeypatch)
    with open(os.path.join(os.path.dirname(lib), cache.META_NAME), "w") as fh:
        fh.write("{not json")
    with pytest.warns(cache.CorruptEntryWarning, match="metadata"):
        cache.get_or_build(source, req)


def test_world_writable_entry_is_refused(tmp_path, monkeypatch):
    source, req, lib = _warm_one(tmp_path, monkeypatch)
    entry = os.path.dirname(lib)
    os.chmod(entry, 0o777)
    with pytest.raises(cache.CacheSecurityError, match="writable by group or others.*chmod go-w"):
        cache.get_or_build(source, req)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changing an owner needs root")
def test_foreign_owned_entry_is_refused(tmp_path, monkeypatch):
    source, req, lib = _warm_one(tmp_path, monkeypatch)
    os.chown(lib, 65534, 65534)
    monkeypatch.setattr(cache.os, "getuid", lambda: 0)
    with pytest.raises(cache.CacheSecurityError, match="owned by uid 65534"):
        cache.get_or_build(source, req)


def test_cache_dir_is_private(tmp_path, monkeypatch):
    source, req, lib = _warm_one(tmp_path, monkeypatch)
    mode = stat.S_IMODE(os.stat(cache.root()).st_mode)
    assert mode == 0o700


def test_unusable_cache_dir_falls_back_with_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(config, "compiledir", str(blocker / "sub"))
    with pytest.warns(cache.CacheUnavailableWarning, match="not usable"):
        assert cache.get_or_build("int x;", {}) is None
    import numpy as np

    import ffigraph.tensor as T
    from ffigraph import Mode, function

    x = T.dvector("x")
    with pytest.warns(cache.CacheUnavailableWarning):
        f = function([x], x * 5 + 4, mode=Mode(linker="c", optimizer=None))
    assert f(np.ones(2)).tolist() == [9.0, 9.0]


def test_warm_function_runs_no_subprocess(tmp_path, counted_cc):
    cc, log, _ = counted_cc
    env = _env(tmp_path / "cache", cc)
    subprocess.run([sys.executable, "-c", GRAPH_SCRIPT.format(k=4)], env=env, check=True, timeout=300,
                   stdout=subprocess.PIPE)
    guarded = "import subprocess\n" \
              "def refuse(*a, **k): raise AssertionError('a subprocess ran: %r' % (a,))\n" \
              "subprocess.run = subprocess.Popen = refuse\n" + GRAPH_SCRIPT.format(k=4)
    out = subprocess.run([sys.executable, "-c", guarded], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert _compiles(log) == 1


def test_interpreters_get_separate_folders(monkeypatch):
    monkeypatch.setenv("FFIGRAPH_COMPILEDIR", "/base")
    from ffigraph.config import _default_compiledir, _interpreter_tag

    assert _default_compiledir() == "/base/compiledir_" + _interpreter_tag()
    assert sys.implementation.name in _interpreter_tag()


def test_cli(tmp_path, monkeypatch):
    from ffigraph.cache import main

    _warm_one(tmp_path, monkeypatch)
    out = io.StringIO()
    assert main(["info"], out) == 0
    assert "entries: 1" in out.getvalue() and cache.root() in out.getvalue()
    out = io.StringIO()
    main(["list"], out)
    assert out.getvalue().count("ok") == 1
    out = io.StringIO()
    main(["purge", "--older-than", "1"], out)
    assert "removed 0" in out.getvalue()
    out = io.StringIO()
    main(["purge", "--older-than", "0"], out)
    assert "removed 1" in out.getvalue()
    _warm_one(tmp_path, monkeypatch)
    out = io.StringIO()
    main(["clear"], out)
    assert "removed 1" in out.getvalue() and cache.list_entries() == []
    run = subprocess.run([sys.executable, "-m", "ffigraph.cache", "info"], stdout=subprocess.PIPE,
                         universal_newlines=True, env=dict(os.environ, FFIGRAPH_COMPILEDIR=str(tmp_path / "x")))
    assert run.returncode == 0 and "entries: 0" in run.stdout
