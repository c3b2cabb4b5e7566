"""Process-wide settings, read once from ``FFIGRAPH_FLAGS`` and settable in code.

``FFIGRAPH_FLAGS="floatX=float32,linker=py"`` sets values at import time;
``ffigraph.config.floatX = 'float32'`` changes one later, and
``with ffigraph.config.change_flags(floatX='float32'):`` changes some for a block.
Every key is validated when set, so a typo fails loudly instead of being ignored. A key named
``group__name`` is also ``config.group.name``, Theano's spelling (``config.warn.round = False``,
``FFIGRAPH_FLAGS=warn.round=False``).
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


# The names that config.linker, config.optimizer and config.mode accept. They are defined by later
# layers (ffigraph.compile.mode's predefined_linkers, predefined_optimizers and predefined_modes,
# and the checking modes beside it), which this lowest layer never imports: these are the built-in
# names, there before FFIGRAPH_FLAGS is read at import (tests/test_config_choices.py checks that
# they are exactly the registries' names), and register_choice adds a name registered later
# (compile.mode's register_linker and register_mode call it).
_CHOICES = {
    "linker": ["cvm", "c", "c|py", "py", "vm", "vm_nogc", "c|py_nogc", "cvm_nogc"],
    "optimizer": ["fast_run", "fast_compile", "merge", "o1", "o2", "o3", "o4", "unsafe", "stabilize", "None"],
    "mode": ["Mode", "FAST_RUN", "FAST_COMPILE", "C", "CVM", "PERFORM", "DebugMode", "DEBUG_MODE",
             "NanGuardMode", "MonitorMode"],
}


def register_choice(key: str, name: str) -> None:
    """Let ``config.<key>`` (``linker`` or ``mode``) be set to ``name``, a linker or mode that a
    later layer or the user registered. FFIGRAPH_FLAGS is read when ffigraph.config is imported,
    before any such registration, so there only the built-in names are accepted."""
    if key not in ("linker", "mode"):
        raise ValueError("register_choice: key must be 'linker' or 'mode', got %r" % (key,))
    if not isinstance(name, str) or not name:
        raise ValueError("register_choice: the %s name must be a non-empty string, got %r" % (key, name))
    if name not in _CHOICES[key]:
        _CHOICES[key].append(name)


def _accepted(key):
    return ", ".join(repr(n) for n in _CHOICES[key])


def _linker(value):
    if value not in _CHOICES["linker"]:
        raise ValueError("must be a linker name, one of %s; got %r" % (_accepted("linker"), value))
    return value


def _optimizer(value):
    if value is not None and value not in _CHOICES["optimizer"]:
        raise ValueError("must be an optimizer name, one of %s (or None); got %r" % (_accepted("optimizer"), value))
    return value


def _mode(value):
    """A mode name (in any case, when that names one mode, as get_mode matches it) or a linker name
    (that linker with config.optimizer), as function(mode=...) accepts."""
    if isinstance(value, str):
        if value in _CHOICES["mode"] or value in _CHOICES["linker"]:
            return value
        if len([m for m in _CHOICES["mode"] if m.upper() == value.upper()]) == 1:
            return value
    raise ValueError("must be a mode name, one of %s (in any case), or a linker name, one of %s; got %r"
                     % (_accepted("mode"), _accepted("linker"), value))


# Theano 1.0's warn.* flags. Each turned on a warning about a result that a Theano release older
# than the one named could have got wrong; ffigraph never had those bugs, so the flags are accepted
# (Theano programs set them) and have no effect. Their defaults are Theano 1.0's: True only for a
# bug fixed after warn.ignore_bug_before (default '0.9'); vm_gc_bug is False.
_WARN_FLAGS = [
    ("argmax_pushdown_bug", "0.3", "local_argmax_pushdown rewrite (fixed in 0.3)"),
    ("gpusum_01_011_0111_bug", "0.3", "GpuSum over patterns 01, 011, 0111 (fixed in 0.3)"),
    ("sum_sum_bug", "0.3", "two consecutive sums (fixed in 0.3)"),
    ("sum_div_dimshuffle_bug", "0.3", "a sum of a division of dimshuffled tensors (fixed in 0.3)"),
    ("identify_1pexp_bug", "0.4.1", "is_1pexp taking any constant for 1 (fixed in 0.4.1)"),
    ("subtensor_merge_bug", "0.5", "indexing into a subtensor with a negative stride (fixed in 0.5)"),
    ("gpu_set_subtensor1", "0.6", "set_subtensor(x[int vector], v) moved to the GPU (fixed in 0.6)"),
    ("vm_gc_bug", None, "the vm linker's garbage collection, never in a release (default False)"),
    ("signal_conv2d_interface", "0.7", "signal.conv2d's interface change of June 2014"),
    ("reduce_join", "0.7", "a reduction of a Join over another axis (fixed in 0.7)"),
    ("inc_set_subtensor1", "0.7", "inc/set_subtensor with one integer-array index (fixed in 0.7)"),
    ("round", "0.9", "round's default changing to half_to_even (0.9)"),
    ("inc_subtensor1_opt", "0.10", "inc_subtensor(zeros[idx], x)[idx] with repeated indices (fixed in 0.10)"),
]
_THEANO_VERSIONS = ("0.3", "0.4", "0.4.1", "0.5", "0.6", "0.7", "0.8", "0.8.1", "0.8.2", "0.9", "0.10",
                    "1.0", "1.0.1", "1.0.2", "1.0.3", "1.0.4", "1.0.5")


def _warn_default(fixed_in):
    """Theano 1.0's default of a warn flag: warn about a bug fixed after warn.ignore_bug_before."""
    def default(cfg):
        if fixed_in is None:
            return False
        before = cfg.warn__ignore_bug_before
        if before in ("None", "all"):
            return before == "None"
        version = lambda v: tuple(int(p) for p in v.split("."))  # noqa: E731
        return version(before) < version(fixed_in)

    default.reads_config = True   # called with the Config whose default it is
    return default


# key -> (default factory, validator, doc)
_SPEC = {
    "floatX": (lambda: "float64", _one_of("float64", "float32"),
               "dtype of float variables made without an explicit dtype"),
    "compiledir": (_default_compiledir, _non_empty_str,
                   "directory of compiled libraries (per platform and interpreter)"),
    "cxx": (_default_cxx, _non_empty_str, "C compiler command (defaults to $CC, then gcc)"),
    "compile_timeout": (lambda: 300.0, _positive_seconds,
                        "seconds one run of the C compiler (or nvcc) may take before it is killed"),
    "linker": (lambda: "cvm", _linker,
               "linker of the modes Mode and FAST_RUN (cvm: C where possible; c, c|py, py, and Theano's "
               "vm, vm_nogc, cvm_nogc, c|py_nogc)"),
    "mode": (lambda: "Mode", _mode,
             "mode of a function compiled without one: Mode (config.linker and config.optimizer, as in "
             "PyTensor), FAST_RUN, FAST_COMPILE, DebugMode, ... (any case)"),
    "optimizer": (lambda: "fast_run", _optimizer,
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
    "print_test_value": (lambda: False, _boolean,
                         "repr() of a variable that has a test value shows that value on a second line, "
                         "as in Theano and PyTensor"),
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
    "warn__ignore_bug_before": (lambda: "0.9", _one_of("None", "all", *_THEANO_VERSIONS),
                                "Theano's: the release whose older bugs the warn.* flags do not warn about "
                                "(sets their defaults); no effect in ffigraph, which never had those bugs"),
}
for _name, _fixed_in, _what in _WARN_FLAGS:
    _SPEC["warn__" + _name] = (_warn_default(_fixed_in), _boolean,
                               "Theano's warning about an old Theano bug: %s; accepted for Theano programs, "
                               "no effect in ffigraph (it never had the bug)" % _what)
del _name, _fixed_in, _what

# keys that change nothing ffigraph compiles: left out of describe(), which compile-cache keys hash
_NOT_IN_KEYS = frozenset(["print_test_value"] + [k for k in _SPEC if k.startswith("warn__")])

# groups of keys, Theano's config.<group>.<name> (a key "group__name")
_GROUPS = frozenset(k.split("__")[0] for k in _SPEC if "__" in k)


class _Group:
    """``config.warn``, ``config.traceback``, ...: the keys ``<group>__<name>`` as attributes, so
    Theano's ``config.warn.round = False`` sets ``config.warn__round``."""

    def __init__(self, cfg, group):
        object.__setattr__(self, "_cfg", cfg)
        object.__setattr__(self, "_group", group)

    def _key(self, name):
        key = "%s__%s" % (self._group, name)
        if key not in _SPEC:
            raise AttributeError("ffigraph.config has no setting %r (known in %s: %s)"
                                 % ("%s.%s" % (self._group, name), self._group, ", ".join(self._names())))
        return key

    def _names(self):
        return [k.split("__", 1)[1] for k in _SPEC if k.startswith(self._group + "__")]

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._cfg, self._key(name))

    def __setattr__(self, name, value):
        setattr(self._cfg, self._key(name), value)

    def __delattr__(self, name):
        delattr(self._cfg, self._key(name))

    def __dir__(self):
        return self._names()

    def __repr__(self):
        return "<ffigraph.config.%s: %s>" % (self._group, ", ".join(
            "%s=%r" % (n, getattr(self, n)) for n in self._names()))


class Config:
    """Attribute access to the settings in ``_SPEC``; defaults are computed lazily."""

    def __init__(self, flags: str = ""):
        object.__setattr__(self, "_values", {})
        self._apply_flag_string(flags)

    def _apply_flag_string(self, flags: str) -> None:
        for item in filter(None, (s.strip() for s in flags.split(","))):
            key, sep, value = item.partition("=")
            key = key.strip().replace(".", "__")   # Theano's warn.round is the key warn__round
            if not sep:
                warnings.warn("%s: ignoring %r (expected key=value)" % (ENV_VAR, item))
            elif key not in _SPEC:
                warnings.warn("%s: ignoring unknown key %r (known: %s)"
                              % (ENV_VAR, key, ", ".join(sorted(_SPEC))))
            else:
                try:
                    setattr(self, key, value.strip())
                except ValueError as err:
                    raise ValueError("%s: %s" % (ENV_VAR, err)) from None

    def __getattr__(self, key):
        if key in _GROUPS:
            return _Group(self, key)
        if key not in _SPEC:
            raise AttributeError("ffigraph.config has no setting %r (known: %s)"
                                 % (key, ", ".join(sorted(_SPEC))))
        values = object.__getattribute__(self, "_values")
        if key not in values:
            factory = _SPEC[key][0]
            values[key] = factory(self) if getattr(factory, "reads_config", False) else factory()
        # later reads find it in the instance dict without coming here (graph building reads
        # some keys once per node)
        object.__getattribute__(self, "__dict__")[key] = values[key]
        return values[key]

    def __setattr__(self, key, value):
        if key in _GROUPS:
            raise AttributeError("ffigraph.config.%s is a group of settings: set one of it (config.%s.%s = ...)"
                                 % (key, key, _Group(self, key)._names()[0]))
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
        """Set some flags for the duration of a ``with`` block (``warn.round`` is ``warn__round``)."""
        flags = {k.replace(".", "__"): v for k, v in flags.items()}
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
        """One line per key that can change what is compiled (compile-cache keys hash it; the keys
        of _NOT_IN_KEYS, print_test_value and Theano's warn flags, change nothing compiled)."""
        return "\n".join("%s = %r  # %s" % (k, getattr(self, k), _SPEC[k][2]) for k in _SPEC
                         if k not in _NOT_IN_KEYS)

    def __str__(self) -> str:
        """Every setting as ``print(pytensor.config)`` shows it: one block per key, its name, doc and
        current value (``describe()`` is the one-line-per-key form that cache keys hash)."""
        return "".join("%s\n    Doc:  %s\n    Value:  %s\n\n" % (k, _SPEC[k][2], getattr(self, k)) for k in _SPEC)


config = Config(os.environ.get(ENV_VAR, ""))
