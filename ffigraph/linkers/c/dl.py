"""The dynamic loader, called through the C library: open a graph library, find its entry points
by name, close it.

cffi's own ``ffi.dlopen`` needs every symbol declared with ``ffi.cdef`` before it can be read, and
a cdef is kept for the life of the process; a process that loads thousands of graphs would keep
thousands of them. Here the entry points are found with ``dlsym`` and typed with the header's
``ffg_*_fn`` pointer types, so loading a library leaves nothing behind once it is closed.
"""
from __future__ import annotations

import os

from ffigraph.abi import ffi

_NOW = getattr(os, "RTLD_NOW", 2)
_LOCAL = getattr(os, "RTLD_LOCAL", 0)


def _loader():
    """The object that carries dlopen & co: the C library itself (glibc >= 2.34, musl, macOS), else libdl."""
    lib = ffi.dlopen(None)
    try:
        lib.dlopen
        return lib
    except AttributeError:   # older glibc keeps them in libdl
        return ffi.dlopen("libdl.so.2")


_dl = _loader()
# The functions themselves, read once: reading an attribute of a cffi library object the first
# time takes cffi's lock, and dlclose runs from deleters, which the collector may start while
# this thread holds that lock (inside ffi.new or ffi.cast): that would wait forever.
_dlopen, _dlsym, _dlclose, _dlerror = _dl.dlopen, _dl.dlsym, _dl.dlclose, _dl.dlerror


def _last_error():
    message = _dlerror()
    return ffi.string(message).decode("utf-8", "replace") if message != ffi.NULL else "unknown error"


def open_library(path):
    """A handle (a cdata ``void *``) for the shared library at ``path``; OSError saying why it cannot
    be loaded (the loader's own message, as cffi's dlopen gives it)."""
    handle = _dlopen(os.fsencode(path), _NOW | _LOCAL)
    if handle == ffi.NULL:
        raise OSError("cannot load library '%s': %s" % (path, _last_error()))
    return handle


def symbol(handle, name, ctype):
    """The symbol ``name`` of an open library as a cdata of ``ctype`` (a function pointer type);
    AttributeError when the library does not export it."""
    _dlerror()   # clear a stale message, so that the one read below is this lookup's
    address = _dlsym(handle, name.encode("ascii"))
    if address == ffi.NULL:
        raise AttributeError("the library exports no symbol %r: %s" % (name, _last_error()))
    return ffi.cast(ctype, address)


def close_library(handle):
    """Drop this process's use of the library (the loader unmaps it when no other handle holds it).
    The caller makes sure nothing can still call into it."""
    _dlclose(handle)


class OpenLibrary:
    """An open library and the users that still need it; closed when the last one lets go.

    Users are named by hashable keys. Each lets go from a cffi deleter (``ffi.gc``), which runs
    when its cdata is freed: after a state's ``P_destroy`` has returned, never before. (A Python
    finalizer would not do: CPython runs finalizers and weakref callbacks of a garbage cycle
    before it frees the cycle's cdata, so a state in the same cycle could still be destroyed
    afterwards, by code already unmapped.) The set and the one-shot list make ``release`` safe
    from any thread and from a deleter run by the collector in the middle of other work.
    """

    def __init__(self, path):
        self.path = path
        self.handle = open_library(path)
        self._users = set()
        self._open = [True]   # popped once, by whoever closes

    def hold(self, key):
        self._users.add(key)

    def release(self, key):
        self._users.discard(key)
        if self._users:
            return
        try:
            self._open.pop()
        except IndexError:   # already closed
            return
        close_library(self.handle)

    @property
    def closed(self):
        return not self._open
