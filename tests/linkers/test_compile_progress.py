"""A compile says that it starts (INFO on ``ffigraph.linkers``) and, on a terminal, shows its seconds
once it runs past ``build.PROGRESS_AFTER``; nothing is drawn on a pipe or for a short compile."""
import io
import logging
import random
import re
import threading
import time

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, config, function
from ffigraph.linkers.c import build
from ffigraph.linkers.c.build import CompileError, build_library

THREAD = "ffigraph-compile-progress"


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def _progress_threads():
    return [t for t in threading.enumerate() if t.name == THREAD]


@pytest.fixture
def slow_compiler(monkeypatch):
    """build.run_tool replaced by a stub that sleeps ``delay[0]`` seconds, writes something that looks
    like a library, and records whether a progress thread was running meanwhile."""
    state = {"delay": 0.0, "threads": None, "rc": 0}

    def fake_run_tool(command, timeout):
        time.sleep(state["delay"])
        state["threads"] = _progress_threads()
        if state["rc"]:
            return state["rc"], "error: made up"
        with open(command[command.index("-o") + 1], "wb") as fh:
            fh.write(b"\x7fELF" + b"\0" * 60)
        return 0, ""

    monkeypatch.setattr(build, "run_tool", fake_run_tool)
    return state


def _starts(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "ffigraph.linkers" and r.levelno == logging.INFO and r.getMessage().startswith("compiling ")]


# ------------------------------------------------------------------ the INFO line


def test_cache_miss_logs_before_the_compiler_starts(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="ffigraph")
    k = 1.0 + random.randrange(1, 10 ** 9) / 10 ** 9   # a fresh graph (the in-process memo keys on the source)
    x = T.dvector("x")
    with config.change_flags(compiledir=str(tmp_path / "cd")):
        f = function([x], x * k + 1, mode=Mode(linker="c", optimizer=None))
        np.testing.assert_allclose(f(np.zeros(2)), [1.0, 1.0])
    # (a fresh compiledir also builds the call shim, ffigraph_callshim.c, once)
    starts = [m for m in _starts(caplog) if "callshim" not in m]
    assert len(starts) == 1, [r.getMessage() for r in caplog.records]
    # the node count and the key when the caller passes them, else the size of the source
    assert re.match(r"compiling (\d+ nodes?|lib\.c \(\d+ kB of C\))( \(cache miss, key [0-9a-f]{12}\))?$",
                    starts[0]), starts
    messages = [r.getMessage() for r in caplog.records]
    built = [i for i, m in enumerate(messages) if m.startswith("cache miss: built ")]
    assert built and messages.index(starts[0]) < built[0], messages


def test_cache_hit_logs_no_compile(tmp_path, caplog):
    k = 1.0 + random.randrange(1, 10 ** 9) / 10 ** 9
    x = T.dvector("x")
    with config.change_flags(compiledir=str(tmp_path / "cd")):
        f = function([x], x * k + 1, mode=Mode(linker="c", optimizer=None))
        src = f.maker.linker.compiled.source
        caplog.set_level(logging.INFO, logger="ffigraph")
        from ffigraph.linkers.c import cache
        assert cache.get_or_build(src.source, src.requirements)   # the warm path
    assert _starts(caplog) == []


def test_the_line_names_nodes_and_key(tmp_path, caplog, slow_compiler):
    caplog.set_level(logging.INFO, logger="ffigraph")
    build_library("int f(void) { return 1; }\n", "lib", {}, directory=str(tmp_path), nodes=353, key="ab" * 32)
    build_library("int f(void) { return 1; }\n", "one", {}, nodes=1)
    build_library("int f(void) { return 1; }\n", "lib", {}, directory=str(tmp_path))
    assert _starts(caplog) == ["compiling 353 nodes (cache miss, key %s)" % ("ab" * 6),
                               "compiling 1 node (not cached)", "compiling lib.c (1 kB of C)"]


# ------------------------------------------------------------------ the progress line


def test_no_thread_and_no_output_when_stderr_is_not_a_terminal(tmp_path, monkeypatch, slow_compiler):
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setattr(build, "PROGRESS_AFTER", 0.01)
    slow_compiler["delay"] = 0.3
    build_library("int f(void) { return 1; }\n", "lib", {}, directory=str(tmp_path), nodes=7)
    assert slow_compiler["threads"] == []
    assert stream.getvalue() == ""


def test_a_short_compile_draws_nothing_on_a_terminal(tmp_path, monkeypatch, slow_compiler):
    stream = FakeTTY()
    monkeypatch.setattr("sys.stderr", stream)
    slow_compiler["delay"] = 0.05   # well under the default 2 s
    build_library("int f(void) { return 1; }\n", "lib", {}, directory=str(tmp_path), nodes=7)
    assert stream.getvalue() == ""
    assert _progress_threads() == []


def test_a_long_compile_shows_its_seconds_on_a_terminal(tmp_path, monkeypatch, slow_compiler):
    stream = FakeTTY()
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setattr(build, "PROGRESS_AFTER", 0.05)
    monkeypatch.setattr(build, "PROGRESS_EVERY", 0.02)
    slow_compiler["delay"] = 0.4
    build_library("int f(void) { return 1; }\n", "lib", {}, directory=str(tmp_path), nodes=7, key="cd" * 32)
    out = stream.getvalue()
    assert [t.name for t in slow_compiler["threads"]] == [THREAD]   # it ran while the compiler did
    assert _progress_threads() == []                               # and is gone after
    lines = [part for part in out.split("\r") if part.strip()]
    assert len(lines) >= 3, out          # redrawn in place
    assert re.match(r"ffigraph: compiling 7 nodes \(cache miss, key cdcdcdcdcdcd\) \.\.\. \d+ s [|/\\-] *$",
                    lines[0]), lines
    assert "\n" not in out               # one line, never scrolled
    width = max(len(part) for part in lines)
    assert out.endswith("\r" + " " * width + "\r"), repr(out[-100:])   # erased at the end


def test_a_failed_long_compile_erases_its_line(tmp_path, monkeypatch, slow_compiler):
    stream = FakeTTY()
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setattr(build, "PROGRESS_AFTER", 0.02)
    monkeypatch.setattr(build, "PROGRESS_EVERY", 0.02)
    slow_compiler.update(delay=0.2, rc=1)
    with config.change_flags(compiledir=str(tmp_path / "cd")):   # where the failed source is kept
        with pytest.raises(CompileError, match="made up"):
            build_library("int f(void) { return 1; }\n", "lib", {}, directory=str(tmp_path), nodes=7)
    out = stream.getvalue()
    assert "ffigraph: compiling 7 nodes" in out
    assert re.search(r"\r +\r$", out), repr(out[-100:])
    assert _progress_threads() == []
