"""Logging under the ``ffigraph`` logger: rewrites (DEBUG), the compile cache (INFO), Python fallbacks
(WARNING), and silence when the application configures nothing."""
import logging
import os
import random
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, config, function
from ffigraph.graph import rewriting as graph_rewriting
from ffigraph.linkers.c import cache
from ffigraph.linkers.c.build import build_library
from helpers import PythonOnly


def _records(caplog, name, level):
    return [r for r in caplog.records if r.name.startswith(name) and r.levelno == level]


def _unique():
    # the in-process memo (load._memo) keys on the source: a fresh constant makes a fresh graph
    return 1.0 + random.randrange(1, 10 ** 9) / 10 ** 9


# ------------------------------------------------------------------ rewrites (DEBUG)


def _rewritten_graph():
    x, y = T.dvector("x"), T.dvector("y")
    return [x, y], (T.exp(x) * y + x) * 1


def test_fired_rewrites_are_logged_at_debug(caplog):
    caplog.set_level(logging.DEBUG, logger="ffigraph")
    inputs, out = _rewritten_graph()
    f = function(inputs, out, mode=Mode(linker="py", optimizer="fast_run"))
    np.testing.assert_allclose(f(np.zeros(2), np.ones(2)), [1.0, 1.0])
    lines = [r.getMessage() for r in _records(caplog, "ffigraph.rewriting", logging.DEBUG)]
    text = "\n".join(lines)
    # a node rewriter inside a group names both, and the node it replaced
    assert re.search(r"^canonicalize: local_mul_one replaced \S.* with \S", text, re.M), text
    # a whole-graph rewrite names itself and lists what it swallowed
    fusion = [ln for ln in lines if ln.startswith("fusion replaced ")]
    assert fusion, text
    assert "exp" in fusion[0], fusion[0]
    # one line per phase the mode ran
    for phase in ("merge", "canonicalize", "fusion"):
        assert re.search(r"^phase %s: \d+ -> \d+ nodes in [\d.]+ s$" % phase, text, re.M), text


def test_nothing_is_formatted_when_debug_is_off(caplog, monkeypatch):
    calls = []
    real = graph_rewriting._describe
    monkeypatch.setattr(graph_rewriting, "_describe", lambda v: calls.append(1) or real(v))
    caplog.set_level(logging.WARNING, logger="ffigraph")
    inputs, out = _rewritten_graph()
    function(inputs, out, mode=Mode(linker="py", optimizer="fast_run"))
    assert not [r for r in caplog.records if r.levelno < logging.WARNING]
    assert calls == []
    caplog.set_level(logging.DEBUG, logger="ffigraph")   # the same compile does format when asked
    inputs, out = _rewritten_graph()
    function(inputs, out, mode=Mode(linker="py", optimizer="fast_run"))
    assert calls


# ------------------------------------------------------------------ the compile cache (INFO)


HIT_SCRIPT = textwrap.dedent("""
    import logging, sys
    logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
    import numpy as np
    import ffigraph.tensor as T
    from ffigraph import Mode, config, function
    config.compiledir = sys.argv[1]
    x = T.dvector("x")
    f = function([x], T.exp(x) * float(sys.argv[2]) + 1, mode=Mode(linker="c", optimizer=None))
    f(np.zeros(2))
""")


def _cache_compile(k):
    x = T.dvector("x")
    return function([x], T.exp(x) * k + 1, mode=Mode(linker="c", optimizer=None))


def test_cache_miss_then_hit(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="ffigraph")
    compiledir = str(tmp_path / "cd")
    k = _unique()
    with config.change_flags(compiledir=compiledir):
        f = _cache_compile(k)
        np.testing.assert_allclose(f(np.zeros(2)), [k + 1, k + 1])
        msgs = [r.getMessage() for r in _records(caplog, "ffigraph.cache", logging.INFO)]
        misses = [m for m in msgs if m.startswith("cache miss")]
        assert len(misses) == 1, msgs
        found = re.match(r"cache miss: built (\S+) in (\d+\.\d\d) s$", misses[0])
        assert found, misses[0]
        assert found.group(1).startswith(compiledir) and os.path.isfile(found.group(1))
        assert not [m for m in msgs if m.startswith("cache hit")]

        # the same source again, past the in-process memo: the warm path
        caplog.clear()
        src = f.maker.linker.compiled.source
        assert cache.get_or_build(src.source, src.requirements) == found.group(1)
        msgs = [r.getMessage() for r in _records(caplog, "ffigraph.cache", logging.INFO)]
        assert msgs == ["cache hit: %s" % found.group(1)]

    # another process: a hit, no build
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", HIT_SCRIPT, compiledir, repr(k)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ffigraph.cache INFO cache hit: %s" % found.group(1) in proc.stderr, proc.stderr
    assert "cache miss" not in proc.stderr and "built" not in proc.stderr, proc.stderr


def test_hit_after_waiting_for_another_build(tmp_path, caplog):
    from filelock import FileLock

    caplog.set_level(logging.INFO, logger="ffigraph")
    with config.change_flags(compiledir=str(tmp_path / "cd")):
        f = _cache_compile(_unique())
        src = f.maker.linker.compiled.source
        key = cache.cache_key(src.source, src.requirements)
        cache.shutil.rmtree(cache.entry_dir(key))
        caplog.clear()
        got = []
        with FileLock(os.path.join(cache.root(), "locks", key + ".lock")):   # "another process" builds
            waiter = threading.Thread(target=lambda: got.append(cache.get_or_build(src.source, src.requirements)))
            waiter.start()
            waiter.join(0.5)
            assert waiter.is_alive(), "get_or_build did not wait for the lock"
            _, _, tmp_root = cache._folders()
            built = cache._publish(key, src.source, src.requirements, None, tmp_root)
        waiter.join(120)
    assert got == [built]
    msgs = [r.getMessage() for r in _records(caplog, "ffigraph.cache", logging.INFO)]
    assert len(msgs) == 1 and re.match(r"cache hit after waiting \d+\.\d\d s for another build: ", msgs[0]), msgs
    assert msgs[0].endswith(built)


def test_damaged_entry_rebuilt_is_logged(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="ffigraph")
    with config.change_flags(compiledir=str(tmp_path / "cd")):
        f = _cache_compile(_unique())
        src = f.maker.linker.compiled.source
        lib = os.path.join(cache.entry_dir(cache.cache_key(src.source, src.requirements)), cache.LIB_NAME)
        # a new file over it, never the loaded one cut short in place (its mapping would fault: SIGBUS)
        with open(lib + ".bad", "wb") as fh:
            fh.write(b"\x7fELF" + b"\0" * 96)
        os.replace(lib + ".bad", lib)
        caplog.clear()
        with pytest.warns(cache.CorruptEntryWarning):
            assert cache.get_or_build(src.source, src.requirements) == lib
    msgs = [r.getMessage() for r in _records(caplog, "ffigraph.cache", logging.INFO)]
    assert len(msgs) == 1, msgs
    assert re.match(r"cache entry damaged \(library does not match its recorded hash.*\): rebuilt %s in "
                    r"\d+\.\d\d s$" % re.escape(lib), msgs[0]), msgs


def test_private_build_logs_its_time(caplog):
    caplog.set_level(logging.INFO, logger="ffigraph")
    name = "ffg_logtest_%d" % random.randrange(10 ** 9)
    path = build_library("int %s(void) { return 1; }\n" % name, name, {})
    msgs = [r.getMessage() for r in _records(caplog, "ffigraph.cache", logging.INFO)]
    assert msgs == [m for m in msgs if m.startswith("built ")] and len(msgs) == 1, msgs
    assert re.match(r"built %s privately \(not cached\) in \d+\.\d\d s$" % re.escape(path), msgs[0]), msgs


def test_no_cache_log_per_call(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="ffigraph")
    with config.change_flags(compiledir=str(tmp_path / "cd")):
        f = _cache_compile(_unique())
        caplog.clear()
        for _ in range(3):
            f(np.zeros(2))
    assert caplog.records == []


# ------------------------------------------------------------------ Python fallback (WARNING)


@pytest.mark.parametrize("linker", ["c|py", "cvm"])
def test_python_fallback_warns_once_per_compile(linker, caplog):
    caplog.set_level(logging.DEBUG, logger="ffigraph")
    x = T.dvector("x")
    f = function([x], PythonOnly()(T.exp(x)) + 1, mode=Mode(linker=linker, optimizer=None))
    warnings = _records(caplog, "ffigraph", logging.WARNING)
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].name == "ffigraph.linkers"
    assert re.match(r"linker %s: 1 node\(s\) without C code run their Python perform: #1 PythonOnly"
                    % re.escape(linker), warnings[0].getMessage()), warnings[0].getMessage()
    caplog.clear()
    np.testing.assert_allclose(f(np.zeros(2)), [11.0, 11.0])
    f(np.zeros(2))
    assert not _records(caplog, "ffigraph", logging.WARNING)   # compile time only, not per call


def test_python_linker_does_not_warn(caplog):
    caplog.set_level(logging.DEBUG, logger="ffigraph")
    x = T.dvector("x")
    f = function([x], PythonOnly()(T.exp(x)) + 1, mode=Mode(linker="py", optimizer=None))
    np.testing.assert_allclose(f(np.zeros(2)), [11.0, 11.0])
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


# ------------------------------------------------------------------ silent by default


def test_package_logger_has_a_null_handler():
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("ffigraph").handlers)


SILENT_SCRIPT = textwrap.dedent("""
    import numpy as np
    import ffigraph.tensor as T
    from ffigraph import Mode, function
    from helpers import PythonOnly   # tests/ is on the child's path (PYTHONPATH from sys.path)

    x = T.dvector("x")
    f = function([x], PythonOnly()(T.exp(x)) + 1, mode=Mode(linker="cvm", optimizer=None))
    assert list(f(np.zeros(2))) == [11.0, 11.0]
    import logging
    assert logging.getLogger("ffigraph.linkers").isEnabledFor(logging.WARNING)   # it was logged, unseen
""")


def test_unconfigured_logging_writes_nothing(tmp_path, capfd):
    # pytest gives the root logger handlers of its own, so "unconfigured" needs a process of its own
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), FFIGRAPH_COMPILEDIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", SILENT_SCRIPT], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "" and proc.stderr == ""
    # and in this process, with pytest's capture of logging off for the package, stderr stays empty too
    logger = logging.getLogger("ffigraph")
    propagate, logger.propagate = logger.propagate, False
    try:
        x = T.dvector("x")
        function([x], PythonOnly()(T.exp(x)) + 1, mode=Mode(linker="c|py", optimizer=None))
    finally:
        logger.propagate = propagate
    out, err = capfd.readouterr()
    assert out == "" and err == ""
