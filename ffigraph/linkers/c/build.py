"""The compiler driver: C source + requirements -> a shared library file."""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from ffigraph.abi import HEADER_PATH
from ffigraph.config import config

# -fwrapv: integer arithmetic wraps, as numpy's does (signed overflow would otherwise be undefined)
BASE_FLAGS = ["-O3", "-std=gnu11", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-strict-aliasing", "-fwrapv"]
BASE_LIBS = ["m"]


class CompileError(RuntimeError):
    """The C compiler failed; carries its message and the path of the source it was given."""

    def __init__(self, message, source_path, command, returncode=None):
        super().__init__("%s\nsource: %s\ncommand: %s" % (message, source_path, " ".join(command)))
        self.source_path = source_path
        self.command = command
        self.compiler_output = message
        self.returncode = returncode   # the compiler's exit status (negative: the signal that killed it)


class CompileTimeout(CompileError):
    """The compiler ran longer than ``config.compile_timeout`` seconds and was killed (with its children)."""


_workdir = None
_workdir_lock = threading.Lock()


def _private_workdir():
    """A per-process directory for builds, removed at exit (libraries stay mapped once loaded)."""
    global _workdir
    with _workdir_lock:
        if _workdir is None:
            _workdir = tempfile.mkdtemp(prefix="ffigraph-build-")
            atexit.register(shutil.rmtree, _workdir, True)
        return _workdir


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


def tool_env():
    """The compiler's environment: ours (None), less a preloaded sanitizer runtime, which would only
    make gcc itself twice as slow."""
    preload = os.environ.get("LD_PRELOAD", "")
    if "san" not in preload:
        return None
    kept = [p for p in preload.replace(":", " ").split()
            if not os.path.basename(p).startswith(("libasan", "libubsan", "liblsan", "libtsan"))]
    env = dict(os.environ)
    if kept:
        env["LD_PRELOAD"] = " ".join(kept)
    else:
        del env["LD_PRELOAD"]
    return env


def check_sanitizer_runtime():
    """Raise SanitizerRuntimeError, saying how to run, rather than let ASan abort the process at dlopen."""
    if "address" in config.sanitize.split(",") and not asan_runtime_loaded():
        raise SanitizerRuntimeError("ffigraph.config.sanitize=%r builds libraries with AddressSanitizer, whose "
                                    "runtime is not loaded in this process; %s" % (config.sanitize, SANITIZE_HOWTO))


def compiler_command(requirements, compiler=None):
    """The argv prefix (compiler and flags) and the trailing library flags for these requirements.

    With config.sanitize set the flags add the sanitizers (so the cache key, which hashes every
    flag, differs), after checking that an ASan-built library could be loaded here."""
    cc = compiler or config.cxx
    flags = [f for f in BASE_FLAGS if f not in requirements.get("no_compile_args", ())]
    if config.sanitize:
        check_sanitizer_runtime()
        flags = ["-O0" if f == "-O3" else f for f in flags] + sanitize_flags()
    flags += [f for f in requirements.get("compile_args", ()) if f not in flags]
    flags += ["-I" + os.path.dirname(HEADER_PATH)]
    flags += ["-I" + d for d in requirements.get("header_dirs", ())]
    libs = ["-L" + d for d in requirements.get("lib_dirs", ())]
    # where the library looks for those at load time: the same folders unless told ("$ORIGIN")
    libs += ["-Wl,-rpath," + d for d in requirements.get("rpath", requirements.get("lib_dirs", ()))]
    libs += ["-l" + lib for lib in list(requirements.get("libraries", ())) + BASE_LIBS]
    return [cc] + flags, libs


def cuda_source_text(requirements):
    """The one .cu file of a graph with GPU nodes (its launchers and kernels), or None."""
    sources = requirements.get("cuda_sources")
    return "\n\n".join(sources) if sources else None


def cuda_link_flags(requirements):
    """Linking the nvcc object: the CUDA runtime (shared, found again at load time) and C++'s library."""
    cuda = requirements["cuda"]
    rpath = requirements.get("rpath")
    return ["-L" + cuda["cudart_dir"], "-Wl,-rpath," + (rpath[0] if rpath else cuda["cudart_dir"]),
            "-lcudart", "-lstdc++"]


def nvcc_command(requirements, cu_path, obj_path):
    cuda = requirements["cuda"]
    return [cuda["nvcc"], "-c", "-O3", "-std=c++14", "-Xcompiler", "-fPIC,-fvisibility=hidden",
            "-I" + os.path.dirname(HEADER_PATH)] + list(cuda["nvcc_flags"]) + ["-o", obj_path, cu_path]


def _compile_cuda(requirements, directory, name):
    """nvcc the graph's .cu into an object beside the C source; its path, or None when there is none."""
    text = cuda_source_text(requirements)
    if text is None:
        return None
    cu_path = os.path.join(directory, name + ".cu")
    obj_path = os.path.join(directory, name + ".cu.o")
    with open(cu_path, "w") as fh:
        fh.write(text)
    _run(nvcc_command(requirements, cu_path, obj_path), cu_path, name + ".cu", "nvcc")
    return obj_path


def _kill_group(proc):
    """Kill the compiler and every process it started (they share its new session's process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):   # already gone (or no process groups here): the child at least
        try:
            proc.kill()
        except OSError:
            pass


def _reap(proc):
    """Collect a killed compiler's exit status and whatever output it wrote, without waiting on a
    grandchild that escaped the group and still holds the pipe."""
    try:
        return proc.communicate(timeout=5)[0] or ""
    except subprocess.TimeoutExpired:
        if proc.stdout is not None:
            proc.stdout.close()
        proc.wait()
        return ""


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def run_tool(command, timeout):
    """Run ``command`` in a session of its own: (exit status, output). Past ``timeout`` seconds (or on
    an interrupt) it is killed with every process it started (cc1, as, ld, or whatever a wrapper
    script runs), not just the driver, and subprocess.TimeoutExpired (with its output) is raised.
    OSError when it cannot be started."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                            start_new_session=True, env=tool_env())
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise subprocess.TimeoutExpired(command, timeout, output=_reap(proc)) from None
    except BaseException:
        _kill_group(proc)
        _reap(proc)
        raise
    return proc.returncode, output


def _run(command, src_path, keep_name, what):
    """Run one compiler command; CompileError (CompileTimeout past config.compile_timeout) on failure."""
    label = "nvcc" if what == "nvcc" else "the C compiler"
    timeout = config.compile_timeout
    try:
        returncode, output = run_tool(command, timeout)
    except OSError as err:
        raise CompileError("could not run the %s %r: %s (set ffigraph.config.%s)"
                           % (what, command[0], err, "nvcc" if what == "nvcc" else "cxx or $CC"),
                           _keep_failed(src_path, keep_name), command) from None
    except subprocess.TimeoutExpired as exc:
        output = (exc.output or "").strip()
        raise CompileTimeout("%s did not finish within %g s and was killed (raise ffigraph.config.compile_timeout, "
                             "e.g. FFIGRAPH_FLAGS=compile_timeout=%g, if it only needs longer)%s"
                             % (label, timeout, max(2 * timeout, 600), ":\n" + output if output else ""),
                             _keep_failed(src_path, keep_name), command, -signal.SIGKILL) from None
    if returncode < 0:
        output = output.strip()
        raise CompileError("%s crashed (signal %s)%s"
                           % (label, _signal_name(-returncode), ":\n" + output if output else ""),
                           _keep_failed(src_path, keep_name), command, returncode)
    if returncode != 0:
        raise CompileError("%s failed (exit %d):\n%s" % ("C compilation" if what != "nvcc" else "nvcc",
                                                         returncode, output.strip()),
                           _keep_failed(src_path, keep_name), command, returncode)


_LIBRARY_MAGIC = {"linux": b"\x7fELF"}


def _check_library_file(lib_path, src_path, keep_name, command):
    """The compiler said it succeeded: make sure it wrote something that can be a shared library."""
    try:
        with open(lib_path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        raise CompileError("the C compiler exited 0 but wrote no library at %s" % lib_path,
                           _keep_failed(src_path, keep_name), command, 0) from None
    magic = next((m for plat, m in _LIBRARY_MAGIC.items() if sys.platform.startswith(plat)), None)
    if not head or (magic is not None and head != magic):
        raise CompileError("the C compiler exited 0 but %s is not a shared library (%s)"
                           % (lib_path, "empty" if not head else "starts with %r" % head),
                           _keep_failed(src_path, keep_name), command, 0)


def build_library(source, name, requirements, compiler=None, directory=None):
    """Compile ``source`` into ``<directory>/<name>.so`` and return its path.

    When the requirements carry CUDA sources, nvcc compiles them into an object
    that is linked into the same library. On failure the source is kept in
    ``config.compiledir/failed/`` and CompileError says where.
    """
    directory = directory or _private_workdir()
    src_path = os.path.join(directory, name + ".c")
    lib_path = os.path.join(directory, name + ".so")
    with open(src_path, "w") as fh:
        fh.write(source)
    try:
        os.unlink(lib_path)   # a stale file must not pass for the output of a compiler that wrote none
    except OSError:
        pass
    cuda_obj = _compile_cuda(requirements, directory, name)
    head, libs = compiler_command(requirements, compiler)
    if cuda_obj is not None:
        libs = [cuda_obj] + libs + cuda_link_flags(requirements)
    command = head + ["-o", lib_path, src_path] + libs
    _run(command, src_path, name + ".c", "C compiler")
    _check_library_file(lib_path, src_path, name + ".c", command)
    return lib_path


def _keep_failed(src_path, keep_name):
    target_dir = os.path.join(config.compiledir, "failed")
    try:
        os.makedirs(target_dir, mode=0o700, exist_ok=True)
        target = os.path.join(target_dir, keep_name)
        shutil.copyfile(src_path, target)
        return target
    except OSError:
        return src_path
