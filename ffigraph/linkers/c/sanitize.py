"""Building generated C with AddressSanitizer and UBSan (``ffigraph.config.sanitize``).

An ASan-built library can only be loaded into a process whose ASan runtime
came first (preloaded), so the build refuses, saying how to run, when it is
absent, rather than let ASan abort the process at dlopen.
"""
from __future__ import annotations

from ffigraph.config import config

# config.sanitize adds these after -fsanitize=...: the first finding stops the process (a test
# cannot pass over it), stacks are readable; -O0 instead of -O3 keeps builds quick (a third faster than -O1)
SANITIZE_FLAGS = ["-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"]
SANITIZE_HOWTO = ("run Python with the runtime preloaded and leak checking off (the interpreter itself "
                  "keeps memory at exit), e.g.\n"
                  "  LD_PRELOAD=\"$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)\" "
                  "ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 "
                  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 python ...\n"
                  "or unset config.sanitize")


class SanitizerRuntimeError(RuntimeError):
    """config.sanitize asks for AddressSanitizer but its runtime is not loaded in this process."""


def sanitize_flags(sanitize=None):
    """Compile-and-link flags for ``sanitize`` (default: config.sanitize); [] when it is off."""
    sanitize = config.sanitize if sanitize is None else sanitize
    return ["-fsanitize=" + sanitize] + SANITIZE_FLAGS if sanitize else []


_asan_loaded = []


def asan_runtime_loaded():
    """True when libasan is in this process (preloaded): only then can an ASan-built library be loaded."""
    if not _asan_loaded:
        import ctypes

        try:
            found = hasattr(ctypes.CDLL(None), "__asan_init")
        except OSError:
            found = False
        if not found:
            return False
        _asan_loaded.append(True)
    return True


def check_sanitizer_runtime():
    """Raise SanitizerRuntimeError, saying how to run, rather than let ASan abort the process at dlopen."""
    if "address" in config.sanitize.split(",") and not asan_runtime_loaded():
        raise SanitizerRuntimeError("ffigraph.config.sanitize=%r builds libraries with AddressSanitizer, whose "
                                    "runtime is not loaded in this process; %s" % (config.sanitize, SANITIZE_HOWTO))
