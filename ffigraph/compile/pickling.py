"""Compiled functions that travel: pickled with their graph and, for C linkers, their libraries.

A pickled ``Function`` holds what ``function()`` was given (the graph's variables, shared
variables with their values, updates, mode, profile flag, ...) and, unless ``config.pickle__library``
is off, the bytes of every compile-cache library it runs, each with its cache key, symbol prefix,
SHA-256 and platform tag. Unpickling calls ``function()`` again with the same arguments; before
that, each library is made available without a compiler:

- the cache already has its key: nothing to do (the cache serves it);
- else, where the platform tag matches (platform, machine, ABI version: the libraries are plain C,
  the same for CPython and PyPy), the bytes are checked against their SHA-256 and must be a
  complete shared object of this ABI and machine whose ffigraph note names the record's prefix
  (library_file); then they are published into the cache as a build would be (per-key lock,
  atomic rename) and registered by symbol prefix, so the regenerated source (whose hash is that
  prefix) loads them instead of compiling;
- else the graph is compiled again; when that fails (no compiler) the error says what differed.

Bytes that fail those checks are refused before anything is written or loaded. Pickling sends
only a library that still matches the hash its cache entry recorded when it was built (a library
damaged on disk after it was loaded is left out, with a warning: the receiver compiles it).
Unpickling a function runs code, as any pickle does: unpickle only what you trust.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import platform
import sysconfig
import warnings

from ffigraph.abi import ABI_VERSION
from ffigraph.config import config
from ffigraph.linkers.c import cache
from ffigraph.linkers.c.build import CompileError
from ffigraph.linkers.c.library_file import LibraryFileError, NoAbiNoteError, check_library_bytes
from ffigraph.linkers.c.load import register_shipped

RECORD_VERSION = 1
# settings of the machine, not of the function: never carried in a pickle
LOCAL_SETTINGS = ("compiledir", "cxx", "nvcc", "compile_timeout", "pickle__library", "sanitize", "cuda_arch")


def platform_tag():
    """Where a compiled library can run: the platform, the machine and the ABI version (not the
    interpreter: a library has no Python in it)."""
    return "%s|%s|abi%d" % (sysconfig.get_platform(), platform.machine(), ABI_VERSION)


def _compiled_graphs(f):
    linker = getattr(f.maker.linker, "chosen", None) or f.maker.linker
    compiled = getattr(linker, "compiled", None)
    if compiled is not None:
        return [compiled]
    return list(getattr(linker, "compiled_nodes", {}).values())


def library_records(f):
    """One record per compile-cache library ``f`` runs (a library built outside the cache, for a
    graph the cache does not keep, is rebuilt from the graph instead)."""
    records, seen = [], set()
    entries = os.path.join(cache.root(), "entries")
    for compiled in _compiled_graphs(f):
        path = compiled.library.path
        entry = os.path.dirname(os.path.abspath(path))
        if os.path.basename(path) != cache.LIB_NAME or os.path.dirname(os.path.dirname(entry)) != entries:
            continue
        key = os.path.basename(entry)
        if key in seen:
            continue
        seen.add(key)
        data = _sound_bytes(path, entry, key)
        if data is None:
            continue
        records.append(dict(version=RECORD_VERSION, key=key, prefix=compiled.library.prefix, data=data,
                            lib_sha256=hashlib.sha256(data).hexdigest(), platform=platform_tag()))
    return records


def _sound_bytes(path, entry, key):
    """The bytes of the entry's library when they match the SHA-256 its meta.json recorded when it
    was built, else None (with a CorruptEntryWarning; the entry is removed so it is built again)."""
    try:
        data = cache.read_private_file(path)
    except cache.CacheSecurityError as why:
        warnings.warn("the compiled library %s is not pickled (%s); the graph will be compiled where it is "
                      "unpickled" % (path, why), cache.CorruptEntryWarning, stacklevel=4)
        return None
    recorded = cache.entry_meta(entry).get("lib_sha256")
    if data is not None and hashlib.sha256(data).hexdigest() == recorded:
        return data
    warnings.warn("the compiled library %s no longer matches the hash recorded when it was built (damaged or "
                  "modified on disk): it is not pickled, its cache entry is removed, and the graph will be "
                  "compiled where it is unpickled" % path, cache.CorruptEntryWarning, stacklevel=4)
    cache.discard_library(path)
    return None


def adopt(record):
    """Make one pickled library loadable here; returns None, or why it cannot be used here (it is then
    rebuilt from the graph). Raises pickle.UnpicklingError for bytes that fail their hash check."""
    if record.get("version") != RECORD_VERSION:
        return "library record version %r (this ffigraph reads %d)" % (record.get("version"), RECORD_VERSION)
    data, prefix, key = record["data"], record["prefix"], record["key"]
    if hashlib.sha256(data).hexdigest() != record["lib_sha256"]:
        raise pickle.UnpicklingError("the compiled library %s in this pickle does not match its recorded SHA-256 "
                                     "(corrupted or altered): refused, nothing was written or loaded" % prefix)
    if record["platform"] != platform_tag():
        return "library %s was built for %s, this machine is %s" % (prefix, record["platform"], platform_tag())
    try:
        check_library_bytes(data, ABI_VERSION, prefix, where="the library %s in this pickle" % prefix)
    except NoAbiNoteError as why:   # (an older ffigraph's pickle: its graph is compiled again here)
        return str(why)
    except LibraryFileError as why:
        raise pickle.UnpicklingError("%s: refused, nothing was written or loaded" % why) from None
    try:
        path = cache.adopt_library(key, prefix, data, record["lib_sha256"])
    except (OSError, cache.CacheSecurityError) as err:
        return "the compile cache at %s cannot take library %s (%s)" % (cache.root(), prefix, err)
    register_shipped(prefix, path)
    return None


def function_state(f):
    """What ``Function.__reduce__`` pickles: the recipe, the libraries and the inputs' kept state."""
    recipe = getattr(f, "_recipe", None)
    if recipe is None:
        raise pickle.PicklingError("%s cannot be pickled: it was made by copy() with swap= or delete_updates=; "
                                   "pickle the function it was copied from" % (f,))
    libraries = library_records(f) if config.pickle__library else []
    kept = {pos: f._default_cells[pos][0] for pos, _ in f._input_updates}
    settings = {k: v for k, v in f.maker.settings.items() if k not in LOCAL_SETTINGS} \
        if getattr(f.maker, "settings", None) else {}
    return recipe, libraries, kept, settings


def rebuild_function(recipe, libraries, kept, settings=None):
    """A pickled function, compiled again from its graph under the settings it was compiled with
    (threads, optimizer, ...: they decide the generated source, so the pickled library fits it), its
    libraries adopted first."""
    from ffigraph.compile.function import function

    unusable = [why for why in (adopt(record) for record in libraries) if why]
    try:
        with config.using(settings or {}):
            f = function(**recipe)
    except CompileError as err:
        shipped = ", ".join(r["prefix"] for r in libraries) or "none (pickled with pickle__library off)"
        raise CompileError("unpickling %s: it had to be compiled again and the compiler failed. Libraries in "
                           "the pickle: %s%s. A pickled library is used when this ffigraph generates the "
                           "same source for the graph (same ffigraph version and settings) on the same "
                           "platform. Compiler output: %s"
                           % (recipe.get("name") or "a function", shipped,
                              "; " + "; ".join(unusable) if unusable else "", err.compiler_output),
                           err.source_path, err.command or [], err.returncode) from None
    for pos, value in kept.items():
        f._default_cells[pos][0] = value
    return f
