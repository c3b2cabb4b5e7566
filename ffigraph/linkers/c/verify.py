"""``ffigraph-cache verify``: every file of the compile cache checked against what was recorded
when it was written, and (``fix``) what does not match removed, so the next use rebuilds it.

What is checked:

- every folder and file under the cache root: owned by the user, not writable by group or others,
  not a symbolic link (a link is removed, never followed; another user's file is removed from a
  folder of the user's; a folder of the root's path that is not the user's can only be reported);
- each entry: its meta.json names its own key, its library exists, re-hashes to the recorded
  SHA-256 and is a complete ELF shared object (library_file);
- each index record of ``graphs/``: well-formed, naming an entry that exists and lists the record's
  structural key among the graphs it was built for;
- each ``pycode`` file: its recorded hash matches its bytes (pycode.marshalled);
- the call trampolines of ``callshim/``: each library matches the hash recorded beside it;
- ``tmp/``: folders of builds whose builder is gone (cache.leftover_builds).
"""
from __future__ import annotations

import collections
import hashlib
import json
import os
import shutil
import stat

from ffigraph.abi import ABI_VERSION
from ffigraph.linkers.c import cache, callshim, pycode
from ffigraph.linkers.c.library_file import LibraryFileError, check_library_bytes

Problem = collections.namedtuple("Problem", "path why fixed")


class _Report:
    def __init__(self, fix):
        self.fix = fix
        self.problems = []
        self.bad = set()   # paths already reported (a folder's contents are not reported again)

    def add(self, path, why, remove=True):
        fixed = False
        if self.fix and remove:
            fixed = _remove(path)
        self.problems.append(Problem(path, why, fixed))
        self.bad.add(path)

    def covered(self, path):
        return any(path == p or path.startswith(p + os.sep) for p in self.bad)


def _remove(path):
    try:
        if os.path.islink(path) or not os.path.isdir(path):
            os.unlink(path)
        else:
            shutil.rmtree(path)
    except OSError:
        return False
    return not os.path.lexists(path)


def verify(fix=False):
    """[Problem(path, why, fixed)] for everything in the cache that is not as recorded (empty: all
    sound). With ``fix``, each is removed where it can be (``fixed`` says whether it was)."""
    base = cache.root()
    report = _Report(fix)
    if not os.path.lexists(base):
        return report.problems
    try:
        cache.check_private(base)
    except cache.CacheSecurityError as why:
        report.add(base, str(why), remove=False)   # (not ours to remove: the user decides)
        return report.problems
    _walk(base, report)
    _entries(base, report)
    _graph_records(base, report)
    _pycode_files(base, report)
    _callshims(base, report)
    for path, why in cache.leftover_builds():
        if not report.covered(path):
            report.add(path, why)
    return report.problems


def _walk(base, report):
    """Links, another user's files and what others may write, anywhere under the root."""
    for folder, dirs, files in os.walk(base):
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(folder, name)
            try:
                cache.check_private(path)
            except cache.CacheSecurityError as why:
                report.add(path, str(why))
            except OSError:
                continue
        dirs[:] = [d for d in dirs if not report.covered(os.path.join(folder, d))]


def _entries(base, report):
    entries = os.path.join(base, "entries")
    for shard in _names(entries):
        for key in _names(os.path.join(entries, shard)):
            path = os.path.join(entries, shard, key)
            if report.covered(path):
                continue
            why = _entry_problem(path, key, shard)
            if why:
                report.add(path, why)


def _entry_problem(path, key, shard):
    if not os.path.isdir(path) or key[:2] != shard:
        return "not an entry (an entry is the folder entries/<first two digits of its key>/<key>)"
    meta = cache.entry_meta(path)
    if meta.get("key") != key:
        return "its meta.json is missing, unreadable or for another key"
    lib = os.path.join(path, cache.LIB_NAME)
    if not os.path.isfile(lib):
        return "its library is missing"
    with open(lib, "rb") as fh:
        data = fh.read()
    if hashlib.sha256(data).hexdigest() != meta.get("lib_sha256"):
        return "its library does not match the SHA-256 recorded when it was built (truncated or modified)"
    try:   # (an entry of another ABI is stale, not damaged: its completeness is what is checked)
        check_library_bytes(data, meta.get("abi_version", ABI_VERSION), where="its library", note=False)
    except LibraryFileError as why:
        return str(why)
    return None


def _graph_records(base, report):
    graphs = os.path.join(base, cache.GRAPHS)
    for shard in _names(graphs):
        for name in _names(os.path.join(graphs, shard)):
            path = os.path.join(graphs, shard, name)
            if report.covered(path):
                continue
            try:
                with open(path) as fh:
                    record = json.load(fh)
            except (OSError, ValueError):
                record = None
            skey = name[:-len(".json")] if name.endswith(".json") else None
            if not isinstance(record, dict) or record.get("structural_key") != skey or skey[:2] != shard:
                report.add(path, "not a well-formed index record of its structural key")
                continue
            key = record.get("key")
            meta = cache.entry_meta(cache.entry_dir(key)) if isinstance(key, str) and cache._HEX_KEY.match(key) else {}
            graph_keys = meta.get("graph_keys")
            if not meta:
                report.add(path, "names an entry that does not exist (%s)" % str(key)[:12])
            elif not isinstance(graph_keys, list) or skey not in graph_keys or meta.get("prefix") != record.get("prefix"):
                report.add(path, "names entry %s, which was not built for this graph" % key[:12])


def _pycode_files(base, report):
    folder = os.path.join(base, cache.PYCODE)
    for shard in _names(folder):
        for name in _names(os.path.join(folder, shard)):
            path = os.path.join(folder, shard, name)
            if report.covered(path) or name.endswith(".tmp"):
                continue
            with open(path, "rb") as fh:
                content = fh.read()
            if pycode.marshalled(content) is None:
                report.add(path, "its code does not match the SHA-256 recorded in it (damaged)"
                           if content.split(b"\n", 1)[0] == pycode._MAGIC else
                           "not a pycode file of this ffigraph and interpreter (no recorded hash to check it by)")


def _callshims(base, report):
    folder = os.path.join(base, "callshim")
    for name in _names(folder):
        path = os.path.join(folder, name)
        if not name.endswith(".so") or report.covered(path):
            continue
        if not callshim.sound_library(path):
            report.add(path, "the call trampoline does not match the SHA-256 recorded beside it")


def _names(folder):
    try:
        return sorted(n for n in os.listdir(folder) if not stat.S_ISLNK(os.lstat(os.path.join(folder, n)).st_mode))
    except OSError:
        return []
