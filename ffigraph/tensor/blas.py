"""Which OpenBLAS the generated ``Dot`` code calls: one thread pool per process, not two.

numpy's wheels carry their own OpenBLAS (numpy 2.x: the scipy-openblas build, in
``numpy.libs/libscipy_openblas64_-<hash>.so``; numpy 1.26, the one PyPy has here:
``libopenblas64_p-r0-<hash>.so``), and ffigraph used to link its graphs against the
``scipy-openblas64`` package: two libraries with two thread pools in one process. An OpenBLAS
worker keeps spinning for a while after its last call, so numpy's ``dot`` and ffigraph's ``dot``
called in turn waited behind each other's spinning workers (up to a scheduler tick per call:
60-185x slower at n=256 on a quiet 16-core machine, more on a busy 2-core one; see
``bench/bench_dot.py --alternate``).

``library()`` says which library the next compiled Dot links against:

1. **numpy's own OpenBLAS** (``SHARE_NUMPY_BLAS``), when numpy has loaded one that ffigraph can
   call: a loaded library whose file name says OpenBLAS, built ILP64 (its
   ``openblas_get_config`` says ``USE64BITINT``), exporting the six CBLAS functions the
   generated code calls under a known naming scheme (``scipy_cblas_dgemm64_``: scipy-openblas,
   numpy 2.x; ``cblas_dgemm64_``: ``openblas64_``, numpy 1.26), and whose version is the one
   ``numpy.show_config()`` names (so a copy that something else loaded is not taken for
   numpy's). The graph library is linked against that very file (``-l:<file name>``, rpath its
   folder), so its ``DT_NEEDED`` entry is that file's SONAME. The dynamic loader reuses an
   already-loaded object whose SONAME (or file) matches a ``DT_NEEDED`` entry, so loading the
   graph maps nothing new: numpy and ffigraph call one library with one pool. Linux (ELF)
   only.
2. Otherwise **the scipy-openblas64 package** (a dependency of ffigraph), as before: two
   libraries, two pools, which ``COORDINATE_THREADS`` keeps from oversubscribing the CPUs.
   ffigraph's pool gets ``max(1, cpus + 1 - t)`` threads, ``t`` the largest thread count of the
   other OpenBLAS pools loaded in the process (a call runs on the caller plus its pool's
   workers, while the other pool's ``t - 1`` workers may still spin). numpy's pool is left as
   it is. With a BLAS that is not OpenBLAS (MKL, Accelerate, BLIS) nothing is coordinated.
3. Inside ``standalone()`` (an export for a host without Python) always the package: the
   bundle copies it in and finds it through ``$ORIGIN``.

Which library is chosen is written into the generated source (a comment) and into the link
flags (``-l``, ``-L``, rpath), so the in-process library memo (keyed by the source) and the
compile cache (keyed by the source and every flag) never hand out a library linked against
the other BLAS.
"""
from __future__ import annotations

import collections
import contextlib
import contextvars
import ctypes
import importlib.metadata
import importlib.util
import os
import sys
import threading
import warnings

import numpy as np

#: Link against the OpenBLAS that numpy has loaded when it can be called (see the module doc);
#: False: always the scipy-openblas64 package.
SHARE_NUMPY_BLAS = True

#: With the package beside another OpenBLAS in the process, lower the package pool's thread
#: count so that the two pools never want more threads than the CPUs (see the module doc).
COORDINATE_THREADS = True

#: The CBLAS functions the generated code calls.
CBLAS_FUNCTIONS = ("sdot", "ddot", "sgemv", "dgemv", "sgemm", "dgemm")

#: The (symbol prefix, suffix) pairs of OpenBLAS builds, the ILP64 ones first (their CBLAS can be
#: called), then the LP64 ones (only their thread count is read, to coordinate with them).
SCHEMES = (("scipy_", "64_"), ("", "64_"), ("scipy_", ""), ("", ""))

BlasLibrary = collections.namedtuple("BlasLibrary", "origin path lib_dir link_name prefix suffix version")
BlasLibrary.__doc__ = """The OpenBLAS a graph links against.

origin: "numpy" (numpy's own loaded copy) or "scipy-openblas64" (the package); path: its file;
lib_dir, link_name: the ``-L`` folder and the ``-l`` name (``:<file name>`` for numpy's, whose
file name has no plain ``lib<name>.so`` form); prefix, suffix: of its symbols
(``<prefix>cblas_dgemm<suffix>``); version: its OpenBLAS version."""


def _symbol(lib, name):
    return "%scblas_%s%s" % (lib.prefix, name, lib.suffix)


BlasLibrary.symbol = _symbol


OpenBlas = collections.namedtuple("OpenBlas", "path prefix suffix config version cblas handle")
OpenBlas.__doc__ = """A loaded OpenBLAS: its file, symbol scheme, ``openblas_get_config`` text and version,
whether ffigraph can call its CBLAS (ILP64, the six functions), and its ctypes handle (None in tests)."""


def _threads_fn(ob, what):
    return getattr(ob.handle, "%sopenblas_%s_num_threads%s" % (ob.prefix, what, ob.suffix))


def get_threads(ob):
    fn = _threads_fn(ob, "get")
    fn.restype = ctypes.c_int
    return int(fn())


def set_threads(ob, n):
    fn = _threads_fn(ob, "set")
    fn.argtypes = [ctypes.c_int]
    fn(int(n))


# ---------------------------------------------------------------- looking at the process


class _DlPhdrInfo(ctypes.Structure):
    _fields_ = [("dlpi_addr", ctypes.c_void_p), ("dlpi_name", ctypes.c_char_p),
                ("dlpi_phdr", ctypes.c_void_p), ("dlpi_phnum", ctypes.c_uint16)]


def loaded_libraries():
    """The files of every shared object loaded in this process (``dl_iterate_phdr``, as
    threadpoolctl finds them; /proc/self/maps where that is missing); [] elsewhere."""
    names = []
    try:
        libc = ctypes.CDLL(None)
        iterate = libc.dl_iterate_phdr
    except (OSError, AttributeError):
        iterate = None
    if iterate is not None:
        callback_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_DlPhdrInfo), ctypes.c_size_t,
                                         ctypes.c_void_p)

        def collect(info, size, data):
            name = info.contents.dlpi_name
            if name:
                names.append(os.fsdecode(name))
            return 0

        iterate.argtypes = [callback_type, ctypes.c_void_p]
        iterate(callback_type(collect), None)
    else:
        try:
            with open("/proc/self/maps") as fh:
                names = [line.split(None, 5)[5].strip() for line in fh if len(line.split(None, 5)) == 6]
        except OSError:
            return []
    seen, found = set(), []
    for name in names:
        if name.startswith("/") and name not in seen:
            seen.add(name)
            found.append(name)
    return found


def _version(config):
    """'0.3.31.188.0' from 'OpenBLAS 0.3.31.188.0  USE64BITINT ...'."""
    words = (config or "").split()
    return words[1] if len(words) > 1 and words[0] == "OpenBLAS" else None


def probe(path, handle=None):
    """What the OpenBLAS at ``path`` is (an ``OpenBlas``), or None when it is not one.

    A loaded library is opened with RTLD_NOLOAD (nothing new is ever loaded here)."""
    if handle is None:
        try:
            handle = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | getattr(os, "RTLD_NOW", 2))
        except OSError:
            return None
    for prefix, suffix in SCHEMES:
        get_config = getattr(handle, "%sopenblas_get_config%s" % (prefix, suffix), None)
        if get_config is None:
            continue
        get_config.restype = ctypes.c_char_p
        config = (get_config() or b"").decode("ascii", "replace")
        cblas = (suffix == "64_" and "USE64BITINT" in config
                 and all(hasattr(handle, "%scblas_%s%s" % (prefix, f, suffix)) for f in CBLAS_FUNCTIONS))
        return OpenBlas(path, prefix, suffix, config, _version(config), cblas, handle)
    return None


def numpy_blas_config():
    """numpy's build-time BLAS ({'name': ..., 'version': ...}), or None (a numpy before 1.26)."""
    try:
        return np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:   # no mode= (numpy < 1.26), or another layout
        return None


def _same_file(a, b):
    try:
        return b is not None and os.path.samefile(a, b)
    except OSError:
        return False


def _is_openblas_file(path):
    return "openblas" in os.path.basename(path).lower()


def find_numpy_blas(loaded, numpy_config, package_file=None, probe=probe, platform=None):
    """(BlasLibrary, why) for numpy's own OpenBLAS among the ``loaded`` files, or (None, why not).

    ``numpy_config`` is numpy's BLAS entry of ``show_config`` (None: unknown); ``package_file``
    the scipy-openblas64 package's library, which is taken only when nothing else matches."""
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return None, "sharing numpy's OpenBLAS is done on Linux (ELF) only, not on %s" % platform
    name = (numpy_config or {}).get("name") or ""
    version = (numpy_config or {}).get("version") or None
    if name and "openblas" not in name.lower():
        return None, "numpy's BLAS is %s, not an OpenBLAS" % name
    usable, refused = [], []
    for path in loaded:
        if not _is_openblas_file(path):
            continue
        ob = probe(path)
        if ob is None:
            refused.append("%s: no openblas_get_config of a known symbol scheme" % path)
        elif not ob.cblas:
            refused.append("%s: not an ILP64 build exporting %scblas_dgemm%s and the rest (%s)"
                           % (path, ob.prefix, ob.suffix, ob.config.strip()))
        elif not os.path.isfile(path):
            refused.append("%s: the file is gone" % path)
        elif version and ob.version != version:
            refused.append("%s: OpenBLAS %s, numpy was built with %s" % (path, ob.version, version))
        else:
            usable.append(ob)
    if not usable:
        why = "numpy's OpenBLAS%s is not loaded as a library ffigraph can call" % (" " + version if version else "")
        return None, why + ("" if not refused else " (" + "; ".join(refused) + ")")
    usable.sort(key=lambda ob: _same_file(ob.path, package_file))   # the package's own copy last
    ob = usable[0]
    real = os.path.realpath(ob.path)
    lib = BlasLibrary("numpy", real, os.path.dirname(real), ":" + os.path.basename(real), ob.prefix, ob.suffix,
                      ob.version)
    return lib, "numpy's own OpenBLAS %s (%s), one thread pool with numpy" % (ob.version, real)


# ---------------------------------------------------------------- the scipy-openblas64 package

_package_cache = []


def _package_dir():
    """The scipy_openblas64 package's folder, or None when it is not installed.

    Found without importing it: ``import scipy_openblas64`` loads its library with RTLD_GLOBAL
    (so that NumPy/SciPy builds that expect it find its symbols), and a library in the global
    scope wins every later symbol lookup: a graph linked against numpy's copy would then bind
    to the package's all the same, and the process would have two pools again."""
    module = sys.modules.get("scipy_openblas64")
    if module is not None:
        return os.path.dirname(os.path.abspath(module.__file__))
    try:
        spec = importlib.util.find_spec("scipy_openblas64")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return os.path.dirname(os.path.abspath(spec.origin))


def package_info():
    """(lib_dir, include_dir, library) of scipy-openblas64, or None when it is not installed.

    scipy-openblas64 is a dependency of ffigraph; without it (an install with ``--no-deps``, a
    platform with no wheel) floats use the blocked kernel where numpy's OpenBLAS is not shared,
    and a warning says so once. An installed package that is broken (its shared library is not
    where its ``get_lib_dir()`` / ``get_library()`` put it) raises: a BLAS that silently went
    missing would hide itself behind the slower kernel. The package is not imported (see
    ``_package_dir``); its folders are the ones its own functions give."""
    if not _package_cache:
        folder = _package_dir()
        if folder is None:
            warnings.warn("scipy-openblas64 is not installed: Dot on floats uses ffigraph's blocked C kernel "
                          "instead of BLAS where numpy's OpenBLAS is not shared", RuntimeWarning, stacklevel=2)
            _package_cache.append(None)
            return None
        lib_dir, include_dir = os.path.join(folder, "lib"), os.path.join(folder, "include")
        try:
            names = sorted(n for n in os.listdir(lib_dir) if n.startswith("libscipy_openblas") and ".so" in n)
        except OSError as err:
            raise RuntimeError("scipy-openblas64 is installed but broken: %s" % err) from err
        if not names:
            raise RuntimeError("scipy-openblas64 is installed but broken: no shared library libscipy_openblas*.so "
                               "in %s" % lib_dir)
        library = names[0][3:names[0].index(".so")]   # what get_library() gives: the -l name
        if not os.path.isfile(os.path.join(lib_dir, "lib%s.so" % library)):
            raise RuntimeError("scipy-openblas64 is installed but broken: no shared library lib%s.so in %s"
                               % (library, lib_dir))
        _package_cache.append((lib_dir, include_dir, library))
    return _package_cache[0]


def _package_version():
    try:
        return importlib.metadata.version("scipy-openblas64")
    except Exception:
        return None


def package_library():
    """The scipy-openblas64 package as a BlasLibrary, or None when it is not installed."""
    info = package_info()
    if info is None:
        return None
    lib_dir, _, library = info
    return BlasLibrary("scipy-openblas64", os.path.join(lib_dir, "lib%s.so" % library), lib_dir, library,
                       "scipy_", "64_", _package_version())


# ---------------------------------------------------------------- the choice

_lock = threading.RLock()
_numpy_cache = []          # [(BlasLibrary or None, why)], found once per process
_coordinated = {}          # package file -> the thread count set (or None: nothing to do)
_standalone = contextvars.ContextVar("ffigraph_blas_standalone", default=False)


def numpy_library():
    """(BlasLibrary or None, why): numpy's own OpenBLAS when it can be shared (found once), and
    while no other library defines its CBLAS symbols in the global scope (checked every time)."""
    with _lock:
        if not _numpy_cache:
            _numpy_cache.append(find_numpy_blas(loaded_libraries(), numpy_blas_config(), _package_file()))
        lib, reason = _numpy_cache[0]
    if lib is not None:
        refused = shadowed(lib)
        if refused:
            return None, refused
    return lib, reason


def _package_file():
    """The package's library file, or None (not installed, or broken: package_info says how)."""
    try:
        info = package_info()
    except RuntimeError:
        return None
    return None if info is None else os.path.join(info[0], "lib%s.so" % info[2])


def shadowed(lib, global_definition=None):
    """Why a graph linked against ``lib`` would not call it, or '' when it would.

    Symbols are looked up in the global scope (the program and every library loaded with
    RTLD_GLOBAL, e.g. by ``import scipy_openblas64``) before a library's own dependencies, so
    a global definition of the CBLAS names from another file wins whatever the link says."""
    symbol = lib.symbol("dgemm")
    found = (global_definition or globally_defined)(symbol)
    if found is None or _same_file(found, lib.path):
        return ""
    return ("%s is defined in the global scope by %s (loaded with RTLD_GLOBAL, e.g. by `import "
            "scipy_openblas64`): a graph library would call that one whatever it links against"
            % (symbol, found))


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


_global_scope = []   # [(dlopen(NULL) handle, dladdr)], opened once


def globally_defined(symbol):
    """The file that defines ``symbol`` in the process's global scope, or None."""
    if not _global_scope:
        try:
            scope = ctypes.CDLL(None)
            try:
                dladdr = scope.dladdr
            except AttributeError:   # glibc before 2.34: in libdl
                dladdr = ctypes.CDLL("libdl.so.2").dladdr
            dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        except (OSError, AttributeError):
            scope = dladdr = None
        _global_scope.append((scope, dladdr))
    scope, dladdr = _global_scope[0]
    if scope is None:
        return None
    try:   # ctypes caches an attribute it found, so look the name up afresh
        address = ctypes.c_void_p.in_dll(scope, symbol)
    except ValueError:
        return None
    info = _DlInfo()
    if not dladdr(ctypes.addressof(address), ctypes.byref(info)) or not info.dli_fname:
        return "?"
    return os.fsdecode(info.dli_fname)


@contextlib.contextmanager
def standalone():
    """Inside: the library a graph links against is the package's, whatever numpy has loaded
    (an export, which carries its BLAS and runs with no numpy)."""
    token = _standalone.set(True)
    try:
        yield
    finally:
        _standalone.reset(token)


def library():
    """The BlasLibrary the next compiled Dot links against, or None (no BLAS: the blocked kernel)."""
    if _standalone.get():
        return package_library()
    if SHARE_NUMPY_BLAS:
        shared = numpy_library()[0]
        if shared is not None:
            return shared
    lib = package_library()
    if lib is not None and COORDINATE_THREADS:
        coordinate(lib)
    return lib


def why():
    """A sentence on the library ``library()`` gives and why."""
    if _standalone.get():
        return "the scipy-openblas64 package (an export carries its own BLAS)"
    if SHARE_NUMPY_BLAS:
        shared, reason = numpy_library()
        if shared is not None:
            return reason
    else:
        reason = "sharing numpy's OpenBLAS is switched off (SHARE_NUMPY_BLAS)"
    lib = package_library()
    if lib is None:
        return reason + "; scipy-openblas64 is not installed: the blocked C kernel"
    threads = _coordinated.get(lib.path)
    return reason + "; so the scipy-openblas64 package %s, a second thread pool%s" % (
        lib.version, ", set to %d thread(s) beside the other OpenBLAS pools" % threads if threads else "")


def coordinated_threads(own_threads, other_threads, cpus):
    """The thread count for ffigraph's own pool beside pools of ``other_threads`` threads on
    ``cpus`` CPUs, or None to leave it: a call runs on the caller and its pool's workers while
    another pool's workers (its count less the caller) may still spin, so
    own + max(other) - 1 <= cpus."""
    if not other_threads:
        return None
    want = max(1, cpus + 1 - max(other_threads))
    return want if own_threads > want else None


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def coordinate(lib, loaded=None, cpus=None):
    """Load the package's library and lower its pool's thread count beside the other OpenBLAS
    pools of the process (once per process and file); the count set, or None."""
    with _lock:
        if lib.path in _coordinated:
            return _coordinated[lib.path]
        _coordinated[lib.path] = None
        try:
            own = probe(lib.path, handle=ctypes.CDLL(lib.path))   # the graph libraries will find it loaded
        except OSError:
            return None
        if own is None:
            return None
        others = []
        for path in loaded_libraries() if loaded is None else loaded:
            if _is_openblas_file(path) and not _same_file(path, lib.path):
                ob = probe(path)
                if ob is not None:
                    others.append(get_threads(ob))
        want = coordinated_threads(get_threads(own), others, _cpus() if cpus is None else cpus)
        if want is not None:
            set_threads(own, want)
        _coordinated[lib.path] = want
        return want


def pools():
    """[(file, symbol scheme, version, threads)] of every OpenBLAS loaded in the process."""
    found = []
    for path in loaded_libraries():
        if _is_openblas_file(path):
            ob = probe(path)
            if ob is not None:
                found.append((path, ob.prefix + "*" + ob.suffix, ob.version, get_threads(ob)))
    return found


# ---------------------------------------------------------------- the BLAS-role ops

# ``ffigraph.tensor.blas.Gemv`` and the rest, where Theano and PyTensor users look for them (the
# ops live in blas_ops.py; this module is imported by the C code, and they by the graph)
from ffigraph.tensor.blas_ops import Dot22, Gemm, Gemv, Ger, dot22, gemm_no_inplace, gemv, ger  # noqa: E402,F401
