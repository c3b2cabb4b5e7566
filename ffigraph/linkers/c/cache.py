"""The on-disk compile cache: content-keyed, locked per key, published atomically, private.

Layout under ``config.compiledir`` (already one folder per platform and interpreter)::

    entries/<key[:2]>/<key>/   lib.so, source.c, meta.json   (a published entry)
    graphs/<skey[:2]>/<skey>.json   a structural key's entry: its source key and symbol prefix
    locks/<key>.lock           one filelock per key: a key builds once, keys build in parallel
    tmp/<random>/              private build folders, renamed into entries/ when complete
    compilers.json             the compiler identity probe, so a warm process runs no subprocess

A key hashes the whole source, the ABI version, the compiler's identity (path
and version text) and every flag and library. ``meta.json`` is JSON (loading
an entry never runs Python) and records the library's SHA-256; an entry whose
library is missing or does not match is moved aside and rebuilt, never
loaded. Directories are created mode 0700, and an entry or folder that another
user owns or that group/others may write is refused: loading a library runs
its code.

A warm process need not generate the source to find its entry: ``graphs/`` maps the structural
key of a graph (``graph_key``: what the generator reads, hashed) to the source key and symbol
prefix recorded after a build. The entry it names is validated as any other; a missing, damaged
or unreadable index file only means generating the source again.

``meta.json`` also records the library's symbol prefix (``prefix``: ``ffg_<24 hex>``, the start
of every name it exports) so that ``ffigraph-cache show`` can name an entry by it; entries
published before it was recorded have it read from their ``source.c`` (``entry_prefix``).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import warnings

from filelock import FileLock

from ffigraph.abi import ABI_VERSION
from ffigraph.config import config
from ffigraph.linkers.c.build import build_library, compiler_command, cuda_source_text
from ffigraph.linkers.c.tool import run_tool

META_NAME = "meta.json"
LIB_NAME = "lib.so"
SOURCE_NAME = "source.c"
STALE_TMP_SECONDS = 3600

# hits, misses and build times (INFO); build.py logs its private builds here too, one switch for both
_log = logging.getLogger("ffigraph.cache")


class CacheSecurityError(RuntimeError):
    """A cache folder or entry is owned by someone else or writable by group/others."""


class CacheUnavailableWarning(UserWarning):
    """The cache directory cannot be used; libraries are built in a per-process folder instead."""


class CorruptEntryWarning(UserWarning):
    """An entry was damaged (missing library, hash mismatch, bad metadata) and is being rebuilt."""


# ------------------------------------------------------------------ folders and their safety


def root():
    return os.path.abspath(os.path.expanduser(config.compiledir))


def check_private(path):
    """Refuse ``path`` unless the current user owns it and no one else may write to it."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise CacheSecurityError("%s is a symbolic link; the compile cache refuses links (remove it)" % path)
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise CacheSecurityError("%s is owned by uid %d, not by you (uid %d); loading it would run another "
                                 "user's code. Remove it or point ffigraph.config.compiledir elsewhere."
                                 % (path, st.st_uid, os.getuid()))
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheSecurityError("%s is writable by group or others (mode %o); fix it with "
                                 "'chmod go-w %s' or remove it" % (path, stat.S_IMODE(st.st_mode), path))


def _private_dir(path):
    os.makedirs(path, mode=0o700, exist_ok=True)
    check_private(path)
    return path


def private_subdir(name):
    """A private folder of the cache root (created if needed), e.g. ``exports`` or ``locks``."""
    return _private_dir(os.path.join(_private_dir(root()), name))


def _folders():
    base = _private_dir(root())
    return (_private_dir(os.path.join(base, "entries")), _private_dir(os.path.join(base, "locks")),
            _private_dir(os.path.join(base, "tmp")))


# ------------------------------------------------------------------ the key


_compiler_ids = {}
_compiler_lock = threading.Lock()


def compiler_identity(cc):
    """``"<path> | <first line of --version>"``, probed once per compiler file and remembered on disk."""
    path = shutil.which(cc) or cc
    try:
        st = os.stat(path)
        stamp = "%s:%d:%d" % (path, st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = path
    with _compiler_lock:
        if stamp in _compiler_ids:
            return _compiler_ids[stamp]
        known_file = os.path.join(root(), "compilers.json")
        known = _read_json(known_file) or {}
        ident = known.get(stamp)
        if ident is None:
            try:
                # in its own process group, killed whole on timeout (a hung wrapper's children too)
                out = run_tool([path, "--version"], min(60.0, config.compile_timeout))[1]
                ident = "%s | %s" % (path, out.splitlines()[0] if out else "unknown version")
            except (OSError, subprocess.SubprocessError):
                ident = "%s | not runnable" % path
            known[stamp] = ident
            try:   # the first lookup of a fresh cache (a structural key) may come before any build
                _private_dir(root())
            except (OSError, CacheSecurityError):
                pass
            _write_json_atomic(known_file, known)
        _compiler_ids[stamp] = ident
        return ident


def cache_key(source, requirements, compiler=None):
    cc = compiler or config.cxx
    head, libs = compiler_command(requirements, cc)
    parts = ["abi=%d" % ABI_VERSION, "compiler=" + compiler_identity(cc), "flags=" + " ".join(head[1:]),
             "libs=" + " ".join(libs), "source=" + hashlib.sha256(source.encode()).hexdigest()]
    cuda_text = cuda_source_text(requirements)
    if cuda_text is not None:  # nvcc's release and the target architectures decide the binary too
        cuda = requirements["cuda"]
        parts += ["nvcc=" + cuda["nvcc_version"], "nvcc_flags=" + " ".join(cuda["nvcc_flags"]),
                  "cudart=" + cuda["cudart_dir"], "cuda_source=" + hashlib.sha256(cuda_text.encode()).hexdigest()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


# ------------------------------------------------------------------ entries


def _read_json(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _write_json_atomic(path, data):
    tmp = "%s.%s.tmp" % (path, os.urandom(16).hex())
    try:
        with open(tmp, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def entry_dir(key):
    return os.path.join(root(), "entries", key[:2], key)


def validate_entry(path, key):
    """The library path of a sound entry; None if absent; raises ValueError (why) if damaged."""
    if not os.path.lexists(path):
        return None
    check_private(path)
    meta = _read_json(os.path.join(path, META_NAME))
    if not isinstance(meta, dict) or meta.get("key") != key:
        raise ValueError("metadata missing, unreadable or for another key")
    lib = os.path.join(path, LIB_NAME)
    if not os.path.isfile(lib):
        raise ValueError("library missing")
    check_private(lib)
    if _sha256_file(lib) != meta.get("lib_sha256"):
        raise ValueError("library does not match its recorded hash (truncated or modified)")
    return lib


def _discard(path):
    """Move a damaged entry out of the way (a rename is atomic; deletion can follow at leisure)."""
    trash = os.path.join(root(), "tmp", "discarded-" + os.urandom(16).hex())
    try:
        os.rename(path, trash)
        shutil.rmtree(trash, ignore_errors=True)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def discard_library(lib_path):
    """Remove the entry that holds ``lib_path`` (a library that would not load), so the next request
    builds it again; False when the path is not a library of this cache."""
    entry = os.path.dirname(os.path.abspath(lib_path))
    if os.path.basename(lib_path) != LIB_NAME or \
            os.path.dirname(os.path.dirname(entry)) != os.path.join(root(), "entries"):
        return False
    _discard(entry)
    return True


def _publish(key, source, requirements, compiler, tmp_root, nodes=None):
    build_dir = tempfile.mkdtemp(prefix="build-", dir=tmp_root)
    try:
        # lib.c -> lib.so; ``nodes`` and the key name the build in its log and progress lines
        build_library(source, "lib", requirements, compiler, directory=build_dir, key=key, nodes=nodes)
        os.rename(os.path.join(build_dir, "lib.c"), os.path.join(build_dir, SOURCE_NAME))
        meta = dict(key=key, abi_version=ABI_VERSION, compiler=compiler_identity(compiler or config.cxx),
                    created=time.time(), lib_sha256=_sha256_file(os.path.join(build_dir, LIB_NAME)),
                    source_sha256=hashlib.sha256(source.encode()).hexdigest(), prefix=source_prefix(source))
        with open(os.path.join(build_dir, META_NAME), "w") as fh:
            json.dump(meta, fh, indent=1, sort_keys=True)
        target = entry_dir(key)
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        return _rename_into(build_dir, target, key)
    except BaseException:
        shutil.rmtree(build_dir, ignore_errors=True)
        raise


def _rename_into(build_dir, target, key):
    """Publish ``build_dir`` as the entry ``target`` (one rename: readers see no entry or a whole
    one) and return its library. Where another process published the key first (a shared cache on a
    file system without working locks), its sound entry is used and this build dropped."""
    try:
        os.rename(build_dir, target)
    except OSError:
        try:
            lib = validate_entry(target, key)
        except ValueError:
            lib = None
        if lib is None:
            raise
        shutil.rmtree(build_dir, ignore_errors=True)
        return lib
    return os.path.join(target, LIB_NAME)


def get_or_build(source, requirements, compiler=None, nodes=None):
    """The path of a library built from ``source``, from the cache or freshly published to it
    (``nodes``: how many nodes its graph has, for the log line a build starts with).

    Returns None when the cache cannot be used (the caller builds privately).
    """
    try:
        _, locks, tmp_root = _folders()
    except OSError as err:
        warnings.warn("the compile cache at %s is not usable (%s); building in a per-process folder "
                      "instead" % (root(), err), CacheUnavailableWarning)
        return None
    key = cache_key(source, requirements, compiler)
    path = entry_dir(key)
    try:
        lib = validate_entry(path, key)
        if lib is not None:
            _log.info("cache hit: %s", lib)
            return lib  # the warm path: no lock, no subprocess
    except ValueError:
        pass  # damaged: rebuild under the lock
    waited = time.perf_counter()
    with FileLock(os.path.join(locks, key + ".lock")):
        waited = time.perf_counter() - waited
        damaged = None
        try:
            lib = validate_entry(path, key)
            if lib is not None:
                _log.info("cache hit after waiting %.2f s for another build: %s", waited, lib)
                return lib  # another process built it while we waited
        except ValueError as why:
            damaged = why
            warnings.warn("compile cache entry %s is damaged (%s); rebuilding it" % (path, why),
                          CorruptEntryWarning)
            _discard(path)
        start = time.perf_counter()
        lib = _publish(key, source, requirements, compiler, tmp_root, nodes)
        if damaged is None:
            _log.info("cache miss: built %s in %.2f s", lib, time.perf_counter() - start)
        else:
            _log.info("cache entry damaged (%s): rebuilt %s in %.2f s", damaged, lib, time.perf_counter() - start)
        return lib


def adopt_library(key, prefix, data, lib_sha256):
    """Publish a library built elsewhere (a pickle's bytes) as the entry ``key``, as a build would
    (per-key lock, private folder, atomic rename), and return its path; a sound entry already there
    is kept. The caller has checked the bytes against ``lib_sha256``; they are checked again here,
    as written. No compiler runs."""
    if not _HEX_KEY.match(key) or not _PREFIX.match(prefix):
        raise ValueError("not a cache key and symbol prefix: %r, %r" % (key, prefix))
    if hashlib.sha256(data).hexdigest() != lib_sha256:
        raise ValueError("library bytes of %s do not match their SHA-256" % prefix)
    _, locks, tmp_root = _folders()
    path = entry_dir(key)
    with FileLock(os.path.join(locks, key + ".lock")):
        try:
            lib = validate_entry(path, key)
            if lib is not None:
                return lib
        except ValueError:
            _discard(path)
        build_dir = tempfile.mkdtemp(prefix="adopt-", dir=tmp_root)
        try:
            lib = os.path.join(build_dir, LIB_NAME)
            with open(lib, "wb") as fh:
                fh.write(data)
            os.chmod(lib, 0o755)
            if _sha256_file(lib) != lib_sha256:
                raise OSError("the library of %s changed while it was written" % prefix)
            meta = dict(key=key, abi_version=ABI_VERSION, compiler="(adopted: built elsewhere, sent in a pickle)",
                        created=time.time(), lib_sha256=lib_sha256, prefix=prefix, adopted=True)
            with open(os.path.join(build_dir, META_NAME), "w") as fh:
                json.dump(meta, fh, indent=1, sort_keys=True)
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            lib = _rename_into(build_dir, path, key)
            _log.info("adopted a pickled library as %s", path)
            return lib
        except BaseException:
            shutil.rmtree(build_dir, ignore_errors=True)
            raise


# ------------------------------------------------------------------ structural keys -> entries


GRAPHS = "graphs"
PYCODE = "pycode"   # the per-arity call's code (pycode.py)
_HEX_KEY = re.compile(r"[0-9a-f]{64}$")
_PREFIX = re.compile(r"ffg_[0-9a-f]{24}$")


def graph_index_path(structural_key):
    return os.path.join(root(), GRAPHS, structural_key[:2], structural_key + ".json")


def lookup_graph(structural_key):
    """(source key, symbol prefix) recorded for ``structural_key``, or None (none recorded, or a
    record that is unreadable or malformed). A record another user owns or others may write
    raises CacheSecurityError, as an entry would."""
    path = graph_index_path(structural_key)
    try:
        check_private(path)
    except OSError:   # absent (FileNotFoundError) or unreadable: no record
        return None
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("structural_key") != structural_key:
        return None
    key, prefix = data.get("key"), data.get("prefix")
    if not isinstance(key, str) or not _HEX_KEY.match(key) or not isinstance(prefix, str) \
            or not _PREFIX.match(prefix):
        return None
    return key, prefix


def cached_library(key):
    """The library of the sound entry ``key``, or None (absent or damaged: the caller generates the
    source and ``get_or_build`` rebuilds it under the lock, with the usual warning)."""
    try:
        lib = validate_entry(entry_dir(key), key)
    except ValueError:
        return None
    if lib is not None:
        _log.info("cache hit: %s (found by the graph's structural key: no C generated)", lib)
    return lib


def record_graph(structural_key, key, prefix):
    """Remember that ``structural_key`` builds the entry ``key`` (symbols ``prefix``); best effort."""
    if not _HEX_KEY.match(key) or not _PREFIX.match(prefix):
        raise ValueError("not a source key and symbol prefix: %r, %r" % (key, prefix))
    try:
        folder = private_shard(GRAPHS, structural_key)
    except (OSError, CacheSecurityError):
        return
    record = dict(structural_key=structural_key, key=key, prefix=prefix, created=time.time())
    publish_private_file(os.path.join(folder, structural_key + ".json"),
                         json.dumps(record, indent=1, sort_keys=True).encode())


def publish_private_file(path, data):
    """Write ``data`` (bytes) to ``path`` as its owner's alone whatever the umask (readers refuse a
    file others may write), atomically: readers see no file or a whole one. Best effort: False when
    it could not be written."""
    tmp = "%s.%s.tmp" % (path, os.urandom(16).hex())
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


def read_private_file(path):
    """The bytes of ``path``, or None when it is absent or unreadable; CacheSecurityError when
    another user owns it or others may write it (what is read may be run)."""
    try:
        check_private(path)
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def private_shard(name, digest):
    """The private folder ``<root>/<name>/<first two hex digits of digest>`` (made if needed)."""
    return _private_dir(os.path.join(private_subdir(name), digest[:2]))


# ------------------------------------------------------------------ symbol prefixes

# The definition of <prefix>_version or <prefix>_describe, which every generated library has
# (codegen's INTERFACE_TEMPLATE). The prefix hashes the source *before* it is substituted in, so
# it cannot be recomputed from the final text: it is read from it.
_PREFIX_DEF = re.compile(r"\b(ffg_[0-9a-f]{24})_(?:version|describe)\s*\(\s*void\s*\)")


def source_prefix(source):
    """The symbol prefix (``ffg_<24 hex>``) of a generated library's source, or None (not one)."""
    found = _PREFIX_DEF.search(source)
    return found.group(1) if found else None


def entry_prefix(path, meta=None):
    """The symbol prefix of the entry folder ``path``: recorded in its meta.json (entries published
    since it was), else read from its source.c; None when neither says."""
    if meta is None:
        meta = _read_json(os.path.join(path, META_NAME))
    if isinstance(meta, dict) and "prefix" in meta:
        prefix = meta["prefix"]
        if prefix is None or (isinstance(prefix, str) and _PREFIX.match(prefix)):
            return prefix   # None: recorded as "this source has no prefix", nothing to parse
    try:
        with open(os.path.join(path, SOURCE_NAME)) as fh:
            return source_prefix(fh.read())
    except (OSError, ValueError):   # absent, unreadable or not text
        return None


def entry_meta(path):
    """The entry folder's meta.json as a dict ({} when it is missing or unreadable)."""
    meta = _read_json(os.path.join(path, META_NAME))
    return meta if isinstance(meta, dict) else {}


# ------------------------------------------------------------------ maintenance (the CLI uses these)


def list_entries():
    """[(key, path, size_bytes, created, sound)] for every entry."""
    entries_root = os.path.join(root(), "entries")
    found = []
    if not os.path.isdir(entries_root):
        return found
    for shard in sorted(os.listdir(entries_root)):
        shard_dir = os.path.join(entries_root, shard)
        if not os.path.isdir(shard_dir):
            continue
        for key in sorted(os.listdir(shard_dir)):
            path = os.path.join(shard_dir, key)
            size = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
                       if os.path.isfile(os.path.join(path, f)))
            meta = _read_json(os.path.join(path, META_NAME)) or {}
            try:
                sound = validate_entry(path, key) is not None
            except (ValueError, CacheSecurityError):
                sound = False
            found.append((key, path, size, meta.get("created", os.path.getmtime(path)), sound))
    return found


def clean_tmp(older_than=STALE_TMP_SECONDS):
    """Remove build folders left by processes that died mid-build."""
    tmp_root = os.path.join(root(), "tmp")
    removed = 0
    if not os.path.isdir(tmp_root):
        return removed
    now = time.time()
    for name in os.listdir(tmp_root):
        path = os.path.join(tmp_root, name)
        try:
            if now - os.path.getmtime(path) >= older_than:
                shutil.rmtree(path, ignore_errors=True)
                removed += 1
        except OSError:
            pass
    return removed


def clear():
    """Remove every entry, lock and leftover."""
    count = len(list_entries())
    for name in ("entries", "locks", "tmp", "exports", GRAPHS, PYCODE):
        shutil.rmtree(os.path.join(root(), name), ignore_errors=True)
    return count


def purge(older_than_days):
    """Remove entries created more than ``older_than_days`` ago, and stale build folders."""
    limit = time.time() - older_than_days * 86400
    removed = 0
    for key, path, size, created, sound in list_entries():
        if created < limit or not sound:
            _discard(path)
            removed += 1
    _purge_graph_records(limit)
    clean_tmp()
    return removed


def _purge_graph_records(limit):
    """Drop structural-key records older than ``limit`` or naming an entry that is gone."""
    graphs = os.path.join(root(), GRAPHS)
    if not os.path.isdir(graphs):
        return
    for shard in os.listdir(graphs):
        shard_dir = os.path.join(graphs, shard)
        if not os.path.isdir(shard_dir):
            continue
        for name in os.listdir(shard_dir):
            path = os.path.join(shard_dir, name)
            data = _read_json(path)
            key = data.get("key") if isinstance(data, dict) else None
            created = data.get("created", 0) if isinstance(data, dict) else 0
            if not isinstance(key, str) or not _HEX_KEY.match(key) or not isinstance(created, (int, float)) \
                    or created < limit or not os.path.isdir(entry_dir(key)):
                try:
                    os.unlink(path)
                except OSError:
                    pass
