"""Loading built libraries with cffi's ABI mode, after checking version and struct layout."""
from __future__ import annotations

import os
import threading

from ffigraph.abi import ABI_VERSION, declare_entry_points, expected_layout, ffi
from ffigraph.compile.profiling import compile_phase
from ffigraph.config import config
from ffigraph.linkers.c import cache
from ffigraph.linkers.c.build import CompileError, _keep_failed, build_library


class AbiMismatchError(RuntimeError):
    """A library was built against another ABI version or struct layout."""


class LibraryLoadError(CompileError):
    """The compiler reported success but what it wrote cannot be loaded (not a library, or one without
    the graph's entry points); the cache entry holding it has been removed."""


class LoadedLibrary:
    """One dlopen'ed graph library and its five entry points."""

    def __init__(self, path, prefix):
        declare_entry_points(prefix)
        self.path = path
        self.prefix = prefix
        self.source_path = os.path.join(os.path.dirname(path), cache.SOURCE_NAME) \
            if os.path.basename(path) == cache.LIB_NAME else path[:-3] + ".c"
        self.lib = ffi.dlopen(path)
        try:
            self.version = getattr(self.lib, prefix + "_version")
            self.describe = getattr(self.lib, prefix + "_describe")
            self.create = getattr(self.lib, prefix + "_create")
            self.run = getattr(self.lib, prefix + "_run")
            self.destroy = getattr(self.lib, prefix + "_destroy")
            self.set_allocator = getattr(self.lib, prefix + "_set_allocator")
            self._check_abi()
        except BaseException:
            # unload it: the dynamic loader would otherwise hand this very library back for a
            # rebuilt one at the same path (it matches loaded objects by name)
            ffi.dlclose(self.lib)
            raise

    def _check_abi(self):
        version = self.version()
        if version != ABI_VERSION:
            raise AbiMismatchError("%s was built for ABI version %d, this ffigraph speaks %d; rebuild it"
                                   % (self.path, version, ABI_VERSION))
        desc = self.describe()
        layout = [desc.layout[i] for i in range(desc.n_layout)]
        if layout != expected_layout():
            raise AbiMismatchError("%s reports struct layout %s, cffi expects %s" % (self.path, layout, expected_layout()))

    def profile_function(self):
        """``P_profile``, which only a library generated with profiling on exports."""
        try:
            return getattr(self.lib, self.prefix + "_profile")
        except AttributeError:
            raise RuntimeError("%s has no %s_profile: it was not generated with profiling on"
                               % (self.path, self.prefix)) from None

    def slots(self):
        """[(name, role, ndim, code, bits)] for inputs, then outputs, as the library describes them."""
        desc = self.describe()

        def read(table, n):
            return [(ffi.string(table[i].name).decode(), table[i].role, table[i].ndim, table[i].dtype.code,
                     table[i].dtype.bits) for i in range(n)]

        return read(desc.inputs, desc.n_inputs), read(desc.outputs, desc.n_outputs)


_memo = {}
_memo_lock = threading.Lock()
_build_locks = {}


def library_for(graph_source, compiler=None):
    """The loaded library for a generated source: built and loaded at most once per process."""
    key = graph_source.prefix
    with _memo_lock:
        if key in _memo:
            return _memo[key]
        lock = _build_locks.setdefault(key, threading.Lock())
    with lock:
        with _memo_lock:
            if key in _memo:
                return _memo[key]
        path = None
        with compile_phase("compiler"):   # a cache lookup, or the compiler's run
            if graph_source.cacheable:  # every type and op gave a c_code_cache_version
                path = cache.get_or_build(graph_source.source, graph_source.requirements, compiler)
            if path is None:  # kept for this process only
                path = build_library(graph_source.source, graph_source.prefix, graph_source.requirements, compiler)
        with compile_phase("load"):
            loaded = _load(path, graph_source.prefix, compiler)
        with _memo_lock:
            _memo[key] = loaded
        return loaded


def _load(path, prefix, compiler):
    """LoadedLibrary(path, prefix); a library that does not load leaves no cache entry behind."""
    try:
        return LoadedLibrary(path, prefix)
    except AbiMismatchError:
        cache.discard_library(path)
        raise
    except (OSError, AttributeError) as err:   # dlopen refused it, or an entry point is missing
        in_cache = os.path.basename(path) == cache.LIB_NAME
        source = os.path.join(os.path.dirname(path), cache.SOURCE_NAME) if in_cache else path[:-3] + ".c"
        kept = _keep_failed(source, prefix + ".c") if os.path.exists(source) else source
        removed = cache.discard_library(path)
        raise LibraryLoadError("the library the C compiler built cannot be loaded: %s%s"
                               % (err, "; its compile cache entry was removed" if removed else ""),
                               kept, [compiler or config.cxx]) from None


def built_libraries():
    """(library path, source path) of every library this process has loaded (for inspection and tests)."""
    with _memo_lock:
        return [(lib.path, lib.source_path) for lib in _memo.values()]
