"""The compile cache's promises against tampering: the warm path checks what the build path checks,
nothing is loaded that was not verified, and nothing is written through a link or outside the cache.

Each test plants one kind of damage or tampering in a private cache (``tmp_path``) and shows a
refusal with a message that names the path, or a rebuild — never a wrong answer, a crash or a write
outside the cache. The warm path is reached in this process by forgetting the loaded libraries
(``load._memo``), as a new process would start.
"""
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import weakref

import numpy as np
import pytest
from filelock import FileLock

import ffigraph.tensor as T
from ffigraph import Mode, config, function
from ffigraph.abi import ABI_VERSION
from ffigraph.cache import main as cache_cli
from ffigraph.linkers.c import build, cache, callshim, load, pycode
from ffigraph.linkers.c.library_file import check_library_file

IS_ROOT = hasattr(os, "getuid") and os.getuid() == 0
X = np.array([-1.5, 0.0, 0.25, 2.0])


@pytest.fixture
def cachedir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setattr(config, "compiledir", str(folder))
    monkeypatch.setattr(load, "_memo", weakref.WeakValueDictionary())
    monkeypatch.setattr(pycode, "_memo", {})
    return folder


def _tanh3():
    x = T.dvector("x")
    return function([x], T.tanh(x) * 3, mode=Mode(linker="c"))


def _sin7():
    x = T.dvector("x")
    return function([x], T.sin(x) + 7, mode=Mode(linker="c"))


def _as_new_process(monkeypatch):
    monkeypatch.setattr(load, "_memo", weakref.WeakValueDictionary())
    monkeypatch.setattr(pycode, "_memo", {})


def _record_of(f):
    """(path of the graph's index record, the entry folder of its library)."""
    entry = os.path.dirname(f.maker.linker.compiled.library.path)
    key = os.path.basename(entry)
    graphs = os.path.join(cache.root(), cache.GRAPHS)
    (record,) = [os.path.join(graphs, shard, name) for shard in os.listdir(graphs)
                 for name in os.listdir(os.path.join(graphs, shard))
                 if json.loads(open(os.path.join(graphs, shard, name)).read())["key"] == key]
    return record, entry


def test_warm_hits_check_every_folder_on_the_way(cachedir, monkeypatch):
    f = _tanh3()
    record, entry = _record_of(f)
    folders = [str(cachedir), os.path.join(str(cachedir), "entries"), os.path.dirname(entry),
               os.path.join(str(cachedir), "graphs"), os.path.dirname(record)]
    for folder in folders:
        os.chmod(folder, 0o777)
        _as_new_process(monkeypatch)
        try:
            with pytest.raises(cache.CacheSecurityError, match="writable by group or others") as info:
                _tanh3()
            assert folder in str(info.value)
        finally:
            os.chmod(folder, 0o700)
    if IS_ROOT:   # another user's shard folder, as a foreign owner's would be
        os.chown(os.path.dirname(entry), 65534, 65534)
        _as_new_process(monkeypatch)
        with pytest.raises(cache.CacheSecurityError, match="owned by uid 65534"):
            _tanh3()
        os.chown(os.path.dirname(entry), 0, 0)
    _as_new_process(monkeypatch)
    g = _tanh3()
    assert g.maker.linker.compiled.warm_hit
    np.testing.assert_allclose(g(X), np.tanh(X) * 3, rtol=1e-15)


def test_an_index_record_naming_another_graphs_entry_is_not_believed(cachedir, monkeypatch):
    f, g = _tanh3(), _sin7()
    record, _ = _record_of(f)
    other = json.loads(open(_record_of(g)[0]).read())
    planted = json.loads(open(record).read())
    planted.update(key=other["key"], prefix=other["prefix"])
    with open(record, "w") as fh:
        json.dump(planted, fh)
    _as_new_process(monkeypatch)
    h = _tanh3()
    np.testing.assert_allclose(h(X), np.tanh(X) * 3, rtol=1e-15)   # not sin(x) + 7
    assert not h.maker.linker.compiled.warm_hit
    assert json.loads(open(record).read())["key"] != other["key"]   # the record was written again
    # an entry that says it was built for this graph but describes another one: refused after loading
    entry = cache.entry_dir(other["key"])
    meta = cache.entry_meta(entry)
    meta["graph_keys"].append(planted["structural_key"])
    cache.write_private_file(os.path.join(entry, cache.META_NAME), json.dumps(meta).encode())
    with open(record, "w") as fh:
        json.dump(planted, fh)
    _as_new_process(monkeypatch)
    with pytest.warns(cache.CorruptEntryWarning, match="describes another one"):
        h = _tanh3()
    np.testing.assert_allclose(h(X), np.tanh(X) * 3, rtol=1e-15)


def test_a_library_damaged_on_disk_is_not_pickled_and_half_a_library_is_never_adopted(cachedir, monkeypatch):
    f = _tanh3()
    lib = f.maker.linker.compiled.library.path
    data = open(lib, "rb").read()
    half = data[:len(data) // 2]
    # replaced on disk (a new inode: this process's mapping of the old one stays whole)
    with open(lib + ".new", "wb") as fh:
        fh.write(half)
    os.replace(lib + ".new", lib)
    with pytest.warns(cache.CorruptEntryWarning, match="no longer matches"):
        text = pickle.dumps(f)
    assert half not in text and not os.path.exists(lib)   # not sent; its entry removed
    _as_new_process(monkeypatch)
    g = pickle.loads(text)
    np.testing.assert_allclose(g(X), np.tanh(X) * 3, rtol=1e-15)
    for _, path, _, _, sound in cache.list_entries():
        assert sound
        check_library_file(os.path.join(path, cache.LIB_NAME), ABI_VERSION)   # complete, of this ABI
    # a pickle whose bytes are half a library (with their own hash), or another ABI's: refused
    from ffigraph.compile import pickling
    (record,) = pickling.library_records(g)
    note = record["data"].index(b"ffigraph\0")
    other_abi = record["data"][:note + 12] + (ABI_VERSION + 1).to_bytes(4, "little") + record["data"][note + 16:]
    for bad, why in ((record["data"][:len(record["data"]) // 2], "incomplete"),
                     (other_abi, "built for ABI version %d" % (ABI_VERSION + 1))):
        forged = dict(record, data=bad, lib_sha256=pickling.hashlib.sha256(bad).hexdigest(), key="0" * 64)
        with pytest.raises(pickle.UnpicklingError, match=why):
            pickling.adopt(forged)
        assert not os.path.exists(cache.entry_dir("0" * 64))
    # bytes without the note (an older ffigraph's pickle): not adopted, the graph is compiled again
    no_note = record["data"].replace(b"ffigraph\0", b"ffigrapX\0")
    why = pickling.adopt(dict(record, data=no_note, lib_sha256=pickling.hashlib.sha256(no_note).hexdigest(),
                              key="1" * 64))
    assert "carries no ffigraph ABI note" in why and not os.path.exists(cache.entry_dir("1" * 64))


def test_a_failed_compile_writes_its_source_through_no_link(cachedir, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    failed = cachedir / "failed"
    failed.mkdir(parents=True, mode=0o700)
    os.chmod(str(cachedir), 0o700)
    os.symlink(str(victim), str(failed / "lib.c"))
    with pytest.raises(build.CompileError) as info:
        cache.get_or_build("this is not C;", {})
    assert victim.read_text() == "precious"
    kept = info.value.source_path
    assert kept == str(failed / "lib.c") and not os.path.islink(kept)
    assert open(kept).read() == "this is not C;"
    assert os.stat(kept).st_mode & 0o077 == 0


def test_a_foreign_or_writable_pycode_file_is_compiled_again_and_replaced(cachedir, monkeypatch):
    f = _tanh3()
    files = [os.path.join(d, n) for d, _, names in os.walk(str(cachedir / cache.PYCODE)) for n in names]
    assert files
    for damage in ("mode", "owner", "hash"):
        if damage == "owner" and not IS_ROOT:
            continue
        for path in files:
            if damage == "mode":
                os.chmod(path, 0o666)
            elif damage == "owner":
                os.chown(path, 65534, 65534)
            else:
                content = open(path, "rb").read()
                cache.write_private_file(path, content[:-3] + b"xyz")   # the recorded hash no longer matches
        _as_new_process(monkeypatch)
        g = _tanh3()
        np.testing.assert_allclose(g(X), np.tanh(X) * 3, rtol=1e-15)
        for path in files:
            st = os.stat(path)
            assert st.st_mode & 0o077 == 0 and st.st_uid == os.getuid()
            assert pycode.marshalled(open(path, "rb").read()) is not None


def test_symlinks_at_every_path_the_cache_writes_are_never_followed(cachedir, tmp_path, monkeypatch):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    monkeypatch.setattr(cache, "_compiler_ids", {})   # (so that compilers.json is written)
    f = _tanh3()
    record, entry = _record_of(f)
    key = os.path.basename(entry)
    shutil.rmtree(entry)   # a cold build again, with links planted where it writes
    planted = [str(cachedir / "compilers.json")]
    planted += [os.path.join(d, n) for d, _, names in os.walk(str(cachedir / cache.PYCODE)) for n in names]
    for path in planted:
        os.unlink(path)
        os.symlink(str(victim), path)
    _as_new_process(monkeypatch)
    monkeypatch.setattr(cache, "_compiler_ids", {})
    g = _tanh3()
    np.testing.assert_allclose(g(X), np.tanh(X) * 3, rtol=1e-15)
    assert victim.read_text() == "precious"
    for path in planted:   # replaced by files of the cache's own
        assert not os.path.islink(path) and os.path.isfile(path)
    os.unlink(record)   # an index record planted as a link: refused, as an entry would be
    os.symlink(str(victim), record)
    _as_new_process(monkeypatch)
    with pytest.raises(cache.CacheSecurityError, match="symbolic link"):
        _tanh3()
    os.unlink(record)
    # a lock file planted as a link: the build refuses (opening it would truncate the target)
    lock = str(cachedir / "locks" / (key + ".lock"))
    shutil.rmtree(entry)
    os.unlink(lock)
    os.symlink(str(victim), lock)
    _as_new_process(monkeypatch)
    with pytest.raises(cache.CacheSecurityError, match="symbolic link"):
        cache.get_or_build(g.maker.linker.compiled.source.source, g.maker.linker.compiled.source.requirements)
    assert victim.read_text() == "precious"
    os.unlink(lock)
    # a shard folder planted as a link to a folder outside the cache: refused, nothing written there
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    shutil.rmtree(os.path.dirname(entry))
    os.symlink(str(outside), os.path.dirname(entry))
    _as_new_process(monkeypatch)
    with pytest.raises(cache.CacheSecurityError, match="symbolic link"):
        _tanh3()
    assert os.listdir(str(outside)) == []


def test_the_call_trampoline_is_checked_against_its_recorded_hash(cachedir):
    path = callshim._built()
    assert callshim.sound_library(path)
    with open(path + ".new", "wb") as fh:
        fh.write(open(path, "rb").read()[:1000])
    os.replace(path + ".new", path)
    assert not callshim.sound_library(path)
    again = callshim._built()   # built again, not loaded as it was
    assert again == path and callshim.sound_library(path)
    check_library_file_ok = open(path, "rb").read()[:4] == b"\x7fELF"
    assert check_library_file_ok


def _abandon_a_build(cachedir, tmp_path):
    """A process killed (SIGKILL) in the middle of a build: its tmp/build-* folder stays."""
    slow_cc = tmp_path / "slow-cc"
    slow_cc.write_text("#!/bin/sh\ncase \"$1\" in --version) echo slow-cc 1.0; exit 0;; esac\nsleep 60\n")
    slow_cc.chmod(0o755)
    script = textwrap.dedent("""
        from ffigraph.linkers.c import cache
        cache.get_or_build("int abandoned_%d;" % 1, {})
    """)
    env = dict(os.environ, FFIGRAPH_FLAGS="compiledir=%s,cxx=%s" % (cachedir, slow_cc),
               PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True)
    deadline = time.time() + 60
    tmp = cachedir / "tmp"
    while time.time() < deadline and not (tmp.is_dir() and any(n.startswith("build-") for n in os.listdir(str(tmp)))):
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    return [n for n in os.listdir(str(tmp)) if n.startswith("build-")]


def test_abandoned_builds_are_reported_and_purged_and_live_ones_kept(cachedir, tmp_path, capsys):
    abandoned = _abandon_a_build(cachedir, tmp_path)
    assert len(abandoned) == 1
    live_key = "ab" * 32   # a build in progress: its lock is held
    live = cachedir / "tmp" / ("build-%s-live" % live_key)
    live.mkdir(mode=0o700)
    lock = FileLock(str(cachedir / "locks" / (live_key + ".lock")))
    with lock:
        assert cache_cli(["info"]) == 0
        assert "abandoned build folders: 1" in capsys.readouterr().out
        assert cache_cli(["purge", "--older-than", "0"]) == 0
        assert "removed 1 abandoned build folder" in capsys.readouterr().out
        assert sorted(os.listdir(str(cachedir / "tmp"))) == [live.name]
    assert cache.leftover_builds(older_than=1e9) == [(str(live), "abandoned build of key %s (its lock is free)"
                                                      % live_key[:12])]


@pytest.fixture
def small_disk(tmp_path):
    """A 512 kB file system (tmpfs), mounted for the test; skipped where mounting is not allowed."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (%s): the full-disk case needs one"
                    % done.stderr.decode().strip())
    yield mount
    subprocess.run(["umount", "-l", str(mount)])


def test_a_full_disk_names_what_was_being_written_where_and_the_room_needed(small_disk, monkeypatch):
    monkeypatch.setattr(config, "compiledir", str(small_disk / "cache"))
    source = "/* %s */\nint full_disk;\n" % ("x" * 700000)   # larger than the disk
    with pytest.raises(OSError) as info:
        cache.get_or_build(source, {})
    text = str(info.value)
    assert info.value.errno == 28 and "no space left on device writing" in text
    assert str(small_disk / "cache" / "tmp") in text and "needs about 3.1 MB" in text
    assert not [n for n in os.listdir(str(small_disk / "cache" / "tmp"))]   # nothing half-built left


@pytest.fixture
def read_only_view(tmp_path):
    """A folder bind-mounted on itself, so that the test can remount it read-only; skipped where
    bind mounts are not allowed."""
    view = tmp_path / "ro"
    view.mkdir(mode=0o700)
    done = subprocess.run(["mount", "--bind", str(view), str(view)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot bind-mount here (%s): the read-only cache case needs it" % done.stderr.decode().strip())
    yield view
    subprocess.run(["umount", "-l", str(view)])


def test_a_read_only_cache_serves_warm_hits_and_builds_misses_privately(read_only_view, monkeypatch):
    view = read_only_view
    monkeypatch.setattr(config, "compiledir", str(view / "cache"))
    _tanh3()
    subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)   # the same cache, read-only
    _as_new_process(monkeypatch)
    monkeypatch.setattr(cache, "_fallback_said", set())
    f = _tanh3()
    assert f.maker.linker.compiled.warm_hit
    np.testing.assert_allclose(f(X), np.tanh(X) * 3, rtol=1e-15)
    with pytest.warns(cache.CacheUnavailableWarning, match="cannot be written.*said once"):
        g = _sin7()
    np.testing.assert_allclose(g(X), np.sin(X) + 7, rtol=1e-15)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", cache.CacheUnavailableWarning)   # said once only
        x = T.dvector("x")
        h = function([x], T.cos(x) - 2, mode=Mode(linker="c"))
    np.testing.assert_allclose(h(X), np.cos(X) - 2, rtol=1e-15)


def test_verify_reports_and_fixes_what_does_not_match(cachedir, monkeypatch, capsys):
    f, g = _tanh3(), _sin7()
    assert cache_cli(["verify"]) == 0
    assert "matches what was recorded" in capsys.readouterr().out
    lib = g.maker.linker.compiled.library.path
    with open(lib + ".new", "wb") as fh:
        fh.write(open(lib, "rb").read()[:-100])
    os.replace(lib + ".new", lib)
    record, _ = _record_of(f)
    with open(record, "w") as fh:
        fh.write("{not json")
    pyfile = [os.path.join(d, n) for d, _, names in os.walk(str(cachedir / cache.PYCODE)) for n in names][0]
    with open(pyfile, "ab") as fh:
        fh.write(b"junk")
    assert cache_cli(["verify"]) == 1
    out = capsys.readouterr().out
    assert "does not match the SHA-256 recorded when it was built" in out and os.path.dirname(lib) in out
    assert record in out and pyfile in out and "3 problems found" in out
    assert cache_cli(["verify", "--fix"]) == 1
    out = capsys.readouterr().out   # (and the index record naming the entry it removed)
    assert "problems found" in out and "removed" in out and not os.path.exists(lib)
    assert cache_cli(["verify"]) == 0
    _as_new_process(monkeypatch)
    np.testing.assert_allclose(_sin7()(X), np.sin(X) + 7, rtol=1e-15)
    np.testing.assert_allclose(_tanh3()(X), np.tanh(X) * 3, rtol=1e-15)
