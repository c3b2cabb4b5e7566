"""Process-wide settings, read once from ``FFIGRAPH_FLAGS`` and settable in code.

``FFIGRAPH_FLAGS="floatX=float32,linker=py"`` sets values at import time;
``ffigraph.config.floatX = 'float32'`` changes one later, and
``with ffigraph.config.change_flags(floatX='float32'):`` changes some for a block.
Every key is validated when set, so a typo fails loudly instead of being ignored.
"""
from __future__ import annotations

import contextlib
import os
import platform
import shutil
import sys
import warnings

ENV_VAR = "FFIGRAPH_FLAGS"


def _interpreter_tag() -> str:
    """Names the platform and interpreter, so CPython and PyPy never share a compiledir."""
    impl = sys.implementation.name
    ver = "%d%d" % sys.version_info[:2]
    # os.uname, not platform.machine(): on some Pythons the latter runs `uname -p` in a subprocess,
    # and a warm function() must start no subprocess
    if hasattr(os, "uname"):
        system, machine = os.uname().sysname.lower(), os.uname().machine
    else:
        system, machine = platform.system().lower(), platform.machine()
    return "%s-%s-%s%s" % (system, machine, impl, ver)


def _default_compiledir() -> str:
    """$FFIGRAPH_COMPILEDIR if set, else the user cache dir; always one folder per platform+interpreter."""
    import platformdirs

    override = os.environ.get("FFIGRAPH_COMPILEDIR")
    if override:
        return os.path.join(override, "compiledir_" + _interpreter_tag())
    base = platformdirs.user_cache_dir("ffigraph")
    return os.path.join(base, "compiledir_" + _interpreter_tag())


def _default_cxx() -> str:
    """$CC if set, else gcc, else cc (found on PATH)."""
    return os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc") or "cc"


def _one_of(*choices):
    def check(value):
        if value not in choices:
            raise ValueError("must be one of %s, got %r" % (", ".join(map(repr, choices)), value))
        return value

    return check


def _sanitizers(value):
    """The gcc sanitizers to build with: '' (none), address, undefined or both, "address+undefined"
    (a comma works too where the value is not inside FFIGRAPH_FLAGS, whose items commas separate)."""
    if not isinstance(value, str):
        raise ValueError("must be a string, got %r" % (value,))
    parts = [p.strip() for p in value.replace("+", ",").split(",") if p.strip()]
    unknown = [p for p in parts if p not in ("address", "undefined")]
    if unknown:
        raise ValueError("must be '', 'address', 'undefined' or 'address+undefined', got %r" % (value,))
    return ",".join(p for p in ("address", "undefined") if p in parts)


def _positive_seconds(value):
    """A positive, finite number of seconds (a string from FFIGRAPH_FLAGS is parsed)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError("must be a positive number of seconds, got %r" % (value,)) from None
    if isinstance(value, bool) or not 0 < seconds < float("inf"):
        raise ValueError("must be a positive number of seconds, got %r" % (value,))
    return seconds


def _boolean(value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("must be True or False, got %r" % (value,))


def _non_empty_str(value):
    if not isinstance(value, str) or not value:
        raise ValueError("must be a non-empty string, got %r" % (value,))
    return value


MAX_THREADS = 256   # the most worker threads a generated library is built for


def _default_threads():
    """The CPUs this process may run on (its affinity mask), else the machine's count."""
    try:
        return max(1, min(len(os.sched_getaffinity(0)), MAX_THREADS))
    except (AttributeError, OSError):
        return max(1, min(os.cpu_count() or 1, MAX_THREADS))


def _int_in(low, high, what):
    """An int in [low, high] (a string from FFIGRAPH_FLAGS is parsed)."""
    def check(value):
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ValueError("must be %s, got %r" % (what, value)) from None
        if isinstance(value, (bool, float)) or not low <= number <= high:
            raise ValueError("must be %s, got %r" % (what, value))
        return number

    return check


def _traceback_limit(value):
    """How many user frames a node records (-1: all, 0: none); a string from FFIGRAPH_FLAGS is parsed."""
    try:
        limit = int(value)
    except (TypeError, ValueError):
        raise ValueError("must be an int (-1: all frames, 0: none), got %r" % (value,)) from None
    if isinstance(value, bool) or isinstance(value, float) or limit < -1:
        raise ValueError("must be an int (-1: all frames, 0: none), got %r" % (value,))
    return limit


# key -> (default factory, validator, doc)
_SPEC = {
    "floatX": (lambda: "float64", _one_of("float64", "float32"),
               "dtype of float variables made without an explicit dtype"),
    "compiledir": (_default_compiledir, _non_empty_str,
                   "directory of compiled libraries (per platform and interpreter)"),
    "cxx": (_default_cxx, _non_empty_str, "C compiler command (defaults to $CC, then gcc)"),
    "compile_timeout": (lambda: 300.0, _positive_seconds,
                        "seconds one run of the C compiler (or nvcc) may take before it is killed"),
    "linker": (lambda: "cvm", _non_empty_str,
               "linker of the modes Mode and FAST_RUN (cvm: C where possible; c, c|py, py, and Theano's "
               "vm, vm_nogc, cvm_nogc, c|py_nogc)"),
    "mode": (lambda: "Mode", _non_empty_str,
             "mode of a function compiled without one: Mode (config.linker and config.optimizer, as in "
             "PyTensor), FAST_RUN, FAST_COMPILE, DebugMode, ... (any case)"),
    "optimizer": (lambda: "fast_run", _non_empty_str,
                  "rewrites of the mode Mode: fast_run (= o4), fast_compile (= o1), o2, o3, unsafe, merge, "
                  "stabilize or None"),
    "device": (lambda: "cpu", _one_of("cpu", "cuda"),
               "where the default mode computes: cuda moves supported nodes to the GPU"),
    "nvcc": (lambda: "", str, "the nvcc command (empty: $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda)"),
    "cuda_arch": (lambda: "auto", _non_empty_str,
                  "GPU architectures to build for: auto (the device's own, else sm_80,sm_90 + PTX) "
                  "or a list like sm_90"),
    "profile": (lambda: False, _boolean,
                "profile every function compiled without an explicit profile= (f.profile; the summaries "
                "are printed to stderr at exit, as Theano does)"),
    "traceback__limit": (lambda: 8, _traceback_limit,
                         "how many frames of the user's code each Apply node records in node.tag.trace "
                         "(shown by runtime errors and debugprint(print_trace=True)); -1 all, 0 none"),
    "compute_test_value": (lambda: "off", _one_of("off", "ignore", "warn", "raise", "pdb"),
                           "compute each new node's outputs from its inputs' tag.test_value when the graph "
                           "is built: off, ignore (skip nodes with an input that has none), warn, raise, pdb"),
    "threads": (_default_threads, _int_in(1, MAX_THREADS, "an int from 1 to %d" % MAX_THREADS),
                "threads a large elementwise or reduction loop is split over (default: the CPUs this "
                "process may use; 1: never split); built into the generated C, so part of the cache key"),
    "threads_min_size": (lambda: 65536, _int_in(0, 2 ** 62, "a number of elements (an int >= 0)"),
                         "a loop over fewer elements than this runs on the calling thread alone"),
    "pickle__library": (lambda: True, _boolean,
                        "a pickled function carries its compiled libraries, so a process with no C compiler "
                        "loads them (False: smaller pickles; the graph is compiled again where unpickled)"),
    "sanitize": (lambda: "", _sanitizers,
                 "build generated C with gcc sanitizers: '' (off), address, undefined or address+undefined; "
                 "address needs libasan preloaded (LD_PRELOAD=$(gcc -print-file-name=libasan.so))"),
}


class Config:
    """Attribute access to the settings in ``_SPEC``; defaults are computed lazily."""

    def __init__(self, flags: str = ""):
        object.__setattr__(self, "_values", {})
        self._apply_flag_string(flags)

    def _apply_flag_string(self, flags: str) -> None:
        for item in filter(None, (s.strip() for s in flags.split(","))):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep:
                warnings.warn("%s: ignoring %r (expected key=value)" % (ENV_VAR, item))
            elif key not in _SPEC:
                warnings.warn("%s: ignoring unknown key %r (known: %s)"
                              % (ENV_VAR, key, ", ".join(sorted(_SPEC))))
            else:
                setattr(self, key, value.strip())

    def __getattr__(self, key):
        if key not in _SPEC:
            raise AttributeError("ffigraph.config has no setting %r (known: %s)"
                                 % (key, ", ".join(sorted(_SPEC))))
        values = object.__getattribute__(self, "_values")
        if key not in values:
            values[key] = _SPEC[key][0]()
        # later reads find it in the instance dict without coming here (graph building reads
        # some keys once per node)
        object.__getattribute__(self, "__dict__")[key] = values[key]
        return values[key]

    def __setattr__(self, key, value):
        if key not in _SPEC:
            raise AttributeError("ffigraph.config has no setting %r (known: %s)"
                                 % (key, ", ".join(sorted(_SPEC))))
        try:
            value = _SPEC[key][1](value)
        except ValueError as err:
            raise ValueError("ffigraph.config.%s %s" % (key, err)) from None
        self._values[key] = value
        self.__dict__[key] = value

    def __delattr__(self, key):
        """``del config.key`` restores the default (computed again on next read)."""
        if key not in _SPEC:
            raise AttributeError("ffigraph.config has no setting %r" % (key,))
        self._values.pop(key, None)
        self.__dict__.pop(key, None)

    @contextlib.contextmanager
    def change_flags(self, **flags):
        """Set some flags for the duration of a ``with`` block."""
        old = {k: getattr(self, k) for k in flags}
        try:
            for k, v in flags.items():
                setattr(self, k, v)
            yield self
        finally:
            for k, v in old.items():
                setattr(self, k, v)

    def snapshot(self) -> dict:
        """Every setting's current value, for ``using``: what a later step must see as this one did."""
        return {k: getattr(self, k) for k in _SPEC}

    @contextlib.contextmanager
    def using(self, snapshot: dict):
        """The settings of ``snapshot`` (values already checked) for a ``with`` block."""
        old = self.snapshot()
        try:
            for k, v in snapshot.items():
                self._values[k] = self.__dict__[k] = v
            yield self
        finally:
            for k, v in old.items():
                self._values[k] = self.__dict__[k] = v

    def describe(self) -> str:
        return "\n".join("%s = %r  # %s" % (k, getattr(self, k), _SPEC[k][2]) for k in _SPEC)

    def __str__(self) -> str:
        """Every setting as ``print(pytensor.config)`` shows it: one block per key, its name, doc and
        current value (``describe()`` is the one-line-per-key form that cache keys hash)."""
        return "".join("%s\n    Doc:  %s\n    Value:  %s\n\n" % (k, _SPEC[k][2], getattr(self, k)) for k in _SPEC)


config = Config(os.environ.get(ENV_VAR, ""))
