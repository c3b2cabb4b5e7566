"""The on-disk compile cache: content-keyed, locked per key, published atomically, private.

Layout under ``config.compiledir`` (already one folder per platform and interpreter)::

    entries/<key[:2]>/<key>/   lib.so, source.c, meta.json   (a published entry)
    graphs/<skey[:2]>/<skey>.json   a structural key's entry: its source key and symbol prefix
    locks/<key>.lock           one filelock per key: a key builds once, keys build in parallel
    tmp/build-<key>-<random>/  private build folders, renamed into entries/ when complete (used
                               only while the key's lock is held: one whose lock is free was abandoned)
    compilers.json             the compiler identity probe, so a warm process runs no subprocess

A key hashes the whole source, the ABI version, the compiler's identity (path
and version text) and every flag and library. ``meta.json`` is JSON (loading
an entry never runs Python) and records the library's SHA-256; an entry whose
library is missing or does not match is moved aside and rebuilt, never
loaded. Directories are created mode 0700, and an entry, a file or any folder
on the way to it (checked on every lookup, warm or not: ``check_path``) that
another user owns, that group/others may write or that is a link is refused:
loading a library runs its code. Files are written with private_files (a new
name, then a rename: never through a link).

A warm process need not generate the source to find its entry: ``graphs/`` maps the structural
key of a graph (``graph_key``: what the generator reads, hashed) to the source key and symbol
prefix recorded after a build. The entry it names is validated as any other, and must list the
structural key in its meta.json (``graph_keys``: the graphs it was built for), so that a record
naming another graph's entry is not believed; a missing, damaged or unreadable index file only
means generating the source again.

``meta.json`` also records the library's symbol prefix (``prefix``: ``ffg_<24 hex>``, the start
of every name it exports) so that ``ffigraph-cache show`` can name an entry by it; entries
published before it was recorded have it read from their ``source.c`` (``entry_prefix``).
"""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import warnings

from filelock import FileLock, Timeout

from ffigraph.abi import ABI_VERSION
from ffigraph.config import config
from ffigraph.linkers.c.build import (CompileError, build_library, compile_runtime_object, compiler_command,
                                     cuda_source_text, room_needed)
from ffigraph.linkers.c.library_file import LibraryFileError, check_library_file
from ffigraph.linkers.c.runtime import RUNTIME_OBJECT_C
from ffigraph.linkers.c.private_files import (CacheNoSpaceError, CacheSecurityError, check_folders, check_private,
                                             is_no_space, private_dir, publish_private_file, read_private_file,
                                             write_private_file)
from ffigraph.linkers.c.tool import run_tool

META_NAME = "meta.json"
LIB_NAME = "lib.so"
SOURCE_NAME = "source.c"
STALE_TMP_SECONDS = 3600

# hits, misses and build times (INFO); build.py logs its private builds here too, one switch for both
_log = logging.getLogger("ffigraph.cache")


class CacheUnavailableWarning(UserWarning):
    """The cache directory cannot be used; libraries are built in a per-process folder instead."""


class CorruptEntryWarning(UserWarning):
    """An entry was damaged (missing library, hash mismatch, bad metadata) and is being rebuilt."""


# ------------------------------------------------------------------ folders and their safety


def root():
    return os.path.abspath(os.path.expanduser(config.compiledir))


def _private_dir(path):
    os.makedirs(path, mode=0o700, exist_ok=True)
    return private_dir(path)


def check_path(path):
    """Check every folder from the cache root down to ``path``, and ``path`` itself, as the build
    path checks the folders it writes (``check_private``): what is loaded from a folder that
    someone else may write could have been swapped. A path outside the cache is checked alone.
    OSError when one of them is absent."""
    base = root()
    rel = os.path.relpath(path, base)
    if rel == os.curdir:
        return check_folders(base)
    if rel.startswith(os.pardir):
        check_private(path)
        return path
    return check_folders(base, *rel.split(os.sep))


def lock_for(locks, key):
    """The per-key FileLock in the folder ``locks``; a link planted at its path is refused (the
    lock file is opened for writing, which would follow it)."""
    path = os.path.join(locks, key + ".lock")
    if os.path.islink(path):
        raise CacheSecurityError("%s is a symbolic link; the compile cache refuses links (remove it)" % path)
    return FileLock(path)


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
                _write_json_atomic(known_file, known)
            except (OSError, CacheSecurityError):
                pass   # (a cache that is not ours is not written: the probe runs again next time)
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
    publish_private_file(path, json.dumps(data, indent=1, sort_keys=True).encode())


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def entry_dir(key):
    return os.path.join(root(), "entries", key[:2], key)


def _sound_entry(path, key):
    """(library path, meta) of a sound entry; None if absent; raises ValueError (why) if damaged and
    CacheSecurityError when a folder on the way to it, the entry or its library is not private."""
    try:
        check_path(os.path.dirname(path))   # the root, entries/ and the shard, as a build checks them
    except OSError:   # absent, or not a folder: no entry
        return None
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
    if sha256_file(lib) != meta.get("lib_sha256"):
        raise ValueError("library does not match its recorded hash (truncated or modified)")
    return lib, meta


def validate_entry(path, key):
    """The library path of a sound entry; None if absent; raises ValueError (why) if damaged."""
    found = _sound_entry(path, key)
    return None if found is None else found[0]


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


def _build_folder(kind, key, tmp_root):
    """A new private folder ``tmp/<kind>-<key>-<random>`` for building the entry ``key``: made and
    used only while its builder holds the key's lock, so a folder whose key's lock is free was
    abandoned (its builder was killed) and ``clean_tmp`` may remove it."""
    return tempfile.mkdtemp(prefix="%s-%s-" % (kind, key), dir=tmp_root)


# ------------------------------------------------------------------ the runtime object

RUNTIME = "runtime"
RUNTIME_OBJECT_NAME = "runtime.o"


def runtime_key(compiler=None):
    """The key of the runtime object for this compiler and the flags every library is built with."""
    cc = compiler or config.cxx
    head, _ = compiler_command({}, cc)
    parts = ["runtime object", "abi=%d" % ABI_VERSION, "compiler=" + compiler_identity(cc),
             "flags=" + " ".join(head[1:]), "source=" + hashlib.sha256(RUNTIME_OBJECT_C.encode()).hexdigest()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _sound_runtime_object(path, key):
    """The object's path if ``path`` (a runtime folder) is sound; None if absent; ValueError if damaged."""
    try:
        check_path(os.path.dirname(path))
    except OSError:
        return None
    if not os.path.lexists(path):
        return None
    check_private(path)
    meta = _read_json(os.path.join(path, META_NAME))
    obj = os.path.join(path, RUNTIME_OBJECT_NAME)
    if not isinstance(meta, dict) or meta.get("key") != key or not os.path.isfile(obj):
        raise ValueError("runtime object or its metadata missing")
    check_private(obj)
    if sha256_file(obj) != meta.get("sha256"):
        raise ValueError("runtime object does not match its recorded hash (truncated or modified)")
    return obj


def runtime_object(compiler, locks, tmp_root):
    """The path of the runtime's functions compiled once for this compiler and flags
    (``runtime/<key>/runtime.o``), built and published (one rename, under its key's lock) on first
    use. Libraries of the cache link it instead of compiling those functions again (about a
    tenth of a small graph's compile time). A damaged object is moved aside and rebuilt."""
    key = runtime_key(compiler)
    path = os.path.join(root(), RUNTIME, key)
    try:
        obj = _sound_runtime_object(path, key)
        if obj is not None:
            return obj
    except ValueError:
        pass   # rebuilt under the lock
    with lock_for(locks, key):
        try:
            obj = _sound_runtime_object(path, key)
            if obj is not None:
                return obj
        except ValueError as why:
            warnings.warn("the compile cache's runtime object %s is damaged (%s); rebuilding it" % (path, why),
                          CorruptEntryWarning)
            _discard(path)
        build_dir = _build_folder("build", key, tmp_root)
        try:
            obj = compile_runtime_object(RUNTIME_OBJECT_C, build_dir, compiler)
            meta = dict(key=key, sha256=sha256_file(obj), compiler=compiler_identity(compiler or config.cxx))
            write_private_file(os.path.join(build_dir, META_NAME), json.dumps(meta, indent=1, sort_keys=True).encode(),
                               "the runtime object's meta.json")
            _private_dir(os.path.join(root(), RUNTIME))
            try:
                os.rename(build_dir, path)
            except OSError:   # published first by a process this lock did not hold back (no working locks)
                obj = _sound_runtime_object(path, key)
                if obj is None:
                    raise
                shutil.rmtree(build_dir, ignore_errors=True)
                return obj
        except BaseException:
            shutil.rmtree(build_dir, ignore_errors=True)
            raise
        return os.path.join(path, RUNTIME_OBJECT_NAME)


def discard_runtime_object(compiler=None):
    """Move the runtime object of this compiler aside (a link that lacked its functions): the next
    build makes it again."""
    path = os.path.join(root(), RUNTIME, runtime_key(compiler))
    if os.path.isdir(path) and not os.path.islink(path):
        _discard(path)


def _publish(key, source, requirements, compiler, tmp_root, nodes=None, graph_key=None):
    obj = runtime_object(compiler, os.path.join(root(), "locks"), tmp_root)   # (built once per compiler and flags)
    build_dir = _build_folder("build", key, tmp_root)
    try:
        # lib.c -> lib.so; ``nodes`` and the key name the build in its log and progress lines
        try:
            build_library(source, "lib", requirements, compiler, directory=build_dir, key=key, nodes=nodes,
                          runtime_object=obj)
        except CompileError as err:
            if "`ffg_" in err.compiler_output:   # "undefined reference to `ffg_...'": the object lacks them
                discard_runtime_object(compiler)
            raise
        os.rename(os.path.join(build_dir, "lib.c"), os.path.join(build_dir, SOURCE_NAME))
        meta = dict(key=key, abi_version=ABI_VERSION, compiler=compiler_identity(compiler or config.cxx),
                    created=time.time(), lib_sha256=sha256_file(os.path.join(build_dir, LIB_NAME)),
                    source_sha256=hashlib.sha256(source.encode()).hexdigest(), prefix=source_prefix(source),
                    graph_keys=[graph_key] if graph_key else [])
        write_private_file(os.path.join(build_dir, META_NAME), json.dumps(meta, indent=1, sort_keys=True).encode(),
                           "the entry's meta.json")
        return _rename_into(build_dir, entry_dir(key), key)
    except OSError as err:
        shutil.rmtree(build_dir, ignore_errors=True)
        if is_no_space(err) and not isinstance(err, CacheNoSpaceError):
            raise CacheNoSpaceError("the library of cache key %s" % key[:12], tmp_root,
                                    room_needed(len(source))) from None
        raise
    except BaseException:
        shutil.rmtree(build_dir, ignore_errors=True)
        raise


def _rename_into(build_dir, target, key):
    """Publish ``build_dir`` as the entry ``target`` (one rename: readers see no entry or a whole
    one) and return its library. Where another process published the key first (a shared cache on a
    file system without working locks), its sound entry is used and this build dropped. The shard
    folder is made private, and refused when it is a link (an entry published through it would
    land outside the cache)."""
    _private_dir(os.path.dirname(target))
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


_fallback_said = set()   # cache roots whose "read-only: building privately" was said


def _unusable(err, what):
    """Say once per cache root that it cannot be written (``what`` failed with ``err``), so builds
    go to a per-process folder; None, for the caller to return."""
    where = root()
    if where not in _fallback_said:
        _fallback_said.add(where)
        warnings.warn("the compile cache at %s cannot be written (%s: %s); libraries it does not hold are "
                      "built in a per-process folder instead (said once)" % (where, what, err),
                      CacheUnavailableWarning, stacklevel=3)
    _log.info("cache not writable (%s): building privately", err)
    return None


_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def get_or_build(source, requirements, compiler=None, nodes=None, graph_key=None):
    """The path of a library built from ``source``, from the cache or freshly published to it
    (``nodes``: how many nodes its graph has, for the log line a build starts with; ``graph_key``:
    the structural key of the graph it was generated from, recorded in the entry).

    Returns None when the cache cannot be used (the caller builds privately): it cannot be made,
    or it is read-only (warm hits still come from it).
    """
    key = cache_key(source, requirements, compiler)
    path = entry_dir(key)
    try:
        lib = validate_entry(path, key)
        if lib is not None:
            _log.info("cache hit: %s", lib)
            return lib  # the warm path: no lock, no subprocess
    except ValueError:
        pass  # damaged: rebuild under the lock
    try:
        _, locks, tmp_root = _folders()
    except OSError as err:
        warnings.warn("the compile cache at %s is not usable (%s); building in a per-process folder "
                      "instead" % (root(), err), CacheUnavailableWarning)
        return None
    waited = time.perf_counter()
    try:
        lock = lock_for(locks, key)
        lock.acquire()
    except OSError as err:
        if err.errno in _READ_ONLY:
            return _unusable(err, "taking the lock of key %s" % key[:12])
        raise
    try:
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
        try:
            lib = _publish(key, source, requirements, compiler, tmp_root, nodes, graph_key)
        except OSError as err:
            if err.errno in _READ_ONLY and not isinstance(err, CacheNoSpaceError):
                return _unusable(err, "publishing key %s" % key[:12])
            raise
        if damaged is None:
            _log.info("cache miss: built %s in %.2f s", lib, time.perf_counter() - start)
        else:
            _log.info("cache entry damaged (%s): rebuilt %s in %.2f s", damaged, lib, time.perf_counter() - start)
        return lib
    finally:
        lock.release()


def adopt_library(key, prefix, data, lib_sha256):
    """Publish a library built elsewhere (a pickle's bytes) as the entry ``key``, as a build would
    (per-key lock, private folder, atomic rename), and return its path; a sound entry already there
    is kept. The bytes must match ``lib_sha256`` and be a complete shared object of this ABI whose
    note names ``prefix`` (library_file), checked as written and before anything loads them:
    ValueError (LibraryFileError) otherwise. No compiler runs."""
    if not _HEX_KEY.match(key) or not _PREFIX.match(prefix):
        raise ValueError("not a cache key and symbol prefix: %r, %r" % (key, prefix))
    if hashlib.sha256(data).hexdigest() != lib_sha256:
        raise ValueError("library bytes of %s do not match their SHA-256" % prefix)
    _, locks, tmp_root = _folders()
    path = entry_dir(key)
    with lock_for(locks, key):
        try:
            lib = validate_entry(path, key)
            if lib is not None:
                return lib
        except ValueError:
            _discard(path)
        build_dir = _build_folder("adopt", key, tmp_root)
        try:
            lib = os.path.join(build_dir, LIB_NAME)
            write_private_file(lib, data, "the pickled library %s" % prefix, mode=0o700)
            if sha256_file(lib) != lib_sha256:
                raise OSError("the library of %s changed while it was written" % prefix)
            check_library_file(lib, ABI_VERSION, prefix)
            meta = dict(key=key, abi_version=ABI_VERSION, compiler="(adopted: built elsewhere, sent in a pickle)",
                        created=time.time(), lib_sha256=lib_sha256, prefix=prefix, adopted=True, graph_keys=[])
            write_private_file(os.path.join(build_dir, META_NAME),
                               json.dumps(meta, indent=1, sort_keys=True).encode(), "the entry's meta.json")
            lib = _rename_into(build_dir, path, key)
            _log.info("adopted a pickled library as %s", path)
            return lib
        except BaseException:
            shutil.rmtree(build_dir, ignore_errors=True)
            raise


# ------------------------------------------------------------------ structural keys -> entries


GRAPHS = "graphs"
PYCODE = "pycode"   # the per-arity call's code (pycode.py)
GRAPH_KEYS_KEPT = 64   # structural keys an entry remembers (graphs that generate the same source)
_HEX_KEY = re.compile(r"[0-9a-f]{64}$")
_PREFIX = re.compile(r"ffg_[0-9a-f]{24}$")


def graph_index_path(structural_key):
    return os.path.join(root(), GRAPHS, structural_key[:2], structural_key + ".json")


def lookup_graph(structural_key):
    """(source key, symbol prefix) recorded for ``structural_key``, or None (none recorded, or a
    record that is unreadable or malformed). A record, or a folder on the way to it, that another
    user owns or others may write raises CacheSecurityError, as an entry would."""
    try:
        path = check_folders(root(), GRAPHS, structural_key[:2], structural_key + ".json")
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


def cached_library(key, structural_key=None, prefix=None):
    """The library of the sound entry ``key``, or None (absent or damaged: the caller generates the
    source and ``get_or_build`` rebuilds it under the lock, with the usual warning). With
    ``structural_key``, only an entry whose meta.json records that it was built for that graph (and,
    with ``prefix``, under that symbol prefix) is used: an index record that names another graph's
    entry is not believed."""
    try:
        found = _sound_entry(entry_dir(key), key)
    except ValueError:
        return None
    if found is None:
        return None
    lib, meta = found
    if structural_key is not None:
        graph_keys = meta.get("graph_keys")
        if not isinstance(graph_keys, list) or structural_key not in graph_keys or \
                (prefix is not None and meta.get("prefix") != prefix):
            _log.info("the index record of graph %s names entry %s, which was not built for that graph: "
                      "generating its source", structural_key[:12], key[:12])
            return None
    _log.info("cache hit: %s (found by the graph's structural key: no C generated)", lib)
    return lib


def record_graph(structural_key, key, prefix):
    """Remember that ``structural_key`` builds the entry ``key`` (symbols ``prefix``): in the entry's
    meta.json (its list of the graphs it was built for, which a lookup checks) and in the index
    ``graphs/``; best effort."""
    if not _HEX_KEY.match(key) or not _PREFIX.match(prefix):
        raise ValueError("not a source key and symbol prefix: %r, %r" % (key, prefix))
    try:
        folder = private_shard(GRAPHS, structural_key)
        if not _note_graph_key(key, structural_key):
            return
    except (OSError, CacheSecurityError):
        return
    record = dict(structural_key=structural_key, key=key, prefix=prefix, created=time.time())
    publish_private_file(os.path.join(folder, structural_key + ".json"),
                         json.dumps(record, indent=1, sort_keys=True).encode())


def _note_graph_key(key, structural_key):
    """Add ``structural_key`` to the graphs the sound entry ``key`` records (under its lock; the
    newest GRAPH_KEYS_KEPT are kept); False when the entry is not sound."""
    path = entry_dir(key)
    try:
        found = _sound_entry(path, key)
    except ValueError:
        return False
    if found is None:
        return False
    graph_keys = found[1].get("graph_keys")
    if isinstance(graph_keys, list) and structural_key in graph_keys:
        return True   # (a build records the key it was built for: the usual case)
    with lock_for(_folders()[1], key):
        found = _sound_entry(path, key)
        if found is None:
            return False
        meta = found[1]
        graph_keys = [k for k in meta.get("graph_keys") or () if isinstance(k, str) and k != structural_key]
        meta["graph_keys"] = (graph_keys + [structural_key])[-GRAPH_KEYS_KEPT:]
        write_private_file(os.path.join(path, META_NAME), json.dumps(meta, indent=1, sort_keys=True).encode())
    return True


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


_BUILD_FOLDER = re.compile(r"(build|adopt)-([0-9a-f]{64})-")


def leftover_builds(older_than=STALE_TMP_SECONDS):
    """[(path, why)] of the folders in ``tmp/`` that no running build uses: a build or adoption
    folder (``<kind>-<key>-...``) whose key's lock is free (its builder holds that lock while the
    folder exists, so its builder is gone: killed mid-build), a damaged entry moved aside
    (``discarded-...``), or a folder of another form older than ``older_than`` seconds."""
    tmp_root = os.path.join(root(), "tmp")
    try:
        names = sorted(os.listdir(tmp_root))
    except OSError:
        return []
    locks = os.path.join(root(), "locks")
    now, found = time.time(), []
    for name in names:
        path = os.path.join(tmp_root, name)
        match = _BUILD_FOLDER.match(name)
        if match:
            if _lock_is_free(locks, match.group(2)):
                found.append((path, "abandoned %s of key %s (its lock is free)" % (match.group(1), match.group(2)[:12])))
        elif name.startswith("discarded-"):
            found.append((path, "a damaged entry moved aside"))
        else:
            try:
                if now - os.lstat(path).st_mtime >= older_than:
                    found.append((path, "left %.1f hours ago" % ((now - os.lstat(path).st_mtime) / 3600)))
            except OSError:
                pass
    return found


def _lock_is_free(locks, key):
    path = os.path.join(locks, key + ".lock")
    if not os.path.lexists(path):
        return True   # (a lock is never removed while its key builds)
    if os.path.islink(path):
        return False   # (not ours to open; verify reports it)
    lock = FileLock(path, timeout=0)
    try:
        lock.acquire()
    except (Timeout, OSError):
        return False
    lock.release()
    return True


def clean_tmp(older_than=STALE_TMP_SECONDS):
    """Remove the build folders of processes that died mid-build (``leftover_builds``); how many."""
    removed = 0
    for path, _ in leftover_builds(older_than):
        if os.path.islink(path):
            os.unlink(path)
        else:
            shutil.rmtree(path, ignore_errors=True)
        removed += not os.path.lexists(path)
    return removed


def clear():
    """Remove every entry, lock and leftover."""
    count = len(list_entries())
    for name in ("entries", "locks", "tmp", "exports", RUNTIME, GRAPHS, PYCODE):
        shutil.rmtree(os.path.join(root(), name), ignore_errors=True)
    return count


def purge(older_than_days):
    """Remove entries created more than ``older_than_days`` ago or damaged, and the index records
    that name them; how many entries (``clean_tmp`` removes what builds left behind)."""
    limit = time.time() - older_than_days * 86400
    removed = 0
    for key, path, size, created, sound in list_entries():
        if created < limit or not sound:
            _discard(path)
            removed += 1
    _purge_graph_records(limit)
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
