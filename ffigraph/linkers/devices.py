"""Devices the C linker can target besides the CPU, found by name ("cuda") in a registry.

A device package (``ffigraph/<name>/``) subclasses ``Device`` and ``register`` s
an instance when imported. The linker and export reach the device only
through it, so nothing below the device package imports it, and a CPU-only
process never loads one. The package facade registers a loader per device
(``register_loader``) that imports its package; ``require(name)`` runs it
when a mode asks for the device.

Stdlib only: this module sits under every layer that may ask for a device.
"""
from __future__ import annotations

import threading

_lock = threading.Lock()
_devices = {}               # name -> Device
_loaders = {}               # name -> (zero-argument loader, the package it loads)
_loaded = set()             # names whose loader has run to the end


class Device:
    """What the C linker and export need of one device; a device package overrides every method."""

    name = None   # the registry key, e.g. "cuda"

    def _missing(self, what):
        return NotImplementedError("device %r (%s) does not implement %s"
                                   % (self.name, type(self).__name__, what))

    # ---- generated source and its build

    def prelude(self):
        """The source put first in the device's part of a generated unit (its errors, memory, checks)."""
        raise self._missing("prelude()")

    def build_requirements(self):
        """The extra compile step's settings, stored as ``requirements[name]`` for linkers/c/build.py
        (CUDA: nvcc, its flags and target archs)."""
        raise self._missing("build_requirements()")

    # ---- device memory seen from the host

    def install_allocator(self, library, state, block):
        """Give a loaded library's ``state`` its device allocator and ``block`` (a CallBlock) the matching
        ``device_release``; returns the allocator, or None when the library keeps its own default."""
        raise self._missing("install_allocator(library, state, block)")

    def free_block(self, ptr):
        """Release an output block the library handed over (when no allocator was installed)."""
        raise self._missing("free_block(ptr)")

    # ---- export

    def to_host(self, value):
        """A numpy copy of a device value (host arrays pass through)."""
        raise self._missing("to_host(value)")

    def toolchain_root(self, build_requirements):
        """The toolkit folder (holding include/) that built a graph with these build requirements."""
        raise self._missing("toolchain_root(build_requirements)")


def register(device):
    """Make ``device`` the one ``get(device.name)`` returns (a later registration replaces it)."""
    if not isinstance(device, Device) or not device.name:
        raise TypeError("register a Device instance with a name, got %r" % (device,))
    with _lock:
        _devices[device.name] = device
    return device


def register_loader(name, loader, package=None):
    """Make ``require(name)`` call ``loader()`` (which registers the device) the first time it is needed;
    ``package`` is what the loader imports, named in errors."""
    if not callable(loader):
        raise TypeError("the loader for device %r must be callable, got %r" % (name, loader))
    with _lock:
        _loaders[name] = (loader, package)
        _loaded.discard(name)


def registered():
    """The names of the devices registered so far."""
    with _lock:
        return sorted(_devices)


def get(name):
    """The registered device ``name``; its package must have been imported (or loaded by ``require``)."""
    with _lock:
        device = _devices.get(name)
        if device is not None:
            return device
        package = _loaders.get(name, (None, None))[1] or "ffigraph." + name
    raise LookupError("no device %r is registered: it is provided by %s, which has not been imported "
                      "(import it, or ask for the device with Mode(device=%r)); registered: %s"
                      % (name, package, name, ", ".join(map(repr, registered())) or "none"))


def require(name):
    """The device ``name``, after running its loader once if it is not registered yet."""
    with _lock:
        loader = None
        if name not in _devices and name in _loaders and name not in _loaded:
            loader = _loaders[name][0]
    if loader is not None:
        # outside the lock: the loader imports a package whose import registers, and another thread may
        # hold that import's lock while waiting for ours
        loader()
        with _lock:
            _loaded.add(name)   # only after success: a failed import is retried, and reported, next time
    return get(name)
