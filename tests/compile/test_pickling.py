"""Compiled functions pickle with their graph and libraries: a fresh process with no working C
compiler and an empty compile cache unpickles and runs them; Pool.map works with every start
method; corrupted library bytes are refused; shared variables keep their identity."""
from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import ffigraph as fg
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode
from ffigraph.config import config

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LINKERS = ["c", "cvm", "c|py", "py"]


def _training(linker):
    x = T.dmatrix("x")
    w = fg.shared(np.array([0.5, -1.0, 2.0]), name="w")
    b = fg.shared(np.float64(0.25), name="b")
    y = T.tanh(T.dot(x, w) + b)
    return fg.function([x], [y, (y ** 2).sum()], updates=[(w, w * 0.5 + 1), (b, b + 1)],
                       mode=Mode(linker=linker), name="step")


def _expected(x, w, b, calls):
    outs = []
    for _ in range(calls):
        y = np.tanh(x @ w + b)
        outs.append((y, (y ** 2).sum()))
        w, b = w * 0.5 + 1, b + 1
    return outs, w, b


def _no_compiler_env(tmp_path):
    """A fresh empty compile cache and a C compiler that always fails."""
    cc = tmp_path / "failing-cc"
    cc.write_text("#!/bin/sh\necho 'this test forbids compiling' >&2\nexit 1\n")
    cc.chmod(0o755)
    env = dict(os.environ, CC=str(cc), FFIGRAPH_COMPILEDIR=str(tmp_path / "empty-cache"))
    env.pop("FFIGRAPH_FLAGS", None)   # (a sanitizer build would need a compiler of its own)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


CHILD = r"""
import pickle, sys, json, os
import numpy as np
f = pickle.loads(open(sys.argv[1], "rb").read())
x = np.load(sys.argv[2])
out = [f(x) for _ in range(2)]
shared = {s.name: s.get_value().tolist() for s in f._shared_vars}
entries = []
root = os.path.join(os.environ["FFIGRAPH_COMPILEDIR"])
for dirpath, _, files in os.walk(root):
    if "meta.json" in files:
        entries.append(json.load(open(os.path.join(dirpath, "meta.json"))).get("adopted", False))
print(json.dumps(dict(out=[[o[0].tolist(), float(o[1])] for o in out], shared=shared, adopted=entries)))
"""


@pytest.mark.parametrize("linker", LINKERS)
def test_a_pickled_function_runs_in_a_fresh_process_with_no_compiler(linker, tmp_path):
    f = _training(linker)
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
    payload = tmp_path / "f.pickle"
    payload.write_bytes(pickle.dumps(f))
    np.save(str(tmp_path / "x.npy"), x)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    done = subprocess.run([sys.executable, str(script), str(payload), str(tmp_path / "x.npy")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          env=_no_compiler_env(tmp_path), cwd=str(tmp_path), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    want, w, b = _expected(x, np.array([0.5, -1.0, 2.0]), 0.25, 2)
    for (y, total), (wy, wtotal) in zip(got["out"], want):
        np.testing.assert_allclose(y, wy, rtol=1e-12)
        np.testing.assert_allclose(total, wtotal, rtol=1e-12)
    np.testing.assert_allclose(got["shared"]["w"], w)
    np.testing.assert_allclose(got["shared"]["b"], b)
    # no compiler ran: every library in the new cache came from the pickle
    assert all(got["adopted"]) and (len(got["adopted"]) > 0) == (linker != "py"), got["adopted"]


def test_functions_pickled_together_share_their_shared_variables():
    x = T.dvector("x")
    s = fg.shared(np.float64(1.0), name="s")
    f = fg.function([x], x * s, updates=[(s, s + 1)])
    g = fg.function([x], x + s)
    f2, g2, s2 = pickle.loads(pickle.dumps((f, g, s)))
    assert f2._shared_vars[0] is g2._shared_vars[0] is s2
    f2(np.ones(2))
    assert s2.get_value() == 2.0 and s.get_value() == 1.0
    np.testing.assert_array_equal(g2(np.ones(2)), [3.0, 3.0])


def test_copies_pickle_unless_they_swap_or_drop_updates():
    x = T.dvector("x")
    s = fg.shared(np.float64(3.0), name="s")
    f = fg.function([x], x * s, updates=[(s, s + 1)])
    c = pickle.loads(pickle.dumps(f.copy()))
    np.testing.assert_array_equal(c(np.ones(2)), [3.0, 3.0])
    with pytest.raises(pickle.PicklingError, match="copy"):
        pickle.dumps(f.copy(delete_updates=True))


def _corrupt(data):
    """The pickle with one byte of its (first) library's code flipped."""
    start = data.index(b"\x7fELF")
    at = start + 3000
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


def test_corrupted_library_bytes_are_refused_and_never_loaded(tmp_path):
    f = _training("c")
    data = pickle.dumps(f)
    bad = _corrupt(data)
    before = set(os.listdir(os.path.join(config.compiledir, "entries")))
    with pytest.raises(pickle.UnpicklingError, match="SHA-256"):
        pickle.loads(bad)
    assert set(os.listdir(os.path.join(config.compiledir, "entries"))) == before


def test_foreign_library_bytes_are_refused_before_loading():
    """A record whose bytes (with a matching hash) are another graph's library."""
    from ffigraph.compile import pickling

    f = _training("c")
    x = T.dvector("x")
    other = fg.function([x], x * 7, mode=Mode(linker="c"))
    recipe, libraries, kept, settings = pickling.function_state(f)
    foreign = pickling.library_records(other)[0]
    swapped = dict(libraries[0], data=foreign["data"], lib_sha256=foreign["lib_sha256"])
    with pytest.raises(pickle.UnpicklingError, match="not the library"):
        pickling.rebuild_function(recipe, [swapped], kept, settings)


def test_pickle_library_off_keeps_pickles_small():
    f = _training("c")
    with_library = len(pickle.dumps(f))
    with config.using(dict(pickle__library=False)):
        without = pickle.dumps(f)
    assert len(without) < with_library / 5
    g = pickle.loads(without)   # compiled again here (the cache has it)
    x = np.ones((1, 3))
    np.testing.assert_allclose(g(x)[0], np.tanh(x @ np.array([0.5, -1.0, 2.0]) + 0.25))


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_pool_map_with_every_start_method(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip("start method %s is not available here" % method)
    x = T.dmatrix("x")
    w = fg.shared(np.arange(3.0), name="w")
    f = fg.function([x], T.exp(T.dot(x, w)) + 1)
    chunks = [np.full((2, 3), float(k)) for k in range(4)]
    with multiprocessing.get_context(method).Pool(2) as pool:
        got = pool.map_async(f, chunks).get(timeout=120)   # a worker that cannot unpickle fails, never hangs
    for chunk, out in zip(chunks, got):
        np.testing.assert_allclose(out, np.exp(chunk @ np.arange(3.0)) + 1)


SHARED_CACHE_CHILD = r"""
import sys
import numpy as np
import ffigraph as fg, ffigraph.tensor as T
x = T.dvector("x")
f = fg.function([x], T.exp(x) * 3 - x, mode=fg.Mode(linker="c"))
print(repr(float(f(np.array([0.5, 2.0])).sum())))
"""


def test_a_cache_directory_shared_under_two_names_builds_once(tmp_path):
    """The cache on a shared directory, reached by each process under a path of its own (as two
    machines see one network mount): the first process builds, the second (same compiler) loads."""
    real = tmp_path / "shared-cache"
    real.mkdir(mode=0o700)
    alias = tmp_path / "mount-point"
    alias.symlink_to(real, target_is_directory=True)
    log = tmp_path / "compiles.log"
    cc = tmp_path / "counting-cc"   # gcc, with a line per library it writes
    cc.write_text("#!/bin/sh\n"
                  "case \" $* \" in *callshim*) ;; *'.so '*) echo build >> '%s' ;; esac\n"
                  "exec gcc \"$@\"\n" % log)
    cc.chmod(0o755)
    script = tmp_path / "child.py"
    script.write_text(SHARED_CACHE_CHILD)
    printed = []
    for path in (real, alias):
        env = dict(os.environ, FFIGRAPH_COMPILEDIR=str(path), PYTHONPATH=ROOT, CC=str(cc))
        env.pop("FFIGRAPH_FLAGS", None)
        done = subprocess.run([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        printed.append(done.stdout)
    assert printed[0] == printed[1]
    builds = log.read_text().splitlines() if log.exists() else []
    assert len([d for d, _, files in os.walk(str(real)) if "lib.so" in files]) == 1
    assert builds == ["build"], builds   # the graph's library, once (the call trampoline aside)
