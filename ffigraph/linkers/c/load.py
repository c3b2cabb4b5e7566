"""Loading built libraries with cffi's ABI mode, after checking version and struct layout.

A process keeps one load of each library while anything can still call into it, and closes it
once nothing can. The users that keep it open (``dl.OpenLibrary``) are the ``LoadedLibrary``
object, whose entry points a compiled graph calls, and every state it created, until the
state's ``P_destroy`` has run; both let go from cffi deleters, when their cdata is freed. The
per-process memo holds libraries weakly: two functions of one graph share one load, and a
library nobody uses is let go. Output arrays need no library: their blocks come from ``malloc``
and go back with the C library's ``free``.
"""
from __future__ import annotations

import functools
import os
import threading
import weakref

from ffigraph.abi import ABI_MAJOR, ABI_VERSION, LIBRARY_API_SYMBOL, expected_layout, ffi
from ffigraph.linkers.timing import compile_phase
from ffigraph.config import config
from ffigraph.linkers.c import cache
from ffigraph.linkers.c.build import CompileError, _keep_failed, build_library
from ffigraph.linkers.c.dl import OpenLibrary, symbol


class AbiMismatchError(RuntimeError):
    """A library was built against another ABI version or struct layout."""


class LibraryLoadError(CompileError):
    """The compiler reported success but what it wrote cannot be loaded (not a library, or one without
    the graph's entry points); the cache entry holding it has been removed."""


_SELF = "library"   # the LoadedLibrary's own key among its library's users


class LoadedLibrary:
    """One dlopen'ed graph library and its entry points (cdata function pointers).

    The entry points are valid while this object lives: whatever keeps one must keep this object
    too (a compiled graph's call does). Make states with ``new_state``: a state keeps the library
    loaded by itself until it has been destroyed.
    """

    def __init__(self, path, prefix):
        self.path = path
        self.prefix = prefix
        self.source_path = os.path.join(os.path.dirname(path), cache.SOURCE_NAME) \
            if os.path.basename(path) == cache.LIB_NAME else path[:-3] + ".c"
        opened = self.opened = OpenLibrary(path)   # the open library and who still needs it
        opened.hold(_SELF)
        # this object's hold ends when it is freed: the deleter of a cdata only it references
        self._hold = ffi.gc(opened.handle, functools.partial(_let_go, opened, _SELF))
        try:
            # the one fixed-name symbol, as a C host finds it; its table holds every other function
            api = symbol(self.opened.handle, LIBRARY_API_SYMBOL, "ffg_library_api_fn *")(ABI_MAJOR)
            if api == ffi.NULL:
                raise AbiMismatchError("%s does not speak ABI major %d (ffg_library_api(%d) is NULL); rebuild it"
                                       % (path, ABI_MAJOR, ABI_MAJOR))
            self._check_api(api)
            self.api = api
            self.version, self.describe, self.create = api.version, api.describe, api.create
            self.run, self.destroy, self.set_allocator = api.run, api.destroy, api.set_allocator
            self._profile = api.profile
            self._check_abi()
        except BaseException:
            # unload it now: the dynamic loader would otherwise hand this very library back for a
            # rebuilt one at the same path (it matches loaded objects by name)
            self.close()
            raise

    def close(self):
        """Let go now rather than when collected (a failed load; a test). The library is closed at
        once unless a state still holds it; this object's entry points must not be called again."""
        self.opened.release(_SELF)

    @property
    def closed(self):
        """Whether the library is unloaded (every user let go)."""
        return self.opened.closed

    def new_state(self, allocator=ffi.NULL):
        """``P_create``'s state, destroyed with ``P_destroy`` when its cdata is freed; the library
        stays loaded until then. Returns (state, error record); the state is NULL on failure."""
        err = ffi.new("FfgError *")
        options = ffi.new("FfgCreateOptions *", dict(struct_size=ffi.sizeof("FfgCreateOptions"),
                                                     abi_version=ABI_VERSION, allocator=allocator))
        state = self.create(options, err)
        if state == ffi.NULL:
            return state, err
        key = ("state", int(ffi.cast("uintptr_t", state)))
        self.opened.hold(key)
        return ffi.gc(state, functools.partial(_destroy_state, self.destroy, self.opened, key)), err

    def _check_api(self, api):
        if api.abi_version // 1000 != ABI_MAJOR or api.struct_size < ffi.sizeof("FfgLibraryApi"):
            raise AbiMismatchError("%s: its ffg_library_api table is for ABI %d (%d bytes), this ffigraph speaks "
                                   "%d (%d bytes); rebuild it" % (self.path, api.abi_version, api.struct_size,
                                                                  ABI_VERSION, ffi.sizeof("FfgLibraryApi")))
        found = ffi.string(api.prefix).decode("ascii", "replace")
        if found != self.prefix:
            raise AbiMismatchError("%s names its symbols %s, expected %s" % (self.path, found, self.prefix))

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
        if self._profile == ffi.NULL:
            raise RuntimeError("%s has no %s_profile: it was not generated with profiling on"
                               % (self.path, self.prefix))
        return self._profile

    def slots(self):
        """[(name, role, ndim, code, bits)] for inputs, then outputs, as the library describes them."""
        desc = self.describe()

        def read(table, n):
            return [(ffi.string(table[i].name).decode(), table[i].role, table[i].ndim, table[i].dtype.code,
                     table[i].dtype.bits) for i in range(n)]

        return read(desc.inputs, desc.n_inputs), read(desc.outputs, desc.n_outputs)

    def updates(self):
        """Per output slot, the input slot it updates (FfgSlot.updates), or -1."""
        desc = self.describe()
        return [desc.outputs[i].updates for i in range(desc.n_outputs)]

    def node_table(self):
        """[(op, text)] per node in execution order, as FfgDescription.nodes has them."""
        desc = self.describe()
        return [(ffi.string(desc.nodes[i].op).decode("utf-8", "replace"),
                 ffi.string(desc.nodes[i].text).decode("utf-8", "replace")) for i in range(desc.n_nodes)]


def _let_go(opened, key, _cdata):
    opened.release(key)


def _destroy_state(destroy, opened, key, state):
    try:
        destroy(state)
    finally:
        opened.release(key)


# prefix -> its LoadedLibrary while anything uses it: two functions of one graph share one load,
# and a library nobody uses is let go
_memo = weakref.WeakValueDictionary()
_memo_lock = threading.Lock()
_key_locks = {}   # prefix -> [lock, number of threads using it]: one build per key at a time


def _key_lock_enter(key):
    with _memo_lock:
        entry = _key_locks.setdefault(key, [threading.Lock(), 0])
        entry[1] += 1
    entry[0].acquire()
    return entry


def _key_lock_exit(key, entry):
    entry[0].release()
    with _memo_lock:
        entry[1] -= 1
        if entry[1] == 0:
            del _key_locks[key]


# symbol prefix -> the path of a library that came in a pickle (pickling.adopt): the same source
# (the prefix is its hash) is loaded from there rather than compiled, whatever compiler is here
_shipped = {}


def register_shipped(prefix, path):
    """Load the library of ``prefix`` from ``path`` (a pickle's, adopted into the cache) when asked."""
    _shipped[prefix] = path


def library_for(graph_source, compiler=None, graph_key=None):
    """The loaded library for a generated source: built and loaded at most once per process while
    anything uses it (a library that every user dropped is closed, and loaded again if asked).
    ``graph_key``: the structural key of the graph the source was generated from, recorded in the
    cache entry a build publishes."""
    def locate():   # a library that came in a pickle, a cache lookup, or the compiler's run
        shipped = _shipped.get(graph_source.prefix)
        if shipped is not None and os.path.isfile(shipped):
            return shipped
        nodes = len(graph_source.nodes)   # named in the line a build logs as it starts
        path = None
        if graph_source.cacheable:  # every type and op gave a c_code_cache_version
            path = cache.get_or_build(graph_source.source, graph_source.requirements, compiler, nodes=nodes,
                                      graph_key=graph_key)
        if path is None:  # kept for this process only
            path = build_library(graph_source.source, graph_source.prefix, graph_source.requirements, compiler,
                                 nodes=nodes)
        return path

    return _memoized(graph_source.prefix, locate, compiler)


def library_at(prefix, find_path, compiler=None):
    """The loaded library whose symbols are ``prefix``, without its source: the one this process
    holds, else the one at ``find_path()`` (a sound cache entry's library, or None). None when
    neither is there (the caller generates the source and calls ``library_for``)."""
    return _memoized(prefix, find_path, compiler)


def _memoized(prefix, locate, compiler):
    """The library of ``prefix`` this process holds, else the one at ``locate()`` loaded (once per
    process however many threads ask), or None when ``locate`` finds none."""
    loaded = _memo.get(prefix)
    if loaded is not None:
        return loaded
    entry = _key_lock_enter(prefix)
    try:
        loaded = _memo.get(prefix)
        if loaded is not None:
            return loaded
        with compile_phase("compiler"):
            path = locate()
        if path is None:
            return None
        with compile_phase("load"):
            loaded = _load(path, prefix, compiler)
        _memo[prefix] = loaded
        return loaded
    finally:
        _key_lock_exit(prefix, entry)


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
    """(library path, source path) of every library this process holds loaded (for inspection and tests)."""
    return [(lib.path, lib.source_path) for lib in list(_memo.values())]
